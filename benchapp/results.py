"""Reading results: observations, pivot tables, default views, downsampling.

The pure functions here (pivot, default_settings, downsample, deltas) take
plain values and are shared by the run results page, comparisons, the share
page, exports and the API. `load_observations` is the one place that reads
Measurements for display: only each cell's latest attempt counts (earlier
attempts' rows stay in the database for the record).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from django.conf import settings

from benchapp.models import Cell, Measurement, Run, SeriesPoint

STATISTICS = ("mean", "n", "min", "max", "stddev", "cv")
# Dimensions every observation has besides the plan's axes.
BUILTIN_DIMENSIONS = ("target", "repeat", "run", "metric", "group")
# Metrics computed from others at load time: name -> (unit, function of a cell's metrics).
DERIVED = {
    "iops": ("IOPS", ("read_iops", "write_iops"),
             lambda m: _sum(m, "read_iops", "write_iops")),
    "bw_mb_s": ("MB/s", ("read_bw_kib_s", "write_bw_kib_s"),
                lambda m: _scaled(_sum(m, "read_bw_kib_s", "write_bw_kib_s"), 1.024e-3)),
}


def _sum(metrics: dict, *names):
    values = [metrics[n] for n in names if n in metrics]
    return sum(values) if values else None


def _scaled(value, factor):
    return None if value is None else value * factor


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

    def dimension(self, name: str):
        if name == "target":
            return self.axes.get("target", self.target)
        if name == "repeat":
            return self.repeat
        if name == "run":
            return self.run_label
        return self.axes.get(name)


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
    noisy: bool = False
    values: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    client_bound: bool = False

    def get(self, statistic: str):
        return getattr(self, statistic)

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("n", "mean", "min", "max", "stddev", "cv",
                                               "noisy", "values", "errors", "client_bound")}


def describe(values: list[float], threshold: float | None = None) -> Stats:
    """mean, n, min, max, sample stddev (n-1; 0 for one value) and cv = stddev/|mean|."""
    if threshold is None:
        threshold = settings.BENCHBOARD_NOISE_CV
    if not values:
        return Stats()
    # Plain floats: statistics.stdev computes with Fractions, 10x slower here.
    n = len(values)
    mean = math.fsum(values) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    cv = sd / abs(mean) if mean else None
    return Stats(n=len(values), mean=mean, min=min(values), max=max(values), stddev=sd, cv=cv,
                 noisy=cv is not None and cv > threshold, values=list(values))


# ------------------------------------------------------------------ loading


def cell_infos(runs: list[Run], cell_ids=None) -> dict[int, CellInfo]:
    """CellInfo by cell id for the runs (one query; tuples, not model
    instances: a comparison page reads a thousand cells)."""
    labels = {r.pk: run_label(r) for r in runs}
    qs = Cell.objects.filter(run_id__in=list(labels))
    if cell_ids:
        qs = qs.filter(pk__in=cell_ids)
    rows = qs.order_by("run_id", "index").values_list(
        "id", "run_id", "key", "repeat", "target_name", "axes", "status", "error",
        "client_bound", "attempt", "tool_version", "facts")
    return {row[0]: CellInfo(row[0], row[1], labels[row[1]], row[2], row[3], row[4],
                             row[5] or {}, row[6], row[7], row[8], row[9], row[10],
                             row[11] or {})
            for row in rows}


def run_label(run: Run) -> str:
    return f"#{run.pk} {run.name}"


def available_metrics(run_ids) -> list[str]:
    """Metric names stored for the runs, plus the DERIVED ones they allow
    (one index-only query on (run, metric))."""
    names = set(Measurement.objects.filter(run_id__in=list(run_ids)).values_list(
        "metric", flat=True).distinct())
    names |= {d for d, (_u, sources, _f) in DERIVED.items() if names & set(sources)}
    return sorted(names)


def load_observations(cells: dict[int, CellInfo], metrics=None,
                      all_groups: bool = False) -> list[Observation]:
    """Measurements of the cells' latest attempts, plus DERIVED metrics (one query).

    metrics: the names to read (None: all); a page reads only what it shows,
    which on a 10,000-measurement run is a twentieth of the rows.
    Reads by (run, metric) index and drops earlier attempts in Python: a join
    on cell.attempt would make PostgreSQL scan the cells table.
    """
    run_ids = sorted({c.run_id for c in cells.values()})
    qs = Measurement.objects.filter(run_id__in=run_ids)
    wanted = None
    if metrics is not None:
        wanted = set(metrics)
        for name in metrics:
            wanted |= set(DERIVED.get(name, ("", ()))[1])
        qs = qs.filter(metric__in=sorted(wanted))
    if not all_groups:
        qs = qs.filter(group="")
    observations, per_cell = [], {}
    for cell_id, attempt, group, metric, value in qs.values_list(
            "cell_id", "attempt", "group", "metric", "value").iterator(chunk_size=5000):
        cell = cells.get(cell_id)
        if cell is None or attempt != cell.attempt:
            continue
        observations.append(Observation(cell, group, metric, value))
        per_cell.setdefault((cell_id, group), {})[metric] = value
    for name, (_unit, _sources, fn) in DERIVED.items():
        if wanted is not None and name not in wanted:
            continue
        for (cell_id, group), values in per_cell.items():
            value = fn(values)
            if value is not None and name not in values:
                observations.append(Observation(cells[cell_id], group, name, value))
    return observations


def metric_names(observations) -> list[str]:
    return sorted({o.metric for o in observations})


def axis_names(cells: dict) -> list[str]:
    """Axis names of the cells, in plan order."""
    names = []
    for c in cells.values():
        for key in c.axes:
            if key not in names:
                names.append(key)
    return names


def dimension_names(cells: dict) -> list[str]:
    """Axis names followed by the built-in dimensions."""
    names = axis_names(cells)
    return names + [d for d in BUILTIN_DIMENSIONS if d not in names]


# -------------------------------------------------------------------- pivot


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


def pivot(observations, rows, columns, metric, statistic="mean", threshold=None) -> dict:
    """Group observations into a rows × columns table of one statistic.

    rows, columns: lists of dimension names (axes, target, repeat, run, metric, group).
    metric: a metric name or a list of names (with "metric" as a dimension to
    show several side by side, as in S2's TPS/QPS/latency table).
    Returns {"rows": [{"key", "label"}], "columns": [...], "cells": [[Stats|None]],
    "margin": [Stats] (each row over all its columns), "statistic", ...}.
    """
    metrics = [metric] if isinstance(metric, str) else list(metric)
    rows, columns = list(rows), list(columns)
    buckets, row_margin = {}, {}
    for o in observations:
        if o.metric not in metrics:
            continue
        rk = tuple(o.dimension(d) for d in rows)
        ck = tuple(o.dimension(d) for d in columns)
        buckets.setdefault((rk, ck), []).append(o)
        row_margin.setdefault(rk, []).append(o.value)
    row_keys = sorted({rk for rk, _ in buckets}, key=lambda k: [_sort_key(v) for v in k])
    col_keys = sorted({ck for _, ck in buckets}, key=lambda k: [_sort_key(v) for v in k])
    table = []
    for rk in row_keys:
        line = []
        for ck in col_keys:
            obs = buckets.get((rk, ck))
            if not obs:
                line.append(None)
                continue
            stats = describe([o.value for o in obs], threshold)
            stats.client_bound = any(o.cell.client_bound for o in obs)
            line.append(stats)
        table.append(line)
    return {
        "rows": [{"key": list(k), "label": _label(k)} for k in row_keys],
        "columns": [{"key": list(k), "label": _label(k)} for k in col_keys],
        "cells": table,
        "margin": [describe(row_margin[rk], threshold) for rk in row_keys],
        "row_dims": rows, "column_dims": columns, "metrics": metrics, "statistic": statistic,
    }


def chart_data(observations, view: dict) -> dict:
    """Data of the sweep/bar/box charts: the first metric against view["chart_x"],
    one line per combination of the other chosen dimensions; repeats are folded
    into each point (mean, min–max error bars, raw values for box plots)."""
    x = view.get("chart_x") or (view["rows"] or ["repeat"])[0]
    lines = [d for d in view["rows"] + view["columns"] if d not in (x, "repeat", "metric")]
    metrics = view["metric"] if isinstance(view["metric"], list) else [view["metric"]]
    table = pivot(observations, [x], lines, metrics[0])
    numeric = all(isinstance(r["key"][0], (int, float)) and not isinstance(r["key"][0], bool)
                  for r in table["rows"])
    return {"x_dim": x, "line_dims": lines, "metric": metrics[0], "numeric_x": numeric,
            **pivot_json(table)}


def cell_choices(cells: dict[int, CellInfo], several_runs: bool) -> list[list]:
    """[id, label] of every cell, for the series picker (sent as JSON: a
    thousand <option>s rendered by the template engine cost 100 ms)."""
    return [[c.id, (f"{c.run_label} " if several_runs else "") + f"{c.key} #{c.repeat}"]
            for c in cells.values()]


def failed_cells(cells: dict[int, CellInfo]) -> list[CellInfo]:
    return [c for c in cells.values() if c.status in (Cell.FAILED, Cell.CANCELLED)]


def pivot_json(table: dict) -> dict:
    """The pivot as JSON-ready data (Stats -> dicts)."""
    return {**table,
            "cells": [[s.to_dict() if s else None for s in line] for line in table["cells"]],
            "margin": [s.to_dict() for s in table["margin"]]}


def deltas(table: dict, baseline: str, dimension: str = "run") -> list[list[dict | None]]:
    """Difference of each cell against the baseline column (same row, same
    other column components, `dimension` replaced by baseline), with spread.

    Each entry: {"delta", "pct", "spread"} where spread = sqrt(sd_a² + sd_b²),
    the stddev of the difference of two independent means' samples.
    """
    dims = table["column_dims"]
    if dimension not in dims:
        return [[None] * len(table["columns"]) for _ in table["rows"]]
    pos = dims.index(dimension)
    index = {tuple(c["key"]): i for i, c in enumerate(table["columns"])}
    out = []
    for line in table["cells"]:
        row = []
        for col, stats in zip(table["columns"], line):
            key = list(col["key"])
            key[pos] = baseline
            base_i = index.get(tuple(key))
            base = line[base_i] if base_i is not None else None
            if key == col["key"] or not stats or not base or base.mean is None:
                row.append(None)
                continue
            delta = stats.mean - base.mean
            row.append({"delta": delta, "pct": delta / base.mean if base.mean else None,
                        "spread": math.hypot(stats.stddev or 0, base.stddev or 0)})
        out.append(row)
    return out


# ---------------------------------------------------------- default settings


def default_settings(tool: str, axes: list[str]) -> dict:
    """Pivot settings that reproduce each study's own table (scenarios.md)."""
    def first(*candidates):
        return next((a for a in candidates if a in axes), None)

    others = [a for a in axes if a not in ("target",)]
    if tool == "mysqlslap":
        if "auto_generate_sql_write_number" in axes:  # S5: spread of repeats visible
            return _s(["auto_generate_sql_write_number"], ["repeat"], "qps")
        col = first("load_type", "concurrency", *others)
        row = "target" if "target" in axes or not others else (others[1:] or ["repeat"])[0]
        return _s([row], [col] if col and col != row else ["repeat"], "avg_s")  # S1
    if tool == "sysbench":
        stress = first("stress.cpu", "stress.load")
        if stress:  # S2
            return _s([stress, "repeat"], ["metric"], ["tps", "qps", "latency_avg_ms"])
        if "threads" in axes:  # S4
            rows = (["read_only"] if "read_only" in axes else []) + ["threads"]
            return _s(rows, ["target"], "tps", chart_x="threads")
        return _s([others[0] if others else "target"], ["repeat"], "tps")
    if tool == "fio":  # S3
        col = first("volumes", "numjobs", "bs", *[a for a in others if a != "rw"])
        return _s(["rw"] if "rw" in axes else ["target"], [col or "repeat"], "iops",
                  extra_metrics=["bw_mb_s"])
    if tool == "pgbench":
        row = first("clients", "jobs", *others) or "target"
        return _s([row], ["target" if "target" in axes and row != "target" else "repeat"], "tps")
    return _s(["target"], ["repeat"], None)


def _s(rows, columns, metric, chart_x=None, extra_metrics=()):
    return {"rows": rows, "columns": columns, "metric": metric, "statistic": "mean",
            "chart_x": chart_x or rows[0],
            "extra_metrics": list(extra_metrics)}


# ------------------------------------------------------------------ series


def cell_series(cells: dict[int, CellInfo], metric: str, max_points: int) -> list[dict]:
    """Per-second points of the cells' latest attempts, downsampled (one query)."""
    points = {}
    qs = SeriesPoint.objects.filter(cell_id__in=list(cells), metric=metric).order_by("cell_id", "t")
    for cell_id, attempt, t, value in qs.values_list("cell_id", "attempt", "t", "value"):
        if attempt == cells[cell_id].attempt:
            points.setdefault(cell_id, []).append((t, value))
    out = []
    for cell_id, cell in cells.items():
        pts = downsample(points.get(cell_id, []), max_points)
        out.append({"cell": cell_id, "label": f"{cell.run_label} {cell.key} #{cell.repeat}",
                    "x": [p[0] for p in pts], "y": [p[1] for p in pts],
                    "total": len(points.get(cell_id, []))})
    return out


def downsample(points: list[tuple[float, float]], max_points: int) -> list[tuple[float, float]]:
    """Min/max buckets: keep the first and last points and, in each bucket, the
    lowest and highest value in time order, so spikes survive (LTTB would
    smooth a one-second stall away). Returns at most max_points points."""
    n = len(points)
    if max_points < 4 or n <= max_points:
        return list(points) if n <= max(max_points, 2) else [points[0], points[-1]]
    inner = points[1:-1]
    buckets = (max_points - 2) // 2
    size = len(inner) / buckets
    out = [points[0]]
    for b in range(buckets):
        chunk = inner[int(b * size):int((b + 1) * size)]
        if not chunk:
            continue
        lo = min(chunk, key=lambda p: p[1])
        hi = max(chunk, key=lambda p: p[1])
        out.extend(sorted({lo, hi}, key=lambda p: p[0]))
    out.append(points[-1])
    return out


# ------------------------------------------------------------- one service


def resolve_view(tool: str, cells: dict[int, CellInfo], metrics: list[str],
                 requested: dict | None = None) -> dict:
    """The pivot settings to show: the tool's defaults overridden by what the
    user picked (empty values keep the default); metrics not in the data fall
    back to the first one that is."""
    dims = dimension_names(cells)
    view = default_settings(tool, axis_names(cells))
    requested = dict(requested or {})
    for key in ("rows", "columns"):
        if key in requested:
            requested[key] = [d for d in requested[key] if d in dims]
    if requested.get("statistic") not in STATISTICS:
        requested.pop("statistic", None)
    for key, value in requested.items():
        if value not in (None, "", []):
            view[key] = value
    chosen = view["metric"] if isinstance(view["metric"], list) else [view["metric"]]
    chosen = [m for m in chosen if m in metrics]
    if not chosen:
        chosen = metrics[:1]
    view["metric"] = chosen if len(chosen) > 1 else (chosen[0] if chosen else "")
    if len(chosen) > 1 and "metric" not in view["rows"] + view["columns"]:
        view["columns"] = view["columns"] + ["metric"]
    if view.get("chart_x") not in view["rows"] + view["columns"]:
        view["chart_x"] = view["rows"][0] if view["rows"] else "repeat"
    return view


def results(runs: list[Run], requested: dict | None = None, cell_ids=None,
            baseline: str | None = None) -> dict:
    """Everything a results or comparison page shows, in three queries
    (cells, measurements; runs come in). With several runs "run" becomes a
    column dimension and `baseline` (a run label) gets deltas."""
    cells = cell_infos(runs, cell_ids)
    requested = dict(requested or {})
    all_groups = "group" in (requested.get("rows") or []) + (requested.get("columns") or [])
    metrics = available_metrics(r.pk for r in runs)
    view = resolve_view(runs[0].tool if runs else "", cells, metrics, requested)
    shown = view["metric"] if isinstance(view["metric"], list) else [view["metric"]]
    observations = load_observations(cells, shown, all_groups=all_groups)
    if len(runs) > 1 and "run" not in view["rows"] + view["columns"]:
        view["columns"] = ["run"] + view["columns"]
    table = pivot(observations, view["rows"], view["columns"], view["metric"] or [],
                  view["statistic"])
    labels = [run_label(r) for r in runs]
    baseline = baseline if baseline in labels else (labels[0] if labels else None)
    data = {
        "cells": cells, "metrics": metrics, "dimensions": dimension_names(cells),
        "view": view, "table": table, "failed": failed_cells(cells),
        "client_bound": [c for c in cells.values() if c.client_bound],
        "deltas": deltas(table, baseline) if len(runs) > 1 else None,
        "baseline": baseline, "run_labels": labels,
        "chart": chart_data(observations, view) if view["metric"] else None,
        "threshold": settings.BENCHBOARD_NOISE_CV,
    }
    data["display"] = display_rows(data)
    # A row's mean over its columns is meaningless when the columns are metrics.
    data["show_margin"] = len(table["columns"]) > 1 and "metric" not in view["columns"]
    data["metric_label"] = ", ".join(table["metrics"])
    return data


def _flatten_facts(facts: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in (facts or {}).items():
        if isinstance(value, dict):
            out.update(_flatten_facts(value, f"{prefix}{key}."))
        elif not isinstance(value, list):
            out[prefix + key] = value
    return out


# ------------------------------------------------------------ display


def fmt(value) -> str:
    """Numbers for tables: 4 significant digits, thousands separated."""
    if value is None:
        return ""
    if isinstance(value, int) or (abs(value) >= 1000 and float(value).is_integer()):
        return f"{value:,.0f}"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def hover(stats: Stats) -> str:
    text = (f"n={stats.n} · min {fmt(stats.min)} · max {fmt(stats.max)} · "
            f"stddev {fmt(stats.stddev)}")
    if stats.cv is not None:
        text += f" · cv {stats.cv:.1%}"
    return text


def display_rows(data: dict) -> list[dict]:
    """The pivot as template-ready rows: each cell's chosen statistic, its hover
    text, the min–max spread (visible when n > 1), noise and client-bound
    flags, and the delta against the baseline for comparisons."""
    table, statistic = data["table"], data["view"]["statistic"]
    deltas_ = data.get("deltas")
    out = []
    for i, (row, line) in enumerate(zip(table["rows"], table["cells"])):
        cells = []
        for j, stats in enumerate(line):
            if stats is None:
                cells.append(None)
                continue
            value = stats.get(statistic)
            cell = {"text": f"{value:.1%}" if statistic == "cv" and value is not None
                    else fmt(value),
                    "title": hover(stats), "noisy": stats.noisy, "n": stats.n,
                    "spread": f"{fmt(stats.min)}–{fmt(stats.max)}" if stats.n > 1 else "",
                    "client_bound": stats.client_bound}
            delta = deltas_[i][j] if deltas_ else None
            if delta:
                cell["delta"] = (f"{delta['delta']:+.4g}"
                                 + (f" ({delta['pct']:+.1%})" if delta["pct"] is not None else "")
                                 + f" ± {fmt(delta['spread'])}")
            cells.append(cell)
        margin = table["margin"][i]
        out.append({"label": row["label"], "cells": cells,
                    "margin": {"text": fmt(margin.mean), "title": hover(margin),
                               "noisy": margin.noisy}})
    return out
