"""A mysqlslap output cut between two whole result blocks reads like a run
that asked for fewer: the cell compares the blocks with what the params ask
for. A real run with two concurrencies, then its output cut after block one."""

from __future__ import annotations

from runners.cell import run_cell
from runners.context import CellContext
from runners.phases import missing_blocks
from runners.plan import expand, load_plan
from runners.tools import mysqlslap
from tests.support.dbtargets import mariadb_target  # noqa: F401

PASSWORD_ENV = "BB_TEST_CUT_BLOCKS_PASSWORD"


def test_expected_groups_is_engines_times_concurrencies():
    assert mysqlslap.expected_groups({"concurrency": [1, 4], "engine": "innodb,myisam"}) == 4
    assert mysqlslap.expected_groups({"concurrency": 8}) == 1
    assert mysqlslap.expected_groups({}) == 1


def test_output_cut_between_blocks_is_reported(mariadb_target, monkeypatch):  # noqa: F811
    monkeypatch.setenv(PASSWORD_ENV, mariadb_target.password)
    params = {"number_of_queries": 20, "concurrency": [1, 2], "iterations": 1}
    plan = load_plan(
        {
            "name": "t",
            "tool": "mysqlslap",
            "timeout": 120,
            "params": params,
            "targets": [
                {
                    "name": "db",
                    "kind": "mysql",
                    "host": "127.0.0.1",
                    "port": 3306,
                    "user": mariadb_target.user,
                    "database": mariadb_target.database,
                    "password_env": PASSWORD_ENV,
                }
            ],
        }
    )
    with CellContext(plan) as ctx:
        outcome = run_cell(plan, expand(plan)[0], ctx)
    assert (outcome.status, outcome.error) == ("succeeded", "")
    assert len(outcome.result.groups) == 2
    assert missing_blocks(mysqlslap, params, outcome.result) == ""
    text = outcome.phases[0].stdout
    second = text.index("Benchmark", text.index("Benchmark") + 1)
    cut = mysqlslap.parse(text[:second])  # block one whole, block two gone
    assert cut.errors == [] and len(cut.groups) == 1
    assert missing_blocks(mysqlslap, params, cut) == (
        "1 of the 2 result blocks the params ask for: output cut short"
    )
