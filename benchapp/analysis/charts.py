"""Chart data: the sweep/bar/box chart of a pivot and the per-second series."""

from __future__ import annotations

import numpy as np

from benchapp.analysis.defaults import BAR, LINE, is_number
from benchapp.analysis.pivot import CellInfo, pivot, pivot_json
from benchapp.store import seriesstore
from runners.tools import metric as catalog_metric

MAX_PANELS = 6  # more panels than this and the facet values join the line names
# Statistics a chart can draw as its points; the others (n, stddev, cv) are
# not on the metric's scale, so the chart keeps the mean for them.
POINT_STATISTICS = ("mean", "median", "p95")
# A positive numeric x whose largest value is this many times its smallest
# gets a log axis: threads 4–256 on a linear axis crowd 4, 8 and 16 together.
LOG_SPAN = 10
# Values this many times apart on a chart whose x is text (S3's 4k and 32m
# block sizes as bars) get a log y axis: on a linear one the small bars are
# invisible beside the big ones.
LOG_VALUE_SPAN = 100


def spans_decade(xs, span: float = LOG_SPAN) -> bool:
    """True when positive numbers span `span` times (a decade) or more."""
    return bool(xs) and min(xs) > 0 and max(xs) / min(xs) >= span


def _point_values(table: dict) -> list[float]:
    """Every mean, min and max of the chart's cells (what its y axis must hold)."""
    return [v for line in table["cells"] for s in line if s and s.n for v in (s.min, s.mean, s.max)]


def chart_data(
    observations,
    view: dict,
    tool: str = "",
    order: dict | None = None,
    extremes: dict | None = None,
    units: dict | None = None,
    failures=(),
) -> dict:
    """Data of the results chart: the first metric against view["chart_x"].

    The other chosen dimensions (repeats and metrics aside) give one line
    (or bar colour) per run and target, else per the first of them; the rest
    are panels ("read-only and read-write apart"). Repeats fold into each
    point: mean, min–max error bars (the tool's own min–max over its
    iterations when it reports one, extremes), and the raw values for markers
    and box plots. A numeric x spanning a decade gets a log axis; its ticks
    are the parameter's values (discrete: no 1.5 threads); text values
    (engines, block sizes) are categories, and values 100× apart over them
    get a log y axis (log_y).
    Failed cells (`failures`) are points with errors and no value: the
    chart draws them as marked gaps whose hover gives the error.
    """
    x = view.get("chart_x") or (view["rows"] or ["repeat"])[0]
    dims = [d for d in view["rows"] + view["columns"] if d not in (x, "repeat", "metric")]
    series = [d for d in ("run", "target") if d in dims] or dims[:1]
    facets = [d for d in dims if d not in series]
    metrics = view["metric"] if isinstance(view["metric"], list) else [view["metric"]]
    table = pivot(
        observations,
        [x],
        facets + series,
        metrics[0],
        order=order,
        extremes=extremes,
        failures=failures,
    )
    if len({tuple(c["key"][: len(facets)]) for c in table["columns"]}) > MAX_PANELS:
        series, facets = facets + series, []
    info = catalog_metric(tool, metrics[0], (units or {}).get(metrics[0], ""))
    for col in table["columns"]:
        col["facet"] = _label(col["key"][: len(facets)]) if facets else ""
        col["series"] = _label(col["key"][len(facets) :]) if series else info.label
    xs = [r["key"][0] for r in table["rows"]]
    numeric = bool(xs) and all(is_number(v) for v in xs)
    chart = view.get("chart") or (LINE if numeric else BAR)
    values = _point_values(table)
    return {
        "x_dim": x,
        "line_dims": series,
        "facet_dims": facets,
        "facets": list(dict.fromkeys(c["facet"] for c in table["columns"])),
        "metric": metrics[0],
        "type": chart,
        "numeric_x": numeric,
        "log_x": numeric and chart == LINE and spans_decade(xs),
        # a text axis (bars, boxes) over values 100× apart: a log y axis
        "log_y": not (numeric and chart == LINE) and spans_decade(values, LOG_VALUE_SPAN),
        # where a failed point sits on a log y axis (which has no 0)
        "y_floor": min(values) if values and min(values) > 0 else 0,
        # the parameter's own values as ticks: threads 1, 2, 4, never 1.5
        "x_ticks": sorted(set(xs)) if numeric else [],
        # what the points are: mean, median or p95 of each cell's repeats
        "point_statistic": (
            view.get("statistic") if view.get("statistic") in POINT_STATISTICS else "mean"
        ),
        # the catalog row, so the y axis title carries the unit
        "metric_info": info.to_dict(),
        **pivot_json(table),
    }


def _label(values) -> str:
    return " · ".join(str(v) for v in values)


def cell_series(cells: dict[int, CellInfo], metric: str, max_points: int) -> list[dict]:
    """Per-second points of the cells' latest attempts, downsampled (one query)."""
    stored = seriesstore.read({cell_id: cell.attempt for cell_id, cell in cells.items()}, metric)
    empty = (np.empty(0), np.empty(0))
    out = []
    for cell_id, cell in cells.items():
        t, values = stored.get(cell_id, empty)
        xs, ys = downsample_arrays(t, values, max_points)
        out.append(
            {
                "cell": cell_id,
                "label": f"{cell.run_label} {cell.key} #{cell.repeat}",
                "x": xs,
                "y": ys,
                "total": len(t),
            }
        )
    return out


def downsample(points: list[tuple[float, float]], max_points: int) -> list[tuple[float, float]]:
    """downsample_arrays for a list of (t, value) points."""
    if not points:
        return []
    t, values = (np.asarray(column, dtype=float) for column in zip(*points))
    return list(zip(*downsample_arrays(t, values, max_points)))


def downsample_arrays(
    t: np.ndarray, values: np.ndarray, max_points: int
) -> tuple[list[float], list[float]]:
    """Min/max buckets: keep the first and last points and, in each bucket, the
    lowest and highest value in time order, so spikes survive (LTTB would
    smooth a one-second stall away). Returns at most max_points points, as
    two lists (the only Python objects made are the ones sent)."""
    n = len(t)
    if max_points < 4 or n <= max_points:
        keep = np.arange(n) if n <= max(max_points, 2) else np.array([0, n - 1])
        return t[keep].tolist(), values[keep].tolist()
    buckets = (max_points - 2) // 2
    size = (n - 2) / buckets
    keep = [0]
    for b in range(buckets):
        lo, hi = 1 + int(b * size), 1 + int((b + 1) * size)
        if lo >= hi:
            continue
        chunk = values[lo:hi]
        pair = {lo + int(np.argmin(chunk)), lo + int(np.argmax(chunk))}
        keep.extend(sorted(pair))
    keep.append(n - 1)
    return t[keep].tolist(), values[keep].tolist()
