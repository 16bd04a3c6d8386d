"""Environments end to end (issue 39): a real worker runs a sysbench plan three
times on a private MariaDB whose innodb_buffer_pool_size changes between the
first and second run; each cell's environment is read and stored once per
distinct content; the comparison, the run's Environment page and the REST API
name that variable, and only the few settings that really differ; a password
the target's credential holds never appears in what is stored or shown."""

from __future__ import annotations

import subprocess

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchapp.histories import comparisons
from benchapp.models import Cell, Comparison, Environment, Run, Team
from benchapp.runs import orchestration
from runners import environment
from tests.benchapp.ui_data import make_credential, make_target
from tests.support.dbtargets import postgres_target  # noqa: F401
from tests.support.private_services import private_mariadb, private_postgres_server  # noqa: F401
from tests.support.waiting import finished, wait_for

CANARY = "Env-canary-Pw-7731"


def plan(target: str) -> dict:
    return {
        "name": "env-oltp",
        "tool": "sysbench",
        "targets": [target],
        "params": {"test": "oltp_read_only", "tables": 1, "table_size": 500, "time": 2},
        "axes": {"threads": [1, 2]},
    }


def mysql(port: int, sql: str) -> str:
    argv = ["mysql", "--no-defaults", "-h127.0.0.1", f"-P{port}", "-uroot", "-N", "-e", sql]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def run_once(team, document) -> Run:
    run = orchestration.start_run(team, document)
    wait_for(lambda: finished(run), timeout=180)
    assert run.status == Run.SUCCEEDED, list(run.cells.values_list("error", flat=True))
    return run


@pytest.fixture
def three_runs(team, owner, start_worker, private_mariadb):  # noqa: F811
    port = private_mariadb.port
    mysql(port, f"CREATE USER bench@'%' IDENTIFIED BY '{CANARY}'; GRANT ALL ON *.* TO bench@'%'")
    # A setting that holds the password under a name that does not say so.
    mysql(port, f"SET GLOBAL init_connect = 'SET @note=\"{CANARY}\"'")
    cred = make_credential(team, secret=CANARY)
    make_target(team, name="envdb", port=port, user="bench", credential=cred, database="")
    mysql(port, "CREATE DATABASE sbtest")
    start_worker("env")
    first = run_once(team, plan("envdb"))
    mysql(port, "SET GLOBAL innodb_buffer_pool_size = 268435456")
    return first, run_once(team, plan("envdb")), run_once(team, plan("envdb"))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_environment_names_what_changed_between_runs(team, owner, three_runs):
    first, second, third = three_runs
    cells = Cell.objects.filter(run__in=three_runs)
    assert cells.filter(environment=None).count() == 0
    hashes = [set(run.cells.values_list("environment_id", flat=True)) for run in three_runs]
    # Unchanged machines: one snapshot per run, and the third run adds only references.
    assert [len(h) for h in hashes] == [1, 1, 1]
    contents = {e.hash: e.content for e in Environment.objects.all()}
    moved = environment.diff(contents[min(hashes[1])], contents[min(hashes[2])])
    assert hashes[1] == hashes[2] != hashes[0], moved
    assert Environment.objects.filter(hash__in=set().union(*hashes)).count() == 2

    comparison = Comparison.objects.create(team=team, name="bp")
    comparison.runs.set([first, second])
    diff = comparisons.compare(comparison)["diff"]
    database = diff["environment: database"]
    changed = [row["name"] for row in database if row["differs"]]
    assert changed == ["variables.innodb_buffer_pool_size"]
    assert len(database) > 300  # every variable is there, the toggle shows them
    row = database[0]
    assert row["values"] == ["134217728", "268435456"]

    client = Client()
    client.force_login(owner)
    page = client.get(f"/runs/{second.pk}/environment/").content.decode()
    assert "innodb_buffer_pool_size" in page and "134217728" in page
    shown = client.get(f"/comparisons/{comparison.pk}/").content.decode()
    assert "variables.innodb_buffer_pool_size" in shown

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    answer = api.get(f"/api/runs/{second.pk}/environment/?against={first.pk}").json()
    assert answer["diff"]["database"] == [
        {"key": "variables.innodb_buffer_pool_size", "before": "134217728", "after": "268435456"}
    ]
    assert "plan" not in answer["diff"]  # the same parameters
    assert answer["snapshots"][0]["content"]["database"]["variables"]["max_connections"]
    cell = second.cells.first()
    same = api.get(f"/api/cells/{cell.pk}/environment/?against={third.cells.first().pk}").json()
    assert same["hash"] == cell.environment_id and same["diff"] == {}

    # The canary: never stored, shown or answered.
    stored = "".join(str(e.content) for e in Environment.objects.all())
    assert CANARY not in stored
    assert CANARY not in page and CANARY not in shown and CANARY not in str(answer)

    other = Team.objects.create(name="other-team")
    other_run = Run.objects.create(team=other, name="x", tool="sysbench", document={})
    assert api.get(f"/api/runs/{second.pk}/environment/?against={other_run.pk}").status_code == 404


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_postgres_setting_changed_between_pgbench_runs_is_named(
    team, owner, start_worker, postgres_target, private_postgres_server
):
    """synchronous_commit off, then on: the comparison's database section and
    the API's diff name it, with the source PostgreSQL gives for each value."""
    server = private_postgres_server
    document = {
        "name": "env-pgbench",
        "tool": "pgbench",
        "targets": [
            {
                "name": "pg",
                "kind": "postgres",
                "host": postgres_target.host,
                "port": postgres_target.port,
                "user": "postgres",
                "database": postgres_target.database,
            }
        ],
        "params": {"scale": 1, "client": 2, "time": 2},
    }
    start_worker("env-pg")
    try:
        server.psql("ALTER SYSTEM SET synchronous_commit = off")
        server.psql("SELECT pg_reload_conf()")
        first = run_once(team, document)
        server.psql("ALTER SYSTEM RESET synchronous_commit")
        server.psql("SELECT pg_reload_conf()")
        second = run_once(team, document)
    finally:  # the session's server is shared with other tests
        server.psql("ALTER SYSTEM RESET synchronous_commit")
        server.psql("SELECT pg_reload_conf()")
    comparison = Comparison.objects.create(team=team, name="sync")
    comparison.runs.set([first, second])
    database = comparisons.compare(comparison)["diff"]["environment: database"]
    changed = {row["name"]: row["values"] for row in database if row["differs"]}
    assert changed["variables.synchronous_commit"] == ["off", "on"]
    assert changed["sources.synchronous_commit"] == ["configuration file", ""]
    assert set(changed) <= {"variables.synchronous_commit", "sources.synchronous_commit"}
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    diff = api.get(f"/api/runs/{second.pk}/environment/?against={first.pk}").json()["diff"]
    assert {"key": "variables.synchronous_commit", "before": "off", "after": "on"} in diff[
        "database"
    ]
