"""Pieces of a cell's phases that need no state: records, errors, snapshots, stress.

runners/cell.py strings them together; everything here is a small pure
function or a dataclass, so it reads (and tests) on its own.
"""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass, field
from typing import Any

from runners.command import Command, Endpoint
from runners.errors import ValidationError
from runners.params import checked
from runners.planspec import PrepareSpec
from runners.plantargets import TargetSpec
from runners.results import Result
from runners.sandbox import Scope
from runners.tools import client_params, tool_phases

# Lines that name the cause of a failure, most specific first: a server error
# code or an access/connection message beats a generic "FATAL: ... aborting".
_CAUSE = re.compile(
    r"Access denied|Unknown database|Can't connect|could not connect|"
    r"password authentication failed|\berror\s*:?\s*\d{3,5}\b|\bErr\d+|"
    r"No such file|Permission denied|not installed|does not exist|timed out",
    re.IGNORECASE,
)
_ERRORISH = re.compile(r"FATAL|\berror\b|\bfailed\b|\bcannot\b|\bcan't\b", re.IGNORECASE)
MAX_ERROR = 300

# Each phase's limit in seconds when the plan sets no `timeout`
# (docs/plan-reference.md, "phase limits"). Whatever a phase waits on (a
# server that never answers, a port that speaks another protocol) it is
# stopped here, so one broken target never holds a worker host for hours.
DEFAULT_LIMITS_S = {
    "prepare": 3600,
    "data_check": 600,
    "snapshot": 3600,
    "restore": 3600,
    "checksum": 600,
    "warmup": 3600,
    "measure": 6 * 3600,
    "cleanup": 600,
}
# The phases that tidy up after the others (and run after a failure or a
# cancel): each gets the plan's whole `timeout` on its own (at most its
# default), never what the phases before it left of it.
TIDY_PHASES = ("cleanup", "snapshot:start", "restore:start")


@dataclass(frozen=True)
class Limit:
    """How long one phase may run, and where that figure comes from (for its error)."""

    seconds: float
    why: str


class PhaseLimits:
    """The limit of each phase of one cell.

    With the plan's `timeout: N` the phases from prepare to the measure share
    N seconds (each gets what is left), and each tidy-up phase (cleanup, the
    server's start after a copy) gets N seconds of its own, at most its
    default. Without it each phase has its DEFAULT_LIMITS_S entry.
    """

    def __init__(self, timeout: int | None):
        self.timeout = timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout

    def of(self, phase: str) -> Limit | None:
        """phase's limit; None when the shared timeout is already used up."""
        base = phase.split(":", 1)[0]
        if self.timeout is None:
            seconds = DEFAULT_LIMITS_S.get(base, DEFAULT_LIMITS_S["measure"])
            return Limit(seconds, f"its default limit of {seconds:g} s")
        if phase in TIDY_PHASES or base == "cleanup":
            default = DEFAULT_LIMITS_S.get(base, DEFAULT_LIMITS_S["cleanup"])
            if default < self.timeout:
                return Limit(default, f"its default limit of {default:g} s")
            return Limit(self.timeout, f"the plan's timeout of {self.timeout:g} s")
        left = self.deadline - time.monotonic()
        if left <= 0:
            return None
        return Limit(left, f"the plan's timeout of {self.timeout:g} s")


@dataclass
class PhaseRecord:
    """One phase as it ran: masked command line, exit code, whole masked output."""

    phase: str
    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    started: float
    finished: float
    timed_out: bool = False
    cancelled: bool = False
    limit: Limit | None = None  # the limit the phase ran under


@dataclass
class CellOutcome:
    """What running one cell produced; see run_cell.

    status: "succeeded" | "failed" | "cancelled"; error: one line or "";
    permanent: the failure will not go away by retrying (auth, missing
    binary, invalid params); transient: it came from the environment
    (connection reset, timeout, cloud capacity: a RunnerError that is not
    permanent) and may go away, so orchestration retries it; a tool that
    ran and failed is neither; warnings: problems that did not fail the cell
    (e.g. a cleanup that failed after a good measurement).
    """

    status: str
    error: str = ""
    permanent: bool = False
    transient: bool = False
    result: Result | None = None
    stress_result: Result | None = None
    phases: list[PhaseRecord] = field(default_factory=list)
    command: str = ""
    tool_version: str | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # Per-second telemetry of the measure, by source ("client", "target",
    # "host", "db"): columnar series (runners.cellwatch).
    telemetry: dict[str, Any] = field(default_factory=dict)
    # CPU profiles of the measure (runners.profiler.Profile), with profile: true.
    profiles: list[Any] = field(default_factory=list)
    started: float = 0.0
    finished: float = 0.0

    @property
    def duration(self) -> float:
        return self.finished - self.started


class CellFailed(Exception):
    """A phase failed; message is the cell's one-line error."""

    def __init__(self, message: str, *, permanent: bool = False, cancelled: bool = False):
        super().__init__(message)
        self.permanent = permanent
        self.cancelled = cancelled


def masked(command) -> str:
    """The command line as it may be kept: each argument masked BEFORE quoting.

    Command.masked() quotes first, so a secret with quotes or spaces (sysbench's
    --mysql-password=...) would survive in its shell-quoted form.
    """
    return shlex.join(command.mask(arg) for arg in command.argv)


def record_of(phase: str, command, execution, limit: Limit | None = None) -> PhaseRecord:
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


def one_line(text: str) -> str:
    """text squeezed onto one line of at most MAX_ERROR characters."""
    line = " ".join(text.split())
    return line if len(line) <= MAX_ERROR else line[: MAX_ERROR - 3] + "..."


def error_line(output: str) -> str:
    """The line of a tool's output that best says why it failed ("" if none).

    e.g. from sysbench
        FATAL: unable to connect to MySQL server on host '127.0.0.1', port 3306, aborting...
        FATAL: error 1045: Access denied for user 'bench'@'localhost' (using password: YES)
    the second line is returned.
    """
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for pattern in (_CAUSE, _ERRORISH):
        for line in lines:
            if pattern.search(line):
                return one_line(line)
    return one_line(lines[-1]) if lines else ""


def phase_failure(phase: str, record: PhaseRecord) -> str:
    """The one-line error of a phase that ended badly.

    A phase stopped by its limit or a cancel names how long it ran, the
    limit, and the tool's last words ("measure timed out after 20 s (the
    plan's timeout of 20 s); last output: ..."): the whole output stays in
    the phase's record.
    """
    seconds = record.finished - record.started
    if record.cancelled:
        return f"{phase} cancelled after {seconds:.0f} s; {last_output(record)}"
    if record.timed_out:
        why = f" ({record.limit.why})" if record.limit else ""
        return f"{phase} timed out after {seconds:.0f} s{why}; {last_output(record)}"
    cause = error_line(record.stderr + "\n" + record.stdout) or "no output"
    return failed(phase, record.exit_code, cause)


def last_output(record: PhaseRecord) -> str:
    """ "last output: <the line that best says what the tool was doing>", or
    "no output" when it printed nothing."""
    line = error_line(record.stderr + "\n" + record.stdout)
    return f"last output: {line}" if line else "no output"


def reported_failure(phase: str, record: PhaseRecord, errors: list[str]) -> str:
    """The one-line error of a phase that exited 0 but whose tool reported
    errors (a sysbench prepare whose threads print FATAL: and still exit 0)."""
    cause = error_line("\n".join(errors)) or "no error line"
    return failed(phase, record.exit_code, cause)


def failed(phase: str, exit_code: int | None, cause: str) -> str:
    """ "prepare failed (exit 1): …", or "prepare reported an error: …" when
    the tool exited 0: "exit 0" never stands next to a failure."""
    if exit_code is None:
        return f"{phase} failed: {cause}"
    if exit_code:
        return f"{phase} failed (exit {exit_code}): {cause}"
    return f"{phase} reported an error: {cause}"


def missing_blocks(tool, params: dict, result: Result) -> str:
    """An error when the output holds fewer result blocks than the params ask
    for (tools with expected_groups: a cut between two whole blocks leaves no
    trace in the text itself), else ""."""
    expected = getattr(tool, "expected_groups", None)
    want = expected(params) if expected is not None else 0
    got = len(result.groups)
    if got < want:
        return f"{got} of the {want} result blocks the params ask for: output cut short"
    return ""


def has_metrics(result: Result) -> bool:
    """True when the parser found any number at all."""
    return bool(result.metrics) or any(g.get("metrics") for g in result.groups)


# ---------------------------------------------------------------- the tool's phases


def prepare_phase(tool, clean: dict) -> str | None:
    """The phase that creates the test data for these params, if the tool
    (and its test: sysbench cpu has none) has one."""
    phases = tool_phases(tool, clean)
    return next((p for p in ("prepare", "init") if p in phases), None)


def has_cleanup(tool, clean: dict) -> bool:
    """Whether these params' test has data to drop afterwards."""
    return "cleanup" in tool_phases(tool, clean)


def prepared_once(plan) -> bool:
    """Whether plan (a runners.plan.Plan) prepares each target's data only before its first cell."""
    # Restoring a snapshot replaces preparing again, so it implies once.
    return plan.prepare.once or plan.prepare.snapshot_datadir


def phase_params(plan, tool, overrides: dict, base: dict | None = None) -> dict:
    """Validated params for a phase: the cell's (or plan's) with overrides on top."""
    merged = {**(base if base is not None else plan.params), **overrides}
    try:
        return tool.validate(merged)
    except ValidationError as exc:
        raise CellFailed(str(exc), permanent=True) from None


@dataclass(frozen=True)
class ToolStep:
    """One command of the tool that a cell runs: the cell's phase name, the
    tool's phase, and the params it is built with."""

    phase: str
    tool_phase: str
    params: dict[str, Any]


def tool_steps(
    tool,
    params: dict,
    *,
    prepare: PrepareSpec,
    warmup: dict | None = None,
    cleanup: bool | None = None,
    clients: int = 1,
) -> list[ToolStep]:
    """Every tool command a cell with these params builds, in order.

    A phase the test does not have (sysbench cpu's prepare) is skipped, not
    built: runners.cell runs exactly these, and load_plan builds each of
    them for every combination, so what validates also builds.
    ValidationError when the params (or prepare/warmup params over them) are refused.
    Checked params (runners.params.Checked) are not validated again.
    """
    clean = checked(params, tool.validate)
    steps = []
    if prepare.enabled:
        # Without prepare params the prepare phase builds the cell's own.
        prepared = tool.validate({**params, **prepare.params}) if prepare.params else clean
        phase = prepare_phase(tool, prepared)
        if phase is not None:
            steps.append(ToolStep("prepare", phase, prepared))
    if warmup:
        steps.append(ToolStep("warmup", "run", tool.validate({**params, **warmup})))
    for index in range(1, clients + 1):
        name = "measure" if clients == 1 else f"measure:client={index}"
        steps.append(ToolStep(name, "run", client_params(tool, clean, index, clients)))
    if cleanup is not False and has_cleanup(tool, clean):
        steps.append(ToolStep("cleanup", "cleanup", clean))
    return steps


def placeholder_endpoint(target: TargetSpec) -> Endpoint:
    """The Endpoint a cell of target builds its commands for, without its
    password (never needed to build): for checking a plan before it runs."""
    return Endpoint(
        kind=target.kind,
        host=target.connect_via or target.host,
        port=target.port if target.kind != "host" else None,
        user=target.user,
        database=target.database,
        socket=target.socket,
    )


# ---------------------------------------------------------------- snapshots


def service_command(prepare: PrepareSpec, action: str) -> Command | None:
    """The command that stops/starts the database server, or None (manager none)."""
    if prepare.service_manager == "systemctl":
        argv = ["systemctl", action, prepare.service]
    elif prepare.service_manager == "service":
        argv = ["service", prepare.service, action]
    elif prepare.service_manager == "command":
        argv = list(prepare.stop_command if action == "stop" else prepare.start_command)
        return Command(argv=argv, tool="service", package="", sandbox=False)
    else:
        return None
    return Command(argv=argv, tool="service", package="systemd", sandbox=False)


def copy_command(prepare: PrepareSpec, direction: str) -> Command:
    """rsync the data directory to its snapshot ("save") or back ("restore").

    rsync -a keeps owners, modes and times (the server refuses files it does
    not own); --delete makes the destination an exact copy, so files the run
    created (new binlogs, temp tables) disappear on restore.
    """
    datadir = prepare.datadir.rstrip("/") + "/"
    snapshot = prepare.snapshot_path.rstrip("/") + "/"
    source, dest = (datadir, snapshot) if direction == "save" else (snapshot, datadir)
    return Command(
        argv=["rsync", "-a", "--delete", source, dest], tool="rsync", package="rsync", sandbox=False
    )


def check_snapshot(prepare: PrepareSpec, scope: Scope) -> None:
    """Refuse snapshot/restore (rsync --delete, service stop/start) outside scope;
    with a path scope, both directories must lie in the target's data directories."""
    if not prepare.snapshot_datadir:
        return
    scope.refuse(
        "prepare.snapshot_datadir",
        "a data-directory snapshot (rsync --delete and service stop/start)",
    )
    if scope.paths is not None:
        for key, path in (("datadir", prepare.datadir), ("snapshot_dir", prepare.snapshot_path)):
            if not path.startswith("/"):
                raise ValidationError(f"prepare.{key}", "expected an absolute path")
            scope.check_path(f"prepare.{key}", path)


def snapshot_steps(prepare: PrepareSpec, direction: str) -> list[tuple[str, Command]]:
    """(step name, Command) to save or restore the datadir with the server stopped."""
    stop = service_command(prepare, "stop")
    start = service_command(prepare, "start")
    steps = [("stop", stop)] if stop else []
    steps.append(("copy", copy_command(prepare, direction)))
    if start:
        steps.append(("start", start))
    return steps


# ---------------------------------------------------------------- stress


def stress_params(stress: dict[str, Any], timeout: int) -> dict[str, Any]:
    """stress-ng params for a cell's stress setting; timeout is the safety net."""
    params = {"cpu": stress["cpu"], "cpu_load": stress.get("cpu_load", 100), "timeout": timeout}
    if stress.get("taskset"):
        params["taskset"] = stress["taskset"]
    return params


def wants_stress(stress: dict[str, Any] | None) -> bool:
    """stress-ng reads --cpu 0 as "all CPUs": zero cores means do not start it."""
    return bool(stress) and stress.get("cpu", 0) > 0
