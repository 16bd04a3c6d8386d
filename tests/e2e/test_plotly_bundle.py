"""The vendored Plotly build (scripts/plotly-entry.js: core, bar, box) in a
real browser: the trend page draws its band, line and change marker, and each
trace type static/js asks for is registered and drawn, not dropped."""

import pytest
from playwright.sync_api import expect

from benchapp.histories import history
from benchapp.models import Plan
from tests.benchapp.histories.test_history import nightly
from tests.support.browser import browser, login, page  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

# What static/js/charts.js and trend.js draw, one trace of each kind.
DRAW_EACH_KIND = """() => {
  const div = document.createElement("div");
  document.body.appendChild(div);
  const x = ["a", "b", "c"];
  const errors = { type: "data", symmetric: false, array: [1, 1, 1], arrayminus: [1, 1, 1] };
  return Plotly.newPlot(div, [
    { type: "scatter", mode: "lines+markers", x, y: [1, 3, 2], error_y: errors },
    { type: "scatter", x: [0, 1, 1, 0], y: [0, 0, 1, 1], fill: "toself" },
    { type: "bar", x, y: [2, 1, 3], error_y: errors },
    { type: "box", x: ["a", "a", "a", "b", "b", "b"], y: [1, 2, 3, 2, 3, 4], boxpoints: "all" },
  ], { barmode: "group", boxmode: "group" }).then(() => ({
    types: div._fullData.filter((t) => t.visible === true).map((t) => t.type),
    bars: div.querySelectorAll(".barlayer .point").length,
    boxes: div.querySelectorAll(".boxlayer .trace").length,
    errorbars: div.querySelectorAll(".errorbar").length,
    fills: div.querySelectorAll(".scatterlayer .js-fill").length,
  }));
}"""


def test_trend_page_draws_and_every_trace_kind_is_in_the_bundle(page, live_server, owner, team):  # noqa: F811
    plan = Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})
    nightly(team, plan, [1000] * 20 + [850] * 10)
    history.detect_plan(plan)
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/plans/{plan.pk}/trend/?metric=tps&keys=threads%3D4")
    page.wait_for_selector("#trend-chart .main-svg .scatterlayer .trace", state="attached")
    modes = page.evaluate("document.getElementById('trend-chart')._fullData.map((t) => t.mode)")
    assert modes.count("lines+markers") == 1  # the line
    assert page.locator("#trend-chart .scatterlayer .js-fill").count() >= 1  # its band
    assert "markers" in modes  # the change marker
    drawn = page.evaluate(DRAW_EACH_KIND)
    assert drawn["types"] == ["scatter", "scatter", "bar", "box"]
    assert drawn["bars"] == 3 and drawn["boxes"] == 1
    assert drawn["errorbars"] >= 6 and drawn["fills"] >= 1
    assert page.console_errors == []


def test_a_long_trend_is_a_line_without_a_dot_per_run_and_still_opens_a_run(
    page,  # noqa: F811
    live_server,
    owner,
    team,
):
    """Past 60 runs a trend line has no dot per run (they were ~40 % of the
    first draw of the year's trend page); hovering a point still names its run
    and clicking it opens that run."""
    plan = Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})
    runs = nightly(team, plan, [1000] * 70)
    history.detect_plan(plan)
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/plans/{plan.pk}/trend/?metric=tps&keys=threads%3D4")
    expect(page.locator("#trend-chart")).to_have_attribute("data-ready", "1")
    traces = page.evaluate(
        "document.getElementById('trend-chart')._fullData.map((t) => [t.mode, t.x.length])"
    )
    assert ["lines", 70] in traces
    assert not [t for t in traces if t[0] == "lines+markers"]
    assert page.locator("#trend-chart .scatterlayer .point").count() == 0
    # the middle run's point, under a real mouse: hovered, then clicked
    page.locator("#trend-chart").scroll_into_view_if_needed()
    x, y, run = page.evaluate(
        """() => { const div = document.getElementById('trend-chart');
        const line = div.data.find((t) => t.customdata && t.mode === 'lines');
        const xa = div._fullLayout.xaxis, ya = div._fullLayout.yaxis;
        const box = div.getBoundingClientRect(), i = 35;
        return [box.left + xa._offset + xa.d2p(line.x[i]),
                box.top + ya._offset + ya.d2p(line.y[i]), line.customdata[i]]; }"""
    )
    page.mouse.move(x - 30, y)
    page.mouse.move(x, y, steps=5)
    expect(page.locator("#trend-chart .hoverlayer")).to_contain_text(f"run #{run}:")
    with page.expect_navigation():
        page.mouse.click(x, y)
    assert run in {r.pk for r in runs}
    assert page.url.endswith(f"/runs/{run}/")
    assert page.console_errors == []
