"""LocalExecutor and SSHExecutor against real processes and a real sshd.

Leftover processes are looked for with ps on the host that ran them (over the
same executor while it is reachable). Each tool run is tagged with an
unusual duration (e.g. `sleep 29.4173`) or found by its session id.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import threading
import time

import pytest

from runners.command import Command, Upload
from runners.errors import RunnerError
from runners.executors import LocalExecutor, SSHExecutor, trust_on_first_use
from runners.executors.base import CHECK_EVERY
from tests.support.sshd import sshd, sshd_disposable  # noqa: F401

GRACE = 1.0


def make_ssh(server, **kwargs) -> SSHExecutor:
    options = {
        "private_key": server.client_key,
        "known_host_key": server.host_key,
        "connect_timeout": 5,
    }
    options.update(kwargs)
    return SSHExecutor(server.host, server.port, server.user, **options)


@pytest.fixture(params=["local", "ssh"])
def executor(request):
    """Each test runs twice: on a LocalExecutor and on an SSHExecutor."""
    if request.param == "local":
        ex = LocalExecutor()
    else:
        ex = make_ssh(request.getfixturevalue("sshd"))
    ex.grace = GRACE
    yield ex
    ex.close()


@pytest.fixture
def server(sshd):  # noqa: F811 - the shared sshd fixture, under a name that is not imported
    return sshd


@pytest.fixture
def fresh_server(sshd_disposable):  # noqa: F811 - a private sshd this test may kill
    return sshd_disposable


def marker() -> str:
    """A sleep duration no other process on this machine is likely to use."""
    return f"{random.randint(20, 40)}.{random.randint(1000, 9999)}"


def processes(ex) -> list[tuple[int, str]]:
    """(session id, args) of every process on the executor's host, via ps on it."""
    listing = ex.run(Command(argv=["ps", "-eo", "sid=,args="])).stdout
    rows = [line.strip().split(None, 1) for line in listing.splitlines() if line.strip()]
    return [(int(row[0]), row[1] if len(row) > 1 else "") for row in rows]


def tool_processes(rows, mark: str) -> list[str]:
    """Processes running the tagged tool (not our ps or the run script's sh)."""
    return [args for _, args in rows if mark in args and not args.startswith(("sh -c", "ps "))]


def local_tool_processes(mark: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args="], check=True, capture_output=True, text=True).stdout
    return [
        line for line in out.splitlines() if mark in line and not line.startswith(("sh -c", "ps "))
    ]


def wait_until(predicate, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


# -- runs ---------------------------------------------------------------------------


def test_executor_run_returns_output_and_exit_code(executor):
    result = executor.run(Command(argv=["sh", "-c", "echo out; echo err >&2; exit 3"]))
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert result.output == "out\nerr\n"
    assert (result.timed_out, result.cancelled) == (False, False)
    assert 0 < result.duration < 5


def test_executor_run_streams_chunks_as_they_arrive(executor):
    seen = []
    command = Command(argv=["sh", "-c", "echo first; sleep 1; echo second; echo oops >&2"])
    result = executor.run(
        command, on_output=lambda stream, text: seen.append((time.time(), stream, text))
    )
    first_at = next(t for t, stream, text in seen if "first" in text)
    assert first_at < result.finished - 0.7
    assert "".join(text for _, stream, text in seen if stream == "stdout") == "first\nsecond\n"
    assert "".join(text for _, stream, text in seen if stream == "stderr") == "oops\n"
    assert result.stdout == "first\nsecond\n"


def test_executor_run_keeps_whole_large_output(executor):
    result = executor.run(Command(argv=["seq", "1", "200000"]))
    assert result.stdout == "".join(f"{i}\n" for i in range(1, 200001))


def test_executor_killed_tool_keeps_its_whole_output_and_tail(executor):
    # A burst of output, then silence until the tool is killed: every line is
    # kept, in the Execution, in what on_output saw and in the live tail.
    script = f"seq 1 3000; echo printed >&2; exec sleep {marker()}"
    whole = "".join(f"{i}\n" for i in range(1, 3001))
    seen = []
    result = executor.run(
        Command(argv=["sh", "-c", script]),
        timeout=2,
        on_output=lambda stream, text: seen.append((stream, text)),
    )
    assert (result.timed_out, result.stdout, result.stderr) == (True, whole, "printed\n")
    assert "".join(text for stream, text in seen if stream == "stdout") == whole
    bg = executor.start(Command(argv=["sh", "-c", script]))
    assert wait_until(lambda: "printed" in bg.stderr.text(), 10)
    tail = bg.tail()
    result = executor.stop(bg, grace=GRACE)
    assert (result.stdout, result.stderr) == (whole, "printed\n")
    assert "3000\n" in tail and "printed\n" in tail


def test_ssh_run_wakes_on_output_not_on_a_timer(server, monkeypatch):
    # The reader sleeps on the channel: a silent 2 s tool wakes it about once
    # a second (the liveness check), where a 50 ms poll woke it 40 times.
    wakes = []
    drain = SSHExecutor._drain
    monkeypatch.setattr(
        SSHExecutor, "_drain", staticmethod(lambda bg, chan: wakes.append(1) or drain(bg, chan))
    )
    with make_ssh(server) as ex:
        assert ex.run(Command(argv=["sh", "-c", "sleep 2; echo end"])).stdout == "end\n"
    assert len(wakes) <= 2 / CHECK_EVERY + 4


def test_executor_run_passes_env_and_resolves_workdir(executor):
    command = Command(
        argv=["sh", "-c", 'echo "$GREETING $WHERE"'], env={"GREETING": "hi", "WHERE": "@WORKDIR@/x"}
    )
    assert executor.run(command).stdout == f"hi {executor.workdir}/x\n"


def test_executor_run_masks_secrets_in_output(executor):
    result = executor.run(Command(argv=["echo", "pw=hunter2"], secrets=["hunter2"]))
    assert result.stdout == "pw=****\n"


def test_executor_upload_sets_mode_before_use(executor):
    path = executor.upload("secret.cnf", b"[client]\npassword=x\n")
    script = executor.upload("run.sh", b"#!/bin/sh\necho ran\n", mode=0o700)
    stat = executor.run(
        Command(argv=["stat", "-c", "%a %s", path, script, executor.workdir])
    ).stdout
    assert [line.split()[0] for line in stat.splitlines()] == ["600", "700", "700"]
    assert executor.read_file(path) == b"[client]\npassword=x\n"
    assert executor.run(Command(argv=[script])).stdout == "ran\n"


def test_executor_command_uploads_are_written_first(executor):
    command = Command(
        argv=["cat", "@WORKDIR@/query.sql"], uploads=[Upload("query.sql", b"SELECT 1;\n")]
    )
    assert executor.run(command).stdout == "SELECT 1;\n"


def test_executor_missing_binary_names_its_package(executor):
    with pytest.raises(RunnerError) as caught:
        executor.run(Command(argv=["sysbench-nope", "--version"], package="sysbench"))
    where = "localhost" if isinstance(executor, LocalExecutor) else "127.0.0.1"
    assert caught.value.message == (
        f"sysbench-nope is not installed on {where} (install the Debian package 'sysbench')"
    )
    assert caught.value.permanent is True


# -- timeout, cancel, background ---------------------------------------------------------


def test_executor_timeout_kills_the_tool(executor):
    mark = marker()
    started = time.monotonic()
    result = executor.run(Command(argv=["sleep", mark]), timeout=1)
    assert (result.exit_code, result.timed_out, result.cancelled) == (None, True, False)
    assert time.monotonic() - started < 1 + GRACE + 2
    assert tool_processes(processes(executor), mark) == []


def test_executor_timeout_kills_a_tool_that_ignores_term(executor):
    mark = marker()
    command = Command(argv=["sh", "-c", f"trap '' TERM; sleep {mark}; echo survived"])
    result = executor.run(command, timeout=0.5)
    assert (result.exit_code, result.timed_out, "survived" in result.stdout) == (None, True, False)
    assert result.duration < 0.5 + GRACE + 2
    assert tool_processes(processes(executor), mark) == []


def test_executor_cancel_from_another_thread_kills_the_group(executor):
    # stress-ng forks a worker: the whole session must go, not only the leader.
    mark = str(random.randint(300, 900))
    command = Command(argv=["stress-ng", "--cpu", "1", "--timeout", mark, "--quiet"])
    sessions = []

    def find_and_cancel():
        def tool_sessions():
            rows = processes(executor)
            sessions[:] = {
                sid
                for sid, args in rows
                if f"--timeout {mark}" in args and args.startswith("stress-ng")
            }
            return len(sessions) > 0

        wait_until(tool_sessions, 10)
        executor.cancel()

    canceller = threading.Thread(target=find_and_cancel)
    canceller.start()
    result = executor.run(command, timeout=30)
    canceller.join()
    assert (result.exit_code, result.cancelled, result.timed_out) == (None, True, False)
    assert result.duration < 10
    assert sessions
    assert [args for sid, args in processes(executor) if sid in sessions] == []


def test_executor_background_start_and_stop(executor):
    bg = executor.start(
        Command(argv=["stress-ng", "--cpu", "1", "--timeout", "29", "--metrics-brief"])
    )
    time.sleep(1.5)
    result = executor.stop(bg, grace=2)
    assert "stress-ng" in result.output
    assert result.duration < 6
    assert [
        a for a in tool_processes(processes(executor), "--timeout 29") if "--metrics-brief" in a
    ] == []


# -- SSH connection errors -----------------------------------------------------------------


def test_ssh_trust_on_first_use_returns_the_servers_key(server):
    line, fingerprint = trust_on_first_use(server.host, server.port)
    assert line == server.host_key
    expected = subprocess.run(
        ["ssh-keygen", "-lf", str(server.directory / "host_ed25519.pub")],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()[1]
    assert fingerprint == expected


def test_ssh_unknown_host_key_is_refused(server):
    _, fingerprint = trust_on_first_use(server.host, server.port)
    with pytest.raises(RunnerError) as caught:
        make_ssh(server, known_host_key=None).check()
    assert caught.value.permanent is True
    assert caught.value.message == (
        f"unknown host key for 127.0.0.1:{server.port}: it offered ssh-ed25519 {fingerprint}; "
        "accept it explicitly (trust on first use) first"
    )


def test_ssh_changed_host_key_is_refused(server):
    other_key = (server.directory / "client_ed25519.pub").read_text()
    with pytest.raises(RunnerError) as caught:
        make_ssh(server, known_host_key=other_key).check()
    _, offered = trust_on_first_use(server.host, server.port)
    assert caught.value.permanent is True
    assert caught.value.message.startswith(
        f"the host key of 127.0.0.1:{server.port} has changed: it offered ssh-ed25519 {offered}, expected SHA256:"
    )


def test_ssh_wrong_private_key_is_an_authentication_failure(server, tmp_path):
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "k")], check=True
    )
    with pytest.raises(RunnerError) as caught:
        make_ssh(server, private_key=(tmp_path / "k").read_text()).check()
    assert caught.value.permanent is True
    assert caught.value.message == f"authentication failed for root@127.0.0.1:{server.port}"


def test_ssh_wrong_password_is_an_authentication_failure(server):
    # root has no usable password here, so only a refused password is testable.
    with pytest.raises(RunnerError) as caught:
        make_ssh(server, private_key=None, password="not-the-password").check()
    assert (caught.value.permanent, caught.value.message) == (
        True,
        f"authentication failed for root@127.0.0.1:{server.port}",
    )
    assert "not-the-password" not in str(caught.value)


def test_ssh_connection_refused_is_transient(server):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    with pytest.raises(RunnerError) as caught:
        SSHExecutor(
            "127.0.0.1", closed_port, known_host_key=server.host_key, connect_timeout=2
        ).check()
    assert caught.value.permanent is False
    assert caught.value.message.startswith(f"cannot reach 127.0.0.1:{closed_port}:")


def test_ssh_sshd_killed_mid_run_is_transient_and_leaves_no_tool(fresh_server):
    server = fresh_server
    ex = make_ssh(server)
    ex.grace = GRACE
    mark = marker()
    started = threading.Event()

    def on_output(stream, text):
        if "partial" in text:
            started.set()

    running_before = []

    def kill_sshd():
        if started.wait(10):
            running_before.extend(local_tool_processes(mark))
            server.kill_all()

    killer = threading.Thread(target=kill_sshd)
    killer.start()
    try:
        with pytest.raises(RunnerError) as caught:
            ex.run(
                Command(argv=["sh", "-c", f"echo partial; exec sleep {mark}"]),
                timeout=20,
                on_output=on_output,
            )
    finally:
        killer.join()
        ex._drop_connection()
    assert caught.value.permanent is False
    assert (
        caught.value.message
        == f"the connection to 127.0.0.1:{server.port} was lost while sh was running"
    )
    assert caught.value.output == "partial\n"
    assert f"sleep {mark}" in running_before  # beside its `timeout` wrapper
    # The remote watchdog saw the session vanish and killed the tool (TERM,
    # then KILL after GRACE); the host is this machine, so local ps sees it.
    assert wait_until(lambda: local_tool_processes(mark) == [], GRACE + 3)
    # The work dir could not be removed over the dead connection; the
    # "remote" host is this machine (removed only now: the watchdog reads
    # the pid file in it). The remote wrapper may still be removing its own
    # output files as the tool's end lets it finish: a file gone meanwhile is
    # no error for this clean-up.
    shutil.rmtree(ex._workdir, ignore_errors=True)


def test_ssh_silent_dead_connection_is_detected_by_the_probe(fresh_server):
    # A frozen sshd (SIGSTOP) neither resets the connection nor answers: only
    # the keepalive probe can tell the connection is dead.
    import os
    import signal

    from tests.support.sshd import _sshd_descendants

    server = fresh_server
    ex = make_ssh(server, keepalive=1)
    ex.grace = GRACE
    mark = marker()
    started = threading.Event()

    def freeze():
        if started.wait(10):
            for pid in _sshd_descendants(server.process.pid):
                os.kill(pid, signal.SIGSTOP)

    freezer = threading.Thread(target=freeze)
    freezer.start()
    began = time.monotonic()
    try:
        with pytest.raises(RunnerError) as caught:
            ex.run(
                Command(argv=["sh", "-c", f"echo partial; exec sleep {mark}"]),
                timeout=20,
                on_output=lambda stream, text: started.set(),
            )
    finally:
        freezer.join()
        server.kill_all()  # SIGKILL ends the frozen session: the watchdog fires
        ex._drop_connection()
    assert time.monotonic() - began < 8
    assert (caught.value.permanent, caught.value.output) == (False, "partial\n")
    assert wait_until(lambda: local_tool_processes(mark) == [], GRACE + 3)
    # The work dir could not be removed over the dead connection; the
    # "remote" host is this machine (removed only now: the watchdog reads
    # the pid file in it). The remote wrapper may still be removing its own
    # output files as the tool's end lets it finish: a file gone meanwhile is
    # no error for this clean-up.
    shutil.rmtree(ex._workdir, ignore_errors=True)


# ---------------------------------------------------------------- client clock


def test_executor_client_clock_stamps_the_tool_and_leaves_no_trace(executor):
    result = executor.run(Command(argv=["sh", "-c", "sleep 0.3; echo out; echo err >&2"]))
    assert (result.stdout, result.stderr) == ("out\n", "err\n")
    # The client's own clock around the tool: inside the worker's stamps
    # (same machine here), at least the tool's 0.3 s apart.
    offset = executor.clock_offset()
    assert offset is not None and abs(offset) < 0.2
    start, end = result.client_started - offset, result.client_finished - offset
    assert result.started - 0.05 <= start < end <= result.finished + 0.05
    assert end - start >= 0.3


def test_executor_clock_marker_split_across_reads_is_still_taken():
    from runners.executors.base import Background
    from runners.executors.ssh import _take_clock

    bg = Background(Command(argv=["x"]), "h")
    line = b"tool said @ once\n@@benchboard: clock 1700000000.25 1700000004.75@@\n"
    kept = b"".join(_take_clock(bg, line[i : i + 7]) for i in range(0, len(line), 7))
    assert kept + bg.clock_held == b"tool said @ once\n"
    assert (bg.client_started, bg.client_finished) == (1700000000.25, 1700000004.75)
