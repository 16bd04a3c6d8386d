""" "Test connection" runs its clients the way a run's local tools run
(docs/trust-model.md): in the sandbox, as the sandbox user, with an empty
environment. It names a port that speaks another protocol within seconds, and
predicts the fio "Permission denied" of a directory the sandbox user cannot write,
with the fix."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import tempfile
import threading
import time

import pytest

from benchapp.runs.connection import test_connection as check_target
from tests.benchapp.ui_data import make_target
from tests.support.sshd import sshd  # noqa: F401 (fixture)

pytestmark = pytest.mark.django_db


class FakeRedis:
    """Answers PING and AUTH like Redis and keeps every byte it receives."""

    def __init__(self):
        self.received = bytearray()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn):
        conn.settimeout(5)
        try:
            while chunk := conn.recv(4096):
                self.received += chunk
                conn.sendall(
                    b"+OK\r\n" * chunk.count(b"AUTH") + b"+PONG\r\n" * chunk.count(b"PING")
                )
        except OSError:
            pass
        finally:
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join(timeout=2)
        self.sock.close()


@pytest.fixture
def fake_redis():
    server = FakeRedis()
    yield server
    server.close()


@pytest.fixture
def data_dir():
    """A directory an operator gave the target, owned by root, mode 0755."""
    path = tempfile.mkdtemp(prefix="bb-conn-", dir="/var/tmp")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_clients_see_an_empty_environment(team, fake_redis, monkeypatch):
    """redis-cli sends AUTH with REDISCLI_AUTH from its environment: the web
    server's environment would reach the server; the sandbox's does not."""
    monkeypatch.setenv("REDISCLI_AUTH", "web-server-env-canary")
    target = make_target(team, name="cache", kind="redis", port=fake_redis.port, user="")
    result = check_target(target)
    assert result["ok"], result["error"]
    assert result["access"] == f"redis on 127.0.0.1:{fake_redis.port} answered PING"
    assert b"PING" in fake_redis.received
    assert b"web-server-env-canary" not in fake_redis.received
    assert b"AUTH" not in fake_redis.received


def test_the_clients_run_as_the_sandbox_user(team, data_dir, settings):
    """A directory root can write and the sandbox user cannot: the check says the
    sandbox user cannot, with the fix; after the fix it passes."""
    user = settings.BENCHBOARD_SANDBOX_USER
    target = make_target(
        team,
        name="disk",
        kind="host",
        host="",
        port=None,
        user="",
        directory=data_dir,
        data_dirs=[data_dir],
    )
    result = check_target(target)
    assert not result["ok"]
    assert result["error"] == (
        f"the sandbox user {user} cannot write {data_dir} (owner root, mode 755): fio would "
        f"fail with 'Permission denied'. Fix: chown {user} {data_dir} (or give {user} write "
        "access another way)"
    )
    os.chown(data_dir, pwd.getpwnam(user).pw_uid, -1)
    result = check_target(target)
    assert result["ok"], result["error"]
    assert "the sandbox user can write it" in result["access"]


def test_a_directory_outside_the_data_directories_is_named(team, data_dir):
    target = make_target(
        team, name="disk", kind="host", host="", port=None, user="", directory=data_dir
    )
    result = check_target(target)
    assert result["error"].startswith(
        f"directory {data_dir} is not in this target's data directories (none)"
    )


# Real servers: a private Redis and PostgreSQL (the app's own may not be targets)
# and this machine's MariaDB.
@pytest.mark.parametrize(
    "kind, server, name, other",
    [
        ("mysql", "private_redis", "MySQL", "Redis"),
        ("postgres", "mariadb", "PostgreSQL", "MySQL"),
        ("redis", "private_postgres_server", "Redis", "PostgreSQL"),
        ("mysql", "private_postgres_server", "MySQL", "PostgreSQL"),
    ],
)
def test_a_port_speaking_another_protocol_is_named_within_seconds(
    request, team, kind, server, name, other
):
    port = 3306 if server == "mariadb" else request.getfixturevalue(server).port
    target = make_target(team, name="wrong", kind=kind, port=port, user="root")
    start = time.monotonic()
    result = check_target(target)
    elapsed = time.monotonic() - start
    assert not result["ok"]
    assert result["error"] == (
        f"127.0.0.1:{port} answered like {other}, not {name}: check the target's host and port"
    )
    assert elapsed <= 5, elapsed


def test_an_ssh_port_is_named_for_a_database_target(team, sshd):
    target = make_target(team, name="wrong", kind="postgres", port=sshd.port, user="root")
    result = check_target(target)
    assert result["error"] == (
        f"127.0.0.1:{sshd.port} answered like SSH, not PostgreSQL: check the target's host and port"
    )


def test_a_silent_port_is_not_named(team):
    """A server that says nothing to any question is not guessed at."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    try:
        port = silent.getsockname()[1]
        target = make_target(team, name="quiet", kind="mysql", port=port, user="root")
        start = time.monotonic()
        result = check_target(target)
        elapsed = time.monotonic() - start
    finally:
        silent.close()
    assert elapsed <= 5, elapsed
    assert result["error"] == (
        f"127.0.0.1:{port} does not answer as MySQL within 3 s (it may be another service, "
        "or a firewall drops the packets)"
    )
