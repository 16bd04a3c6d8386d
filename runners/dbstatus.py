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
reads vs read requests, MyISAM key cache reads vs read requests, data
reads/writes, row lock waits and time, table locks granted at once and
after a wait, deadlocks, threads, temporary disk tables). PostgreSQL: pg_stat_database of the target's database (commits,
rollbacks, blocks read vs hit, tuples, deadlocks, temp bytes), active
backends and waiting locks. Redis: INFO through redis-cli, its password in
REDISCLI_AUTH (commands, keyspace hits and misses, evicted keys, used
memory, connected clients). `parse_samples` gives a columnar series:
per-second rates of the counters, the gauges as read, and the hit ratios of
each second (MySQL: the InnoDB buffer pool's, hit_ratio_pct, and the MyISAM
key cache's, key_cache_hit_ratio_pct; Redis: keyspace_hit_ratio_pct).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import replace

from runners.command import WORKDIR, Command, Endpoint, Upload
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
    # Table locks (MyISAM, MEMORY, LOCK TABLES): granted at once, or after a
    # wait for another session's lock on the whole table.
    "Table_locks_immediate": "table_locks_immediate_per_s",
    "Table_locks_waited": "table_locks_waited_per_s",
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
# Redis INFO (its stats, memory and clients sections). The sampler's own INFO
# adds one command a second to total_commands_processed.
REDIS_COUNTERS = {
    "total_commands_processed": "ops_per_s",
    "keyspace_hits": "keyspace_hits_per_s",
    "keyspace_misses": "keyspace_misses_per_s",
    "evicted_keys": "evicted_keys_per_s",
}
REDIS_GAUGES = {"used_memory": "used_memory_mb", "connected_clients": "connected_clients"}
# A gauge read in other units than its figure's: used_memory is in bytes.
GAUGE_SCALES = {"used_memory": 1 / (1024 * 1024)}
SERIES = {
    "mysql": (MYSQL_COUNTERS, MYSQL_GAUGES),
    "postgres": (POSTGRES_COUNTERS, POSTGRES_GAUGES),
    "redis": (REDIS_COUNTERS, REDIS_GAUGES),
}
# The hit ratios of a second: figure -> (logical reads, of which from disk).
HIT_RATIOS = {
    "mysql": {
        "hit_ratio_pct": ("Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads"),
        "key_cache_hit_ratio_pct": ("Key_read_requests", "Key_reads"),
    },
    "postgres": {"hit_ratio_pct": ("blks_hit", "blks_read")},
    # Keys found vs not found: a cache's hit ratio, not a disk's (a miss reads
    # nothing), hence a figure of its own that the not_in_memory rule ignores.
    "redis": {"keyspace_hit_ratio_pct": ("keyspace_hits", "keyspace_misses")},
}
# A Redis INFO line: "name:value"; "# Stats" heads a section; any other line
# (NOAUTH, "Could not connect to Redis at ...") is the client's error.
_REDIS_LINE = re.compile(r"([A-Za-z0-9_]+):(.*)")
REDIS_AUTH_FILE = "telemetry.redisauth"

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
    """The background loop for a mysql, postgres or redis endpoint (None for
    other kinds): the facts query's client command (runners.facts), or
    redis-cli INFO, run once a second."""
    if endpoint.kind == "mysql":
        client = mysql_facts_command(endpoint, _MYSQL_QUERY, name="telemetry")
    elif endpoint.kind == "postgres":
        client = postgres_facts_command(endpoint, _POSTGRES_QUERY, name="telemetry")
    elif endpoint.kind == "redis":
        return _redis_sampler(endpoint)
    else:
        return None
    return replace(client, argv=["sh", "-c", _loop(client.argv)])


def _redis_sampler(endpoint: Endpoint) -> Command:
    """redis-cli INFO once a second. A password goes in REDISCLI_AUTH, read by
    the shell from a 0600 file: never in argv, nor in the `env K=V` an SSH
    executor would pass a Command's env with."""
    where = (
        ["-s", endpoint.socket]
        if endpoint.socket
        else ["-h", endpoint.host or "127.0.0.1", "-p", str(endpoint.port or 6379)]
    )
    loop = _loop(["redis-cli", *where, "INFO"])
    uploads, secrets = [], []
    if endpoint.password:
        auth = f"{WORKDIR}/{REDIS_AUTH_FILE}"
        loop = f'REDISCLI_AUTH="$(cat {shlex.quote(auth)})"; export REDISCLI_AUTH; {loop}'
        uploads = [Upload(REDIS_AUTH_FILE, endpoint.password.encode(), 0o600)]
        secrets = [endpoint.password]
    return Command(
        argv=["sh", "-c", loop],
        uploads=uploads,
        secrets=secrets,
        tool="redis-cli",
        package="redis-tools",
    )


def _values(kind: str, lines: list[str]) -> dict[str, float]:
    out = {}
    for line in lines:
        name, _, value = _split(kind, line)
        try:
            out[name.strip()] = float(value)
        except ValueError:
            continue  # an error line of the client, or text: no value
    return out


def _split(kind: str, line: str) -> tuple[str, str, str]:
    """(name, separator, value) of an output line; no separator: not a value
    line (a Redis section heading keeps "#" as its separator)."""
    if kind != "redis":
        return line.partition("\t")
    line = line.strip()
    if line.startswith("#"):
        return "", "#", ""
    match = _REDIS_LINE.fullmatch(line)
    return (match[1], ":", match[2]) if match else (line, "", "")


def _is_error(kind: str, line: str) -> bool:
    return bool(line.strip()) and not _split(kind, line)[1]


def parse_samples(kind: str, text: str) -> tuple[Series, list[str]]:
    """(series, errors): the loop's output as per-second rates, gauges and the
    hit ratio (hit_ratio_pct); errors: the client's error lines, once each."""
    counters, gauges = SERIES[kind]
    read = [(clock, _values(kind, lines), lines) for clock, lines in samples(text)]
    errors = list(
        dict.fromkeys(
            line.strip() for _, _, lines in read for line in lines if _is_error(kind, line)
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
                row[label] = cur[name] * GAUGE_SCALES.get(name, 1)
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
