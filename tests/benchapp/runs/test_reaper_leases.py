"""The reaper and the app database's own restarts: a lease that ran out while
the database was down proves no worker dead (reaper._leases_unproven)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from benchapp.models import Cell
from benchapp.runs import orchestration, reaper

pytestmark = pytest.mark.django_db(transaction=True)


def expired_running_cell(team, tmp_path) -> Cell:
    plan = {
        "name": "leases",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {"filename": f"{tmp_path}/f", "size": "1M", "runtime": 1, "time_based": True},
    }
    run = orchestration.start_run(team, plan)
    cell = run.cells.get()
    Cell.objects.filter(pk=cell.pk).update(
        status=Cell.RUNNING, attempt=1, lease_expires_at=timezone.now() - timedelta(seconds=5)
    )
    return cell


def uptime() -> float:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT extract(epoch FROM now() - pg_postmaster_start_time())")
        return float(cursor.fetchone()[0])


def test_reap_waits_a_lease_after_the_database_started(team, tmp_path, settings):
    settings.BENCHBOARD_LEASE_SECONDS = int(uptime()) + 3600  # the server "just" started
    cell = expired_running_cell(team, tmp_path)
    assert reaper.reap() == {"requeued": 0, "failed": 0}
    assert Cell.objects.get(pk=cell.pk).status == Cell.RUNNING


def test_reap_requeues_an_expired_lease_once_the_database_is_up_long_enough(
    team, tmp_path, settings
):
    settings.BENCHBOARD_LEASE_SECONDS = 1
    cell = expired_running_cell(team, tmp_path)
    assert reaper.reap()["requeued"] == 1
    assert Cell.objects.get(pk=cell.pk).status == Cell.QUEUED
