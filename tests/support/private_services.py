"""Private Redis, MariaDB and PostgreSQL servers: benchmark targets that are
never the app's own services (which a target may not point at), and that a
fault test may stop and restart without disturbing the machine's shared
services (or other tests)."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_port(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


@dataclass
class Server:
    argv: list[str]
    port: int
    log: Path
    process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            self.argv, stdout=open(self.log, "a"), stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_port(self.port)

    def stop(self, sig=signal.SIGKILL) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, sig)
            self.process.wait(timeout=30)

    def restart(self) -> None:
        self.stop()
        self.start()


def redis_server(directory, *options: str) -> Server:
    """A started throw-away redis-server (no persistence) in directory, with
    extra command-line options; `.url` is its broker URL."""
    port = free_port()
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", ""]
    argv += ["--appendonly", "no", "--dir", str(directory), *options]
    server = Server(argv, port, directory / "redis.log")
    server.start()
    server.url = f"redis://127.0.0.1:{port}/0"
    return server


@pytest.fixture
def private_redis(tmp_path):
    """A throw-away redis-server (no persistence); `.url` is its broker URL."""
    server = redis_server(tmp_path)
    yield server
    server.stop()


def install_mariadb(datadir) -> None:
    """A new MariaDB data directory whose root logs in without a password."""
    argv = ["mariadb-install-db", "--no-defaults", f"--datadir={datadir}", "--user=root"]
    argv += ["--auth-root-authentication-method=normal", "--skip-test-db"]
    subprocess.run(argv, check=True, capture_output=True, timeout=120)


def mariadb_server(directory: Path, *options: str) -> Server:
    """A started throw-away mariadbd (root without password) with its datadir,
    socket and log in directory, on a free port; options: more server options."""
    datadir, port = directory / "mariadb", free_port()
    install_mariadb(datadir)
    server = Server(
        [
            "/usr/sbin/mariadbd",
            "--no-defaults",
            f"--datadir={datadir}",
            f"--port={port}",
            "--bind-address=127.0.0.1",
            "--user=root",
            f"--socket={directory / 'mariadb.sock'}",
            "--skip-log-bin",
            f"--pid-file={directory / 'mariadb.pid'}",
            *options,
        ],
        port,
        directory / "mariadb.log",
    )
    server.start()
    return server


@pytest.fixture
def private_mariadb(tmp_path):
    """A throw-away mariadbd (root without password) on its own port and datadir."""
    server = mariadb_server(tmp_path)
    yield server
    server.stop()
    shutil.rmtree(tmp_path / "mariadb", ignore_errors=True)


class ScriptedMariaDB:
    """mariadbd in a tmp dir, started and stopped by two shell scripts (what
    the plan's start_command and stop_command run)."""

    def __init__(self, root):
        self.root, self.port = root, free_port()
        self.datadir, self.snapshot = root / "data", root / "snapshot"
        pid, sock, log = root / "mariadb.pid", root / "mariadb.sock", root / "mariadb.log"
        install_mariadb(self.datadir)
        self.start_script, self.stop_script = root / "start.sh", root / "stop.sh"
        self.start_script.write_text(
            textwrap.dedent(f"""\
            setsid /usr/sbin/mariadbd --no-defaults --datadir={self.datadir} \\
              --port={self.port} --bind-address=127.0.0.1 --user=root --socket={sock} \\
              --skip-log-bin --pid-file={pid} >>{log} 2>&1 </dev/null &
            for i in $(seq 300); do
              mariadb-admin --no-defaults -h127.0.0.1 -P{self.port} -uroot ping \\
                >/dev/null 2>&1 && exit 0
              sleep 0.1
            done
            exit 1
            """)
        )
        self.stop_script.write_text(
            textwrap.dedent(f"""\
            [ -f {pid} ] || exit 0
            pid=$(cat {pid})
            kill "$pid"
            while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
            """)
        )

    def sh(self, script) -> None:
        subprocess.run(["sh", str(script)], check=True, timeout=60)

    def sql(self, statement: str) -> str:
        return subprocess.run(
            [
                "mariadb",
                "--no-defaults",
                "-h127.0.0.1",
                f"-P{self.port}",
                "-uroot",
                "-N",
                "-e",
                statement,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout


@pytest.fixture
def scripted_mariadb(tmp_path):
    """A ScriptedMariaDB, running, with an empty database `bench`; stopped after."""
    server = ScriptedMariaDB(tmp_path)
    server.sh(server.start_script)
    server.sql("CREATE DATABASE bench")
    yield server
    server.sh(server.stop_script)


# Debian's postgresql server binaries (package postgresql, scripts/system-packages.sh).
PG_BIN = (sorted(glob.glob("/usr/lib/postgresql/*/bin")) or [""])[-1]


@dataclass
class PrivatePostgres:
    """A PostgreSQL of the tests' own (trust auth, superuser `postgres`) on `port`."""

    home: Path
    port: int
    host: str = "127.0.0.1"

    def psql(self, sql: str, database: str = "postgres") -> str:
        return subprocess.run(
            [
                "psql",
                "-h",
                self.host,
                "-p",
                str(self.port),
                "-U",
                "postgres",
                "-d",
                database,
                "-v",
                "ON_ERROR_STOP=1",
                "-Atc",
                sql,
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout

    def pg_ctl(self, *args: str) -> None:
        """pg_ctl on this server's data directory, e.g. pg_ctl("stop", "-m", "fast")."""
        _as_postgres(
            [
                f"{PG_BIN}/pg_ctl",
                "-D",
                str(self.home / "data"),
                "-l",
                str(self.home / "log"),
                "-w",
                "-o",
                f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1",
                *args,
            ]
        )

    @property
    def url(self) -> str:
        return f"postgres://postgres@{self.host}:{self.port}"


def _as_postgres(argv: list[str]) -> None:
    """Run a server binary as the postgres user (initdb refuses root)."""
    prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    subprocess.run([*prefix, *argv], check=True, capture_output=True, timeout=120)


def start_private_postgres() -> PrivatePostgres:
    """Start a throw-away PostgreSQL on a free port (never 5432); stop_private_postgres() ends it."""
    # Not under pytest's tmp_path: its base directory is private to root.
    home = Path(tempfile.mkdtemp(prefix="bb-pg-"))
    if os.geteuid() == 0:
        shutil.chown(home, "postgres", "postgres")
    port, data = free_port(), home / "data"
    _as_postgres(
        [f"{PG_BIN}/initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
    )
    _as_postgres(
        [
            f"{PG_BIN}/pg_ctl",
            "-D",
            str(data),
            "-l",
            str(home / "log"),
            "-w",
            "-o",
            f"-p {port} -k {home} -c listen_addresses=127.0.0.1",
            "start",
        ]
    )
    return PrivatePostgres(home, port)


def stop_private_postgres(server: PrivatePostgres) -> None:
    """Stop the server at once and remove its files."""
    _as_postgres([f"{PG_BIN}/pg_ctl", "-D", str(server.home / "data"), "-m", "immediate", "stop"])
    shutil.rmtree(server.home, ignore_errors=True)


@pytest.fixture(scope="session")
def private_postgres_server():
    """One throw-away PostgreSQL for the session, on a free port (never 5432)."""
    server = start_private_postgres()
    try:
        yield server
    finally:
        stop_private_postgres(server)
