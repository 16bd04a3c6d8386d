"""The first answers a newcomer reads, in Chromium: a comparison of single
repeats says so in its headline and is not bold; the dashboard shows the
tool's main metric with its unit; the trend opens on the main metric with
an axis title; the cell timeline opens on the main rate and the machine's
CPU; values 100× apart over a text axis get a log axis."""

import pytest

from benchapp.histories import comparisons, history
from benchapp.models import CellSeries, Plan
from benchapp.store import seriesstore
from tests.benchapp.histories.test_history import nightly
from tests.benchapp.results_data import make_run
from tests.support.browser import browser, login, page, screenshot  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_single_repeat_comparison_headline_carries_the_caveat_and_is_not_bold(
    page,  # noqa: F811
    live_server,
    owner,
    team,
):
    runs = [
        make_run(team, name=name, cells=[({"threads": t}, 1, {"tps": tps * t}) for t in (4, 16)])
        for name, tps in (("busy machine", 1000.0), ("quiet machine", 1720.0))
    ]
    saved = comparisons.save_comparison(team, "busy vs quiet", runs)
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/comparisons/{saved.pk}/")
    overall = page.locator("section.panel p.overall").first
    text = overall.inner_text()
    assert "1.72× faster" in text and "(1 repeat each: too few to test)" in text, text
    headline = overall.locator(".headline")
    weight = headline.evaluate("e => getComputedStyle(e).fontWeight")
    assert int(weight) < 600, weight
    assert overall.locator("strong.headline").count() == 0
    assert "better" not in (overall.get_attribute("class") or "")
    summary = page.locator("section.panel tr.summary-row td.geomean").last
    assert "1 repeat each" in summary.inner_text()
    screenshot(page, "comparison-caveat")
    assert page.console_errors == []


def test_dashboard_headline_is_the_main_metric_with_its_unit(page, live_server, owner, team):  # noqa: F811
    make_run(
        team,
        name="fio 4k",
        tool="fio",
        cells=[({"bs": "4k"}, 1, {"read_bw_kib_s": 778232.75, "read_iops": 194558.0})],
    )
    make_run(team, name="oltp", cells=[({"threads": 8}, 1, {"reads": 9408.0, "tps": 470.4})])
    login(page, live_server, owner)
    page.goto(live_server.url + "/")
    cells = page.locator("#recent td.headline").all_inner_texts()
    assert cells == ["Transactions per second 470.4 tps", "IOPS (read + write) 194,558 IOPS"]
    assert page.console_errors == []


def test_trend_opens_on_the_main_metric_with_an_axis_title(page, live_server, owner, team):  # noqa: F811
    plan = Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})
    nightly(team, plan, [1000] * 6)  # tps and latency_avg_ms: latency sorts first
    history.detect_plan(plan)
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/plans/{plan.pk}/trend/")
    page.wait_for_selector("#trend-chart[data-ready='1']", state="attached")
    assert page.input_value("#trend-metric") == "tps"
    options = page.locator("#trend-metric option").all_inner_texts()
    assert options == ["Transactions per second (tps)", "Average latency (ms)"]
    title = page.evaluate("document.getElementById('trend-chart').layout.yaxis.title.text")
    assert title == "Transactions per second (tps), higher is better"
    assert page.locator("#trend-chart .ytitle").text_content() == title
    assert page.console_errors == []


def _timeline_cell(team, telemetry: bool = True):
    run = make_run(team, tool="sysbench", cells=[({}, 1, {"tps": 105.0})])
    cell = run.cells.get()
    t = [float(s) for s in range(1, 6)]
    rows = seriesstore.rows(
        cell, 1, {"t": t, "err_s": [0.0] * 5, "tps": [100.0, 104, 106, 105, 110]}
    )
    if telemetry:
        rows += seriesstore.rows(
            cell, 1, {"t": t, "cpu_busy_pct": [80.0, 90, 95, 97, 96]}, source="host"
        )
        rows += seriesstore.rows(
            cell, 1, {"t": t, "commits_per_s": [0.0] * 5, "questions_per_s": [50.0] * 5}, "db"
        )
    CellSeries.objects.bulk_create(rows)
    return cell


def test_timeline_opens_on_the_main_rate_and_the_machines_cpu(page, live_server, owner, team):  # noqa: F811
    cell = _timeline_cell(team)
    login(page, live_server, owner)
    url = f"{live_server.url}/runs/{cell.run_id}/cells/{cell.pk}/artifacts/"
    page.goto(url)
    page.wait_for_selector("#cell-timeline[data-ready='1']", state="attached")
    chart = page.evaluate(
        "(() => { const d = document.getElementById('cell-timeline');"
        " return {names: d.data.map(t => t.name), axes: d.data.map(t => t.yaxis),"
        " y: d.layout.yaxis.title.text, y2: d.layout.yaxis2.title.text,"
        " y2range: d.layout.yaxis2.range, panels: d.dataset.panels}; })()"
    )
    assert chart["names"] == ["Transactions per second (tps)", "host CPU busy (%)"]
    assert chart["axes"] == ["y", "y2"] and chart["panels"] == "tool,telemetry"
    assert (chart["y"], chart["y2"], chart["y2range"]) == (
        "Transactions per second (tps)",
        "host CPU busy (%)",
        [0, 100],
    )
    # a rate added beside the CPU gets its own axis: % and /s never share one
    page.select_option("#timeline-telemetry", ["host:cpu_busy_pct", "db:questions_per_s"])
    axes = page.evaluate(
        "(() => { const l = document.getElementById('cell-timeline').layout;"
        " return [l.yaxis2.title.text, l.yaxis3.title.text, l.yaxis3.overlaying]; })()"
    )
    assert sorted(axes[:2]) == ["database queries (/s)", "host CPU busy (%)"] and axes[2] == "y2"
    screenshot(page, "cell-timeline-defaults")
    assert page.console_errors == []


def test_timeline_without_telemetry_draws_no_empty_panel(page, live_server, owner, team):  # noqa: F811
    cell = _timeline_cell(team, telemetry=False)
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/runs/{cell.run_id}/cells/{cell.pk}/artifacts/")
    page.wait_for_selector("#cell-timeline[data-ready='1']", state="attached")
    assert page.get_attribute("#cell-timeline", "data-panels") == "tool"
    domain = page.evaluate("document.getElementById('cell-timeline').layout.yaxis.domain")
    assert domain == [0, 1]
    assert page.console_errors == []


def test_values_100x_apart_over_block_sizes_get_a_log_axis(page, live_server, owner, team):  # noqa: F811
    cells = [
        ({"bs": bs}, r, {"bw_mb_s": mb_s + r})
        for bs, mb_s in (("4k", 30.0), ("1m", 900.0), ("32m", 3200.0))
        for r in (1, 2)
    ]
    run = make_run(team, tool="fio", cells=cells)
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/runs/{run.pk}/results/?rows=bs&columns=repeat&metric=bw_mb_s")
    page.wait_for_selector("#chart-main[data-ready='1']", state="attached")
    axis = page.evaluate("document.getElementById('chart-main').layout.yaxis")
    assert axis["type"] == "log" and axis["title"]["text"].endswith("(log scale)")
    bars = page.locator("#chart-main .point path")
    heights = [b["height"] for b in (p.bounding_box() for p in bars.all()) if b]
    assert heights and min(heights) > 20, heights  # the 4k bars are visible
    screenshot(page, "log-axis-block-sizes")
    assert page.console_errors == []
