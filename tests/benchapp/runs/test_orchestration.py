"""Orchestration through real worker processes, Redis, PostgreSQL, fio and sshd.

Workers run with a 1 s heartbeat and a 4 s lease so that recovery after a
killed worker takes seconds; the test process calls `reap` (what beat does
every BENCHBOARD_REAP_SECONDS) directly.
"""

from __future__ import annotations

import subprocess

import pytest

from benchapp.models import Cell, Credential, Run
from benchapp.plans import planning
from benchapp.runs import orchestration
from benchapp.store.artifactstore import text
from tests.support.measures import stored
from tests.support.sshd import sshd_disposable  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

FAST = {**FAST_LEASES, "BENCHBOARD_RETRY_BACKOFF_SECONDS": 0.5}
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST)


def fio_plan(directory, targets=("disk-a",), runtime=1, axes=None, **extra):
    return {
        "name": "fio-orchestration",
        "tool": "fio",
        "targets": [{"name": name, "kind": "host"} for name in targets],
        "params": {
            "filename": f"{directory}/fio.data",
            "size": "4M",
            "bs": "4k",
            "runtime": runtime,
            "time_based": True,
        },
        "axes": axes or {"rw": ["read", "write"]},
        **extra,
    }


def running_cell(run, phase="measure", attempt=None):
    cells = Cell.objects.filter(run=run, status=Cell.RUNNING, phase=phase)
    if attempt is not None:
        cells = cells.filter(attempt=attempt)
    return cells.first()


def fio_processes(marker) -> list[str]:
    out = subprocess.run(["pgrep", "-af", f"fio.*{marker}"], capture_output=True, text=True)
    return [line for line in out.stdout.splitlines() if "pgrep" not in line]


def test_plan_2x2x2_completes_with_all_measurements(team, tmp_path, start_worker):
    start_worker("a", **FAST)
    plan = fio_plan(
        tmp_path,
        targets=("disk-a", "disk-b"),
        axes={"target": ["disk-a", "disk-b"], "rw": ["read", "write"], "bs": ["4k", "8k"]},
    )
    run = orchestration.start_run(team, plan)
    wait_for(lambda: finished(run))
    assert run.status == Run.SUCCEEDED
    cells = list(run.cells.all())
    assert len(cells) == 8
    assert {c.key for c in cells} == {
        f"bs={bs},rw={rw},target={t}"
        for bs in ("4k", "8k")
        for rw in ("read", "write")
        for t in ("disk-a", "disk-b")
    }
    for cell in cells:
        direction = cell.axes["rw"]
        metrics = {m.metric for m in stored(cells=[cell.pk], group="")}
        assert f"{direction}_iops" in metrics
        assert cell.command.startswith("fio ")
        assert cell.tool_version
        # The worker wrote the fio output to the artifact store (not the database).
        measure = cell.artifacts.get(phase="measure")
        assert measure.stdout == "" and measure.blobs.get(stream="stdout").size > 0
        assert '"jobs"' in text(measure, "stdout")


def test_targets_run_in_parallel_and_one_target_never_overlaps(team, tmp_path, start_worker):
    start_worker("a", **FAST)
    start_worker("b", **FAST)
    plan = fio_plan(
        tmp_path,
        targets=("disk-a", "disk-b"),
        runtime=2,
        axes={"target": ["disk-a", "disk-b"], "rw": ["read", "write", "randread"]},
        # Both local targets are the worker host: only `isolation: target`
        # lets them overlap (tests/benchapp/runs/test_machines.py has the default).
        isolation="target",
    )
    run = orchestration.start_run(team, plan)
    wait_for(lambda: finished(run))
    assert run.status == Run.SUCCEEDED
    spans = {}
    for cell in run.cells.all():
        spans.setdefault(cell.target_name, []).append((cell.started_at, cell.finished_at))
    for target, intervals in spans.items():
        intervals.sort()
        for (_, end), (start, _) in zip(intervals, intervals[1:]):
            assert start >= end, f"cells of {target} overlapped"
    a, b = spans["disk-a"], spans["disk-b"]
    overlap = any(sa < eb and sb < ea for sa, ea in a for sb, eb in b)
    assert overlap, "the two targets never ran at the same time"


def test_worker_killed_mid_cell_is_retried_without_duplicates(team, tmp_path, start_worker):
    worker = start_worker("victim", **FAST)
    run = orchestration.start_run(
        team, fio_plan(tmp_path, runtime=10, axes={"rw": ["read", "write"]})
    )
    victim = wait_for(lambda: running_cell(run))
    wait_for(lambda: fio_processes(tmp_path))
    worker.kill()  # SIGKILL to the worker's whole process group
    # The tool gets SIGTERM with its worker (PR_SET_PDEATHSIG). Not asserted here:
    # fio's TERM handling was seen to hang now and then on a loaded machine, leaving
    # an orphan; the fix (fio --thread + SIGKILL) is an open item.
    start_worker("rescuer", **FAST)
    wait_for(lambda: finished(run), reap=True, step=1)
    assert run.status == Run.SUCCEEDED
    victim.refresh_from_db()
    assert victim.attempt == 2 and victim.status == Cell.SUCCEEDED
    for cell in run.cells.all():
        rows = stored(cells=[cell.pk], group="")
        assert {m.attempt for m in rows} == {cell.attempt}
        names = [m.metric for m in rows]
        assert len(names) == len(set(names))


def test_cell_that_kills_its_worker_every_time_fails_after_capped_attempts(
    team, tmp_path, start_worker, settings
):
    settings.BENCHBOARD_MAX_ATTEMPTS = 2
    run = orchestration.start_run(team, fio_plan(tmp_path, runtime=20, axes={"rw": ["read"]}))
    for attempt in (1, 2):
        worker = start_worker(f"w{attempt}", BENCHBOARD_MAX_ATTEMPTS=2, **FAST)
        wait_for(lambda n=attempt: running_cell(run, attempt=n), reap=True, step=0.5)
        worker.kill()
    wait_for(lambda: finished(run), reap=True, step=1)
    cell = run.cells.get()
    assert cell.status == Cell.FAILED
    assert cell.error.startswith("failed: worker lost (2 attempts")
    assert run.status == Run.FAILED


def test_cancel_mid_run_kills_the_tool_and_cancels_cells(team, tmp_path, start_worker):
    start_worker("a", **FAST)
    marker = tmp_path / "cancel-me"
    marker.mkdir()
    run = orchestration.start_run(
        team, fio_plan(marker, runtime=60, axes={"rw": ["read", "write"]})
    )
    wait_for(lambda: running_cell(run))
    wait_for(lambda: fio_processes(marker))  # the phase is set just before fio starts
    orchestration.cancel_run(run)
    wait_for(lambda: finished(run), timeout=30)
    assert run.status == Run.CANCELLED
    assert set(run.cells.values_list("status", flat=True)) == {Cell.CANCELLED}
    wait_for(lambda: not fio_processes(marker), timeout=10)


def test_sshd_stopped_mid_cell_fails_that_cell_and_the_rest_complete(
    team, tmp_path, start_worker, sshd_disposable
):
    server = sshd_disposable
    key = Credential.objects.create(
        team=team, name="ssh-key", kind=Credential.SSH_KEY, **_secret(server.client_key)
    )
    # fio files outside the scratch dir over SSH: the team admin allowed it on this target.
    team.targets.create(
        name="remote",
        kind="host",
        ssh_host=server.host,
        ssh_port=server.port,
        ssh_user=server.user,
        ssh_credential=key,
        known_host_key=server.host_key,
        allow_custom_scripts=True,
    )
    plan = fio_plan(
        tmp_path,
        targets=("local",),
        runtime=5,
        axes={"target": ["remote", "local"], "rw": ["read"]},
    )
    plan["targets"] = [{"name": "remote"}, {"name": "local", "kind": "host"}]
    plan["client"] = {"on": "target"}
    start_worker("a", **FAST)
    start_worker("b", **FAST)
    run = orchestration.start_run(team, plan)
    remote = wait_for(
        lambda: Cell.objects.filter(run=run, target_name="remote", phase="measure").first()
    )
    server.kill_all()
    wait_for(lambda: finished(run), reap=True, step=1)
    remote.refresh_from_db()
    assert remote.status == Cell.FAILED
    assert remote.error  # a clear message, e.g. "connection to 127.0.0.1:... lost"
    assert run.cells.get(target_name="local").status == Cell.SUCCEEDED
    assert run.status == Run.PARTIAL


def _secret(plain):
    cred = Credential()
    cred.set_secret(plain)
    return {"encrypted": cred.encrypted, "fingerprint": cred.fingerprint}


def test_plan_over_cell_limit_is_refused(team, settings):
    settings.BENCHBOARD_CELL_LIMIT = 3
    with pytest.raises(planning.PlanRefused, match="4 cells; the limit is 3"):
        orchestration.start_run(
            team, fio_plan("/tmp", axes={"rw": ["read", "write"], "bs": ["4k", "8k"]})
        )
    assert not Run.objects.exists()


def test_wrong_db_password_fails_the_cell_and_the_run_goes_on(team, start_worker):
    """A target whose credential is wrong fails its cells with the tool's message;
    the other target's cells succeed and the run ends "completed with failures"."""
    from tests.support.dbtargets import mariadb_sql

    mariadb_sql(
        "CREATE USER IF NOT EXISTS 'bb_wrongpw'@'localhost' IDENTIFIED BY 'right-pw';"
        "CREATE USER IF NOT EXISTS 'bb_wrongpw'@'127.0.0.1' IDENTIFIED BY 'right-pw'"
    )
    Credential.objects.create(
        team=team,
        name="wrong",
        kind=Credential.PASSWORD,
        host_patterns=["127.0.0.1:3306"],  # a team admin bound it to this server
        **_secret("canary-wrong-pw"),
    )
    plan = {
        "name": "wrong-password",
        "tool": "mysqlslap",
        "targets": [
            {
                "name": "bad",
                "kind": "mysql",
                "host": "127.0.0.1",
                "port": 3306,
                "user": "bb_wrongpw",
                "credential": "wrong",
            },
            {"name": "good", "kind": "mysql", "host": "127.0.0.1", "port": 3306, "user": "root"},
        ],
        "params": {
            "auto_generate_sql": True,
            "number_of_queries": 50,
            "concurrency": 1,
            "iterations": 1,
            "load_type": "key",
            "add_autoincrement": True,
        },
        "axes": {"target": ["bad", "good"]},
    }
    start_worker("a", **FAST)
    run = orchestration.start_run(team, plan)
    wait_for(lambda: finished(run))
    assert run.status == Run.PARTIAL
    bad = run.cells.get(target_name="bad")
    assert bad.status == Cell.FAILED
    assert "Access denied for user 'bb_wrongpw'" in bad.error
    measure = bad.artifacts.get(phase="measure")
    output = text(measure, "stdout") + text(measure, "stderr")
    assert "Access denied" in output
    everything = " ".join([bad.error, bad.command, output, measure.command])
    assert "canary-wrong-pw" not in everything
    assert run.cells.get(target_name="good").status == Cell.SUCCEEDED


def test_runplan_waits_and_prints_the_result_document(team, tmp_path, start_worker):
    import json
    import sys

    import yaml

    start_worker("a", **FAST)
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump(fio_plan(tmp_path, axes={"rw": ["read", "write"]})))
    from tests.support.worker import ROOT, worker_env

    proc = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "runplan",
            str(plan_file),
            "--wait",
            "--json",
            "--team",
            team.name,
        ],
        cwd=ROOT,
        env=worker_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert [c["axes"] for c in document["cells"]] == [{"rw": "read"}, {"rw": "write"}]
    assert all(c["status"] == "succeeded" for c in document["cells"])
    assert document["cells"][0]["metrics"]["read_iops"] > 0
    assert document["plan"]["tool"] == "fio"


def test_a_run_waiting_on_a_busy_target_starts_when_the_target_is_released(
    team, tmp_path, start_worker
):
    """Two runs on one target: the second starts as soon as the first lets the
    target go, without waiting for the periodic reaper (no beat runs here)."""
    # Two worker processes: the second run's dispatch is handled (and finds
    # the target taken) while the first run's cell still runs.
    start_worker("a", concurrency=2, **FAST)
    first = orchestration.start_run(team, fio_plan(tmp_path, runtime=4, axes={"rw": ["read"]}))
    wait_for(lambda: running_cell(first))
    second = orchestration.start_run(team, fio_plan(tmp_path, axes={"rw": ["write"]}))
    wait_for(lambda: finished(first))
    wait_for(lambda: finished(second), timeout=30)
    assert (first.status, second.status) == (Run.SUCCEEDED, Run.SUCCEEDED)
