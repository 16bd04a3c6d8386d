"""runners.combine: the figures of several clients combined by metric kind."""

from __future__ import annotations

import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runners.combine import (
    Window,
    combine,
    combine_metrics,
    combine_series,
    histogram_percentile,
    measured_window,
    merge_histograms,
    overlap_share,
    percentile_of,
    start_spread,
    uneven_clients,
)
from runners.results import Result
from runners.tools import fio, metric


def sysbench(name: str):
    return metric("sysbench", name)


def test_throughputs_and_counts_are_summed_times_maxed_parameters_kept():
    combined, warnings = combine_metrics(
        [
            {"tps": 100.0, "transactions": 1000, "total_time_s": 10.0, "threads": 4},
            {"tps": 50.0, "transactions": 500, "total_time_s": 10.2, "threads": 4},
        ],
        sysbench,
    )
    assert combined == {"tps": 150.0, "transactions": 1500, "total_time_s": 10.2, "threads": 4}
    assert warnings == []


def test_an_average_is_weighted_by_the_clients_counts():
    combined, _ = combine_metrics(
        [
            {"latency_avg_ms": 2.0, "latency_min_ms": 0.5, "latency_max_ms": 9.0, "events": 300},
            {"latency_avg_ms": 6.0, "latency_min_ms": 0.7, "latency_max_ms": 30.0, "events": 100},
        ],
        sysbench,
        weight="events",
    )
    # (2 × 300 + 6 × 100) / 400, not the plain mean 4.0
    assert combined["latency_avg_ms"] == pytest.approx(3.0)
    assert (combined["latency_min_ms"], combined["latency_max_ms"]) == (0.5, 30.0)


def test_a_percentile_without_histograms_is_the_maximum_named_as_a_bound():
    combined, warnings = combine_metrics(
        [{"latency_p95_ms": 4.0}, {"latency_p95_ms": 7.5}], sysbench
    )
    assert combined["latency_p95_ms"] == 7.5
    assert warnings == [
        "latency_p95_ms: the clients' maximum, an upper bound of the combined percentile "
        "(no latency histogram from every client)"
    ]


def test_a_percentile_with_histograms_comes_from_the_merged_histogram():
    fast = [[1.0, 90], [2.0, 10]]
    slow = [[2.0, 50], [10.0, 50]]
    combined, warnings = combine_metrics(
        [{"latency_p95_ms": 2.0}, {"latency_p95_ms": 10.0}],
        sysbench,
        histograms=lambda name: [fast, slow],
    )
    # merged: 1.0×90, 2.0×60, 10.0×50 (200); the 190th value is 10.0, the 150th 2.0
    assert combined["latency_p95_ms"] == 10.0
    assert warnings == []
    assert histogram_percentile(merge_histograms([fast, slow]), 75) == 2.0


def test_a_metric_some_client_lacks_is_not_combined():
    combined, _ = combine_metrics([{"tps": 1.0, "qps": 3.0}, {"tps": 2.0}], sysbench)
    assert combined == {"tps": 3.0}


@pytest.mark.parametrize(
    ("name", "pct"),
    [("latency_p95_ms", 95.0), ("latency_p99_9_ms", 99.9), ("latency_avg_ms", None)],
)
def test_percentile_of_reads_the_name(name, pct):
    assert percentile_of(name) == pct


def test_windows_spread_and_overlap():
    windows = [Window(100.0, 110.0), Window(100.5, 110.5), Window(101.0, 111.0)]
    assert start_spread(windows) == 1.0
    # every client ran from 101 to 110: 9 of the 11 seconds spanned
    assert overlap_share(windows) == pytest.approx(9 / 11)
    assert overlap_share([Window(0, 1), Window(2, 3)]) == 0.0


def test_a_measured_window_ends_with_the_tools_run_time_not_the_sessions_exit():
    # The windows CI saw: three sysbench --time=6 clients started within 7 ms,
    # their SSH sessions closed 6.5, 7.0 and 7.25 s after: 90 % by wall clock.
    sessions = [(308.5600, 315.0801), (308.5605, 315.5679), (308.5668, 315.8138)]
    assert overlap_share([Window(*s) for s in sessions]) < 0.9
    measured = [measured_window(start, end, 6.0012) for start, end in sessions]
    assert overlap_share(measured) > 0.99
    assert [w.end - w.start for w in measured] == pytest.approx([6.0012] * 3)
    # never past the command's exit; the wall clock when the run time is unknown
    assert measured_window(10.0, 12.0, 5.0) == Window(10.0, 12.0)
    assert measured_window(10.0, 12.0, None) == Window(10.0, 12.0)
    assert measured_window(10.0, 12.0, 0) == Window(10.0, 12.0)
    # a client that really ran late still shows apart
    late = [measured_window(0.0, 6.5, 6.0), measured_window(3.0, 9.5, 6.0)]
    assert overlap_share(late) == pytest.approx(3 / 9)


def test_uneven_clients_are_those_below_the_share_of_the_median():
    assert uneven_clients([100, 98, 70]) == [3]
    assert uneven_clients([100, 100]) == []


def test_series_are_aligned_on_wall_clock_seconds_and_summed():
    # Client 2 started one second after client 1: its t=1 is client 1's t=2.
    one = {"t": [1.0, 2.0, 3.0], "tps": [10.0, 11.0, 12.0], "lat_ms": [1.0, 1.0, 1.0]}
    two = {"t": [1.0, 2.0, 3.0], "tps": [5.0, 6.0, 7.0], "lat_ms": [3.0, 2.0, 2.0]}
    catalog = {"tps": sysbench("tps"), "lat_ms": sysbench("latency_avg_ms")}.__getitem__
    combined = combine_series([one, two], [1000.0, 1001.0], catalog)
    # only the seconds both reported: 2 and 3 after client 1's start
    assert combined == {"t": [2.0, 3.0], "tps": [16.0, 18.0], "lat_ms": [3.0, 2.0]}


def test_combine_keeps_each_clients_figures_as_groups():
    results = [
        Result(metrics={"tps": 10.0, "events": 100}, warnings=["odd line"]),
        Result(metrics={"tps": 30.0, "events": 300}),
    ]
    combined = combine(results, [0.0, 0.0], sysbench, weight="events")
    assert combined.metrics == {"tps": 40.0, "events": 400}
    assert combined.groups == [
        {"labels": {"client": 1}, "metrics": {"tps": 10.0, "events": 100}},
        {"labels": {"client": 2}, "metrics": {"tps": 30.0, "events": 300}},
    ]
    assert combined.warnings == ["client 1: odd line"]


def test_combine_combines_multi_block_outputs_block_by_block():
    def blocks(rps_set, rps_get):
        return Result(
            metrics={},
            groups=[
                {"labels": {"test": "SET"}, "metrics": {"rps": rps_set}},
                {"labels": {"test": "GET"}, "metrics": {"rps": rps_get}},
            ],
        )

    redis = lambda name: metric("redis_benchmark", name)  # noqa: E731
    combined = combine([blocks(10.0, 20.0), blocks(1.0, 2.0)], [0.0, 0.0], redis)
    assert combined.groups[:2] == [
        {"labels": {"test": "SET"}, "metrics": {"rps": 11.0}},
        {"labels": {"test": "GET"}, "metrics": {"rps": 22.0}},
    ]
    assert {"labels": {"test": "GET", "client": 2}, "metrics": {"rps": 2.0}} in combined.groups


# sysbench's histogram buckets: fixed values shared by every client.
BUCKETS = [round(0.001 * 1.035**i, 3) for i in range(0, 400, 7)]
histograms = st.lists(
    st.dictionaries(st.sampled_from(BUCKETS), st.integers(1, 10_000), min_size=1),
    min_size=1,
    max_size=5,
)


@settings(max_examples=300, deadline=None)
@given(histograms, st.sampled_from([50.0, 90.0, 95.0, 99.0, 99.9]))
def test_combined_percentile_equals_the_percentile_of_the_merged_raw_samples(clients, pct):
    # The clients' raw latencies, every sample written out, sorted together:
    # the percentile of that is what one client doing all the work reports.
    raw = sorted(value for client in clients for value, n in client.items() for _ in range(n))
    rank = -(-len(raw) * pct // 100)  # ceil: sysbench's rank of the pct-th value
    expected = raw[int(rank) - 1]
    merged = merge_histograms([sorted(client.items()) for client in clients])
    assert histogram_percentile(merged, pct) == expected


def _fio_json_plus(tmp_path, name: str) -> Result:
    """A real fio run (json+, a small random read) parsed."""
    argv = [
        "fio",
        f"--name={name}",
        f"--filename={tmp_path / name}",
        "--size=4m",
        "--bs=4k",
        "--rw=randread",
        "--ioengine=psync",
        "--output-format=json+",
    ]
    return fio.parse(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)


def test_fio_json_plus_bins_are_the_histogram_behind_its_percentiles(tmp_path):
    result = _fio_json_plus(tmp_path, "one")
    histogram = result.facts["latency_histograms"]["read_clat_us"]
    # fio's own percentile and the one read from its bins are the same number
    assert histogram_percentile(histogram, 99) == pytest.approx(result.metrics["read_clat_p99_us"])
    assert histogram_percentile(histogram, 95) == pytest.approx(result.metrics["read_clat_p95_us"])


def test_two_fio_clients_percentiles_come_from_their_merged_bins(tmp_path):
    one, two = _fio_json_plus(tmp_path, "one"), _fio_json_plus(tmp_path, "two")
    combined = combine([one, two], [0.0, 0.0], lambda name: metric("fio", name))
    merged = merge_histograms([r.facts["latency_histograms"]["read_clat_us"] for r in (one, two)])
    assert combined.metrics["read_clat_p99_us"] == histogram_percentile(merged, 99)
    assert combined.metrics["read_iops"] == one.metrics["read_iops"] + two.metrics["read_iops"]
    assert not any("upper bound" in w for w in combined.warnings)
