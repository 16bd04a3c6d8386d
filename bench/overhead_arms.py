"""The four ways the overhead study (bench/overhead.py) runs one command.

    hand     here, bare: subprocess in a work dir holding the same files
    sandbox  here, in the bubblewrap sandbox Benchboard puts local tools in
    ssh      by hand over the same sshd with the OpenSSH client
    board    one cell through a real Celery worker, over SSH on that sshd
    board_quiet  the same with `telemetry: false` (no host or database sampling)

Every arm runs the argv Benchboard recorded for the cell (HandCommand,
recorded_command) with the env and the files the tool's builder gives for it;
each returns the tool's own throughput figure, read by the tool's parser.
The Stage holds what they share: the sshd, the targets' servers, the worker.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from bench.cells import measured, wait_for
from benchapp.models import Artifact, Credential, Run
from benchapp.runs import orchestration
from benchapp.runs.recording import frozen_cell
from runners.command import WORKDIR, Endpoint, Upload
from runners.phases import masked
from runners.sandbox import Sandbox, drop_privileges, unavailable
from runners.tools import get_tool, read_output
from tests.support.private_services import (
    mariadb_server,
    start_private_postgres,
    stop_private_postgres,
)
from tests.support.worker import Worker

ARMS = ("hand", "sandbox", "ssh", "board", "board_quiet")
# The goal's arms: by hand, its two baselines' other half, through Benchboard
# (telemetry on, as users run it, and off: what sampling each second costs).
GOAL_ARMS = ("hand", "ssh", "board", "board_quiet")
MARIADB_DB = "benchboard_overhead"
PG_PASSWORD = "bench-pg-secret"  # trust auth ignores it; it makes pgbench use PGPASSFILE


@dataclass
class Job:
    """One tool's measured job: the cell's params, the figure compared, the untimed prepare."""

    tool: str
    params: dict
    metric: str
    kind: str  # the target kind: mysql, postgres, host
    prepare: dict | None = None  # params of the tool's own prepare/init phase, run by hand
    # A tool that runs an amount of work, not a time (mysqlslap): the param that
    # sets the amount, sized from the warm-up's rate so the job lasts as long as the others.
    amount: str | None = None


# ------------------------------------------------------------------ the stage


@dataclass
class Stage:
    """What the arms share: the team, the sshd, the targets, a worker, work dirs."""

    team: object
    server: object  # tests.support.sshd.SSHServer
    workdir: Path
    # The targets' own servers, private to the study: the machine's shared
    # MariaDB also serves other runs, whose load (or dropped schema) would be ours.
    mariadb: object = None  # tests.support.private_services.Server
    postgres: object = None  # tests.support.private_services.PrivatePostgres
    worker: Worker | None = None
    ssh_argv: list[str] = field(default_factory=list)
    sandbox: Sandbox | None = None
    # Owned by the sandbox user and outside the bench's private dir (which the
    # unprivileged bwrap could not enter): fio's data, the sandbox's work dirs.
    scratch: Path | None = None
    board_runs: list[Run] = field(default_factory=list)

    def endpoint(self, job: Job) -> Endpoint:
        if job.kind == "mysql":
            return Endpoint("mysql", "127.0.0.1", self.mariadb.port, "root", MARIADB_DB)
        if job.kind == "postgres":
            return Endpoint(
                "postgres", "127.0.0.1", self.postgres.port, "postgres", "bench", PG_PASSWORD
            )
        return Endpoint("host")

    def target(self, job: Job) -> dict:
        """The plan's target entry: the tool runs over SSH on the loopback sshd."""
        entry = {
            "name": "t1",
            "kind": job.kind,
            "ssh": {
                "host": self.server.host,
                "port": self.server.port,
                "user": self.server.user,
                "credential": "bench-ssh",
                "known_host_key": self.server.host_key,
            },
        }
        if job.kind == "mysql":
            entry.update(host="127.0.0.1", port=self.mariadb.port, user="root", database=MARIADB_DB)
        elif job.kind == "postgres":
            entry.update(
                host="127.0.0.1",
                port=self.postgres.port,
                user="postgres",
                database="bench",
                credential="bench-pg",
            )
        return entry


def set_up(team, server, workdir: Path) -> Stage:
    """The targets' data servers, the OpenSSH client's files, the sandbox, the worker."""
    stage = Stage(team, server, workdir)
    stage.scratch = Path(tempfile.mkdtemp(prefix="benchboard-overhead-"))
    (stage.scratch / "fio").mkdir()
    (workdir / "mariadb-home").mkdir()
    stage.mariadb = mariadb_server(workdir / "mariadb-home")
    subprocess.run(
        ["mariadb", "--no-defaults", "-h127.0.0.1", f"-P{stage.mariadb.port}", "-uroot"]
        + ["-e", f"CREATE DATABASE {MARIADB_DB}"],
        check=True,
    )
    stage.postgres = start_private_postgres()
    stage.postgres.psql("CREATE DATABASE bench")
    cred, _ = Credential.objects.get_or_create(
        team=team, name="bench-pg", defaults={"kind": Credential.PASSWORD}
    )
    cred.set_secret(PG_PASSWORD)
    cred.save()
    known = workdir / "known_hosts"
    known.write_text(f"[{server.host}]:{server.port} {server.host_key}\n")
    key = shlex.quote(str(server.directory / "client_ed25519"))
    stage.ssh_argv = shlex.split(
        f"ssh -F /dev/null -T -o BatchMode=yes -o StrictHostKeyChecking=yes "
        f"-o UserKnownHostsFile={shlex.quote(str(known))} -o IdentitiesOnly=yes -i {key} "
        f"-p {server.port} {server.user}@{server.host}"
    )
    if unavailable(settings.BENCHBOARD_SANDBOX_USER) is None:
        fio_dir = str(stage.scratch / "fio")
        stage.sandbox = Sandbox(user=settings.BENCHBOARD_SANDBOX_USER, data_dirs=(fio_dir,))
        ids = stage.sandbox.ids()
        if ids is not None:
            os.chown(stage.scratch, *ids)
    # The worker with the heartbeat and lease a user gets (not the bench's short ones).
    stage.worker = Worker(workdir / "overhead-worker.log", dict(os.environ), "overhead")
    return stage


def tear_down(stage: Stage) -> None:
    if stage.worker is not None:
        stage.worker.stop()
    if stage.postgres is not None:
        stop_private_postgres(stage.postgres)
    if stage.mariadb is not None:
        stage.mariadb.stop()
    if stage.scratch is not None:
        shutil.rmtree(stage.scratch, ignore_errors=True)


def prepare_data(stage: Stage, job: Job) -> None:
    """The job's data, made once by hand before anything is timed."""
    tool = get_tool(job.tool)
    endpoint = stage.endpoint(job)
    if job.prepare is None:
        return
    phases = ["cleanup", "prepare"] if "prepare" in tool.PHASES else ["init"]
    for phase in phases:
        hand = HandCommand.build(
            tool, job.prepare, endpoint, phase, stage.workdir / f"prep-{phase}"
        )
        proc = hand.run_here()
        if phase != "cleanup" and proc.returncode != 0:
            raise RuntimeError(f"{job.tool} {phase}: {proc.stdout[-500:]}{proc.stderr[-500:]}")


# ---------------------------------------------------------------- the command


@dataclass
class HandCommand:
    """One argv with its env and uploaded files, in a work dir of its own."""

    argv: list[str]  # @WORKDIR@ resolved to directory
    env: dict[str, str]
    uploads: list[Upload]
    directory: Path
    recorded: str = ""  # the command line as Benchboard recorded it

    @classmethod
    def build(cls, tool, params, endpoint, phase, directory: Path) -> HandCommand:
        command = tool.build(params, endpoint, phase)
        return cls.made(command, directory)

    @classmethod
    def made(cls, command, directory: Path) -> HandCommand:
        directory.mkdir(mode=0o700, exist_ok=True)
        for upload in command.uploads:
            path = directory / upload.name
            path.write_bytes(upload.content)
            path.chmod(upload.mode)
        resolved = command.resolved(str(directory))
        return cls(resolved.argv, resolved.env, command.uploads, directory, masked(command))

    def run_here(self, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.argv,
            cwd=self.directory,
            env={**os.environ, **self.env},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def recorded_command(stage: Stage, job: Job, run: Run) -> HandCommand:
    """The measure's command as Benchboard recorded it, ready to run by hand.

    The argv is the Artifact's (@WORKDIR@ replaced by the by-hand work dir);
    env and uploads come from the tool's builder given the cell's frozen
    params, which must give that very argv back, so the by-hand arms cannot
    drift from what the cell ran.
    """
    artifact = Artifact.objects.get(cell__run=run, phase="measure")
    _, spec = frozen_cell(artifact.cell)
    command = get_tool(job.tool).build(spec.params, stage.endpoint(job), "run")
    if masked(command) != artifact.command:
        raise RuntimeError(
            f"{job.tool}: the builder gives {masked(command)!r}, the cell recorded "
            f"{artifact.command!r}"
        )
    hand = HandCommand.made(command, stage.workdir / f"hand-{job.tool}")
    recorded = [a.replace(WORKDIR, str(hand.directory)) for a in shlex.split(artifact.command)]
    if recorded != hand.argv:
        raise RuntimeError(f"{job.tool}: by hand would run {hand.argv}, the cell ran {recorded}")
    return hand


# ------------------------------------------------------------------- the arms


def figure(job: Job, output: str) -> float:
    result = read_output(job.tool, output)
    if result.errors or job.metric not in result.metrics:
        raise RuntimeError(f"{job.tool}: {result.errors or 'no ' + job.metric}: {output[-800:]}")
    return result.metrics[job.metric]


def arm_hand(stage: Stage, job: Job, hand: HandCommand) -> float:
    proc = hand.run_here()
    return figure(job, proc.stdout + proc.stderr)


def arm_sandbox(stage: Stage, job: Job, hand: HandCommand) -> float:
    """The same argv inside the bubblewrap sandbox, as LocalExecutor would wrap it."""
    directory = stage.scratch / f"sandbox-{job.tool}"
    directory.mkdir(mode=0o700, exist_ok=True)
    ids = stage.sandbox.ids()
    for upload in hand.uploads:
        path = directory / upload.name
        path.write_bytes(upload.content)
        path.chmod(upload.mode)
        if ids is not None:
            os.chown(path, *ids)
    if ids is not None:
        os.chown(directory, *ids)
    argv = [a.replace(str(hand.directory), str(directory)) for a in hand.argv]
    env = {k: v.replace(str(hand.directory), str(directory)) for k, v in hand.env.items()}
    wrapped, wrapped_env, ids = stage.sandbox.wrap(argv, str(directory), env)
    proc = subprocess.run(
        wrapped,
        cwd=directory,
        env=wrapped_env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=drop_privileges(ids),
    )
    return figure(job, proc.stdout + proc.stderr)


def ssh_line(hand: HandCommand) -> str:
    """What a person types after `ssh host`: cd, env, the argv, quoted."""
    env = ["env", *(f"{k}={v}" for k, v in hand.env.items())] if hand.env else []
    return f"cd {shlex.quote(str(hand.directory))} && " + shlex.join(env + hand.argv)


def arm_ssh(stage: Stage, job: Job, hand: HandCommand) -> float:
    proc = subprocess.run(
        [*stage.ssh_argv, "--", ssh_line(hand)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,
    )
    return figure(job, proc.stdout + proc.stderr)


def board_run(stage: Stage, job: Job, timeout: float = 600, telemetry: bool = True) -> Run:
    """One cell through the worker. Polled once a second: the bench's own
    queries must not weigh on this arm more than its waiting does on the others."""
    plan = {
        "name": f"overhead-{job.tool}",
        "tool": job.tool,
        "targets": [stage.target(job)],
        "params": job.params,
        "client": {"on": "target"},
        "prepare": False,
        "telemetry": telemetry,
    }
    # origin cli: an operator's plan file (fio's file is an absolute path).
    run = wait_for(orchestration.start_run(stage.team, plan, origin="cli"), timeout, poll=1.0)
    if run.status != Run.SUCCEEDED:
        errors = list(run.cells.values_list("error", flat=True))
        raise RuntimeError(f"{job.tool} through Benchboard: {run.status} {errors}")
    return run


def arm_board(stage: Stage, job: Job, hand: HandCommand, telemetry: bool = True) -> float:
    run = board_run(stage, job, telemetry=telemetry)
    ran = Artifact.objects.get(cell__run=run, phase="measure").command
    if ran != hand.recorded:
        raise RuntimeError(f"{job.tool}: the cell ran {ran!r}, the first one {hand.recorded!r}")
    stage.board_runs.append(run)
    return measured(run, job.metric)


def arm_board_quiet(stage: Stage, job: Job, hand: HandCommand) -> float:
    return arm_board(stage, job, hand, telemetry=False)


ARM_FUNCTIONS = {
    "hand": arm_hand,
    "sandbox": arm_sandbox,
    "ssh": arm_ssh,
    "board": arm_board,
    "board_quiet": arm_board_quiet,
}
