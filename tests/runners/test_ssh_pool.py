"""SSH connection reuse (runners/executors/pool.py) against a real sshd.

Connections are counted by sshd itself (its log of accepted logins), not by
the pool's own bookkeeping.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from runners.command import Command
from runners.executors import SSHExecutor
from runners.executors.pool import SSHPool, pool_key
from tests.support.sshd import _sshd_descendants, sshd_disposable  # noqa: F401


@pytest.fixture
def server(sshd_disposable):  # noqa: F811 - a private sshd: counts and restarts are ours
    return sshd_disposable


@pytest.fixture
def pool():
    made = SSHPool(idle_timeout=30, probe_timeout=1)
    yield made
    made.close_idle()


def cell(server, pool, **kwargs) -> SSHExecutor:
    """One cell's executor, as CellContext makes it: from the pool, closed after the cell."""
    options = {
        "private_key": server.client_key,
        "known_host_key": server.host_key,
        "connect_timeout": 5,
        "pool": pool,
    }
    options.update(kwargs)
    ex = SSHExecutor(server.host, server.port, server.user, **options)
    ex.grace = 1.0
    return ex


def echo(executor, text: str) -> str:
    return executor.run(Command(argv=["echo", text]), timeout=20).stdout


def test_two_cells_on_one_host_use_one_connection(server, pool):
    first = cell(server, pool)
    assert echo(first, "one") == "one\n"
    transport = first._transport()
    workdir = first.workdir
    first.close()
    second = cell(server, pool)
    assert echo(second, "two") == "two\n"
    assert second._transport() is transport
    assert second.workdir != workdir
    second.close()
    assert server.accepted() == 1
    assert pool.idle_count() == 1


def test_the_cell_work_dir_is_private_and_removed_at_close(server, pool):
    ex = cell(server, pool)
    ex.upload("secret.cnf", b"password=x")
    listing = ex.run(Command(argv=["stat", "-c", "%a %U", ex.workdir])).stdout.split()
    assert listing == ["700", "root"]
    workdir = ex.workdir
    ex.close()
    other = cell(server, pool)
    assert other.run(Command(argv=["test", "-e", workdir])).exit_code == 1
    other.close()


def test_another_credential_or_host_key_never_shares_a_connection(server, pool):
    assert pool_key("root", "h", 22, "a", "k") != pool_key("root", "h", 22, "b", "k")
    assert pool_key("root", "h", 22, "a", "k") != pool_key("root", "h", 22, "a", "k2")
    first = cell(server, pool)
    echo(first, "x")
    first.close()
    # Same host and user, the same key text written differently: another pool entry.
    other = cell(server, pool, private_key=server.client_key + "\n")
    echo(other, "y")
    other.close()
    assert server.accepted() == 2


def test_dropped_connection_between_cells_reconnects(server, pool):
    first = cell(server, pool)
    echo(first, "before")
    first.close()
    server.drop_connections()
    time.sleep(0.3)
    second = cell(server, pool)
    assert echo(second, "after") == "after\n"
    second.close()
    assert server.accepted() == 2


def test_sshd_restart_between_cells_reconnects(server, pool):
    first = cell(server, pool)
    echo(first, "before")
    first.close()
    server.restart()
    second = cell(server, pool)
    assert echo(second, "after") == "after\n"
    second.close()
    assert server.accepted() == 2


def test_silent_dead_idle_connection_fails_the_probe_and_is_replaced(server, pool):
    # A frozen per-connection sshd neither resets the connection nor answers:
    # only the probe before reuse can tell.
    first = cell(server, pool)
    echo(first, "before")
    first.close()
    frozen = _sshd_descendants(server.process.pid)
    for pid in frozen:
        os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        second = cell(server, pool)
        assert echo(second, "after") == "after\n"
        assert time.monotonic() - started < 10
        second.close()
    finally:
        for pid in frozen:
            os.kill(pid, signal.SIGKILL)
    assert server.accepted() == 2


def test_a_reused_connection_never_mixes_two_cells_output(server, pool):
    first = cell(server, pool)
    # Still printing its marker when the cell ends: close() kills it.
    chatty = first.start(Command(argv=["sh", "-c", "while :; do echo CELL-ONE; sleep 0.02; done"]))
    time.sleep(0.5)
    transport = first._transport()
    first.close()
    assert "CELL-ONE" in chatty.stdout.text()
    second = cell(server, pool)
    out = second.run(
        Command(argv=["sh", "-c", "for i in 1 2 3 4 5; do echo CELL-TWO; sleep 0.1; done"]),
        timeout=20,
    )
    assert second._transport() is transport
    assert out.stdout == "CELL-TWO\n" * 5
    assert "CELL-TWO" not in chatty.stdout.text()
    second.close()


def test_concurrent_cells_on_one_host_get_their_own_connections(server, pool):
    outputs = {}

    def one(name):
        ex = cell(server, pool)
        try:
            outputs[name] = ex.run(
                Command(argv=["sh", "-c", f"for i in 1 2 3; do echo {name}; sleep 0.2; done"]),
                timeout=20,
            )
        finally:
            ex.close()

    threads = [threading.Thread(target=one, args=(f"M{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert outputs["M0"].stdout == "M0\n" * 3
    assert outputs["M1"].stdout == "M1\n" * 3
    assert server.accepted() == 2
    assert pool.idle_count() == 2


def test_cancel_on_a_reused_connection_kills_the_remote_tool(server, pool):
    first = cell(server, pool)
    echo(first, "warm")
    first.close()
    ex = cell(server, pool)
    tag = "29.6173"
    found = {}

    def cancel_when_running():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if _sleeping(tag):
                found["running"] = True
                ex.cancel()
                return
            time.sleep(0.05)

    killer = threading.Thread(target=cancel_when_running)
    killer.start()
    execution = ex.run(Command(argv=["sleep", tag]), timeout=60)
    killer.join()
    assert found.get("running")
    assert execution.cancelled
    deadline = time.monotonic() + 5
    while _sleeping(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _sleeping(tag)
    ex.close()
    assert server.accepted() == 1


def test_idle_connections_are_closed_after_the_idle_timeout(server):
    short = SSHPool(idle_timeout=0.5, probe_timeout=1)
    ex = cell(server, short)
    echo(ex, "x")
    transport = ex._transport()
    ex.close()
    assert short.idle_count() == 1
    deadline = time.monotonic() + 5
    # The reaper takes it out of the pool, then closes it.
    while (short.idle_count() or transport.is_active()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert short.idle_count() == 0
    assert not transport.is_active()


def _sleeping(tag: str) -> bool:
    import subprocess

    out = subprocess.run(["pgrep", "-f", f"^sleep {tag}$"], capture_output=True, text=True)
    return bool(out.stdout.strip())
