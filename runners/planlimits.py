"""The plan check against the worker's limits: which tool runs of a plan
happen on the worker host, and whether their parameters fit its limits
(each tool's LIMITS rows, read by runners.limits.check_params).

A cell's local processes share one cgroup (runners/cgroups.py), so what they
ask together counts too: during the measure, the tool's use times the cell's
local clients, plus the background load's when it runs on the worker (processes,
memory and scratch space; `_check_together`). A cell has at most
MAX_LOCAL_CLIENTS clients on the worker."""

from __future__ import annotations

from runners.errors import ValidationError
from runners.limits import KINDS, Limits, check_params, show_amount, uses
from runners.plan import CellSpec, Plan, expand
from runners.plantargets import CELL_TARGET, TargetSpec
from runners.tools import STRESS_TOOL, get_tool

# Local clients of one cell: each is a thread of the worker and a sandbox
# holding a share of one cgroup; more is a typo, not a plan.
MAX_LOCAL_CLIENTS = 16
# The resource kinds the measure's processes use at the same moment.
TOGETHER = ("processes", "memory", "disk")


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
            stressed = bool(cell.stress) and target_is_here(plan.target(cell.target))
            if stressed:
                check_params(stress, cell.stress, limits, "stress")
            clients = local_clients(plan, cell.target, cell.clients)
            if clients > MAX_LOCAL_CLIENTS:
                raise ValidationError(
                    "client",
                    f"{clients} clients on the worker in one cell; at most {MAX_LOCAL_CLIENTS} "
                    "(they share the cell's one set of limits): use fewer, or clients over SSH",
                )
            _check_together(tool, cell.params, clients, cell.stress if stressed else {}, limits)
        except ValidationError as exc:
            shown = f" (cell {cell.key})" if cell.key else ""
            raise ValidationError(exc.param, exc.message + shown) from None


def _check_together(tool, params: dict, clients: int, stress_params: dict, limits: Limits):
    """Refuse a measure whose local processes ask more together than the
    cell's one group allows: the tool's use × its local clients + the stress tool's."""
    stress = get_tool(STRESS_TOOL)
    if clients + bool(stress_params) < 2:
        return  # one process: check_params said it all
    for kind in TOGETHER:
        rows = [
            (f"({asked}) × {clients} local clients" if clients > 1 else asked, amount * clients)
            for asked, amount in uses(tool, params, kind)
        ]
        rows += [(f"stress {asked}", amount) for asked, amount in uses(stress, stress_params, kind)]
        total = sum(amount for _, amount in rows)
        if rows and total > limits.allowed(kind):
            unit, setting = KINDS[kind]
            raise ValidationError(
                "client" if clients > 1 else "stress",
                f"{' + '.join(asked for asked, _ in rows)} = {show_amount(total, unit)} is over the "
                f"worker's limit of {show_amount(limits.allowed(kind), unit)} for one cell's local "
                f"processes together ({setting}; one cgroup holds every local process of a "
                "cell); lower it, use fewer local clients, or run the clients over SSH on your "
                "own hosts",
            )


def local_clients(plan: Plan, target_name: str, count: int) -> int:
    """How many of a cell's first `count` clients run on the worker."""
    return sum(_client_here(plan, c, target_name) for c in plan.clients[:count])


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
