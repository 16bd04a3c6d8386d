"""The metric catalog: what each number a parser reports means.

Every tool module declares `METRICS = {name: Metric}` in its registry block;
tables, chart axes, exports and comparison deltas read it through
`metric(tool, name)`, so a unit or a direction is written once, beside the
parser that produces the number.
"""

from __future__ import annotations

from dataclasses import dataclass

HIGHER = "higher"  # more is better (throughput)
LOWER = "lower"  # less is better (latency, errors)
KINDS = ("throughput", "latency", "count", "time")


@dataclass(frozen=True)
class Metric:
    """One metric: label, unit ("" for a plain count), direction (HIGHER,
    LOWER, or None when neither is better, e.g. a client count) and kind
    (throughput, latency, count, time)."""

    label: str
    unit: str = ""
    direction: str | None = None
    kind: str = "count"

    def title(self) -> str:
        """ "Transactions per second (tps)": a table header or chart axis title."""
        return f"{self.label} ({self.unit})" if self.unit else self.label

    def better(self, delta: float) -> bool | None:
        """Whether a change of delta is an improvement (None: no direction)."""
        if self.direction is None or delta == 0:
            return None
        return (delta > 0) == (self.direction == HIGHER)

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "unit": self.unit,
            "direction": self.direction,
            "kind": self.kind,
            "title": self.title(),
        }


def throughput(label: str, unit: str) -> Metric:
    return Metric(label, unit, HIGHER, "throughput")


def latency(label: str, unit: str = "ms") -> Metric:
    return Metric(label, unit, LOWER, "latency")


def count(label: str, unit: str = "", direction: str | None = None) -> Metric:
    return Metric(label, unit, direction, "count")


def duration(label: str, unit: str = "s", direction: str | None = None) -> Metric:
    return Metric(label, unit, direction, "time")


def view(rows, columns, metric, chart_x=None, extra_metrics=()) -> dict:
    """A default results view (the pivot settings a tool's DEFAULT_VIEW returns)."""
    rows = list(rows)
    return {
        "rows": rows,
        "columns": list(columns),
        "metric": metric,
        "statistic": "mean",
        "chart_x": chart_x or rows[0],
        "extra_metrics": list(extra_metrics),
    }


def lookup(catalog: dict[str, Metric], name: str) -> Metric:
    """The row of `name` in a tool's catalog (runners.tools.metric(tool, name)
    finds the tool's catalog and calls this).

    A name the catalog does not hold exactly may be a block-prefixed one
    ("vm_bogo_ops_per_s" from a stress-ng run of several stressors,
    "get_rps" from redis-benchmark's GET test): the longest catalogued
    suffix gives its unit and direction, the prefix goes into the label.
    Anything else is a plain number with no direction, so no delta of an
    unknown metric is ever called better or worse.
    """
    if name in catalog:
        return catalog[name]
    parts = name.split("_")
    for i in range(1, len(parts)):
        found = catalog.get("_".join(parts[i:]))
        if found is not None:
            prefix = " ".join(parts[:i])
            return Metric(f"{prefix} {found.label}", found.unit, found.direction, found.kind)
    return Metric(name)
