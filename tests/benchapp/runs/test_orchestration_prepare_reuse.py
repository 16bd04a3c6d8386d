"""`prepare: {once: true}` without cleanup, night after night, through a real
worker: the second run of the plan reuses the tables the first one prepared
(real sysbench on MariaDB, real pgbench on PostgreSQL) and its cell says
which run prepared them; data other than the parameters say is refused
before the measure with the fix (runners.prepared)."""

from __future__ import annotations

import pytest

from benchapp.models import Artifact, Cell, Plan, Run
from benchapp.runs import orchestration
from tests.support.dbtargets import mariadb_database, mariadb_sql  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def sysbench_plan(database: str, table_size: int = 100) -> dict:
    return {
        "name": "nightly-oltp",
        "tool": "sysbench",
        "targets": [
            {
                "name": "maria",
                "kind": "mysql",
                "host": "127.0.0.1",
                "port": 3306,
                "user": "root",
                "database": database,
            }
        ],
        "params": {"test": "oltp_point_select", "tables": 2, "table_size": table_size, "time": 1},
        "axes": {"threads": [1, 2]},
        "prepare": {"once": True},
    }


def pgbench_plan(server, database: str) -> dict:
    return {
        "name": "nightly-pgbench",
        "tool": "pgbench",
        "targets": [
            {
                "name": "pg",
                "kind": "postgres",
                "host": server.host,
                "port": server.port,
                "user": "postgres",
                "database": database,
            }
        ],
        "params": {"scale": 1, "time": 1},
        "axes": {"client": [1, 2]},
        "prepare": {"once": True},
    }


def run_plan(team, plan: Plan) -> Run:
    run = orchestration.start_run(team, plan.document, plan=plan)
    wait_for(lambda: finished(run), timeout=180)
    return run


def prepares(run: Run) -> list[int]:
    return [a.cell.index for a in Artifact.objects.filter(cell__run=run, phase="prepare")]


def test_sysbench_second_night_reuses_the_tables(
    team, owner_client, mariadb_database, start_worker
):
    start_worker("a", **FAST_LEASES)
    plan = Plan.objects.create(
        team=team, name="nightly-oltp", tool="sysbench", document=sysbench_plan(mariadb_database)
    )
    first = run_plan(team, plan)
    assert first.status == Run.SUCCEEDED, [c.error for c in first.cells.all()]
    assert prepares(first) == [1]
    second = run_plan(team, plan)
    assert second.status == Run.SUCCEEDED, [c.error for c in second.cells.all()]
    assert prepares(second) == []  # nothing prepared again
    cell = second.cells.get(index=1)
    assert cell.facts["reused_data"] == "sbtest1, sbtest2 (100 rows each)"
    page = owner_client.get(f"/runs/{second.pk}/cells/{cell.pk}/artifacts/").content.decode()
    assert f'prepared by <a href="/runs/{first.pk}/">run #{first.pk}</a>' in page
    assert "sbtest1, sbtest2 (100 rows each)" in page


def test_sysbench_other_data_is_refused_with_the_fix(team, mariadb_database, start_worker):
    start_worker("a", **FAST_LEASES)
    mariadb_sql(f"CREATE TABLE {mariadb_database}.sbtest1 (id INT PRIMARY KEY)")
    mariadb_sql(f"INSERT INTO {mariadb_database}.sbtest1 VALUES (1), (2), (3)")
    plan = Plan.objects.create(
        team=team, name="nightly-oltp", tool="sysbench", document=sysbench_plan(mariadb_database)
    )
    run = run_plan(team, plan)
    assert run.status == Run.FAILED
    cell = run.cells.get(index=1)
    assert cell.status == Cell.FAILED and cell.error_kind == "permanent"
    assert cell.error == (
        "maria already has sbtest1 (3 rows), the plan prepares sbtest1, sbtest2 (100 "
        "rows each): drop those tables, or add cleanup: true to the plan, or set the "
        "parameters they were prepared with"
    )
    assert prepares(run) == []  # nothing was prepared over it
    assert mariadb_sql(f"SELECT COUNT(*) FROM {mariadb_database}.sbtest1").strip() == "3"


def test_pgbench_second_night_reuses_the_tables(team, private_postgres_server, start_worker):
    server = private_postgres_server
    database = "bb_nightly_pgbench"
    server.psql(f"DROP DATABASE IF EXISTS {database}")
    server.psql(f"CREATE DATABASE {database}")
    try:
        start_worker("a", **FAST_LEASES)
        plan = Plan.objects.create(
            team=team,
            name="nightly-pgbench",
            tool="pgbench",
            document=pgbench_plan(server, database),
        )
        first = run_plan(team, plan)
        assert first.status == Run.SUCCEEDED, [c.error for c in first.cells.all()]
        second = run_plan(team, plan)
        assert second.status == Run.SUCCEEDED, [c.error for c in second.cells.all()]
        assert prepares(first) == [1] and prepares(second) == []
        assert second.cells.get(index=1).facts["reused_data"] == (
            "pgbench_branches (1 row), pgbench_tellers (10 rows), pgbench_accounts (100,000 rows)"
        )
    finally:
        server.psql(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
