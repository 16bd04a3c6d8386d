"""A worker reuses its SSH connection to a host across cells and runs.

Real worker process, real sshd (connections counted from sshd's own log),
real fio on the far side.
"""

from __future__ import annotations

import subprocess
import uuid

import pytest

from benchapp.models import Artifact, Cell, Credential, Run
from benchapp.runs import orchestration
from benchapp.store.artifactstore import text
from tests.support.sshd import sshd_disposable  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

FAST = {**FAST_LEASES, "BENCHBOARD_RETRY_BACKOFF_SECONDS": 0.5}
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST)


@pytest.fixture
def server(team, sshd_disposable):  # noqa: F811
    cred = Credential(team=team, name="ssh-key", kind=Credential.SSH_KEY)
    cred.set_secret(sshd_disposable.client_key)
    cred.save()
    team.targets.create(
        name="remote",
        kind="host",
        ssh_host=sshd_disposable.host,
        ssh_port=sshd_disposable.port,
        ssh_user=sshd_disposable.user,
        ssh_credential=cred,
        known_host_key=sshd_disposable.host_key,
    )
    return sshd_disposable


def remote_plan(files, runtime=1):
    """fio on the remote target; each cell writes its own (relative) file name."""
    return {
        "name": "ssh-reuse",
        "tool": "fio",
        "targets": [{"name": "remote"}],
        "client": {"on": "target"},
        "params": {"size": "2M", "bs": "4k", "rw": "read", "runtime": runtime, "time_based": True},
        "axes": {"filename": list(files)},
    }


def run_to_end(team, plan) -> Run:
    run = orchestration.start_run(team, plan)
    wait_for(lambda: finished(run), reap=True, step=0.5, timeout=120)
    return run


def test_cells_on_one_host_share_one_connection_and_keep_their_own_output(
    team, server, start_worker
):
    start_worker("a", **FAST)
    files = [f"cell-{uuid.uuid4().hex[:8]}.data" for _ in range(3)]
    run = run_to_end(team, remote_plan(files))
    assert run.status == Run.SUCCEEDED, [c.error for c in run.cells.all()]
    assert server.accepted() == 1
    for cell in run.cells.all():
        mine = cell.axes["filename"]
        output = "".join(
            text(a, "stdout") + text(a, "stderr") for a in Artifact.objects.filter(cell=cell)
        )
        assert mine in output
        assert not [other for other in files if other != mine and other in output]


def test_reuse_survives_a_dropped_connection_and_an_sshd_restart(team, server, start_worker):
    start_worker("a", **FAST)
    first = run_to_end(team, remote_plan(["a.data"]))
    assert first.status == Run.SUCCEEDED
    server.drop_connections()
    second = run_to_end(team, remote_plan(["b.data"]))
    assert second.status == Run.SUCCEEDED, [c.error for c in second.cells.all()]
    server.restart()
    third = run_to_end(team, remote_plan(["c.data"]))
    assert third.status == Run.SUCCEEDED, [c.error for c in third.cells.all()]
    assert server.accepted() == 3


def test_cancel_kills_the_remote_tool_on_a_reused_connection(team, server, start_worker):
    start_worker("a", **FAST)
    warm = run_to_end(team, remote_plan(["warm.data"]))
    assert warm.status == Run.SUCCEEDED
    tag = f"cancel-{uuid.uuid4().hex[:8]}.data"
    run = orchestration.start_run(team, remote_plan([tag], runtime=60))
    wait_for(lambda: fio_running(tag), timeout=60)
    orchestration.cancel_run(run)
    wait_for(lambda: finished(run), timeout=30)
    assert run.status == Run.CANCELLED
    assert set(run.cells.values_list("status", flat=True)) == {Cell.CANCELLED}
    wait_for(lambda: not fio_running(tag), timeout=10)
    assert server.accepted() == 1


def fio_running(tag: str) -> bool:
    out = subprocess.run(["pgrep", "-af", f"fio.*{tag}"], capture_output=True, text=True)
    return any("pgrep" not in line for line in out.stdout.splitlines())
