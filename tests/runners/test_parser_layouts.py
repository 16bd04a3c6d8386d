"""Every layout a parser reads, from real published outputs (SOURCES.tsv next
to each tool's fixtures says where each was published), and the line
accounting: a line or field inside a figure-carrying block that a parser
does not understand is a warning on the result, never a silent change of a
figure."""

from __future__ import annotations

import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runners.results import MAX_WARNINGS
from runners.tools import TOOLS

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"


def read(tool: str, name: str) -> str:
    return (FIXTURES / tool / f"{name}.out").read_text()


def parse(tool: str, name: str):
    return TOOLS[tool].parse(read(tool, name))


# (tool, fixture, {metric: the value printed in the file}). Derived metrics
# are asserted apart (DERIVED) with the arithmetic spelled out.
HEADLINES = [
    # sysbench 1.1 "Throughput:" layout: eps and time elapsed.
    (
        "sysbench",
        "public_sysbench_11_cpu_throughput",
        {
            "events_per_s": 45.3573,
            "total_time_s": 220.4715,
            "events": 10000,
            "latency_avg_ms": 22.05,
            "latency_p95_ms": 21.89,
        },
    ),
    (
        "sysbench",
        "public_sysbench_11_mutex_throughput",
        {"events_per_s": 1.3442, "total_time_s": 23.8054, "events": 32, "latency_max_ms": 23803.06},
    ),
    (
        "sysbench",
        "public_sysbench_110_memory_general_statistics",
        {
            "memory_ops": 203,
            "memory_ops_per_s": 20.24,
            "memory_mib": 6496.0,
            "memory_mib_per_s": 647.78,
            "total_time_s": 10.0281,
        },
    ),
    # 0.4 memory: "Operations performed: 10240 ( 3855.80 ops/sec)", "MB transferred".
    (
        "sysbench",
        "public_sysbench_0412_memory",
        {
            "memory_ops": 10240,
            "memory_ops_per_s": 3855.80,
            "memory_mib": 10240.0,
            "memory_mib_per_s": 3855.80,
            "total_time_s": 2.6557,
            "latency_p95_ms": 0.28,
        },
    ),
    (
        "sysbench",
        "public_sysbench_0412_fileio_rndrw",
        {"events_per_s": 63.66, "total_time_s": 300.0095, "events": 19100, "latency_avg_ms": 0.38},
    ),
    (
        "sysbench",
        "public_sysbench_0412_cpu_16threads",
        {"total_time_s": 11.5526, "events": 10000, "latency_p95_ms": 34.66},
    ),
    ("sysbench", "public_sysbench_1011_cpu", {"events_per_s": 9093.38, "total_time_s": 10.0007}),
    (
        "sysbench",
        "public_sysbench_1011_memory",
        {"memory_ops_per_s": 9597428.64, "memory_mib_per_s": 9372.49},
    ),
    (
        "sysbench",
        "public_sysbench_1020_fileio_rndrd_interval",
        {"fileio_reads_per_s": 1906.50, "fileio_read_mib_per_s": 29.79},
    ),
    (
        "sysbench",
        "public_sysbench_1020_tpcc_lua_err_s_no_colon",
        {"tps": 20.67, "qps": 579.51, "errors": 5, "latency_p95_ms": 282.25},
    ),
    (
        "sysbench",
        "public_sysbench_1012_oltp_interval_p100",
        {"tps": 986.49, "latency_p100_ms": 116.8},
    ),
    ("sysbench", "public_sysbench_05_oltp_ro_128thr", {"tps": 4258.44, "latency_p95_ms": 86.15}),
    ("sysbench", "public_sysbench_05_oltp_rw_ignored_errors", {"tps": 6583.29, "errors": 65}),
    (
        "sysbench",
        "sysbench_memory_interval_histogram_p90",
        {"memory_mib_per_s": 3408.08, "latency_p90_ms": 0.0, "total_time_s": 3.0078},
    ),
    ("sysbench", "sysbench_mutex_p99", {"latency_p99_ms": 612.21, "events": 2}),
    ("sysbench", "sysbench_threads_interval", {"events": 722, "latency_p95_ms": 9.73}),
    # pgbench 15.4 --rate: "rate limit schedule lag: avg 2.859 (max 27.065) ms".
    (
        "pgbench",
        "public_pgbench_154_rate_progress_failed_before_lag",
        {"tps": 101.624575, "lag_avg_ms": 2.859, "lag_max_ms": 27.065, "failed": 0.0},
    ),
    # pgbench 15+ --max-tries: "number of transactions retried: 7667 (76.670%)".
    (
        "pgbench",
        "public_pgbench_15_retries_failures_r",
        {"tps": 186.792667, "failed": 3683.0, "retried": 7667.0, "retries": 45339.0, "late": 106.0},
    ),
    ("pgbench", "public_pgbench_15_latency_limit_r", {"tps": 346.224794, "late": 1311.0}),
    (
        "pgbench",
        "public_pgbench_10_13_r",
        {"tps": 622.977698, "tps_including_connections": 618.764555, "latency_avg_ms": 15.844},
    ),
    ("pgbench", "public_pgbench_14_custom_script", {"tps": 14265.844597, "transactions": 855841.0}),
    ("pgbench", "public_pgbench_11_800clients", {"tps": 13318.04837, "latency_stddev_ms": 75.567}),
    (
        "pgbench",
        "public_pgbench_9x_progress_then_summary",
        {"tps": 13.062579, "latency_avg_ms": 1108.418, "transactions": 77.0},
    ),
    # stress-ng runs over a minute: "successful run completed in 1 min, 10.23 secs".
    (
        "stress_ng",
        "public_stressng_udpflood_1min10s_misc_metrics",
        {"bogo_ops": 9904436.0, "real_time_s": 70.10, "bogo_ops_per_s": 141291.91},
    ),
    (
        "stress_ng",
        "public_stressng_flock_1min_rss",
        {"bogo_ops_per_s": 2860967.69, "cpu_used_per_instance_pct": 226.75, "rss_max_kb": 2564.0},
    ),
    ("stress_ng", "public_stressng_memrate_60s_misc_metrics", {"bogo_ops": 1664.0}),
    (
        "stress_ng",
        "public_stressng_memory_class_30stressors",
        {"memrate_bogo_ops": 218.0, "memrate_real_time_s": 5.0},
    ),
    # --timestamp: "stress-ng: 17:40:54.67 metrc: [17129] cpu   627  2.02 ...".
    (
        "stress_ng",
        "stressng_cpu_vm_t2_metrics_timestamp",
        {"cpu_bogo_ops": 627.0, "cpu_bogo_ops_per_s": 310.81, "vm_bogo_ops_per_s": 5371.45},
    ),
    # fio 3.28 normal output: "BW=677MiB/s", "clat (usec): ... avg=365.36", "95.00th=[  453]".
    (
        "fio",
        "public_fio_328_read_libaio_normal",
        {
            "read_bw_kib_s": 677 * 1024.0,
            "read_clat_mean_us": 365.36,
            "read_lat_mean_us": 368.96,
            "read_clat_p95_us": 453.0,
            "read_clat_p99_us": 490.0,
            "runtime_s": 15.125,
        },
    ),
    # fio 2.2.10: "read : io=3071.7MB, bw=112770KB/s, iops=28192, runt= 27892msec".
    (
        "fio",
        "public_fio_2210_randrw_gtod_reduce_normal",
        {"read_bw_kib_s": 112770.0, "write_bw_kib_s": 37606.0, "runtime_s": 27.892},
    ),
    # terse v3, two jobs: "3270" and "4625" read IOPS, "13083" and "18500" KiB/s.
    (
        "fio",
        "fio_randrw_4k_2jobs_minimal",
        {"read_iops": 3270.0 + 4625.0, "read_bw_kib_s": 13083.0 + 18500.0},
    ),
    (
        "fio",
        "fio_read_4k_terse",
        {
            "read_iops": 270809.0,
            "read_bw_kib_s": 1083239.0,
            "read_clat_mean_us": 6.278629,
            "read_lat_mean_us": 6.350533,
            "read_clat_p99_us": 1.0,
            "runtime_s": 0.121,
        },
    ),
    (
        "fio",
        "fio_randrw_4k_direct1_libaio_normal",
        {
            "read_clat_mean_us": 505.13,
            "write_clat_mean_us": 546.85,
            "read_clat_p95_us": 889.0,
            "write_clat_p99_us": 1696.0,
            "read_bw_kib_s": 166 * 1024.0,
        },
    ),
    ("redis_benchmark", "public_pre6_csv_full_suite", {"set_rps": 48923.68, "get_rps": 49382.71}),
    ("redis_benchmark", "public_quiet_pipeline16", {"set_rps": 906412.88, "get_rps": 970402.69}),
    (
        "redis_benchmark",
        "public_7x_set_get_plain",
        {"set_latency_avg_ms": 0.184, "set_latency_p99_ms": 1.023, "get_latency_max_ms": 0.599},
    ),
    (
        "mysqlslap",
        "public_mysql56_multi_engine_concurrency_debuginfo",
        {},  # several blocks: no whole-output metrics; the blocks are asserted in test_mysqlslap
    ),
]


@pytest.mark.parametrize(
    ("tool", "name", "expected"), HEADLINES, ids=[f"{t}-{n}" for t, n, _ in HEADLINES]
)
def test_headline_figures_are_the_printed_ones(tool, name, expected):
    result = parse(tool, name)
    assert result.errors == []
    assert result.warnings == []
    assert {key: result.metrics.get(key) for key in expected} == expected


# (tool, fixture, {derived metric: value computed from printed figures}).
DERIVED = [
    # 0.4 fileio: "11460 Read, 7640 Write, 24431 Other" over "total time: 300.0095s";
    # "Read 179.06Mb Written 119.38Mb" (0.4's Mb is MiB) over the same time.
    (
        "sysbench",
        "public_sysbench_0412_fileio_rndrw",
        {
            "fileio_reads_per_s": 11460 / 300.0095,
            "fileio_writes_per_s": 7640 / 300.0095,
            "fileio_fsyncs_per_s": 24431 / 300.0095,
            "fileio_read_mib_per_s": 179.06 / 300.0095,
            "fileio_written_mib_per_s": 119.38 / 300.0095,
        },
    ),
    # 0.4 cpu/memory print no rate of events: total events over total time.
    ("sysbench", "public_sysbench_0412_cpu_16threads", {"events_per_s": 10000 / 11.5526}),
    ("sysbench", "public_sysbench_0412_memory", {"events_per_s": 10240 / 2.6557}),
    # fio 2.x prints "iops=28192" ("issued : total=r=786347/w=262229/d=0", "runt= 27892msec").
    (
        "fio",
        "public_fio_2210_randrw_gtod_reduce_normal",
        {"read_iops": 786347 / 27.892, "write_iops": 262229 / 27.892},
    ),
    # fio normal output prints "IOPS=173k": 2621440 I/Os issued over 15125 msec.
    ("fio", "public_fio_328_read_libaio_normal", {"read_iops": 2621440 / 15.125}),
    (
        "fio",
        "fio_randrw_4k_direct1_libaio_normal",
        {"read_iops": 22870 / 0.537, "write_iops": 9898 / 0.537},
    ),
]


@pytest.mark.parametrize(
    ("tool", "name", "expected"), DERIVED, ids=[f"{t}-{n}" for t, n, _ in DERIVED]
)
def test_derived_metrics_are_marked_and_computed_from_printed_figures(tool, name, expected):
    result = parse(tool, name)
    assert sorted(result.facts["derived_metrics"]) == sorted(expected)
    for metric, value in expected.items():
        assert result.metrics[metric] == pytest.approx(value, abs=1e-6)


def test_sysbench_interval_fields_in_any_punctuation_are_read():
    """tpcc.lua prints "err/s 1.00" without a colon: the error-rate series is
    there, with the 1.00 of the 16th second."""
    series = parse("sysbench", "public_sysbench_1020_tpcc_lua_err_s_no_colon").series
    assert series["err_s"][15] == 1.0 and series["t"][15] == 16
    assert len(series["err_s"]) == len(series["t"]) == len(series["tps"])
    assert all(value is not None for value in series["reconn_s"])


def test_sysbench_memory_interval_lines_are_a_series():
    series = parse("sysbench", "sysbench_memory_interval_histogram_p90").series
    assert series == {"t": [1, 2], "memory_mib_per_s": [3438.95, 3360.69]}


def test_sysbench_unknown_interval_field_is_a_warning_and_known_ones_stay():
    text = read("sysbench", "public_sysbench_1020_tpcc_lua_err_s_no_colon")
    line = "[ 3s ] thds: 2 tps: 11.02 qps: 419.67"
    changed = text.replace(line, line + " foo/s: 7.00", 1)
    before, after = TOOLS["sysbench"].parse(text), TOOLS["sysbench"].parse(changed)
    assert after.series == before.series and after.metrics == before.metrics
    assert len(after.warnings) == 1 and "'foo/s: 7.00' not read" in after.warnings[0]


def test_sysbench_unknown_summary_line_is_a_warning():
    text = read("sysbench", "public_sysbench_11_cpu_throughput")
    changed = text.replace("    time elapsed:", "    events lost:        12\n    time elapsed:")
    result = TOOLS["sysbench"].parse(changed)
    assert result.metrics == TOOLS["sysbench"].parse(text).metrics
    assert result.warnings == ["sysbench summary: line not understood: 'events lost:        12'"]


def test_pgbench_15_progress_with_failed_before_lag_keeps_the_lag_series():
    series = parse("pgbench", "public_pgbench_154_rate_progress_failed_before_lag").series
    assert series["lag_ms"] == [2.849, 2.852]
    assert series["failed"] == [0.0, 0.0]
    assert series["tps"] == [104.1, 99.3]


def test_pgbench_progress_parts_in_any_order_on_the_fast_path():
    """A long run of one shape goes through the C-speed path: the order of
    its parts (lag before or after failed) names the columns."""
    line = "progress: {t}.0 s, 99.0 tps, lat 3.801 ms stddev 3.299, 0 failed, lag 2.{t} ms\n"
    text = "".join(line.format(t=t) for t in range(1, 400))
    text += read("pgbench", "public_pgbench_154_rate_progress_failed_before_lag").split("\n", 3)[3]
    series = TOOLS["pgbench"].parse(text).series
    assert series["lag_ms"][:3] == [2.1, 2.2, 2.3] and series["failed"][0] == 0.0


def test_pgbench_unknown_progress_part_is_a_warning():
    text = read("pgbench", "public_pgbench_154_rate_progress_failed_before_lag")
    changed = text.replace("0 failed, lag 2.849 ms", "0 failed, 3 frobbed, lag 2.849 ms")
    result = TOOLS["pgbench"].parse(changed)
    assert result.series == TOOLS["pgbench"].parse(text).series
    assert result.warnings == [
        "pgbench progress line: part '3 frobbed' not read: "
        "'progress: 10.0 s, 104.1 tps, lat 3.666 ms stddev 1.777, 0 failed, 3 frobbed, lag 2.849 ms'"
    ]


def test_pgbench_statement_latencies_are_kept():
    facts = parse("pgbench", "public_pgbench_15_retries_failures_r").facts
    rows = facts["statement_latencies"]
    assert len(rows) == 11
    assert rows[8] == [
        0.582,
        3363,
        41576,
        "UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;",
    ]


@pytest.mark.parametrize(
    ("name", "timeout_s", "run_s"),
    [
        ("public_stressng_udpflood_1min10s_misc_metrics", 70.0, 70.23),  # "1 min, 10 secs"
        ("public_stressng_flock_1min_rss", 60.0, 60.0),  # "1 min, 0.00 secs"
        ("public_stressng_memrate_60s_misc_metrics", 60.0, 60.42),  # "60.42s (1 min, 0.42 secs)"
        ("stressng_cpu_vm_t2_metrics_timestamp", 2.0, 2.04),
    ],
)
def test_stress_ng_durations_in_minutes_and_timestamps_end_the_run(name, timeout_s, run_s):
    facts = parse("stress_ng", name).facts
    assert (facts["timeout_s"], facts["run_s"]) == (timeout_s, run_s)


def test_stress_ng_hours_and_days_in_a_completion_line():
    text = read("stress_ng", "public_stressng_udpflood_1min10s_misc_metrics").replace(
        "completed in 1 min, 10.23 secs", "completed in 1 day, 2 hours, 3 mins, 4.50 secs"
    )
    assert TOOLS["stress_ng"].parse(text).facts["run_s"] == 86400 + 7200 + 180 + 4.5


def test_stress_ng_miscellaneous_metrics_are_kept():
    misc = parse("stress_ng", "public_stressng_udpflood_1min10s_misc_metrics").facts["misc_metrics"]
    assert {
        "value": 1097.62,
        "metric": "sendto calls per sec",
        "mean": "geometric mean of 128 instances",
    } in misc["udp-flood"]


def test_stress_ng_unknown_table_line_is_a_warning():
    text = read("stress_ng", "stressng_cpu_vm_t2_metrics_timestamp")
    row = "stress-ng: 17:40:54.67 metrc: [17129] vm "
    changed = text.replace(row, row.replace(" vm ", " vm   12 spare 4\n" + row), 1)
    result = TOOLS["stress_ng"].parse(changed)
    assert result.metrics == TOOLS["stress_ng"].parse(text).metrics
    assert len(result.warnings) == 1 and "12 spare 4" in result.warnings[0]


def test_fio_normal_output_gives_the_figures_of_the_same_runs_json():
    """One run printed as JSON and as normal output (--output-format=json,normal):
    the normal part alone gives the JSON's figures, to the precision it prints."""
    text = read("fio", "fio_json_normal_randrw_nogroup")
    json_end = text.index("\n}\n") + 3
    from_json = TOOLS["fio"].parse(text[:json_end])
    from_normal = TOOLS["fio"].parse(text[json_end:])
    assert from_normal.warnings == [] and from_normal.errors == []
    assert [g["labels"] for g in from_normal.groups] == [g["labels"] for g in from_json.groups]
    for normal, json in zip(from_normal.groups, from_json.groups):
        assert set(normal["metrics"]) == set(json["metrics"])
        for name, value in json["metrics"].items():
            if name.endswith("_bw_kib_s"):  # printed with three significant digits
                assert normal["metrics"][name] == pytest.approx(value, rel=0.005)
            elif name.endswith("_iops"):  # fio's JSON iops is I/Os over the run time
                assert normal["metrics"][name] == pytest.approx(value, rel=1e-6)
            elif "_clat_p" in name:  # whole numbers of the unit printed (usec here)
                assert normal["metrics"][name] == pytest.approx(value, abs=1.0)
            else:  # latency means printed with two decimals
                assert normal["metrics"][name] == pytest.approx(value, abs=0.005)


def test_fio_two_reporting_groups_in_normal_output_stay_apart():
    result = parse("fio", "fio_two_groups_stonewall_normal")
    assert [g["labels"]["groupid"] for g in result.groups] == [0, 1]
    # "IOPS=4576": 4096 I/Os issued over 895 msec, as fio's JSON would give it
    assert result.metrics["group1_read_iops"] == pytest.approx(4096 / 0.895, abs=1e-6)
    assert "read_iops" not in result.metrics


def test_fio_unknown_line_in_a_job_block_is_a_warning():
    text = read("fio", "public_fio_328_read_libaio_normal")
    changed = text.replace("  cpu          :", "  frob (usec): 12\n  cpu          :")
    result = TOOLS["fio"].parse(changed)
    assert result.metrics == TOOLS["fio"].parse(text).metrics
    assert result.warnings == ["fio normal output: line not understood: 'frob (usec): 12'"]


def test_fio_normal_output_cut_before_run_status_says_so():
    text = read("fio", "fio_two_groups_stonewall_normal")
    cut = TOOLS["fio"].parse(text[: text.index("Run status group 1")])
    assert cut.errors == ["fio output cut short: no 'Run status group 1' block"]


def test_redis_benchmark_completed_requests_are_kept():
    facts = parse("redis_benchmark", "public_7x_set_get_plain").facts
    assert facts["completed"]["SET"] == {"requests": 100000, "seconds": 0.64}


def test_mysqlslap_debug_info_is_kept_and_an_unknown_block_line_warned():
    text = read("mysqlslap", "public_mysql56_multi_engine_concurrency_debuginfo")
    facts = TOOLS["mysqlslap"].parse(text).facts
    assert facts["debug_info"]["Voluntary context switches"] == 9585.0
    changed = text.replace(
        "\tMinimum number",
        "\tMedian number of seconds to run all queries: 0.1 seconds\n\tMinimum number",
        1,
    )
    result = TOOLS["mysqlslap"].parse(changed)
    assert result.groups == TOOLS["mysqlslap"].parse(text).groups
    assert len(result.warnings) == 1 and "Median number" in result.warnings[0]


# ---------------------------------------------------------------- properties

# A line no parser knows: letters then a number, or any text, never empty.
UNKNOWN_LINE = st.one_of(
    st.from_regex(r"[A-Za-z][a-z ]{2,20}: [0-9]{1,6}(\.[0-9]{1,3})?", fullmatch=True),
    st.from_regex(r"[A-Za-z][A-Za-z0-9 =,/.%-]{3,40}", fullmatch=True).filter(
        lambda s: s.strip() != "Done."  # sysbench's own word, known to carry nothing
    ),
)

# (tool, fixture, marker): the unknown line goes in just before the marker's
# line, inside the block that carries the figures.
BLOCKS = [
    ("sysbench", "public_sysbench_11_cpu_throughput", "    total number of events:"),
    ("sysbench", "public_sysbench_0412_fileio_rndrw", "Test execution summary:"),
    ("sysbench", "sysbench_oltp_read_write_run_p99", "    transactions:"),
    ("sysbench", "public_sysbench_1020_tpcc_lua_err_s_no_colon", "[ 5s ]"),
    ("pgbench", "public_pgbench_15_retries_failures_r", "latency average"),
    ("pgbench", "public_pgbench_154_rate_progress_failed_before_lag", "tps = "),
    ("fio", "public_fio_328_read_libaio_normal", "    clat percentiles"),
    ("fio", "fio_randrw_4k_direct1_libaio_normal", "  write: IOPS"),
    ("redis_benchmark", "public_7x_set_get_plain", "  latency summary"),
    ("redis_benchmark", "public_quiet_pipeline16", "GET:"),
    ("mysqlslap", "mysqlslap_load_mixed", "\tMaximum number"),
]
# stress-ng's table: an unknown line at the table's level inside it.
STRESS_ROW = "stress-ng: 17:40:54.67 metrc: [17129] vm "


@pytest.mark.parametrize(("tool", "name", "marker"), BLOCKS, ids=[f"{t}-{n}" for t, n, _ in BLOCKS])
@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(line=UNKNOWN_LINE)
def test_unknown_line_in_a_block_is_a_warning_never_a_changed_figure(tool, name, marker, line):
    text = read(tool, name)
    at = text.index(marker)
    changed = text[:at] + line + "\n" + text[at:]
    _assert_warned_and_unchanged(tool, text, changed, line)


@settings(max_examples=40, deadline=None)
@given(line=UNKNOWN_LINE)
def test_unknown_line_in_the_stress_ng_table_is_a_warning(line):
    text = read("stress_ng", "stressng_cpu_vm_t2_metrics_timestamp")
    at = text.index(STRESS_ROW)
    changed = text[:at] + STRESS_ROW.removesuffix("vm ") + line + "\n" + text[at:]
    _assert_warned_and_unchanged("stress_ng", text, changed, line)


def _assert_warned_and_unchanged(tool: str, text: str, changed: str, line: str) -> None:
    before, after = TOOLS[tool].parse(text), TOOLS[tool].parse(changed)
    assert after.warnings, f"{line!r} went unnoticed"
    assert len(after.warnings) <= MAX_WARNINGS + 1
    assert after.metrics == before.metrics
    assert after.series == before.series
    assert [g["metrics"] for g in after.groups] == [g["metrics"] for g in before.groups]


@pytest.mark.parametrize("line", ["AA 0", "Queries per second 12, Seconds 3"])
def test_mysqlslap_words_and_numbers_are_not_debug_info_unless_known(line):
    """Only --debug-info's own fields are kept silently; another line of words
    and a number inside a block is warned about (found by the property below)."""
    text = read("mysqlslap", "public_mysql56_multi_engine_concurrency_debuginfo")
    changed = text.replace("\tMinimum number", f"\t{line}\n\tMinimum number", 1)
    result = TOOLS["mysqlslap"].parse(changed)
    assert "debug_info" not in result.facts or line not in str(result.facts["debug_info"])
    assert any(line.strip() in w for w in result.warnings)
