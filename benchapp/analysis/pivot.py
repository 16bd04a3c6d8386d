"""Pivot tables: observations grouped into rows × columns of one statistic.

Pure functions over plain values (no queries), shared by the run results
page, comparisons, the share page, exports and the API.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from django.conf import settings

STATISTICS = ("mean", "median", "p95", "n", "min", "max", "stddev", "cv")


@dataclass
class CellInfo:
    """What the pivot needs to know about one cell (and its run)."""

    id: int
    run_id: int
    run_label: str
    key: str
    repeat: int
    target: str
    axes: dict
    status: str
    error: str = ""
    client_bound: bool = False
    attempt: int = 1
    tool_version: str = ""
    facts: dict = field(default_factory=dict)
    environment_id: str | None = None  # its environment snapshot (benchapp.store.envstore)

    def dimension(self, name: str):
        if name == "target":
            return self.axes.get("target", self.target)
        if name == "repeat":
            return self.repeat
        if name == "run":
            return self.run_label
        if (
            name == "verdict" and name not in self.axes
        ):  # what limited the cell (runners.verdict), "none" when nothing
            return self.verdict
        return self.axes.get(name)

    @property
    def verdict(self) -> str | None:
        """The headline code of the cell's verdict (None without telemetry)."""
        return (self.facts.get("verdict") or {}).get("limit")


@dataclass
class Observation:
    cell: CellInfo
    group: str
    metric: str
    value: float

    def dimension(self, name: str):
        if name == "metric":
            return self.metric
        if name == "group":
            return self.group
        return self.cell.dimension(name)


@dataclass
class Stats:
    n: int = 0
    mean: float | None = None
    min: float | None = None
    max: float | None = None
    stddev: float | None = None
    cv: float | None = None
    median: float | None = None
    p95: float | None = None
    noisy: bool = False
    values: list = field(default_factory=list)
    # Why the failed cells of this bucket gave no value ("t2 #1: prepare
    # reported an error: ..."): a bucket of failures only has n = 0.
    errors: list = field(default_factory=list)
    client_bound: bool = False
    # What limited the bucket's cells (their verdicts' headline codes, runners.verdict).
    limits: list = field(default_factory=list)
    # The lowest and highest value the tool itself reported around this mean
    # (mysqlslap's min_s/max_s over its iterations), when it reports them.
    lo: float | None = None
    hi: float | None = None

    def get(self, statistic: str):
        return getattr(self, statistic)

    def to_dict(self) -> dict:
        return {
            k: getattr(self, k)
            for k in (
                "n",
                "mean",
                "min",
                "max",
                "stddev",
                "cv",
                "median",
                "p95",
                "noisy",
                "values",
                "errors",
                "client_bound",
                "limits",
                "lo",
                "hi",
            )
        }


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by linear interpolation between the two
    nearest ranks (numpy's default): with few repeats, p95 lies between the
    two highest instead of jumping to the maximum."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q / 100
    low = math.floor(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


def describe(values: list[float], threshold: float | None = None) -> Stats:
    """mean, n, min, max, median, p95, sample stddev (n-1; 0 for one value)
    and cv = stddev/|mean|."""
    if threshold is None:
        threshold = settings.BENCHBOARD_NOISE_CV
    if not values:
        return Stats()
    # Plain floats: statistics.stdev computes with Fractions, 10x slower here.
    n = len(values)
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    cv = sd / abs(mean) if mean else None
    return Stats(
        n=len(values),
        mean=mean,
        min=min(values),
        max=max(values),
        stddev=sd,
        cv=cv,
        median=percentile(values, 50),
        p95=percentile(values, 95),
        noisy=cv is not None and cv > threshold,
        values=list(values),
    )


_RUN_LABEL = re.compile(r"#(\d+) ")


def _sort_key(value):
    """Numbers numerically, run labels ("#12 name") by run id, then text."""
    if isinstance(value, bool):
        return (1, str(value))
    if isinstance(value, (int, float)):
        return (0, value)
    match = _RUN_LABEL.match(str(value))
    if match:
        return (0, int(match.group(1)))
    return (1, str(value))


def _label(values: tuple) -> str:
    return " · ".join("" if v is None else str(v) for v in values) or "all"


def extremes_of(metric: str, available) -> tuple[str, str] | None:
    """The min/max companions of an average the tool reports ("avg_s" ->
    ("min_s", "max_s"), "latency_avg_ms" -> ("latency_min_ms", ...)), when
    both are among `available`."""
    parts = metric.split("_")
    if "avg" not in parts:
        return None
    i = parts.index("avg")
    lo, hi = ("_".join(parts[:i] + [w] + parts[i + 1 :]) for w in ("min", "max"))
    return (lo, hi) if lo in available and hi in available else None


def _ranker(order: dict | None, dims: list[str]):
    """Sort key of a row or column key: a dimension's values in the plan's
    order (`order` {dimension: [values]}), others numerically, then as text."""
    order = order or {}
    positions = {d: {_hashable(v): i for i, v in enumerate(order.get(d, ()))} for d in dims}

    def key(values):
        out = []
        for d, v in zip(dims, values):
            i = positions[d].get(_hashable(v))
            out.append((0, i) if i is not None else (1, *_sort_key(v)))
        return out

    return key


def _hashable(value):
    return (
        (type(value).__name__, value) if isinstance(value, (str, int, float, bool)) else str(value)
    )


def failure_text(cell: CellInfo) -> str:
    """One failed cell's line for a pivot cell's hover and row."""
    return f"{cell.key or 'cell'} #{cell.repeat}: {cell.error or cell.status}"


def _failure_keys(failures, metrics, rows, columns) -> dict[tuple, list[str]]:
    """{(row key, column key): [failure_text]} of failed cells, under each
    shown metric, so a target that failed everywhere keeps its rows."""
    found: dict[tuple, list[str]] = {}
    for cell in failures:
        for metric in metrics:
            o = Observation(cell, "", metric, math.nan)
            key = (tuple(o.dimension(d) for d in rows), tuple(o.dimension(d) for d in columns))
            lines = found.setdefault(key, [])
            if (text := failure_text(cell)) not in lines:
                lines.append(text)
    return found


def pivot(
    observations,
    rows,
    columns,
    metric,
    statistic="mean",
    threshold=None,
    extremes=None,
    order=None,
    failures=(),
) -> dict:
    """Group observations into a rows × columns table of one statistic.

    rows, columns: lists of dimension names (axes, target, repeat, run, metric, group).
    metric: a metric name or a list of names (with "metric" as a dimension to
    show several side by side, as in S2's TPS/QPS/latency table).
    extremes: {metric: (min metric, max metric)} (see extremes_of): each
    cell's Stats.lo/hi are the lowest min and highest max in its bucket.
    order: {dimension: [values]}, the plan's order of an axis's values.
    failures: failed or cancelled cells (CellInfo): their buckets get
    Stats.errors (n = 0 when nothing else is in them), so what failed keeps
    its row and column instead of vanishing from the table.
    Values are in repeat order. Returns {"rows": [{"key", "label"}],
    "columns": [...], "cells": [[Stats|None]], "margin": [Stats] (each row
    over all its columns), "statistic", ...}.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    rows, columns = list(rows), list(columns)
    companion = {
        name: (main, side)
        for main, pair in (extremes or {}).items()
        if main in metrics
        for side, name in zip(("lo", "hi"), pair)
    }
    buckets, row_margin, bounds = {}, {}, {}
    for o in observations:
        if o.metric in companion:
            main, side = companion[o.metric]
            o = Observation(o.cell, o.group, main, o.value)
            key = (tuple(o.dimension(d) for d in rows), tuple(o.dimension(d) for d in columns))
            bounds.setdefault(key, {}).setdefault(side, []).append(o.value)
            continue
        if o.metric not in metrics:
            continue
        rk = tuple(o.dimension(d) for d in rows)
        ck = tuple(o.dimension(d) for d in columns)
        buckets.setdefault((rk, ck), []).append(o)
        row_margin.setdefault(rk, []).append(o.value)
    failed = _failure_keys(failures, metrics, rows, columns)
    row_keys = sorted({rk for rk, _ in [*buckets, *failed]}, key=_ranker(order, rows))
    col_keys = sorted({ck for _, ck in [*buckets, *failed]}, key=_ranker(order, columns))
    table = []
    for rk in row_keys:
        line = []
        for ck in col_keys:
            obs = buckets.get((rk, ck))
            if not obs:
                line.append(Stats(errors=failed[(rk, ck)]) if (rk, ck) in failed else None)
                continue
            obs = sorted(obs, key=lambda o: (o.cell.run_id, o.cell.repeat))
            stats = describe([o.value for o in obs], threshold)
            stats.client_bound = any(o.cell.client_bound for o in obs)
            stats.limits = sorted({o.cell.verdict for o in obs if o.cell.verdict})
            found = bounds.get((rk, ck), {})
            stats.lo = min(found["lo"]) if found.get("lo") else None
            stats.hi = max(found["hi"]) if found.get("hi") else None
            stats.errors = failed.get((rk, ck), [])
            line.append(stats)
        table.append(line)
    return {
        "rows": [{"key": list(k), "label": _label(k)} for k in row_keys],
        "columns": [{"key": list(k), "label": _label(k)} for k in col_keys],
        "cells": table,
        "margin": [describe(row_margin.get(rk, []), threshold) for rk in row_keys],
        "row_dims": rows,
        "column_dims": columns,
        "metrics": metrics,
        "statistic": statistic,
    }


def pivot_json(table: dict) -> dict:
    """The pivot as JSON-ready data (Stats -> dicts)."""
    return {
        **table,
        "cells": [[s.to_dict() if s else None for s in line] for line in table["cells"]],
        "margin": [s.to_dict() for s in table["margin"]],
    }
