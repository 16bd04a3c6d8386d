"""pgbench's output (summary, -P progress lines, errors) into a Result
(`pgbench.parse`; the metrics are pgbench.py's catalog)."""

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

SUMMARY = (  # (metric, pattern on a summary line); first match wins
    ("tps", r"^tps = ([0-9.]+) \((?:without initial connection time|excluding conn)"),
    ("tps_including_connections", r"^tps = ([0-9.]+) \(including connections establishing\)"),
    ("transactions", r"^number of transactions actually processed: (\d+)"),
    ("failed", r"^number of failed transactions: (\d+)"),
    ("latency_avg_ms", r"^latency average\s*[=:]\s*([0-9.]+) ms"),
    ("latency_stddev_ms", r"^latency stddev\s*[=:]\s*([0-9.]+) ms"),
    ("initial_connection_time_ms", r"^initial connection time = ([0-9.]+) ms"),
    ("skipped", r"^number of transactions skipped: (\d+)"),
    ("late", r"^number of transactions above the [0-9.]+ ms latency limit: (\d+)"),
    ("init_time_s", r"^done in ([0-9.]+) s"),
    # PostgreSQL 15+: retries (--max-tries) and the failures by kind.
    ("retried", r"^number of transactions retried: (\d+)"),
    ("retries", r"^total number of retries: (\d+)"),
    ("serialization_failures", r"^number of serialization failures: (\d+)"),
    ("deadlock_failures", r"^number of deadlock failures: (\d+)"),
    # --rate: "rate limit schedule lag: avg 2.859 (max 27.065) ms".
    ("lag_avg_ms", r"^rate limit schedule lag: avg ([0-9.]+) \(max [0-9.]+\) ms"),
    ("lag_max_ms", r"^rate limit schedule lag: avg [0-9.]+ \(max ([0-9.]+)\) ms"),
)
SUMMARY_RE = [(name, re.compile(pattern, re.MULTILINE)) for name, pattern in SUMMARY]
ERROR = re.compile(
    r"error:|fatal:|FATAL:|ERROR:|aborted|could not|failed:|"
    r"need to do initialization|[Cc]onnection to database .* failed"
)
FACTS = (
    ("version", r"^pgbench \((\d+(?:\.\d+)*)"),
    ("transaction_type", r"^transaction type: (.+)$"),
    ("scaling_factor", r"^scaling factor: (\d+)"),
    ("query_mode", r"^query mode: (\w+)"),
    ("clients", r"^number of clients: (\d+)"),
    ("threads", r"^number of threads: (\d+)"),
    ("duration_s", r"^duration: (\d+) s"),
    ("max_tries", r"^maximum number of tries: (\d+)"),
    ("transactions_per_client", r"^number of transactions per client: (\d+)"),
    ("latency_limit_ms", r"^latency limit: ([0-9.]+) ms"),
)
# Summary lines that carry no figure of their own (the figures of the ones
# that do are read by SUMMARY, FACTS or the statement-latency reader).
KNOWN_LINES = re.compile(
    r"^(?:starting vacuum\.\.\.end\.|pgbench \(.*\)|statement latencies in milliseconds.*:"
    r"|SQL script \d+: .*|- weight: \d+ \(targets [0-9.]+% of total\)"
    r"|tps = [0-9.]+ \((?:including|excluding) connections establishing\)"
    r"|tps = [0-9.]+ \(without initial connection time\)"
    r"|number of transactions actually processed: \d+(?:/\d+)?"
    r"|number of failed transactions: \d+ \([0-9.]+%\)"
    r"|number of transactions (?:retried|skipped): \d+ \([0-9.]+ ?%\)"
    r"|number of transactions above the [0-9.]+ ms latency limit: \d+(?:/\d+)? \([0-9.]+ ?%\)"
    r"|number of (?:serialization|deadlock) failures: \d+ \([0-9.]+%\))$"
)
# "statement latencies in milliseconds[, failures and retries]:" rows:
# "   0.847   0   0  \set aid ..." (latency ms, then failures and retries in 15+).
STATEMENT = re.compile(r"^([0-9]+\.[0-9]+)(?:\s+(\d+))?(?:\s+(\d+))?\s+(\S.*)$")
# Where the run summary (the part that carries figures) begins.
SUMMARY_START = "transaction type:"


def parse(text: str) -> Result:
    """Read pgbench output: the summary (stdout) and -P progress lines (stderr).

    Reads e.g. (PostgreSQL 15)::

        progress: 1.0 s, 613.9 tps, lat 3.059 ms stddev 4.053, 0 failed
        number of transactions actually processed: 3204
        number of failed transactions: 0 (0.000%)
        latency average = 3.090 ms
        latency stddev = 3.462 ms
        initial connection time = 47.792 ms
        tps = 646.259731 (without initial connection time)

    and before PostgreSQL 14 ``tps = 248.316242 (excluding connections
    establishing)`` (that is `tps`; the "including" figure is
    tps_including_connections). `pgbench -i` output gives init_time_s from
    ``done in 0.30 s (...)``. FATAL/ERROR/aborted lines go to errors.
    """
    if not text or text.isspace():
        raise ParseError("empty pgbench output")
    warnings: list[str] = []
    series, other = _progress(text, warnings)
    # The summary patterns only ever see the few non-progress lines: a long -P
    # run is almost all progress lines.
    rest = "\n".join(other)
    metrics = _summary(rest)
    errors = _errors(other) + _cut_short(text, metrics)
    if not metrics and not errors:
        if series or "pgbench" in rest or "transaction type:" in rest:
            raise ParseError("pgbench output has no summary (truncated or interrupted run)")
        raise ParseError("not pgbench output")
    groups = [{"labels": {}, "metrics": dict(metrics)}] if metrics else []
    facts = _facts(rest)
    warnings = warnings + _account(other, facts)
    return Result(
        metrics=metrics,
        groups=groups,
        series=series,
        errors=errors,
        facts=facts,
        warnings=cap_warnings(warnings),
    )


def _account(lines: list[str], facts: dict) -> list[str]:
    """Warnings for the lines of the run summary that nothing reads, and the
    -r statement latencies into facts["statement_latencies"] as
    [ms, failures or None, retries or None, statement]."""
    warnings: list[str] = []
    statements: list[list] = []
    in_summary = in_statements = False
    for line in lines:
        in_summary = in_summary or line.startswith(SUMMARY_START)
        if line.startswith("statement latencies in milliseconds"):
            in_statements = True
            continue
        if in_statements and (row := STATEMENT.match(line)):
            ms, failures, retries, statement = row.groups()
            statements.append([float(ms), _int(failures), _int(retries), statement])
            continue
        if in_statements and statements and not ERROR.search(line):
            statements[-1][3] += "\n" + line  # a statement of several lines
            continue
        if in_summary and not _known(line):
            warnings.append(line_warning("pgbench summary", line))
    if statements:
        facts["statement_latencies"] = statements
    return warnings


def _known(line: str) -> bool:
    if KNOWN_LINES.match(line) or ERROR.search(line):
        return True
    return any(p.match(line) for _, p in SUMMARY_RE) or any(
        re.match(pattern, line) for _, pattern in FACTS
    )


def _int(value: str | None) -> int | None:
    return int(value) if value is not None else None


def _cut_short(text: str, metrics: dict) -> list[str]:
    """Errors for a run summary that stops before its "tps =" line (pgbench
    prints it last; before PostgreSQL 14 the "excluding" one comes last)."""
    run_figures = set(metrics) - {"init_time_s"}
    if run_figures and "tps" not in metrics:
        return ["pgbench summary cut short: no 'tps = ...' line (run interrupted or output cut)"]
    cut = ends_mid_number(text) if metrics else ""
    return [cut] if cut else []


def _progress(text: str, warnings: list[str]) -> tuple[Series, list[str]]:
    """(series of the -P progress lines, the other non-empty lines, stripped).

    The progress region runs from the line of the first "progress:" to the
    line of the last. When all its lines have the one shape of a run's
    progress lines (_shape_columns; the 50 MB case), it is read in a few C-speed
    passes: str.translate drops the digits and the result is compared with
    the first line's skeleton repeated; a second str.translate turns the
    region into one JSON array of numbers that json.loads reads; each column
    is then one slice of it. Otherwise (an error line between progress lines,
    a NaN stddev, odd spacing) it goes line by line (_mixed_progress).
    """
    first = text.find("progress:")
    if first == -1:
        return {}, _other(text.splitlines())
    first = text.rfind("\n", 0, first) + 1
    end = text.find("\n", text.rfind("progress:"))
    end = len(text) if end == -1 else end
    region = text[first:end]
    head, tail = _other(text[:first].splitlines()), _other(text[end:].splitlines())
    skeletons = region.translate(_DROP_DIGITS)
    shape = skeletons.partition("\n")[0]
    names = _shape_columns(shape)
    if names and skeletons == "\n".join([shape] * (skeletons.count("\n") + 1)):
        series = _columns(region, names)
        if series is not None:
            return series, head + tail
    series, middle = _mixed_progress(region.split("\n"), skeletons.split("\n"), warnings)
    return series, head + middle + tail


# A progress line with its digits dropped, e.g. (PostgreSQL 15)
# "progress: . s, . tps, lat . ms stddev ., failed" for
# "progress: 1.0 s, 613.9 tps, lat 3.059 ms stddev 4.053, 0 failed";
# lag comes with --rate, skipped with --latency-limit, failed since 14,
# retried/retries with --max-tries; their order differs between versions
# (15+ prints "failed" before "lag"), so each part is named by its own shape.
_PARTS = {
    "lag . ms": ["lag_ms"],
    "skipped": ["skipped"],
    "failed": ["failed"],
    "retried": ["retried"],
    "retries": ["retries"],
}
_HEAD = "progress: . s, . tps, lat . ms stddev ."
_DROP_DIGITS = str.maketrans("", "", "0123456789")
# Every gap between two numbers of such a line holds exactly one of "," "v"
# (of stddev) or a line break: those become the commas of a JSON array, and
# every other non-number character goes.
_TO_JSON = str.maketrans(
    {
        **dict.fromkeys("abcdefghijklmnopqrstuwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ: \t"),
        **dict.fromkeys("v\n", ","),
    }
)


def _shape_columns(skeleton: str) -> list[str] | None:
    """The series columns of a progress line of this skeleton, in line order,
    or None for a shape the fast path does not read."""
    if not skeleton.startswith(_HEAD):
        return None
    names = ["t", "tps", "latency_avg_ms", "latency_stddev_ms"]
    for part in skeleton[len(_HEAD) :].split(",")[1:] if skeleton != _HEAD else []:
        found = _PARTS.get(part.strip())
        if found is None or found[0] in names:
            return None
        names += found
    return names if skeleton.count(",") == len(names) - 2 else None


def _columns(lines: str, names: list[str]) -> Series | None:
    """Series of progress lines that all have the shape of `names`, or None
    if a number is malformed ("1." or "00.5": the line-by-line reader decides)."""
    try:
        numbers = json.loads("[" + lines.translate(_TO_JSON) + "]")
    except ValueError:
        return None
    width = len(names)
    if len(numbers) != (lines.count("\n") + 1) * width:
        return None
    columns = {name: numbers[i::width] for i, name in enumerate(names)}
    for name in ("skipped", "failed"):  # printed as integers; series values are floats
        if name in columns:
            columns[name] = list(map(float, columns[name]))
    return columns


def _mixed_progress(
    lines: list[str], skeletons: list[str], warnings: list[str]
) -> tuple[Series, list[str]]:
    """Series and other lines of a progress region that is not all one shape.

    Each run of consecutive lines of the first known shape still goes through
    _columns; the lines between are read one by one (_read_lines).
    """
    shape = next((s for s in skeletons if _shape_columns(s)), None)
    names = _shape_columns(shape) if shape else []
    parts: list[Series] = []
    other: list[str] = []
    for same_shape, indices in groupby(range(len(lines)), key=lambda i: skeletons[i] == shape):
        block = [lines[i] for i in indices]
        columns = _columns("\n".join(block), names) if same_shape else None
        parts.append(columns if columns is not None else _read_lines(block, other, warnings))
    return concat_series(parts), other


def _read_lines(lines: list[str], other: list[str], warnings: list[str]) -> Series:
    """Progress lines read one by one, part by part (_point); the lines that
    are not progress lines (pgbench's "client 3 aborted ..." during a run) go
    to other."""
    rows: list[dict] = []
    for line in map(str.strip, "\n".join(lines).splitlines()):
        if line.startswith("progress:"):
            if point := _point(line, warnings):
                rows.append(point)
        elif line:
            other.append(line)
    return rows_to_series(rows)


_N = r"[0-9]+(?:\.[0-9]+)?"
# Each comma-separated part of a progress line, in whatever order it comes.
_PROGRESS_PARTS = (
    (re.compile(rf"^progress: ({_N}) s$"), ("t",)),
    (re.compile(rf"^({_N}) tps$"), ("tps",)),
    (re.compile(rf"^lat ({_N}) ms stddev ({_N}|NaN)$"), ("latency_avg_ms", "latency_stddev_ms")),
    (re.compile(rf"^lag ({_N}) ms$"), ("lag_ms",)),
    (re.compile(r"^(\d+) skipped$"), ("skipped",)),
    (re.compile(r"^(\d+) failed$"), ("failed",)),
    (re.compile(r"^(\d+) retried$"), ("retried",)),
    (re.compile(r"^(\d+) retries$"), ("retries",)),
)


def _point(line: str, warnings: list[str]) -> dict[str, float] | None:
    """One progress line -> {"t": ..., metrics}; a part it does not know is a
    warning naming it; None without a time or a tps (not a progress line)."""
    point: dict[str, float] = {}
    for part in (piece.strip() for piece in line.split(",")):
        for pattern, names in _PROGRESS_PARTS:
            match = pattern.match(part)
            if match:
                for name, value in zip(names, match.groups()):
                    if value != "NaN":
                        point[name] = float(value)
                break
        else:
            warnings.append(line_warning("pgbench progress line", line, f"part {part!r} not read"))
    if "t" not in point or "tps" not in point:
        return None
    return point


def _other(lines: list[str]) -> list[str]:
    return [line for line in map(str.strip, lines) if line]


def _summary(text: str) -> dict[str, float]:
    metrics: dict[str, float] = {}
    for name, pattern in SUMMARY_RE:
        match = pattern.search(text)
        if match:
            metrics[name] = float(match.group(1))
    return metrics


def _errors(lines: list[str]) -> list[str]:
    """Error lines, in order, without repeats (libpq repeats its FATAL line)."""
    errors: list[str] = []
    for line in lines:
        if ERROR.search(line) and line not in errors:
            errors.append(line)
    return errors


def _facts(text: str) -> dict:
    facts: dict = {}
    for name, pattern in FACTS:
        match = re.search(pattern, text, re.MULTILINE)
        if match:
            value = match.group(1).strip()
            facts[name] = int(value) if value.isdigit() else value
    return facts
