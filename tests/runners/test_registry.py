"""The tool registry: every tool declares the whole interface, its metric
catalog covers every metric its parser reports, and the rest reads it."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from runners import engines, metrics, tools
from runners.errors import ParseError, ValidationError
from runners.metrics import HIGHER, LOWER, Metric
from runners.plan import load_plan

FIXTURES = Path(__file__).parent.parent / "fixtures"
INTERFACE = (
    "NAME",
    "BINARY",
    "PACKAGE",
    "PARAMS",
    "PHASES",
    "validate",
    "build",
    "parse",
    "version_command",
    "parse_version",
    "TARGET_KIND",
    "TARGET_KINDS",
    "MEASURED",
    "DURATION_PARAM",
    "METRICS",
    "SERIES",
    "default_view",
)


@pytest.mark.parametrize("name", list(tools.TOOLS))
def test_registry_tool_declares_the_whole_interface(name):
    module = tools.TOOLS[name]
    missing = [attr for attr in INTERFACE if not hasattr(module, attr)]
    assert missing == []
    assert module.NAME == name
    assert module.TARGET_KIND in module.TARGET_KINDS
    assert module.DURATION_PARAM is None or module.DURATION_PARAM in module.PARAMS
    assert all(isinstance(m, Metric) and m.kind in metrics.KINDS for m in module.METRICS.values())
    assert set(module.SERIES) <= set(module.METRICS)
    view = module.default_view([])
    assert set(view) == {"rows", "columns", "metric", "statistic", "chart_x", "extra_metrics"}


def _fixture_metrics(name):
    module, names = tools.TOOLS[name], set()
    for path in sorted((FIXTURES / name).glob("*.out")):
        try:
            result = module.parse(path.read_text(errors="replace"))
        except ParseError:
            continue
        names |= set(result.metrics)
        for group in result.groups:
            names |= set(group["metrics"])
        names |= set(result.series) - {"t"}
    return names


@pytest.mark.parametrize("name", list(tools.TOOLS))
def test_registry_catalog_has_a_row_for_every_metric_the_parser_reports(name):
    names = _fixture_metrics(name)
    assert names, "no fixture gave metrics"
    unknown = sorted(n for n in names if tools.metric(name, n) == Metric(n))
    assert unknown == []


@pytest.mark.parametrize("name", list(tools.TOOLS))
def test_registry_read_output_is_the_parse_and_leaves_the_collector_as_found(name):
    """read_output (what workers and imports call) gives parse()'s Result, by
    module or by name, and restores the cycle collector, also on ParseError."""
    text = max(
        (p.read_text() for p in (FIXTURES / name).glob("*.out")),
        key=lambda t: (_parses(name, t), len(t)),
    )
    module = tools.get_tool(name)
    assert _parses(name, text)
    assert tools.read_output(module, text) == module.parse(text)
    assert tools.read_output(name, text) == module.parse(text)
    assert gc.isenabled()
    with pytest.raises(ParseError):
        tools.read_output(name, "")
    assert gc.isenabled()
    gc.disable()  # a caller that paused it keeps it paused
    try:
        assert tools.read_output(name, text) == module.parse(text)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_registry_read_output_runs_no_collection_where_parse_runs_many():
    """The pause is real: a long mysqlslap output (a real capture repeated,
    thousands of groups) starts collections when parse() runs alone, none
    through read_output."""
    text = (FIXTURES / "mysqlslap" / "mysqlslap_multi_engine.out").read_text() * 2000
    module = tools.get_tool("mysqlslap")
    collections = []

    def count(phase, info):
        if phase == "start":
            collections.append(info["generation"])

    gc.callbacks.append(count)
    try:
        plain = module.parse(text)
        during_parse = len(collections)
        collections.clear()
        paused = tools.read_output("mysqlslap", text)
        during_read_output = len(collections)
    finally:
        gc.callbacks.remove(count)
    assert len(plain.groups) >= 2000 and paused == plain
    assert during_parse > 0
    assert during_read_output == 0


def _parses(name: str, text: str) -> bool:
    try:
        tools.get_tool(name).parse(text)
    except ParseError:
        return False
    return True


@pytest.mark.parametrize(
    "tool, name, expected",
    [
        ("sysbench", "tps", Metric("Transactions per second", "tps", HIGHER, "throughput")),
        ("pgbench", "latency_avg_ms", Metric("Average latency", "ms", LOWER, "latency")),
        (
            "stress-ng",
            "vm_bogo_ops_per_s",
            Metric("vm Bogo operations per second (real time)", "bogo ops/s", HIGHER, "throughput"),
        ),
        (
            "redis_benchmark",
            "get_latency_p99_ms",
            Metric("get 99th percentile latency", "ms", LOWER, "latency"),
        ),
        ("fio", "iops", Metric("IOPS (read + write)", "IOPS", HIGHER, "throughput")),
        ("fio", "no_such_metric", Metric("no_such_metric")),
        ("no_such_tool", "tps", Metric("tps")),
    ],
)
def test_registry_metric_lookup(tool, name, expected):
    assert tools.metric(tool, name) == expected


@pytest.mark.parametrize(
    "tool, name, delta, better",
    [
        ("sysbench", "tps", 5.0, True),
        ("sysbench", "tps", -5.0, False),
        ("sysbench", "latency_avg_ms", 5.0, False),
        ("sysbench", "latency_avg_ms", -5.0, True),
        ("mysqlslap", "clients", 5.0, None),
        ("sysbench", "tps", 0.0, None),
    ],
)
def test_registry_metric_direction_judges_a_delta(tool, name, delta, better):
    assert tools.metric(tool, name).better(delta) is better


@pytest.mark.parametrize(
    "tool, params, seconds",
    [
        ("sysbench", {"time": 60, "threads": 4}, 60.0),
        ("pgbench", {"time": 30}, 30.0),
        ("fio", {"runtime": 10}, 10.0),
        ("stress_ng", {"timeout": 5}, 5.0),
        ("stress-ng", {"timeout": 5}, 5.0),
        ("mysqlslap", {"concurrency": 4}, None),
        ("redis_benchmark", {"requests": 1000}, None),
        ("pgbench", {"transactions": 100}, None),
    ],
)
def test_registry_duration_seconds(tool, params, seconds):
    assert tools.duration_seconds(tool, params) == seconds


@pytest.mark.parametrize(
    "tool, params, metrics, seconds",
    [
        # the run time the output reported, over the time asked
        ("sysbench", {"time": 6}, {"total_time_s": 6.0012, "tps": 50.0}, 6.0012),
        ("fio", {"runtime": 10}, {"runtime_s": 9.5}, 9.5),
        # nothing reported: the time limit; no limit either: unknown
        ("sysbench", {"time": 6}, {"tps": 50.0}, 6.0),
        ("pgbench", {"time": 6}, {"tps": 50.0}, 6.0),
        ("pgbench", {"transactions": 100}, {"tps": 50.0}, None),
        ("mysqlslap", {"number_of_queries": 1000}, {"avg_s": 1.2}, None),
    ],
)
def test_registry_measured_seconds(tool, params, metrics, seconds):
    assert tools.measured_seconds(tool, params, metrics) == seconds


def test_registry_lists_are_derived():
    assert tools.TOOL_NAMES == tuple(tools.TOOLS)
    assert "stress_ng" not in tools.MEASURED_TOOLS and "redis_benchmark" in tools.MEASURED_TOOLS
    assert set(tools.TARGET_KINDS) == {"mysql", "postgres", "host", "redis"}
    assert engines.DEFAULT_PORTS == {"mysql": 3306, "postgres": 5432, "redis": 6379}
    assert tools.tools_for_kind("postgres") == ["sysbench", "fio", "pgbench"]
    assert tools.tools_for_kind("redis") == ["redis_benchmark"]
    assert [tools.default_tool(k) for k in ("mysql", "postgres", "host", "redis")] == [
        "mysqlslap",
        "pgbench",
        "fio",
        "redis_benchmark",
    ]
    with pytest.raises(KeyError, match="known: mysqlslap"):
        tools.get_tool("nope")


def test_registry_plan_targets_take_kind_and_port_from_the_tool():
    plan = load_plan(
        {"name": "r", "tool": "redis_benchmark", "targets": [{"name": "cache", "host": "10.0.0.9"}]}
    )
    assert (plan.targets[0].kind, plan.targets[0].port) == ("redis", 6379)
    with pytest.raises(ValidationError) as err:
        load_plan(
            {
                "name": "r",
                "tool": "pgbench",
                "targets": [{"name": "cache", "kind": "redis", "host": "10.0.0.9"}],
            }
        )
    assert err.value.message == "pgbench needs a postgres target"


@pytest.mark.django_db
def test_registry_catalog_reaches_tables_deltas_and_exports(team):
    from benchapp.analysis import results
    from benchapp.histories import archive
    from tests.benchapp.results_data import make_run

    def run(name, tps, latency):
        return make_run(
            team,
            name=name,
            cells=[
                ({"threads": 4}, r, {"tps": tps + r, "latency_avg_ms": latency + r / 10})
                for r in (1, 2, 3, 4)  # enough repeats for a significant difference
            ],
        )

    before, after = run("before", 100.0, 5.0), run("after", 200.0, 9.0)
    data = results.results(
        [before, after],
        {"rows": ["threads"], "columns": ["metric"], "metric": ["tps", "latency_avg_ms"]},
    )
    assert data["metric_label"] == "Transactions per second (tps), Average latency (ms)"
    judged = {
        col["key"][-1]: cell.get("better")
        for col, cell in zip(data["table"]["columns"], data["display"][0]["cells"])
        if cell and "delta" in cell
    }
    # more tps is better; more latency is worse
    assert judged == {"tps": True, "latency_avg_ms": False}
    lines = archive.export_csv(team, [before]).splitlines()
    units = {line.split(",")[-3]: line.split(",")[-1] for line in lines[1:]}
    assert units == {"tps": "tps", "latency_avg_ms": "ms"}


def test_duration_reads_a_tools_aliases():
    assert tools.duration_seconds("sysbench", {"max_time": 30}) == 30.0
    assert tools.duration_seconds("sysbench", {"time": 45}) == 45.0


@pytest.mark.parametrize("name", tools.MEASURED_TOOLS)
def test_every_measured_tool_declares_catalogued_main_metrics(name):
    mains = tools.main_metrics(name)
    assert mains, f"{name} declares no MAIN_METRICS"
    for metric in mains:
        found = tools.metric(name, metric)
        assert found.unit and found.judged, f"{name}.{metric}: no unit or direction"


def test_main_metric_is_the_first_main_metric_a_run_has():
    assert tools.main_metric("sysbench") == "tps"
    assert tools.main_metric("sysbench", ["events", "events_per_s", "reads"]) == "events_per_s"
    assert tools.main_metric("fio", ["read_bw_kib_s", "read_iops", "iops"]) == "iops"
    assert tools.main_metric("mysqlslap", ["min_s"]) is None
    assert tools.main_metric("pkb-import", ["x"]) is None and tools.main_metrics("pkb") == ()
