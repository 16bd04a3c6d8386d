"""sysbench's output header (version, threads, prepare/cleanup progress)
and its error lines (FATAL:/ALERT:), read for sysbench_parse."""

from __future__ import annotations

import re

_VERSION = re.compile(r"^sysbench\s+([0-9][0-9A-Za-z.\-]*?)(?::|\s|$)", re.MULTILINE)
_HEADER_FACTS = [
    (re.compile(r"^Number of threads:\s*([0-9]+)", re.MULTILINE), "threads", int),
    (
        re.compile(r"^Report intermediate results every\s*([0-9]+)", re.MULTILINE),
        "report_interval_s",
        int,
    ),
    (re.compile(r"^Running (simple|mixed) OLTP test", re.MULTILINE), "oltp_test_mode", str),
]
_PROGRESS = [
    (re.compile(r"^Creating table '", re.MULTILINE), "tables_created"),
    (re.compile(r"^Dropping table '", re.MULTILINE), "tables_dropped"),
    (re.compile(r"^Creating file ", re.MULTILINE), "files_created"),
    (re.compile(r"^Removing test files", re.MULTILINE), "files_removed"),
]
_ROWS = re.compile(
    r"^(?:Inserting ([0-9]+) records into|Creating ([0-9]+) records in table) '", re.MULTILINE
)


def header_end(text: str) -> int:
    """The header is everything before the first interval line or 'Threads started!'."""
    for marker in ("\n[", "Threads started!"):
        pos = text.find(marker)
        if pos != -1:
            return pos
    return min(len(text), 200_000)


def read_header(head: str, facts: dict) -> None:
    version = _VERSION.search(head)
    if version:
        facts["version"] = version.group(1)
    for pattern, name, kind in _HEADER_FACTS:
        match = pattern.search(head)
        if match:
            facts[name] = kind(match.group(1))
    for pattern, name in _PROGRESS:
        count = len(pattern.findall(head))
        if count:
            facts[name] = count
    rows = [int(a or b) for a, b in _ROWS.findall(head)]
    if rows:
        facts["rows_inserted"] = sum(rows)


def has_progress(facts: dict) -> bool:
    return any(name in facts for _, name in _PROGRESS) or "rows_inserted" in facts


_MAX_ERRORS = 50


def error_lines(text: str) -> list[str]:
    """Distinct FATAL:/ALERT: lines in order of first appearance (at most 50).

    Each worker thread repeats the same error, so duplicates are dropped.
    """
    found: list[tuple[int, str]] = []
    for marker in ("FATAL:", "ALERT:"):
        pos = 0 if text.startswith(marker) else text.find("\n" + marker)
        while pos != -1:
            start = pos if pos == 0 and text.startswith(marker) else pos + 1
            end = text.find("\n", start)
            found.append((start, text[start : end if end != -1 else len(text)].rstrip()))
            pos = text.find("\n" + marker, start)
    seen: dict[str, None] = {}
    for _, line in sorted(found):
        seen.setdefault(line, None)
    errors = list(seen)
    if len(errors) > _MAX_ERRORS:
        errors = errors[:_MAX_ERRORS] + [
            f"... and {len(errors) - _MAX_ERRORS} more distinct errors"
        ]
    return errors
