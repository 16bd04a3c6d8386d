"""`prepare: {once: true}` with `cleanup: true` through a real worker: the
sysbench tables are gone when the run has ended, whether its cells
succeeded, one failed, or the run was cancelled (S2 left them behind, and
S4's prepare then failed with "Table 'sbtest1' already exists")."""

from __future__ import annotations

import subprocess

import pytest

from benchapp.models import Artifact, Cell, Run
from benchapp.runs import orchestration
from benchapp.store.artifactstore import text
from tests.support.dbtargets import mariadb_database, mariadb_sql  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

FAST = FAST_LEASES
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST)


def tables(database: str) -> list[str]:
    return mariadb_sql(f"SHOW TABLES FROM {database}").split()


def sysbench_plan(database: str, axes: dict, seconds: int = 1) -> dict:
    return {
        "name": "prepare-once-cleanup",
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
        "params": {
            "test": "oltp_point_select",
            "tables": 1,
            "table_size": 100,
            "time": seconds,
            "forced_shutdown": 5,
        },
        "axes": axes,
        "prepare": {"once": True},
        "cleanup": True,
    }


def test_tables_are_dropped_when_the_run_ends(team, mariadb_database, start_worker):
    start_worker("a", **FAST)
    run = orchestration.start_run(team, sysbench_plan(mariadb_database, {"threads": [1, 2]}))
    wait_for(lambda: finished(run))
    assert run.status == Run.SUCCEEDED
    assert tables(mariadb_database) == []
    assert run.prepared_targets == []
    prepares = Artifact.objects.filter(cell__run=run, phase="prepare")
    assert [a.cell.index for a in prepares] == [1]  # once: the first cell only
    record = Artifact.objects.get(cell__run=run, phase="final_cleanup")
    assert record.cell.index == 2 and record.exit_code == 0
    assert "cleanup" in record.command and "sbtest1" in text(record, "stdout")


def test_tables_are_dropped_when_a_cell_failed(team, mariadb_database, start_worker):
    # The second cell reads sbtest2, which the first cell's prepare never made.
    start_worker("a", **FAST)
    run = orchestration.start_run(team, sysbench_plan(mariadb_database, {"tables": [1, 2]}))
    wait_for(lambda: finished(run))
    assert run.status == Run.PARTIAL
    failed = run.cells.get(status=Cell.FAILED)
    assert failed.axes == {"tables": 2} and "sbtest2" in failed.error
    assert tables(mariadb_database) == []


def test_tables_are_dropped_when_the_run_is_cancelled(team, mariadb_database, start_worker):
    start_worker("a", **FAST)
    run = orchestration.start_run(team, sysbench_plan(mariadb_database, {"threads": [1, 2]}, 60))
    wait_for(lambda: run.cells.filter(status=Cell.RUNNING, phase="measure").exists())
    assert tables(mariadb_database) == ["sbtest1"]
    orchestration.cancel_run(run)
    wait_for(lambda: finished(run), timeout=60)
    assert run.status == Run.CANCELLED
    assert set(run.cells.values_list("status", flat=True)) == {Cell.CANCELLED}
    assert tables(mariadb_database) == []


def test_cancel_between_cells_still_cleans_up(team, mariadb_database):
    """Nothing running when cancelled (the prepared cell is over, the next
    queued): cancel_run hands the run to the final cleanup, which a worker
    would run; here the task's function is called directly."""
    from benchapp.runs import finalcleanup

    run = orchestration.start_run(team, sysbench_plan(mariadb_database, {"threads": [1, 2]}))
    subprocess.run(
        [
            "mariadb",
            "-h127.0.0.1",
            "-uroot",
            mariadb_database,
            "-e",
            "CREATE TABLE sbtest1 (id INT PRIMARY KEY)",
        ],
        check=True,
        timeout=30,
    )
    Run.objects.filter(pk=run.pk).update(status=Run.RUNNING, prepared_targets=["maria"])
    run.cells.filter(index=1).update(status=Cell.SUCCEEDED)
    orchestration.cancel_run(run)
    run.refresh_from_db()
    assert run.is_active and finalcleanup.pending(run) == ["maria"]
    assert finalcleanup.cleanup_run(run.pk) == ["maria"]
    assert tables(mariadb_database) == []
    orchestration.dispatch(run.pk)
    run.refresh_from_db()
    assert run.status == Run.CANCELLED and run.prepared_targets == []
