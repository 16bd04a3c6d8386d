"""The pool of worker hosts (`make bench`): local cells per minute with one
and with two worker hosts, and how long a lost host's cell takes to run on
the other.

A worker host here is a Celery worker (concurrency 1) in a UTS namespace of
its own (`unshare --uts`, root only) with its own host name and var dir,
sharing PostgreSQL and Redis, as tests/support/worker.py makes them: each
is a host of the pool with its own machine lock and queue. The plan is
bench/scale.py's (fio cells that wait on a rate limit, on 8 local
targets): every cell holds its worker host, so one host runs one cell at a
time and a second host should nearly double the rate (goal >= 1.8x). The
hosts interleave (1, 2, 1, 2, ...) so a shared machine's load falls on both
alike. A run's time is the database's own: from start_run to finish_run.

The loss figure: a cell of 20 s starts on host 1, which is killed
(SIGKILL) in its measure; the reaper runs every second (beat's
BENCHBOARD_REAP_SECONDS=1); the figure is the seconds from the kill until
the cell runs on host 2, next to the lease it waits out.
"""

from __future__ import annotations

import signal
import statistics
import time
from pathlib import Path

from bench.report import spread
from bench.scale import PARAMS, TARGETS, run_on, wait_finished
from benchapp.models import Cell
from benchapp.runs import orchestration, reaper
from tests.support.worker import Worker

HOSTS = ("bench-pool-1", "bench-pool-2")
CELLS_PER_TARGET = 3
GOAL_SPEEDUP = 1.8
# The loss figure's leases (the defaults are 10 s and 60 s).
LOSS_ENV = {"BENCHBOARD_HEARTBEAT_SECONDS": "1", "BENCHBOARD_LEASE_SECONDS": "6"}


def plan(repeat: int = CELLS_PER_TARGET, runtime: int | None = None, targets=TARGETS) -> dict:
    params = dict(PARAMS, runtime=runtime or PARAMS["runtime"])
    return {
        "name": "bench-pool",
        "tool": "fio",
        "targets": [{"name": name, "kind": "host"} for name in targets],
        "params": params,
        "axes": {"target": list(targets)},
        "repeat": repeat,
        "order": "interleaved",
    }


def start_hosts(count: int, log_dir: Path, env: dict, label: str) -> list[Worker]:
    started = []
    for host in HOSTS[:count]:
        host_env = dict(env, BENCHBOARD_VAR_DIR=str(log_dir / f"var-{host}"))
        started.append(Worker(log_dir / f"{label}-{host}.log", host_env, label, 1, host=host))
    return started


def run_once(team, hosts: int, log_dir: Path, env: dict, label: str) -> dict:
    started = start_hosts(hosts, log_dir, env, label)
    cells, seconds = run_on(team, plan(), started, timeout=900)
    return {
        "cells": len(cells),
        "seconds": round(seconds, 2),
        "cells_per_min": round(60 * len(cells) / seconds, 2),
        "per_host": {h: sum(c.worker == h for c in cells) for h in HOSTS[:hosts]},
    }


def throughput(team, log_dir: Path, env: dict, rounds: int = 2, log=print) -> dict:
    """Local cells per minute with 1 and 2 worker hosts, `rounds` interleaved runs each."""
    team.max_running_cells = len(TARGETS)  # the team's cap is not what is measured
    team.save(update_fields=["max_running_cells"])
    runs: dict[int, list[dict]] = {1: [], 2: []}
    for round_no in range(1, rounds + 1):
        for hosts in runs:
            row = run_once(team, hosts, log_dir, env, f"pool-r{round_no}h{hosts}")
            runs[hosts].append(row)
            log(f"  round {round_no}, {hosts} worker host(s): {row}")
    one = [r["cells_per_min"] for r in runs[1]]
    two = [r["cells_per_min"] for r in runs[2]]
    return {
        "cells": len(TARGETS) * CELLS_PER_TARGET,
        "cell_runtime_s": PARAMS["runtime"],
        "rounds": rounds,
        "one_host": spread(one),
        "two_hosts": spread(two),
        "speedup": round(statistics.median(two) / statistics.median(one), 3),
        "speedup_per_round": spread([t / o for t, o in zip(two, one, strict=True)]),
        "goal_speedup": GOAL_SPEEDUP,
        "runs": runs,
    }


def lost_host_requeue(team, log_dir: Path, env: dict) -> dict:
    """Seconds from killing the host running a cell until the cell runs on the other."""
    from django.conf import settings

    env = dict(env, **LOSS_ENV)
    settings.BENCHBOARD_HEARTBEAT_SECONDS = int(LOSS_ENV["BENCHBOARD_HEARTBEAT_SECONDS"])
    settings.BENCHBOARD_LEASE_SECONDS = int(LOSS_ENV["BENCHBOARD_LEASE_SECONDS"])
    first, second = start_hosts(2, log_dir, env, "pool-loss")
    try:
        run = orchestration.start_run(
            team, plan(repeat=1, runtime=20, targets=TARGETS[:1]), origin="bench"
        )
        cell = _wait(lambda: _running_on(run, HOSTS, phase="measure"))
        victim = first if cell.worker == HOSTS[0] else second
        victim.kill(signal.SIGKILL)
        killed = time.monotonic()
        _wait(lambda: _rerun(cell, victim.host), reap=True)
        seconds = time.monotonic() - killed
        wait_finished(run, timeout=900, reap=True)
    finally:
        for worker in (first, second):
            worker.stop()
    return {"seconds": round(seconds, 1), "lease_s": int(LOSS_ENV["BENCHBOARD_LEASE_SECONDS"])}


def _running_on(run, hosts, phase):
    return Cell.objects.filter(run=run, status=Cell.RUNNING, phase=phase, worker__in=hosts).first()


def _rerun(cell, lost_host):
    return (
        Cell.objects.filter(pk=cell.pk, status=Cell.RUNNING, attempt__gte=2)
        .exclude(worker=lost_host)
        .first()
    )


def _wait(predicate, timeout: float = 300, reap: bool = False):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if reap:
            reaper.reap()
        found = predicate()
        if found:
            return found
        time.sleep(1.0 if reap else 0.2)
    raise RuntimeError("the pool bench waited too long")
