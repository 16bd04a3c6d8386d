"""The harness overhead study: does a figure through Benchboard equal the figure by hand?

For each tool (sysbench, mysqlslap, fio, pgbench) the study first runs one
cell through Benchboard, untimed, and takes the command it recorded for the
measure (the Artifact's command line). Every later run, whichever way it is
started, runs exactly that argv, with the environment and the uploaded files
(option file, pgpass) the tool's builder gives for it, on the same data
prepared once beforehand. The arms (hand, ssh and board unless asked
otherwise), interleaved, their order rotated from one pair to the next:

    hand     here, bare: subprocess in a work dir holding the same files
    sandbox  here, in the bubblewrap sandbox Benchboard puts local tools in
             (as the unprivileged sandbox user when root): what a local
             cell pays for containment
    ssh      by hand over the same sshd with the OpenSSH client:
             `ssh -p PORT root@127.0.0.1 'cd DIR && env K=V ARGV'`
    board    a run of that one cell through a real Celery worker, over SSH on
             the same sshd, the client on the target (the worker's heartbeat
             and lease at their defaults)

The tool's own throughput figure is compared: per pair, board/ssh is what
Benchboard costs beyond SSH, ssh/hand what SSH costs, board/hand the whole,
sandbox/hand what the sandbox costs; each as the mean over pairs with its
95 % t interval, and the number of pairs a +-1 % interval would take at the
spread seen. The by-hand coefficient of variation says whether the jobs
were long enough (goal: <= 2 %).

Then one profile pass per tool (outside the pairs, so its /proc polling
never weighs on them): CPU seconds of every process below the worker, the
sshd and the OpenSSH client during a board run and an ssh run, by role.
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time
from pathlib import Path

from django.conf import settings

from bench.cells import beyond_measure, measured
from bench.cpuwatch import CpuWatch
from bench.overhead_arms import (
    ARM_FUNCTIONS,
    GOAL_ARMS,
    HandCommand,
    Job,
    Stage,
    arm_ssh,
    board_run,
    prepare_data,
    recorded_command,
    set_up,
    tear_down,
)
from benchapp.models import Artifact, Run
from runners.sandbox import unavailable

# Ratios reported: (numerator arm, denominator arm).
RATIOS = (
    ("board", "hand"),
    ("ssh", "hand"),
    ("board", "ssh"),
    ("sandbox", "hand"),
    # What telemetry costs the tool: the same cell with and without sampling.
    ("board", "board_quiet"),
)


# How long each job runs by default. On the machine BENCHMARKS.md was measured
# on, a tool's throughput second by second varies by ~10 % (the host's
# neighbours: the spread is gone within 5 s, and a job's mean varies as
# 1/sqrt(its length): 7.5 % over 5 s, 4.4 % over 10 s, 2.2 % over 30 s), so a
# job must run ~30 s before its by-hand CV can reach the goal's 2 %.
SECONDS = 30
QUICK_SECONDS = 3


def jobs(seconds: int, scratch: Path) -> list[Job]:
    """The four jobs, each running about `seconds` (QUICK_SECONDS: to get the code right)."""
    sysbench = {"test": "oltp_read_only", "tables": 1, "table_size": 10000, "threads": 2}
    return [
        Job("sysbench", {**sysbench, "time": seconds}, "tps", "mysql", prepare=sysbench),
        Job(
            "mysqlslap",
            {
                "auto_generate_sql": True,
                "add_autoincrement": True,
                "load_type": "key",
                "number_of_queries": 20000 * seconds,  # over all clients; sized, see `amount`
                "concurrency": 2,
                "iterations": 1,
            },
            "qps",
            "mysql",
            amount="number_of_queries",
        ),
        Job(
            "fio",
            {
                "rw": "randread",
                "bs": "4k",
                "size": "64M",
                "runtime": seconds,
                "time_based": True,
                "filename": str(scratch / "fio" / "fio.data"),
            },
            "read_iops",
            "host",
        ),
        Job(
            "pgbench",
            {"client": 2, "jobs": 2, "time": seconds, "select_only": True},
            "tps",
            "postgres",
            prepare={"scale": 10},
        ),
    ]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- statistics


def mean_ci(values: list[float]) -> dict:
    """Mean and its 95 % t interval (None below two values)."""
    from scipy import stats

    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": round(mean, 4), "ci95": None, "n": len(values)}
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return {"mean": round(mean, 4), "ci95": [round(mean - half, 4), round(mean + half, 4)]}


def pairs_needed(ratios: list[float], half_width: float = 0.01) -> int | None:
    """Pairs whose 95 % t interval would be +-half_width at these ratios' spread.

    What the goal costs on this machine: with the spread seen, how many
    pairs the interval needs to narrow to the goal's width (None: no spread
    to go by).
    """
    from scipy import stats

    sd = statistics.stdev(ratios) if len(ratios) > 1 else 0
    if sd == 0:
        return None
    n = 2
    while stats.t.ppf(0.975, n - 1) * sd / math.sqrt(n) > half_width:
        n += 1
    return n


def cv(values: list[float]) -> float | None:
    """Coefficient of variation (stdev / mean), None below two values."""
    if len(values) < 2:
        return None
    return round(statistics.stdev(values) / statistics.fmean(values), 4)


# ------------------------------------------------------------------- profile


def profile(stage: Stage, job: Job, hand: HandCommand) -> dict:
    """CPU by role during the tool's run, through Benchboard and by hand over SSH.

    The window is the measure phase (board) or the ssh command (ssh); shares
    are of one core over that window (the machine has os.cpu_count()).
    """
    roots = {
        stage.worker.proc.pid: "worker",
        stage.server.process.pid: "sshd",
        os.getpid(): "bench",
    }
    out = {}
    watch = CpuWatch(roots)
    watch.start()
    run = board_run(stage, job)
    watch.stop()
    measure = Artifact.objects.get(cell__run=run, phase="measure")
    window = (measure.started_at.timestamp(), measure.finished_at.timestamp())
    out["board"] = shares(watch.between(*window), window)
    watch = CpuWatch(roots)
    watch.start()
    start = time.time()
    arm_ssh(stage, job, hand)
    end = time.time()
    watch.stop()
    out["ssh"] = shares(watch.between(start, end), (start, end))
    return out


def shares(cpu: dict[str, float], window: tuple[float, float]) -> dict:
    seconds = window[1] - window[0]
    harness = sum(v for role, v in cpu.items() if role not in ("tool", "bench", "bench children"))
    return {
        "window_s": round(seconds, 2),
        "cpu_s": cpu,
        "harness_cpu_s": round(harness, 3),
        "harness_core_pct": round(100 * harness / seconds, 2) if seconds > 0 else None,
    }


# --------------------------------------------------------------------- study


def measure_tool(stage: Stage, job: Job, pairs: int, arms: tuple[str, ...], seconds: int) -> dict:
    """Prepare, one untimed cell, `pairs` interleaved pairs, one profile pass."""
    prepare_data(stage, job)
    log(f"{job.tool}: an untimed cell (warm-up; its command is the one every arm runs)")
    warm_up = board_run(stage, job)
    if job.amount is not None:  # sized from the warm-up's rate, then recorded afresh
        rate = measured(warm_up, job.metric)
        job.params[job.amount] = max(10000, int(round(rate * seconds, -4)))
        log(f"{job.tool}: {job.amount} {job.params[job.amount]} (~{seconds} s at {rate:.0f})")
        warm_up = board_run(stage, job)
    hand = recorded_command(stage, job, warm_up)
    stage.board_runs = []
    values: dict[str, list[float]] = {arm: [] for arm in arms}
    orders, loads = [], []
    for i in range(pairs):
        order = arms[i % len(arms) :] + arms[: i % len(arms)]
        orders.append(order)
        loads.append(round(os.getloadavg()[0], 2))
        for arm in order:
            values[arm].append(ARM_FUNCTIONS[arm](stage, job, hand))
        shown = ", ".join(f"{arm} {values[arm][-1]:.1f}" for arm in arms)
        log(f"  {job.tool} pair {i + 1}/{pairs}: {shown} {job.metric}")
    ratios = {}
    for top, bottom in RATIOS:
        if top in values and bottom in values:
            each = [a / b for a, b in zip(values[top], values[bottom], strict=True)]
            ratios[f"{top}/{bottom}"] = {
                **mean_ci(each),
                "pairs_for_1pct": pairs_needed(each),
                "values": [round(r, 4) for r in each],
            }
    return {
        "metric": job.metric,
        "params": job.params,
        "command": hand.recorded,
        "env": sorted(hand.env),
        "values": {arm: [round(v, 2) for v in vs] for arm, vs in values.items()},
        "orders": orders,
        "load_average_per_pair": loads,  # the machine's 1-minute load as each pair began
        "cv": {arm: cv(vs) for arm, vs in values.items()},
        "ratios": ratios,
        "cell_beyond_measure_s": median_beyond_measure(stage.board_runs),
        "dispatch_latency_s": dispatch_latency(stage.board_runs),
        "profile": profile(stage, job, hand),
    }


def median_beyond_measure(runs: list[Run]) -> float | None:
    """Median seconds a cell took beyond its measured run (connect, facts, recording)."""
    spans = [s for s in (beyond_measure(run.cells.get()) for run in runs) if s is not None]
    return round(statistics.median(spans), 3) if spans else None


def dispatch_latency(runs: list[Run]) -> float | None:
    """Median seconds from start_run to the cell's first command."""
    spans = []
    for run in runs:
        first = Artifact.objects.filter(cell__run=run).order_by("started_at").first()
        if first is not None and first.started_at is not None:
            spans.append((first.started_at - run.created_at).total_seconds())
    return round(statistics.median(spans), 3) if spans else None


def study(
    team,
    server,
    workdir: Path,
    pairs: int = 7,
    seconds: int = SECONDS,
    tools=None,
    arms: tuple[str, ...] = GOAL_ARMS,
) -> dict:
    """The whole study (see the module docstring); its figures as a dict."""
    stage = set_up(team, server, workdir)
    if stage.sandbox is None:
        arms = tuple(a for a in arms if a != "sandbox")
    out = {
        "pairs": pairs,
        "seconds": seconds,
        "quick": seconds <= QUICK_SECONDS,
        "arms": list(arms),
        "sandbox": "bubblewrap as " + settings.BENCHBOARD_SANDBOX_USER
        if stage.sandbox
        else unavailable(settings.BENCHBOARD_SANDBOX_USER),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "tools": {},
    }
    try:
        for job in jobs(seconds, stage.scratch):
            if tools is None or job.tool in tools:
                out["tools"][job.tool] = measure_tool(stage, job, pairs, arms, seconds)
    finally:
        tear_down(stage)
    out["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    return out
