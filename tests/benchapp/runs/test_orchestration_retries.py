"""The one retry policy, through a real worker and a real sshd.

Transient failures (the SSH server unreachable) are retried with backoff
and the cell shows how many attempts ran; permanent ones (a wrong password)
are not retried; a failed tool is a result and is not retried either.
"""

from __future__ import annotations

import subprocess

import pytest

from benchapp.models import Cell, Credential, Run
from benchapp.runs import orchestration
from tests.support.sshd import SSHD, _wait_listening, host_target, start_sshd, stop_sshd
from tests.support.waiting import finished, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
RETRY = {
    "BENCHBOARD_HEARTBEAT_SECONDS": 1,
    "BENCHBOARD_LEASE_SECONDS": 4,
    "BENCHBOARD_CELL_RETRIES": 3,
    "BENCHBOARD_RETRY_BACKOFF_SECONDS": 2,
}


def _secret(plain):
    cred = Credential()
    cred.set_secret(plain)
    return {"encrypted": cred.encrypted, "fingerprint": cred.fingerprint}


def sshd_in(tmp_path):
    directory = tmp_path / "sshd"
    directory.mkdir()
    return start_sshd(directory)


def ssh_plan(tmp_path, server, credential):
    return {
        "name": "retries",
        "tool": "fio",
        "targets": [host_target(server, "remote", credential)],
        # Relative: the cell's scratch directory on the host (an absolute path
        # would need the target's data_dirs or allow_custom_scripts).
        "params": {
            "directory": ".",
            "size": "4M",
            "bs": "4k",
            "runtime": 1,
            "time_based": True,
            "rw": "read",
        },
        "client": {"on": "target"},
    }


def test_unreachable_ssh_target_is_retried_and_succeeds_on_the_second_attempt(
    team, tmp_path, start_worker
):
    server = sshd_in(tmp_path)
    stop_sshd(server)  # down for the first attempt; same port and keys later
    Credential.objects.create(
        team=team,
        name="ssh-key",
        kind=Credential.SSH_KEY,
        host_patterns=[f"{server.host}:{server.port}"],  # a team admin bound it there
        **_secret(server.client_key),
    )
    start_worker("a", **RETRY)
    run = orchestration.start_run(team, ssh_plan(tmp_path, server, "ssh-key"))
    cell = run.cells.get()
    waiting = wait_for(
        lambda: Cell.objects.filter(
            pk=cell.pk, status=Cell.QUEUED, attempt=1, error_kind="transient"
        ).first()
    )
    assert "cannot reach" in waiting.error
    server.process = subprocess.Popen(
        [SSHD, "-D", "-e", "-f", str(server.directory / "sshd_config")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_listening(server.port, server.process)
        wait_for(lambda: finished(run))
    finally:
        stop_sshd(server)
    cell.refresh_from_db()
    run.refresh_from_db()
    assert (cell.status, cell.attempt, cell.error, run.status) == (
        Cell.SUCCEEDED,
        2,
        "",
        Run.SUCCEEDED,
    )


def test_wrong_password_is_permanent_and_never_retried(team, tmp_path, start_worker):
    server = sshd_in(tmp_path)
    try:
        Credential.objects.create(
            team=team,
            name="wrong",
            kind=Credential.PASSWORD,
            host_patterns=[f"{server.host}:{server.port}"],
            **_secret("not-the-password"),
        )
        start_worker("a", **RETRY)
        run = orchestration.start_run(team, ssh_plan(tmp_path, server, "wrong"))
        wait_for(lambda: finished(run))
    finally:
        stop_sshd(server)
    cell = run.cells.get()
    assert (cell.status, cell.attempt, cell.error_kind) == (Cell.FAILED, 1, "permanent")
    assert "authentication failed" in cell.error


def test_a_failed_tool_is_a_result_and_is_not_retried(team, tmp_path, start_worker):
    start_worker("a", **RETRY)
    plan = {
        "name": "failing-tool",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {
            "directory": "missing",
            "size": "4M",
            "bs": "4k",
            "runtime": 1,
            "time_based": True,
            "rw": "read",
        },
    }
    run = orchestration.start_run(team, plan)
    wait_for(lambda: finished(run))
    cell = run.cells.get()
    assert (cell.status, cell.attempt, cell.error_kind) == (Cell.FAILED, 1, "permanent")
