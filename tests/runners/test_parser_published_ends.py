"""What the tools really print, from real outputs (SOURCES.tsv beside each
tool's fixtures says where each was published or how it was captured):

- fio's normal output prints a percentile block per latency it measured
  (clat always; lat with lat_percentiles=1; slat with slat_percentiles=1;
  "sync" for fsync/fdatasync after the directions), each in the unit of its
  own header: each is kept under its own name, never in place of another;
- the end of a summary is what each tool version prints last: sysbench 1.1's
  fileio summary ends with its latency block (no "Threads fairness"),
  stress-ng's completion line may be whole minutes ("completed in 1 min").
Outputs really cut short are still refused.
"""

from __future__ import annotations

import pathlib
import re

import pytest

from runners.tools import TOOLS

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures"


def read(tool: str, name: str) -> str:
    return (FIXTURES / tool / f"{name}.out").read_text()


def parse(tool: str, name: str):
    return TOOLS[tool].parse(read(tool, name))


# ---------------------------------------------------------------- fio blocks

# (fixture, {metric: the value printed in the file, in µs}).
FIO_BLOCKS = [
    # "clat percentiles (nsec)": 95.00th=[14912], 99.00th=[23936];
    # "sync percentiles (usec)": 95.00th=[  433], 99.00th=[  465];
    # "sync (usec): ... avg=416.30".
    (
        "public_fio_325_write_fdatasync_sync_percentiles",
        {
            "write_clat_p95_us": 14.912,
            "write_clat_p99_us": 23.936,
            "sync_lat_p95_us": 433.0,
            "sync_lat_p99_us": 465.0,
            "sync_lat_mean_us": 416.30,
            "write_clat_mean_us": 12.84107,
        },
    ),
    # "clat percentiles (usec)": 95.00th=[   38], 99.00th=[   49];
    # "sync percentiles (usec)": 95.00th=[ 1074], 99.00th=[ 1975].
    (
        "public_fio_335_write_fdatasync_windows_threads",
        {
            "write_clat_p95_us": 38.0,
            "write_clat_p99_us": 49.0,
            "sync_lat_p95_us": 1074.0,
            "sync_lat_p99_us": 1975.0,
            "sync_lat_mean_us": 1005.76,
        },
    ),
    # fio 2.2.10, "clat percentiles (usec)": 95.00th=[ 9792], 99.00th=[10304].
    (
        "public_fio_2210_randwrite_8jobs",
        {"write_clat_p95_us": 9792.0, "write_clat_p99_us": 10304.0},
    ),
]


@pytest.mark.parametrize(("name", "expected"), FIO_BLOCKS, ids=[n for n, _ in FIO_BLOCKS])
def test_fio_percentile_blocks_keep_their_own_names_and_units(name, expected):
    result = parse("fio", name)
    assert result.errors == [] or all(e.startswith("fio:") for e in result.errors)
    assert result.warnings == []
    assert {key: result.metrics.get(key) for key in expected} == pytest.approx(expected)


def test_fio_sync_block_no_longer_replaces_the_clat_percentiles():
    """The fdatasync job's completion p95 is the 14912 ns of its clat block, not
    the 433 µs of its sync block read as ns (0.433 µs)."""
    metrics = parse("fio", "public_fio_325_write_fdatasync_sync_percentiles").metrics
    assert metrics["write_clat_p95_us"] == pytest.approx(14.912)
    assert metrics["sync_lat_p95_us"] == pytest.approx(433.0)
    assert metrics["write_clat_p95_us"] < metrics["sync_lat_p95_us"]


_HEADER = re.compile(r"^\s*(clat|lat|slat|sync) percentiles \((nsec|usec|msec)\):", re.M)
_ROW_VALUE = r"{pct}th=\[\s*([0-9]+)\]"
_TO_US = {"nsec": 0.001, "usec": 1.0, "msec": 1000.0}


def _blocks_printed(text: str) -> list[tuple[str, str, float, float]]:
    """(kind, direction, p95 µs, p99 µs) of every percentile block of the
    first job of a normal output, read straight from the text."""
    found = []
    direction = None
    lines = text[text.index("(groupid=") :].splitlines()
    for index, line in enumerate(lines):
        if re.match(r"^\S.*\(groupid=", line) and index:
            break  # the next job
        heading = re.match(r"^\s*(read|write|trim)\s*:", line)
        if heading:
            direction = heading.group(1)
        if "fsync/fdatasync/sync_file_range:" in line:
            direction = "sync"
        header = _HEADER.match(line)
        if header:
            block = "\n".join(lines[index + 1 : index + 6])
            scale = _TO_US[header.group(2)]
            p95 = float(re.search(_ROW_VALUE.format(pct="95.00"), block).group(1)) * scale
            p99 = float(re.search(_ROW_VALUE.format(pct="99.00"), block).group(1)) * scale
            found.append((header.group(1), direction, p95, p99))
    return found


NORMAL_WITH_BLOCKS = sorted(
    path.name.removesuffix(".out")
    for path in (FIXTURES / "fio").glob("*.out")
    if _HEADER.search(path.read_text()) and "(groupid=" in path.read_text()
)


@pytest.mark.parametrize("name", NORMAL_WITH_BLOCKS)
def test_fio_every_printed_percentile_block_is_its_own_figure(name):
    """For each fio normal output with percentiles, every block the first job
    prints (clat, lat, slat, sync) is read under its own name in its own unit."""
    text = read("fio", name)
    normal = text[text.index("\n}\n") + 3 :] if "\n}\n" in text else text  # after any JSON
    first_job = TOOLS["fio"].parse(normal).groups[0]["metrics"]
    blocks = _blocks_printed(normal)
    assert blocks
    for kind, direction, p95, p99 in blocks:
        prefix = "sync_lat" if kind == "sync" else f"{direction}_{kind}"
        assert first_job[f"{prefix}_p95_us"] == pytest.approx(p95), (kind, direction)
        assert first_job[f"{prefix}_p99_us"] == pytest.approx(p99), (kind, direction)


def test_fio_all_four_blocks_in_normal_output_match_the_same_runs_json():
    """One run printed as JSON and as normal output, with lat_percentiles,
    slat_percentiles and fsync: the normal output gives every block's figure
    the JSON gives, to the whole unit it prints."""
    text = read("fio", "fio_randrw_libaio_fsync_all_percentiles_json_normal")
    json_end = text.index("\n}\n") + 3
    from_json = TOOLS["fio"].parse(text[:json_end])
    from_normal = TOOLS["fio"].parse(text[json_end:])
    assert from_normal.errors == [] and from_normal.warnings == []
    names = {"read_slat_p99_us", "read_lat_p95_us", "write_lat_p99_us", "sync_lat_p95_us"}
    for json_group, normal_group in zip(from_json.groups, from_normal.groups):
        assert set(normal_group["metrics"]) == set(json_group["metrics"]) >= names
        for name, value in json_group["metrics"].items():
            if "_p9" in name:  # whole numbers of the printed unit (usec or nsec)
                assert normal_group["metrics"][name] == pytest.approx(value, abs=1.0), name
    # the JSON's own sync figure: "sync": {"total_ios": 104, "lat_ns": {"percentile":
    # {"95.000000": 634880, ...}}} of the first job
    assert from_json.groups[0]["metrics"]["sync_lat_p95_us"] == 634.88


def test_fio_sync_percentiles_cut_short_are_refused():
    text = read("fio", "public_fio_325_write_fdatasync_sync_percentiles")
    cut = TOOLS["fio"].parse(text[: text.index("| 99.00th=[  465]")])
    assert cut.errors == ["fio output cut short: job mytest #0 has no 'issued' line"]


# ---------------------------------------------------------------- sysbench


def test_sysbench_11_fileio_summary_ending_at_its_latency_block_is_whole():
    """sysbench 1.1 fileio prints "Throughput:" and "Latency (ms):" and
    nothing after "sum:": every figure is there."""
    result = parse("sysbench", "public_sysbench_110_fileio_rndrw_ends_at_latency")
    assert result.errors == [] and result.warnings == []
    assert result.metrics == {
        "fileio_reads_per_s": 9159.58,  # read:  IOPS=9159.58 89.45 MiB/s (93.79 MB/s)
        "fileio_read_mib_per_s": 89.45,
        "fileio_writes_per_s": 6109.47,  # write: IOPS=6109.47 59.66 MiB/s (62.56 MB/s)
        "fileio_written_mib_per_s": 59.66,
        "fileio_fsyncs_per_s": 163.45,  # fsync: IOPS=163.45
        "latency_min_ms": 0.06,
        "latency_avg_ms": 0.26,
        "latency_max_ms": 10.40,
        "latency_p95_ms": 0.55,
    }
    assert result.facts["latency_sum_ms"] == 2570.92
    assert result.facts["version"].startswith("1.1.0")


@pytest.mark.parametrize(
    ("marker", "keep"),
    [
        ("Latency (ms):", 0),  # before the latency block
        ("         max:", 0),  # inside it
        ("         sum:", 0),  # before its last line
        ("         fsync:", 0),  # inside Throughput
    ],
)
def test_sysbench_11_fileio_cut_before_its_last_line_is_refused(marker, keep):
    text = read("sysbench", "public_sysbench_110_fileio_rndrw_ends_at_latency")
    cut = TOOLS["sysbench"].parse(text[: text.index(marker) + keep])
    assert any("cut short" in error for error in cut.errors), cut.errors


def test_sysbench_11_fileio_cut_inside_the_sum_number_is_refused():
    text = read("sysbench", "public_sysbench_110_fileio_rndrw_ends_at_latency")
    cut = TOOLS["sysbench"].parse(text[: text.index("2570.92") + 4])
    assert cut.errors == [
        "output ends in the middle of a number (cut short?): sum:                               2570"
    ]


def test_sysbench_10_summary_still_needs_threads_fairness():
    text = read("sysbench", "sysbench_oltp_read_write_run_p99")
    cut = TOOLS["sysbench"].parse(text[: text.index("Threads fairness")])
    assert cut.errors == [
        "sysbench summary cut short: it stops before 'Threads fairness' (run killed or output cut)"
    ]


# ---------------------------------------------------------------- stress-ng

# (fixture, its completion line's seconds, its "setting to a ... run" seconds).
STRESS_ENDS = [
    ("public_stressng_mq_perf_1min", 60.0, 60.0),  # "completed in 1 min"; "a 1 min run"
    ("public_stressng_udpflood_1min10s_misc_metrics", 70.23, 70.0),  # "1 min, 10.23 secs"
    ("public_stressng_flock_1min_rss", 60.0, 60.0),  # "1 min, 0.00 secs"
    ("public_stressng_memrate_60s_misc_metrics", 60.42, 60.0),  # "60.42s (1 min, 0.42 secs)"
    ("public_stressng_l1cache_perf_stat_appended", 5.57, 5.0),  # "5.57 secs"; perf stat after
    ("public_stressng_ioport_misc", 21.13, 10.0),
    ("public_stressng_wcs_indented_zero_time", 0.0, 5.0),
]


@pytest.mark.parametrize(
    ("name", "run_s", "timeout_s"), STRESS_ENDS, ids=[n for n, *_ in STRESS_ENDS]
)
def test_stress_ng_completion_lines_as_printed_end_the_run(name, run_s, timeout_s):
    text = read("stress_ng", name)
    line = next(line for line in text.splitlines() if "run completed in" in line)
    result = TOOLS["stress_ng"].parse(text)
    assert result.errors == [], line
    assert (result.facts["run_s"], result.facts["timeout_s"]) == (run_s, timeout_s)


@pytest.mark.parametrize(
    ("printed", "seconds"),
    [
        ("1 min", 60.0),
        ("2 mins", 120.0),
        ("1 hour", 3600.0),
        ("1 hour, 1 min", 3660.0),
        ("2 hours, 1 min, 0.50 secs", 7260.5),
        ("1 day, 1.00 secs", 86401.0),
        ("1 week, 2 days", 9 * 86400.0),
    ],
)
def test_stress_ng_whole_units_with_or_without_seconds(printed, seconds):
    text = read("stress_ng", "public_stressng_mq_perf_1min").replace(
        "completed in 1 min", f"completed in {printed}"
    )
    result = TOOLS["stress_ng"].parse(text)
    assert result.errors == [] and result.facts["run_s"] == seconds


@pytest.mark.parametrize(
    "cut_after",
    ["completed in 1 min", "completed in 1 mi", "completed in ", "metrics untrustworthy: 0\n"],
)
def test_stress_ng_completion_line_cut_short_is_refused(cut_after):
    text = read("stress_ng", "public_stressng_mq_perf_1min")
    cut = TOOLS["stress_ng"].parse(text[: text.index(cut_after) + len(cut_after)])
    assert cut.errors == ["stress-ng output cut short: no 'run completed' line after its metrics"]


def test_stress_ng_minutes_whose_seconds_were_cut_off_are_refused():
    text = read("stress_ng", "public_stressng_udpflood_1min10s_misc_metrics")
    for cut_after in ("completed in 1 min, ", "completed in 1 min, 10.2"):
        cut = TOOLS["stress_ng"].parse(text[: text.index(cut_after) + len(cut_after)])
        assert "run_s" not in cut.facts, cut_after
        assert cut.errors == [
            "stress-ng output cut short: no 'run completed' line after its metrics"
        ]
