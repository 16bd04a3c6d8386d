"""Host telemetry: what a machine did, second by second, while a cell measured.

A POSIX shell loop (runners.hostsampler) prints, once a second, the lines of
/proc that a person would read with mpstat, vmstat, iostat and sar -n DEV:

    @@ 940.18 807.93                        /proc/uptime: the sample's clock
    cpu  91355 295 13200 80793 703 0 475 81 0 0
    cpu0 41097 117 5765 46182 90 0 148 39 0 0
    ctxt 3599824
    procs_running 3
    0.52 0.61 0.58 2/311 12345              /proc/loadavg
    MemTotal:       24562892 kB             (selected /proc/meminfo lines)
    pswpin 0                                (/proc/vmstat)
    253 0 vda 59551 0 492200 1299 520 ...   /proc/diskstats
    eth0: 214489060 331180 0 0 ...          /proc/net/dev
    speed eth0 1000                         /sys/class/net/eth0/speed, Mb/s (read once)

It also lists the processes that used CPU (runners.proctree), so a second's
CPU splits into the cell's own, the target server's and everyone else's.
`parse_samples` turns the text into a columnar series
(runners.results.Series) of per-second rates and levels; `summarize` gives
the mean, max and the share of seconds above a level that the verdict
rules (runners.verdict) read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from runners import proctree
from runners.metrics import CONTEXT, HIGHER, LOWER, NEUTRAL, Metric
from runners.results import Series

INTERVAL_S = 1
MARK = "@@"  # a sample's first line (with its clock) and last ("@@ end")
# /proc/stat cpu columns, in order (steal is the 8th).
_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
_IGNORED_DISKS = re.compile(r"^(loop|ram|zram|sr|fd)\d*")
SECTOR_BYTES = 512
MB = 1_000_000


# ------------------------------------------------------------------ parsing


def samples(text: str) -> Iterator[tuple[float, list[str]]]:
    """(uptime, the sample's lines) for every complete sample in text (one
    that reached its end mark: the stop may cut the last one short)."""
    clock, lines = None, []
    for line in text.splitlines():
        if line.startswith(MARK):
            fields = line.split()
            if fields[1:] == ["end"]:
                if clock is not None:
                    yield clock, lines
                clock = None
                continue
            try:
                clock, lines = float(fields[1]), []
            except (IndexError, ValueError):
                clock = None
        elif clock is not None:
            lines.append(line)


def _counters(lines: list[str]) -> dict[str, float]:
    """Every counter and level of one sample, flat: cpu.user, disk.vda.4, net.eth0.0 ..."""
    out: dict[str, float] = {}
    for line in lines:
        fields = line.split()
        if not fields:
            continue
        head = fields[0]
        try:
            if head.startswith("cpu"):
                for name, value in zip(_CPU_FIELDS, fields[1:]):
                    out[f"{head}.{name}"] = float(value)
            elif head in ("ctxt", "procs_running", "procs_blocked", "pswpin", "pswpout"):
                out[head] = float(fields[1])
            elif head == "load":
                out["load1"] = float(fields[1])
            elif head.endswith(":") and len(fields) >= 2:
                out["mem." + head[:-1]] = float(fields[1]) * 1024
            elif head == "disk" and len(fields) >= 15:
                for i, value in enumerate(fields[4:15]):
                    out[f"disk.{fields[3]}.{i}"] = float(value)
            elif head == "speed" and len(fields) == 3:
                out[f"speed.{fields[1]}"] = float(fields[2])
            elif head == "net" and len(fields) >= 11:
                for i, value in enumerate(fields[2:12]):
                    out[f"net.{fields[1]}.{i}"] = float(value)
        except ValueError:
            continue  # a line cut by the stop
    return out


def _whole_disks(names: set[str]) -> list[str]:
    """Devices that are not partitions of another listed device, nor loop/ram devices."""
    disks = []
    for name in sorted(names):
        if _IGNORED_DISKS.match(name):
            continue
        if any(
            other != name and name.startswith(other) and re.fullmatch(r"p?\d+", name[len(other) :])
            for other in names
        ):
            continue
        disks.append(name)
    return disks


def _cpu_pcts(prev: dict, cur: dict, cpu: str) -> dict[str, float] | None:
    deltas = {f: cur.get(f"{cpu}.{f}", 0.0) - prev.get(f"{cpu}.{f}", 0.0) for f in _CPU_FIELDS}
    total = sum(deltas.values())
    if total <= 0:
        return None
    pct = {f: 100.0 * d / total for f, d in deltas.items()}
    return {
        "user": pct["user"] + pct["nice"],
        "system": pct["system"] + pct["irq"] + pct["softirq"],
        "iowait": pct["iowait"],
        "steal": pct["steal"],
        "idle": pct["idle"],
        "busy": 100.0 - pct["idle"] - pct["iowait"],
    }


def _interval_row(
    prev: dict, cur: dict, dt: float, disks, nets, cpus, link_mbit: float | None = None
) -> dict[str, float]:
    row: dict[str, float] = {}
    for cpu in cpus:
        pcts = _cpu_pcts(prev, cur, cpu)
        if pcts is None:
            continue
        if cpu == "cpu":
            for name, value in pcts.items():
                row[f"cpu_{name}_pct"] = value
        else:
            row[f"{cpu}_busy_pct"] = pcts["busy"]
    for level in ("load1", "procs_running", "procs_blocked"):
        if level in cur:
            row[level] = cur[level]
    if "ctxt" in cur and "ctxt" in prev:
        row["ctxt_per_s"] = (cur["ctxt"] - prev["ctxt"]) / dt
    if "mem.MemTotal" in cur and "mem.MemAvailable" in cur:
        row["mem_used_mb"] = (cur["mem.MemTotal"] - cur["mem.MemAvailable"]) / MB
        row["mem_cached_mb"] = cur.get("mem.Cached", 0.0) / MB
        row["mem_dirty_mb"] = cur.get("mem.Dirty", 0.0) / MB
    for name in ("pswpin", "pswpout"):
        if name in cur and name in prev:
            row[f"swap_{name[4:]}_pages_s"] = (cur[name] - prev[name]) / dt
    for disk in disks:
        row.update(_disk_row(prev, cur, dt, disk))
    for net in nets:
        row.update(_net_row(prev, cur, dt, net, link_mbit))
    return row


def _disk_row(prev: dict, cur: dict, dt: float, disk: str) -> dict[str, float]:
    """iostat's figures from two /proc/diskstats lines (fields as the kernel documents)."""

    def delta(i: int) -> float:
        return cur.get(f"disk.{disk}.{i}", 0.0) - prev.get(f"disk.{disk}.{i}", 0.0)

    ios = delta(0) + delta(4)
    return {
        f"disk_{disk}_iops": ios / dt,
        f"disk_{disk}_read_mb_s": delta(2) * SECTOR_BYTES / MB / dt,
        f"disk_{disk}_write_mb_s": delta(6) * SECTOR_BYTES / MB / dt,
        f"disk_{disk}_await_ms": (delta(3) + delta(7)) / ios if ios else 0.0,
        f"disk_{disk}_util_pct": min(100.0, delta(9) / (10.0 * dt)),
        f"disk_{disk}_queue": delta(10) / (1000.0 * dt),
    }


def _net_row(
    prev: dict, cur: dict, dt: float, net: str, link_mbit: float | None = None
) -> dict[str, float]:
    def delta(i: int) -> float:
        return cur.get(f"net.{net}.{i}", 0.0) - prev.get(f"net.{net}.{i}", 0.0)

    row = {
        f"net_{net}_rx_mb_s": delta(0) / MB / dt,
        f"net_{net}_tx_mb_s": delta(8) / MB / dt,
        f"net_{net}_rx_pkts_s": delta(1) / dt,
        f"net_{net}_tx_pkts_s": delta(9) / dt,
    }
    speed_mbit = cur.get(f"speed.{net}", -1.0)
    if link_mbit and net != "lo":
        # The declared link speed wins over the driver's: a veth says
        # 10000 Mb/s and a virtio NIC -1, whatever the link is shaped to.
        speed_mbit = link_mbit
    if speed_mbit > 0:  # -1 or missing: the line rate is unknown, no share of it
        line_mb_s = speed_mbit * 1_000_000 / 8 / MB
        busiest = max(row[f"net_{net}_rx_mb_s"], row[f"net_{net}_tx_mb_s"])
        row[f"net_{net}_line_pct"] = 100.0 * busiest / line_mb_s
    return row


def _active(samples: list[dict], prefix: str, names: list[str]) -> list[str]:
    """The devices whose counters moved between the first and last sample."""
    first, last = samples[0], samples[-1]
    return [
        name
        for name in names
        if any(
            last.get(key) != first.get(key) for key in last if key.startswith(f"{prefix}.{name}.")
        )
    ]


def _group_shares(prev: dict, cur: dict, ticks: dict, running: int) -> dict[str, float]:
    """The interval's CPU shares of the cell, the server and the others (runners.proctree)."""

    def delta(field: str) -> float:
        return cur.get(f"cpu.{field}", 0.0) - prev.get(f"cpu.{field}", 0.0)

    total = sum(delta(field) for field in _CPU_FIELDS)
    busy = delta("user") + delta("nice") + delta("system")
    return proctree.shares(ticks, running, total, busy)


def parse_samples(
    text: str, link_mbit: float | None = None, owners: proctree.Owners | None = None
) -> Series:
    """The sampler's output as a columnar series: t (seconds since the first
    sample), one column per figure; per-second rates
    come from consecutive samples, so n samples give n - 1 rows.

    link_mbit: the host's declared link speed (the target's `link_mbit`),
    used for every interface but lo instead of the speed its driver reports.
    owners: who is the cell and who the server on this machine, for the
    CPU shares of each (cpu_cell_pct, cpu_server_pct, cpu_other_pct,
    runnable_other; runners.proctree).

    Disks and interfaces that did nothing during the window are left out,
    as are partitions (their disk is there) and loop/ram devices."""
    blocks = list(samples(text))
    parsed = [(clock, _counters(lines)) for clock, lines in blocks]
    if len(parsed) < 2:
        return {}
    accounting = proctree.Accounting(owners or proctree.Owners())
    # Whose CPU each interval was: None for the first sample (the baseline).
    accounted = [accounting.interval(lines) for _, lines in blocks]
    counters = [c for _, c in parsed]
    disk_names = {k.split(".")[1] for k in counters[-1] if k.startswith("disk.")}
    net_names = {k.split(".")[1] for k in counters[-1] if k.startswith("net.")}
    disks = _active(counters, "disk", _whole_disks(disk_names))
    nets = _active(counters, "net", sorted(net_names))
    cpus = sorted({k.split(".")[0] for k in counters[-1] if k.startswith("cpu")}, key=_cpu_order)
    origin = parsed[0][0]
    rows = []
    for (t0, prev), (t1, cur), groups in zip(parsed, parsed[1:], accounted[1:]):
        dt = t1 - t0
        if dt <= 0:
            continue
        row = _interval_row(prev, cur, dt, disks, nets, cpus, link_mbit)
        if groups is not None:
            row.update(_group_shares(prev, cur, *groups))
        rows.append({"t": round(t1 - origin, 2), **row})
    names = list(dict.fromkeys(name for row in rows for name in row))
    return {name: [row.get(name) for row in rows] for name in names}


def _cpu_order(name: str) -> int:
    return -1 if name == "cpu" else int(name[3:] or 0)


# ---------------------------------------------------------------- summaries

# Figures summarised for every host (mean, max, and the share of seconds at
# or above a level where a verdict rule reads one).
# cpu_pct: the CPU a cloud's monitoring reports (its CPU utilisation).
HIGH_LEVELS = {"cpu_busy_pct": 90.0, "cpu_pct": 90.0}
# Figures whose lowest value (and first, to see the fall) matters: balances
# that throttle the instance when they run out.
LOW_FIGURES = ("cpu_credit_balance", "burst_balance_pct")
DISK_UTIL_HIGH = 90.0
# An interface moving this share of its link speed, received or sent (full
# duplex: each direction has the whole rate), is at its line rate.
NET_LINE_HIGH = 90.0


def summarize(series: Series) -> dict:
    """{figure: {"mean", "max", "high_share"?}} of a host's series, plus the
    busiest disk's utilisation and await under "disk_util_pct"/"disk_await_ms"
    (with the device's name)."""
    out: dict = {}
    for name, values in series.items():
        if name == "t":
            continue
        numbers = [v for v in values if v is not None]
        if not numbers:
            continue
        entry = {"mean": round(sum(numbers) / len(numbers), 2), "max": round(max(numbers), 2)}
        if name in LOW_FIGURES:
            entry["min"] = round(min(numbers), 2)
            entry["first"] = round(numbers[0], 2)
        level = HIGH_LEVELS.get(name)
        if level is None and name.endswith("_util_pct"):
            level = DISK_UTIL_HIGH
        if level is None and name.endswith("_line_pct"):
            level = NET_LINE_HIGH
        if level is not None:
            entry["high_share"] = round(sum(v >= level for v in numbers) / len(numbers), 3)
        out[name] = entry
    out["seconds"] = len(series.get("t", []))
    utils = {k: v for k, v in out.items() if k.startswith("disk_") and k.endswith("_util_pct")}
    if utils:
        busiest = max(utils, key=lambda k: utils[k]["mean"])
        disk = busiest[len("disk_") : -len("_util_pct")]
        out["busiest_disk"] = disk
    lines = {k: v for k, v in out.items() if k.startswith("net_") and k.endswith("_line_pct")}
    if lines:
        busiest = max(lines, key=lambda k: lines[k]["mean"])
        out["busiest_net"] = busiest[len("net_") : -len("_line_pct")]
    return out


# ---------------------------------------------------------------- as metrics

# A summary stored as a Measurement is named "telemetry.<source>.<figure>.<stat>"
# ("telemetry.target.cpu_busy_pct.mean"), so the results table, charts,
# comparisons and the trend page read it like any tool metric.
METRIC_PREFIX = "telemetry."
STATS = ("mean", "max", "min")  # min: only balances keep one (LOW_FIGURES)
SOURCE_LABELS = {"client": "client", "target": "target", "host": "host", "db": "database"}
# A cloud's own monitoring of a managed target (a provider's metrics()) is
# stored under a source that starts with this: the provider names it
# (Provider.MONITORING_SOURCE), telemetry knows it by this prefix only.
CLOUD_PREFIX = "cloud"


def is_cloud(source: str) -> bool:
    """Whether source is a cloud's monitoring of the target (CLOUD_PREFIX)."""
    return source.startswith(CLOUD_PREFIX)


# The figures stored and shown (the cell page's summary table): (label, unit,
# direction). Most are neutral: a busier CPU is neither better nor worse, it
# explains a number. A hit ratio, await, steal and swapping have a better side.
FIGURES: dict[str, tuple[str, str, str]] = {
    "cpu_busy_pct": ("CPU busy", "%", NEUTRAL),
    "cpu_iowait_pct": ("CPU iowait", "%", NEUTRAL),
    "cpu_steal_pct": ("CPU steal", "%", LOWER),
    # Whose CPU it was (runners.proctree), in % of all the machine's CPUs.
    "cpu_cell_pct": ("CPU used by the cell's processes", "%", NEUTRAL),
    "cpu_server_pct": ("CPU used by the database server", "%", NEUTRAL),
    "cpu_other_pct": ("CPU used by other processes", "%", LOWER),
    "runnable_other": ("other processes running", "", LOWER),
    "load1": ("load (1 min)", "", NEUTRAL),
    "procs_running": ("run queue", "", NEUTRAL),
    "mem_used_mb": ("memory used", "MB", NEUTRAL),
    "swap_in_pages_s": ("swap in", "pages/s", LOWER),
    "swap_out_pages_s": ("swap out", "pages/s", LOWER),
    "ctxt_per_s": ("context switches", "/s", NEUTRAL),
    # The busiest disk of the host (summarize's "busiest_disk"), under one
    # name whatever the device is called, so cells on vda and nvme0n1 compare.
    "disk_util_pct": ("busiest disk utilisation", "%", NEUTRAL),
    "disk_await_ms": ("busiest disk await", "ms", LOWER),
    "disk_iops": ("busiest disk IOPS", "/s", NEUTRAL),
    # Likewise the interface nearest its link speed (of those whose speed is known).
    "net_line_pct": ("busiest interface's share of its link speed", "%", NEUTRAL),
    "questions_per_s": ("queries", "/s", NEUTRAL),
    "commits_per_s": ("commits", "/s", NEUTRAL),
    "hit_ratio_pct": ("buffer/cache hit ratio", "%", HIGHER),
    "buffer_pool_disk_reads_per_s": ("buffer pool reads from disk", "/s", NEUTRAL),
    "blocks_read_per_s": ("blocks read from disk", "/s", NEUTRAL),
    "key_cache_hit_ratio_pct": ("MyISAM key cache hit ratio", "%", HIGHER),
    "key_reads_per_s": ("MyISAM key blocks read from files", "/s", NEUTRAL),
    "row_lock_waits_per_s": ("row lock waits", "/s", LOWER),
    "table_locks_waited_per_s": ("table lock waits", "/s", LOWER),
    "table_locks_immediate_per_s": ("table locks granted at once", "/s", NEUTRAL),
    "deadlocks_per_s": ("deadlocks", "/s", LOWER),
    "threads_running": ("threads running", "", NEUTRAL),
    "active_backends": ("active backends", "", NEUTRAL),
    "waiting_locks": ("waiting locks", "", LOWER),
    "ops_per_s": ("Redis commands", "/s", NEUTRAL),
    "keyspace_hit_ratio_pct": ("Redis keyspace hit ratio", "%", HIGHER),
    "keyspace_misses_per_s": ("Redis keyspace misses", "/s", NEUTRAL),
    "evicted_keys_per_s": ("Redis evicted keys", "/s", LOWER),
    "used_memory_mb": ("Redis used memory", "MB", NEUTRAL),
    "connected_clients": ("Redis connected clients", "", NEUTRAL),
    # A managed target's cloud monitoring (per minute).
    "cpu_pct": ("CPU utilisation", "%", NEUTRAL),
    "cpu_credit_balance": ("CPU credit balance", "credits", HIGHER),
    "cpu_credit_usage": ("CPU credits used", "per minute", NEUTRAL),
    "burst_balance_pct": ("storage burst balance", "%", HIGHER),
    "read_iops": ("read IOPS", "/s", NEUTRAL),
    "write_iops": ("write IOPS", "/s", NEUTRAL),
    "disk_queue_depth": ("disk queue depth", "", NEUTRAL),
    "freeable_memory_mb": ("freeable memory", "MB", NEUTRAL),
}
# FIGURES name -> (the summary key naming the busiest device, its figure's
# summary name as a pattern, how its label names the device).
_BUSIEST = {
    "disk_util_pct": ("busiest_disk", "disk_{}_util_pct", "busiest disk"),
    "disk_await_ms": ("busiest_disk", "disk_{}_await_ms", "busiest disk"),
    "disk_iops": ("busiest_disk", "disk_{}_iops", "busiest disk"),
    "net_line_pct": ("busiest_net", "net_{}_line_pct", "busiest interface"),
}


def _figure(summary: dict, figure: str) -> dict | None:
    """A summary's entry for a FIGURES name (the busiest device's for disk_*, net_*)."""
    if figure in _BUSIEST:
        key, pattern, _ = _BUSIEST[figure]
        device = summary.get(key)
        return summary.get(pattern.format(device)) if device else None
    entry = summary.get(figure)
    return entry if isinstance(entry, dict) else None


def figure_rows(source: str, summary: dict) -> list[tuple[str, str, dict]]:
    """(figure, label, entry) of a source's summary, in FIGURES order; the
    busiest disk's label names the device."""
    rows = []
    for figure, (label, _unit, _direction) in FIGURES.items():
        entry = _figure(summary, figure)
        if entry is not None:
            if figure in _BUSIEST:
                key, _, words = _BUSIEST[figure]
                label = label.replace(words, f"{words.split()[1]} {summary[key]}")
            rows.append((figure, label, entry))
    return rows


def source_label(source: str) -> str | None:
    """ "client 2" for the second of several clients ("client2"), "target
    (<source>)" for a cloud's monitoring of it, the SOURCE_LABELS entry
    otherwise, None for a source not stored as metrics."""
    if re.fullmatch(r"client[2-9]|client[1-9][0-9]", source):
        return f"client {source[len('client') :]}"
    if is_cloud(source):
        return f"target ({source})"
    return SOURCE_LABELS.get(source)


def summary_metrics(summaries: dict[str, dict]) -> dict[str, float]:
    """{"telemetry.<source>.<figure>.<stat>": value} of a cell's summaries
    ({source: summarize(...)}): what recording stores as Measurements."""
    return {
        f"{METRIC_PREFIX}{source}.{figure}.{stat}": float(entry[stat])
        for source, summary in summaries.items()
        if source_label(source)
        for figure, _label, entry in figure_rows(source, summary)
        for stat in STATS
        if isinstance(entry.get(stat), (int, float))
    }


def metric(name: str) -> Metric | None:
    """The catalog row of a stored telemetry summary ("target CPU busy, mean"),
    or None when the name is not one. Its kind is CONTEXT: the trend page
    shows it, change detection alerts on the tool's figures only."""
    if not name.startswith(METRIC_PREFIX):
        return None
    source, _, rest = name[len(METRIC_PREFIX) :].partition(".")
    figure, _, stat = rest.rpartition(".")
    if figure not in FIGURES or stat not in STATS or not source_label(source):
        return None
    label, unit, direction = FIGURES[figure]
    # A maximum is context, never judged: only the mean carries a direction.
    return Metric(
        f"{source_label(source)} {label}, {stat}",
        unit,
        direction if stat == "mean" else NEUTRAL,
        CONTEXT,
    )
