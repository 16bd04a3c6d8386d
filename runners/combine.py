"""Figures of several clients that loaded one target together, combined.

Pure functions; runners/cell.py calls combine() after the clients' measured
phases ended. The rule for each metric comes from its kind in the tool's
catalog (runners/metrics.py), never from its name:

    throughput  summed (each client's rate over the same, overlapping window)
    count       summed
    latency     an average: weighted by each client's count (the tool's
                LATENCY_WEIGHT metric, e.g. sysbench's events); a minimum:
                the minimum; a maximum: the maximum; a percentile: read from
                the merged histogram when every client printed one (sysbench
                --histogram, fio json+ clat bins), else the clients' maximum, named as an upper
                bound in the warnings
    time        the longest client's
    parameter   client 1's (every client ran the same params)

Per-second series are aligned on wall-clock seconds and summed (throughput)
or maxed (latency), over the seconds every client reported.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from runners.metrics import Metric
from runners.results import Result, Series

# A client below this share of the clients' median throughput did not load
# the target like the others (slower host, longer network path): flagged.
UNEVEN_SHARE = 0.8
# Clients whose measured windows overlap less than this share of the whole
# span did not load the target together: the cell is not counted.
MIN_OVERLAP = 0.9
# Latency names: "latency_p95_ms", "latency_p99_9_ms", "p99_latency_ms"...
_PERCENTILE = re.compile(r"(?:^|_)p(\d+(?:_\d+)?)(?:_|$)")

Catalog = Callable[[str], Metric]


@dataclass(frozen=True)
class Window:
    """When one client's measured command ran (wall-clock epoch seconds)."""

    start: float
    end: float


# ---------------------------------------------------------------- windows


def measured_window(started: float, finished: float, elapsed: float | None) -> Window:
    """When one client measured: from its command's start to the end of the
    run time the tool reported (or its time limit), never past the command's
    exit; the command's whole wall-clock span when neither is known.

    The seconds an SSH session takes to close after the tool ended (over a
    second on a busy host) are not measuring, and would make clients that
    ran together look apart.
    """
    if not elapsed or elapsed <= 0:
        return Window(started, finished)
    return Window(started, min(finished, started + elapsed))


def client_window(execution, offset: float | None, elapsed: float | None) -> tuple[Window, str]:
    """One client's measured window on the worker's clock, and whose clock
    timed it ("client" or "worker").

    The client's own stamps (Execution.client_started / client_finished:
    read on the client right before and after the tool), less its clock's
    offset to the worker, are when the tool really ran there: the worker's
    stamps come before the SSH session opened, so a slow login would not show.
    Without them (or without an offset) the worker's stamps stand in.
    """
    started, finished = execution.client_started, execution.client_finished
    if offset is None or started is None:
        return measured_window(execution.started, execution.finished, elapsed), "worker"
    end = finished - offset if finished is not None else execution.finished
    return measured_window(started - offset, max(end, started - offset), elapsed), "client"


def start_spread(windows: Sequence[Window]) -> float:
    """Seconds between the first and the last client's start."""
    starts = [w.start for w in windows]
    return max(starts) - min(starts)


def overlap_share(windows: Sequence[Window]) -> float:
    """The share (0..1) of the whole span (first start to last end) when every
    client ran: 1.0 when all started and ended together."""
    span = max(w.end for w in windows) - min(w.start for w in windows)
    overlap = min(w.end for w in windows) - max(w.start for w in windows)
    if span <= 0:
        return 1.0
    return max(0.0, overlap) / span


def uneven_clients(throughputs: Sequence[float]) -> list[int]:
    """1-based numbers of the clients below UNEVEN_SHARE × the median throughput."""
    median = statistics.median(throughputs)
    return [i for i, value in enumerate(throughputs, 1) if value < UNEVEN_SHARE * median]


# ---------------------------------------------------------------- histograms


def merge_histograms(histograms: Sequence[Sequence[Sequence[float]]]) -> list[list[float]]:
    """One histogram [[value, count], ...] (sorted by value) of several.

    sysbench's buckets are fixed (the same values on every client), so equal
    values are the same bucket and their counts add.
    """
    counts: dict[float, float] = {}
    for histogram in histograms:
        for value, count in histogram:
            counts[float(value)] = counts.get(float(value), 0) + count
    return [[value, counts[value]] for value in sorted(counts)]


def histogram_percentile(histogram: Sequence[Sequence[float]], pct: float) -> float | None:
    """The smallest bucket value with at least pct % of the counts at or below
    it (sysbench's own definition); None for an empty histogram."""
    total = sum(count for _, count in histogram)
    if total <= 0:
        return None
    wanted = math.ceil(total * pct / 100)
    seen = 0
    for value, count in sorted(histogram):
        seen += count
        if seen >= wanted and count:
            return value
    return max(value for value, count in histogram if count)


def percentile_of(name: str) -> float | None:
    """95.0 for "latency_p95_ms", 99.9 for "latency_p99_9_ms", None otherwise."""
    match = _PERCENTILE.search(name)
    return float(match.group(1).replace("_", ".")) if match else None


# ---------------------------------------------------------------- metrics


def combine_metrics(
    per_client: Sequence[dict[str, float]],
    catalog: Catalog,
    *,
    weight: str | None = None,
    histograms: Callable[[str], Sequence[Sequence] | None] = lambda name: None,
) -> tuple[dict[str, float], list[str]]:
    """(combined metrics, warnings) of the clients' metric dicts.

    Only metrics every client reported are combined: a sum over some of the
    clients would be a wrong number. weight: the count metric averages are
    weighted by; histograms: a percentile metric's name -> each client's
    histogram behind it, or None unless every client printed one.
    """
    names = [n for n in per_client[0] if all(n in m for m in per_client[1:])]
    combined: dict[str, float] = {}
    warnings: list[str] = []
    for name in names:
        values = [m[name] for m in per_client]
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            continue
        kind = catalog(name).kind
        if kind in ("throughput", "count"):
            combined[name] = sum(values)
        elif kind == "time":
            combined[name] = max(values)
        elif kind == "latency":
            value, note = _latency(name, values, per_client, weight, histograms(name))
            combined[name] = value
            if note:
                warnings.append(note)
        else:
            combined[name] = values[0]
    return combined, warnings


def _latency(name, values, per_client, weight, histograms) -> tuple[float, str]:
    """A latency of the clients together, and a warning when it is only a bound."""
    pct = percentile_of(name)
    if pct is not None:
        if histograms:
            found = histogram_percentile(merge_histograms(histograms), pct)
            if found is not None:
                return found, ""
        return max(values), (
            f"{name}: the clients' maximum, an upper bound of the combined percentile "
            "(no latency histogram from every client)"
        )
    if "min" in name.split("_"):
        return min(values), ""
    if "max" in name.split("_"):
        return max(values), ""
    weights = [m.get(weight, 0) for m in per_client] if weight else []
    if weights and sum(weights) > 0:
        return sum(v * w for v, w in zip(values, weights)) / sum(weights), ""
    return max(values), f"{name}: the clients' maximum (no count to weight the average by)"


# ---------------------------------------------------------------- series


def combine_series(series: Sequence[Series], starts: Sequence[float], catalog: Catalog) -> Series:
    """The clients' per-interval series on one wall-clock timeline, summed.

    Each client's t counts seconds from its own start; t + start, rounded to
    the second, is the wall-clock second a value belongs to. Only seconds
    every client reported are kept (a partial sum would dip), t counted from
    the first client's start. Throughput and count columns are summed,
    latency columns take the maximum, others client 1's.
    """
    if not series or any(not s.get("t") for s in series):
        return {}
    origin = min(starts)
    by_second: list[dict[int, dict[str, float]]] = []
    for one, start in zip(series, starts):
        rows: dict[int, dict[str, float]] = {}
        for i, t in enumerate(one["t"]):
            second = round(start - origin + t)
            rows[second] = {n: col[i] for n, col in one.items() if n != "t"}
        by_second.append(rows)
    common = sorted(set.intersection(*(set(rows) for rows in by_second)))
    names = [n for n in series[0] if n != "t" and all(n in s for s in series)]
    out: Series = {"t": [float(second) for second in common]}
    for name in names:
        kind = catalog(name).kind
        column = []
        for second in common:
            values = [rows[second].get(name) for rows in by_second]
            if any(not isinstance(v, (int, float)) for v in values):
                column.append(None)
            elif kind in ("throughput", "count"):
                column.append(sum(values))
            elif kind == "latency":
                column.append(max(values))
            else:
                column.append(values[0])
        out[name] = column
    return out


# ---------------------------------------------------------------- results


def combine(
    results: Sequence[Result],
    starts: Sequence[float],
    catalog: Catalog,
    *,
    weight: str | None = None,
) -> Result:
    """One Result of the clients' Results (client i is results[i - 1]).

    metrics and series combined (see the module docstring); groups: the
    combined blocks of a multi-block output, then every client's blocks
    labelled client=i (the per-client figures); facts: each client's under
    "clients"; warnings: the bounds and the clients' own warnings.
    """
    histograms = [r.facts.get("histogram") for r in results]
    histograms = histograms if all(histograms) else None
    metrics, warnings = combine_metrics(
        [r.metrics for r in results],
        catalog,
        weight=weight,
        histograms=lambda name: _histograms_behind(name, results),
    )
    groups = _combined_groups(results, catalog, weight) if len(results[0].groups) > 1 else []
    for i, result in enumerate(results, 1):
        blocks = result.groups or [{"labels": {}, "metrics": result.metrics}]
        groups += [
            {"labels": {**block.get("labels", {}), "client": i}, "metrics": block["metrics"]}
            for block in blocks
        ]
    for i, result in enumerate(results, 1):
        warnings += [f"client {i}: {w}" for w in result.warnings]
    facts = {"clients": [r.facts for r in results]}
    if histograms:
        facts["histogram"] = merge_histograms(histograms)
    return Result(
        metrics=metrics,
        groups=groups,
        series=combine_series([r.series for r in results], starts, catalog),
        errors=[f"client {i}: {e}" for i, r in enumerate(results, 1) for e in r.errors],
        facts=facts,
        warnings=list(dict.fromkeys(warnings)),
    )


def _histograms_behind(name: str, results: Sequence[Result]) -> list | None:
    """Every client's histogram behind the percentile metric `name`, or None.

    A tool prints one latency histogram (facts "histogram": sysbench) or
    several (facts "latency_histograms": fio json+, read and write apart),
    each keyed by its percentiles' name without the percentile:
    "read_clat_us" behind "read_clat_p95_us" and "read_clat_p99_us".
    """
    key = _PERCENTILE.sub("_", name, count=1)
    found = [
        r.facts.get("latency_histograms", {}).get(key) or r.facts.get("histogram") for r in results
    ]
    return found if all(found) else None


def _combined_groups(results: Sequence[Result], catalog: Catalog, weight) -> list[dict]:
    """The blocks of a multi-block output (fio jobs, redis tests), combined
    block by block: blocks match by their labels."""
    groups = []
    for block in results[0].groups:
        labels = block.get("labels", {})
        same = [
            next((g["metrics"] for g in r.groups if g.get("labels", {}) == labels), None)
            for r in results
        ]
        if all(m is not None for m in same):
            metrics, _ = combine_metrics(same, catalog, weight=weight)
            groups.append({"labels": dict(labels), "metrics": metrics})
    return groups
