"""A phase whose tool reports an error fails its cell, naming the phase and
the tool's own error line, even when the tool exits 0; stress-ng's output is
never given as the cause of a failure it did not cause. Real runs against the
local MariaDB, with a real stress-ng beside them."""

from __future__ import annotations

import subprocess
from pathlib import Path

from runners.cell import run_cell
from runners.context import CellContext
from runners.phases import PhaseRecord, reported_failure
from runners.plan import expand, load_plan
from runners.tools import get_tool
from tests.support.dbtargets import mariadb_target  # noqa: F401

PASSWORD_ENV = "BB_TEST_CELL_ERRORS_PASSWORD"


def _target(endpoint) -> dict:
    return {
        "name": "db",
        "kind": endpoint.kind,
        "host": endpoint.host,
        "port": endpoint.port,
        "user": endpoint.user,
        "database": endpoint.database,
        "password_env": PASSWORD_ENV,
    }


def _run(plan_doc: dict):
    plan = load_plan({"name": "t", "timeout": 120, **plan_doc})
    with CellContext(plan) as ctx:
        return run_cell(plan, expand(plan)[0], ctx)


def _sql(database: str, sql: str) -> None:
    subprocess.run(
        ["mariadb", "-h127.0.0.1", "-uroot", database, "-e", sql],
        check=True,
        capture_output=True,
        timeout=30,
    )


def test_sysbench_prepare_fatal_with_exit_0_fails_the_cell(mariadb_target, monkeypatch):  # noqa: F811
    # sbtest1 exists: the preparing thread for it prints FATAL: error 1050, the
    # other threads carry on, and sysbench exits 0.
    monkeypatch.setenv(PASSWORD_ENV, mariadb_target.password)
    _sql(mariadb_target.database, "CREATE TABLE sbtest1 (id INT PRIMARY KEY)")
    outcome = _run(
        {
            "tool": "sysbench",
            "targets": [_target(mariadb_target)],
            "cleanup": False,
            "params": {
                "test": "oltp_read_write",
                "tables": 4,
                "table_size": 50,
                "threads": 4,
                "time": 1,
            },
        }
    )
    prepare = outcome.phases[0]
    assert (prepare.phase, prepare.exit_code) == ("prepare", 0)
    assert "FATAL:" in prepare.stdout
    assert outcome.status == "failed"
    # sysbench exited 0: the error says the tool reported it, never "exit 0"
    assert outcome.error.startswith("prepare reported an error: FATAL: ")
    assert "exit 0" not in outcome.error
    assert "error 1050 (Table 'sbtest1' already exists)" in outcome.error
    assert [r.phase for r in outcome.phases] == ["prepare"]  # no measure on half-made data


def test_measure_failure_beside_stress_ng_names_the_tool_not_stress_ng(mariadb_target, monkeypatch):  # noqa: F811
    # No tables and no prepare: sysbench's run fails (exit 1) while stress-ng
    # ran fine; the cause must be sysbench's line, not stress-ng's last words.
    monkeypatch.setenv(PASSWORD_ENV, mariadb_target.password)
    outcome = _run(
        {
            "tool": "sysbench",
            "targets": [_target(mariadb_target)],
            "prepare": False,
            "cleanup": False,
            "stress": {"cpu": 1, "cpu_load": 10},
            "params": {"test": "oltp_read_only", "tables": 1, "table_size": 10, "time": 1},
        }
    )
    assert [r.phase for r in outcome.phases] == ["measure", "stress"]
    assert "successful run completed" in outcome.phases[1].stderr + outcome.phases[1].stdout
    assert outcome.status == "failed"
    assert outcome.error.startswith("measure failed (exit 1): FATAL: ")
    assert "1146" in outcome.error and "doesn't exist" in outcome.error
    assert "stress-ng" not in outcome.error


def test_reported_failure_names_the_phase_and_the_tools_cause():
    # Real pgbench and mysqlslap error outputs: the phase and the line that says why.
    fixtures = Path(__file__).resolve().parents[1] / "fixtures"
    record = PhaseRecord(
        phase="prepare", command="", exit_code=0, stdout="", stderr="", started=0.0, finished=0.0
    )
    pgbench = get_tool("pgbench").parse(
        (fixtures / "pgbench/pgbench_not_initialized.out").read_text()
    )
    assert reported_failure("warmup", record, pgbench.errors) == (
        "warmup reported an error: pgbench: error: could not count number of branches: ERROR: "
        'relation "pgbench_branches" does not exist'
    )
    slap = get_tool("mysqlslap").parse(
        (fixtures / "mysqlslap/mysqlslap_bad_engine.out").read_text()
    )
    assert reported_failure("measure", record, slap.errors).startswith(
        "measure reported an error: Cannot run query CREATE TABLE"
    )
    failed = PhaseRecord(
        phase="prepare", command="", exit_code=2, stdout="", stderr="", started=0.0, finished=0.0
    )
    assert reported_failure("prepare", failed, slap.errors).startswith("prepare failed (exit 2): ")
