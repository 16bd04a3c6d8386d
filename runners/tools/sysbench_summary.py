"""The summary block of sysbench output (0.4, 0.5, 1.x), read into a
Result's metrics and facts (sysbench_parse reads the rest); and the
patterns both read lines with.

1.x::

    SQL statistics:
        transactions:                        2782   (555.23 per sec.)
        queries:                             55640  (11104.57 per sec.)
    Latency (ms):
             95th percentile:                        5.09

0.4 / 0.5::

    OLTP test statistics:
        transactions:                        1033129 (17218.55 per sec.)
        per-request statistics:
             approx.  95 percentile:               1.10ms
"""

from __future__ import annotations

import re

from runners.results import Result, line_warning

NUM = r"([0-9]+(?:\.[0-9]+)?)"
GAP = r"[ \t]+"
OPT_GAP = r"[ \t]*"
# Lines that carry no figure wherever they appear in a summary or between
# interval lines: section headers, sysbench's own progress words, and the
# message lines whose text is kept elsewhere (FATAL:/ALERT: in errors).
NOT_A_FIGURE = re.compile(
    r"^\s*(?:SQL statistics:|OLTP test statistics:|queries performed:|General statistics:"
    r"|Test execution summary:|Latency \(ms\):|Latency histogram \(values are in milliseconds\)"
    r"|value\s+-+\s*distribution\s*-+\s*count|Threads fairness:|Throughput:|File operations:"
    r"|CPU speed:|per-request statistics:|response time:|Threads started!|Done\."
    r"|Time limit exceeded, exiting\.\.\.|Initializing worker threads\.\.\."
    r"|Maximum prime number checked in CPU test: [0-9]+|\(last message repeated [0-9]+ times\)"
    r"|(?:FATAL|ALERT|WARNING|NOTICE):.*)\s*$"
)


_SUMMARY_LINES = [
    (
        re.compile(rf"^\s*transactions:{OPT_GAP}([0-9]+){OPT_GAP}\({OPT_GAP}{NUM} per sec"),
        ("transactions", "tps"),
    ),
    (
        re.compile(rf"^\s*queries:{OPT_GAP}([0-9]+){OPT_GAP}\({OPT_GAP}{NUM} per sec"),
        ("queries", "qps"),
    ),
    (re.compile(rf"^\s*ignored errors:{OPT_GAP}([0-9]+)"), ("errors",)),
    (re.compile(rf"^\s*reconnects:{OPT_GAP}([0-9]+)"), ("reconnects",)),
    (re.compile(rf"^\s*deadlocks:{OPT_GAP}([0-9]+)"), ("deadlocks",)),
    (
        re.compile(rf"^\s*read/write requests:{OPT_GAP}([0-9]+){OPT_GAP}\({OPT_GAP}{NUM} per sec"),
        ("_rw", "_rw_ps"),
    ),
    (
        re.compile(rf"^\s*other operations:{OPT_GAP}([0-9]+){OPT_GAP}\({OPT_GAP}{NUM} per sec"),
        ("_other_ops", "_other_ps"),
    ),
    (re.compile(rf"^\s*total time:{OPT_GAP}{NUM}s"), ("total_time_s",)),
    (re.compile(rf"^\s*total number of events:{OPT_GAP}([0-9]+)"), ("events",)),
    (re.compile(rf"^\s*events per second:{OPT_GAP}{NUM}"), ("events_per_s",)),
    (
        re.compile(rf"^\s*Total operations:{OPT_GAP}([0-9]+){OPT_GAP}\({OPT_GAP}{NUM} per second"),
        ("memory_ops", "memory_ops_per_s"),
    ),
    (
        re.compile(rf"^\s*{NUM} MiB transferred{OPT_GAP}\({OPT_GAP}{NUM} MiB/sec"),
        ("memory_mib", "memory_mib_per_s"),
    ),
    # sysbench 1.1: "Throughput:" holds eps and the elapsed time.
    (re.compile(rf"^\s*events/s \(eps\):{OPT_GAP}{NUM}\s*$"), ("events_per_s",)),
    (re.compile(rf"^\s*time elapsed:{OPT_GAP}{NUM}s\s*$"), ("total_time_s",)),
    # 0.4/0.5 memory: the same figures as 1.x's "Total operations" and
    # "MiB transferred" (0.4's "MB" is 1024 x 1024 bytes, as 1.x's MiB).
    (
        re.compile(
            rf"^\s*Operations performed:{OPT_GAP}([0-9]+){OPT_GAP}\({OPT_GAP}{NUM} ops/sec\)"
        ),
        ("memory_ops", "memory_ops_per_s"),
    ),
    (
        re.compile(rf"^\s*{NUM} MB transferred{OPT_GAP}\({OPT_GAP}{NUM} MB/sec\)\s*$"),
        ("memory_mib", "memory_mib_per_s"),
    ),
    # 0.4/0.5 fileio: counts over the run (rates derived in _finish_metrics).
    (
        re.compile(
            r"^\s*Operations performed:\s*([0-9]+) Read,\s*([0-9]+) Write,\s*([0-9]+) Other"
            r"\s*=\s*([0-9]+) Total\s*$"
        ),
        ("_fileio_reads", "_fileio_writes", "_fileio_other", "_fileio_total"),
    ),
    (
        re.compile(
            rf"^\s*Read {NUM}([KMGT]?b)\s+Written {NUM}([KMGT]?b)\s+Total transferred "
            rf"{NUM}([KMGT]?b)\s+\({NUM}([KMGT]?b)/sec\)\s*$"
        ),
        ("_read_amount", "_read_unit", "_written_amount", "_written_unit"),
    ),
    (re.compile(rf"^\s*{NUM} Requests/sec executed\s*$"), ("events_per_s",)),
    (
        re.compile(rf"^\s*total time taken by event execution:{OPT_GAP}{NUM}s?\s*$"),
        ("_event_execution_s",),
    ),
    # 1.1 fileio: "read:  IOPS=2279.18 35.61 MiB/s (37.34 MB/s)", "fsync: IOPS=4862.66".
    (
        re.compile(rf"^\s*read:{OPT_GAP}IOPS={NUM}{GAP}{NUM} MiB/s \({NUM} MB/s\)\s*$"),
        ("fileio_reads_per_s", "fileio_read_mib_per_s", "_read_mb_s"),
    ),
    (
        re.compile(rf"^\s*write:{OPT_GAP}IOPS={NUM}{GAP}{NUM} MiB/s \({NUM} MB/s\)\s*$"),
        ("fileio_writes_per_s", "fileio_written_mib_per_s", "_written_mb_s"),
    ),
    (re.compile(rf"^\s*fsync:{OPT_GAP}IOPS={NUM}\s*$"), ("fileio_fsyncs_per_s",)),
    (re.compile(rf"^\s*reads/s:{OPT_GAP}{NUM}"), ("fileio_reads_per_s",)),
    (re.compile(rf"^\s*writes/s:{OPT_GAP}{NUM}"), ("fileio_writes_per_s",)),
    (re.compile(rf"^\s*fsyncs/s:{OPT_GAP}{NUM}"), ("fileio_fsyncs_per_s",)),
    (re.compile(rf"^\s*read, MiB/s:{OPT_GAP}{NUM}"), ("fileio_read_mib_per_s",)),
    (re.compile(rf"^\s*written, MiB/s:{OPT_GAP}{NUM}"), ("fileio_written_mib_per_s",)),
]
_QUERY_KIND = re.compile(rf"^\s*(read|write|other|total):{OPT_GAP}([0-9]+)\s*$")
_LATENCY_STAT = re.compile(rf"^\s*(min|avg|max|sum):{OPT_GAP}{NUM}{OPT_GAP}(ns|us|ms|s)?\s*$")
_PERCENTILE = re.compile(
    rf"^\s*(?:approx\.{OPT_GAP})?{NUM}(?:th)?{OPT_GAP}percentile:{OPT_GAP}{NUM}{OPT_GAP}(ns|us|ms|s)?\s*$"
)
_HISTOGRAM_ROW = re.compile(rf"^\s*{NUM}{OPT_GAP}\|\**{OPT_GAP}([0-9]+)\s*$")
_FAIRNESS = re.compile(rf"^\s*(events|execution time) \(avg/stddev\):{OPT_GAP}{NUM}/{NUM}")
_TO_MS = {None: 1.0, "ms": 1.0, "s": 1000.0, "us": 0.001, "ns": 0.000001}
_QUERY_METRIC = {"read": "reads", "write": "writes", "other": "other", "total": "_queries_total"}
_LATENCY_METRIC = {
    "min": "latency_min_ms",
    "avg": "latency_avg_ms",
    "max": "latency_max_ms",
    "sum": "_latency_sum_ms",
}


# Where a summary begins: the first line of any version's summary block.
_SUMMARY_START = re.compile(
    r"^\s*(?:SQL statistics:|OLTP test statistics:|General statistics:|Test execution summary:"
    r"|Throughput:|File operations:|CPU speed:|Operations performed:|Total operations:"
    r"|Latency \(ms\):|Latency histogram|[0-9.]+ Mi?B transferred)",
    re.MULTILINE,
)


def read_summary(tail: str, result: Result, warnings: list[str]) -> None:
    """Fill result.metrics/facts from the text after the last interval line.

    From the first line of a summary block on, every line is a figure read,
    a line known to carry none (NOT_A_FIGURE), blank, or a warning.
    """
    found: dict = {}
    histogram: list[list[float]] = []
    start = _SUMMARY_START.search(tail)
    summary_from = start.start() if start else len(tail)
    for line in tail[:summary_from].splitlines():  # after "Threads started!": words
        _summary_line(line, found, histogram, result.facts)
    for line in tail[summary_from:].splitlines():
        if not _summary_line(line, found, histogram, result.facts):
            if line.strip() and not NOT_A_FIGURE.match(line):
                warnings.append(line_warning("sysbench summary", line))
    if histogram:
        result.facts["histogram"] = histogram
    _finish_metrics(found, result)


def _summary_line(line: str, found: dict, histogram: list, facts: dict) -> bool:
    """Read one summary line into found/histogram/facts; False if not understood."""
    if "|" in line:
        row = _HISTOGRAM_ROW.match(line)
        if row:
            histogram.append([float(row.group(1)), int(row.group(2))])
        return bool(row)
    for pattern, names in _SUMMARY_LINES:
        match = pattern.match(line)
        if match:
            for name, value in zip(names, match.groups()):
                found[name] = value if name.endswith("_unit") else number(value)
            return True
    for pattern, reader in (
        (_QUERY_KIND, _query_kind),
        (_LATENCY_STAT, _latency_stat),
        (_PERCENTILE, _percentile),
        (_FAIRNESS, _fairness),
    ):
        match = pattern.match(line)
        if match:
            reader(match, found, facts)
            return True
    return False


def _query_kind(match: re.Match, found: dict, facts: dict) -> None:
    found[_QUERY_METRIC[match.group(1)]] = int(match.group(2))


def _latency_stat(match: re.Match, found: dict, facts: dict) -> None:
    found[_LATENCY_METRIC[match.group(1)]] = in_ms(match.group(2), match.group(3))


def _percentile(match: re.Match, found: dict, facts: dict) -> None:
    found[latency_name(match.group(1))] = in_ms(match.group(2), match.group(3))


def _fairness(match: re.Match, found: dict, facts: dict) -> None:
    key = "thread_events" if match.group(1) == "events" else "thread_time_s"
    facts[f"{key}_avg"] = float(match.group(2))
    facts[f"{key}_stddev"] = float(match.group(3))


def in_ms(value: str, unit: str | None) -> float:
    return round(float(value) * _TO_MS[unit], 6)


def number(value: str) -> float | int:
    return float(value) if "." in value else int(value)


def _finish_metrics(found: dict, result: Result) -> None:
    """Derive contract metrics from what the summary held (never invent one)."""
    if "queries" not in found and "_queries_total" in found:
        found["queries"] = found["_queries_total"]
    if "qps" not in found and "_rw_ps" in found and "_other_ps" in found:
        # 0.4/0.5 print requests and other operations apart; 1.x's qps is their sum.
        found["qps"] = round(found["_rw_ps"] + found["_other_ps"], 2)
    if "_latency_sum_ms" in found:
        result.facts["latency_sum_ms"] = found["_latency_sum_ms"]
    if "_event_execution_s" in found:
        result.facts["event_execution_s"] = found["_event_execution_s"]
    derived = _derive_legacy_rates(found)
    if derived:
        result.facts["derived_metrics"] = derived
    result.metrics = {k: v for k, v in found.items() if not k.startswith("_")}


# 0.4's size units (sb_print_value_size: powers of 1024) in MiB.
_TO_MIB = {"b": 1 / 1048576, "Kb": 1 / 1024, "Mb": 1.0, "Gb": 1024.0, "Tb": 1048576.0}


def _derive_legacy_rates(found: dict) -> list[str]:
    """0.4/0.5 print counts over the total time where 1.x prints rates: the
    1.x metric is derived from them (count / total time), and only then.
    Returns the names derived (kept in facts["derived_metrics"])."""
    seconds = found.get("total_time_s")
    if not seconds:
        return []
    rates = {}
    for count, name in (
        ("_fileio_reads", "fileio_reads_per_s"),
        ("_fileio_writes", "fileio_writes_per_s"),
        ("_fileio_other", "fileio_fsyncs_per_s"),  # 0.4's "Other" operations are its fsyncs
    ):
        if count in found:
            rates[name] = found[count] / seconds
    for amount, unit, name in (
        ("_read_amount", "_read_unit", "fileio_read_mib_per_s"),
        ("_written_amount", "_written_unit", "fileio_written_mib_per_s"),
    ):
        if amount in found:
            rates[name] = found[amount] * _TO_MIB[found[unit]] / seconds
    legacy = "_event_execution_s" in found  # 0.4/0.5 only; 1.x prints eps itself
    if legacy and "events" in found and "tps" not in found and "events_per_s" not in found:
        rates["events_per_s"] = found["events"] / seconds
    derived = [name for name in rates if name not in found]
    found.update({name: round(rates[name], 6) for name in derived})
    return derived


def latency_name(percent: str) -> str:
    """'95' -> 'latency_p95_ms'; '99.9' -> 'latency_p99_9_ms'."""
    value = float(percent)
    shown = f"{value:g}".replace(".", "_")
    return f"latency_p{shown}_ms"
