"""The plain values that cross the runners/benchapp boundary."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Result:
    """What a parser read from one tool output.

    metrics: name -> number for the whole output (metric names: DESIGN.md).
    groups:  [{"labels": {...}, "metrics": {...}}], one per block of output
             (mysqlslap engines/concurrencies, fio jobs); a single-block output
             has one group whose metrics equal `metrics`.
    series:  [{"t": seconds, metric: value, ...}] per-interval values.
    errors:  error lines the tool reported (numbers that are there are kept).
    facts:   tool version and similar.
    """

    metrics: dict[str, float] = field(default_factory=dict)
    groups: list[dict[str, Any]] = field(default_factory=list)
    series: list[dict[str, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
