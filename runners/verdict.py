"""What limited a cell, read from its telemetry by rules a person can check.

Each rule reads the summaries of runners.telemetry.summarize (per host role:
"client", "target", "host" when client and target are one machine) and of
the database's series, and either stays silent or gives a finding: a code,
a sentence, and the figures it rests on. The verdict is every finding, in
the order of RULES (the first is the headline); with none, "no limit found
in the telemetry", with what was looked at. docs/telemetry.md lists the
rules with their thresholds; these constants are the ones it quotes.
"""

from __future__ import annotations

from collections.abc import Callable

from runners.telemetry import CLOUD_PREFIX, DISK_UTIL_HIGH, HIGH_LEVELS, INTERVAL_S, NET_LINE_HIGH

# The levels whose share of seconds telemetry.summarize counts are its own.
CPU_BUSY_PCT = HIGH_LEVELS["cpu_busy_pct"]  # a CPU this busy (user + system) is saturated ...
CPU_BUSY_SHARE = 0.8  # ... for this share of the measured seconds
STEAL_PCT = 10.0  # mean steal: the hypervisor gave the time to a neighbour
DISK_UTIL_SHARE = 0.5  # the busiest disk at >= 90 % utilisation for this share
NET_LINE_SHARE = 0.5  # an interface at >= 90 % of its link speed for this share
SWAP_PAGES_S = 10.0  # mean pages swapped in or out per second
HIT_RATIO_PCT = 99.0  # buffer pool / cache hit ratio below this ...
DISK_READS_S = 50.0  # ... with at least this many reads from disk per second
LOCK_WAITS_S = 1.0  # row or table lock waits per second, or any deadlock
CPU_CREDITS_LOW = 1.0  # a burstable instance at or below this many CPU credits is throttled
BURST_BALANCE_LOW_PCT = 10.0  # gp2/st1 storage burst balance at or below this share
# The tool's CPU quota (a sandboxed local run, runners.cgroups) stopped it in
# at least half its 100 ms scheduling periods: its pace was the quota's. A
# tool with CPU to spare is throttled in few periods, if any.
THROTTLED_SHARE = 0.5
# Processes neither the cell's nor the target server's used this share of
# the machine's CPU (all its cores; runners.proctree): the figure was
# measured beside someone else's work, whatever limited it.
DISTURBED_PCT = 20.0
# A busy CPU is the cell's limit only when the tool and the server used at
# least this share of what was busy; otherwise the others kept it busy.
OWN_CPU_SHARE = 0.5
# A verdict rests on a measure of at least MIN_SECONDS, sampled at least
# MIN_SAMPLES times (a sampler starved by a busy machine takes 1.5 s a
# "second": 6 s measured then give 4 samples); less, and it says "too short
# to judge" rather than read one or two seconds. Where the measure's length
# is unknown (a verdict judged again later), MIN_SECONDS samples are needed.
MIN_SECONDS = 5.0
MIN_SAMPLES = 3

Finding = dict  # {"code", "text", "evidence": {figure: value}}


def _pct(value: float) -> str:
    return f"{value:.0f} %"


def _mean(summary: dict, figure: str) -> float | None:
    entry = summary.get(figure)
    return entry.get("mean") if isinstance(entry, dict) else None


def _own_cpu(summary: dict) -> float | None:
    """The mean % of the machine's CPU the cell's processes and the server
    used (None when the sampler could not tell whose CPU it was)."""
    cell, server = _mean(summary, "cpu_cell_pct"), _mean(summary, "cpu_server_pct")
    return None if cell is None else cell + (server or 0.0)


def _disturbed(summary: dict, role: str) -> Finding | None:
    other = _mean(summary, "cpu_other_pct")
    if other is None or other < DISTURBED_PCT:
        return None
    cell = _mean(summary, "cpu_cell_pct") or 0.0
    server = _mean(summary, "cpu_server_pct") or 0.0
    running = _mean(summary, "runnable_other") or 0.0
    return {
        "code": "disturbed",
        "text": f"disturbed: other processes used {_pct(other)} of the {role}'s CPU on average "
        f"(the cell's own {_pct(cell)}, the database server's {_pct(server)}), with {running:.1f} "
        "of their processes running beside the cell's: this figure was measured beside "
        "someone else's work",
        "evidence": {
            f"{role}.cpu_other_pct.mean": other,
            f"{role}.cpu_cell_pct.mean": cell,
            f"{role}.cpu_server_pct.mean": server,
            f"{role}.runnable_other.mean": running,
        },
    }


def _cpu_bound(summary: dict, role: str) -> Finding | None:
    busy = summary.get("cpu_busy_pct")
    if not busy or busy.get("high_share", 0) < CPU_BUSY_SHARE:
        return None
    own = _own_cpu(summary)
    if own is not None and own < OWN_CPU_SHARE * busy["mean"]:
        return None  # busy with the others' work: the disturbed finding says so
    who = {"client": "client", "target": "target", "host": "host (client and target)"}[role]
    whose = "" if own is None else f", {_pct(own)} of it the cell's and the server's"
    evidence = {f"{role}.cpu_busy_pct.mean": busy["mean"], "share": busy["high_share"]}
    if own is not None:
        evidence[f"{role}.cpu_own_pct.mean"] = round(own, 2)
    return {
        "code": f"{role}_cpu",
        "text": f"{who} CPU-bound: CPU {_pct(busy['mean'])} busy on average{whose}, at or above "
        f"{CPU_BUSY_PCT:g} % for {_pct(100 * busy['high_share'])} of the measured seconds",
        "evidence": evidence,
    }


def _client_quota(throttled: float | None) -> Finding | None:
    if throttled is None or throttled < THROTTLED_SHARE:
        return None
    return {
        "code": "client_cpu",
        "text": f"client CPU-bound: the tool's CPU quota stopped it in {_pct(100 * throttled)} "
        "of its scheduling periods (the sandbox's limit, see the cell's limits)",
        "evidence": {"client.cpu_throttled_share": throttled},
    }


def _steal(summary: dict, role: str) -> Finding | None:
    steal = summary.get("cpu_steal_pct")
    if not steal or steal["mean"] < STEAL_PCT:
        return None
    return {
        "code": "cpu_steal",
        "text": f"CPU steal on the {role}: {_pct(steal['mean'])} of its CPU time went to "
        f"other guests (max {_pct(steal['max'])}): a noisy neighbour",
        "evidence": {f"{role}.cpu_steal_pct.mean": steal["mean"]},
    }


def _disk_bound(summary: dict, role: str) -> Finding | None:
    disk = summary.get("busiest_disk")
    util = summary.get(f"disk_{disk}_util_pct") if disk else None
    if not util or util.get("high_share", 0) < DISK_UTIL_SHARE:
        return None
    wait = summary.get(f"disk_{disk}_await_ms", {}).get("mean", 0.0)
    queue = summary.get(f"disk_{disk}_queue", {}).get("mean", 0.0)
    return {
        "code": "disk",
        "text": f"disk-bound on the {role}: {disk} at or above {DISK_UTIL_HIGH:g} % utilisation for "
        f"{_pct(100 * util['high_share'])} of the seconds (await {wait:.1f} ms, queue {queue:.1f})",
        "evidence": {f"{role}.disk_{disk}_util_pct.mean": util["mean"], "await_ms": wait},
    }


def _network_bound(summary: dict, role: str) -> Finding | None:
    lines = {
        name[len("net_") : -len("_line_pct")]: entry
        for name, entry in summary.items()
        if name.startswith("net_") and name.endswith("_line_pct")
    }
    saturated = {net: e for net, e in lines.items() if e.get("high_share", 0) >= NET_LINE_SHARE}
    if not saturated:
        return None
    net = max(saturated, key=lambda n: saturated[n]["high_share"])
    share = saturated[net]["high_share"]
    rx = summary.get(f"net_{net}_rx_mb_s", {}).get("mean", 0.0)
    tx = summary.get(f"net_{net}_tx_mb_s", {}).get("mean", 0.0)
    return {
        "code": "network",
        "text": f"network-bound on the {role}: {net} at or above {NET_LINE_HIGH:g} % of its link "
        f"speed for {_pct(100 * share)} of the seconds (received {rx:.1f} MB/s, "
        f"sent {tx:.1f} MB/s on average)",
        "evidence": {f"{role}.net_{net}_line_pct.mean": saturated[net]["mean"], "share": share},
    }


def _swapping(summary: dict, role: str) -> Finding | None:
    swapped = sum(
        summary.get(k, {}).get("mean", 0.0) for k in ("swap_in_pages_s", "swap_out_pages_s")
    )
    if swapped < SWAP_PAGES_S:
        return None
    return {
        "code": "memory",
        "text": f"memory-bound on the {role}: {swapped:.0f} pages swapped per second",
        "evidence": {f"{role}.swap_pages_s": round(swapped, 1)},
    }


# What the not_in_memory rule reads: (cache, its hit ratio figure, its reads
# from disk per second). InnoDB and PostgreSQL cache data and indexes; MyISAM's
# key cache holds only indexes (its rows are the OS page cache's).
_CACHES = (
    ("buffer/cache", "hit_ratio_pct", ("buffer_pool_disk_reads_per_s", "blocks_read_per_s")),
    ("MyISAM key cache", "key_cache_hit_ratio_pct", ("key_reads_per_s",)),
)


def _not_in_memory(db: dict) -> Finding | None:
    for cache, ratio, read_figures in _CACHES:
        hit = db.get(ratio)
        reads = next((db[name] for name in read_figures if db.get(name)), None)
        if not hit or not reads or hit["mean"] >= HIT_RATIO_PCT or reads["mean"] < DISK_READS_S:
            continue
        return {
            "code": "not_in_memory",
            "text": f"data not in memory: {cache} hit ratio {hit['mean']:.1f} %, "
            f"{reads['mean']:.0f} reads per second from disk",
            "evidence": {f"db.{ratio}.mean": hit["mean"], "db.disk_reads_per_s": reads["mean"]},
        }
    return None


def _locks(db: dict) -> Finding | None:
    waits = _mean(db, "row_lock_waits_per_s") or 0.0
    deadlocks = _mean(db, "deadlocks_per_s") or 0.0
    table_waits = _mean(db, "table_locks_waited_per_s") or 0.0
    seconds = db.get("seconds", 0)
    row_bound = waits >= LOCK_WAITS_S or deadlocks * seconds >= 1
    if not row_bound and table_waits < LOCK_WAITS_S:
        return None
    parts, evidence = [], {}
    if table_waits >= LOCK_WAITS_S:
        parts.append(_table_locks(db, table_waits))
        evidence["db.table_locks_waited_per_s"] = table_waits
    if row_bound:
        lock_ms = _mean(db, "row_lock_time_ms_per_s")
        detail = f", {lock_ms:.0f} ms waited per second" if lock_ms else ""
        parts.append(
            f"{waits:.1f} row lock waits per second{detail}, {deadlocks * seconds:.0f} deadlocks"
        )
        evidence.update({"db.row_lock_waits_per_s": waits, "db.deadlocks": deadlocks * seconds})
    return {"code": "locks", "text": "lock contention: " + "; ".join(parts), "evidence": evidence}


def _table_locks(db: dict, waits: float) -> str:
    """Table-lock waits in words: how many a second, and their share of all table locks."""
    immediate = _mean(db, "table_locks_immediate_per_s") or 0.0
    share = 100 * waits / (waits + immediate) if waits + immediate else 0.0
    return (
        f"{waits:.1f} table lock waits per second ({share:.0f} % of table locks waited for "
        "another session's lock on the whole table: MyISAM locks a table for each write)"
    )


# (source, name) of a cloud's monitoring whose provider is not given: the
# generic source and words (a provider gives its MONITORING_SOURCE and _NAME).
MONITORING = (CLOUD_PREFIX, "cloud monitoring")


def _burst(cloud: dict, monitoring: tuple[str, str]) -> Finding | None:
    source, name = monitoring
    credits = cloud.get("cpu_credit_balance")
    burst = cloud.get("burst_balance_pct")
    if credits and credits["min"] <= CPU_CREDITS_LOW:
        return {
            "code": "burst_credits",
            "text": f"burst credits exhausted: the target's CPU credit balance fell from "
            f"{credits['first']:g} to {credits['min']:g} during the cell ({name}); a "
            "burstable instance without credits runs at its baseline CPU",
            "evidence": {
                f"{source}.cpu_credit_balance.first": credits["first"],
                f"{source}.cpu_credit_balance.min": credits["min"],
            },
        }
    if burst and burst["min"] <= BURST_BALANCE_LOW_PCT:
        return {
            "code": "burst_credits",
            "text": f"storage burst balance exhausted: it fell from {burst['first']:g} % to "
            f"{burst['min']:g} % during the cell ({name}); the storage then runs at its baseline IOPS",
            "evidence": {
                f"{source}.burst_balance_pct.first": burst["first"],
                f"{source}.burst_balance_pct.min": burst["min"],
            },
        }
    return None


def _cloud_cpu(cloud: dict, monitoring: tuple[str, str]) -> Finding | None:
    source, name = monitoring
    cpu = cloud.get("cpu_pct")
    if not cpu or cpu.get("high_share", 0) < CPU_BUSY_SHARE:
        return None
    return {
        "code": "target_cpu",
        "text": f"target CPU-bound: {name} CPUUtilization {_pct(cpu['mean'])} on average, at "
        f"or above {CPU_BUSY_PCT:g} % in {_pct(100 * cpu['high_share'])} of the minutes",
        "evidence": {f"{source}.cpu_pct.mean": cpu["mean"], "share": cpu["high_share"]},
    }


HOST_RULES: list[Callable[[dict, str], Finding | None]] = [
    _cpu_bound,
    _steal,
    _disk_bound,
    _network_bound,
    _swapping,
]
DB_RULES: list[Callable[[dict], Finding | None]] = [_not_in_memory, _locks]
# The cloud's own monitoring of a managed target (no SSH to it): burst first,
# since an instance out of credits is also CPU-bound at its baseline.
CLOUD_RULES: list[Callable[[dict, tuple[str, str]], Finding | None]] = [_burst, _cloud_cpu]
# Every code a verdict's "limit" can take (the archive searches by it).
CODES = (
    "client_cpu",
    "host_cpu",
    "target_cpu",
    "cpu_steal",
    "disk",
    "network",
    "memory",
    "not_in_memory",
    "locks",
    "burst_credits",
    "disturbed",
    "too_short",
    "none",
    "no_telemetry",
)
# Headline order: the client first (a client-bound figure says nothing of the
# target), then the target's machine, then the database.
ROLES = ("client", "host", "target")


def judge(
    hosts: dict[str, dict],
    db: dict | None,
    cloud: dict | None = None,
    *,
    client_throttled: float | None = None,
    measured_s: float | None = None,
    monitoring: tuple[str, str] | None = None,
) -> dict:
    """{"limit": headline code, "text": headline, "findings": [...], "checked": [...],
    "seconds": measured seconds, "samples": per-second samples it rests on}.

    cloud: the summary of the target's cloud monitoring, if read, and
    monitoring its (source, name), as its provider names them (MONITORING);
    client_throttled: the share of CPU periods the tool's quota stopped it in;
    measured_s: how long the measure lasted (None: unknown, e.g. re-judged later).

    A machine busy with others' work comes first (disturbed: every other
    figure of the cell was measured beside it), then the client's quota,
    then each machine's and the database's rules. Fewer than MIN_SAMPLES
    samples: "too short to judge", whatever the rules would say."""
    checked = [f"{role} host" for role in ROLES if (hosts.get(role) or {}).get("seconds")]
    if cloud and cloud.get("seconds"):
        checked.append("cloud monitoring")
    if db and db.get("seconds"):
        checked.append("database")
    samples = max(
        [(hosts.get(role) or {}).get("seconds", 0) for role in ROLES]
        + [(db or {}).get("seconds", 0)]
    )
    rests = {"seconds": None if measured_s is None else round(measured_s, 1), "samples": samples}
    if not checked:
        # Not "no limit found": nothing was looked at (a measure shorter than
        # two samples, or every sampler failed), so nothing can be ruled out.
        return {
            "limit": "no_telemetry",
            "text": "no verdict: no complete telemetry sample (the measure lasted under "
            f"{2 * INTERVAL_S} s, or sampling failed: see the cell's warnings)",
            "findings": [],
            "checked": [],
            **rests,
        }
    if _too_short(measured_s, samples) and not (cloud and cloud.get("seconds")):
        lasted = "" if measured_s is None else f"the measure lasted {measured_s:.1f} s, "
        return {
            "limit": "too_short",
            "text": f"too short to judge: {lasted}{samples} per-second sample"
            f"{'s' if samples != 1 else ''}; a verdict needs {MIN_SECONDS:g} measured seconds "
            f"and {MIN_SAMPLES} samples at least (measure longer: docs/telemetry.md)",
            "findings": [],
            "checked": checked,
            **rests,
        }
    findings = _findings(hosts, db, cloud, client_throttled, monitoring or MONITORING)
    if not findings:
        looked = ", ".join(checked)
        return {
            "limit": "none",
            "text": f"no limit found in the telemetry (looked at: {looked})",
            "findings": [],
            "checked": checked,
            **rests,
        }
    return {
        "limit": findings[0]["code"],
        "text": findings[0]["text"],
        "findings": findings,
        "checked": checked,
        **rests,
    }


def _too_short(measured_s: float | None, samples: int) -> bool:
    if measured_s is None:
        return samples < MIN_SECONDS
    return measured_s < MIN_SECONDS or samples < MIN_SAMPLES


def _findings(
    hosts: dict, db: dict | None, cloud: dict | None, throttled, monitoring: tuple[str, str]
) -> list[Finding]:
    """Every rule's finding, in the verdict's order."""
    sampled = [role for role in ROLES if (hosts.get(role) or {}).get("seconds")]
    findings = [f for role in sampled if (f := _disturbed(hosts[role], role))]
    quota = _client_quota(throttled)
    if quota:
        findings.append(quota)
    for role in sampled:
        findings += [f for rule in HOST_RULES if (f := rule(hosts[role], role))]
    if cloud and cloud.get("seconds"):
        findings += [f for rule in CLOUD_RULES if (f := rule(cloud, monitoring))]
    if db and db.get("seconds"):
        findings += [f for rule in DB_RULES if (f := rule(db))]
    return findings


def rests_on(found: dict) -> str:
    """ "12.3 measured seconds, 11 samples": what a verdict rests on, in words
    ("" for a verdict stored before it said)."""
    samples = found.get("samples")
    if samples is None:
        return ""
    seconds = found.get("seconds")
    head = f"{seconds:g} measured seconds, " if seconds is not None else ""
    return f"{head}{samples} sample{'s' if samples != 1 else ''}"
