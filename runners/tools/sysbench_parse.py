"""Parser for sysbench output: 0.4.12, 0.5, 1.0 and 1.1 (`sysbench.parse`).

Reads the summary (sysbench_summary), the --report-interval lines (into
series), the --histogram block (into facts["histogram"] as [[ms, count], ...]),
FATAL and ALERT lines (into errors) and the prepare/cleanup progress lines
(into facts, sysbench_header).

1.x summary and interval lines (sysbench 1.0.20)::

    [ 1s ] thds: 2 tps: 638.58 qps: 12800.61 (r/w/o: 8965.11/2556.33/1279.16) lat (ms,95%): 4.57 err/s: 0.00 reconn/s: 0.00
    SQL statistics:
        transactions:                        2782   (555.23 per sec.)
        queries:                             55640  (11104.57 per sec.)
        ignored errors:                      0      (0.00 per sec.)
    Latency (ms):
             95th percentile:                        5.09

0.4 / 0.5 summary and interval lines::

    [  10s] threads: 4, tps: 1810.86, reads/s: 25355.94, writes/s: 7244.24 response time: 2.40ms (99%)
    OLTP test statistics:
        transactions:                        1033129 (17218.55 per sec.)
        deadlocks:                           0      (0.00 per sec.)
        read/write requests:                 1033129 (17218.55 per sec.)
        other operations:                    1033129 (17218.55 per sec.)
        per-request statistics:
             approx.  95 percentile:               1.10ms

Speed (scripts/bench_parsers.py, 50 MB / ~370k 1.x interval lines): a
region of lines that all have the canonical 1.x shape above is checked with
one str.translate (digits dropped, compared with the expected skeleton) and
converted by str.translate into one JSON array that json.loads reads in C;
each series column is then one slice of that array (no Python code per
line). Lines of any other shape (0.4/0.5, cpu/fileio, odd spacing where every
gap may be any run of spaces/tabs) are read one by one. The summary is only searched after the last interval line,
and error lines are found with str.find.
"""

from __future__ import annotations

import json
import re
from itertools import groupby

from runners.cutshort import ends_mid_number
from runners.errors import ParseError
from runners.results import (
    Result,
    Series,
    cap_warnings,
    concat_series,
    line_warning,
    rows_to_series,
)
from runners.tools.sysbench_header import error_lines, has_progress, header_end, read_header
from runners.tools.sysbench_summary import (
    NOT_A_FIGURE,
    NUM,
    OPT_GAP,
    latency_name,
    number,
    read_summary,
)

_ANY_INTERVAL = re.compile(rf"^\[{OPT_GAP}{NUM}s{OPT_GAP}\]([^\n]*)$", re.MULTILINE)
_SERIES_KEYS = {
    "tps": "tps",
    "qps": "qps",
    "eps": "eps",
    "reads": "reads",
    "reads/s": "reads",
    "writes": "writes",
    "writes/s": "writes",
    "err/s": "err_s",
    "errors": "err_s",
    "reconn/s": "reconn_s",
    "reconnects": "reconn_s",
    "fsyncs": "fsyncs",
}


def parse(text: str) -> Result:
    """Read sysbench output (any of 0.4, 0.5, 1.x) into a Result.

    Raises ParseError (one line) when the text is empty or holds nothing
    sysbench-shaped at all: no summary, no interval line, no error, no
    prepare/cleanup progress. Help text also gives ParseError.
    """
    if not text or text.isspace():
        raise ParseError("empty output")
    warnings: list[str] = []
    series, tail_start = _series(text, warnings)
    result = Result(series=series)
    read_summary(text[tail_start:], result, warnings)
    read_header(text[: header_end(text)], result.facts)
    result.errors = error_lines(text) + _cut_short(text, result)
    result.warnings = cap_warnings(warnings)
    _percentile_fact(result)
    if not (result.metrics or result.series or result.errors or has_progress(result.facts)):
        raise ParseError(
            "no sysbench results, intervals or errors found (truncated, help or foreign text)"
        )
    if result.metrics:
        result.groups = [{"labels": {}, "metrics": dict(result.metrics)}]
    return result


# ---------------------------------------------------------------- series

# A sysbench 1.x OLTP interval line with its digits removed. sysbench prints
# these from one fixed format ("[ %.0fs ] thds: %u tps: %4.2f ..."), so every
# line of a long --report-interval run reduces to exactly this.
_OLTP_SKELETON = "[ s ] thds:  tps: . qps: . (r/w/o: ././.) lat (ms,%): . err/s: . reconn/s: ."
# t, thds, tps, qps, (a 0 for the "w" of r/w/o), r, w, o, percentile, lat, err/s, reconn/s
_OLTP_COLUMNS = 12
_DROP_DIGITS = str.maketrans("", "", "0123456789")
# The "w" of "(r/w/o:" becomes a 0 (a column of its own); then each gap
# between two numbers of a skeleton line holds exactly one of
# `] p p / / / / , % / / \n`: those become the commas of one flat JSON array
# and every other non-number character goes.
_TO_JSON = str.maketrans(
    {
        **dict.fromkeys("abcdefghijklmnopqrstuvxyzABCDEFGHIJKLMNOPQRSTUVWXYZ:[() \t"),
        **dict.fromkeys("]p%/\n", ","),
        "w": "0",
    }
)


def _series(text: str, warnings: list[str]) -> tuple[Series, int]:
    """Return (series columns, offset just after the last interval line).

    The interval region runs from the first line starting with "[" to the end
    of the last one. When every line in it is a canonical 1.x OLTP line (the
    50 MB case) the whole region is read in a handful of C-speed passes
    (_oltp_numbers); otherwise it goes line by line (_mixed_series).
    """
    first = 0 if text.startswith("[") else text.find("\n[") + 1
    if first == 0 and not text.startswith("["):
        return {}, 0
    last = text.rfind("\n[") + 1
    end = text.find("\n", last)
    end = len(text) if end == -1 else end
    region = text[first:end]
    skeleton = region.translate(_DROP_DIGITS)
    lines = skeleton.count("\n") + 1
    if skeleton == "\n".join([_OLTP_SKELETON] * lines):
        numbers = _oltp_numbers(region, lines)
        if numbers is not None:
            return _oltp_columns(numbers), end
    return _mixed_series(region, skeleton.split("\n"), warnings), end


def _oltp_numbers(region: str, lines: int) -> list | None:
    """The numbers of `lines` canonical 1.x OLTP lines, row after row (11 per
    line), or None if a number is malformed.

    str.translate turns the block into one JSON array of numbers, so json's C
    scanner does the float conversion (the bulk of the cost) without a Python
    call per value; ints ("[ 12s ]", "thds: 4") stay ints as they did.
    """
    try:
        numbers = json.loads("[" + region.translate(_TO_JSON) + "]")
    except ValueError:  # e.g. "00.5" or "1." - let the per-line readers decide
        return None
    return numbers if len(numbers) == lines * _OLTP_COLUMNS else None


def _oltp_columns(numbers: list) -> Series:
    """Series columns from _oltp_numbers: each column is one slice of the list.

    The latency column is named by its percentile (one per run in practice;
    a line with another percentile has None in the others' columns).
    """
    column = [numbers[i::_OLTP_COLUMNS] for i in range(_OLTP_COLUMNS)]
    t, threads, tps, qps, _w, reads, writes, other, percents, latency, err_s, reconn_s = column
    latencies = {latency_name(str(pct)): pct for pct in dict.fromkeys(percents)}
    if len(latencies) > 1:
        latencies = {
            name: [lat if p == pct else None for p, lat in zip(percents, latency)]
            for name, pct in latencies.items()
        }
    else:
        latencies = dict.fromkeys(latencies, latency)
    return {
        "t": t,
        "threads": threads,
        "tps": tps,
        "qps": qps,
        "reads": reads,
        "writes": writes,
        "other": other,
        **latencies,
        "err_s": err_s,
        "reconn_s": reconn_s,
    }


def _mixed_series(region: str, skeletons: list[str], warnings: list[str]) -> Series:
    """Series for a region that is not all canonical 1.x OLTP lines.

    Each run of consecutive canonical lines still goes through _oltp_numbers;
    only the others (0.4/0.5 formats, cpu/fileio, tpcc.lua's "err/s 1.00",
    odd spacing) are read one by one, field by field (_interval_row). Lines
    not starting with "[" (FATAL:/ALERT:/WARNING: lines of a run in trouble,
    blank lines) give no row; any other line there is a warning.
    """
    texts = region.split("\n")
    parts = []
    for canonical, indices in groupby(
        range(len(texts)), key=lambda i: skeletons[i] == _OLTP_SKELETON
    ):
        block = [texts[i] for i in indices]
        found = _oltp_numbers("\n".join(block), len(block)) if canonical else None
        if found is not None:
            parts.append(_oltp_columns(found))
        else:
            rows = [row for line in block if (row := _line_row(line, warnings))]
            parts.append(rows_to_series(rows))
    return concat_series(parts)


def _line_row(line: str, warnings: list[str]) -> dict | None:
    """One interval line of any known format -> {"t": ..., metrics...} or None."""
    match = _ANY_INTERVAL.match(line)
    if not match:
        if line.strip() and not NOT_A_FIGURE.match(line):
            warnings.append(line_warning("sysbench interval lines", line))
        return None
    return _interval_row(number(match.group(1)), match.group(2), line, warnings)


# One field of an interval line, in any order and with or without a colon
# ("err/s: 0.00" in 1.x OLTP, "err/s 0.00" in tpcc.lua, "reads/s: 1.00," in
# 0.5, "reads: 28.78 MiB/s" in fileio): the three composite fields first,
# then any "name[:] number[unit]" pair.
_N = r"[0-9]+(?:\.[0-9]+)?"
_FIELD = re.compile(
    rf"\(r/w/o:[ \t]*(?P<r>{_N})/(?P<w>{_N})/(?P<o>{_N})\)"
    rf"|lat(?:ency)?[ \t]*\(ms,[ \t]*(?P<pct>{_N})%\):?[ \t]*(?P<lat>{_N})"
    rf"|response time:?[ \t]*(?P<rt>{_N})[ \t]*ms[ \t]*\((?P<rtpct>{_N})%\)"
    rf"|(?:Intermediate results:[ \t]*)?(?P<nthreads>[0-9]+) threads\b"  # 0.4.12-10
    rf"|(?P<memory>{_N}) MiB/sec"  # 1.x memory: "[ 1s ] 3438.95 MiB/sec"
    rf"|(?P<name>[A-Za-z][A-Za-z/]*):?[ \t]*(?P<value>{_N})(?P<unit>[ \t]*MiB/s|/s)?"
)
_SEPARATORS = frozenset(" \t,")


def _interval_row(t: float, rest: str, line: str, warnings: list[str]) -> dict | None:
    """The fields of one interval line after its "[ Ns ]" -> a row.

    Every character of the line is accounted for: a known field, or the
    spaces and commas between fields. An unknown name ("foo: 1.0") or text
    that is no field at all is a warning naming it (its value is not read).
    """
    row: dict = {"t": t}
    position = 0
    unknown: list[str] = []
    for field in _FIELD.finditer(rest):
        gap = rest[position : field.start()]
        if not set(gap) <= _SEPARATORS:
            unknown.append(gap.strip(" \t,"))
        position = field.end()
        _interval_field(field, row, unknown)
    if not set(rest[position:]) <= _SEPARATORS:
        unknown.append(rest[position:].strip(" \t,"))
    for what in unknown:
        warnings.append(line_warning("sysbench interval line", line, f"field {what!r} not read"))
    return row if len(row) > 2 or (len(row) == 2 and "threads" not in row) else None


def _interval_field(field: re.Match, row: dict, unknown: list[str]) -> None:
    found = field.groupdict()
    if found["r"] is not None:
        row.update(reads=float(found["r"]), writes=float(found["w"]), other=float(found["o"]))
    elif found["lat"] is not None:
        row[latency_name(found["pct"])] = float(found["lat"])
    elif found["rt"] is not None:
        row[latency_name(found["rtpct"])] = float(found["rt"])
    elif found["memory"] is not None:
        row["memory_mib_per_s"] = float(found["memory"])
    elif found["nthreads"] is not None:
        row["threads"] = int(found["nthreads"])
    elif found["name"] in ("thds", "threads") and "." not in found["value"]:
        row["threads"] = int(found["value"])
    elif found["name"] in _SERIES_KEYS:  # "fsyncs: 0.00/s" is a rate as "fsyncs/s: 0.00"
        name = _SERIES_KEYS[found["name"]]
        mib = "MiB" in (found["unit"] or "")
        row.setdefault(f"{name}_mib_s" if mib else name, float(found["value"]))
    else:
        unknown.append(field.group(0))


# sysbench 1.1's fileio prints its own summary (file_report_cumulative):
# "Throughput:" with read/write/fsync IOPS lines, then "Latency (ms):", whose
# "sum:" line is the last it prints; no General statistics, no Threads fairness.
_FILEIO_11_FSYNC = re.compile(r"(?m)^\s*fsync:[ \t]*IOPS=")


def _cut_short(text: str, result: Result) -> list[str]:
    """Errors for an output that stopped before its summary ended.

    What a summary prints last depends on the version and test: every
    version's general summary ends with "Threads fairness:" and its
    "execution time (avg/stddev)" line; 1.1's fileio summary ends with its
    latency block's "sum:" line. Interval lines with no summary after them
    are a run that never finished (unless a FATAL line says why).
    """
    if result.metrics:
        fileio_11 = _FILEIO_11_FSYNC.search(text) is not None
        last = "latency_sum_ms" if fileio_11 else "thread_time_s_stddev"
        if last not in result.facts:
            where = "the end of 'Latency (ms)'" if fileio_11 else "'Threads fairness'"
            return [
                f"sysbench summary cut short: it stops before {where} (run killed or output cut)"
            ]
    if result.series and not result.metrics and "FATAL:" not in text:
        return ["sysbench output has interval lines but no summary (run interrupted or output cut)"]
    cut = ends_mid_number(text) if result.metrics or result.series else ""
    return [cut] if cut else []


def _percentile_fact(result: Result) -> None:
    for name in result.metrics:
        if name.startswith("latency_p"):
            result.facts["percentile"] = name[len("latency_p") : -len("_ms")].replace("_", ".")
