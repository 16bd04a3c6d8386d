"""The plain values that cross the runners/benchapp boundary."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

# A per-interval series, by column: {"t": [1.0, 2.0], "tps": [638.58, 641.2], ...}.
# Every column has one entry per interval line; None where that line did not
# report the metric. Columns, not one dict per line: a long run's 370,000
# interval lines are then a dozen lists of numbers, not 370,000 dicts.
Series = dict[str, list]


@dataclass
class Result:
    """What a parser read from one tool output.

    metrics: name -> number for the whole output (metric names: DESIGN.md).
    groups:  [{"labels": {...}, "metrics": {...}}], one per block of output
             (mysqlslap engines/concurrencies, fio jobs); a single-block output
             has one group whose metrics equal `metrics`.
    series:  per-interval values by column (see Series above):
             {"t": [seconds, ...], metric: [value or None, ...], ...};
             {} when the output has no interval lines.
    errors:  error lines the tool reported (numbers that are there are kept).
    facts:   tool version and similar.
    warnings: what the parser could not read inside the parts of the output
             that carry figures (a summary block, interval lines, a results
             table): an unknown line or an unknown field in a known line,
             quoted (see line_warning). Never a silently dropped value: a
             figure the tool printed and the parser did not read is named here.
    """

    metrics: dict[str, float] = field(default_factory=dict)
    groups: list[dict[str, Any]] = field(default_factory=list)
    series: Series = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# At most this many warnings per output: a long output of an unknown layout
# would otherwise give one per line. The last one says how many more there were.
MAX_WARNINGS = 20


def line_warning(where: str, line: str, what: str = "line not understood") -> str:
    """'<where>: <what>: <the line, quoted, at most 120 characters>'."""
    shown = line.strip()
    if len(shown) > 120:
        shown = shown[:117] + "..."
    return f"{where}: {what}: {shown!r}"


def cap_warnings(warnings: list[str]) -> list[str]:
    """The first MAX_WARNINGS distinct warnings, and a count of the rest."""
    distinct = list(dict.fromkeys(warnings))
    if len(distinct) <= MAX_WARNINGS:
        return distinct
    more = len(distinct) - MAX_WARNINGS
    return distinct[:MAX_WARNINGS] + [f"... and {more} more lines not understood"]


def rows_to_series(rows: list[dict]) -> Series:
    """Columns for rows read one by one ([{"t": 1.0, "tps": 5.0}, ...]): a
    metric some rows lack is None there; columns in order of first appearance."""
    names = list(dict.fromkeys(name for row in rows for name in row))
    return {name: [row.get(name) for row in rows] for name in names}


def concat_series(parts: list[Series]) -> Series:
    """One series of parts read one after the other (consecutive runs of
    lines); a metric a part lacks is None on its lines."""
    parts = [part for part in parts if part]
    names = list(dict.fromkeys(name for part in parts for name in part))
    series: Series = {name: [] for name in names}
    for part in parts:
        size = len(part["t"])
        for name in names:
            series[name] += part[name] if name in part else [None] * size
    return series


def series_points(series: Series) -> Iterator[tuple[float, str, float]]:
    """(t, metric, value) for every number in the series, metric by metric and
    in time order within each; missing values (None) are skipped."""
    times = series.get("t", [])
    for metric, values in series.items():
        if metric == "t":
            continue
        for t, value in zip(times, values):
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                yield float(t), metric, float(value)
