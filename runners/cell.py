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

This module holds the sequence, the running of one command as a phase, the
data's phases and the facts; the other phases are functions of the cell's
_CellRun in their own modules: runners.cellstress, runners.cellmeasure,
runners.cellclients (a cell loaded from several clients), runners.cellwatch
(telemetry), runners.cellprofile, runners.cellcleanup.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from runners import cellenv, engines, prepared
from runners.cellcleanup import cleanup_cell
from runners.cellclients import check_clients, collect_together, further_client
from runners.cellmeasure import collect, measure
from runners.cellstress import start_stress, stop_stress
from runners.cellwatch import start_watch, stop_watch
from runners.context import CellContext
from runners.errors import ParseError, RunnerError, ValidationError
from runners.phases import (
    CellFailed,
    CellOutcome,
    Limit,
    PhaseLimits,
    check_snapshot,
    has_cleanup,
    one_line,
    phase_failure,
    phase_params,
    prepare_phase,
    prepared_once,
    record_of,
    reported_failure,
    snapshot_steps,
)
from runners.plan import CellSpec, Plan
from runners.plantargets import TargetSpec
from runners.tools import check_dropped_schemas, get_tool, read_output, tool_phases

OnPhase = Callable[[str], None]
OnOutput = Callable[[str, str, str], None]


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


class _CellRun:
    """The state of one run_cell call (kept out of the public function).

    The phase modules read its attributes and call run_phase, phase_limit,
    mark, note_limits and tool_errors.
    """

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
            stop_watch(self)  # a warmup that failed: its samples, no verdict
            stop_stress(self)
            cleanup_cell(self)
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
            further_client(self, target, i) for i in range(1, self.cell.clients)
        ]
        self._prepare(target)
        self._check_data(target)
        # Before the measure and its samplers: the reads stay off the measured window.
        self.outcome.facts["environment"] = cellenv.gather(self, target)
        self.watch = start_watch(self, target)
        self._warmup()
        start_stress(self, target)
        self._sample_nodes(target)
        execution, command = measure(self, target)
        stop_stress(self)
        self._collect(target, execution, command)

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
            check_clients(self, target)
            if self.plan.prepare.snapshot_datadir:
                check_snapshot(self.plan.prepare, self.ctx.scope(target, self.ctx.host_ssh(target)))
        except ValidationError as exc:
            raise CellFailed(str(exc), permanent=True) from None

    def _fail(self, message: str, permanent: bool = False, cancelled: bool = False) -> None:
        outcome = self.outcome
        if outcome.status == "failed" and outcome.error:
            return  # the first failure is the cause; later ones are consequences
        outcome.status = "cancelled" if cancelled else "failed"
        outcome.error, outcome.permanent = one_line(message), permanent

    # -- running one command -----------------------------------------------

    def phase_limit(self, phase: str) -> Limit:
        """phase's limit (runners.phases.PhaseLimits); CellFailed when the
        plan's timeout was used up before it."""
        limit = self.limits.of(phase)
        if limit is None:
            raise CellFailed(f"cell timeout of {self.plan.timeout} s reached before {phase}")
        return limit

    def run_phase(
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

        limit = limit or self.phase_limit(phase)
        try:
            execution = executor.run(
                command, timeout=limit.seconds, on_output=callback, on_start=on_start
            )
        except RunnerError as exc:  # a lost or silent host: say in which phase
            if exc.permanent or exc.message.startswith(phase):
                raise
            raise RunnerError(f"{phase}: {exc.message}", output=exc.output) from exc
        record = record_of(phase, command, execution, limit)
        self.outcome.phases.append(record)
        self.note_limits(executor)
        if check:
            self._check(record, execution, tool)
        return execution

    def _check(self, record, execution, tool: bool) -> None:
        """CellFailed when the phase hit a sandbox limit, failed, timed out or
        was cancelled, or (tool) its output reports errors."""
        phase = record.phase
        if execution.limit:
            raise CellFailed(f"{phase} {execution.limit}", permanent=True)
        if execution.exit_code != 0 or execution.timed_out or execution.cancelled:
            raise CellFailed(phase_failure(phase, record), cancelled=execution.cancelled)
        errors = self.tool_errors(execution.output) if tool else []
        if errors:
            raise CellFailed(reported_failure(phase, record, errors))

    def note_limits(self, executor) -> None:
        """Keep what limited the tool (a sandboxed local run) in the cell's facts."""
        applied = getattr(executor, "limits_applied", None)
        if applied:
            self.outcome.facts["limits"] = applied

    def tool_errors(self, output: str) -> list[str]:
        """The error lines the tool reported in a phase's output ([] if none or unreadable)."""
        try:
            return read_output(self.tool, output).errors
        except ParseError:
            return []

    # -- prepare -----------------------------------------------------------

    def _prepare(self, target: TargetSpec) -> None:
        prep, name = self.plan.prepare, target.name
        params = phase_params(self.plan, self.tool, prep.params, self.cell.params)
        phase = prepare_phase(self.tool, params) if prep.enabled else None
        lacking = [p for p in self.tool.PHASES if p not in tool_phases(self.tool, params)]
        if lacking:
            # The test has nothing to prepare or drop (sysbench cpu): skipped, said in the facts.
            self.outcome.facts["skipped_phases"] = lacking
        if prepared_once(self.plan) and name in self.ctx.prepared:
            if prep.snapshot_datadir:
                self._snapshot(target, "restore")
            return
        if phase is not None and self._reuse_earlier_data(target):
            self.ctx.prepared.add(name)
            return
        if phase is not None:
            self.on_phase("prepare")
            command = self.tool.build(params, self.endpoint, phase)
            self.needs_cleanup = not prepared_once(self.plan) and has_cleanup(
                self.tool, self.tool.validate(self.cell.params)
            )
            try:
                self.run_phase("prepare", self.client, command, tool=True)
            except CellFailed as exc:
                if exc.cancelled and prepared_once(self.plan):
                    # Half-made data: the run ends, its final cleanup drops it.
                    self.ctx.prepared.add(name)
                raise
        if prep.snapshot_datadir:
            self._snapshot(target, "snapshot")
        if prepared_once(self.plan):
            self.ctx.prepared.add(name)

    def _reuse_earlier_data(self, target: TargetSpec) -> bool:
        """prepare.once without cleanup: True when an earlier run left the data
        this cell's parameters prepare (recorded in facts["reused_data"]);
        CellFailed when it left other data (runners.prepared)."""
        plan = self.plan
        if not plan.prepare.once or plan.prepare.snapshot_datadir or plan.cleanup:
            return False
        params = phase_params(plan, self.tool, plan.prepare.params, self.cell.params)
        wanted = prepared.expected(plan.tool, params)
        if wanted is None or target.kind not in engines.TABLE_KINDS:
            return False
        self.on_phase("data_check")
        try:
            limit = self.phase_limit("data_check").seconds
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
                self.run_phase(f"{phase}:{step}", executor, command)
                stopped = stopped or step == "stop"
        finally:
            # The server is started again even when the copy failed.
            for step, command in steps:
                if step == "start" and stopped:
                    limit = self.limits.of(f"{phase}:start")
                    self.run_phase(f"{phase}:start", executor, command, force=True, limit=limit)
        if phase == "snapshot":
            self.ctx.snapshots.add(target.name)

    def _check_data(self, target: TargetSpec) -> None:
        """With a datadir snapshot: the tables' checksums, which must equal
        those taken after the snapshot (the target's first cell)."""
        if not self.plan.prepare.snapshot_datadir or target.kind not in engines.CHECKSUM_KINDS:
            return
        from runners.checksums import differences, table_checksums

        self.on_phase("checksum")
        sums = table_checksums(
            self.client, self.endpoint, timeout=self.phase_limit("checksum").seconds
        )
        self.outcome.facts["data_checksums"] = sums
        changed = differences(self.ctx.checksums.setdefault(target.name, sums), sums)
        if changed:
            raise CellFailed("the data differs from the snapshot's: " + "; ".join(changed[:3]))

    # -- warmup, stress, measure -------------------------------------------

    def _warmup(self) -> None:
        if not self.plan.warmup:
            return
        self.on_phase("warmup")
        params = phase_params(self.plan, self.tool, self.plan.warmup, self.cell.params)
        self.mark("warmup")
        try:
            self.run_phase(
                "warmup", self.client, self.tool.build(params, self.endpoint, "run"), tool=True
            )
        finally:
            self.mark("warmup", end=True)

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

    def mark(self, phase: str, end: bool = False) -> None:
        """The wall clock of a phase's start (or end), for the telemetry's timeline."""
        if end:
            if phase in self.marks:
                self.marks[phase][1] = time.time()
        else:
            now = time.time()
            self.marks[phase] = [now, now]

    # -- collect and cleanup -----------------------------------------------

    def _collect(self, target: TargetSpec, execution, command) -> None:
        """The measure's output read into the outcome (one client's or several
        clients'), after the facts."""
        self.on_phase("collect")
        self._gather_facts(target)
        if command is None:
            collect_together(self, execution)
        else:
            collect(self, execution, command)

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


def _safely(read: Callable[[], dict]) -> dict:
    """Facts are context: a host that will not tell must not fail the cell."""
    try:
        return read()
    except RunnerError as exc:
        return {"error": exc.message}
