"""The five studies' plans as scripts/bench_scale.py's generated year shapes
them (examples/): each one's matrix of cells, what every cell measures
(group, metric, unit) and its per-second series.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import product


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
