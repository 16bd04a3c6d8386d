"""Each reference study's results page, in a real browser, opens with the
study's own table and chart: table headers, Plotly trace types, axis titles
with units, panels, and the per-second chart only where the tool has one.

One browser for the five pages (a chromium launch per page would double the time).
"""

import pytest

from tests.benchapp.study_runs import STUDIES
from tests.support.browser import browser, login, page, screenshot  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

WN = "auto_generate_sql_write_number"
TPS, QPS, LAT = "Transactions per second (tps)", "Queries per second (qps)", "Average latency (ms)"
IOPS, MBS = "IOPS (read + write) (IOPS)", "Bandwidth (read + write) (MB/s)"
VOLUMES = ["1", "2", "4", "8", "16"]

# study: ([header rows of each table], main trace type, x title, y title, x axis type,
#         lines per panel, panel titles, per-second chart shown)
EXPECTED = {
    "S1": (
        [["target \\ load_type", "read", "write", "key", "update", "mixed", "all"]],
        "bar",
        "load_type",
        "Average time to run all queries (s) · lower is better",
        "category",
        ["micro", "m2-4xlarge-iops"],
        [],
        False,
    ),
    "S2": (
        [["stress.cpu \\ metric", TPS, QPS, LAT]],
        "scatter",
        "stress.cpu",
        TPS + " · higher is better",
        "linear",
        ["Transactions per second"],
        [],
        True,
    ),
    "S3": (
        [["rw \\ volumes", *VOLUMES, "all"], ["rw \\ volumes", *VOLUMES, "all"]],
        "scatter",
        "volumes",
        IOPS + " · higher is better",
        "log",  # 1-16 volumes span a decade
        ["read", "write", "randread", "randwrite"],
        [],
        False,
    ),
    "S4": (
        [["target · read_only \\ threads", "4", "16", "64", "128", "256", "all"]],
        "scatter",
        "threads",
        TPS + " · higher is better",
        "log",  # threads 4-256
        ["rds-mysql", "galera-3node"],
        ["read_only: True", "read_only: False"],
        True,
    ),
    "S5": (
        [[WN, "Queries per second (q/s)"]],
        "scatter",
        WN,
        "Queries per second (q/s) · higher is better",
        "log",
        ["Queries per second"],
        [],
        False,
    ),
}

CHART = """() => {
  const div = document.getElementById("chart-main");
  return {
    types: [...new Set(div.data.map((t) => t.type))],
    first_panel: div.data.filter((t) => t.xaxis === "x" && t.mode !== "markers").map((t) => t.name),
    repeat_dots: div.data.filter((t) => t.mode === "markers").length,
    error_plus: div.data[0].error_y ? div.data[0].error_y.array[0] : null,
    panels: div.data.some((t) => t.yaxis === "y2") ? 2 : 1,
    x_title: div.layout.xaxis.title.text, y_title: div.layout.yaxis.title.text,
    x_type: div._fullLayout.xaxis.type,
    annotations: (div.layout.annotations || []).map((a) => a.text),
  };
}"""


def _headers(page):  # noqa: F811
    return page.evaluate("""() => [...document.querySelectorAll("table.pivot")].map(
        (t) => [...t.querySelectorAll("thead th")].map((th) => th.textContent.trim()))""")


def test_each_study_opens_with_its_table_and_chart(page, live_server, owner, team):  # noqa: F811
    runs = {study: build(team) for study, build in STUDIES.items()}
    login(page, live_server, owner)
    for study, run in runs.items():
        headers, kind, x_title, y_title, x_type, lines, panels, per_second = EXPECTED[study]
        page.goto(f"{live_server.url}/runs/{run.pk}/results/")
        assert _headers(page) == headers, study
        page.wait_for_selector("#chart-main[data-ready='1']", state="attached")
        chart = page.evaluate(CHART)
        assert chart["types"] == [kind], study
        assert chart["first_panel"] == lines, study
        assert (chart["x_title"], chart["y_title"], chart["x_type"]) == (x_title, y_title, x_type)
        assert chart["annotations"] == panels, study
        assert chart["panels"] == (2 if panels else 1), study
        # every repeat a dot beside its mean (S2 twice, S5 three times), none without repeats
        assert (chart["repeat_dots"] > 0) == (study in ("S2", "S5")), study
        assert page.locator("#chart-series").count() == (1 if per_second else 0), study
        if study == "S1":  # micro, read: 4 s, the iterations' max 6 s
            assert chart["error_plus"] == 2.0
        assert page.locator("#chart-main .g-ytitle").first.text_content() == y_title
        screenshot(page, f"study-{study}")
    # S2's per-second series (sysbench --report-interval) draws.
    page.goto(f"{live_server.url}/runs/{runs['S2'].pk}/results/")
    page.wait_for_selector("#chart-series .main-svg .trace", state="attached")
    assert page.console_errors == []
