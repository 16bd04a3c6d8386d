"""Telemetry through a real worker: a mysqlslap run on the local MariaDB
stores the host's and the database's per-second series beside the tool's,
and the cell's verdict with its evidence reaches the cell page, the API and
the run's JSON document."""

from __future__ import annotations

import pytest
from django.urls import reverse

from benchapp.models import CellSeries
from benchapp.runs import orchestration
from tests.support import measures
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def _plan(**extra) -> dict:
    return {
        "name": "telemetry",
        "tool": "mysqlslap",
        "targets": [
            {"name": "local", "kind": "mysql", "host": "127.0.0.1", "port": 3306, "user": "root"}
        ],
        "params": {
            "concurrency": 2,
            "iterations": 1,
            "number_of_queries": 20000,  # a few seconds on a fast machine: samples to keep
            "auto_generate_sql": True,
            "create_schema": "bb_telemetry_cells",
        },
        **extra,
    }


def test_a_cell_keeps_host_and_database_telemetry_and_a_verdict(team, owner_client, start_worker):
    start_worker("a", **FAST_LEASES)
    run = orchestration.start_run(team, _plan())
    wait_for(lambda: finished(run), timeout=180)
    cell = run.cells.get()
    assert cell.status == "succeeded", cell.error
    sources = set(CellSeries.objects.filter(cell=cell).values_list("source", flat=True).distinct())
    # Client and target are this one machine: one host source, and the database.
    assert {"host", "db"} <= sources
    verdict = cell.facts["verdict"]
    assert verdict["text"] and verdict["checked"] == ["host host", "database"]
    assert cell.facts["telemetry"]["db"]["questions_per_s"]["mean"] > 0
    # The summaries are measurements too (the results page's columns and charts).
    stored = {v.metric: v.value for v in measures.stored(cells=[cell.pk])}
    assert (
        stored["telemetry.db.questions_per_s.mean"]
        == cell.facts["telemetry"]["db"]["questions_per_s"]["mean"]
    )
    assert "telemetry.host.cpu_busy_pct.max" in stored and "avg_s" in stored

    page = owner_client.get(reverse("cell_artifacts", args=[run.pk, cell.pk])).content.decode()
    assert 'data-role="verdict"' in page and verdict["text"].split(":")[0] in page
    assert 'id="timeline-data"' in page and "cpu_busy_pct" in page

    api = owner_client.get(f"/api/cells/{cell.pk}/").json()
    assert api["facts"]["verdict"] == verdict


def test_a_plan_can_turn_telemetry_off(team, start_worker):
    start_worker("a", **FAST_LEASES)
    run = orchestration.start_run(team, _plan(telemetry=False))
    wait_for(lambda: finished(run), timeout=180)
    cell = run.cells.get()
    assert cell.status == "succeeded", cell.error
    assert "verdict" not in cell.facts
    assert not CellSeries.objects.filter(cell=cell).exclude(source="tool").exists()
