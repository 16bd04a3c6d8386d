"""Runs shaped like the five reference studies' results (S1-S5), built in the
database with the metrics their tools' parsers store, for the results tests
and the browser test of the default views."""

from benchapp.models import Run
from tests.benchapp.results_data import add_series, make_run

LOAD_TYPES = ["read", "write", "key", "update", "mixed"]


def s1_run(team, name="rds-classes-mysqlslap") -> Run:
    """mysqlslap over 2 instance classes x 5 load types, 10 iterations each
    (avg/min/max seconds of one cell); a separate client machine."""
    cells = []
    for target, speed in (("micro", 4.0), ("m2-4xlarge-iops", 1.0)):
        for i, load in enumerate(LOAD_TYPES):
            avg = speed * (1 + i)
            cells.append(
                (
                    {"target": target, "load_type": load},
                    1,
                    {
                        "avg_s": avg,
                        "min_s": avg * 0.8,
                        "max_s": avg * 1.5,
                        "qps": 10000 / avg,
                        "clients": 3.0,
                    },
                    {"facts": {"client_cpu_busy_pct": 20.0}},
                )
            )
    return make_run(
        team,
        name=name,
        tool="mysqlslap",
        cells=cells,
        document={
            "client": {"provision": {"provider": "aws_ec2", "instance_type": "m3.2xlarge"}},
            "targets": [{"name": "micro"}, {"name": "m2-4xlarge-iops"}],
            "params": {"concurrency": 3, "iterations": 10},
            "axes": {"target": ["micro", "m2-4xlarge-iops"], "load_type": LOAD_TYPES},
        },
    )


def s2_run(team, name="oltp-vs-cpu-stress", series=True) -> Run:
    """sysbench oltp_read_write on db8 with 0-8 stressed cores, twice each;
    sysbench runs on the database host (client on: target)."""
    cells = []
    for cpu in (0, 2, 4, 6, 8):
        for rep in (1, 2):
            tps = 1000.0 - cpu * 90 + rep
            cells.append(
                (
                    {"stress.cpu": cpu},
                    rep,
                    {
                        "tps": tps,
                        "qps": tps * 20,
                        "latency_avg_ms": 30.0 + cpu * 3,
                        "latency_min_ms": 2.0,
                        "latency_max_ms": 400.0 + cpu,
                    },
                    {"target_name": "db8", "facts": {"client_cpu_busy_pct": 40.0 + cpu * 6}},
                )
            )
    run = make_run(
        team,
        name=name,
        cells=cells,
        document={
            "client": {"on": "target"},
            "targets": [{"name": "db8", "kind": "mysql"}],
            "params": {"test": "oltp_read_write", "threads": 30, "time": 600},
        },
    )
    if series:
        add_series(run.cells.first(), "tps", [1000.0 + (i % 7) for i in range(60)])
    return run


def s3_run(team, name="ebs-raid0-fio") -> Run:
    """fio 4k over 1-16 striped volumes x read/write/randread/randwrite."""
    cells = []
    for volumes in (1, 2, 4, 8, 16):
        for rw in ("read", "write", "randread", "randwrite"):
            way = "write" if "write" in rw else "read"
            iops = 100.0 * volumes * (2 if way == "read" else 1)
            cells.append(
                (
                    {"volumes": volumes, "rw": rw},
                    1,
                    {f"{way}_iops": iops, f"{way}_bw_kib_s": iops * 4.0},
                    {"target_name": "c1-medium"},
                )
            )
    return make_run(
        team,
        name=name,
        tool="fio",
        cells=cells,
        document={
            "client": {"on": "target"},
            "targets": [{"name": "c1-medium"}],
            "params": {"bs": "4k", "direct": 1, "runtime": 16},
            "axes": {"volumes": [1, 2, 4, 8, 16], "rw": ["read", "write", "randread", "randwrite"]},
        },
    )


def s4_run(team, name="managed-mysql-threads") -> Run:
    """sysbench over 2 priced services x threads 4-256 x read-only/read-write."""
    cells = []
    for target, k in (("rds-mysql", 1.0), ("galera-3node", 1.6)):
        for threads in (4, 16, 64, 128, 256):
            for read_only in (True, False):
                tps = k * threads * (10 if read_only else 4)
                cells.append(
                    (
                        {"target": target, "threads": threads, "read_only": read_only},
                        1,
                        {"tps": tps, "qps": tps * 20, "latency_avg_ms": 5.0},
                    )
                )
    return make_run(
        team,
        name=name,
        cells=cells,
        document={
            "targets": [
                {
                    "name": "rds-mysql",
                    "kind": "mysql",
                    "host": "rds.example.internal",
                    "user": "test",
                    "price_per_month": 187.18,
                },
                {
                    "name": "galera-3node",
                    "kind": "mysql",
                    "host": "haproxy.internal",
                    "user": "test",
                    "price_per_month": 31200,
                    "currency": "JPY",
                },
            ],
            "params": {"test": "oltp_read_write", "table_size": 1000000, "time": 120},
            "axes": {
                "target": ["rds-mysql", "galera-3node"],
                "threads": [4, 16, 64, 128, 256],
                "read_only": [True, False],
            },
        },
    )


S5_VALUES = {10000: [7645.0, 4197.0, 11777.0], 1000000: [410.0, 395.0, 402.0]}


def s5_run(team, name="myisam-update") -> Run:
    """mysqlslap update on MyISAM with 10,000 and 1,000,000 rows, 3 runs each."""
    cells = []
    for rows, values in S5_VALUES.items():
        for rep, qps in enumerate(values, 1):
            cells.append(
                (
                    {"auto_generate_sql_write_number": rows},
                    rep,
                    {"qps": qps, "avg_s": 80000 / qps, "min_s": 80000 / qps, "max_s": 80000 / qps},
                    {"target_name": "m2-4xlarge"},
                )
            )
    return make_run(
        team,
        name=name,
        tool="mysqlslap",
        cells=cells,
        document={"targets": [{"name": "m2-4xlarge"}], "params": {"concurrency": 8}},
    )


STUDIES = {"S1": s1_run, "S2": s2_run, "S3": s3_run, "S4": s4_run, "S5": s5_run}
