"""A cell's limits bound the whole cell, and per-client scratch schemas are
checked after their suffix (issue 38; runners/cgroups.py,
runners/executors/local.py, runners/planlimits.py, runners/tools/__init__.py).

- three local sysbench clients of 40 threads each: every process of the cell
  (the clients, the samplers) in ONE cgroup, read while it runs, under its
  pids cap; the same plan against a pids cap of 64 is refused at save;
- mysqlslap with `create_schema: shop` on two clients would drop `shop_c1`:
  refused at save naming the reason, and the worker refuses it too before
  the tool starts (a canary table in `shop_c1` survives);
- the worker host's bound on sandboxed cells at once holds."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from benchapp.models import Cell, Run
from benchapp.runs import orchestration
from runners.cgroups import _own_paths, _v1_mounts
from runners.hostslots import Slot, held
from tests.support.waiting import finished, wait_for

THREE_LOCAL = [{"local": True, "count": 3}]


def three_clients(threads: int = 40, seconds: int = 8) -> dict:
    return {
        "name": "three-local",
        "tool": "sysbench",
        "targets": [{"name": "worker"}],
        "client": THREE_LOCAL,
        "axes": {"client_hosts": [3]},
        "params": {"test": "cpu", "threads": threads, "time": seconds},
        "prepare": False,
        # A busy test machine starts the clients' sandboxes up to ~1 s apart.
        "min_overlap": 0.5,
    }


@pytest.fixture
def api(owner):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    return client


def test_local_clients_times_threads_over_the_pids_cap_is_refused_at_save(api, team, settings):
    team.targets.create(name="worker", kind="host")
    settings.BENCHBOARD_SANDBOX_PIDS = 64
    response = api.post("/api/plans/", {"document": three_clients()}, format="json")
    assert response.status_code == 400, response.json()
    text = str(response.json())
    assert "(threads 40) × 3 local clients = 120 is over the worker's limit of 64" in text
    assert "BENCHBOARD_SANDBOX_PIDS" in text


def test_more_local_clients_than_a_cell_may_have_is_refused(api, team):
    team.targets.create(name="worker", kind="host")
    document = {
        **three_clients(threads=1),
        "client": [{"local": True, "count": 20}],
        "axes": {"client_hosts": [20]},
    }
    response = api.post("/api/plans/", {"document": document}, format="json")
    assert response.status_code == 400
    assert "20 clients on the worker in one cell; at most 16" in str(response.json())


def _pids_groups() -> Path:
    own = _own_paths()
    return Path(_v1_mounts()["pids"] + own.get("pids", "/"))


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                todo += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
    return found


def _watch_groups(worker_pid: int, stop: threading.Event, seen: dict) -> None:
    """Every 0.1 s: the worker's cell groups, their pids.current and peak."""
    parent = _pids_groups()
    while not stop.is_set():
        mine = _descendants(worker_pid)
        for group in parent.glob("benchboard-*-*"):
            if int(group.name.split("-")[1]) not in mine:
                continue
            try:
                current = int((group / "pids.current").read_text())
                peak = int((group / "pids.peak").read_text())
                procs = len((group / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                continue
            row = seen.setdefault(group.name, {"current": 0, "peak": 0, "procs": 0})
            row["current"] = max(row["current"], current)
            row["peak"] = max(row["peak"], peak)
            row["procs"] = max(row["procs"], procs)
        stop.wait(0.1)


@pytest.mark.django_db(transaction=True)
def test_three_local_clients_share_one_cgroup_under_its_caps(team, start_worker):
    """3 clients × 40 threads in one cell: one group holds them all (its
    pids.peak counts 120 threads and more), under the cap of 256."""
    assert os.geteuid() == 0, "cgroups need a root worker"
    team.targets.create(name="worker", kind="host")
    worker = start_worker(
        "contain",
        BENCHBOARD_SANDBOX_PIDS=256,
        BENCHBOARD_SANDBOX_MEMORY_MB=512,
        BENCHBOARD_SANDBOX_CPUS=2.0,
    )
    seen: dict = {}
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_groups, args=(worker.proc.pid, stop, seen))
    watcher.start()
    try:
        run = orchestration.start_run(team, three_clients(), origin="api")
        wait_for(lambda: finished(run), timeout=180)
    finally:
        stop.set()
        watcher.join()
    cell = run.cells.get()
    assert (run.status, cell.status) == (Run.SUCCEEDED, Cell.SUCCEEDED), cell.error
    measured = [name for name, row in seen.items() if row["peak"] >= 120]
    print(f"cell groups seen: {seen}")
    assert len(measured) == 1, f"the three clients' threads were not in one group: {seen}"
    row = seen[measured[0]]
    assert 120 <= row["peak"] <= 256 and row["procs"] >= 3
    assert cell.facts["limits"].startswith("cgroup v1: cpu 2.0, memory 512 MB, pids 256")
    assert len(cell.facts["clients_cpu_busy_pct"]) == 3


# ---------------------------------------------------------------- schemas


def slap(database: str, schema: str = "shop", clients: int = 2) -> dict:
    return {
        "name": "slap",
        "tool": "mysqlslap",
        "targets": [
            {
                "name": "shop",
                "kind": "mysql",
                "host": "127.0.0.1",
                "port": 3306,
                "user": "root",
                "database": database,
            }
        ],
        "client": [{"local": True, "count": clients}],
        "axes": {"client_hosts": [clients]},
        "params": {"create_schema": schema, "number_of_queries": 10, "concurrency": 1},
    }


def test_a_suffixed_schema_that_is_the_targets_database_is_refused_at_save(api, team):
    team.targets.create(name="shop", kind="mysql", host="127.0.0.1", port=3306, database="shop_c1")
    response = api.post("/api/plans/", {"document": slap("shop_c1")}, format="json")
    assert response.status_code == 400, response.json()
    text = str(response.json())
    assert "mysqlslap drops schema shop_c1 before and after its run (client 1 of 2" in text
    assert "that is shop's database: its tables would be lost" in text


@pytest.mark.parametrize("schema", ["mysql", "performance_schema", "SYS"])
def test_a_system_schema_is_refused_at_save(api, team, schema):
    team.targets.create(name="shop", kind="mysql", host="127.0.0.1", port=3306, database="shop")
    document = {**slap("shop", clients=1), "client": "local", "axes": {}}
    document["params"]["create_schema"] = schema
    response = api.post("/api/plans/", {"document": document}, format="json")
    assert response.status_code == 400
    assert "a system schema of the server" in str(response.json())


def _mariadb(sql: str) -> str:
    done = subprocess.run(
        ["mariadb", "-h", "127.0.0.1", "-P", "3306", "-u", "root", "-N", "-e", sql],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.fixture
def canary():
    name = f"shop{os.getpid()}_c1"
    _mariadb(
        f"CREATE DATABASE IF NOT EXISTS `{name}`; "
        f"CREATE TABLE IF NOT EXISTS `{name}`.canary (v INT); "
        f"INSERT INTO `{name}`.canary VALUES (42)"
    )
    yield name
    _mariadb(f"DROP DATABASE IF EXISTS `{name}`")


@pytest.mark.django_db(transaction=True)
def test_the_worker_refuses_a_suffixed_schema_that_reached_it_and_the_canary_lives(
    team, start_worker, canary
):
    """An operator's plan file skips the save-time checks; the worker's own
    check still refuses before mysqlslap starts."""
    start_worker("schemas")
    document = slap(canary, schema=canary.removesuffix("_c1"))
    run = orchestration.start_run(team, document, origin="cli")
    wait_for(lambda: finished(run), timeout=120)
    cell = run.cells.get()
    assert cell.status == Cell.FAILED
    assert f"mysqlslap drops schema {canary} before and after its run (client 1 of 2" in cell.error
    assert not cell.artifacts.filter(phase__startswith="measure").exists()
    assert _mariadb(f"SELECT v FROM `{canary}`.canary") == "42"


# ---------------------------------------------------------------- host slots


def test_the_hosts_sandbox_slots_bound_cells_at_once(tmp_path):
    first = Slot.take(str(tmp_path), 2, lambda: False)
    second = Slot.take(str(tmp_path), 2, lambda: False)
    assert held(str(tmp_path), 2) == 2
    started = time.monotonic()
    with pytest.raises(Exception, match="waiting for one of the worker host's 2 sandbox slots"):
        Slot.take(str(tmp_path), 2, lambda: time.monotonic() - started > 0.5)
    first.release()
    third = Slot.take(str(tmp_path), 2, lambda: False)
    assert third.index == 0
    second.release()
    third.release()
    assert held(str(tmp_path), 2) == 0
