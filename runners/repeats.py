"""Adaptive repeats: `repeat: {min, max, until_cv, metric}` and its stop rule.

    repeat: 5                                                # every combination 5 times
    repeat: {min: 3, max: 10, until_cv: 0.03, metric: tps}   # until steady

An adaptive combination runs at least `min` times and at most `max`; after
each repeat, once `min` repeats have succeeded, it stops as soon as the
coefficient of variation (sample standard deviation / mean) of `metric`
over its succeeded repeats is at or below `until_cv`. A run expands `max`
cells per combination (the cell limit counts those); the repeats a stopped
combination no longer needs are dropped. Pure functions, no I/O.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from runners.errors import ValidationError
from runners.planspec import Doc

MAX_REPEATS = 1000  # `repeat: N`
MAX_ADAPTIVE = 100  # `repeat: {max: N}`
CV = "cv"  # stopped: the metric was steady enough
MAX = "max"  # stopped: max repeats ran


@dataclass(frozen=True)
class RepeatRule:
    """min..max repeats of a combination, until cv(metric) <= until_cv."""

    min: int
    max: int
    until_cv: float
    metric: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Stop:
    """Why a combination stopped: after `repeats` (how many ran, failed ones
    included), with `succeeded` values whose coefficient of variation is `cv`
    (None with fewer than two values or a mean of zero)."""

    reason: str
    repeats: int
    succeeded: int
    cv: float | None

    def to_dict(self, rule: RepeatRule) -> dict[str, Any]:
        return {**asdict(self), **rule.to_dict(), "summary": self.summary(rule)}

    def summary(self, rule: RepeatRule) -> str:
        """e.g. "3 repeats: cv of tps 1.2% <= 3%" or "10 repeats (max): cv of tps 7.9% > 3%"."""
        cv = "n/a" if self.cv is None else f"{self.cv:.1%}"
        if self.reason == CV:
            return f"{self.repeats} repeats: cv of {rule.metric} {cv} <= {rule.until_cv:.1%}"
        failed = self.repeats - self.succeeded
        tail = f"; {failed} failed" if failed else ""
        return (
            (f"{self.repeats} repeats (max): cv of {rule.metric} {cv} > {rule.until_cv:.1%}{tail}")
            if self.cv is not None
            else (
                f"{self.repeats} repeats (max): {self.succeeded} with a {rule.metric} value{tail}"
            )
        )


def read_repeat(doc: Doc, metric_known) -> tuple[int, RepeatRule | None]:
    """(cells per combination, rule or None) from the plan's `repeat` key.

    metric_known(name) -> bool says whether the tool measures that metric.
    """
    raw = doc.get("repeat")
    if not isinstance(raw, dict):
        return doc.integer("repeat", default=1, lo=1, hi=MAX_REPEATS), None
    spec = Doc(raw, "repeat")
    low = spec.integer("min", required=True, lo=2, hi=MAX_ADAPTIVE)
    high = spec.integer("max", required=True, lo=2, hi=MAX_ADAPTIVE)
    if high < low:
        raise ValidationError("repeat.max", f"{high} is less than min ({low})")
    until = spec.get("until_cv")
    if until is None:
        raise ValidationError("repeat.until_cv", "required")
    if isinstance(until, bool) or not isinstance(until, (int, float)) or not 0 < until < 1:
        raise ValidationError(
            "repeat.until_cv", f"expected a fraction between 0 and 1 (0.03 is 3%), got {until!r}"
        )
    metric = spec.text("metric", required=True)
    if not metric_known(metric):
        raise ValidationError("repeat.metric", f"{metric!r} is not a metric of this tool")
    spec.done()
    return high, RepeatRule(low, high, float(until), metric)


def coefficient_of_variation(values: Sequence[float]) -> float | None:
    """Sample standard deviation / |mean|; None for fewer than two values or a zero mean."""
    if len(values) < 2:
        return None
    mean = statistics.fmean(values)
    if mean == 0:
        return 0.0 if all(v == 0 for v in values) else None
    return statistics.stdev(values) / abs(mean)


def decide(
    rule: RepeatRule, values: Sequence[float], ran: int, left: int | None = None
) -> Stop | None:
    """Whether a combination stops now: values of its succeeded repeats, ran
    repeats in all (failed ones included), left: repeats that may still run
    (default max - ran; fewer when some were cancelled). None: run another."""
    finite = [v for v in values if math.isfinite(v)]
    cv = coefficient_of_variation(finite)
    if len(finite) >= rule.min and cv is not None and cv <= rule.until_cv:
        return Stop(CV, ran, len(finite), cv)
    if ran >= rule.max or left == 0:
        return Stop(MAX, ran, len(finite), cv)
    return None
