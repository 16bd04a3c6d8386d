"""The cell timeline opens on the answer: the tool's main rate (never a
series of zeros) and the machine's CPU, each series named in words with its unit."""

from benchapp.analysis import timeline
from benchapp.models import CellSeries
from benchapp.store import seriesstore
from tests.benchapp.results_data import make_run


def _cell(team, tool, tool_series, telemetry=None):
    cell = make_run(team, tool=tool, cells=[({}, 1, {"x": 1.0})]).cells.get()
    t = [1.0, 2.0, 3.0]
    rows = seriesstore.rows(cell, 1, {"t": t, **tool_series})
    for source, series in (telemetry or {}).items():
        rows += seriesstore.rows(cell, 1, {"t": t, **series}, source=source)
    CellSeries.objects.bulk_create(rows)
    return cell


def test_timeline_opens_on_the_main_rate_and_the_machines_cpu(team):
    cell = _cell(
        team,
        "sysbench",
        {"err_s": [0, 0, 0], "latency_p95_ms": [3, 4, 5], "tps": [100, 110, 105]},
        {
            "host": {"cpu_busy_pct": [90, 95, 97], "load1": [2, 2, 3]},
            "db": {"commits_per_s": [0, 0, 0], "hit_ratio_pct": [99, 99, 99]},
        },
    )
    data = timeline.cell_timeline(cell)
    assert data["tool"] == ["err_s", "latency_p95_ms", "tps"]  # err_s first by name
    assert data["tool_default"] == "tps"
    assert data["defaults"] == ["host:cpu_busy_pct"]
    assert (data["labels"]["tool:tps"], data["units"]["tool:tps"]) == (
        "Transactions per second",
        "tps",
    )
    assert (data["labels"]["host:cpu_busy_pct"], data["units"]["host:cpu_busy_pct"]) == (
        "host CPU busy",
        "%",
    )
    assert data["units"]["db:commits_per_s"] == "/s"
    assert data["source_labels"] == {"db": "database", "host": "host"}


def test_a_tool_without_its_main_series_opens_on_one_that_is_not_all_zero(team):
    cell = _cell(
        team,
        "mysqlslap",
        {"commits": [0, 0, 0], "queries": [0, 5, 7]},
        {"db": {"cpu_busy_pct": [0, 0, 0]}, "target": {"cpu_busy_pct": [20, 30, 40]}},
    )
    data = timeline.cell_timeline(cell)
    assert data["tool_default"] == "queries"
    assert data["defaults"] == ["target:cpu_busy_pct"]


def test_a_cell_with_telemetry_only_opens_on_no_tool_series(team):
    cell = _cell(team, "mysqlslap", {}, {"host": {"cpu_busy_pct": [5, 6, 7]}})
    data = timeline.cell_timeline(cell)
    assert (data["tool"], data["tool_default"]) == ([], "")
    assert data["defaults"] == ["host:cpu_busy_pct"]
