"""The view a results page opens with: each study's own table and chart,
chosen from the plan's axes (benchapp.analysis.defaults), with repeats folded into n."""

import pytest

from benchapp.analysis import results
from tests.benchapp.results_data import make_run
from tests.benchapp.study_runs import s1_run, s2_run, s3_run, s4_run, s5_run

pytestmark = pytest.mark.django_db

WN = "auto_generate_sql_write_number"


def _headers(table):
    return [c["label"] for c in table["columns"]]


def _rows(table):
    return [r["label"] for r in table["rows"]]


def test_s1_rows_target_columns_load_type_average_seconds_with_min_max(team):
    data = results.results([s1_run(team)])
    view, table = data["view"], data["table"]
    assert (view["rows"], view["columns"], view["metric"]) == (["target"], ["load_type"], "avg_s")
    assert _rows(table) == ["micro", "m2-4xlarge-iops"]  # the plan's order
    assert _headers(table) == ["read", "write", "key", "update", "mixed"]
    read = table["cells"][0][0]  # micro, read: 4 s, iterations 3.2-6
    assert (read.n, read.mean, read.lo, read.hi) == (1, 4.0, pytest.approx(3.2), 6.0)
    assert data["display"][0]["cells"][0]["spread"] == "min–max 3.2–6"
    chart = data["chart"]
    assert (chart["type"], chart["x_dim"], chart["line_dims"]) == ("bar", "load_type", ["target"])
    assert chart["metric_info"]["title"] == "Average time to run all queries (s)"
    assert not view["series_metric"]  # mysqlslap has no per-second output


def test_s2_rows_stress_cores_columns_tps_qps_latency(team):
    data = results.results([s2_run(team)])
    view, table = data["view"], data["table"]
    assert (view["rows"], view["columns"]) == (["stress.cpu"], ["metric"])
    assert view["metric"] == ["tps", "qps", "latency_avg_ms"]
    assert _rows(table) == ["0", "2", "4", "6", "8"]  # repeats folded: no "0 · 1"
    assert _headers(table) == [
        "Transactions per second (tps)",
        "Queries per second (qps)",
        "Average latency (ms)",
    ]
    tps0 = table["cells"][0][0]
    assert (tps0.n, tps0.mean, tps0.values) == (2, 1001.5, [1001.0, 1002.0])
    chart = data["chart"]
    assert (chart["type"], chart["x_dim"], chart["metric"]) == ("line", "stress.cpu", "tps")
    assert chart["numeric_x"] and not chart["log_x"] and chart["line_dims"] == []
    assert chart["metric_info"]["title"] == "Transactions per second (tps)"
    assert view["series_metric"] == "tps"


def test_s3_rows_rw_columns_volumes_iops_and_mb_per_s(team):
    data = results.results([s3_run(team)])
    view, table = data["view"], data["table"]
    assert (view["rows"], view["columns"], view["metric"]) == (["rw"], ["volumes"], "iops")
    assert _headers(table) == ["1", "2", "4", "8", "16"]
    assert _rows(table) == ["read", "write", "randread", "randwrite"]
    assert table["cells"][2][4].mean == 3200.0  # randread, 16 volumes
    (main, mb) = data["tables"]
    assert mb["table"]["metrics"] == ["bw_mb_s"] and mb["metric_label"] == (
        "Bandwidth (read + write) (MB/s)"
    )
    assert mb["table"]["cells"][0][0].mean == pytest.approx(200 * 4 * 1.024e-3)  # read, 1
    chart = data["chart"]
    assert (chart["type"], chart["x_dim"], chart["line_dims"]) == ("line", "volumes", ["rw"])
    assert chart["metric_info"]["title"] == "IOPS (read + write) (IOPS)"
    assert not view["series_metric"]


def test_s4_tps_vs_threads_one_line_per_target_read_only_apart(team):
    data = results.results([s4_run(team)])
    view = data["view"]
    assert (view["rows"], view["columns"], view["metric"]) == (
        ["target", "read_only"],
        ["threads"],
        "tps",
    )
    chart = data["chart"]
    assert (chart["type"], chart["x_dim"]) == ("line", "threads")
    assert chart["line_dims"] == ["target"] and chart["facet_dims"] == ["read_only"]
    assert chart["facets"] == ["True", "False"]  # read-only first, as the plan lists them
    assert sorted({c["series"] for c in chart["columns"]}) == ["galera-3node", "rds-mysql"]
    assert [r["key"][0] for r in chart["rows"]] == [4, 16, 64, 128, 256]


def test_s5_qps_per_write_number_each_repeat_visible(team):
    data = results.results([s5_run(team)])
    view, table = data["view"], data["table"]
    assert (view["rows"], view["columns"], view["metric"]) == ([WN], [], "qps")
    assert _rows(table) == ["10000", "1000000"]
    assert _headers(table) == ["Queries per second (q/s)"]
    small = table["cells"][0][0]
    assert (small.n, small.mean) == (3, 7873.0)
    assert data["display"][0]["cells"][0]["spread"] == "n=3: 7,645, 4,197, 11,777"
    chart = data["chart"]
    assert (chart["type"], chart["x_dim"], chart["log_x"]) == ("line", WN, True)
    assert chart["cells"][0][0]["values"] == [7645.0, 4197.0, 11777.0]
    assert chart["metric_info"]["title"] == "Queries per second (q/s)"


def test_repeat_is_a_dimension_only_when_asked(team):
    run = s5_run(team)
    data = results.results([run], {"rows": [WN], "columns": ["repeat"]})
    assert _headers(data["table"]) == ["1", "2", "3"]
    assert data["chart"]["x_dim"] == WN and "repeat" not in data["chart"]["line_dims"]


def test_chart_type_can_be_asked_for(team):
    data = results.results([s2_run(team)], {"chart": "box"})
    assert data["chart"]["type"] == "box" and data["view"]["chart"] == "box"
    assert results.results([s2_run(team)], {"chart": "pie"})["chart"]["type"] == "line"


def test_output_groups_are_rows_when_the_tool_reads_them(team):
    from tests.support.measures import measure

    run = make_run(team, tool="redis_benchmark", cells=[({}, 1, {"rps": 1.0})])
    cell = run.cells.get()
    for g, v in (("SET", 90000.0), ("GET", 120000.0)):
        measure(cell, "rps", v, attempt=1, group=g)
    data = results.results([run])
    assert data["view"]["rows"] == ["group"] and data["view"]["metric"] == "rps"
    assert _rows(data["table"]) == ["all", "GET", "SET"]  # "all": the cell's own line
    assert data["chart"]["type"] == "bar" and data["chart"]["x_dim"] == "group"
