"""The secrets canary: a known password planted in a Credential must appear
nowhere Benchboard writes — worker logs, Redis, a database dump, rendered
pages, exports, API responses — nor in the client's process list for tools
that can take it another way (mysqlslap: option file)."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
import redis

from benchapp.models import Artifact, Cell, Credential
from benchapp.runs import orchestration
from benchapp.store.artifactstore import text
from tests.support.dbtargets import mariadb_sql

CANARY = "Canary-7f3Q-pw"
FAST = {"BENCHBOARD_HEARTBEAT_SECONDS": 1, "BENCHBOARD_LEASE_SECONDS": 6}
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def canary_user():
    statements = []
    for host in ("127.0.0.1", "localhost"):
        statements += [
            f"CREATE USER IF NOT EXISTS 'bb_canary'@'{host}' IDENTIFIED BY '{CANARY}'",
            f"GRANT ALL ON *.* TO 'bb_canary'@'{host}'",
        ]
    mariadb_sql("; ".join(statements))
    yield "bb_canary"
    mariadb_sql(
        "DROP USER IF EXISTS 'bb_canary'@'127.0.0.1'; DROP USER IF EXISTS "
        "'bb_canary'@'localhost'; DROP DATABASE IF EXISTS bb_canary_db"
    )


class ArgvWatcher(threading.Thread):
    """Samples every process's argv while a run goes on."""

    def __init__(self):
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.seen: list[str] = []

    def run(self):
        while not self.stop.is_set():
            out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
            self.seen += [line for line in out.splitlines() if "mysqlslap" in line]
            time.sleep(0.05)


def test_canary_password_leaks_nowhere(team, owner_client, canary_user, start_worker, settings):
    cred = Credential(
        team=team, name="canary", kind=Credential.PASSWORD, host_patterns=["127.0.0.1:3306"]
    )
    cred.set_secret(CANARY)
    cred.save()
    mariadb_sql("CREATE DATABASE IF NOT EXISTS bb_canary_db")
    plan = {
        "name": "canary",
        "tool": "mysqlslap",
        "targets": [
            {
                "name": "db",
                "kind": "mysql",
                "host": "127.0.0.1",
                "port": 3306,
                "user": canary_user,
                "credential": "canary",
            }
        ],
        "params": {
            "auto_generate_sql": True,
            "add_autoincrement": True,
            "number_of_queries": 3000,
            "concurrency": 2,
            "iterations": 2,
        },
        "axes": {"load_type": ["write", "key"]},
    }
    worker = start_worker("canary", **FAST)
    watcher = ArgvWatcher()
    watcher.start()
    run = orchestration.start_run(team, plan)
    deadline = time.monotonic() + 120
    while run.is_active and time.monotonic() < deadline:
        time.sleep(0.3)
        run.refresh_from_db()
    watcher.stop.set()
    watcher.join()
    assert set(run.cells.values_list("status", flat=True)) == {Cell.SUCCEEDED}

    assert watcher.seen, "mysqlslap was never seen running"
    assert not [line for line in watcher.seen if CANARY in line]
    assert CANARY not in worker.output()

    broker = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    for key in broker.scan_iter():
        assert CANARY.encode() not in (broker.dump(key) or b""), key

    from django.conf import settings as django_settings

    db = django_settings.DATABASES["default"]
    dump = subprocess.run(
        ["pg_dump", "-h", db["HOST"], "-p", str(db["PORT"] or 5432), "-U", db["USER"], db["NAME"]],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "bb_canary" in dump.stdout  # the dump holds the run...
    assert CANARY not in dump.stdout  # ...but not the password
    # Raw outputs live in the artifact store, outside the dump.
    for artifact in Artifact.objects.filter(cell__run=run):
        assert CANARY not in text(artifact, "stdout") + text(artifact, "stderr")

    cell = run.cells.first()
    pages = [
        f"/runs/{run.pk}/",
        f"/runs/{run.pk}/progress.json",
        f"/runs/{run.pk}/results/",
        f"/runs/{run.pk}/results.json",
        f"/runs/{run.pk}/export.csv",
        f"/runs/{run.pk}/export.json",
        f"/runs/{run.pk}/cells/{cell.pk}/artifacts/",
        "/credentials/",
        f"/credentials/{cred.pk}/edit/",
        "/targets/",
        f"/api/runs/{run.pk}/",
        "/api/credentials/",
        f"/api/cells/?run={run.pk}",
        f"/admin/benchapp/credential/{cred.pk}/change/",
        f"/admin/benchapp/run/{run.pk}/change/",
    ]
    owner = run.team.membership_set.first().user
    owner.is_staff = owner.is_superuser = True
    owner.save()
    rendered = 0
    for url in pages:
        response = owner_client.get(url)
        if response.status_code == 200:
            rendered += 1
            body = b"".join(response.streaming_content) if response.streaming else response.content
            assert CANARY.encode() not in body, url
    assert rendered >= 5
