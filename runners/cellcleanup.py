"""Dropping the data a cell's prepare made: after the cell itself when
prepare is per cell, after a target's last cell with prepare.once and
`cleanup: true` (benchapp's final cleanup and the command line call
cleanup_target then).

A cleanup runs after a failure or a cancel too, within its own limit, so it
never hangs the run; what goes wrong in it is a warning, never the cell's
failure.
"""

from __future__ import annotations

from runners.context import CellContext
from runners.errors import RunnerError, ValidationError
from runners.phases import (
    DEFAULT_LIMITS_S,
    CellFailed,
    PhaseLimits,
    PhaseRecord,
    has_cleanup,
    one_line,
    phase_failure,
    phase_params,
    prepared_once,
    record_of,
    reported_failure,
)
from runners.plan import Plan
from runners.tools import get_tool

# Cleanup after a failure or a cancel must not hang the run either: the
# longest a cleanup may take (runners.phases.PhaseLimits).
CLEANUP_TIMEOUT_S = DEFAULT_LIMITS_S["cleanup"]


def wants_final_cleanup(plan: Plan) -> bool:
    """prepare.once with `cleanup: true`: each target's data is dropped after its last cell."""
    return bool(plan.cleanup) and prepared_once(plan) and "cleanup" in get_tool(plan.tool).PHASES


def _drops_data(plan: Plan, params: dict) -> bool:
    """Whether these params' test prepared data to drop (sysbench cpu has none)."""
    try:
        return has_cleanup(get_tool(plan.tool), get_tool(plan.tool).validate(params))
    except ValidationError:
        return False


def cleanup_target(
    plan: Plan, target_name: str, ctx: CellContext, params: dict | None = None
) -> PhaseRecord | None:
    """With prepare.once and `cleanup: true`, drop a target's data after its last cell.

    params: the parameters the data was prepared with (e.g. sysbench `tables`),
    default the plan's. None when there is nothing to drop.
    """
    if not wants_final_cleanup(plan) or target_name not in ctx.prepared:
        return None
    if not _drops_data(plan, {**plan.params, **(params or {})}):
        ctx.prepared.discard(target_name)
        return None
    tool = get_tool(plan.tool)
    target = ctx.target(target_name)
    client = ctx.client_ssh_for(target)
    endpoint = ctx.endpoint(target, client)  # checked before the client connects
    executor = ctx.executor(client)
    command = tool.build(phase_params(plan, tool, {}, params), endpoint, "cleanup")
    limit = PhaseLimits(plan.timeout).of("cleanup")
    execution = executor.run(command, timeout=limit.seconds)
    ctx.prepared.discard(target_name)
    return record_of("cleanup", command, execution, limit)


def cleanup_cell(cell_run) -> None:
    """The cell's own cleanup (cell_run: a runners.cell._CellRun) when its prepare
    was per cell: run even after a cancel, its problems kept as warnings."""
    if not cell_run.needs_cleanup or cell_run.plan.cleanup is False:
        return
    cell_run.needs_cleanup = False
    cell_run.on_phase("cleanup")
    try:
        command = cell_run.tool.build(cell_run.cell.params, cell_run.endpoint, "cleanup")
        execution = cell_run.run_phase(
            "cleanup",
            cell_run.client,
            command,
            check=False,
            limit=cell_run.limits.of("cleanup"),
            force=True,
        )
    except (RunnerError, ValidationError, CellFailed) as exc:
        cell_run.outcome.warnings.append(f"cleanup: {exc}")
        return
    if execution.exit_code != 0:
        problem = phase_failure("cleanup", cell_run.outcome.phases[-1])
        cell_run.outcome.warnings.append(problem)
        if execution.timed_out and cell_run.outcome.error:
            # The cell failed already: its error says the cleanup was stopped too.
            seconds = execution.finished - execution.started
            head, sep, tail = cell_run.outcome.error.partition("; last output: ")
            cell_run.outcome.error = one_line(
                f"{head}; then cleanup timed out too after {seconds:.0f} s{sep}{tail}"
            )
    elif errors := cell_run.tool_errors(execution.output):
        cell_run.outcome.warnings.append(
            reported_failure("cleanup", cell_run.outcome.phases[-1], errors)
        )
