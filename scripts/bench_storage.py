#!/usr/bin/env python
"""Bytes on disk per stored value: series and measurements, one row per value vs packed.

    .venv/bin/python scripts/bench_storage.py [--cells 10] [--seconds 600] [--metrics 80]
        [--measured-cells 20000] [--measured-metrics 19]

In a scratch PostgreSQL database (`benchboard_bench_storage`, next to the one
in DATABASE_URL) it writes the same values twice with COPY: as one row per
value in the layout the series store had before (cell, attempt, t, metric,
value, and its (cell, metric, t) index), and as the app's CellSeries rows
(one per cell, attempt, source and metric, times and values packed as
float64). Defaults: a 600 s study of 10 cells with 80 series each (the
tool's and the hosts' and databases' telemetry): 480,000 values. Prints the
total relation size (table, TOAST and indexes) per value and per run, and the
JSON of the figures as its last line.

Measurements likewise: 20,000 cells of 19 values each (the five studies'
average) as one row per value in the layout Measurement had (text group,
metric and unit; its unique and two lookup indexes), and as the app's
CellMeasurements rows (one per cell attempt, MeasureKey ids and float64
values packed; benchapp.store.measurestore) with their MeasureKey table.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
from pathlib import Path

import numpy as np
import psycopg

ROOT = Path(__file__).resolve().parents[1]
NAME = "benchboard_bench_storage"

ROW_TABLE = """CREATE TABLE row_per_value (
    id bigserial PRIMARY KEY, cell_id bigint NOT NULL, attempt integer NOT NULL,
    t double precision NOT NULL, metric varchar(60) NOT NULL, value double precision NOT NULL);
CREATE INDEX ON row_per_value (cell_id, metric, t);"""
ARRAY_TABLE = """CREATE TABLE row_per_series (
    id bigserial PRIMARY KEY, cell_id bigint NOT NULL, attempt integer NOT NULL,
    source varchar(40) NOT NULL, metric varchar(60) NOT NULL, count integer NOT NULL,
    t bytea NOT NULL, "values" bytea NOT NULL,
    UNIQUE (cell_id, attempt, source, metric));"""
MEASUREMENT_ROW_TABLE = """CREATE TABLE measurement_row (
    id bigserial PRIMARY KEY, run_id bigint NOT NULL, cell_id bigint NOT NULL,
    attempt integer NOT NULL, iteration integer NOT NULL, "group" varchar(200) NOT NULL,
    metric varchar(60) NOT NULL, value double precision NOT NULL, unit varchar(20) NOT NULL,
    UNIQUE (cell_id, attempt, iteration, "group", metric));
CREATE INDEX ON measurement_row (run_id, metric);
CREATE INDEX ON measurement_row (cell_id, metric);"""
MEASUREMENT_PACKED_TABLES = """CREATE TABLE measure_key (
    id bigserial PRIMARY KEY, "group" varchar(200) NOT NULL, metric varchar(60) NOT NULL,
    unit varchar(20) NOT NULL, UNIQUE ("group", metric, unit));
CREATE TABLE cell_measurements (
    id bigserial PRIMARY KEY, run_id bigint NOT NULL, cell_id bigint NOT NULL,
    attempt integer NOT NULL, count integer NOT NULL, keys bytea NOT NULL,
    iterations bytea NOT NULL, "values" bytea NOT NULL, UNIQUE (cell_id, attempt));
CREATE INDEX ON cell_measurements (run_id);"""
CELLS_PER_RUN = 48  # the five studies' plans have 24 to 48 cells


def connect(dbname: str | None = None) -> psycopg.Connection:
    base = os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/benchboard")
    url = base.rsplit("/", 1)[0] + "/" + (dbname or "postgres")
    return psycopg.connect(url, autocommit=True)


def fresh_database() -> psycopg.Connection:
    with connect() as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {NAME}")
        admin.execute(f"CREATE DATABASE {NAME}")
    return connect(NAME)


def values_of(cells: int, seconds: int, metrics: int) -> dict:
    """{(cell, metric): values}: noisy levels, as telemetry and tool series are."""
    rng = np.random.default_rng(1)
    return {
        (cell, f"metric_{m}"): rng.normal(1000.0 * (m + 1), 50.0, seconds).round(2)
        for cell in range(1, cells + 1)
        for m in range(metrics)
    }


def write_rows(conn, data: dict, seconds: int) -> None:
    buf = io.StringIO()
    for (cell, metric), values in data.items():
        for t, value in enumerate(values.tolist(), 1):
            buf.write(f"{cell}\t1\t{float(t)}\t{metric}\t{value}\n")
    buf.seek(0)
    with conn.cursor().copy(
        "COPY row_per_value (cell_id, attempt, t, metric, value) FROM STDIN"
    ) as copy:
        copy.write(buf.read())


def write_arrays(conn, data: dict, seconds: int) -> None:
    times = np.arange(1, seconds + 1, dtype="<f8").tobytes()
    sql = 'COPY row_per_series (cell_id, attempt, source, metric, count, t, "values") FROM STDIN'
    with conn.cursor().copy(sql) as copy:
        for (cell, metric), values in data.items():
            blob = np.asarray(values, dtype="<f8").tobytes()
            copy.write_row((cell, 1, "tool", metric, seconds, times, blob))


def write_measurements(conn, cells: int, metrics: int) -> None:
    """The same values both ways: metric m of cell c is one value of the study's level."""
    rng = np.random.default_rng(2)
    values = rng.normal(1000.0, 30.0, (cells, metrics))
    names = [("", f"metric_{m}", "ms") for m in range(metrics)]
    with conn.cursor().copy(
        'COPY measurement_row (run_id, cell_id, attempt, iteration, "group", metric, value, unit) '
        "FROM STDIN"
    ) as copy:
        for c in range(cells):
            for (group, metric, unit), value in zip(names, values[c].tolist()):
                copy.write_row((c // CELLS_PER_RUN, c, 1, 0, group, metric, value, unit))
    with conn.cursor().copy('COPY measure_key ("group", metric, unit) FROM STDIN') as copy:
        for name in names:
            copy.write_row(name)
    keys = np.arange(1, metrics + 1, dtype="<i4").tobytes()
    with conn.cursor().copy(
        'COPY cell_measurements (run_id, cell_id, attempt, count, keys, iterations, "values") '
        "FROM STDIN"
    ) as copy:
        for c in range(cells):
            packed = values[c].astype("<f8").tobytes()
            copy.write_row((c // CELLS_PER_RUN, c, 1, metrics, keys, b"", packed))


def size(conn, table: str) -> int:
    conn.execute(f"VACUUM ANALYZE {table}")
    return conn.execute("SELECT pg_total_relation_size(%s)", (table,)).fetchone()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=600)
    parser.add_argument("--metrics", type=int, default=80)
    parser.add_argument("--measured-cells", type=int, default=20000)
    parser.add_argument("--measured-metrics", type=int, default=19)
    args = parser.parse_args()
    data = values_of(args.cells, args.seconds, args.metrics)
    count = args.cells * args.seconds * args.metrics
    figures = {"values_per_run": count}
    with fresh_database() as conn:
        conn.execute(ROW_TABLE)
        conn.execute(ARRAY_TABLE)
        write_rows(conn, data, args.seconds)
        write_arrays(conn, data, args.seconds)
        for label, table in (("row_per_value", "row_per_value"), ("cell_series", "row_per_series")):
            total = size(conn, table)
            figures[label] = {
                "bytes_per_value": round(total / count, 1),
                "mb_per_run": round(total / 1e6, 1),
            }
        conn.execute(MEASUREMENT_ROW_TABLE)
        conn.execute(MEASUREMENT_PACKED_TABLES)
        write_measurements(conn, args.measured_cells, args.measured_metrics)
        measured = args.measured_cells * args.measured_metrics
        packed = size(conn, "cell_measurements") + size(conn, "measure_key")
        figures["measurements"] = {
            "values": measured,
            "row_per_value_bytes": round(size(conn, "measurement_row") / measured, 1),
            "packed_bytes": round(packed / measured, 1),
        }
    with connect() as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {NAME}")
    print(
        f"series storage, {count:,} values ({args.cells} cells x {args.seconds} s x "
        f"{args.metrics} series):"
    )
    for label in ("row_per_value", "cell_series"):
        f = figures[label]
        print(
            f"  {label:14s} {f['bytes_per_value']:6.1f} bytes/value  {f['mb_per_run']:7.1f} MB/run"
        )
    m = figures["measurements"]
    print(
        f"measurement storage, {m['values']:,} values ({args.measured_cells:,} cells x "
        f"{args.measured_metrics} metrics): one row per value {m['row_per_value_bytes']} "
        f"bytes/value, packed {m['packed_bytes']} bytes/value (goal <= 60)"
    )
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
