"""Reading results in a real browser: the comparison's summary row, a log
axis for threads 4–256, and the trend's plan-edit and change markers."""

import pytest

from benchapp.histories import comparisons, history
from benchapp.models import Plan, Run
from tests.benchapp.histories.test_history import nightly
from tests.benchapp.results_data import make_run
from tests.support.browser import browser, login, page, screenshot  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

THREADS = (4, 16, 64, 256)


def _sweep(team, name, scale):
    """A sysbench threads sweep, four repeats per point."""
    cells = [
        ({"threads": t}, r, {"tps": scale * 100 * t**0.5 + r, "latency_avg_ms": 4 * t / scale + r})
        for t in THREADS
        for r in (1, 2, 3, 4)
    ]
    return make_run(team, name=f"nightly sysbench oltp_read_write {name}", cells=cells)


@pytest.fixture
def comparison(team):
    runs = [_sweep(team, "before", 1.0), _sweep(team, "tuned", 1.2), _sweep(team, "regressed", 0.9)]
    return comparisons.save_comparison(team, "buffer pool tuning", runs), runs


def test_comparison_summary_row_shows_the_geometric_mean(page, live_server, owner, comparison):  # noqa: F811
    saved, (before, tuned, regressed) = comparison
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/comparisons/{saved.pk}/")
    panel = page.locator("section.panel").first
    headers = panel.locator("table.compare-panel thead th").all_inner_texts()
    assert headers[1:] == [comparisons.short_label(r) for r in (before, tuned, regressed)]
    summary = panel.locator("tr.summary-row td").all_inner_texts()
    assert summary[0] == "baseline"
    assert summary[1].endswith("× faster") and summary[2].endswith("× slower")
    data = comparisons.compare(saved)
    assert summary[1] == data["panels"][0]["summary"][1]["text"]
    assert "is 1.2" in panel.locator("p.overall").first.inner_text()
    page.wait_for_selector("#chart-main[data-ready='1']", state="attached")
    screenshot(page, "comparison")
    assert page.console_errors == []


def test_threads_4_to_256_get_a_log_axis_with_their_values(page, live_server, owner, comparison):  # noqa: F811
    saved, _ = comparison
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/comparisons/{saved.pk}/?statistic=median")
    page.wait_for_selector("#chart-main[data-ready='1']", state="attached")
    axis = page.evaluate("document.getElementById('chart-main').layout.xaxis")
    assert axis["type"] == "log" and axis["tickvals"] == list(THREADS)
    ticks = page.locator("#chart-main .xtick text").all_text_contents()
    assert ticks == ["4", "16", "64", "256"]
    title = page.locator("#chart-main .gtitle").text_content()
    assert title.startswith("median "), title


def test_trend_marks_the_plan_edit_and_opens_on_the_alerts_metric(page, live_server, owner, team):  # noqa: F811
    plan = Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})
    runs = nightly(team, plan, [1000] * 20 + [850] * 10)
    edited = [r.pk for r in runs[20:]]
    for run in Run.objects.filter(pk__in=edited):
        run.document = {**run.document, "params": {"time": 20}}
        run.save(update_fields=["document"])
    history.detect_plan(plan)
    login(page, live_server, owner)
    page.goto(live_server.url + "/alerts/")
    page.locator("a", has_text="nightly").first.click()
    page.wait_for_url("**/trend/?metric=tps&keys=*")
    page.wait_for_selector("#trend-chart[data-ready='1']", state="attached")
    assert page.input_value("#trend-metric") == "tps"
    assert page.get_attribute("#trend-chart", "data-edits") == "1"
    assert page.locator("#trend-chart .shapelayer path").count() == 1  # the dotted edit line
    traces = page.evaluate("document.getElementById('trend-chart').data")
    (edit,) = [t for t in traces if t.get("name") == "plan edited"]
    assert "params.time: 10 → 20" in edit["text"][0]
    (change,) = [t for t in traces if t.get("meta") == "change"]
    assert change["text"][0].startswith("worse -15.") and " % from run #" in change["text"][0]
    (band,) = [t for t in traces if t.get("meta") == "band"]
    (line,) = [t for t in traces if t.get("mode") == "lines+markers"]
    assert band["fillcolor"] == "rgba(31,119,180,0.15)" and line["line"]["color"] == "#1f77b4"
    screenshot(page, "trend")
    assert page.console_errors == []
