"""The plan check against the worker's limits: which tool runs of a plan
happen on the worker host, and whether their parameters fit its limits
(each tool's LIMITS rows, read by runners.limits.check_params)."""

from __future__ import annotations

from runners.errors import ValidationError
from runners.limits import Limits, check_params
from runners.plan import CellSpec, Plan, expand
from runners.planspec import CELL_TARGET, TargetSpec
from runners.tools import STRESS_TOOL, get_tool


def check_plan_limits(plan: Plan, limits: Limits, cells: list[CellSpec] | None = None) -> None:
    """Refuse a plan whose local tool runs (measured tool, prepare, warmup,
    stress-ng) ask for more than limits; ValidationError naming the limit.
    cells: the plan's expansion, when the caller has it."""
    tool, stress = get_tool(plan.tool), get_tool(STRESS_TOOL)
    seen: set[str] = set()
    for cell in expand(plan) if cells is None else cells:
        if cell.key in seen:
            continue  # a repeat of a combination already checked
        seen.add(cell.key)
        try:
            if tool_runs_here(plan, cell.target):
                for where, params in _phases(plan, cell):
                    check_params(tool, params, limits, where)
            if cell.stress and target_is_here(plan.target(cell.target)):
                check_params(stress, cell.stress, limits, "stress")
        except ValidationError as exc:
            shown = f" (cell {cell.key})" if cell.key else ""
            raise ValidationError(exc.param, exc.message + shown) from None


def _phases(plan: Plan, cell) -> list[tuple[str, dict]]:
    phases = [("params", cell.params)]
    if plan.prepare.enabled and plan.prepare.params:
        phases.append(("prepare.params", {**cell.params, **plan.prepare.params}))
    if plan.warmup:
        phases.append(("warmup", {**cell.params, **plan.warmup}))
    return phases


def target_is_here(target: TargetSpec) -> bool:
    """True when a target's machine is the worker (runners.context.host_ssh gives None)."""
    if target.ssh is not None or target.provision is not None:
        return False
    return target.is_local or (target.kind == "host" and target.host is None)


def tool_runs_here(plan: Plan, target_name: str) -> bool:
    """True when the measured tool of a cell on target_name runs on the worker
    (with several clients: when any of them does)."""
    return any(_client_here(plan, client, target_name) for client in plan.clients)


def _client_here(plan: Plan, client, target_name: str) -> bool:
    if client.kind == "local":
        return True
    if client.kind == "on":
        name = target_name if client.target == CELL_TARGET else client.target
        return target_is_here(plan.target(name))
    return False  # {ssh: ...} or a provisioned client: a host of the team's own
