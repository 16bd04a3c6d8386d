"""Retention (benchapp.store.retention) on real PostgreSQL: old series downsampled
to min/mean/max per minute, old raw outputs expired from the store; recent
runs, baselines and runs in a saved comparison untouched; off by default."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import numpy as np
import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from benchapp import tasks
from benchapp.analysis import timeline
from benchapp.models import Artifact, Cell, CellSeries, Comparison, Plan, Run
from benchapp.settings import artifact_storage
from benchapp.store import artifactstore, retention, seriesstore

NOW = timezone.now()
# 150 s of per-second values 0..149: minutes [0, 60), [60, 120), [120, 150).
T = list(range(150))
EXPECTED = {
    "t": [0.0, 60.0, 120.0],
    "lows": [0.0, 60.0, 120.0],
    "means": [29.5, 89.5, 134.5],
    "highs": [59.0, 119.0, 149.0],
}


@pytest.fixture(autouse=True)
def file_store(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "artifacts": artifact_storage(str(tmp_path), "", "")}
    return tmp_path


def finished_run(team, days_ago: int, name: str = "r") -> Run:
    """A run finished days_ago with one cell: a 150 s tps series and a stored output."""
    finished = NOW - timedelta(days=days_ago)
    run = Run.objects.create(
        team=team,
        name=name,
        tool="sysbench",
        status=Run.SUCCEEDED,
        document={},
        finished_at=finished,
    )
    cell = Cell.objects.create(run=run, index=1, key="k", status=Cell.SUCCEEDED, attempt=1)
    CellSeries.objects.create(
        cell=cell, metric="tps", count=len(T), t=seriesstore.pack(T), values=seriesstore.pack(T)
    )
    artifact = Artifact(cell=cell, attempt=1, phase="measure")
    artifactstore.create_artifacts([(artifact, {"stdout": "tps: 1\n" * 400})])
    return run


def series_of(run) -> CellSeries:
    return CellSeries.objects.get(cell__run=run)


def as_list(blob) -> list[float]:
    return seriesstore.unpack(blob).tolist()


def test_old_series_are_downsampled_to_minutes(team):
    old, recent = finished_run(team, 40), finished_run(team, 5)
    assert retention.apply(series_days=30, raw_days=0, now=NOW) == {"series": 1, "raw": 0}
    row = series_of(old)
    assert (row.bin_seconds, row.count) == (60, 3)
    assert as_list(row.t) == EXPECTED["t"] and as_list(row.values) == EXPECTED["means"]
    assert as_list(row.lows) == EXPECTED["lows"] and as_list(row.highs) == EXPECTED["highs"]
    assert series_of(recent).bin_seconds == 0 and series_of(recent).count == 150
    old.refresh_from_db()
    assert old.retention["series"] == {"at": NOW.isoformat(), "days": 30}
    # Applied again, nothing is downsampled twice.
    assert retention.apply(series_days=30, raw_days=0, now=NOW)["series"] == 0
    assert as_list(series_of(old).values) == EXPECTED["means"]


def test_old_raw_outputs_expire_and_the_pages_say_so(owner_client, team, file_store):
    old, recent = finished_run(team, 40), finished_run(team, 5)
    old_blob = Artifact.objects.get(cell__run=old).blobs.get()
    assert retention.apply(series_days=0, raw_days=30, now=NOW) == {"series": 0, "raw": 1}
    old_blob.refresh_from_db()
    assert old_blob.expired_at == NOW and not (file_store / old_blob.key).exists()
    recent_blob = Artifact.objects.get(cell__run=recent).blobs.get()
    assert recent_blob.expired_at is None and (file_store / recent_blob.key).exists()
    cell = old.cells.get()
    html = owner_client.get(reverse("cell_artifacts", args=[old.pk, cell.pk])).content.decode()
    assert f"expired on {NOW:%Y-%m-%d} by retention (BENCHBOARD_RAW_RETENTION_DAYS)" in html
    assert "tps: 1" in html  # the first KiB kept in the database
    run_page = owner_client.get(reverse("run_detail", args=[old.pk])).content.decode()
    assert "Raw outputs expired on" in run_page and "retention of 30 days" in run_page
    artifact = cell.artifacts.get()
    url = reverse("cell_artifact_download", args=[old.pk, cell.pk, artifact.pk, "stdout"])
    response = owner_client.get(url)
    assert response.status_code == 404 and "expired" in response.content.decode()


def test_baselines_and_compared_runs_are_never_touched(team):
    baseline, compared = finished_run(team, 400, "base"), finished_run(team, 400, "cmp")
    Plan.objects.create(team=team, name="p", tool="sysbench", document={}, baseline_run=baseline)
    Comparison.objects.create(team=team, name="c").runs.add(compared)
    assert retention.apply(series_days=1, raw_days=1, now=NOW) == {"series": 0, "raw": 0}
    for run in (baseline, compared):
        assert series_of(run).bin_seconds == 0
        assert Artifact.objects.get(cell__run=run).blobs.get().expired_at is None
        run.refresh_from_db()
        assert run.retention == {}


def test_retention_is_off_by_default(team):
    assert django_settings.BENCHBOARD_SERIES_RETENTION_DAYS == 0
    assert django_settings.BENCHBOARD_RAW_RETENTION_DAYS == 0
    run = finished_run(team, 3650)
    assert retention.apply(now=NOW) == {"series": 0, "raw": 0}
    assert series_of(run).bin_seconds == 0


def test_retention_command_and_beat_entry(team, settings):
    settings.BENCHBOARD_SERIES_RETENTION_DAYS = 30
    finished_run(team, 40)
    out = StringIO()
    call_command("retention", "--raw-days", "30", stdout=out)
    assert out.getvalue().strip() == "1 series downsampled, 1 raw outputs expired"
    assert django_settings.CELERY_BEAT_SCHEDULE["retention"]["task"] == "benchapp.retention"
    assert tasks.retention.name == "benchapp.retention"
    assert tasks.retention() == {"series": 0, "raw": 0}  # done already


def test_downsampled_series_still_chart_as_means(team):
    run = finished_run(team, 40)
    retention.apply(series_days=30, raw_days=0, now=NOW)
    cell = run.cells.get()
    times, values = seriesstore.read({cell.pk: 1}, "tps")[cell.pk]
    assert times.tolist() == EXPECTED["t"] and np.allclose(values, EXPECTED["means"])


def test_cell_timeline_draws_the_minutes_min_and_max(team):
    run = finished_run(team, 40)
    retention.apply(series_days=30, raw_days=0, now=NOW)
    tps = timeline.cell_timeline(run.cells.get())["sources"]["tool"]["tps"]
    assert (tps["x"], tps["y"]) == (EXPECTED["t"], EXPECTED["means"])
    assert (tps["low"], tps["high"]) == (EXPECTED["lows"], EXPECTED["highs"])
