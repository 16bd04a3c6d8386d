"""Which machines a cell's CPU profiler may use (runners.profiler), and
the profiler started and stopped around a cell's measure.

The worker host is the operator's: perf runs there only when the operator
set BENCHBOARD_PROFILE_LOCAL (CellContext.profile_local), and then only on
the target's own server and the cell's own tool. A machine reached over SSH
is the team's: its login profiles what it may.
"""

from __future__ import annotations

from runners import engines
from runners.errors import RunnerError
from runners.plantargets import TargetSpec
from runners.profiler import CellProfiler

LOCAL_OFF = (
    "profile: CPU profiles on the worker host are off; the operator allows them "
    "with BENCHBOARD_PROFILE_LOCAL=1 (docs/operations.md)"
)


def make_profiler(cell_run, target: TargetSpec) -> CellProfiler:
    """A CellProfiler for a cell (runners.cell._CellRun) on target, with a
    warning for each machine it may not profile."""
    ctx, warnings = cell_run.ctx, []
    tool = cell_run.client if (cell_run.client_ssh is not None or ctx.profile_local) else None
    if tool is None:
        warnings.append(LOCAL_OFF)
    server = None
    if engines.find(target.kind) is not None:  # a server process (a host is a machine)
        server, why = _server_machine(ctx, target)
        if why and why not in warnings:
            warnings.append(why)
    profiler = CellProfiler({"tool": tool, "server": server})
    profiler.warnings += warnings
    return profiler


def start_profiler(cell_run, target: TargetSpec) -> CellProfiler | None:
    """The cell's CPU profiler with its server attached (None without profile: true)."""
    if not (cell_run.plan.profile or target.profile):
        return None
    profiler = make_profiler(cell_run, target)
    profiler.start_server(cell_run.endpoint.port if cell_run.endpoint else None)
    return profiler


def stop_profiler(cell_run, profiler: CellProfiler | None) -> None:
    """Stop profiler (if any) and keep its profiles and warnings on the cell's outcome."""
    if profiler is None:
        return
    profiler.stop()
    outcome = cell_run.outcome
    outcome.profiles = profiler.profiles
    outcome.warnings += profiler.warnings
    outcome.facts["profiles"] = [
        {"role": p.role, "host": p.host, "process": p.process, "samples": p.samples}
        for p in profiler.profiles
    ]


def _server_machine(ctx, target: TargetSpec):
    """(the executor of the target's server machine or None, why not or "")."""
    try:
        ssh = ctx.host_ssh(target)
    except RunnerError:
        return None, (
            f"profile: the server of {target.name} is not profiled: its machine is not "
            "reachable over SSH (add ssh: to the target)"
        )
    if ssh is None and not ctx.profile_local:
        return None, LOCAL_OFF
    return ctx.executor(ssh), ""
