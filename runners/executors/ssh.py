"""SSHExecutor: Commands on a remote host over paramiko, with pinned host keys.

Host keys are pinned: the client's policy is RejectPolicy and only the key
the caller knows ("ssh-ed25519 AAAA...") is trusted; trust_on_first_use()
fetches a server's key and fingerprint for a person to accept explicitly.
How tools are detached remotely is described in runners/executors/remote.py.

Dead connections: the transport sends keepalives every `keepalive` seconds;
a run whose channel has been silent for two keepalive periods sends a
global request and waits `keepalive` seconds for any answer, and declares
the connection lost without one. A connection that drops with a reset is
seen at once (the transport stops).

Reuse: with a pool (runners/executors/pool.py) the connection is leased
from it and handed back by close(), so a worker opens one connection per
host and credential, not one per cell. The work dir is made and removed
over the connection's SFTP session: no remote shell is started for it.
"""

from __future__ import annotations

import itertools
import re
import secrets
import select
import stat
import threading
import time

import paramiko

from runners.errors import RunnerError
from runners.executors import remote
from runners.executors.base import (
    CHECK_EVERY,
    Background,
    Executor,
    check_upload_name,
    not_installed,
)
from runners.executors.hostkeys import (
    RecordingReject,
    fingerprint,
    load_private_key,
    parse_key_line,
)
from runners.executors.pool import Connection, SSHPool, pool_key

READ_SIZE = 65536
# When no timeout is given, the remote `timeout` backstop still bounds a run.
MAX_RUNTIME = 6 * 3600.0
# Extra seconds the remote backstop waits beyond the client's own timeout.
BACKSTOP_MARGIN = 5.0
# paramiko's transport thread reads its socket with a 0.1 s timeout, waking ten
# times a second per connection (pooled idle ones too) only to check for a due
# keepalive; once a second is enough for keepalives of several seconds.
TRANSPORT_WAKE = 1.0
# Clock readings (after the first, which waits for the login) per offset
# measurement; the one with the shortest round trip counts.
CLOCK_SAMPLES = 5
# A measured clock offset is trusted this long (seconds), then read again.
CLOCK_TTL_S = 600.0
_CLOCK = re.compile(re.escape(remote.CLOCK_MARKER.encode()) + rb" (\S+) (\S+)@@\n?")
_MARKER = remote.CLOCK_MARKER.encode()


class SSHExecutor(Executor):
    """Runs Commands on host over SSH (key or password authentication)."""

    def __init__(
        self,
        host: str,
        port: int = 22,
        user: str = "root",
        *,
        private_key: str | None = None,
        password: str | None = None,
        known_host_key: str | None = None,
        connect_timeout: float = 10.0,
        keepalive: int = 15,
        pool: SSHPool | None = None,
    ):
        super().__init__()
        self.host = host
        self.port = port
        self.user = user
        self._private_key = private_key
        self._password = password
        self.known_host_key = known_host_key
        self.connect_timeout = connect_timeout
        self.keepalive = keepalive
        self.pool = pool
        self.pool_key = pool_key(user, host, port, private_key or password, known_host_key)
        self._conn: Connection | None = None
        self._conn_lock = threading.RLock()
        self._probe_lock = threading.Lock()
        self._last_seen = time.monotonic()
        self._last_probe = 0.0
        self._ids = itertools.count(1)

    def __repr__(self) -> str:
        return f"SSHExecutor({self.user}@{self.host}:{self.port})"

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"

    # -- connection ------------------------------------------------------------

    def _transport(self) -> paramiko.Transport:
        """The live transport, connecting (again) when needed."""
        with self._conn_lock:
            if self._conn is None or not self._conn.active():
                self._drop_connection()
                if self.pool is not None:
                    self._conn = self.pool.lease(self.pool_key, self._connect)
                else:
                    self._conn = Connection(self.pool_key, self._connect())
                self._conn.transport.set_keepalive(self.keepalive)
                self._last_seen = time.monotonic()
            return self._conn.transport

    def _connect(self) -> paramiko.SSHClient:
        """Open and authenticate a connection; map every failure to a clear RunnerError."""
        client = paramiko.SSHClient()
        policy = RecordingReject()
        client.set_missing_host_key_policy(policy)
        if self.known_host_key:
            key = parse_key_line(self.known_host_key)
            name = self.host if self.port == 22 else f"[{self.host}]:{self.port}"
            client.get_host_keys().add(name, key.get_name(), key)
        pkey = load_private_key(self._private_key) if self._private_key else None
        try:
            client.connect(
                self.host,
                self.port,
                self.user,
                pkey=pkey,
                password=self._password,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                channel_timeout=self.connect_timeout,
                look_for_keys=False,
                allow_agent=False,
            )
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise RunnerError(
                f"the host key of {self.where} has changed: it offered {exc.key.get_name()} "
                f"{fingerprint(exc.key)}, expected {fingerprint(exc.expected_key)}; "
                "refusing to connect",
                permanent=True,
            ) from None
        except paramiko.AuthenticationException:
            client.close()
            raise RunnerError(
                f"authentication failed for {self.user}@{self.where}", permanent=True
            ) from None
        except paramiko.SSHException as exc:
            client.close()
            if policy.offered is not None:
                raise RunnerError(
                    f"unknown host key for {self.where}: it offered {policy.offered.get_name()} "
                    f"{fingerprint(policy.offered)}; accept it explicitly (trust on first use) first",
                    permanent=True,
                ) from None
            raise RunnerError(f"SSH to {self.where} failed: {exc}") from None
        except (OSError, EOFError) as exc:
            client.close()
            raise RunnerError(f"cannot reach {self.where}: {exc}") from None
        client.get_transport().sock.settimeout(TRANSPORT_WAKE)
        return client

    def _drop_connection(self) -> None:
        """Close the connection for good (dead, or no pool to hand it back to)."""
        with self._conn_lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _sftp_client(self) -> paramiko.SFTPClient:
        with self._conn_lock:
            transport = self._transport()
            conn = self._conn
            if conn.sftp is None or conn.sftp.get_channel().get_transport() is not transport:
                conn.sftp = paramiko.SFTPClient.from_transport(transport)
            return conn.sftp

    def _exec(self, line: str, timeout: float = 60.0) -> tuple[int, str, str]:
        """Run a short helper line; return (exit code, stdout, stderr)."""
        try:
            chan = self._transport().open_session(timeout=self.connect_timeout)
            chan.settimeout(timeout)
            chan.exec_command(line)
            out = chan.makefile("rb").read()
            err = chan.makefile_stderr("rb").read()
            return (
                chan.recv_exit_status(),
                out.decode(errors="replace"),
                err.decode(errors="replace"),
            )
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise RunnerError(f"SSH command on {self.where} failed: {exc}") from None

    def clock_offset(self) -> float | None:
        """Seconds this host's clock is ahead of the worker's (None when it
        cannot be read), measured once per connection while fresh.

        One session reads the host's clock once per line it is sent: the first
        reading waits for the login and is dropped; of the next CLOCK_SAMPLES,
        the one with the shortest round trip counts, its remote time against
        the midpoint of the worker's send and receive (NTP's rule).
        """
        try:
            with self._conn_lock:
                transport = self._transport()
                conn = self._conn
            if conn.clock is not None and time.monotonic() - conn.clock[1] < CLOCK_TTL_S:
                return conn.clock[0]
            offset = self._read_clock(transport)
        except (RunnerError, paramiko.SSHException, OSError, EOFError, ValueError):
            return None
        conn.clock = (offset, time.monotonic())
        return offset

    def _read_clock(self, transport: paramiko.Transport) -> float:
        chan = transport.open_session(timeout=self.connect_timeout)
        try:
            chan.settimeout(self.connect_timeout)
            chan.exec_command(remote.clock_line())
            answers = chan.makefile("rb")
            samples = []
            for i in range(CLOCK_SAMPLES + 1):
                sent = time.time()
                chan.sendall(b"\n")
                line = answers.readline()
                received = time.time()
                if i:  # the first answer waited for the login
                    samples.append((received - sent, float(line) - (sent + received) / 2))
            return min(samples)[1]
        finally:
            chan.close()

    def check(self) -> None:
        """Connect and run `true`; raise RunnerError with the reason otherwise."""
        code, _, err = self._exec("true", timeout=self.connect_timeout)
        if code != 0:
            raise RunnerError(f"{self.where} cannot run commands: {err.strip()}")

    # -- runs ------------------------------------------------------------------

    def _make_workdir(self) -> str:
        """A fresh 0700 directory under /tmp, made over SFTP (mkdir fails if it exists)."""
        try:
            with self._conn_lock:
                sftp = self._sftp_client()
                path = f"/tmp/benchboard.{secrets.token_hex(8)}"
                sftp.mkdir(path, 0o700)
                sftp.chmod(path, 0o700)  # whatever the server's umask did
                return path
        except (OSError, paramiko.SSHException):
            pass  # no SFTP mkdir here: mktemp through the shell
        code, out, err = self._exec(remote.MKWORKDIR)
        if code != 0 or not out.strip():
            raise RunnerError(f"cannot create a work dir on {self.where}: {err.strip()}")
        return out.strip()

    def _remove_tree(self, path: str) -> None:
        """rm -rf path over SFTP (links are removed, never followed); the shell if that fails."""
        try:
            with self._conn_lock:
                sftp = self._sftp_client()
                todo, dirs = [path], []
                while todo:
                    folder = todo.pop()
                    dirs.append(folder)
                    for entry in sftp.listdir_attr(folder):
                        child = f"{folder}/{entry.filename}"
                        if stat.S_ISDIR(entry.st_mode or 0):
                            todo.append(child)
                        else:
                            sftp.remove(child)
                for folder in reversed(dirs):
                    sftp.rmdir(folder)
            return
        except (OSError, paramiko.SSHException):
            pass
        self._exec(remote.remove_line(path), timeout=30)

    def _launch(self, bg: Background, timeout: float | None) -> None:
        command = bg.command
        limit = MAX_RUNTIME if timeout is None else timeout + self.grace + BACKSTOP_MARGIN
        bg.prefix = f"{self.workdir}/.run-{next(self._ids)}"
        line = remote.run_line(
            self.workdir, bg.prefix, limit, self.grace, command.argv, command.env
        )
        transport = self._transport()
        try:
            chan = transport.open_session(timeout=self.connect_timeout)
            chan.exec_command(line)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise RunnerError(f"cannot start {command.argv[0]} on {self.where}: {exc}") from None
        bg.handle = chan
        threading.Thread(target=self._pump, args=(bg, chan, transport), daemon=True).start()

    def _pump(self, bg: Background, chan: paramiko.Channel, transport: paramiko.Transport) -> None:
        """Stream a run's channel into bg until the run ends or the connection dies.

        Sleeps on the channel's pipe, which paramiko makes readable when
        output, the EOF or the channel's close arrives: the worker wakes when
        there is something to read, not on a timer (the remote side already
        hands output over in batches: tail -f reads R.out every 0.2 s).
        """
        while not (chan.eof_received or chan.closed) and transport.is_active():
            select.select([chan], [], [], CHECK_EVERY)
            if self._drain(bg, chan):
                self._last_seen = time.monotonic()
        self._drain(bg, chan)
        held, bg.clock_held = getattr(bg, "clock_held", b""), b""
        if held:  # looked like the start of a clock marker, but was the tool's
            bg.stderr.feed(held)
        # The exit status comes with the EOF; a connection that ends sets the event too.
        while not chan.status_event.wait(CHECK_EVERY) and transport.is_active():
            pass
        code = chan.exit_status if chan.exit_status_ready() else -1
        chan.close()
        if code == -1:
            # paramiko's "closed without an exit status": the session died.
            bg.finish(None, self._lost(bg))
            return
        missing = code == 127 and remote.MISSING_MARKER in bg.stderr.text()
        bg.finish(code, not_installed(bg.command, self.host) if missing else None)

    @staticmethod
    def _drain(bg: Background, chan: paramiko.Channel) -> bool:
        """Feed whatever the channel holds into bg; True if there was any."""
        got = False
        while chan.recv_ready():
            bg.stdout.feed(chan.recv(READ_SIZE))
            got = True
        while chan.recv_stderr_ready():
            bg.stderr.feed(_take_clock(bg, chan.recv_stderr(READ_SIZE)))
            got = True
        return got

    def _lost(self, bg: Background) -> RunnerError:
        return RunnerError(
            f"the connection to {self.where} was lost while {bg.command.argv[0]} was running",
            permanent=False,
            output=bg.output(),
        )

    def _check_alive(self, bg: Background) -> None:
        """Probe a connection that has been silent for two keepalive periods."""
        now = time.monotonic()
        silent = now - self._last_seen > 2 * self.keepalive
        if not silent or now - self._last_probe < self.keepalive or bg.done.is_set():
            return
        self._last_probe = now
        if self._probe():
            self._last_seen = time.monotonic()
        else:
            # Closing the transport makes _pump report the run as lost.
            self._drop_connection()

    def _probe(self) -> bool:
        """Send a global request and wait `keepalive` s for any answer."""
        with self._probe_lock:
            conn = self._conn
            return conn is not None and conn.answers(self.keepalive)

    def process_root(self, bg: Background) -> int | None:
        """The session leader's pid, which the run script writes to PREFIX.pid."""
        prefix = getattr(bg, "prefix", None)
        try:
            text = self.read_file(f"{prefix}.pid").decode().strip() if prefix else ""
        except (RunnerError, OSError):
            return None
        return int(text) if text.isdigit() else None

    def _kill(self, bg: Background, grace: float) -> None:
        prefix = getattr(bg, "prefix", None)
        if prefix is None or bg.done.is_set():
            return
        try:
            self._exec(remote.cancel_line(prefix, grace), timeout=grace + 15)
        except RunnerError:
            # No connection: the remote watchdog and timeout backstop act alone.
            pass

    # -- files -----------------------------------------------------------------

    def upload(self, name: str, content: bytes, mode: int = 0o600) -> str:
        check_upload_name(name)
        path = f"{self.workdir}/{name}"
        try:
            with self._conn_lock:
                sftp = self._sftp_client()
                with sftp.open(path, "wb") as handle:
                    # The mode is set on the still-empty file, before any data.
                    handle.chmod(mode)
                    handle.write(content)
        except (OSError, paramiko.SSHException) as exc:
            raise RunnerError(f"cannot upload {name} to {self.where}: {exc}") from None
        return path

    def read_file(self, path: str) -> bytes:
        try:
            with self._conn_lock, self._sftp_client().open(path, "rb") as handle:
                return handle.read()
        except (OSError, paramiko.SSHException) as exc:
            raise RunnerError(f"cannot read {path} on {self.where}: {exc}") from None

    def remove(self, path: str) -> None:
        try:
            with self._conn_lock:
                self._sftp_client().remove(path)
        except FileNotFoundError:
            pass
        except (OSError, paramiko.SSHException) as exc:
            raise RunnerError(f"cannot remove {path} on {self.where}: {exc}") from None

    def _close(self) -> None:
        with self._lock:
            workdir, self._workdir = self._workdir, None
        conn = self._conn
        if workdir and conn is not None and conn.active():
            try:
                self._remove_tree(workdir)
            except RunnerError:
                pass
        with self._conn_lock:
            conn, self._conn = self._conn, None
        if conn is None:
            return
        if self.pool is not None:
            self.pool.release(conn)
        else:
            conn.close()


def _take_clock(bg: Background, data: bytes) -> bytes:
    """data without the run script's clock marker (remote.CLOCK_MARKER),
    whose stamps go to bg.client_started / client_finished. A marker split
    between two reads is held back (bg.clock_held) until it is whole."""
    held = getattr(bg, "clock_held", b"") + data
    found = _CLOCK.search(held)
    if found:
        bg.client_started, bg.client_finished = _stamp(found[1]), _stamp(found[2])
        bg.clock_held = b""
        return held[: found.start()] + held[found.end() :]
    start = held.find(_MARKER)
    if start == -1:
        # The marker's first bytes at the very end of this read.
        start = next(
            (
                len(held) - k
                for k in range(min(len(_MARKER), len(held)), 0, -1)
                if held.endswith(_MARKER[:k])
            ),
            -1,
        )
    if start == -1:
        bg.clock_held = b""
        return held
    bg.clock_held = held[start:]
    return held[:start]


def _stamp(text: bytes) -> float | None:
    """An epoch time printed by `date +%s.%N`, or None (a date without %N)."""
    try:
        return float(text)
    except ValueError:
        return None
