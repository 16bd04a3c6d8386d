"""A cell loaded from several client hosts (plan key `clients`): each
client's right to the target checked, the measure started on all at once
(runners.together), each client's output read and checked, then their
figures combined (runners.combine).

The first client alone prepares, warms up and cleans up (the data is
shared); only the measure runs on every client. cell_run: the
runners.cell._CellRun of the cell; cell_run.clients lists every client as
(ssh, executor), the first being cell_run.client.
"""

from __future__ import annotations

from runners.cellprofile import start_profiler, stop_profiler
from runners.cellwatch import stop_watch
from runners.combine import UNEVEN_SHARE
from runners.errors import ParseError
from runners.metrics import HIGHER
from runners.phases import (
    CellFailed,
    has_metrics,
    masked,
    missing_blocks,
    phase_failure,
    record_of,
    reported_failure,
)
from runners.plantargets import TargetSpec
from runners.tools import client_params, read_output


def further_client(cell_run, target: TargetSpec, index: int):
    """(ssh, executor) of client index; its machine's right to the target's
    credential is checked again (runners.endpoint) before it connects."""
    ssh = cell_run.ctx.client_ssh_for(target, index)
    cell_run.ctx.endpoint(target, ssh)
    return ssh, cell_run.ctx.executor(ssh)


def check_clients(cell_run, target: TargetSpec) -> None:
    """Every client's own params (the tool's rule against colliding clients)
    within what that client's machine allows."""
    count = cell_run.cell.clients
    if count == 1:
        return
    tool, ctx = cell_run.tool, cell_run.ctx
    check = getattr(tool, "check_scope", None)
    clean = tool.validate(cell_run.cell.params)
    for i in range(1, count + 1):
        params = client_params(tool, clean, i, count)
        if check is not None:
            check(params, ctx.scope(target, ctx.client_ssh_for(target, i - 1)))


def measure_together(cell_run, target: TargetSpec) -> list:
    """The measure on every client, started together (runners.together);
    each client's record is phase "measure:client=<i>"."""
    from runners.facts import CpuSampler
    from runners.together import run_together

    cell_run.on_phase("measure")
    commands = _client_commands(cell_run)
    cell_run.outcome.command = masked(commands[0])
    executors = [executor for _, executor in cell_run.clients]
    samplers = [CpuSampler() for _ in executors]
    for sampler, executor in zip(samplers, executors):
        sampler.start(executor)
    profiler = start_profiler(cell_run, target)  # the server only: several tools, one per client
    try:
        cell_run.mark("measure")
        limit = cell_run.phase_limit("measure")
        runs = run_together(executors, commands, timeout=limit.seconds)
    finally:
        cell_run.mark("measure", end=True)
        stop_profiler(cell_run, profiler)
        busy = [sampler.stop()["client_cpu_busy_pct"] for sampler in samplers]
        stop_watch(cell_run)
    cell_run.outcome.facts["clients_cpu_busy_pct"] = busy
    for executor in dict.fromkeys(executors):  # local clients share one executor
        cell_run.note_limits(executor)
    # The busiest client decides whether the load was limited by a client.
    cell_run.outcome.facts["client_cpu_busy_pct"] = max(busy)
    for run, command in zip(runs, commands):
        if run.execution is not None:
            record = record_of(f"measure:client={run.index}", command, run.execution, limit)
            cell_run.outcome.phases.append(record)
    return runs


def _client_commands(cell_run) -> list:
    """The measure's command of each client, its params its own (client_params)."""
    tool = cell_run.tool
    clean = tool.validate(cell_run.cell.params)
    count = len(cell_run.clients)
    return [
        tool.build(client_params(tool, clean, i, count), cell_run.endpoint, "run")
        for i in range(1, count + 1)
    ]


def collect_together(cell_run, runs: list) -> None:
    """Each client's output read and checked, then the figures combined
    (runners.combine); the first failing client names the cell's error."""
    from runners.combine import combine, overlap_share, start_spread
    from runners.tools import metric

    plan = cell_run.plan
    # A client that failed is the cause; those stopped because of it are not.
    checked = {r.index: _client_result(cell_run, r) for r in sorted(runs, key=lambda r: r.stopped)}
    results = [checked[run.index] for run in runs]
    windows = _client_windows(cell_run, runs, results)
    spread, overlap = start_spread(windows), overlap_share(windows)
    facts = cell_run.outcome.facts
    facts["start_spread_s"] = round(spread, 4)
    facts["overlap_share"] = round(overlap, 4)
    result = combine(
        results,
        [w.start for w in windows],
        lambda name: metric(plan.tool, name),
        weight=getattr(cell_run.tool, "LATENCY_WEIGHT", None),
    )
    cell_run.outcome.result = result
    cell_run.outcome.warnings += result.warnings
    if not has_metrics(result):
        raise CellFailed(f"no {plan.tool} figures combined from the clients' outputs")
    _note_uneven_clients(cell_run, results, result)
    if spread > plan.start_tolerance:
        raise CellFailed(_late_start(cell_run, windows, spread), permanent=True)
    if overlap < plan.min_overlap:
        raise CellFailed(
            f"the clients' measured windows overlap {overlap:.0%} (at least "
            f"{plan.min_overlap:.0%} needed, plan key min_overlap): not counted",
            permanent=True,
        )
    cell_run.outcome.status = "succeeded"


def _client_windows(cell_run, runs: list, results: list) -> list:
    """Each client's measured window on the worker's clock (runners.combine.client_window),
    kept in the cell's facts with the clocks they were read by."""
    from runners.combine import client_window
    from runners.tools import measured_seconds

    plan = cell_run.plan
    # Each client's clock against the worker's, read once per connection.
    offsets = [executor.clock_offset() for _, executor in cell_run.clients]
    timed = [
        client_window(
            r.execution, offset, measured_seconds(plan.tool, cell_run.cell.params, result.metrics)
        )
        for r, result, offset in zip(runs, results, offsets)
    ]
    windows = [window for window, _ in timed]
    facts = cell_run.outcome.facts
    facts["clients"] = len(runs)
    facts["client_windows"] = [[w.start, w.end] for w in windows]
    facts["client_windows_clock"] = [clock for _, clock in timed]
    facts["client_clock_offsets_s"] = [
        None if offset is None else round(offset, 4) for offset in offsets
    ]
    return windows


def _note_uneven_clients(cell_run, results: list, result) -> None:
    """The clients well below the others' median throughput, in the facts and a warning."""
    from runners.combine import uneven_clients
    from runners.tools import metric

    tool = cell_run.plan.tool
    # The first rate where more is better (tps, qps, rps; not errors per second).
    throughput = next(
        (
            n
            for n in result.metrics
            if metric(tool, n).kind == "throughput" and metric(tool, n).judged == HIGHER
        ),
        None,
    )
    if throughput is None:
        return
    slow = uneven_clients([r.metrics[throughput] for r in results])
    cell_run.outcome.facts["uneven_clients"] = slow
    if slow:
        cell_run.outcome.warnings.append(
            f"uneven load: client {', '.join(map(str, slow))} below "
            f"{UNEVEN_SHARE:.0%} of the clients' median {throughput}"
        )


def _late_start(cell_run, windows: list, spread: float) -> str:
    """The error of clients that started too far apart, naming the hosts
    that started first and last."""
    starts = [w.start for w in windows]
    first, last = starts.index(min(starts)), starts.index(max(starts))
    hosts = [getattr(executor, "where", executor.host) for _, executor in cell_run.clients]
    return (
        f"clients started {spread:.2f} s apart (tolerance {cell_run.plan.start_tolerance:g} s): "
        f"client {last + 1} ({hosts[last]}) started {spread:.2f} s after client "
        f"{first + 1} ({hosts[first]}), by their own clocks; not counted"
    )


def _client_result(cell_run, run):
    """One client's parsed Result; CellFailed naming the client if it failed."""
    name = f"client {run.index}"
    if run.stopped:
        raise CellFailed(f"measure on {name} stopped: another client failed")
    if run.error is not None:
        raise CellFailed(f"measure failed on {name}: {run.error.message}")
    execution = run.execution
    phases = cell_run.outcome.phases
    record = next(r for r in phases if r.phase == f"measure:client={run.index}")
    if execution.limit:
        raise CellFailed(f"measure on {name} {execution.limit}", permanent=True)
    if execution.cancelled or execution.timed_out or execution.exit_code != 0:
        raise CellFailed(phase_failure(f"measure on {name}", record), cancelled=execution.cancelled)
    try:
        result = read_output(cell_run.tool, execution.output)
    except ParseError as exc:
        raise CellFailed(f"could not read {name}'s {cell_run.plan.tool} output: {exc}") from None
    errors = result.errors or [
        e for e in [missing_blocks(cell_run.tool, cell_run.cell.params, result)] if e
    ]
    if errors:
        raise CellFailed(reported_failure(f"measure on {name}", record, errors))
    return result
