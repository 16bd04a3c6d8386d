#!/usr/bin/env python
"""History figures (issue 14): the trend page of a plan with 365 runs x 50
cell keys (2 repeats each), and change detection over that history.

Prints server time p50/p95 and the query count of the trend JSON, the points
sent per line (downsampled), the time of a full detection over the history
(50 series) and of the incremental update after each of 5 more runs. Runs
are summarized as they are added, as the detection task does when a run
finishes. Uses the database of
DATABASE_URL; its data live in a team of their own, removed at the end.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.urls import reverse  # noqa: E402
from django.utils import timezone  # noqa: E402

from benchapp.histories import history  # noqa: E402
from benchapp.models import Cell, HistoryState, Membership, Plan, Run, Team  # noqa: E402
from benchapp.store import measurestore  # noqa: E402

RUNS, KEYS, REPEATS = 365, 50, 2


def add_run(team, plan, day, level, rng):
    run = Run.objects.create(
        team=team,
        plan=plan,
        name=f"night {day}",
        tool="sysbench",
        document={},
        status=Run.SUCCEEDED,
    )
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(days=RUNS - day))
    cells = Cell.objects.bulk_create(
        Cell(
            run=run,
            index=k * REPEATS + r,
            key=f"threads={k}",
            repeat=r + 1,
            axes={"threads": k},
            status=Cell.SUCCEEDED,
            attempt=1,
        )
        for k in range(KEYS)
        for r in range(REPEATS)
    )
    measurestore.add(
        [
            (
                c,
                1,
                [
                    measurestore.Value(
                        run.pk, c.pk, 1, 0, "", "tps", level * (1 + rng.gauss(0, 0.02))
                    )
                ],
            )
            for c in cells
        ]
    )
    run.refresh_from_db()
    history.summarize_run(run)  # what the detection task does when a run finishes
    return run


def main():
    rng = random.Random(14)
    team = Team.objects.create(name=f"bench-history-{os.getpid()}")
    user = get_user_model().objects.create_user(f"bench-history-{os.getpid()}")
    try:
        Membership.objects.create(team=team, user=user)
        plan = Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})
        t0 = time.perf_counter()
        for day in range(RUNS):
            add_run(team, plan, day, 1000 if day < 300 else 900, rng)
        print(
            f"setup: {RUNS} runs x {KEYS} keys x {REPEATS} repeats in "
            f"{time.perf_counter() - t0:.1f} s"
        )

        t0 = time.perf_counter()
        alerts = history.detect_plan(plan)
        print(
            f"detection, full history ({KEYS} series): {time.perf_counter() - t0:.3f} s, "
            f"{len(alerts)} alerts"
        )
        increments = []
        for extra in range(5):
            add_run(team, plan, RUNS + extra, 900, rng)
            t0 = time.perf_counter()
            history.detect_plan(plan)
            increments.append(time.perf_counter() - t0)
        print(
            f"detection, incremental after one more run (5 runs): median "
            f"{statistics.median(increments) * 1000:.0f} ms, max {max(increments) * 1000:.0f} ms"
        )

        client = Client()
        client.force_login(user)
        url = reverse("plan_trend_json", args=[plan.pk])
        times = []
        for _ in range(20):
            with CaptureQueriesContext(connection) as queries:
                t0 = time.perf_counter()
                data = client.get(url, {"metric": "tps"}).json()
                times.append(time.perf_counter() - t0)
        times.sort()
        print(
            f"trend JSON: p50 {statistics.median(times) * 1000:.0f} ms, "
            f"p95 {times[int(0.95 * len(times)) - 1] * 1000:.0f} ms, "
            f"{len(queries)} queries, {len(data['lines'])} lines x "
            f"{max(len(line['runs']) for line in data['lines'])} points"
        )
    finally:
        HistoryState.objects.filter(plan__team=team).delete()
        team.delete()
        user.delete()


if __name__ == "__main__":
    main()
