"""Retention, off by default (docs/operations.md, "Retention").

Two operator settings, in days after a run finished (0 = off):
- BENCHBOARD_SERIES_RETENTION_DAYS: per-second series are downsampled to
  one point per minute keeping its min, mean and max (CellSeries.bin_seconds,
  lows, highs); charts then draw the means, the cell's timeline with
  each minute's min..max as a band.
- BENCHBOARD_RAW_RETENTION_DAYS: raw outputs' objects are deleted from the
  artifact store; the first and last KiB stay in the database
  (OutputBlob.expired_at). Outputs not yet moved to the store are kept.

A plan's baseline (the run pinned on its trend page) and every run in a
saved comparison are never touched. What was done is written on the run
(Run.retention), which its pages show. beat runs apply() every
BENCHBOARD_RETENTION_SECONDS; `manage.py retention` runs it by hand.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from benchapp.models import Cell, CellSeries, OutputBlob, Plan, Run
from benchapp.store import artifactstore, seriesstore

log = logging.getLogger(__name__)

BIN_SECONDS = 60  # one point per minute: min/mean/max keep spikes and dips visible
BATCH = 500  # series rows or outputs handled per transaction


def apply(
    series_days: int | None = None, raw_days: int | None = None, now: datetime | None = None
) -> dict:
    """Both policies, each skipped when its days are 0; days default to the
    settings. Returns {"series": rows downsampled, "raw": outputs expired}."""
    now = now or timezone.now()
    series_days = settings.BENCHBOARD_SERIES_RETENTION_DAYS if series_days is None else series_days
    raw_days = settings.BENCHBOARD_RAW_RETENTION_DAYS if raw_days is None else raw_days
    return {
        "series": downsample_series(series_days, now) if series_days else 0,
        "raw": expire_raw_outputs(raw_days, now) if raw_days else 0,
    }


def expirable_runs(days: int, now: datetime) -> QuerySet:
    """Runs finished more than `days` ago, but baselines and runs in a saved comparison."""
    baselines = Plan.objects.filter(baseline_run__isnull=False).values("baseline_run")
    return (
        Run.objects.filter(finished_at__lt=now - timedelta(days=days))
        .exclude(pk__in=baselines)
        .exclude(comparisons__isnull=False)
    )


def downsample_series(days: int, now: datetime) -> int:
    """Downsamples the as-recorded series of expirable runs; returns how many rows."""
    rows = CellSeries.objects.filter(cell__run__in=expirable_runs(days, now), bin_seconds=0)
    done = 0
    while ids := list(rows.values_list("pk", flat=True)[:BATCH]):
        with transaction.atomic():
            batch = list(CellSeries.objects.select_for_update().filter(pk__in=ids, bin_seconds=0))
            for row in batch:
                _downsample(row)
            CellSeries.objects.bulk_update(
                batch, ["t", "values", "lows", "highs", "count", "bin_seconds"]
            )
            _note(_runs_of(batch), "series", days, now)
        done += len(batch)
    log.info("retention: %d series downsampled (runs finished > %d days ago)", done, days)
    return done


def _downsample(row: CellSeries) -> None:
    """Replaces a row's points by one per BIN_SECONDS bin: its start, mean, min, max."""
    t, values = seriesstore.unpack(row.t), seriesstore.unpack(row.values)
    order = np.argsort(t, kind="stable")
    t, values = t[order], values[order]
    bins = np.floor(t / BIN_SECONDS)
    starts_of, first, counts = np.unique(bins, return_index=True, return_counts=True)
    if len(t):
        row.values = seriesstore.pack(np.add.reduceat(values, first) / counts)
        row.lows = seriesstore.pack(np.minimum.reduceat(values, first))
        row.highs = seriesstore.pack(np.maximum.reduceat(values, first))
    else:
        row.lows = row.highs = seriesstore.pack([])
    row.t = seriesstore.pack(starts_of * BIN_SECONDS)
    row.count = len(starts_of)
    row.bin_seconds = BIN_SECONDS


def expire_raw_outputs(days: int, now: datetime) -> int:
    """Deletes the stored outputs of expirable runs; returns how many."""
    blobs = OutputBlob.objects.filter(
        artifact__cell__run__in=expirable_runs(days, now), expired_at__isnull=True
    )
    done = 0
    while batch := list(blobs.select_related("artifact__cell")[:BATCH]):
        for blob in batch:
            try:
                artifactstore.delete(blob)
            except artifactstore.StoreError as exc:
                # Marked expired all the same: the page then says so, and
                # the next pass does not try the same object forever.
                log.warning("retention: %s", exc)
        with transaction.atomic():
            OutputBlob.objects.filter(pk__in=[b.pk for b in batch]).update(expired_at=now)
            _note({b.artifact.cell.run_id for b in batch}, "raw", days, now)
        done += len(batch)
    log.info("retention: %d raw outputs expired (runs finished > %d days ago)", done, days)
    return done


def _runs_of(rows: list[CellSeries]) -> set[int]:
    cells = {row.cell_id for row in rows}
    return set(Cell.objects.filter(pk__in=cells).values_list("run_id", flat=True))


def _note(run_ids: set[int], policy: str, days: int, now: datetime) -> None:
    """Writes on each run what `policy` did to it, for its pages."""
    for run in Run.objects.select_for_update().filter(pk__in=run_ids).only("pk", "retention"):
        run.retention = {**run.retention, policy: {"at": now.isoformat(), "days": days}}
        run.save(update_fields=["retention"])
