"""A cell's per-second series through the API with a token only: a real
worker runs mysqlslap on the local MariaDB and records the host's and the
database's telemetry (benchapp.runs.recording); /api/cells/ID/timeline/
answers the cell page's timeline (benchapp.analysis.timeline.cell_timeline)."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchapp.analysis import timeline
from benchapp.models import CellSeries
from benchapp.runs import orchestration
from benchapp.store.seriesstore import unpack
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


PLAN = {
    "name": "timeline-api",
    "tool": "mysqlslap",
    "targets": [
        {"name": "local", "kind": "mysql", "host": "127.0.0.1", "port": 3306, "user": "root"}
    ],
    "params": {
        "concurrency": 2,
        "iterations": 1,
        "number_of_queries": 20000,  # a few seconds on a fast machine: samples to show
        "auto_generate_sql": True,
        "create_schema": "bb_timeline_api",
    },
}


def _token(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_cell_timeline_with_a_token_has_the_host_cpu_series_and_phases(
    team, owner, outsider, start_worker
):
    start_worker("a", **FAST_LEASES)
    run = orchestration.start_run(team, PLAN)
    wait_for(lambda: finished(run), timeout=180)
    cell = run.cells.get()
    assert cell.status == "succeeded", cell.error

    response = _token(owner).get(f"/api/cells/{cell.pk}/timeline/")
    assert response.status_code == 200
    body = response.json()
    cpu = body["sources"]["host"]["cpu_busy_pct"]
    stored = CellSeries.objects.get(cell=cell, source="host", metric="cpu_busy_pct")
    assert cpu["total"] == len(unpack(stored.t)) >= 1
    assert cpu["y"] == pytest.approx(unpack(stored.values).tolist())  # a short cell: every second
    assert all(0.0 <= value <= 100.0 for value in cpu["y"])
    assert "db" in body["sources"] and "host:cpu_busy_pct" in body["defaults"]
    assert "measure" in {phase["phase"] for phase in body["phases"]}
    page = timeline.cell_timeline(cell)  # what the cell page draws
    assert body["phases"] == page["phases"] and body["defaults"] == page["defaults"]
    assert {name: set(metrics) for name, metrics in body["sources"].items()} == {
        name: set(metrics) for name, metrics in page["sources"].items()
    }
    assert cpu["x"] == page["sources"]["host"]["cpu_busy_pct"]["x"]

    assert _token(outsider).get(f"/api/cells/{cell.pk}/timeline/").status_code == 404
