#!/usr/bin/env python
"""Run lifecycle cost at 10, 200 and 2,000 cells (`make bench` can call it).

Prints, for an fio plan of each size (one target, no tool run):
- start: seconds for orchestration.start_run (validate, expand, freeze and
  store every cell);
- dispatch per cell: the median over SAMPLES cells of what the lifecycle
  does around a tool run — dispatch (take the target's lock), claim,
  thaw the frozen cell and apply provisioned endpoints, finish and release.
Both should not grow with the plan except start_run's linear part.

Uses its own throwaway database (created next to DATABASE_URL's and dropped
after) and a private Celery queue nobody consumes (deleted after).
"""

from __future__ import annotations

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

SIZES = (10, 200, 2000)
SAMPLES = 20


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


def measure(team) -> list[tuple[int, float, float]]:
    from benchapp import orchestration, provisioning, recording
    from benchapp.models import Cell

    rows = []
    for size in SIZES:
        started = time.perf_counter()
        run = orchestration.start_run(team, fio_plan(size), concurrency=1)
        start_s = time.perf_counter() - started
        assert run.cells.count() == size, run.cells.count()
        costs = []
        for _ in range(min(SAMPLES, size)):
            began = time.perf_counter()
            sent = orchestration.dispatch(run.pk)
            assert len(sent) == 1, (sent, list(run.cells.values_list("status", flat=True)[:3]))
            cell_id = sent[0]
            cell = orchestration.claim(cell_id)
            plan, spec = recording.frozen_cell(cell)
            plan = provisioning.runtime_plan(cell.run, plan)
            provisioning.runtime_overrides(cell.run, plan, spec)
            Cell.objects.filter(pk=cell.pk).update(status=Cell.SUCCEEDED)
            orchestration._finish_cell(cell, Cell.SUCCEEDED, record=False)
            costs.append(time.perf_counter() - began)
        rows.append((size, start_s, statistics.median(costs)))
    return rows


def main() -> int:
    from django.conf import settings

    from benchapp.celery import app
    from benchapp.models import Team

    settings.BENCHBOARD_CELL_LIMIT = max(settings.BENCHBOARD_CELL_LIMIT, max(SIZES))
    name = connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=False)
    try:
        team = Team.objects.create(name="bench-lifecycle")
        rows = measure(team)
    finally:
        connection.creation.destroy_test_db(name, verbosity=0)
        with app.connection_for_write() as conn:
            conn.default_channel.queue_delete(QUEUE)
    print(f"{'cells':>6}  {'start_run s':>11}  {'dispatch per cell ms':>20}")
    for size, start_s, cell_s in rows:
        print(f"{size:>6}  {start_s:>11.3f}  {cell_s * 1000:>20.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
