"""The generated year of scripts/bench_scale.py: fifty teams, each with five
plans shaped like the five studies (examples/), run nightly and ad hoc for
365 × scale days, built in a database of its own.

Runs and cells are cloned from one template row each by INSERT ... SELECT
over generate_series; the packed rows (CellMeasurements, CellSeries, RunMetric,
RunPoints) are made with numpy and written with COPY (binary). Nothing goes
through the ORM but the teams and plans.
"""

from __future__ import annotations

import json
import time

import numpy as np
from bench_scale_studies import STUDIES, Study

TEAMS = 50
DAYS = 365
SERIES_SECONDS = 75  # per-second series of each cell: the tool's interval lines
YEAR_START = "2026-01-01 00:00:00+00"
COPY_BATCH = 20000  # cells per numpy batch
# The tables the year fills: vacuumed once it is made, sized by the figures.
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
