"""Database telemetry: the server's own counters, second by second, while a cell measured.

Which counters, and the client that reads them, are each engine's
(COUNTERS, GAUGES, HIT_RATIOS, sampler in runners/engines/); this module runs
the loop and turns its output into a series.

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

import shlex

from runners import engines
from runners.command import Command, Endpoint
from runners.results import Series
from runners.telemetry import INTERVAL_S, MARK, samples


def _loop(client: list[str]) -> str:
    return (
        f"while :; do echo {MARK} $(cat /proc/uptime); "
        f"{shlex.join(client)} 2>&1; echo {MARK} end; sleep {INTERVAL_S}; done"
    )


def sampler_command(endpoint: Endpoint) -> Command | None:
    """The background loop for an endpoint of a database kind (None for
    other kinds): the engine's telemetry client (its facts client with
    its telemetry query, or redis-cli INFO), run once a second."""
    engine = engines.find(endpoint.kind)
    return engine.sampler(endpoint, _loop) if engine is not None else None


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
    """(name, separator, value) of an output line (the engine's split_line);
    no separator: not a value line."""
    return engines.get(kind).split_line(line)


def _is_error(kind: str, line: str) -> bool:
    return bool(line.strip()) and not _split(kind, line)[1]


def parse_samples(kind: str, text: str) -> tuple[Series, list[str]]:
    """(series, errors): the loop's output as per-second rates, gauges and the
    hit ratio (hit_ratio_pct); errors: the client's error lines, once each."""
    engine = engines.get(kind)
    counters, gauges = engine.COUNTERS, engine.GAUGES
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
                row[label] = cur[name] * engine.GAUGE_SCALES.get(name, 1)
        for figure, (logical, physical) in engine.HIT_RATIOS.items():
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
    reads. An engine counts every logical read, disk reads included
    (LOGICAL_INCLUDES_PHYSICAL), or hits and reads apart."""
    total = logical if engines.get(kind).LOGICAL_INCLUDES_PHYSICAL else logical + physical
    if total <= 0:
        return None
    return 100.0 * (1.0 - physical / total)
