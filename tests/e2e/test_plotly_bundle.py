"""The vendored Plotly build (scripts/plotly-entry.js: core, bar, box) in a
real browser: the trend page draws its band, line and change marker, and each
trace type static/js asks for is registered and drawn, not dropped."""

import pytest

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
