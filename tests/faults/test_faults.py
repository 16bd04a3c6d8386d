"""The fault matrix (`make faults`; also part of `make test`).

After each fault: every cell is in a terminal state, no measurement is
duplicated, no tool process is left. Worker kill -9, a cell that kills its
worker every time, sshd killed and cancel are in
tests/benchapp/runs/test_orchestration.py; the crash right after a cloud create is
in tests/benchapp/cloud/test_provisioning.py. This file adds worker SIGTERM, the
target database stopped, Redis restarted, and the secrets canary.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest

from benchapp.models import Cell, Run
from benchapp.runs import orchestration
from tests.support.measures import stored
from tests.support.private_services import private_mariadb, private_redis  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, ROOT, Worker, match_leases, worker_env

FAST = FAST_LEASES
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST)


def assert_clean(run, tool_pattern: str) -> None:
    """The invariants every fault must leave."""
    run.refresh_from_db()
    assert not run.is_active
    assert not run.cells.exclude(status__in=Cell.TERMINAL).exists()
    for cell in run.cells.all():
        values = stored(cells=[cell.pk])
        metrics = [(m.group, m.metric) for m in values if m.attempt == cell.attempt]
        assert len(metrics) == len(set(metrics))
        assert {m.attempt for m in values} <= {cell.attempt}
    wait_for(lambda: not tool_processes(tool_pattern), timeout=15)


def tool_processes(pattern: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


def fio_plan(directory, runtime=2, rws=("read", "write", "randread")):
    return {
        "name": "faults-fio",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {
            "filename": f"{directory}/fio.data",
            "size": "4M",
            "bs": "4k",
            "runtime": runtime,
            "time_based": True,
        },
        "axes": {"rw": list(rws)},
    }


def test_worker_sigterm_finishes_the_running_cell(team, tmp_path, start_worker):
    """SIGTERM is Celery's warm shutdown: the running cell completes and is
    recorded; the next worker runs the rest."""
    worker = start_worker("warm", **FAST)
    run = orchestration.start_run(team, fio_plan(tmp_path, runtime=3))
    wait_for(lambda: run.cells.filter(status=Cell.RUNNING, phase="measure").exists())
    worker.proc.send_signal(signal.SIGTERM)  # to the main process, as `docker stop` does
    worker.proc.wait(timeout=60)
    first = run.cells.exclude(status=Cell.QUEUED).get()
    assert first.status == Cell.SUCCEEDED and first.attempt == 1
    start_worker("next", **FAST)
    wait_for(lambda: finished(run), reap=True, step=1)
    assert run.status == Run.SUCCEEDED
    assert_clean(run, f"fio.*{tmp_path}")


def test_target_database_stopped_mid_run(team, start_worker, private_mariadb):
    plan = {
        "name": "faults-db-stopped",
        "tool": "mysqlslap",
        "targets": [
            {
                "name": "db",
                "kind": "mysql",
                "host": "127.0.0.1",
                "port": private_mariadb.port,
                "user": "root",
            }
        ],
        "params": {
            "auto_generate_sql": True,
            "add_autoincrement": True,
            "number_of_queries": 200000,
            "concurrency": 2,
            "iterations": 1,
        },
        "axes": {"load_type": ["write", "key", "read"]},
    }
    start_worker("a", **FAST)
    run = orchestration.start_run(team, plan)
    wait_for(lambda: run.cells.filter(status=Cell.RUNNING, phase="measure").exists())
    time.sleep(1)
    private_mariadb.stop()
    wait_for(lambda: finished(run), reap=True, step=1)
    cells = list(run.cells.order_by("index"))
    assert cells[0].status == Cell.FAILED
    assert (
        "Lost connection" in cells[0].error
        or "server has gone away" in cells[0].error
        or "Can't connect" in cells[0].error
    )
    assert all(c.status == Cell.FAILED and c.error for c in cells[1:])
    assert run.status == Run.FAILED
    assert_clean(run, f"mysqlslap.*{private_mariadb.port}")


def test_redis_restarted_mid_run(team, tmp_path, private_redis):
    """Redis restarts empty (no persistence): queued messages are lost. Beat's
    reaper re-dispatches from the database and the run completes."""
    env = worker_env(CELERY_BROKER_URL=private_redis.url, BENCHBOARD_REAP_SECONDS=2, **FAST)
    worker = Worker(tmp_path / "worker.log", env, "redis-fault")
    beat = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "benchapp",
            "beat",
            "--schedule",
            str(tmp_path / "beat-schedule"),
        ],
        cwd=ROOT,
        env=env,
        stdout=open(tmp_path / "beat.log", "w"),
        stderr=subprocess.STDOUT,
    )
    plan_file = tmp_path / "plan.json"
    import json

    plan_file.write_text(json.dumps(fio_plan(tmp_path, runtime=2)))
    try:
        subprocess.run(
            [sys.executable, "manage.py", "runplan", str(plan_file), "--team", team.name],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        run = Run.objects.get()
        wait_for(lambda: run.cells.filter(status=Cell.RUNNING, phase="measure").exists())
        private_redis.restart()
        wait_for(lambda: finished(run), timeout=150, step=1)
        assert run.status == Run.SUCCEEDED, [c.error for c in run.cells.all()]
        assert_clean(run, f"fio.*{tmp_path}")
    finally:
        beat.terminate()
        beat.wait(timeout=30)
        worker.stop()
