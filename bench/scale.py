"""Scale: cells per minute with 1, 2 and 4 workers over 8 targets (`make bench`).

The cells wait rather than burn the CPU: fio capped by rate_iops spends its
runtime asleep on its rate limiter (~0.15 s of CPU per cell), so what
limits the throughput is Benchboard's dispatch and per-cell cost, not this
machine's two cores. The
plan is one a plan from the web may run (a relative file in the cell's work
dir, options from fio's allow-list); the 8 targets are all this host, and
one target never runs two cells at once, so 8 targets leave every worker a
cell to take.

Each round runs the plan with 1, 2 and 4 fresh worker processes (one Celery
worker of concurrency 1 each, as a deployment adds workers); rounds repeat,
so the worker counts interleave (1, 2, 4, 1, 2, 4, ...) and a shared
machine's load falls on all of them alike. A run's time is the database's
own: from its creation (start_run) to its end (finish_run).

Besides cells per minute, each run reports what its workers did with the
time, to show where a missing speedup went:
- cell_s: median wall time of a cell, from its claim to the end of its
  last phase (the tool's 2 s, fio's start-up and the harness);
- idle_s_per_cell: worker time not spent in any cell, per cell
  ((workers x run time - sum of cell times) / cells): recording the
  outcome, dispatch tasks and latency, the broker, the first and the last
  cell's ramp;
- load_avg: the machine's 1-minute load average at the run's end.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

from bench.report import spread
from benchapp.models import Run
from benchapp.runs import orchestration, reaper
from tests.support.worker import Worker

WORKER_COUNTS = (1, 2, 4)
TARGETS = tuple(f"disk{i}" for i in range(1, 9))
CELLS_PER_TARGET = 5
RUNTIME_S = 2
# fio sleeps between I/Os at this rate: ~40 reads of 4 KiB in a 2 s cell.
PARAMS = {
    "rw": "read",
    "bs": "4k",
    "size": "1M",
    "rate_iops": 20,
    "runtime": RUNTIME_S,
    "time_based": True,
    "filename": "scale.data",  # relative: in the cell's work dir
}


def plan() -> dict:
    """8 targets on this host, CELLS_PER_TARGET repeats of the same fio job on each."""
    return {
        "name": "bench-scale",
        "tool": "fio",
        "targets": [{"name": name, "kind": "host"} for name in TARGETS],
        "params": PARAMS,
        "axes": {"target": list(TARGETS)},
        "repeat": CELLS_PER_TARGET,
        "order": "interleaved",
    }


def wait_finished(run: Run, timeout: float = 600, reap: bool = False) -> None:
    """Until the run is no longer active; reap: run the reaper meanwhile (a lost host's cells)."""
    deadline = time.monotonic() + timeout
    while Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{run.name} run {run.pk} did not finish in {timeout} s")
        if reap:
            reaper.reap()
        time.sleep(0.5 if reap else 0.1)


def run_on(team, plan: dict, workers: list[Worker], timeout: float) -> tuple[list, float]:
    """Run plan to its end on the started workers, then stop them: its cells
    and its seconds from creation to end (RuntimeError unless it succeeded).
    bench/pool.py runs its plan through this too."""
    try:
        run = orchestration.start_run(team, plan, origin="bench")
        wait_finished(run, timeout)
    finally:
        for worker in workers:
            worker.stop()
    run.refresh_from_db()
    cells = list(run.cells.all())
    if run.status != Run.SUCCEEDED:
        raise RuntimeError(f"{run.name} run: {run.status} {[c.error for c in cells if c.error]}")
    return cells, (run.finished_at - run.created_at).total_seconds()


def run_once(team, workers: int, log_dir: Path, env: dict, label: str) -> dict:
    """Start `workers` worker processes, run the plan to its end, stop them."""
    started = [
        Worker(log_dir / f"scale-{label}-{i}.log", env, f"scale-{label}-{i}")
        for i in range(workers)
    ]
    cells, seconds = run_on(team, plan(), started, timeout=600)
    busy = [c.duration for c in cells]
    return {
        "cells": len(cells),
        "seconds": round(seconds, 2),
        "cells_per_min": round(60 * len(cells) / seconds, 2),
        "cell_s": round(statistics.median(busy), 3),
        "idle_s_per_cell": round((workers * seconds - sum(busy)) / len(cells), 3),
        "load_avg": round(os.getloadavg()[0], 2),
    }


def cell_throughput(team, log_dir: Path, env: dict, rounds: int = 3, log=print) -> dict:
    """Cells per minute per worker count, `rounds` interleaved runs each; the
    speedup of N workers is the ratio of median cells/min to 1 worker's, with
    the range of the per-round ratios."""
    runs: dict[int, list[dict]] = {n: [] for n in WORKER_COUNTS}
    for round_no in range(1, rounds + 1):
        for workers in WORKER_COUNTS:
            row = run_once(team, workers, log_dir, env, f"r{round_no}w{workers}")
            runs[workers].append(row)
            log(f"  round {round_no}, {workers} worker(s): {row}")
    one = [r["cells_per_min"] for r in runs[1]]
    out = {
        "targets": len(TARGETS),
        "cells": len(TARGETS) * CELLS_PER_TARGET,
        "cell_runtime_s": RUNTIME_S,
        "rounds": rounds,
        "workers": {},
    }
    for workers, rows in runs.items():
        per_min = [r["cells_per_min"] for r in rows]
        out["workers"][str(workers)] = {
            "cells_per_min": spread(per_min),
            "speedup": round(statistics.median(per_min) / statistics.median(one), 3),
            "speedup_per_round": spread([n / o for n, o in zip(per_min, one, strict=True)]),
            "goal_speedup": round(0.9 * workers, 2),
            "cell_s": spread([r["cell_s"] for r in rows]),
            "idle_s_per_cell": spread([r["idle_s_per_cell"] for r in rows]),
            "load_avg": spread([r["load_avg"] for r in rows]),
            "runs": rows,
        }
    return out
