"""run_cell: the phases of one cell, from prepare to cleanup.

    prepare   sysbench prepare / pgbench -i (or, with prepare.once, only before
              a target's first cell; with snapshot_datadir, the data directory
              is copied aside after it and restored before every later cell)
    checksum  with snapshot_datadir on mysql: table checksums, equal to the
              snapshot's (else the cell fails)
    warmup    the tool with the plan's warmup params (S4: 16 threads read-only)
    stress    stress-ng started in the background on the target's machine
    measure   the tool, with the client's CPU sampled around it
              (telemetry is sampled from the warmup, or the stress start, or
              the measure, whichever comes first, to the measure's end:
              runners.cellwatch; its summaries read the measured seconds)
    stress    stopped (always, in a finally)
    collect   parse, host facts, db facts, tool version
    cleanup   sysbench cleanup when prepare was per cell (always, in a finally)

Every phase's raw (masked) output is kept in CellOutcome.phases, failed or not.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable

from runners import cellenv, engines, prepared
from runners.combine import UNEVEN_SHARE
from runners.context import CellContext
from runners.errors import ParseError, RunnerError, ValidationError
from runners.metrics import HIGHER
from runners.phases import (
    DEFAULT_LIMITS_S,
    CellOutcome,
    Limit,
    PhaseLimits,
    PhaseRecord,
    check_snapshot,
    has_cleanup,
    has_metrics,
    missing_blocks,
    one_line,
    phase_failure,
    prepare_phase,
    reported_failure,
    snapshot_steps,
    stress_params,
    wants_stress,
)
from runners.plan import CellSpec, Plan
from runners.planspec import TargetSpec
from runners.tools import (
    STRESS_TOOL,
    check_dropped_schemas,
    client_params,
    get_tool,
    read_output,
    tool_phases,
)

OnPhase = Callable[[str], None]
OnOutput = Callable[[str, str, str], None]
# stress-ng's own --timeout when the plan has none: the safety net if stop() never comes.
STRESS_SAFETY_S = 6 * 3600
# Seconds the stress workers get to reach their load before the measure starts.
STRESS_SETTLE_S = 0.5
# Cleanup after a failure or a cancel must not hang the run either: the
# longest a cleanup may take (runners.phases.PhaseLimits).
CLEANUP_TIMEOUT_S = DEFAULT_LIMITS_S["cleanup"]


class CellFailed(Exception):
    """A phase failed; message is the cell's one-line error."""

    def __init__(self, message: str, *, permanent: bool = False, cancelled: bool = False):
        super().__init__(message)
        self.permanent = permanent
        self.cancelled = cancelled


def run_cell(
    plan: Plan,
    cell: CellSpec,
    ctx: CellContext,
    *,
    on_phase: OnPhase | None = None,
    on_output: OnOutput | None = None,
) -> CellOutcome:
    """Run every phase of cell and return its CellOutcome (never raises RunnerError).

    on_phase(name) is called as each phase starts (prepare, restore, snapshot,
    warmup, stress_start, measure, stress_stop, collect, cleanup);
    on_output(phase, stream, chunk) receives masked output as it arrives.
    """
    return _CellRun(plan, cell, ctx, on_phase, on_output).execute()


def wants_final_cleanup(plan: Plan) -> bool:
    """prepare.once with `cleanup: true`: each target's data is dropped after its last cell."""
    return bool(plan.cleanup) and _prepared_once(plan) and "cleanup" in get_tool(plan.tool).PHASES


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
    command = tool.build(_phase_params(plan, tool, {}, params), endpoint, "cleanup")
    limit = PhaseLimits(plan.timeout).of("cleanup")
    execution = executor.run(command, timeout=limit.seconds)
    ctx.prepared.discard(target_name)
    return _record("cleanup", command, execution, limit)


def _prepared_once(plan: Plan) -> bool:
    # Restoring a snapshot replaces preparing again, so it implies once.
    return plan.prepare.once or plan.prepare.snapshot_datadir


def _phase_params(plan: Plan, tool, overrides: dict, base: dict | None = None) -> dict:
    """Validated params for a phase: the cell's (or plan's) with overrides on top."""
    merged = {**(base if base is not None else plan.params), **overrides}
    try:
        return tool.validate(merged)
    except ValidationError as exc:
        raise CellFailed(str(exc), permanent=True) from None


def masked(command) -> str:
    """The command line as it may be kept: each argument masked BEFORE quoting.

    Command.masked() quotes first, so a secret with quotes or spaces (sysbench's
    --mysql-password=...) would survive in its shell-quoted form.
    """
    return shlex.join(command.mask(arg) for arg in command.argv)


def _record(phase: str, command, execution, limit: Limit | None = None) -> PhaseRecord:
    return PhaseRecord(
        phase=phase,
        command=masked(command),
        exit_code=execution.exit_code,
        stdout=execution.stdout,
        stderr=execution.stderr,
        started=execution.started,
        finished=execution.finished,
        timed_out=execution.timed_out,
        cancelled=execution.cancelled,
        limit=limit,
    )


class _CellRun:
    """The state of one run_cell call (kept out of the public function)."""

    def __init__(self, plan, cell, ctx, on_phase, on_output):
        self.plan, self.cell, self.ctx = plan, cell, ctx
        self.tool = get_tool(plan.tool)
        self.on_phase = on_phase or (lambda phase: None)
        self.on_output = on_output
        self.outcome = CellOutcome(status="failed", started=time.time())
        self.limits = PhaseLimits(plan.timeout)
        self.stress = None  # (executor, Background) while stress-ng runs
        self.stress_breach = None  # the sandbox limit stress-ng hit, if any
        self.needs_cleanup = False
        self.watch = None  # the telemetry samplers (runners.cellwatch) while they run
        self.marks: dict[str, list[float]] = {}  # phase -> [start, end] wall clock

    # -- the sequence ------------------------------------------------------

    def execute(self) -> CellOutcome:
        try:
            self._phases()
        except CellFailed as exc:
            self._fail(str(exc), exc.permanent, exc.cancelled)
        except ValidationError as exc:
            # load_plan builds every phase of every cell, so this is a gap
            # in that check: still the cell's own error, not an internal one.
            self._fail(f"refused: {exc}", permanent=True)
        except RunnerError as exc:
            first = not self.outcome.error
            self._fail(exc.message, exc.permanent)
            self.outcome.transient = first and not exc.permanent
            if exc.output:
                self.outcome.warnings.append("partial output: " + one_line(exc.output[-500:]))
        finally:
            self._stop_watch()  # a warmup that failed: its samples, no verdict
            self._stop_stress()
            self._cleanup()
            self.outcome.finished = time.time()
        if self.ctx.cancelled and self.outcome.status != "succeeded":
            # What the cell said before or as it was stopped stays: the phase
            # the cancel stopped and its last output, or the failure before it.
            self.outcome.status = "cancelled"
            self.outcome.error = self.outcome.error or "cancelled"
        return self.outcome

    def _phases(self) -> None:
        target = self.ctx.target(self.cell.target)
        self.client_ssh = self.ctx.client_ssh_for(target)
        self._check_scope(target)
        self.endpoint = self.ctx.endpoint(target, self.client_ssh)
        self.client = self.ctx.executor(self.client_ssh)
        # Every client of the cell as (ssh, executor); the first is self.client,
        # which alone prepares, warms up and cleans up (the data is shared).
        self.clients = [(self.client_ssh, self.client)] + [
            self._further_client(target, i) for i in range(1, self.cell.clients)
        ]
        self._prepare(target)
        self._check_data(target)
        # Before the measure and its samplers: the reads stay off the measured window.
        self.outcome.facts["environment"] = cellenv.gather(self, target)
        self.watch = self._watch(target)
        self._warmup()
        self._start_stress(target)
        self._sample_nodes(target)
        execution, command = self._measure(target)
        self._stop_stress()
        self._collect(target, execution, command)

    def _further_client(self, target: TargetSpec, index: int):
        """(ssh, executor) of client index; its machine's right to the target's
        credential is checked again (runners.endpoint) before it connects."""
        ssh = self.ctx.client_ssh_for(target, index)
        self.ctx.endpoint(target, ssh)
        return ssh, self.ctx.executor(ssh)

    def _check_scope(self, target: TargetSpec) -> None:
        """Refuse, before anything runs, what the trust model does not allow here."""
        scope = self.ctx.scope(target, self.client_ssh)
        check = getattr(self.tool, "check_scope", None)
        # (params, clients): only the measure runs on every client of the cell.
        phases = [(self.cell.params, self.cell.clients)]
        if self.plan.prepare.enabled:
            phases.append(({**self.cell.params, **self.plan.prepare.params}, 1))
        if self.plan.warmup:
            phases.append(({**self.cell.params, **self.plan.warmup}, 1))
        try:
            for params, clients in phases:
                clean = self.tool.validate(params)
                if check is not None:
                    check(clean, scope)
                # The names each client drops, after its suffix, right before
                # the tool starts: whatever the save-time check said.
                check_dropped_schemas(self.tool, clean, clients, target.database, target.name)
            self._check_clients(target)
            if self.plan.prepare.snapshot_datadir:
                check_snapshot(self.plan.prepare, self.ctx.scope(target, self.ctx.host_ssh(target)))
        except ValidationError as exc:
            raise CellFailed(str(exc), permanent=True) from None

    def _check_clients(self, target: TargetSpec) -> None:
        """Every client's own params (the tool's rule against colliding clients)
        within what that client's machine allows."""
        count = self.cell.clients
        if count == 1:
            return
        check = getattr(self.tool, "check_scope", None)
        clean = self.tool.validate(self.cell.params)
        for i in range(1, count + 1):
            params = client_params(self.tool, clean, i, count)
            if check is not None:
                check(params, self.ctx.scope(target, self.ctx.client_ssh_for(target, i - 1)))

    def _fail(self, message: str, permanent: bool = False, cancelled: bool = False) -> None:
        outcome = self.outcome
        if outcome.status == "failed" and outcome.error:
            return  # the first failure is the cause; later ones are consequences
        outcome.status = "cancelled" if cancelled else "failed"
        outcome.error, outcome.permanent = one_line(message), permanent

    # -- running one command -----------------------------------------------

    def _limit(self, phase: str) -> Limit:
        """phase's limit (runners.phases.PhaseLimits); CellFailed when the
        plan's timeout was used up before it."""
        limit = self.limits.of(phase)
        if limit is None:
            raise CellFailed(f"cell timeout of {self.plan.timeout} s reached before {phase}")
        return limit

    def _run(
        self,
        phase: str,
        executor,
        command,
        *,
        check=True,
        limit=None,
        force=False,
        tool=False,
        on_start=None,
    ):
        """Run command as phase within its limit; keep its record; CellFailed
        if check and it failed.

        tool: the command is the benchmark tool's, so an exit 0 whose output
        reports errors (sysbench threads print FATAL: and the process still
        exits 0) is a failure too. force: run even after a cancel (cleanup
        must still drop the tables). limit: default the phase's own.
        """
        if self.ctx.cancelled and not force:
            raise CellFailed(f"cancelled before {phase}", cancelled=True)
        callback = None
        if self.on_output is not None:

            def callback(stream, chunk):
                self.on_output(phase, stream, chunk)

        limit = limit or self._limit(phase)
        try:
            execution = executor.run(
                command, timeout=limit.seconds, on_output=callback, on_start=on_start
            )
        except RunnerError as exc:  # a lost or silent host: say in which phase
            if exc.permanent or exc.message.startswith(phase):
                raise
            raise RunnerError(f"{phase}: {exc.message}", output=exc.output) from exc
        record = _record(phase, command, execution, limit)
        self.outcome.phases.append(record)
        self._note_limits(executor)
        if check and execution.limit:
            raise CellFailed(f"{phase} {execution.limit}", permanent=True)
        if check and (execution.exit_code != 0 or execution.timed_out or execution.cancelled):
            raise CellFailed(phase_failure(phase, record), cancelled=execution.cancelled)
        errors = self._tool_errors(execution.output) if check and tool else []
        if errors:
            raise CellFailed(reported_failure(phase, record, errors))
        return execution

    def _note_limits(self, executor) -> None:
        """Keep what limited the tool (a sandboxed local run) in the cell's facts."""
        applied = getattr(executor, "limits_applied", None)
        if applied:
            self.outcome.facts["limits"] = applied

    def _tool_errors(self, output: str) -> list[str]:
        """The error lines the tool reported in a phase's output ([] if none or unreadable)."""
        try:
            return read_output(self.tool, output).errors
        except ParseError:
            return []

    # -- prepare -----------------------------------------------------------

    def _prepare(self, target: TargetSpec) -> None:
        prep, name = self.plan.prepare, target.name
        params = _phase_params(self.plan, self.tool, prep.params, self.cell.params)
        phase = prepare_phase(self.tool, params) if prep.enabled else None
        lacking = [p for p in self.tool.PHASES if p not in tool_phases(self.tool, params)]
        if lacking:
            # The test has nothing to prepare or drop (sysbench cpu): skipped, said in the facts.
            self.outcome.facts["skipped_phases"] = lacking
        if _prepared_once(self.plan) and name in self.ctx.prepared:
            if prep.snapshot_datadir:
                self._snapshot(target, "restore")
            return
        if phase is not None and self._reuse_earlier_data(target):
            self.ctx.prepared.add(name)
            return
        if phase is not None:
            self.on_phase("prepare")
            command = self.tool.build(params, self.endpoint, phase)
            self.needs_cleanup = not _prepared_once(self.plan) and has_cleanup(
                self.tool, self.tool.validate(self.cell.params)
            )
            try:
                self._run("prepare", self.client, command, tool=True)
            except CellFailed as exc:
                if exc.cancelled and _prepared_once(self.plan):
                    # Half-made data: the run ends, its final cleanup drops it.
                    self.ctx.prepared.add(name)
                raise
        if prep.snapshot_datadir:
            self._snapshot(target, "snapshot")
        if _prepared_once(self.plan):
            self.ctx.prepared.add(name)

    def _reuse_earlier_data(self, target: TargetSpec) -> bool:
        """prepare.once without cleanup: True when an earlier run left the data
        this cell's parameters prepare (recorded in facts["reused_data"]);
        CellFailed when it left other data (runners.prepared)."""
        plan = self.plan
        if not plan.prepare.once or plan.prepare.snapshot_datadir or plan.cleanup:
            return False
        params = _phase_params(plan, self.tool, plan.prepare.params, self.cell.params)
        wanted = prepared.expected(plan.tool, params)
        if wanted is None or target.kind not in engines.TABLE_KINDS:
            return False
        self.on_phase("data_check")
        try:
            limit = self._limit("data_check").seconds
            found = prepared.present(self.client, self.endpoint, wanted, timeout=limit)
        except RunnerError:
            # No count (no client on that host, no rights to read the catalog):
            # the tool prepares as before and names a conflict in its own words.
            return False
        if found == wanted:
            self.outcome.facts["reused_data"] = prepared.describe(found)
            return True
        if found and not prepared.replaces(plan.tool):  # its prepare replaces its own tables
            raise CellFailed(prepared.mismatch(target.name, found, wanted), permanent=True)
        return False

    def _snapshot(self, target: TargetSpec, phase: str) -> None:
        """Save ("snapshot") or restore the datadir on the target's machine."""
        self.on_phase(phase)
        executor = self.ctx.executor(self.ctx.host_ssh(target))
        steps = snapshot_steps(self.plan.prepare, "save" if phase == "snapshot" else "restore")
        stopped = False
        try:
            for step, command in steps:
                if step == "start":
                    continue
                self._run(f"{phase}:{step}", executor, command)
                stopped = stopped or step == "stop"
        finally:
            # The server is started again even when the copy failed.
            for step, command in steps:
                if step == "start" and stopped:
                    limit = self.limits.of(f"{phase}:start")
                    self._run(f"{phase}:start", executor, command, force=True, limit=limit)
        if phase == "snapshot":
            self.ctx.snapshots.add(target.name)

    def _check_data(self, target: TargetSpec) -> None:
        """With a datadir snapshot: the tables' checksums, which must equal
        those taken after the snapshot (the target's first cell)."""
        if not self.plan.prepare.snapshot_datadir or target.kind not in engines.CHECKSUM_KINDS:
            return
        from runners.checksums import differences, table_checksums

        self.on_phase("checksum")
        sums = table_checksums(self.client, self.endpoint, timeout=self._limit("checksum").seconds)
        self.outcome.facts["data_checksums"] = sums
        changed = differences(self.ctx.checksums.setdefault(target.name, sums), sums)
        if changed:
            raise CellFailed("the data differs from the snapshot's: " + "; ".join(changed[:3]))

    # -- warmup, stress, measure -------------------------------------------

    def _warmup(self) -> None:
        if not self.plan.warmup:
            return
        self.on_phase("warmup")
        params = _phase_params(self.plan, self.tool, self.plan.warmup, self.cell.params)
        self._mark("warmup")
        try:
            self._run(
                "warmup", self.client, self.tool.build(params, self.endpoint, "run"), tool=True
            )
        finally:
            self._mark("warmup", end=True)

    def _start_stress(self, target: TargetSpec) -> None:
        if not wants_stress(self.cell.stress):
            return
        self.on_phase("stress_start")
        stress = get_tool(STRESS_TOOL)
        executor = self.ctx.executor(self.ctx.host_ssh(target))
        safety = self.plan.timeout or STRESS_SAFETY_S
        command = stress.build(stress_params(self.cell.stress, safety), None)
        self._mark("stress")
        self.stress = (executor, executor.start(command), command)
        time.sleep(STRESS_SETTLE_S)
        if self.stress[1].done.is_set():
            self._stop_stress()
            record = self.outcome.phases[-1] if self.outcome.phases else None
            ended = phase_failure("stress", record) if record else f"{stress.BINARY} did not start"
            ended = self.stress_breach or ended
            raise CellFailed(f"{stress.BINARY} ended before the measure: {ended}")

    def _stop_stress(self) -> None:
        if self.stress is None:
            return
        executor, background, command = self.stress
        self.stress = None
        self.on_phase("stress_stop")
        self._mark("stress", end=True)
        try:
            execution = executor.stop(background)
        except RunnerError as exc:
            self.outcome.warnings.append(f"stress stop: {exc.message}")
            return
        self.outcome.phases.append(_record("stress", command, execution))
        self.stress_breach = execution.limit and f"stress {execution.limit}"
        try:
            self.outcome.stress_result = read_output(STRESS_TOOL, execution.output)
        except ParseError as exc:
            self.outcome.warnings.append(f"{get_tool(STRESS_TOOL).BINARY} output: {exc}")

    def _sample_nodes(self, target: TargetSpec) -> None:
        """Behind a balancer (via or nodes): the nodes that connections reach, before the measure."""
        engine = engines.find(target.kind)
        if not hasattr(engine, "nodes") or not (target.via or target.nodes):
            return
        try:
            nodes = engine.nodes(self.client, self.endpoint, max(4, 2 * len(target.nodes)))
        except RunnerError as exc:
            self.outcome.facts["db_nodes_error"] = exc.message
        else:
            self.outcome.facts["db_nodes"] = nodes

    def _measure(self, target: TargetSpec):
        from runners.facts import CpuSampler

        if len(self.clients) > 1:
            return self._measure_together(target), None
        self.on_phase("measure")
        command = self.tool.build(self.cell.params, self.endpoint, "run")
        self.outcome.command = masked(command)
        sampler = CpuSampler()
        sampler.start(self.client)
        profiler = self._profiler(target)
        execution = None
        try:
            self._mark("measure")
            attach = profiler.attach_tool if profiler else None
            execution = self._run("measure", self.client, command, check=False, on_start=attach)
        finally:
            self._mark("measure", end=True)
            # A measure that raised (its host lost) keeps its own error: a
            # last CPU sample over the same lost connection would replace it.
            self._stop_profiler(profiler)
            cpu = sampler.stop() if execution is not None else {}
            throttled = execution.cpu_throttled if execution is not None else None
            if throttled is not None:
                self.outcome.facts["client_cpu_throttled"] = throttled
            self._stop_watch(client_throttled=throttled)
        self.outcome.facts.update(cpu)
        return execution, command

    def _profiler(self, target: TargetSpec):
        """The cell's CPU profiler with its server attached (None without profile: true)."""
        if not (self.plan.profile or target.profile):
            return None
        from runners.cellprofile import make_profiler

        profiler = make_profiler(self, target)
        profiler.start_server(self.endpoint.port if self.endpoint else None)
        return profiler

    def _stop_profiler(self, profiler) -> None:
        if profiler is None:
            return
        profiler.stop()
        self.outcome.profiles = profiler.profiles
        self.outcome.warnings += profiler.warnings
        self.outcome.facts["profiles"] = [
            {"role": p.role, "host": p.host, "process": p.process, "samples": p.samples}
            for p in profiler.profiles
        ]

    def _measure_together(self, target: TargetSpec) -> list:
        """The measure on every client, started together (runners.together);
        each client's record is phase "measure:client=<i>"."""
        from runners.facts import CpuSampler
        from runners.together import run_together

        self.on_phase("measure")
        clean = self.tool.validate(self.cell.params)
        count = len(self.clients)
        commands = [
            self.tool.build(client_params(self.tool, clean, i, count), self.endpoint, "run")
            for i in range(1, count + 1)
        ]
        self.outcome.command = masked(commands[0])
        executors = [executor for _, executor in self.clients]
        samplers = [CpuSampler() for _ in executors]
        for sampler, executor in zip(samplers, executors):
            sampler.start(executor)
        profiler = self._profiler(target)  # the server only: several tools, one per client
        try:
            self._mark("measure")
            limit = self._limit("measure")
            runs = run_together(executors, commands, timeout=limit.seconds)
        finally:
            self._mark("measure", end=True)
            self._stop_profiler(profiler)
            busy = [sampler.stop()["client_cpu_busy_pct"] for sampler in samplers]
            self._stop_watch()
        self.outcome.facts["clients_cpu_busy_pct"] = busy
        for executor in dict.fromkeys(executors):  # local clients share one executor
            self._note_limits(executor)
        # The busiest client decides whether the load was limited by a client.
        self.outcome.facts["client_cpu_busy_pct"] = max(busy)
        for run, command in zip(runs, commands):
            if run.execution is not None:
                record = _record(f"measure:client={run.index}", command, run.execution, limit)
                self.outcome.phases.append(record)
        return runs

    def _mark(self, phase: str, end: bool = False) -> None:
        """The wall clock of a phase's start (or end), for the telemetry's timeline."""
        if end:
            if phase in self.marks:
                self.marks[phase][1] = time.time()
        else:
            now = time.time()
            self.marks[phase] = [now, now]

    def _stop_watch(self, client_throttled: float | None = None) -> None:
        """Stop the telemetry samplers (once); keep their series on the
        measure's time axis, the phases' boundaries, and, when the measure
        ran, the summaries and verdict of its seconds."""
        watch, self.watch = self.watch, None
        if watch is None:
            return
        measure = self.marks.get("measure")
        origin = measure[0] if measure else None
        watch.stop(origin)
        self.outcome.telemetry = watch.series
        self.outcome.warnings += watch.warnings
        zero = origin if origin is not None else min(watch.started.values(), default=0.0)
        self.outcome.facts["telemetry_phases"] = phase_times(self.marks, zero)
        if measure:
            measure_s = measure[1] - measure[0]
            self.outcome.facts.update(watch.facts(measure_s, client_throttled=client_throttled))

    def _watch(self, target: TargetSpec):
        """The telemetry samplers of this cell, started (None when turned off)."""
        if not (self.plan.telemetry and target.telemetry):
            return None
        from runners.cellwatch import CellWatch

        more = [executor for _, executor in self.clients[1:]]
        watch = CellWatch(self.ctx, target, self.client, self.client_ssh, self.endpoint, more)
        watch.start()
        return watch

    # -- collect and cleanup -----------------------------------------------

    def _collect(self, target: TargetSpec, execution, command) -> None:
        self.on_phase("collect")
        if command is None:
            self._collect_together(target, execution)
            return
        # The measure's own record: stress-ng's was appended after it when it ran.
        record = next(r for r in reversed(self.outcome.phases) if r.phase == "measure")
        self._gather_facts(target)
        try:
            result = read_output(self.tool, execution.output)
        except ParseError as exc:
            result = None
            parse_error = f"could not read {self.plan.tool} output: {exc}"
        else:
            parse_error = ""
        self.outcome.result = result
        if execution.limit or self.stress_breach:
            # A run cut by a sandbox limit is not the run the plan asked for.
            breach = f"measure {execution.limit}" if execution.limit else self.stress_breach
            raise CellFailed(breach, permanent=True)
        if execution.cancelled or execution.timed_out or execution.exit_code != 0:
            raise CellFailed(phase_failure("measure", record), cancelled=execution.cancelled)
        if result is None:
            raise CellFailed(parse_error)
        if not result.errors and (missing := missing_blocks(self.tool, self.cell.params, result)):
            result.errors.append(missing)
        if result.errors:
            # Numbers beside an error (a cut summary, clients that never
            # connected) are not a measurement: they stay in result, the cell fails.
            raise CellFailed(reported_failure("measure", record, result.errors))
        if not has_metrics(result):
            raise CellFailed(f"no {self.plan.tool} figures in the measure's output")
        self.outcome.status = "succeeded"

    def _collect_together(self, target: TargetSpec, runs: list) -> None:
        """Each client's output read and checked, then the figures combined
        (runners.combine); the first failing client names the cell's error."""
        from runners.combine import (
            client_window,
            combine,
            overlap_share,
            start_spread,
            uneven_clients,
        )
        from runners.tools import measured_seconds, metric

        self._gather_facts(target)
        # A client that failed is the cause; those stopped because of it are not.
        checked = {r.index: self._client_result(r) for r in sorted(runs, key=lambda r: r.stopped)}
        results = [checked[run.index] for run in runs]
        # Each client's clock against the worker's, read once per connection.
        offsets = [executor.clock_offset() for _, executor in self.clients]
        timed = [
            client_window(
                r.execution,
                offset,
                measured_seconds(self.plan.tool, self.cell.params, result.metrics),
            )
            for r, result, offset in zip(runs, results, offsets)
        ]
        windows = [window for window, _ in timed]
        spread, overlap = start_spread(windows), overlap_share(windows)
        facts = self.outcome.facts
        facts["clients"] = len(runs)
        facts["client_windows"] = [[w.start, w.end] for w in windows]
        facts["client_windows_clock"] = [clock for _, clock in timed]
        facts["client_clock_offsets_s"] = [
            None if offset is None else round(offset, 4) for offset in offsets
        ]
        facts["start_spread_s"] = round(spread, 4)
        facts["overlap_share"] = round(overlap, 4)
        result = combine(
            results,
            [w.start for w in windows],
            lambda name: metric(self.plan.tool, name),
            weight=getattr(self.tool, "LATENCY_WEIGHT", None),
        )
        self.outcome.result = result
        self.outcome.warnings += result.warnings
        if not has_metrics(result):
            raise CellFailed(f"no {self.plan.tool} figures combined from the clients' outputs")
        # The first rate where more is better (tps, qps, rps; not errors per second).
        throughput = next(
            (
                n
                for n in result.metrics
                if metric(self.plan.tool, n).kind == "throughput"
                and metric(self.plan.tool, n).judged == HIGHER
            ),
            None,
        )
        if throughput is not None:
            slow = uneven_clients([r.metrics[throughput] for r in results])
            facts["uneven_clients"] = slow
            if slow:
                self.outcome.warnings.append(
                    f"uneven load: client {', '.join(map(str, slow))} below "
                    f"{UNEVEN_SHARE:.0%} of the clients' median {throughput}"
                )
        if spread > self.plan.start_tolerance:
            raise CellFailed(self._late_start(windows, spread), permanent=True)
        if overlap < self.plan.min_overlap:
            raise CellFailed(
                f"the clients' measured windows overlap {overlap:.0%} (at least "
                f"{self.plan.min_overlap:.0%} needed, plan key min_overlap): not counted",
                permanent=True,
            )
        self.outcome.status = "succeeded"

    def _late_start(self, windows: list, spread: float) -> str:
        """The error of clients that started too far apart, naming the hosts
        that started first and last."""
        starts = [w.start for w in windows]
        first, last = starts.index(min(starts)), starts.index(max(starts))
        hosts = [getattr(executor, "where", executor.host) for _, executor in self.clients]
        return (
            f"clients started {spread:.2f} s apart (tolerance {self.plan.start_tolerance:g} s): "
            f"client {last + 1} ({hosts[last]}) started {spread:.2f} s after client "
            f"{first + 1} ({hosts[first]}), by their own clocks; not counted"
        )

    def _client_result(self, run):
        """One client's parsed Result; CellFailed naming the client if it failed."""
        name = f"client {run.index}"
        if run.stopped:
            raise CellFailed(f"measure on {name} stopped: another client failed")
        if run.error is not None:
            raise CellFailed(f"measure failed on {name}: {run.error.message}")
        execution = run.execution
        record = next(r for r in self.outcome.phases if r.phase == f"measure:client={run.index}")
        if execution.limit:
            raise CellFailed(f"measure on {name} {execution.limit}", permanent=True)
        if execution.cancelled or execution.timed_out or execution.exit_code != 0:
            raise CellFailed(
                phase_failure(f"measure on {name}", record), cancelled=execution.cancelled
            )
        try:
            result = read_output(self.tool, execution.output)
        except ParseError as exc:
            raise CellFailed(f"could not read {name}'s {self.plan.tool} output: {exc}") from None
        errors = result.errors or [
            e for e in [missing_blocks(self.tool, self.cell.params, result)] if e
        ]
        if errors:
            raise CellFailed(reported_failure(f"measure on {name}", record, errors))
        return result

    def _gather_facts(self, target: TargetSpec) -> None:
        """Client host facts, db facts and tool version, each once per run."""
        from runners.facts import client_bound, db_facts, host_facts

        ctx, facts = self.ctx, self.outcome.facts
        key = ctx.executor_key(self.client_ssh)
        if key not in ctx.versions:
            ctx.versions[key] = self._tool_version()
        if key not in ctx.host_facts:
            # The tool's version is read once (above), not a second time by host_facts.
            found = _safely(lambda: host_facts(self.client))
            if "tool_versions" in found and ctx.versions[key]:
                found["tool_versions"] = {self.tool.BINARY: ctx.versions[key]}
            ctx.host_facts[key] = found
        if target.kind != "host" and target.name not in ctx.db_facts:
            ctx.db_facts[target.name] = _safely(lambda: db_facts(self.client, self.endpoint))
        facts["client"] = ctx.host_facts[key]
        if target.kind != "host":
            facts["db"] = ctx.db_facts[target.name]
        if len(self.clients) > 1:
            facts["client_hosts"] = [
                self._host_facts(ssh, executor) for ssh, executor in self.clients
            ]
            busy = facts.get("clients_cpu_busy_pct") or []
            facts["clients_bound"] = [i for i, pct in enumerate(busy, 1) if client_bound(pct)]
        # With several clients client_cpu_busy_pct is the busiest's: bound if any was.
        facts["client_bound"] = client_bound(facts.get("client_cpu_busy_pct"))
        self.outcome.tool_version = ctx.versions[key]

    def _host_facts(self, ssh, executor) -> dict:
        """Host facts of one client machine, read once per run."""
        from runners.facts import host_facts

        key = self.ctx.executor_key(ssh)
        if key not in self.ctx.host_facts:
            self.ctx.host_facts[key] = _safely(lambda: host_facts(executor))
        return self.ctx.host_facts[key]

    def _tool_version(self) -> str | None:
        from runners.command import Command

        command = Command(
            argv=self.tool.version_command(), tool=self.tool.NAME, package=self.tool.PACKAGE
        )
        try:
            execution = self.client.run(command, timeout=30)
            return self.tool.parse_version(execution.output) or None
        except (RunnerError, ParseError, ValueError):
            return None

    def _cleanup(self) -> None:
        if not self.needs_cleanup or self.plan.cleanup is False:
            return
        self.needs_cleanup = False
        self.on_phase("cleanup")
        try:
            command = self.tool.build(self.cell.params, self.endpoint, "cleanup")
            execution = self._run(
                "cleanup",
                self.client,
                command,
                check=False,
                limit=self.limits.of("cleanup"),
                force=True,
            )
        except (RunnerError, ValidationError, CellFailed) as exc:
            self.outcome.warnings.append(f"cleanup: {exc}")
            return
        if execution.exit_code != 0:
            problem = phase_failure("cleanup", self.outcome.phases[-1])
            self.outcome.warnings.append(problem)
            if execution.timed_out and self.outcome.error:
                # The cell failed already: its error says the cleanup was stopped too.
                seconds = execution.finished - execution.started
                head, sep, tail = self.outcome.error.partition("; last output: ")
                self.outcome.error = one_line(
                    f"{head}; then cleanup timed out too after {seconds:.0f} s{sep}{tail}"
                )
        elif errors := self._tool_errors(execution.output):
            self.outcome.warnings.append(
                reported_failure("cleanup", self.outcome.phases[-1], errors)
            )


def phase_times(marks: dict[str, list[float]], zero: float) -> list[dict]:
    """[{"phase", "start", "end"}] in seconds from zero (the measure's start),
    in the order the phases started: the cell's facts["telemetry_phases"].
    The stress phase, stopped after the samplers, ends at the measure's end
    when it was still running then."""
    out = []
    for phase, (start, end) in sorted(marks.items(), key=lambda item: item[1][0]):
        if phase == "stress" and end == start and "measure" in marks:
            end = marks["measure"][1]
        out.append({"phase": phase, "start": round(start - zero, 2), "end": round(end - zero, 2)})
    return out


def _safely(read: Callable[[], dict]) -> dict:
    """Facts are context: a host that will not tell must not fail the cell."""
    try:
        return read()
    except RunnerError as exc:
        return {"error": exc.message}
