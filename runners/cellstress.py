"""A cell's stress: stress-ng started in the background on the target's
machine before the measure, stopped after it (always: run_cell stops it in
a finally), its output kept as the cell's stress_result.

cell_run: the runners.cell._CellRun of the cell; cell_run.stress holds
(executor, Background, command) while stress-ng runs.
"""

from __future__ import annotations

import time

from runners.errors import ParseError, RunnerError
from runners.phases import CellFailed, phase_failure, record_of, stress_params, wants_stress
from runners.plantargets import TargetSpec
from runners.tools import STRESS_TOOL, get_tool, read_output

# stress-ng's own --timeout when the plan has none: the safety net if stop() never comes.
STRESS_SAFETY_S = 6 * 3600
# Seconds the stress workers get to reach their load before the measure starts.
STRESS_SETTLE_S = 0.5


def start_stress(cell_run, target: TargetSpec) -> None:
    """Start the cell's stress, if it has one; CellFailed when it ended before the measure."""
    if not wants_stress(cell_run.cell.stress):
        return
    cell_run.on_phase("stress_start")
    stress = get_tool(STRESS_TOOL)
    executor = cell_run.ctx.executor(cell_run.ctx.host_ssh(target))
    safety = cell_run.plan.timeout or STRESS_SAFETY_S
    command = stress.build(stress_params(cell_run.cell.stress, safety), None)
    cell_run.mark("stress")
    cell_run.stress = (executor, executor.start(command), command)
    time.sleep(STRESS_SETTLE_S)
    if cell_run.stress[1].done.is_set():
        stop_stress(cell_run)
        record = cell_run.outcome.phases[-1] if cell_run.outcome.phases else None
        ended = phase_failure("stress", record) if record else f"{stress.BINARY} did not start"
        ended = cell_run.stress_breach or ended
        raise CellFailed(f"{stress.BINARY} ended before the measure: {ended}")


def stop_stress(cell_run) -> None:
    """Stop the stress if it runs (once); keep its record, its breach and its result."""
    if cell_run.stress is None:
        return
    executor, background, command = cell_run.stress
    cell_run.stress = None
    cell_run.on_phase("stress_stop")
    cell_run.mark("stress", end=True)
    try:
        execution = executor.stop(background)
    except RunnerError as exc:
        cell_run.outcome.warnings.append(f"stress stop: {exc.message}")
        return
    cell_run.outcome.phases.append(record_of("stress", command, execution))
    cell_run.stress_breach = execution.limit and f"stress {execution.limit}"
    try:
        cell_run.outcome.stress_result = read_output(STRESS_TOOL, execution.output)
    except ParseError as exc:
        cell_run.outcome.warnings.append(f"{get_tool(STRESS_TOOL).BINARY} output: {exc}")
