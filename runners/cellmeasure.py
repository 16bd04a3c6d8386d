"""A cell's measure: the tool run on its client with the client's CPU
sampled, the profiler and the telemetry stopped as it ends, then its output
read into the outcome. With several clients, runners.cellclients does both.

cell_run: the runners.cell._CellRun of the cell.
"""

from __future__ import annotations

from runners.cellclients import measure_together
from runners.cellprofile import start_profiler, stop_profiler
from runners.cellwatch import stop_watch
from runners.errors import ParseError
from runners.phases import (
    CellFailed,
    has_metrics,
    masked,
    missing_blocks,
    phase_failure,
    reported_failure,
)
from runners.plantargets import TargetSpec
from runners.tools import read_output


def measure(cell_run, target: TargetSpec):
    """Run the measure: (its Execution, its Command) on one client, (the
    clients' runs, None) on several (runners.cellclients)."""
    from runners.facts import CpuSampler

    if len(cell_run.clients) > 1:
        return measure_together(cell_run, target), None
    cell_run.on_phase("measure")
    command = cell_run.tool.build(cell_run.cell.params, cell_run.endpoint, "run")
    cell_run.outcome.command = masked(command)
    sampler = CpuSampler()
    sampler.start(cell_run.client)
    profiler = start_profiler(cell_run, target)
    execution = None
    try:
        cell_run.mark("measure")
        attach = profiler.attach_tool if profiler else None
        execution = cell_run.run_phase(
            "measure", cell_run.client, command, check=False, on_start=attach
        )
    finally:
        cell_run.mark("measure", end=True)
        # A measure that raised (its host lost) keeps its own error: a
        # last CPU sample over the same lost connection would replace it.
        stop_profiler(cell_run, profiler)
        cpu = sampler.stop() if execution is not None else {}
        throttled = execution.cpu_throttled if execution is not None else None
        if throttled is not None:
            cell_run.outcome.facts["client_cpu_throttled"] = throttled
        stop_watch(cell_run, client_throttled=throttled)
    cell_run.outcome.facts.update(cpu)
    return execution, command


def collect(cell_run, execution, command) -> None:
    """The one client's measure read into the outcome; the cell succeeds
    only when it holds figures and no error."""
    # The measure's own record: stress-ng's was appended after it when it ran.
    record = next(r for r in reversed(cell_run.outcome.phases) if r.phase == "measure")
    try:
        result = read_output(cell_run.tool, execution.output)
    except ParseError as exc:
        result = None
        parse_error = f"could not read {cell_run.plan.tool} output: {exc}"
    else:
        parse_error = ""
    cell_run.outcome.result = result
    if execution.limit or cell_run.stress_breach:
        # A run cut by a sandbox limit is not the run the plan asked for.
        breach = f"measure {execution.limit}" if execution.limit else cell_run.stress_breach
        raise CellFailed(breach, permanent=True)
    if execution.cancelled or execution.timed_out or execution.exit_code != 0:
        raise CellFailed(phase_failure("measure", record), cancelled=execution.cancelled)
    if result is None:
        raise CellFailed(parse_error)
    if not result.errors and (
        missing := missing_blocks(cell_run.tool, cell_run.cell.params, result)
    ):
        result.errors.append(missing)
    if result.errors:
        # Numbers beside an error (a cut summary, clients that never
        # connected) are not a measurement: they stay in result, the cell fails.
        raise CellFailed(reported_failure("measure", record, result.errors))
    if not has_metrics(result):
        raise CellFailed(f"no {cell_run.plan.tool} figures in the measure's output")
    cell_run.outcome.status = "succeeded"
