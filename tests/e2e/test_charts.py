"""Charts in a real browser (Debian's chromium through Playwright): the
results and share pages draw non-empty Plotly charts and export a PNG."""

import pytest

from benchapp.histories import comparisons
from tests.benchapp.results_data import add_series, make_run
from tests.support.browser import browser, login, page, screenshot  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def _runs(team):
    runs = []
    for name, base in (("before", 100.0), ("after", 120.0)):
        run = make_run(
            team,
            name=name,
            cells=[
                (
                    {"stress.cpu": cpu},
                    rep,
                    {"tps": base - cpu * 5 + rep, "qps": 20 * base, "latency_avg_ms": 5.0 + cpu},
                )
                for cpu in (0, 2, 4, 8)
                for rep in (1, 2)
            ],
        )
        add_series(run.cells.first(), "tps", [base + (i % 13) for i in range(1500)])
        runs.append(run)
    return runs


def _traces(page, div_id) -> int:  # noqa: F811
    page.wait_for_selector(f"#{div_id} .main-svg", state="attached")
    return page.locator(f"#{div_id} .main-svg .trace").count()


def test_results_page_charts_render_and_png_downloads(page, live_server, owner, team):  # noqa: F811
    run = _runs(team)[0]
    login(page, live_server, owner)
    asked = []
    page.on("request", lambda request: asked.append(request.url))
    page.goto(f"{live_server.url}/runs/{run.pk}/results/")
    assert _traces(page, "chart-main") >= 1
    # The y axis title comes from the metric catalog, unit included.
    assert (
        page.locator("#chart-main .g-ytitle").text_content()
        == "Transactions per second (tps) · higher is better"
    )
    # 1,500 points: drawn as an SVG line (the vendored Plotly build has no WebGL traces).
    page.wait_for_selector("#chart-series .scatterlayer .trace", state="attached")
    assert page.locator("#chart-series .scatterlayer .trace path.js-line").count() >= 1
    # The results chart's data comes with the page; only the series is asked for.
    (json_asked,) = [u for u in asked if ".json" in u]
    assert f"/runs/{run.pk}/series.json?" in json_asked
    with page.expect_download() as info:
        page.click("button[data-png=chart-main]")
    download = info.value
    assert download.suggested_filename == "chart-main.png"
    path = download.path()
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    screenshot(page, "results-charts")
    assert page.console_errors == []


def test_share_page_renders_charts_logged_out(page, live_server, owner, team):  # noqa: F811
    before, after = _runs(team)
    comparison = comparisons.save_comparison(team, "before/after", [before, after])
    token = comparison.share()
    page.goto(f"{live_server.url}/share/{token}/")
    # one line per run, and a dot per repeat beside each
    page.wait_for_selector("#chart-main[data-ready='1']", state="attached")
    types = page.evaluate("[...document.getElementById('chart-main').data].map(t => t.mode)")
    assert types.count("lines+markers") == 2
    assert page.locator("nav.mainnav").count() == 0
    assert page.locator("table.pivot td.num").count() > 0
    screenshot(page, "shared-comparison")
    assert page.console_errors == []


DOTS = "() => document.getElementById('chart-main').data.filter((t) => t.mode === 'markers').length"


def test_a_chart_with_many_repeats_draws_their_dots_on_demand(page, live_server, owner, team):  # noqa: F811
    # 2 runs x 16 points x 10 repeats = 320 dots, above the 300 a chart draws at once.
    runs = [
        make_run(
            team,
            name=name,
            cells=[
                ({"threads": threads}, rep, {"tps": base + threads + rep})
                for threads in range(1, 17)
                for rep in range(1, 11)
            ],
        )
        for name, base in (("before", 100.0), ("after", 120.0))
    ]
    comparison = comparisons.save_comparison(team, "many repeats", runs)
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/comparisons/{comparison.pk}/")
    page.wait_for_selector("#chart-main[data-ready='1']", state="attached")
    switch = page.locator("#charts .repeat-dots")
    assert page.evaluate(DOTS) == 0
    assert switch.is_visible() and "320" in switch.text_content()
    switch.locator("input").check()
    page.wait_for_function(f"({DOTS})() === 2")  # one dot trace per run
    assert page.locator("#chart-main .scatterlayer .trace .point").count() >= 320 + 32
    switch.locator("input").uncheck()
    page.wait_for_function(f"({DOTS})() === 0")
    assert page.console_errors == []

    # A run's own page (160 dots) draws them at once, with no switch.
    page.goto(f"{live_server.url}/runs/{runs[0].pk}/results/")
    page.wait_for_selector("#chart-main[data-ready='1']", state="attached")
    assert page.evaluate(DOTS) == 1
    assert not page.locator("#charts .repeat-dots").is_visible()


# What charts.js writes on axes and hover labels, next to what the
# Intl.NumberFormat it replaced (compact, 3 significant digits from 10,000 on;
# 4 below) wrote: the same text from 1e-6 up, without its locale data.
NUMBERS = {
    0: "0",
    -1: "-1",
    0.5: "0.5",
    0.000123456: "0.0001235",
    0.1 + 0.2: "0.3",
    123.456: "123.5",
    3732: "3,732",
    9999.5: "10,000",
    10000: "10K",
    12345: "12.3K",
    -12345: "-12.3K",
    99950: "100K",
    999499: "999K",
    999950: "1M",  # not "1000K"
    -999950: "-1M",
    1.5e6: "1.5M",
    2.345e9: "2.35B",
    7e12: "7T",
    1e15: "1000T",
}


def test_chart_numbers_read_as_people_write_them(page, live_server, owner, team):  # noqa: F811
    run = _runs(team)[0]
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/runs/{run.pk}/results/")
    written = page.evaluate(
        """(values) => {
          const si = new Intl.NumberFormat("en", { notation: "compact", maximumSignificantDigits: 3 });
          const plain = new Intl.NumberFormat("en", { maximumSignificantDigits: 4 });
          return values.map((v) => [window.BenchCharts.number(v),
                                    Math.abs(v) >= 10000 ? si.format(v) : plain.format(v)]);
        }""",
        list(NUMBERS),
    )
    assert [ours for ours, _ in written] == list(NUMBERS.values())
    assert [ours for ours, _ in written] == [intl for _, intl in written]
