"""The one estimator of how long a run takes (the builder's preview, the
budget check, the run's ETA and the cost estimate all read it).

A cell takes its tool's own duration (`tool_seconds`, the one place that
knows which parameter that is) plus the harness's per-cell overhead; a tool
with no duration set counts DEFAULT_CELL_SECONDS. Cells of one target run
one after the other, different targets in parallel; a run that provisions
adds PROVISION_SECONDS first.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from runners.plan import Plan as PlanSpec
from runners.plan import expand
from runners.providers.slots import needs_provisioning
from runners.tools import duration_seconds

OVERHEAD_SECONDS = 3.0  # per cell: connect, prepare checks, collect, record
DEFAULT_CELL_SECONDS = 10.0  # a tool run with no duration parameter (mysqlslap)
PROVISION_SECONDS = 900.0  # bringing up cloud targets before the first cell


def tool_seconds(tool: str, params: dict) -> float | None:
    """The tool's own run time from its params (the registry knows which
    parameter holds it), or None when it sets none."""
    try:
        seconds = duration_seconds(tool, params)
    except (KeyError, TypeError, ValueError):
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds <= 0:
        return None
    return float(seconds)


def cell_seconds(tool: str, params: dict) -> float:
    """Expected wall time of one cell: the tool's duration (or the default) plus overhead."""
    return (tool_seconds(tool, params) or DEFAULT_CELL_SECONDS) + OVERHEAD_SECONDS


@dataclass(frozen=True)
class Duration:
    """serial_s: every cell one after the other (what billing counts, an upper
    bound); wall_s: targets in parallel; both include provisioning. known:
    every cell's tool states its own duration."""

    cells: int
    serial_s: float
    wall_s: float
    known: bool


def plan_duration(plan: PlanSpec, cells=None) -> Duration:
    """The duration estimate of a validated plan (cells: its expansion, if at hand)."""
    cells = expand(plan) if cells is None else cells
    per_target: dict[str, float] = defaultdict(float)
    known = True
    for cell in cells:
        known = known and tool_seconds(plan.tool, cell.params) is not None
        per_target[cell.target] += cell_seconds(plan.tool, cell.params)
    setup = PROVISION_SECONDS if needs_provisioning(plan) else 0.0
    return Duration(
        cells=len(cells),
        serial_s=setup + sum(per_target.values()),
        wall_s=setup + max(per_target.values(), default=0.0),
        known=known,
    )
