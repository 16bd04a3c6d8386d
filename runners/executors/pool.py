"""SSHPool: a process's SSH connections, reused across cells and runs.

Opening a connection costs a TCP and SSH handshake and an authentication
(~0.3-0.5 s); a worker that runs many cells on one host pays it once. A
connection is leased to one executor at a time (so one cell's channels and
SFTP session never serve another cell) and handed back by the executor's
close(). The key is "user@host:port" plus a digest of the credential and
the pinned host key: an executor with another secret or another expected
host key never gets a connection made with different trust.

Before an idle connection is leased again it must still be active
(transport.is_active()) and answer a keepalive request within
PROBE_TIMEOUT seconds; otherwise it is closed and a new one is made. Idle
connections are closed after `idle_timeout` seconds by a reaper thread.
A forked child (a Celery pool process) starts with an empty pool: the
parent's sockets are never used by two processes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

# Seconds an idle connection is kept (BENCHBOARD_SSH_IDLE_SECONDS overrides).
IDLE_TIMEOUT = 60.0
# Seconds a reused connection has to answer the keepalive probe.
PROBE_TIMEOUT = 5.0
# Idle connections kept per key; more are closed when handed back.
MAX_IDLE_PER_KEY = 4


def pool_key(user: str, host: str, port: int, secret: str | None, host_key: str | None) -> str:
    """ "user@host:port#digest": the digest covers the secret and the pinned host key."""
    digest = hashlib.sha256(f"{secret or ''}\0{host_key or ''}".encode()).hexdigest()[:16]
    return f"{user}@{host}:{port}#{digest}"


@dataclass(eq=False)
class Connection:
    """A connected paramiko SSHClient and the SFTP session opened on it."""

    key: str
    client: object  # paramiko.SSHClient
    sftp: object | None = None  # paramiko.SFTPClient
    idle_since: float = field(default_factory=time.monotonic)
    # (seconds the host's clock is ahead of the worker's, monotonic time it
    # was measured): SSHExecutor.clock_offset, once per connection and while fresh.
    clock: tuple[float, float] | None = None

    @property
    def transport(self):
        return self.client.get_transport()

    def active(self) -> bool:
        transport = self.transport
        return transport is not None and transport.is_active()

    def answers(self, timeout: float) -> bool:
        """Active and a keepalive global request is answered within timeout s."""
        transport = self.transport
        if transport is None or not transport.is_active():
            return False
        answered = threading.Event()

        def ask():
            # Any exception means no answer: `answered` stays unset.
            with contextlib.suppress(Exception):
                transport.global_request("keepalive@openssh.com", wait=True)
                answered.set()

        threading.Thread(target=ask, daemon=True).start()
        return answered.wait(timeout) and transport.is_active()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self.sftp is not None:
                self.sftp.close()
        with contextlib.suppress(Exception):
            self.client.close()
        self.sftp = None


class SSHPool:
    """Idle connections by key; lease() one, release() or discard() it after."""

    def __init__(self, idle_timeout: float = IDLE_TIMEOUT, probe_timeout: float = PROBE_TIMEOUT):
        self.idle_timeout = idle_timeout
        self.probe_timeout = probe_timeout
        self._idle: dict[str, list[Connection]] = {}
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._reaper: threading.Thread | None = None
        self._wake = threading.Event()
        self.opened = 0  # connections made by this pool (for tests and the bench)

    def lease(self, key: str, connect: Callable[[], object]) -> Connection:
        """A live connection for key: a checked idle one, else connect() -> SSHClient."""
        while (conn := self._take(key)) is not None:
            if conn.answers(self.probe_timeout):
                return conn
            conn.close()
        conn = Connection(key, connect())
        with self._lock:
            self.opened += 1
        return conn

    def release(self, conn: Connection) -> None:
        """Hand a connection back for reuse (closed if it is dead or too many are idle)."""
        if not conn.active():
            conn.close()
            return
        conn.idle_since = time.monotonic()
        with self._lock:
            self._forked()
            idle = self._idle.setdefault(conn.key, [])
            if len(idle) >= MAX_IDLE_PER_KEY:
                extra = conn
            else:
                idle.append(conn)
                extra = None
            self._start_reaper()
        if extra is not None:
            extra.close()

    @staticmethod
    def discard(conn: Connection) -> None:
        """Close a connection that must not be reused."""
        conn.close()

    def idle_count(self, key: str | None = None) -> int:
        with self._lock:
            self._forked()
            if key is not None:
                return len(self._idle.get(key, []))
            return sum(len(v) for v in self._idle.values())

    def close_idle(self, older_than: float = 0.0) -> None:
        """Close idle connections idle for more than older_than seconds."""
        now = time.monotonic()
        stale = []
        with self._lock:
            self._forked()
            for key, idle in list(self._idle.items()):
                keep = [c for c in idle if now - c.idle_since <= older_than]
                stale += [c for c in idle if now - c.idle_since > older_than]
                if keep:
                    self._idle[key] = keep
                else:
                    del self._idle[key]
        for conn in stale:
            conn.close()

    # -- internals -----------------------------------------------------------

    def _take(self, key: str) -> Connection | None:
        with self._lock:
            self._forked()
            idle = self._idle.get(key)
            return idle.pop() if idle else None

    def _forked(self) -> None:
        """In a forked child, forget the parent's connections (never close them here)."""
        if os.getpid() != self._pid:
            self._pid = os.getpid()
            self._idle = {}
            self._reaper = None

    def _start_reaper(self) -> None:
        if self._reaper is None or not self._reaper.is_alive():
            self._reaper = threading.Thread(target=self._reap, daemon=True, name="ssh-pool-reaper")
            self._reaper.start()

    def _reap(self) -> None:
        period = max(0.2, min(self.idle_timeout / 2, 10.0))
        while True:
            self._wake.wait(period)
            self.close_idle(self.idle_timeout)
            with self._lock:
                if not self._idle:
                    self._reaper = None
                    return


_shared: SSHPool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> SSHPool:
    """The process-wide pool (idle timeout from BENCHBOARD_SSH_IDLE_SECONDS)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            seconds = float(os.environ.get("BENCHBOARD_SSH_IDLE_SECONDS", IDLE_TIMEOUT))
            _shared = SSHPool(idle_timeout=seconds)
        return _shared
