"""Progress of runs and cells, read from the database (pages, API, runplan)."""

from __future__ import annotations

import statistics

from django.db.models import Count, Q
from django.db.models.fields.json import KeyTransform
from django.utils import timezone

from benchapp.models import Cell, Run
from benchapp.plans.estimates import cell_seconds
from runners.errors import ValidationError


def planned_seconds(run: Run, cells: list[Cell]) -> float:
    """Mean seconds expected per cell before any cell of the run has finished
    (benchapp.plans.estimates), from the cells' frozen params (canonical names,
    axis values applied; run_progress reads them with the cells)."""
    params = [c.frozen_params or {} for c in cells] or [_plan_params(run)]
    return statistics.fmean(cell_seconds(run.tool, p) for p in params)


def _plan_params(run: Run) -> dict:
    """The plan's parameters as typed and checked at start (Run.spec), {} for
    an imported run, whose document is a record of axes, not a plan."""
    try:
        return run.spec.params
    except ValidationError:
        return {}


def expected_cell_seconds(run: Run, durations: list[float], cells: list[Cell]) -> float:
    return statistics.median(durations) if durations else planned_seconds(run, cells)


def run_progress(run: Run) -> dict:
    """{total, done, succeeded, failed, cancelled, running, percent, phase, eta_s, cells}.

    Two queries: counts by status, and the cells themselves (for per-cell
    progress and measured durations).
    """
    counts = Cell.objects.filter(run=run).aggregate(
        total=Count("id"), **{s: Count("id", filter=Q(status=s)) for s, _ in Cell.STATUSES}
    )
    cells = list(
        Cell.objects.filter(run=run)
        .order_by("index")
        .only(
            "id",
            "index",
            "key",
            "repeat",
            "axes",
            "target_name",
            "status",
            "phase",
            "attempt",
            "started_at",
            "finished_at",
            "phase_started_at",
            "error",
            "client_bound",
            "repeat_stop",
        )
        # The frozen params only, not the whole frozen cell: what the ETA needs.
        .annotate(frozen_params=KeyTransform("params", KeyTransform("cell", "spec")))
    )
    durations = [c.duration for c in cells if c.status == Cell.SUCCEEDED and c.duration]
    expected = expected_cell_seconds(run, durations, cells)
    done = counts["succeeded"] + counts["failed"] + counts["cancelled"]
    running = [c for c in cells if c.status == Cell.RUNNING]
    targets = len({c.target_name for c in cells}) or 1
    parallel = min(targets, run.concurrency or targets)
    remaining = counts["total"] - done
    now = timezone.now()
    eta = None
    if run.is_active:
        eta = round(remaining * expected / parallel, 1)
    return {
        "id": run.pk,
        "status": run.status,
        "total": counts["total"],
        "done": done,
        "succeeded": counts["succeeded"],
        "failed": counts["failed"],
        "cancelled": counts["cancelled"],
        "running": len(running),
        "percent": round(100.0 * done / counts["total"], 1) if counts["total"] else 100.0,
        "phase": running[0].phase if running else "",
        "eta_s": eta,
        "cells": [cell_progress(c, expected, now) for c in cells],
    }


def cell_progress(cell: Cell, expected: float, now) -> dict:
    elapsed = None
    if cell.started_at:
        elapsed = round(((cell.finished_at or now) - cell.started_at).total_seconds(), 1)
    percent = 100.0 if cell.status in Cell.TERMINAL else 0.0
    if cell.status == Cell.RUNNING and elapsed is not None:
        percent = min(99.0, round(100.0 * elapsed / expected, 1))
    return {
        "id": cell.pk,
        "index": cell.index,
        "key": cell.key,
        "repeat": cell.repeat,
        "axes": cell.axes,
        "target": cell.target_name,
        "status": cell.status,
        "phase": cell.phase,
        "attempt": cell.attempt,
        "elapsed_s": elapsed,
        "expected_s": round(expected, 1),
        "percent": percent,
        "error": cell.error,
        "client_bound": cell.client_bound,
        "repeats": (cell.repeat_stop or {}).get("summary", ""),  # adaptive repeats' decision
    }
