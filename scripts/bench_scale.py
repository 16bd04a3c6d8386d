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

Runs and cells are cloned from one template row each by INSERT ... SELECT
over generate_series; the packed rows are made with numpy and written with
COPY (binary). Nothing goes through the ORM but the 50 teams and 250 plans.
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
from dataclasses import dataclass
from itertools import product
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEAMS = 50
DAYS = 365
SERIES_SECONDS = 75  # per-second series of each cell: the tool's interval lines
YEAR_START = "2026-01-01 00:00:00+00"
COPY_BATCH = 20000  # cells per numpy batch


@dataclass(frozen=True)
class Study:
    """The shape of one of the five studies' plans: its matrix and what each cell measures."""

    name: str
    tool: str
    axes: dict
    repeats: int
    metrics: tuple  # ((group, metric, unit), ...) measured by every cell
    series: tuple  # per-second series of every cell

    def cells(self) -> list[tuple[str, dict, int]]:
        """(key, axes, repeat) of every cell, in plan order."""
        names = list(self.axes)
        out = []
        for values in product(*self.axes.values()):
            axes = dict(zip(names, values))
            key = ",".join(f"{k}={axes[k]}" for k in sorted(axes))
            out += [(key, axes, r) for r in range(1, self.repeats + 1)]
        return out


def _keys(groups, metrics) -> tuple:
    return tuple((g, m, u) for g in groups for m, u in metrics)


SYSBENCH = (
    ("tps", "tx/s"),
    ("qps", "q/s"),
    ("reads_qps", "q/s"),
    ("writes_qps", "q/s"),
    ("other_qps", "q/s"),
    ("latency_avg_ms", "ms"),
    ("latency_min_ms", "ms"),
    ("latency_max_ms", "ms"),
    ("latency_p95_ms", "ms"),
    ("errors_per_s", "1/s"),
    ("reconnects_per_s", "1/s"),
    ("events", ""),
    ("total_time_s", "s"),
    ("client_cpu_busy_pct", "%"),
    ("server_cpu_busy_pct", "%"),
    ("server_disk_busy_pct", "%"),
    ("latency_p50_ms", "ms"),
    ("latency_p99_ms", "ms"),
    ("latency_stddev_ms", "ms"),
    ("threads_running", ""),
    ("server_buffer_hit_pct", "%"),
    ("server_lock_waits_per_s", "1/s"),
)
FIO = (
    ("iops", "IOPS"),
    ("bw_mb_s", "MB/s"),
    ("lat_mean_us", "us"),
    ("lat_p50_us", "us"),
    ("lat_p99_us", "us"),
    ("lat_p999_us", "us"),
    ("lat_max_us", "us"),
    ("cpu_usr_pct", "%"),
    ("cpu_sys_pct", "%"),
    ("disk_util_pct", "%"),
    ("lat_min_us", "us"),
)
PGBENCH = (
    ("tps", "tx/s"),
    ("latency_avg_ms", "ms"),
    ("latency_stddev_ms", "ms"),
    ("initial_connection_ms", "ms"),
    ("transactions", ""),
    ("failed_transactions", ""),
    ("client_cpu_busy_pct", "%"),
    ("server_cpu_busy_pct", "%"),
    ("server_disk_busy_pct", "%"),
    ("server_buffer_hit_pct", "%"),
    ("latency_p50_ms", "ms"),
    ("latency_p95_ms", "ms"),
    ("latency_p99_ms", "ms"),
    ("latency_max_ms", "ms"),
    ("server_lock_waits_per_s", "1/s"),
    ("server_checkpoints", ""),
)
MYSQLSLAP = (
    ("avg_s", "s"),
    ("min_s", "s"),
    ("max_s", "s"),
    ("clients", ""),
    ("queries_per_client", ""),
    ("qps", "q/s"),
    ("server_cpu_busy_pct", "%"),
)
STUDIES = (
    Study(
        "s1-rds-classes",
        "sysbench",
        {"target": ["r5-large", "r5-xlarge", "m5-large", "t3-medium"], "threads": [1, 8, 32, 64]},
        3,
        _keys([""], SYSBENCH),
        ("tps", "qps", "latency_p95_ms"),
    ),
    Study(
        "s2-ebs-raid0",
        "fio",
        {
            "volumes": [1, 2, 4],
            "rw": ["read", "write", "randread", "randwrite"],
            "bs": ["4k", "64k"],
        },
        2,
        _keys(["", "job=0"], FIO),
        ("iops", "bw_mb_s", "lat_mean_us"),
    ),
    Study(
        "s3-pg-versions",
        "pgbench",
        {"target": ["pg15", "pg16"], "clients": [1, 4, 16, 64], "scale": [10, 100]},
        3,
        _keys([""], PGBENCH),
        ("tps", "latency_avg_ms", "server_cpu_busy_pct"),
    ),
    Study(
        "s4-engines",
        "mysqlslap",
        {"concurrency": [1, 10, 50, 100], "queries": [1000, 10000]},
        3,
        _keys(["", "engine=innodb", "engine=myisam"], MYSQLSLAP),
        ("qps", "client_cpu_busy_pct", "server_cpu_busy_pct"),
    ),
    Study(
        "s5-imported-history",
        "sysbench",
        {"threads": [1, 2, 4, 8, 16, 32, 64, 128]},
        5,
        _keys([""], SYSBENCH) + _keys(["phase=warm"], SYSBENCH[:8]),
        ("tps", "qps", "latency_p95_ms"),
    ),
)


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


# ------------------------------------------------------------------ the year


def generate(days: int, log) -> dict:
    """Build the year in the (migrated, empty) database; return what was made and how long."""
    from django.contrib.auth.models import User
    from django.db import connection

    from benchapp.models import Membership, Plan, Team

    started = time.perf_counter()
    user = User.objects.create_user("scale")  # the page timings log in with force_login
    plans = []
    for t in range(TEAMS):
        team = Team.objects.create(name=f"team-{t:02d}")
        Membership.objects.create(team=team, user=user, role="owner")
        for study in STUDIES:
            doc = {"name": study.name, "tool": study.tool, "axes": study.axes}
            doc["repeat"] = study.repeats
            plan = Plan.objects.create(
                team=team, name=study.name, tool=study.tool, document=doc, study=study.name
            )
            plans.append((plan, study))
    with connection.cursor() as cursor:
        _shapes(cursor, plans)
        _runs(cursor, days)
        log(f"  runs: {time.perf_counter() - started:.0f} s")
        _cells(cursor)
        log(f"  cells: {time.perf_counter() - started:.0f} s")
    figures = _packed(connection, log)
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE scale_plan, scale_cell")
        for table in SIZED_TABLES:
            cursor.execute(f"VACUUM ANALYZE {table}")
    figures["seconds"] = round(time.perf_counter() - started)
    return figures


def _shapes(cursor, plans) -> None:
    """Scratch tables of each plan's study and each study's cells, for the INSERT ... SELECTs."""
    cursor.execute("CREATE TABLE scale_plan (plan_id bigint, team_id bigint, study int)")
    cursor.execute(
        "CREATE TABLE scale_cell (study int, idx int, key text, repeat int, axes jsonb, target text)"
    )
    index = {s.name: i for i, s in enumerate(STUDIES)}
    for plan, study in plans:
        cursor.execute(
            "INSERT INTO scale_plan VALUES (%s, %s, %s)", [plan.pk, plan.team_id, index[study.name]]
        )
    for s, study in enumerate(STUDIES):
        for idx, (key, axes, repeat) in enumerate(study.cells(), 1):
            cursor.execute(
                "INSERT INTO scale_cell VALUES (%s, %s, %s, %s, %s, %s)",
                [s, idx, key, repeat, json.dumps(axes), str(axes.get("target", "t1"))],
            )


def insert_select(cursor, table: str, exprs: dict, rest: str, params: dict) -> None:
    """INSERT INTO table SELECT exprs ... rest: every concrete column of the
    table's model, those not in exprs at their model default (so a column
    another change adds does not break the generator)."""
    from django.apps import apps

    model = next(m for m in apps.get_models() if m._meta.db_table == table)
    columns, values, params = [], [], dict(params)
    for field in model._meta.concrete_fields:
        if field.primary_key:
            continue
        columns.append(f'"{field.column}"')
        if field.column in exprs:
            values.append(exprs[field.column])
        else:
            params[f"default_{field.column}"] = field.get_db_prep_save(
                field.get_default(), connection=cursor.db
            )
            values.append(f"%(default_{field.column})s")
    sql = f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(values)} {rest}"
    cursor.execute(sql, params)


def _runs(cursor, days: int) -> None:
    """Each plan nightly at 02:00, and one ad-hoc run a day per team (of a study
    chosen by the day) at 14:00; one run in 37 completed with failures."""
    for origin, hour, tags, where in (
        ("schedule", 2, '["nightly"]', "true"),
        ("manual", 14, '["adhoc"]', "s.study = (extract(doy FROM day)::int + s.team_id) %% 5"),
    ):
        start = f"day + interval '{hour} hours'"
        exprs = {
            "team_id": "p.team_id",
            "plan_id": "p.id",
            "name": "p.name || ' ' || to_char(day, 'YYYY-MM-DD')",
            "tool": "p.tool",
            "document": "p.document",
            "status": "CASE WHEN (extract(doy FROM day)::int + p.id) %% 37 = 0 "
            "THEN 'partial' ELSE 'succeeded' END",
            "origin": "%(origin)s",
            "created_at": start,
            "started_at": start,
            "finished_at": f"{start} + interval '1 hour'",
            "tags": "%(tags)s::jsonb",
            "notes": "CASE WHEN extract(doy FROM day)::int %% 30 = 0 "
            "THEN 'kernel upgrade before this run' ELSE '' END",
        }
        rest = f"""FROM benchapp_plan p JOIN scale_plan s ON s.plan_id = p.id
            CROSS JOIN generate_series(%(start)s::timestamptz,
                %(start)s::timestamptz + (%(days)s - 1) * interval '1 day',
                interval '1 day') AS day
            WHERE {where} ORDER BY day, p.id"""
        params = {"origin": origin, "tags": tags, "start": YEAR_START, "days": days}
        insert_select(cursor, "benchapp_run", exprs, rest, params)


def _cells(cursor) -> None:
    """Every run's cells from its study's shape, succeeded, one attempt."""
    start = "r.started_at + (c.idx - 1) * interval '70 seconds'"
    exprs = {
        "run_id": "r.id",
        "index": "c.idx",
        "key": "c.key",
        "repeat": "c.repeat",
        "axes": "c.axes",
        "target_name": "c.target",
        "status": "'succeeded'",
        "attempt": "1",
        "command": "r.tool || ' --threads=8 run'",
        "tool_version": "'1.0.20'",
        "facts": """'{"client": {"cpus": 8, "kernel": "6.1.0"}}'::jsonb""",
        "started_at": start,
        "finished_at": f"{start} + interval '60 seconds'",
    }
    rest = """FROM benchapp_run r JOIN scale_plan s ON s.plan_id = r.plan_id
        JOIN scale_cell c ON c.study = s.study ORDER BY r.id, c.idx"""
    insert_select(cursor, "benchapp_cell", exprs, rest, {})


# ------------------------------------------------------- packed rows by COPY


def _study_keys(cursor) -> list[tuple[bytes, list[str], list[str], list[int]]]:
    """Per study: its MeasureKey ids packed as the store packs them, and the
    (group, metric) of each packed position."""
    from benchapp.store import measurestore

    out = []
    for study in STUDIES:
        ids = measurestore.key_ids(study.metrics)
        packed = np.array([ids[k] for k in study.metrics], "<i4").tobytes()
        out.append((packed, [g for g, _m, _u in study.metrics], [m for _g, m, _u in study.metrics]))
    return out


def _levels(study: Study, n: int, rng) -> np.ndarray:
    """n cells' values of a study: each metric near a level of its own (noise 3 %)."""
    base = np.linspace(5.0, 5000.0, len(study.metrics))
    return base * (1 + 0.03 * rng.standard_normal((n, len(study.metrics))))


def _packed(connection, log) -> dict:
    """COPY the cells' CellMeasurements and CellSeries rows, and the runs'
    RunMetric and RunPoints rows computed from the same values."""
    import psycopg

    rng = np.random.default_rng(2026)
    settings = connection.settings_dict
    url = (
        f"postgresql://{settings['USER']}@{settings['HOST']}:{settings['PORT']}/{settings['NAME']}"
    )
    with connection.cursor() as cursor:
        keys = _study_keys(cursor)
    made = {"measurements": 0, "series_values": 0, "cells": 0}
    started = time.perf_counter()
    with (
        psycopg.connect(url) as read,
        psycopg.connect(url) as write_m,
        psycopg.connect(url) as write_s,
        psycopg.connect(url) as write_t,
    ):
        cells = read.cursor(name="cells")
        cells.itersize = COPY_BATCH
        cells.execute(
            """SELECT c.id, c.run_id, s.study, c.key, r.plan_id, r.created_at
               FROM benchapp_cell c JOIN benchapp_run r ON r.id = c.run_id
               JOIN scale_plan s ON s.plan_id = r.plan_id ORDER BY c.run_id, c.id"""
        )
        m_sql = (
            "COPY benchapp_cellmeasurements (run_id, cell_id, attempt, count, keys, iterations, "
            '"values") FROM STDIN (FORMAT BINARY)'
        )
        s_sql = (
            "COPY benchapp_cellseries "
            '(cell_id, attempt, source, metric, count, t, "values", bin_seconds) '
            "FROM STDIN (FORMAT BINARY)"
        )
        with write_m.cursor().copy(m_sql) as m_copy, write_s.cursor().copy(s_sql) as s_copy:
            m_copy.set_types(["int8", "int8", "int4", "int4", "bytea", "bytea", "bytea"])
            s_copy.set_types(
                ["int8", "int4", "varchar", "varchar", "int4", "bytea", "bytea", "int4"]
            )
            totals = _Totals(write_t)
            while batch := cells.fetchmany(COPY_BATCH):
                _write_batch(batch, keys, rng, m_copy, s_copy, totals, made)
                log(
                    f"  {made['cells']:,} cells, {made['measurements']:,} measurements "
                    f"({time.perf_counter() - started:.0f} s)"
                )
            totals.flush()
        write_t.commit()
    return made


def _write_batch(batch, keys, rng, m_copy, s_copy, totals, made) -> None:
    """COPY one batch of cells' rows, in the stream's (run) order; the random
    values are drawn per study with numpy, a batch at a time."""
    values, series, used = {}, {}, {}
    for study_no in {row[2] for row in batch}:
        n = sum(1 for row in batch if row[2] == study_no)
        study = STUDIES[study_no]
        values[study_no] = _levels(study, n, rng).astype("<f8")
        shape = (n, len(study.series), SERIES_SECONDS)
        series[study_no] = rng.normal(1000.0, 30.0, shape).astype("<f8")
        used[study_no] = 0
    times = np.arange(1, SERIES_SECONDS + 1, dtype="<f8").tobytes()
    for cell_id, run_id, study_no, key, plan_id, created in batch:
        study, (packed, groups, metrics) = STUDIES[study_no], keys[study_no]
        i = used[study_no]
        used[study_no] += 1
        row = values[study_no][i]
        m_copy.write_row((run_id, cell_id, 1, len(metrics), packed, b"", row.tobytes()))
        for j, metric in enumerate(study.series):
            blob = series[study_no][i, j].tobytes()
            s_copy.write_row((cell_id, 1, "tool", metric, SERIES_SECONDS, times, blob, 0))
        totals.add(run_id, plan_id, created, key, groups, metrics, study, row)
        made["measurements"] += len(metrics)
        made["series_values"] += len(study.series) * SERIES_SECONDS
        made["cells"] += 1


class _Totals:
    """A run's RunMetric totals and its packed RunPoints rows (per metric, the
    mean, min and max of each cell key's repeats, as benchapp.store.summarystore
    packs them), as the app keeps them at record time, written by binary
    COPY when the stream of cells moves to the next run."""

    def __init__(self, conn):
        self.conn = conn
        self.names: dict = {}  # {plan id: (cell keys, SeriesKey ids per key and metric)}
        self.run = None
        self.keys: list = []
        self.values: list = []
        self.points: list = []
        self.totals: list = []

    def add(self, run_id, plan_id, created, key, groups, metrics, study, values) -> None:
        if run_id != self.run:
            self._close_run()
            self.run, self.plan, self.created = run_id, plan_id, created
            self.study = study
        self.keys.append(key)
        self.values.append(values)

    def _close_run(self) -> None:
        if self.run is None:
            return
        from benchapp.store import summarystore

        study, matrix = self.study, np.array(self.values)
        sums: dict = {}
        for (_g, m, u), total in zip(study.metrics, matrix.sum(axis=0).tolist()):
            entry = sums.setdefault(m, [u, 0, 0.0])
            entry[1] += len(matrix)
            entry[2] += total
        self.totals += [(self.run, m, u, n, t) for m, (u, n, t) in sums.items()]
        order = np.argsort(np.array(self.keys), kind="stable")
        keys = [self.keys[i] for i in order]
        matrix = matrix[order]
        starts = [i for i in range(len(keys)) if i == 0 or keys[i] != keys[i - 1]]
        counts = np.diff(starts + [len(keys)])
        means = np.add.reduceat(matrix, starts) / counts[:, None]
        lows, highs = np.minimum.reduceat(matrix, starts), np.maximum.reduceat(matrix, starts)
        ids = self._ids(tuple(keys[i] for i in starts))
        for metric in dict.fromkeys(m for _g, m, _u in study.metrics):
            cols = [j for j, (_g, m, _u) in enumerate(study.metrics) if m == metric]
            key_ids = ids[:, cols].ravel()
            by_id = np.argsort(key_ids)
            self.points.append(
                (
                    self.run,
                    self.plan,
                    self.created,
                    metric,
                    len(key_ids),
                    key_ids[by_id].astype(summarystore.KEY).tobytes(),
                    *(
                        a[:, cols].ravel()[by_id].astype(summarystore.FLOAT).tobytes()
                        for a in (means, lows, highs)
                    ),
                    np.repeat(counts, len(cols))[by_id].astype(summarystore.COUNT).tobytes(),
                )
            )
        self.keys, self.values = [], []
        if len(self.points) > 50000:
            self._write()

    def _ids(self, keys: tuple) -> np.ndarray:
        """SeriesKey ids of the run's plan, one row per cell key, one column
        per (group, metric) of its study; created on a plan's first run."""
        from benchapp.store import summarystore

        known = self.names.get(self.plan)
        if known is None or known[0] != keys:
            names = [(m, k, g) for k in keys for g, m, _u in self.study.metrics]
            ids = summarystore.key_ids(self.plan, names)
            matrix = np.array([ids[n] for n in names]).reshape(len(keys), -1)
            known = self.names[self.plan] = (keys, matrix)
        return known[1]

    def flush(self) -> None:
        self._close_run()
        self._write()

    def _write(self) -> None:
        with self.conn.cursor().copy(
            "COPY benchapp_runmetric (run_id, metric, unit, count, total) FROM STDIN"
        ) as copy:
            for row in self.totals:
                copy.write_row(row)
        with self.conn.cursor().copy(
            "COPY benchapp_runpoints (run_id, plan_id, run_created_at, metric, count, keys, "
            "means, lows, highs, counts) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "int8", "timestamptz", "varchar", "int4"] + ["bytea"] * 5)
            for row in self.points:
                copy.write_row(row)
        self.totals, self.points = [], []


# --------------------------------------------------------------- the figures

SIZED_TABLES = (
    "benchapp_run",
    "benchapp_cell",
    "benchapp_cellmeasurements",
    "benchapp_measurekey",
    "benchapp_runmetric",
    "benchapp_runpoints",
    "benchapp_serieskey",
    "benchapp_cellseries",
)


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
