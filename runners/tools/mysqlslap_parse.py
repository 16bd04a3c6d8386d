"""mysqlslap's output: the "Benchmark" blocks of MySQL 5.x/8.x and MariaDB
and the --csv lines, into a Result (see mysqlslap.py for the metrics)."""

from __future__ import annotations

import re

from runners.cutshort import ends_mid_number
from runners.errors import ParseError
from runners.results import Result, cap_warnings, line_warning

_BLOCK_LINE = re.compile(
    r"^\s*(?:(Running for engine)\s+(\S+)"
    r"|(Average|Minimum|Maximum) number of seconds to run all queries:\s*([0-9.]+)\s*seconds"
    r"|Number of clients running queries:\s*([0-9]+)"
    r"|Average number of queries per client:\s*([0-9]+))"
)
_CSV_LINE = re.compile(
    r"^([A-Za-z0-9_]*),([A-Za-z0-9_]*),([0-9.]+),([0-9.]+),([0-9.]+),([0-9]+),([0-9]+)\s*$"
)
# "mysqlslap: Error when connecting...", "mariadb-slap: Cannot run query ..."
_ERROR_LINE = re.compile(r"^(?:[\w./-]*(?:mysqlslap|mariadb-slap)):\s+(?!\[Warning\])(.+)$")
_STAT = {"Average": "avg_s", "Minimum": "min_s", "Maximum": "max_s"}


def parse(text: str) -> Result:
    """Read mysqlslap/mariadb-slap output into a Result.

    Reads blocks such as (MariaDB 10.11, MySQL 5.6/8.0 alike)::

        Benchmark
        \tRunning for engine innodb
        \tAverage number of seconds to run all queries: 0.035 seconds
        \tMinimum number of seconds to run all queries: 0.028 seconds
        \tMaximum number of seconds to run all queries: 0.048 seconds
        \tNumber of clients running queries: 3
        \tAverage number of queries per client: 100

    and --csv lines ``innodb,mixed,0.055,0.027,0.075,3,100``. Lines such as
    ``mysqlslap: Error when connecting to server: Access denied ...`` go to
    errors. A block without all five figures, or an output that stops inside
    a number, is an error (cut short), its figures kept. Raises ParseError
    when there is neither a number nor an error.
    """
    if not text or text.isspace():
        raise ParseError("empty output")
    blocks: list[dict] = []
    errors: list[str] = []
    facts: dict = {}
    warnings: list[str] = []
    groups = _whole_blocks(text)  # every line is a block's line, by construction
    if groups is None:
        for line in text.splitlines():
            if not _read_line(line, blocks, errors, facts) and _in_figures(line, blocks):
                warnings.append(line_warning("mysqlslap Benchmark block", line))
        groups = [_group(block) for block in blocks if block["metrics"]]
    else:
        blocks = []  # whole by construction: only the last line is checked
    if not groups and not errors:
        raise ParseError("no mysqlslap Benchmark block, CSV line or error found")
    errors += _cut_short(text, blocks, groups)
    metrics = dict(groups[0]["metrics"]) if len(groups) == 1 else {}
    return Result(
        metrics=metrics, groups=groups, errors=errors, facts=facts, warnings=cap_warnings(warnings)
    )


def _in_figures(line: str, blocks: list[dict]) -> bool:
    """Whether a line nothing read lies where figures are: inside a Benchmark
    block that still misses some (its lines come one after the other), or a
    comma-separated line with a number (a --csv line of another shape)."""
    if not line.strip():
        if blocks:
            blocks[-1]["open"] = False  # a blank line ends a block
        return False
    if blocks and blocks[-1].get("open", True) and len(blocks[-1]["metrics"]) < 5:
        return True
    return "," in line and any(c.isdigit() for c in line)


_BLOCK_FIGURES = ("avg_s", "min_s", "max_s", "clients", "queries_per_client")
_GAP = r"[ \t]*"
_SECONDS = rf"number of seconds to run all queries:{_GAP}([0-9]+(?:\.[0-9]+)?){_GAP}seconds{_GAP}\n"
_WHOLE_BLOCK = re.compile(
    rf"^{_GAP}Benchmark{_GAP}\n"
    rf"(?:{_GAP}Running for engine{_GAP}([A-Za-z0-9_]+){_GAP}\n)?"
    rf"{_GAP}Average {_SECONDS}{_GAP}Minimum {_SECONDS}{_GAP}Maximum {_SECONDS}"
    rf"{_GAP}Number of clients running queries:{_GAP}([0-9]+){_GAP}\n"
    rf"{_GAP}Average number of queries per client:{_GAP}([0-9]+){_GAP}\n",
    re.MULTILINE,
)


def _whole_blocks(text: str) -> list[dict] | None:
    """Groups for a text made only of whole Benchmark blocks and blank lines,
    else None (then it is read line by line).

    The 50 MB case: one findall; the blocks cover every non-blank line when
    the count of those equals the blocks' lines (a line left over, or a
    blank line of spaces, makes the counts differ: then per line).
    """
    if "," in text or "slap" in text:  # CSV or error lines
        return None
    found = _WHOLE_BLOCK.findall(text)
    if not found:
        return None
    lines = text.count("\n") + (not text.endswith("\n"))
    blank = text.count("\n\n") + text.startswith("\n")
    engines = sum(1 for row in found if row[0])
    if lines - blank != 6 * len(found) + engines:
        return None
    # Columns converted by map() in C; one comprehension builds the groups.
    engines, avgs, lows, highs, clients, per_client = zip(*found)
    rows = zip(
        engines,
        map(float, avgs),
        map(float, lows),
        map(float, highs),
        map(int, clients),
        map(int, per_client),
    )
    return [
        {
            "labels": {"engine": e, "concurrency": c} if e else {"concurrency": c},
            "metrics": {
                "avg_s": avg,
                "min_s": low,
                "max_s": high,
                "clients": c,
                "queries_per_client": q,
                "qps": round(c * q / avg, 3),
            }
            if avg > 0
            else {"avg_s": avg, "min_s": low, "max_s": high, "clients": c, "queries_per_client": q},
        }
        for e, avg, low, high, c, q in rows
    ]


def _cut_short(text: str, blocks: list[dict], groups: list[dict]) -> list[str]:
    """Errors for blocks missing a figure and for a last number that may be cut."""
    errors = []
    for number, block in enumerate(blocks, 1):
        missing = [name for name in _BLOCK_FIGURES if name not in block["metrics"]]
        if missing:
            errors.append(f"Benchmark block {number} is cut short: no {', '.join(missing)}")
    # mysqlslap ends every output with a newline: a last line without one
    # (part of a CSV line, "Bench", a number) was cut.
    tail = text[text.rfind("\n") + 1 :].strip()
    if tail and (blocks or groups):
        errors.append(ends_mid_number(text) or f"output ends mid-line (cut short?): {tail[-80:]}")
    return errors


def _read_line(line: str, blocks: list[dict], errors: list[str], facts: dict) -> bool:
    """Feed one output line into blocks/errors/facts; False if nothing read it."""
    stripped = line.strip()
    if stripped == "Benchmark":
        blocks.append({"labels": {}, "metrics": {}})
        return True
    # Cheap substring checks first: a CSV line has commas, an error line
    # names the program; most lines are neither.
    csv = _CSV_LINE.match(stripped) if "," in stripped else None
    if csv:
        blocks.append(_csv_block(csv))
        facts.setdefault("load_type", csv.group(2))
        return True
    if "slap" in stripped:  # the program's own lines: errors, [Warning]s
        error = _ERROR_LINE.match(stripped)
        if error:
            errors.append(error.group(1))
        return True
    match = _BLOCK_LINE.match(line)
    if match and blocks:
        _fill(blocks[-1], match)
    elif not match and _is_debug_info(stripped):  # --debug-info's resource usage
        info = facts.setdefault("debug_info", {})
        previous = ""
        for key, value in _DEBUG_PAIR.findall(stripped):
            key = key.strip()
            if key == "out":  # "Blocks in 0 out 0": the out of the in before it
                key = previous.removesuffix(" in") + " out"
            info[key], previous = float(value), key
        return True
    return bool(match)


# --debug-info: "User time 0.02, System time 0.29", "Blocks in 0 out 0, ...".
_DEBUG_PAIR = re.compile(r"([A-Za-z][A-Za-z -]*?) ([0-9]+(?:\.[0-9]+)?)")
_DEBUG_INFO = re.compile(r"(?:[A-Za-z][A-Za-z -]*? [0-9]+(?:\.[0-9]+)?(?:,? |$))+")


# The getrusage() fields --debug-info prints (client/mysqlslap.cc): a line of
# other words and numbers is not debug info, and is warned about as unknown.
_DEBUG_KEYS = {
    "User time",
    "System time",
    "Maximum resident set size",
    "Integral resident set size",
    "Non-physical pagefaults",
    "Physical pagefaults",
    "Swaps",
    "Blocks in",
    "out",
    "Messages in",
    "Signals",
    "Voluntary context switches",
    "Involuntary context switches",
}


def _is_debug_info(line: str) -> bool:
    """A --debug-info line: only the known getrusage() fields, each with its number."""
    if not _DEBUG_INFO.fullmatch(line):
        return False
    return all(key.strip() in _DEBUG_KEYS for key, _ in _DEBUG_PAIR.findall(line))


def _fill(block: dict, match: re.Match) -> None:
    engine, stat, seconds, clients, per_client = match.group(2, 3, 4, 5, 6)
    if engine:
        block["labels"]["engine"] = engine
    elif stat:
        block["metrics"][_STAT[stat]] = float(seconds)
    elif clients:
        block["metrics"]["clients"] = int(clients)
    elif per_client:
        block["metrics"]["queries_per_client"] = int(per_client)


def _csv_block(match: re.Match) -> dict:
    engine, _load, avg, low, high, clients, per_client = match.groups()
    labels = {"engine": engine} if engine else {}
    metrics = {
        "avg_s": float(avg),
        "min_s": float(low),
        "max_s": float(high),
        "clients": int(clients),
        "queries_per_client": int(per_client),
    }
    return {"labels": labels, "metrics": metrics, "open": False}


def _group(block: dict) -> dict:
    """Add concurrency label and qps (only when every input number is there);
    a CSV line is a closed block."""
    metrics = dict(block["metrics"])
    labels = dict(block["labels"])
    if "clients" in metrics:
        labels["concurrency"] = metrics["clients"]
    if {"clients", "queries_per_client", "avg_s"} <= metrics.keys() and metrics["avg_s"] > 0:
        metrics["qps"] = round(
            metrics["clients"] * metrics["queries_per_client"] / metrics["avg_s"], 3
        )
    return {"labels": labels, "metrics": metrics}
