"""Adaptive repeats through a real worker, sysbench and the local MariaDB.

Noise by construction, not by luck: sysbench's `--rate` makes arrivals a
Poisson process, so the transactions a 2 s run completes at rate 50 vary
by about 10% from run to run, on an idle machine or a loaded one (three or
more repeats agree to 0.2% about once in a thousand runs); with `--rate=0`
and `--events=200` every run completes exactly 200. The steady combination
therefore stops at min, the noisy one runs to max.
"""

from __future__ import annotations

import pytest

from benchapp.models import Cell, Run
from benchapp.runs import orchestration
from runners.repeats import CV, MAX
from tests.support.dbtargets import mariadb_database  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

FAST = FAST_LEASES
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST)


def test_a_steady_cell_stops_at_min_and_a_noisy_one_at_max(
    team, mariadb_database, start_worker, owner_client
):
    plan = {
        "name": "adaptive",
        "tool": "sysbench",
        "targets": [
            {
                "name": "maria",
                "kind": "mysql",
                "host": "127.0.0.1",
                "port": 3306,
                "user": "root",
                "database": mariadb_database,
            }
        ],
        "params": {
            "test": "oltp_point_select",
            "tables": 1,
            "table_size": 100,
            "time": 2,
            "events": 200,
            "forced_shutdown": 5,
        },
        "axes": {"rate": [0, 50]},
        "repeat": {"min": 3, "max": 5, "until_cv": 0.002, "metric": "transactions"},
        "order": "interleaved",
        "prepare": {"once": True},
        "cleanup": True,
    }
    start_worker("a", **FAST)
    run = orchestration.start_run(team, plan)
    assert run.cells.count() == 10  # max per combination, until the rule drops some
    wait_for(lambda: finished(run), timeout=180)
    assert run.status == Run.SUCCEEDED
    steady = list(run.cells.filter(axes__rate=0).order_by("index"))
    noisy = list(run.cells.filter(axes__rate=50).order_by("index"))
    assert [c.repeat for c in steady] == [1, 2, 3]
    assert [c.repeat for c in noisy] == [1, 2, 3, 4, 5]
    for cell in steady:
        stop = cell.repeat_stop
        assert (stop["reason"], stop["repeats"], stop["cv"]) == (CV, 3, 0.0)
        assert stop["summary"] == "3 repeats: cv of transactions 0.0% <= 0.2%"
    for cell in noisy:
        stop = cell.repeat_stop
        assert (stop["reason"], stop["repeats"], stop["succeeded"]) == (MAX, 5, 5)
        assert stop["cv"] > 0.002 and stop["summary"].startswith("5 repeats (max)")
    assert not run.cells.exclude(status=Cell.SUCCEEDED).exists()
    # The run page says it per cell (text and hover), progress.json and the API too.
    page = owner_client.get(f"/runs/{run.pk}/").content.decode()
    assert page.count('title="3 repeats: cv of transactions 0.0% &lt;= 0.2%"') == 3
    assert page.count('title="5 repeats (max): cv of transactions') == 5
    progress = owner_client.get(f"/runs/{run.pk}/progress.json").json()
    assert [c["repeats"][:9] for c in progress["cells"]].count("5 repeats") == 5
    api = owner_client.get(f"/api/cells/?run={run.pk}").json()
    cells = api["results"] if isinstance(api, dict) else api
    assert {c["repeat_stop"]["reason"] for c in cells} == {CV, MAX}
