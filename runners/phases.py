"""Pieces of a cell's phases that need no state: records, errors, snapshots, stress.

runners/cell.py strings them together; everything here is a small pure
function or a dataclass, so it reads (and tests) on its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from runners.command import Command
from runners.errors import ValidationError
from runners.planspec import PrepareSpec
from runners.results import Result
from runners.sandbox import Scope

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
    """The one-line error of a phase that ended badly."""
    if record.cancelled:
        return f"{phase} cancelled"
    if record.timed_out:
        seconds = record.finished - record.started
        return f"{phase} timed out after {seconds:.0f} s"
    cause = error_line(record.stderr + "\n" + record.stdout) or "no output"
    return failed(phase, record.exit_code, cause)


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
