"""The metric catalog: what each number a parser reports means.

Every tool module declares `METRICS = {name: Metric}` in its registry block;
tables, chart axes, exports and comparison deltas read it through
`metric(tool, name)`, so a unit or a direction is written once, beside the
parser that produces the number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HIGHER = "higher"  # more is better (throughput)
LOWER = "lower"  # less is better (latency, errors)
NEUTRAL = "neutral"  # declared: neither is better (a count fixed by the plan, a run time)
KINDS = ("throughput", "latency", "count", "time", "parameter", "context")
# A copy of a plan parameter the tool prints back (mysqlslap's clients): a
# fact about the cell, never a measurement to alert on.
PARAMETER = "parameter"
# A figure that explains the tool's (a telemetry summary: target CPU busy):
# shown, charted, compared with its direction, but never alerted on by itself
# (the tool's figure is, when it moves).
CONTEXT = "context"


@dataclass(frozen=True)
class Metric:
    """One metric: label, unit ("" for a plain count), direction (HIGHER,
    LOWER, NEUTRAL when neither is better, e.g. a count of transactions the
    plan fixed; None only for a name no catalog declares) and kind
    (throughput, latency, count, time, parameter)."""

    label: str
    unit: str = ""
    direction: str | None = None
    kind: str = "count"

    def title(self) -> str:
        """ "Transactions per second (tps)": a table header or chart axis title."""
        return f"{self.label} ({self.unit})" if self.unit else self.label

    @property
    def judged(self) -> str | None:
        """HIGHER or LOWER when a change can be called better or worse, else
        None (neutral, undeclared, or a parameter): what every judgement of
        better/worse reads (runners.tools.direction)."""
        if self.kind == PARAMETER or self.direction not in (HIGHER, LOWER):
            return None
        return self.direction

    @property
    def measured(self) -> bool:
        """False for a copy of a parameter or a context figure: never alerted on
        as a measurement."""
        return self.kind not in (PARAMETER, CONTEXT)

    def better(self, delta: float) -> bool | None:
        """Whether a change of delta is an improvement (None: no direction)."""
        if self.judged is None or delta == 0:
            return None
        return (delta > 0) == (self.judged == HIGHER)

    def sense(self) -> str:
        """ "higher is better", "lower is better" or "" (for titles and legends)."""
        return f"{self.judged} is better" if self.judged else ""

    def to_dict(self) -> dict:
        return {
            "label": self.label,
            "unit": self.unit,
            "direction": self.judged,
            "kind": self.kind,
            "title": self.title(),
            "sense": self.sense(),
        }


def throughput(label: str, unit: str) -> Metric:
    return Metric(label, unit, HIGHER, "throughput")


def latency(label: str, unit: str = "ms") -> Metric:
    return Metric(label, unit, LOWER, "latency")


def count(label: str, unit: str = "", direction: str = NEUTRAL) -> Metric:
    return Metric(label, unit, direction, "count")


def duration(label: str, unit: str = "s", direction: str = NEUTRAL) -> Metric:
    return Metric(label, unit, direction, "time")


def parameter(label: str, unit: str = "") -> Metric:
    """A plan parameter the tool reports back: shown, never judged."""
    return Metric(label, unit, NEUTRAL, PARAMETER)


# Units that say which way is better on their own, for metrics no catalog
# declares (imported results): a time is better lower, a rate per second higher.
LOWER_UNITS = frozenset(
    "s sec secs second seconds ms msec millisecond milliseconds us usec µs μs "
    "microsecond microseconds ns nsec nanosecond nanoseconds".split()
)
HIGHER_UNITS = frozenset("tps qps rps iops bps kbps mbps gbps".split())
_PER_SECOND = re.compile(r"(/\s*s|/\s*sec|/\s*second|\bper\s*sec(ond)?)$")


def direction_from_unit(unit: str) -> str | None:
    """HIGHER for a rate per second, LOWER for a time, None when the unit
    does not say (%, bytes, a plain count)."""
    text = (unit or "").strip().lower()
    if text in LOWER_UNITS:
        return LOWER
    if text in HIGHER_UNITS or _PER_SECOND.search(text):
        return HIGHER
    return None


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


def lookup(catalog: dict[str, Metric], name: str, unit: str = "") -> Metric:
    """The row of `name` in a tool's catalog (runners.tools.metric(tool, name)
    finds the tool's catalog and calls this).

    A name the catalog does not hold exactly may be a block-prefixed one
    ("vm_bogo_ops_per_s" from a stress-ng run of several stressors,
    "get_rps" from redis-benchmark's GET test): the longest catalogued
    suffix gives its unit and direction, the prefix goes into the label.
    Anything else (an imported result's metric) takes its direction from
    `unit` where the unit says it (direction_from_unit), else none, so no
    delta of an unknown metric is called better or worse on a guess.
    """
    if name in catalog:
        return catalog[name]
    parts = name.split("_")
    for i in range(1, len(parts)):
        found = catalog.get("_".join(parts[i:]))
        if found is not None:
            prefix = " ".join(parts[:i])
            return Metric(f"{prefix} {found.label}", found.unit, found.direction, found.kind)
    return Metric(name, unit, direction_from_unit(unit), "count")
