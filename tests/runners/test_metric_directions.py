"""Every metric of the catalog says which way is better, or says explicitly
that neither is; metrics no catalog knows (imports) take it from their unit."""

import pytest

from runners import metrics as m
from runners.tools import TOOLS, direction, metric

CATALOG = [
    (tool, name, row) for tool, module in TOOLS.items() for name, row in module.METRICS.items()
]


@pytest.mark.parametrize("tool,name,row", CATALOG, ids=[f"{t}.{n}" for t, n, _ in CATALOG])
def test_every_catalog_metric_has_a_direction_or_is_explicitly_neutral(tool, name, row):
    assert row.direction in (m.HIGHER, m.LOWER, m.NEUTRAL), f"{tool}.{name}: no direction declared"
    assert row.kind in m.KINDS
    if row.kind == m.PARAMETER:
        assert row.direction == m.NEUTRAL and direction(tool, name) is None
    if row.kind in ("throughput", "latency"):
        assert direction(tool, name) in (m.HIGHER, m.LOWER)
    assert direction(tool, name) == (row.direction if row.direction != m.NEUTRAL else None)


def test_the_catalog_directions_that_matter():
    assert direction("mysqlslap", "avg_s") == m.LOWER
    assert direction("mysqlslap", "max_s") == m.LOWER
    assert direction("mysqlslap", "qps") == m.HIGHER
    assert direction("mysqlslap", "clients") is None
    assert not metric("mysqlslap", "clients").measured
    assert not metric("sysbench", "threads").measured
    assert metric("sysbench", "tps").measured
    assert direction("sysbench", "latency_p95_ms") == m.LOWER
    assert direction("sysbench", "errors") == m.LOWER
    assert direction("sysbench", "transactions") is None  # fixed by --events, or following --time
    assert direction("stress_ng", "cpu_bogo_ops_per_s") == m.HIGHER  # block-prefixed
    assert direction("fio", "runtime_s") is None


@pytest.mark.parametrize(
    "unit,expected",
    [
        ("s", m.LOWER),
        ("ms", m.LOWER),
        ("us", m.LOWER),
        ("µs", m.LOWER),
        ("seconds", m.LOWER),
        ("ops/s", m.HIGHER),
        ("MB/s", m.HIGHER),
        ("MB/sec", m.HIGHER),
        ("transactions/sec", m.HIGHER),
        ("Mbits/sec", m.HIGHER),
        ("tps", m.HIGHER),
        ("qps", m.HIGHER),
        ("IOPS", m.HIGHER),
        ("requests per second", m.HIGHER),
        ("%", None),
        ("bytes", None),
        ("", None),
        ("ops", None),
        ("MB", None),
    ],
)
def test_an_unknown_metric_takes_its_direction_from_an_unambiguous_unit(unit, expected):
    assert m.direction_from_unit(unit) == expected
    assert direction("pkb", "some_imported_metric", unit) == expected
    assert direction("sysbench", "no_such_metric", unit) == expected


def test_titles_say_which_way_is_better():
    assert metric("mysqlslap", "avg_s").sense() == "lower is better"
    assert metric("pgbench", "tps").to_dict()["sense"] == "higher is better"
    assert metric("pgbench", "transactions").sense() == ""
    assert metric("pkb", "throughput", "MB/s").to_dict()["direction"] == m.HIGHER
