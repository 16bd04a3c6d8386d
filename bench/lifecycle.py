#!/usr/bin/env python
"""Run lifecycle cost at 10, 200 and 2,000 cells (`make bench` can call it).

Prints, for an fio plan of each size (one target, no tool run):
- start: seconds for orchestration.start_run (validate, expand, freeze and
  store every cell), REPEATS times per size (the sizes interleaved): the
  median and the range; the goal is 2 s at 2,000 cells;
- dispatch per cell: the median over SAMPLES cells of what the lifecycle
  does around a tool run — dispatch (take the target's lock), claim,
  thaw the frozen cell and apply provisioned endpoints, finish and release.
Both should not grow with the plan except start_run's linear part.

`--json` prints the figures as one line of JSON last (bench/run.py reads it).

Uses its own throwaway database (created next to DATABASE_URL's and dropped
after) and a private Celery queue nobody consumes (deleted after).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
QUEUE = f"bench-lifecycle-{uuid.uuid4().hex[:8]}"
os.environ["BENCHBOARD_QUEUE"] = QUEUE

import django  # noqa: E402

django.setup()

from django.db import connection  # noqa: E402

from bench.report import spread  # noqa: E402

SIZES = (10, 200, 2000)
SAMPLES = 20
REPEATS = 3
GOAL_START_S = {2000: 2.0}


def fio_plan(cells: int) -> dict:
    return {
        "name": f"lifecycle-{cells}",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {
            "directory": "/tmp",
            "size": "4M",
            "bs": "4k",
            "runtime": 1,
            "time_based": True,
            "rw": "read",
        },
        "axes": {"iodepth": list(range(1, cells // 2 + 1)), "numjobs": [1, 2]},
    }


def start(team, size: int):
    """A started run of `size` cells and the seconds start_run took."""
    from benchapp.runs import orchestration

    began = time.perf_counter()
    run = orchestration.start_run(team, fio_plan(size), concurrency=1)
    seconds = time.perf_counter() - began
    assert run.cells.count() == size, run.cells.count()
    return run, seconds


def dispatch_cost(run) -> float:
    """Median seconds of the lifecycle around one cell of run, over SAMPLES cells."""
    from benchapp.cloud import provisioning
    from benchapp.models import Cell
    from benchapp.runs import orchestration, recording

    costs = []
    for _ in range(min(SAMPLES, run.cells.count())):
        began = time.perf_counter()
        (cell_id,) = orchestration.dispatch(run.pk)
        cell = orchestration.claim(cell_id)
        plan, spec = recording.frozen_cell(cell)
        plan = provisioning.runtime_plan(cell.run, plan)
        provisioning.runtime_overrides(cell.run, plan, spec)
        Cell.objects.filter(pk=cell.pk).update(status=Cell.SUCCEEDED)
        orchestration._finish_cell(cell, Cell.SUCCEEDED, record=False)
        costs.append(time.perf_counter() - began)
    return statistics.median(costs)


def measure(team) -> dict:
    """start_run seconds per size (REPEATS, interleaved) and dispatch ms per cell."""
    from benchapp.runs import orchestration

    starts = {size: [] for size in SIZES}
    dispatch_ms = {}
    for repeat in range(REPEATS):
        for size in SIZES:
            run, seconds = start(team, size)
            starts[size].append(seconds)
            if repeat == REPEATS - 1:
                dispatch_ms[size] = round(1000 * dispatch_cost(run), 2)
            # Its queued cells would wait on the target of the next runs.
            orchestration.cancel_run(run)
    return {
        str(size): {
            "start_run_s": spread(values),
            "goal_start_s": GOAL_START_S.get(size),
            "dispatch_per_cell_ms": dispatch_ms[size],
        }
        for size, values in starts.items()
    }


def main() -> int:
    from django.conf import settings

    from benchapp.celery import app
    from benchapp.models import Team

    settings.BENCHBOARD_CELL_LIMIT = max(settings.BENCHBOARD_CELL_LIMIT, max(SIZES))
    name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        team = Team.objects.create(name="bench-lifecycle")
        figures = measure(team)
    finally:
        connection.creation.destroy_test_db(name, verbosity=0)
        with app.connection_for_write() as conn:
            conn.default_channel.queue_delete(QUEUE)
    print(f"{'cells':>6}  {'start_run s (median, min-max)':>30}  {'dispatch per cell ms':>20}")
    for size, row in figures.items():
        s = row["start_run_s"]
        start_s = f"{s['median']:.3f} ({s['min']:.3f}-{s['max']:.3f})"
        print(f"{size:>6}  {start_s:>30}  {row['dispatch_per_cell_ms']:>20.2f}")
    if "--json" in sys.argv[1:]:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
