"""The app's own database on a private PostgreSQL cluster, for fault tests
that restart, stop or migrate it (never the machine's shared server): the
fixture, `manage.py` against it, and reads of its rows that wait it out."""

from __future__ import annotations

import subprocess
import sys
import time

import psycopg
import pytest

from tests.support.private_services import start_private_postgres, stop_private_postgres
from tests.support.worker import ROOT


@pytest.fixture
def app_database():
    server = start_private_postgres()
    try:
        server.psql("CREATE DATABASE benchboard")
        yield server
    finally:
        stop_private_postgres(server)


def manage(env: dict, *args: str, cwd=ROOT) -> str:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=cwd,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=600,
    ).stderr


def rows(url: str, sql: str) -> list[tuple] | None:
    """The rows of sql on the private database, or None while it is away."""
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            return conn.execute(sql).fetchall()
    except psycopg.OperationalError:
        return None


def poll(url: str, sql: str, predicate, timeout: float = 180) -> list[tuple]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = rows(url, sql)
        if found is not None and predicate(found):
            return found
        time.sleep(0.3)
    raise AssertionError(f"not met within {timeout} s: {sql}: {rows(url, sql)}")


CELLS = "SELECT index, status, attempt, phase, error FROM benchapp_cell ORDER BY index"


def measuring(index: int):
    return lambda cells: any(c[0] == index and c[3] == "measure" for c in cells)


def recorded(index: int):
    return lambda cells: any(c[0] == index and c[1] != "running" for c in cells)
