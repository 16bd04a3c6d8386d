"""Hard limits of tools run on the worker host (runners/cgroups.py,
runners/scratch.py, runners/limits.py, docs/sandbox.md).

Real tools in the real sandbox: a cell that breaches its memory, pids or
scratch limit fails naming the limit, and the next cell runs fine; a CPU
quota holds stress-ng's CPU time to quota × wall time. Through a real worker
with the operator's settings in its environment, and through the API:
resource-bomb plans refused with the limit named, the same plans accepted
against a team's own host over SSH."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from runners.cell import run_cell
from runners.cgroups import _own_paths, _v1_mounts
from runners.command import Command
from runners.context import CellContext, Permissions
from runners.executors import LocalExecutor
from runners.limits import Limits
from runners.plan import expand, load_plan
from runners.sandbox import Sandbox, unavailable
from runners.tools import read_output

SMALL = Limits(cpus=0.5, memory_mb=128, pids=24, scratch_mb=64, seconds=600)


def _cell(params: dict, tool: str = "sysbench", **extra):
    plan = load_plan(
        {
            "name": "limits",
            "tool": tool,
            "targets": [{"name": "w", "kind": "host"}],
            "params": params,
            "prepare": False,
            **extra,
        }
    )
    with CellContext(plan, trusted=False, permissions={"w": Permissions()}, limits=SMALL) as ctx:
        return run_cell(plan, expand(plan)[0], ctx)


def _groups_left(prefix: str = f"benchboard-{os.getpid()}-") -> list[str]:
    """Groups named prefix* left in this process's group of each v1 hierarchy."""
    own = _own_paths()
    parents = [mount + own.get(c, "/") for c, mount in _v1_mounts().items()]
    return [str(p) for parent in parents for p in Path(parent).glob(prefix + "*")]


def _scratch_mounts() -> list[str]:
    """This process's scratch mounts (a work dir is named after its worker's pid)."""
    mine = f"/benchboard.{os.getpid()}."
    return [line for line in Path("/proc/self/mounts").read_text().splitlines() if mine in line]


@pytest.fixture(autouse=True)
def sandbox_here():
    assert unavailable() is None, unavailable()  # bubblewrap is a test dependency
    assert os.geteuid() == 0, "cgroups and the scratch file system need a root worker"
    mounted = set(_scratch_mounts())
    yield
    assert _groups_left() == []  # every group removed after its tool
    # Every scratch file system this process mounted is unmounted (other test
    # processes' tools mount theirs meanwhile: their names carry their pid).
    deadline = time.monotonic() + 10
    while not set(_scratch_mounts()) <= mounted and time.monotonic() < deadline:
        time.sleep(0.5)
    assert set(_scratch_mounts()) <= mounted


def _then_a_cell_runs_fine():
    outcome = _cell({"test": "cpu", "threads": 1, "time": 1})
    assert outcome.status == "succeeded", outcome.error
    assert outcome.result.metrics["events_per_s"] > 0
    return outcome


def test_the_cell_says_which_limits_applied():
    outcome = _then_a_cell_runs_fine()
    assert outcome.facts["limits"] == ("cgroup v1: cpu 0.5, memory 128 MB, pids 24; scratch 64 MB")


def test_memory_limit_kills_the_tool_and_fails_only_that_cell():
    outcome = _cell(
        {"test": "memory", "memory_block_size": "512M", "memory_total_size": "2G", "threads": 1}
    )
    assert (outcome.status, outcome.permanent) == ("failed", True)
    assert outcome.error == "measure killed: memory limit 128 MB (BENCHBOARD_SANDBOX_MEMORY_MB)"
    _then_a_cell_runs_fine()


def test_pids_limit_refuses_threads_and_fails_only_that_cell():
    outcome = _cell({"test": "cpu", "threads": 64, "time": 2})
    assert outcome.status == "failed"
    assert outcome.error.startswith("measure pids limit 24 reached")
    assert "BENCHBOARD_SANDBOX_PIDS" in outcome.error
    _then_a_cell_runs_fine()


def test_scratch_limit_stops_a_tool_filling_it_and_fails_only_that_cell():
    outcome = _cell({"filename": "fill", "size": "200M", "rw": "write", "bs": "1M"}, tool="fio")
    assert outcome.status == "failed"
    assert outcome.error == (
        "measure scratch directory full: limit 64 MB (BENCHBOARD_SANDBOX_SCRATCH_MB)"
    )
    assert "No space left on device" in outcome.phases[-1].stdout + outcome.phases[-1].stderr
    _then_a_cell_runs_fine()


def test_the_scratch_directory_is_a_file_system_of_the_limits_size():
    with LocalExecutor() as executor:
        executor.contain(Sandbox(limits=SMALL))
        execution = executor.run(Command(argv=["df", "-k", "--output=size", "."]), timeout=30)
    size_kb = int(execution.stdout.split()[-1])
    assert 64 * 1024 <= size_kb < 100 * 1024  # the limit, and ext4's share above it


def test_cpu_quota_holds_cpu_time_to_quota_times_wall_time():
    """Two CPU workers on a quarter-CPU quota: CPU time / wall time ≈ 0.25
    (unlimited on an idle 2-core machine: ~2). A quarter keeps the figure at
    the quota even when other work shares the machine."""
    with LocalExecutor() as executor:
        executor.contain(Sandbox(limits=Limits(cpus=0.25)))
        command = Command(argv=["stress-ng", "--cpu", "2", "--timeout", "4", "--metrics-brief"])
        execution = executor.run(command, timeout=60)
    assert execution.exit_code == 0 and execution.limit is None, execution.output
    metrics = read_output("stress_ng", execution.output).metrics
    share = (metrics["usr_time_s"] + metrics["sys_time_s"]) / metrics["real_time_s"]
    print(f"CPU time / wall time under a 0.25-CPU quota: {share:.3f}")
    assert 0.15 <= share <= 0.30


# ---------------------------------------------------------------- worker and API

BOMBS = {
    "cpu-workers-for-a-week": {
        "tool": "sysbench",
        "params": {"test": "cpu", "time": 60},
        "stress": {"cpu": 4096},
        "refused": ("stress.cpu", "BENCHBOARD_SANDBOX_PIDS"),
    },
    "sysbench-100000-threads": {
        "tool": "sysbench",
        "params": {"test": "cpu", "threads": 100000, "time": 10},
        "refused": ("params.threads", "BENCHBOARD_SANDBOX_PIDS"),
    },
    "memory-64G-blocks-in-1024-threads": {
        "tool": "sysbench",
        "params": {"test": "memory", "memory_block_size": "64G", "threads": 1024},
        "refused": ("params.threads", "BENCHBOARD_SANDBOX_PIDS"),
    },
    "memory-64G-blocks": {
        "tool": "sysbench",
        "params": {"test": "memory", "memory_block_size": "64G", "threads": 16},
        "refused": ("params.memory_block_size", "BENCHBOARD_SANDBOX_MEMORY_MB"),
    },
    "fio-1P": {
        "tool": "fio",
        "params": {"filename": "f", "size": "1P", "rw": "write"},
        "refused": ("params.size", "BENCHBOARD_SANDBOX_SCRATCH_MB"),
    },
    "fileio-100T-in-100000-files": {
        "tool": "sysbench",
        "params": {
            "test": "fileio",
            "file_total_size": "100T",
            "file_num": 100000,
            "file_test_mode": "seqwr",
        },
        "refused": ("params.file_total_size", "BENCHBOARD_SANDBOX_SCRATCH_MB"),
    },
}


def _document(name: str, bomb: dict, target: str) -> dict:
    extra = {k: v for k, v in bomb.items() if k not in ("tool", "params", "refused")}
    return {
        "name": name,
        "tool": bomb["tool"],
        "targets": [{"name": target}],
        "params": bomb["params"],
        "prepare": False,
        **extra,
    }


@pytest.fixture
def api(owner):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    return client


@pytest.fixture
def stored(team):
    """The worker itself (a host target) and a team host reached over SSH."""
    team.targets.create(name="worker", kind="host")
    team.targets.create(name="own", kind="host", ssh_host="192.0.2.10", ssh_user="bench")
    return team


@pytest.mark.parametrize("name", list(BOMBS))
def test_resource_bombs_are_refused_through_the_api_naming_the_limit(api, stored, name):
    bomb = BOMBS[name]
    param, setting = bomb["refused"]
    response = api.post("/api/plans/", {"document": _document(name, bomb, "worker")}, format="json")
    assert response.status_code == 400, response.json()
    text = str(response.json())
    assert param in text and setting in text and "over the worker's limit" in text
    response = api.post("/api/runs/", {"document": _document(name, bomb, "worker")}, format="json")
    assert response.status_code == 400 and setting in str(response.json())


@pytest.mark.parametrize("name", list(BOMBS))
def test_the_same_plans_on_a_teams_own_host_over_ssh_are_accepted(api, stored, name):
    document = {**_document(name, BOMBS[name], "own"), "client": {"on": "target"}}
    response = api.post("/api/plans/", {"document": document}, format="json")
    assert response.status_code == 201, response.json()


def test_operator_settings_move_the_limit(api, stored, settings):
    bomb = BOMBS["sysbench-100000-threads"]
    settings.BENCHBOARD_SANDBOX_PIDS = 200000
    response = api.post("/api/plans/", {"document": _document("x", bomb, "worker")}, format="json")
    assert response.status_code == 201, response.json()


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_fails_the_breaching_cell_and_runs_the_next(
    team, start_worker, owner, client
):
    from benchapp.models import Cell
    from benchapp.runs import orchestration
    from tests.support.waiting import finished, wait_for

    team.targets.create(name="worker", kind="host")
    others = set(_groups_left("benchboard-"))  # other test processes' tools, meanwhile
    start_worker(
        "limits",
        BENCHBOARD_SANDBOX_MEMORY_MB=128,
        BENCHBOARD_SANDBOX_PIDS=32,
        BENCHBOARD_SANDBOX_CPUS=0.5,
        BENCHBOARD_SANDBOX_SCRATCH_MB=64,
    )
    plan = {
        "name": "memory-bomb",
        "tool": "sysbench",
        "targets": [{"name": "worker"}],
        "prepare": False,
        "params": {"test": "memory", "memory_total_size": "1G", "threads": 1},
        "axes": {"memory_block_size": ["512M", "1K"]},
    }
    run = orchestration.start_run(team, plan, origin="api")
    wait_for(lambda: finished(run), timeout=180)
    cells = {c.key: c for c in run.cells.all()}
    big, small = cells["memory_block_size=512M"], cells["memory_block_size=1K"]
    assert big.status == Cell.FAILED
    assert big.error == "measure killed: memory limit 128 MB (BENCHBOARD_SANDBOX_MEMORY_MB)"
    assert small.status == Cell.SUCCEEDED, small.error
    applied = "cgroup v1: cpu 0.5, memory 128 MB, pids 32; scratch 64 MB"
    assert small.facts["limits"] == applied
    client.force_login(owner)
    page = client.get(f"/runs/{run.pk}/cells/{big.pk}/artifacts/").content.decode()
    assert applied in page and "killed: memory limit 128 MB" in page
    assert (
        f"Local tools ran with limits: {applied}" in client.get(f"/runs/{run.pk}/").content.decode()
    )
    # The worker's groups are gone too. Another test process's tool may make
    # one meanwhile (make test runs several): it goes when that tool ends, so
    # only a group that stays is a leak.
    deadline = time.monotonic() + 60
    while set(_groups_left("benchboard-")) - others and time.monotonic() < deadline:
        time.sleep(0.5)
    assert set(_groups_left("benchboard-")) - others == set()


def test_groups_a_killed_worker_left_are_swept(monkeypatch):
    from runners import cgroups

    dead = 4194303  # above any pid this machine hands out (pid_max is at most 2^22)
    own = _own_paths()
    left = [Path(m + own.get(c, "/"), f"benchboard-{dead}-1") for c, m in _v1_mounts().items()]
    for path in left:
        path.mkdir()
    monkeypatch.setattr(cgroups, "_swept", False)
    cgroups.make_group(SMALL).remove()
    assert [p for p in left if p.exists()] == []


def test_without_cgroups_rlimits_are_the_floor(monkeypatch):
    """Where no group can be made (here: the cgroup mechanisms switched off),
    the tool runs under rlimits, and a CPU-time breach fails naming it."""
    from runners import cgroups

    monkeypatch.setattr(cgroups, "_v2", lambda limits: None)
    monkeypatch.setattr(cgroups, "_v1", lambda limits: None)
    limits = Limits(cpus=0.5, memory_mb=1024, pids=64, scratch_mb=64, seconds=2)
    with LocalExecutor() as executor:
        executor.contain(Sandbox(limits=limits))
        command = Command(argv=["sysbench", "cpu", "--threads=2", "--time=20", "run"])
        execution = executor.run(command, timeout=60)
        applied = executor.limits_applied
    assert applied == (
        "rlimits only: CPU time 1 s, address space 1024 MB, processes 64 (per user); scratch 64 MB"
    )
    assert execution.exit_code == 128 + 24  # SIGXCPU
    assert (
        execution.limit
        == "killed: CPU time limit 1 s (BENCHBOARD_SANDBOX_CPUS × BENCHBOARD_SANDBOX_SECONDS)"
    )
    assert execution.duration < 10
