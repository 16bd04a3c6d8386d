#!/usr/bin/env python
"""Time the results pages on a database holding 1,000,000 measurements.

    .venv/bin/python scripts/bench_results.py [--requests 30] [--regenerate]

Creates (once) the PostgreSQL database `benchboard_bench` next to the one in
DATABASE_URL (default postgres://postgres@127.0.0.1:5432/), migrates it and
fills it with COPY: 100 runs × 500 cells × 20 metrics = 1,000,000
measurements. Then times, with Django's test Client in this process on the
app as benchapp.wsgi loads it (gunicorn's way), the comparison page of 2 runs
× 10,000 measurements, its JSON, and a run's results page; prints p50/p95
server time and the SQL query count.
Target (issue 8): comparison page p95 <= 200 ms with <= 10 queries.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RUNS, TARGETS, THREADS, REPEATS = 100, 5, (1, 2, 4, 8, 16, 32, 64, 128, 256, 512), 10
METRICS = [
    "tps",
    "qps",
    "reads",
    "writes",
    "other",
    "transactions",
    "queries",
    "errors",
    "reconnects",
    "latency_min_ms",
    "latency_avg_ms",
    "latency_max_ms",
    "latency_p95_ms",
    "total_time_s",
    "events",
    "stress_bogo_ops",
    "stress_bogo_ops_per_s",
    "read_iops",
    "write_iops",
    "runtime_s",
]
CELLS_PER_RUN = TARGETS * len(THREADS) * REPEATS  # 500 -> 10,000 measurements per run


def database_url(runs: int = RUNS) -> str:
    """One database per size, so each size is generated once and kept."""
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/benchboard")
    suffix = "" if runs == RUNS else f"_{runs}"
    return base.rsplit("/", 1)[0] + "/benchboard_bench" + suffix


def create_database(url: str) -> None:
    import psycopg

    server, name = url.rsplit("/", 1)
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def generate(regenerate: bool, runs_wanted: int = RUNS) -> None:
    from django.contrib.auth.models import User
    from django.db import connection

    from benchapp.models import Cell, Membership, Run, Team
    from benchapp.store import measurestore

    if regenerate:
        Run.objects.all().delete()
    if measurestore.count(
        Run.objects.values_list("pk", flat=True)
    ) >= runs_wanted * CELLS_PER_RUN * len(METRICS):
        return
    Run.objects.all().delete()
    team, _ = Team.objects.get_or_create(name="bench")
    user = User.objects.filter(username="bench").first() or User.objects.create_user(
        "bench", password=secrets.token_urlsafe(16)
    )  # the script logs in with force_login
    Membership.objects.get_or_create(team=team, user=user)
    started = time.perf_counter()
    runs = Run.objects.bulk_create(
        Run(
            team=team,
            name=f"bench-{i}",
            tool="sysbench",
            status=Run.SUCCEEDED,
            document={
                "name": f"bench-{i}",
                "tool": "sysbench",
                "params": {"test": "oltp_read_write", "time": 60},
                "axes": {"target": [f"db{t}" for t in range(TARGETS)], "threads": list(THREADS)},
                "repeat": REPEATS,
            },
        )
        for i in range(runs_wanted)
    )
    if connection.vendor == "postgresql":
        cells = _copy(runs)
    else:  # the embedded default (SQLite) has no COPY; 20,000 rows take a few seconds
        Cell.objects.bulk_create((Cell(**row) for run in runs for row in _cells(run)), 2000)
        cells = list(Cell.objects.filter(run__in=runs).order_by("pk").values_list("pk", "run_id"))
        by_pk = {c.pk: c for c in Cell.objects.filter(run__in=runs)}
        measurestore.add([(by_pk[cell_id], 1, values) for cell_id, values in _measurements(cells)])
    print(
        f"generated {len(runs)} runs, {len(cells)} cells, "
        f"{len(cells) * len(METRICS):,} measurements in {time.perf_counter() - started:.1f} s"
    )


def _cells(run) -> Iterator[dict]:
    """The run's cells as field values: every target × threads × repeat, succeeded."""
    index = 0
    for t in range(TARGETS):
        for threads in THREADS:
            for rep in range(1, REPEATS + 1):
                index += 1
                yield {
                    "run_id": run.pk,
                    "index": index,
                    "key": f"target=db{t},threads={threads}",
                    "repeat": rep,
                    "axes": {"target": f"db{t}", "threads": threads},
                    "target_name": f"db{t}",
                    "status": "succeeded",
                    "phase": "",
                    "attempt": 1,
                    "worker": "",
                    "command": "sysbench oltp_read_write --mysql-password=****",
                    "tool_version": "1.0.20",
                    "facts": {
                        "client": {"cpus": 8, "kernel": "6.1.0"},
                        "client_cpu_busy_pct": 40 + rep,
                    },
                    "client_bound": False,
                    "error": "",
                    "output_tail": "",
                    "error_kind": "",
                    "spec": {},
                    "repeat_stop": {},
                    "machines": [],
                }


def _measurements(cells: list[tuple[int, int]]) -> Iterator[tuple[int, list]]:
    """(cell id, its measurestore Values): one value per metric of each
    (cell id, run id), in cell order."""
    from benchapp.store.measurestore import Value

    for n, (cell_id, run_id) in enumerate(cells):
        yield (
            cell_id,
            [
                Value(run_id, cell_id, 1, 0, "", metric, 1000.0 + (n % 500) * 3.0 + m + (n % 7))
                for m, metric in enumerate(METRICS)
            ],
        )


def _copy(runs) -> list[tuple[int, int]]:
    """COPY the cells into PostgreSQL, then store their measurements (1,000,000 values in seconds)."""
    from django.db import connection

    from benchapp.models import Cell
    from benchapp.store import measurestore

    def columns(row: dict) -> str:
        return ", ".join(f'"{name}"' for name in row)

    def values(row: dict) -> tuple:
        return tuple(json.dumps(v) if isinstance(v, (dict, list)) else v for v in row.values())

    first = next(_cells(runs[0]))
    with connection.cursor() as cursor:
        with cursor.cursor.copy(f"COPY benchapp_cell ({columns(first)}) FROM STDIN") as copy:
            for run in runs:
                for row in _cells(run):
                    copy.write_row(values(row))
        cursor.execute(
            "SELECT id, run_id FROM benchapp_cell WHERE run_id >= %s ORDER BY id", [runs[0].pk]
        )
        cells = cursor.fetchall()
    # The packed rows through the store (INSERTs of 1,000 rows each): 20,000
    # rows, not the million values they hold.
    by_pk = {c.pk: c for c in Cell.objects.filter(run__in=runs)}
    measurestore.add([(by_pk[cell_id], 1, rows) for cell_id, rows in _measurements(cells)])
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE benchapp_cellmeasurements")
        cursor.execute("ANALYZE benchapp_cell")
    return cells


def timed(client, url: str, requests: int) -> tuple[list[float], int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(url)  # warm up (templates, caches)
    times = []
    for _ in range(requests):
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    return times, len(queries.captured_queries), len(response.content)


def report(name: str, times: list[float], queries: int, size: int) -> dict:
    times = sorted(times)
    p95 = times[max(0, round(0.95 * len(times)) - 1)]
    row = {
        "page": name,
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(p95, 1),
        "queries": queries,
        "bytes": size,
        "requests": len(times),
    }
    print(
        f"{name:<34} p50 {row['p50_ms']:7.1f} ms   p95 {row['p95_ms']:7.1f} ms   "
        f"{queries:2d} queries   {size:>9,} bytes"
    )
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument(
        "--runs",
        type=int,
        default=RUNS,
        help="runs of 10,000 measurements in the database (100 = 1,000,000)",
    )
    parser.add_argument("--json", action="store_true", help="also print the rows as one JSON line")
    args = parser.parse_args()

    url = database_url(args.runs)
    create_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
    os.environ.setdefault("BENCHBOARD_VAR_DIR", str(ROOT / "var" / "bench"))
    from django.conf import settings
    from django.core.management import call_command
    from django.test import Client

    # The app as gunicorn loads it (benchapp.wsgi: django.setup(), every view
    # imported, the loaded objects frozen out of the cycle collector's walks).
    import benchapp.wsgi  # noqa: F401

    settings.ALLOWED_HOSTS = ["*"]
    call_command("migrate", verbosity=0)
    generate(args.regenerate, args.runs)

    from django.contrib.auth.models import User

    from benchapp.histories import comparisons
    from benchapp.models import Run, Team
    from benchapp.store import measurestore

    team = Team.objects.get(name="bench")
    runs = list(Run.objects.filter(team=team).order_by("pk")[:2])
    comparison = team.comparisons.filter(name="bench pair").first() or comparisons.save_comparison(
        team, "bench pair", runs
    )
    client = Client()
    client.force_login(User.objects.get(username="bench"))
    total = measurestore.count(Run.objects.values_list("pk", flat=True))
    pair = measurestore.count([r.pk for r in runs])
    print(f"database: {total:,} measurements; comparison of 2 runs x {pair // 2:,}")
    rows = []
    for name, page in [
        ("comparison page", f"/comparisons/{comparison.pk}/"),
        ("comparison results.json", f"/comparisons/{comparison.pk}/results.json"),
        ("run results page", f"/runs/{runs[0].pk}/results/"),
        ("run results.json", f"/runs/{runs[0].pk}/results.json"),
        ("run page", f"/runs/{runs[0].pk}/"),
    ]:
        rows.append(report(name, *timed(client, page, args.requests)))
    if args.json:
        print(json.dumps({"measurements": total, "pages": rows}))
    ok = rows[0]["p95_ms"] <= 200 and rows[0]["queries"] <= 10
    print("comparison page target (p95 <= 200 ms, <= 10 queries):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
