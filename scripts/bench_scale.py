#!/usr/bin/env python
"""A generated year of fifty teams, and the pages timed on it (PostgreSQL).

    .venv/bin/python scripts/bench_scale.py [--scale 1.0] [--requests 20] [--regenerate] [--json]

Builds, once, a database next to the one in DATABASE_URL
(`benchboard_scale`, `benchboard_scale_0p1` at --scale 0.1): 50 teams, each
with five plans shaped like the five studies (examples/), each plan run
nightly and one ad-hoc run a day, for 365 × scale days. At --scale 1 that is
109,500 runs, 4.5 million cells, 100 million measurements (22 a cell; one
packed CellMeasurements row per cell attempt, benchapp.store.measurestore) and 1.0
billion per-second series values (CellSeries, three 75 s series per cell),
with the per-run summaries the app keeps (RunMetric, packed RunPoints).

The year is made by bench_scale_year.py (the studies' shapes in
bench_scale_studies.py): runs and cells are cloned from one template row
each by INSERT ... SELECT over generate_series; the packed rows are made
with numpy and written with COPY (binary). Nothing goes through the ORM but the 50 teams and 250 plans.
A database already holding the year is reused (--regenerate rebuilds it).

Then it times each page with Django's test Client in this process: the
first request (cold: the page's first use in this process, on a fresh
connection) and `--requests` warm ones, prints p95 and queries next to the
goal, the size per table, and the JSON of the figures as its last line.

PostgreSQL's buffers and the OS's page cache stay warm between pages unless
`--cold-database COMMAND` (or BENCH_COLD_DATABASE) names the command that
restarts the database server, e.g. `--cold-database "pg_ctlcluster 15 main
restart"` on Debian: then before each page's first request the server is
restarted and, where this process may (root), the OS's page cache dropped,
so the cold figure reads the page's data from disk. For a machine of its
own: every other client of that server loses its connection.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_scale_studies import STUDIES  # noqa: E402 (scripts/ is this script's own path)
from bench_scale_year import DAYS, SIZED_TABLES, TEAMS, generate  # noqa: E402


def database_url(scale: float) -> str:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/benchboard")
    suffix = "" if scale == 1 else "_" + f"{scale:g}".replace(".", "p")
    return base.rsplit("/", 1)[0] + "/benchboard_scale" + suffix


def create_database(url: str) -> None:
    import psycopg

    server, name = url.rsplit("/", 1)
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')


def drop_database(url: str) -> None:
    import psycopg

    server, name = url.rsplit("/", 1)
    with psycopg.connect(server + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')


# --------------------------------------------------------------- the figures


def sizes(measurements: int, series_values: int, runs: int) -> dict:
    """Bytes on disk (table, TOAST and indexes) per table, per value and per run."""
    from django.db import connection

    out = {}
    with connection.cursor() as cursor:
        for table in SIZED_TABLES:
            cursor.execute("SELECT pg_total_relation_size(%s)", [table])
            total = cursor.fetchone()[0]
            out[table] = {"bytes": total, "per_run": round(total / max(runs, 1))}
    per_measurement = sum(
        out[t]["bytes"] for t in ("benchapp_cellmeasurements", "benchapp_measurekey")
    )
    out["bytes_per_measurement"] = round(per_measurement / max(measurements, 1), 1)
    out["bytes_per_series_value"] = round(
        out["benchapp_cellseries"]["bytes"] / max(series_values, 1), 1
    )
    return out


def pages(team, requests: int) -> list[tuple[str, str, int]]:
    """(name, url, goal ms) of the pages the issue budgets, on the year's data."""
    from benchapp.histories import comparisons
    from benchapp.models import Plan, Run

    plan = Plan.objects.filter(team=team, study=STUDIES[0].name).get()
    runs = list(Run.objects.filter(plan=plan).order_by("-created_at")[:5])
    saved = {c.name: c for c in team.comparisons.filter(name__startswith="scale: ")}
    pair = saved.get("scale: 2 runs") or comparisons.save_comparison(
        team, "scale: 2 runs", runs[:2]
    )
    five = saved.get("scale: 5 runs") or comparisons.save_comparison(team, "scale: 5 runs", runs)
    cell = runs[0].cells.order_by("index").first()
    return [
        ("home dashboard", "/", 300),
        ("runs list", "/runs/", 300),
        ("archive: by tool", "/archive/?tool=pgbench", 300),
        ("archive: by target", "/archive/?target=pg15", 300),
        ("archive: by tag", "/archive/?tag=adhoc", 300),
        ("archive: by status", "/archive/?status=partial", 300),
        ("archive: by text", "/archive/?text=kernel", 300),
        ("run results page", f"/runs/{runs[0].pk}/results/", 200),
        ("comparison of 2 runs", f"/comparisons/{pair.pk}/", 200),
        ("comparison of 5 runs", f"/comparisons/{five.pk}/", 200),
        ("plan trend page", f"/plans/{plan.pk}/trend/", 200),
        ("plan trend data", f"/plans/{plan.pk}/trend.json", 200),
        ("cell series", f"/runs/{runs[0].pk}/series.json?cells={cell.pk}&metric=tps", 200),
    ]


# What every page reads (session, user, the user's teams and role): not a page's own query.
SESSION_QUERIES = tuple(
    f'SELECT "{table}".'
    for table in ("django_session", "auth_user", "benchapp_team", "benchapp_membership")
) + ("BEGIN", "COMMIT", 'UPDATE "django_session"')


def restart_database(command: str, url: str) -> str:
    """Restart the database server with `command`, drop the OS's page cache
    where permitted (root), and wait until the server at `url` accepts
    connections again: the next query reads from disk. Returns what was done,
    for the figures. Close this process's connections first."""
    import psycopg

    subprocess.run(shlex.split(command), check=True, capture_output=True)
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        dropped = True
    except OSError:  # not root, or a container that does not allow it
        dropped = False
    deadline = time.monotonic() + 60
    while True:
        try:
            psycopg.connect(url, connect_timeout=2).close()
            return "database server restarted" + (
                ", OS page cache dropped" if dropped else " (OS page cache kept: not permitted)"
            )
        except psycopg.OperationalError:  # still starting
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def timed(client, url: str, requests: int) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    times = []
    for _ in range(requests + 1):
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, (url, response.status_code)
    warm = sorted(times[1:])
    own = [q for q in queries.captured_queries if not q["sql"].startswith(SESSION_QUERIES)]
    slowest = sorted(own, key=lambda q: -float(q["time"]))[:2]
    return {
        "main_queries": [q["sql"] for q in slowest],
        "cold_ms": round(times[0], 1),
        "p50_ms": round(statistics.median(warm), 1),
        "p95_ms": round(warm[max(0, round(0.95 * len(warm)) - 1)], 1),
        "queries": len(queries.captured_queries),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="share of the year's days")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument("--json", action="store_true", help="also print the figures as JSON")
    parser.add_argument(
        "--cold-database",
        default=os.environ.get("BENCH_COLD_DATABASE", ""),
        metavar="COMMAND",
        help="restart the database server with COMMAND (and drop the OS's page cache "
        "where permitted) before each page's first request",
    )
    parser.add_argument(
        "--explain",
        action="store_true",
        help="print EXPLAIN (ANALYZE, BUFFERS) of each page's two slowest own queries",
    )
    args = parser.parse_args()

    def log(text):
        print(text, file=sys.stderr, flush=True)

    url = database_url(args.scale)
    if args.regenerate:
        drop_database(url)
    create_database(url)
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
    os.environ.setdefault("BENCHBOARD_VAR_DIR", str(ROOT / "var" / "bench"))
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connections
    from django.test import Client

    import benchapp.wsgi  # noqa: F401  (the app as gunicorn loads it)

    settings.ALLOWED_HOSTS = ["*"]
    call_command("migrate", verbosity=0)
    from django.contrib.auth.models import User

    from benchapp.accounts.access import SESSION_KEY
    from benchapp.models import Cell, Run, Team

    figures = {"scale": args.scale, "database": url.rsplit("/", 1)[1]}
    if not Team.objects.filter(name="team-00").exists():
        days = max(1, round(DAYS * args.scale))
        log(f"generating {TEAMS} teams x {days} days into {figures['database']}:")
        figures["generated"] = generate(days, log)
    runs = Run.objects.count()
    measurements = measurestore_count()
    series_values = series_count()
    figures.update(
        runs=runs,
        cells=Cell.objects.count(),
        measurements=measurements,
        series_values=series_values,
    )
    figures["storage"] = sizes(measurements, series_values, runs)
    log(
        f"year at scale {args.scale:g}: {runs:,} runs, {figures['cells']:,} cells, "
        f"{measurements:,} measurements, {series_values:,} series values"
    )
    client = Client()
    user = User.objects.get(username="scale")
    client.force_login(user)
    team = Team.objects.get(name="team-00")
    session = client.session
    session[SESSION_KEY] = team.pk
    session.save()
    rows = []
    cold = "first request in this process"
    for name, page, goal in pages(team, args.requests):
        if args.cold_database:
            connections.close_all()  # it dies with the server; the request opens a new one
            cold = restart_database(args.cold_database, url)
        row = {"page": name, "goal_ms": goal, **timed(client, page, args.requests)}
        row["met"] = row["p95_ms"] <= goal and row["cold_ms"] <= goal and row["queries"] <= 10
        rows.append(row)
        print(
            f"{name:<24} cold {row['cold_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms  "
            f"goal {goal} ms  {row['queries']:2d} queries  {'met' if row['met'] else 'NOT met'}"
        )
    figures["pages"] = rows
    figures["cold"] = cold
    print(f"cold: {cold}")
    if args.explain:
        for row in rows:
            for sql in row["main_queries"]:
                print(f"\n### {row['page']}\n")
                print(explain(sql))
    for row in rows:
        del row["main_queries"]
    for table in SIZED_TABLES:
        size = figures["storage"][table]
        print(f"{table:<28} {size['bytes'] / 1e6:10.1f} MB  {size['per_run']:8,} B/run")
    print(
        f"bytes per measurement {figures['storage']['bytes_per_measurement']} (goal <= 60); "
        f"per series value {figures['storage']['bytes_per_series_value']}"
    )
    if args.json:
        print(json.dumps(figures))
    return 0 if all(r["met"] for r in rows) else 1


def explain(sql: str) -> str:
    """The query's plan as run (EXPLAIN (ANALYZE, BUFFERS)), with its text."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        plan = "\n".join(line for (line,) in cursor.fetchall())
    return f"{sql}\n\n{plan}"


def measurestore_count() -> int:
    from django.db.models import Sum

    from benchapp.models import CellMeasurements

    return CellMeasurements.objects.aggregate(n=Sum("count"))["n"] or 0


def series_count() -> int:
    from django.db.models import Sum

    from benchapp.models import CellSeries

    return CellSeries.objects.aggregate(n=Sum("count"))["n"] or 0


if __name__ == "__main__":
    sys.exit(main())
