"""Throw-away databases and users on the local MariaDB and PostgreSQL.

`mariadb_target` creates a database and a user with a password (granted for
both 'u'@'127.0.0.1' and 'u'@'localhost': MariaDB here resolves 127.0.0.1 to
localhost) and yields an Endpoint; everything is dropped afterwards.
`postgres_target` creates a database on the tests' private PostgreSQL (trust
auth; never the app's own server, which a target may not point at).
`run_command` writes a Command's uploads into a tmp dir and runs it.
"""

from __future__ import annotations

import os
import secrets
import subprocess

import pytest

from runners.command import Command, Endpoint


def mariadb_sql(sql: str) -> str:
    """Run sql as root on the local MariaDB; its output without column names."""
    return subprocess.run(
        ["mariadb", "-h127.0.0.1", "-P3306", "-uroot", "-N", "-e", sql],
        check=True,
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout


@pytest.fixture
def mariadb_database():
    """The name of a fresh, empty database on the local MariaDB; dropped after."""
    name = f"bb_db_{secrets.token_hex(4)}"
    mariadb_sql(f"CREATE DATABASE {name}")
    yield name
    mariadb_sql(f"DROP DATABASE IF EXISTS {name}")


@pytest.fixture
def mariadb_target():
    """Endpoint(kind=mysql) for a fresh database and password user; dropped after."""
    suffix = secrets.token_hex(4)
    database, user = f"bb_t_{suffix}", f"bb_u_{suffix}"
    # Quotes, backslash, '#' and a space: what an option file must survive.
    password = f"pw'{suffix}\"#\\ x"
    sql_password = password.replace("\\", "\\\\").replace("'", "\\'")
    statements = [f"CREATE DATABASE {database}"]
    for host in ("127.0.0.1", "localhost"):
        statements += [
            f"CREATE USER '{user}'@'{host}' IDENTIFIED BY '{sql_password}'",
            f"GRANT ALL ON *.* TO '{user}'@'{host}'",
        ]
    mariadb_sql("; ".join(statements))
    try:
        yield Endpoint(
            kind="mysql",
            host="127.0.0.1",
            port=3306,
            user=user,
            database=database,
            password=password,
        )
    finally:
        mariadb_sql(
            f"DROP DATABASE IF EXISTS {database}; DROP USER IF EXISTS '{user}'@'127.0.0.1'; "
            f"DROP USER IF EXISTS '{user}'@'localhost'; DROP DATABASE IF EXISTS mysqlslap_{suffix}"
        )


@pytest.fixture
def postgres_target(private_postgres_server):
    """Endpoint(kind=postgres) for a fresh database (trust auth); dropped after."""
    server, database = private_postgres_server, f"bb_t_{secrets.token_hex(4)}"
    server.psql(f"CREATE DATABASE {database}")
    try:
        yield Endpoint(
            kind="postgres", host=server.host, port=server.port, user="postgres", database=database
        )
    finally:
        server.psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")


def run_command(command: Command, workdir: str, timeout: float = 60) -> tuple[int, str, list[str]]:
    """Write uploads into workdir, run the resolved argv; return (rc, stdout+stderr, argv)."""
    for upload in command.uploads:
        path = os.path.join(workdir, upload.name)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, upload.mode), "wb") as fh:
            fh.write(upload.content)
    resolved = command.resolved(workdir)
    proc = subprocess.run(
        resolved.argv,
        check=False,
        cwd=workdir,
        stdout=subprocess.PIPE,
        env={**os.environ, **resolved.env},
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    return proc.returncode, proc.stdout, resolved.argv
