"""Database telemetry: the server's own counters, second by second, while a cell measured.

A shell loop on the client runs the database's client once a second over the
cell's own connection details (the password in a 0600 option file or
PGPASSFILE, never in argv) and prints the counters a DBA reads:

    @@ 940.18 807.93                  (the client's /proc/uptime: the sample's clock)
    Innodb_buffer_pool_read_requests	1844672
    Innodb_buffer_pool_reads	1206
    ...
    @@ end

MySQL/MariaDB: SHOW GLOBAL STATUS (questions, commits, rows, buffer pool
reads vs read requests, MyISAM key cache reads vs read requests, data reads/writes, row lock waits and time,
deadlocks, threads, temporary disk tables). PostgreSQL: pg_stat_database of
the target's database (commits, rollbacks, blocks read vs hit, tuples,
deadlocks, temp bytes), active backends and waiting locks. `parse_samples`
gives a columnar series: per-second rates of the counters, the gauges as
read, and the buffer/cache hit ratio of each second (MySQL: the InnoDB buffer
pool's, hit_ratio_pct, and the MyISAM key cache's, key_cache_hit_ratio_pct).
"""

from __future__ import annotations

import shlex
from dataclasses import replace

from runners.command import Command, Endpoint
from runners.facts import mysql_facts_command, postgres_facts_command
from runners.results import Series
from runners.telemetry import INTERVAL_S, MARK, samples

MYSQL_COUNTERS = {
    "Questions": "questions_per_s",
    "Com_commit": "commits_per_s",
    "Com_rollback": "rollbacks_per_s",
    # Rows read: MariaDB counts them as Rows_read, MySQL as Innodb_rows_read
    # (the server has one of the two); rows written at the handler level.
    "Rows_read": "rows_read_per_s",
    "Innodb_rows_read": "rows_read_per_s",
    "Handler_write": "rows_inserted_per_s",
    "Handler_update": "rows_updated_per_s",
    "Handler_delete": "rows_deleted_per_s",
    "Innodb_buffer_pool_read_requests": "buffer_pool_read_requests_per_s",
    "Innodb_buffer_pool_reads": "buffer_pool_disk_reads_per_s",
    "Innodb_data_reads": "data_reads_per_s",
    "Innodb_data_writes": "data_writes_per_s",
    "Innodb_row_lock_waits": "row_lock_waits_per_s",
    "Innodb_row_lock_time": "row_lock_time_ms_per_s",
    "Innodb_deadlocks": "deadlocks_per_s",
    "Created_tmp_disk_tables": "tmp_disk_tables_per_s",
    # MyISAM keeps only its indexes in a cache of its own (the key buffer;
    # data rows are left to the OS page cache): index blocks asked for, and
    # of those the ones read from a file because the key buffer lacked them.
    "Key_read_requests": "key_read_requests_per_s",
    "Key_reads": "key_reads_per_s",
}
MYSQL_GAUGES = {"Threads_running": "threads_running", "Threads_connected": "threads_connected"}
POSTGRES_COUNTERS = {
    "xact_commit": "commits_per_s",
    "xact_rollback": "rollbacks_per_s",
    "blks_read": "blocks_read_per_s",
    "blks_hit": "blocks_hit_per_s",
    "tup_returned": "rows_returned_per_s",
    "tup_fetched": "rows_fetched_per_s",
    "tup_inserted": "rows_inserted_per_s",
    "tup_updated": "rows_updated_per_s",
    "tup_deleted": "rows_deleted_per_s",
    "deadlocks": "deadlocks_per_s",
    "temp_bytes": "temp_bytes_per_s",
}
POSTGRES_GAUGES = {"active_backends": "active_backends", "waiting_locks": "waiting_locks"}
# The hit ratios of a second: figure -> (logical reads, of which from disk).
HIT_RATIOS = {
    "mysql": {
        "hit_ratio_pct": ("Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads"),
        "key_cache_hit_ratio_pct": ("Key_read_requests", "Key_reads"),
    },
    "postgres": {"hit_ratio_pct": ("blks_hit", "blks_read")},
}

_MYSQL_QUERY = "SHOW GLOBAL STATUS WHERE Variable_name IN ({})".format(
    ", ".join(f"'{name}'" for name in [*MYSQL_COUNTERS, *MYSQL_GAUGES])
)
_POSTGRES_QUERY = (
    "SELECT v.k, v.n FROM pg_stat_database d, LATERAL (VALUES "
    + ", ".join(f"('{name}', d.{name}::bigint)" for name in POSTGRES_COUNTERS)
    + ") v(k, n) WHERE d.datname = current_database() "
    "UNION ALL SELECT 'active_backends', count(*) FROM pg_stat_activity WHERE state = 'active' "
    "UNION ALL SELECT 'waiting_locks', count(*) FROM pg_locks WHERE NOT granted"
)


def _loop(client: list[str]) -> str:
    return (
        f"while :; do echo {MARK} $(cat /proc/uptime); "
        f"{shlex.join(client)} 2>&1; echo {MARK} end; sleep {INTERVAL_S}; done"
    )


def sampler_command(endpoint: Endpoint) -> Command | None:
    """The background loop for a mysql or postgres endpoint (None for other
    kinds): the facts query's client command (runners.facts), run once a second."""
    if endpoint.kind == "mysql":
        client = mysql_facts_command(endpoint, _MYSQL_QUERY, name="telemetry")
    elif endpoint.kind == "postgres":
        client = postgres_facts_command(endpoint, _POSTGRES_QUERY, name="telemetry")
    else:
        return None
    return replace(client, argv=["sh", "-c", _loop(client.argv)])


def _values(lines: list[str]) -> dict[str, float]:
    out = {}
    for line in lines:
        name, _, value = line.partition("\t")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            continue  # an error line of the client: that second has no value
    return out


def parse_samples(kind: str, text: str) -> tuple[Series, list[str]]:
    """(series, errors): the loop's output as per-second rates, gauges and the
    hit ratio (hit_ratio_pct); errors: the client's error lines, once each."""
    counters, gauges = (
        (MYSQL_COUNTERS, MYSQL_GAUGES) if kind == "mysql" else (POSTGRES_COUNTERS, POSTGRES_GAUGES)
    )
    read = [(clock, _values(lines), lines) for clock, lines in samples(text)]
    errors = list(
        dict.fromkeys(
            line.strip()
            for _, _, lines in read
            for line in lines
            if line.strip() and "\t" not in line
        )
    )
    rows = []
    for (t0, prev, _), (t1, cur, _) in zip(read, read[1:]):
        dt = t1 - t0
        if dt <= 0:
            continue
        row = {"t": round(t1 - read[0][0], 2)}
        for name, label in counters.items():
            if name in cur and name in prev:
                row[label] = max(0.0, cur[name] - prev[name]) / dt
        for name, label in gauges.items():
            if name in cur:
                row[label] = cur[name]
        for figure, (logical, physical) in HIT_RATIOS[kind].items():
            if all(n in cur and n in prev for n in (logical, physical)):
                ratio = _hit_ratio(
                    kind, cur[logical] - prev[logical], cur[physical] - prev[physical]
                )
                if ratio is not None:
                    row[figure] = ratio
        rows.append(row)
    names = list(dict.fromkeys(name for row in rows for name in row))
    return {name: [row.get(name) for row in rows] for name in names}, errors[:5]


def _hit_ratio(kind: str, logical: float, physical: float) -> float | None:
    """The share of reads served from memory, in %; None for a second without
    reads. MySQL counts every logical read (disk reads included); PostgreSQL
    counts hits and reads apart."""
    total = logical if kind == "mysql" else logical + physical
    if total <= 0:
        return None
    return 100.0 * (1.0 - physical / total)
