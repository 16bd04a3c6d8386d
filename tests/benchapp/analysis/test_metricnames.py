"""Metric lists in words: catalog labels, the main metric first, telemetry
summaries grouped by where they were measured."""

from benchapp.analysis import metricnames

NAMES = [
    "errors",
    "latency_avg_ms",
    "telemetry.db.hit_ratio_pct.mean",
    "telemetry.host.cpu_busy_pct.max",
    "telemetry.host.cpu_busy_pct.mean",
    "telemetry.host.load1.mean",
    "tps",
]


def test_metrics_are_grouped_and_labelled_in_words():
    groups = metricnames.grouped("sysbench", NAMES)
    assert [g for g, _rows in groups] == ["sysbench", "database telemetry", "host telemetry"]
    own, db, host = (rows for _g, rows in groups)
    assert own[0] == ("tps", "Transactions per second (tps)")  # the main metric first
    assert [label for _n, label in own[1:]] == ["Average latency (ms)", "Ignored errors"]
    assert db == [("telemetry.db.hit_ratio_pct.mean", "database buffer/cache hit ratio, mean (%)")]
    assert [label for _n, label in host] == [
        "host CPU busy, max (%)",
        "host CPU busy, mean (%)",
        "host load (1 min), mean",
    ]


def test_a_metric_no_catalog_knows_keeps_its_name_and_stored_unit():
    assert metricnames.label("pkb", "throughput", {"throughput": "ops/s"}) == "throughput (ops/s)"
    (only,) = metricnames.as_json("pkb", ["throughput"])
    assert only == {"group": "pkb", "options": [{"value": "throughput", "label": "throughput"}]}
