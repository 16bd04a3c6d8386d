"""Chart data: the sweep/bar/box chart of a pivot and the per-second series."""

from __future__ import annotations

from benchapp.defaults import BAR, LINE, is_number
from benchapp.models import SeriesPoint
from benchapp.pivot import CellInfo, pivot, pivot_json
from runners.tools import metric as catalog_metric

MAX_PANELS = 6  # more panels than this and the facet values join the line names


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
    and box plots. A numeric x spanning two orders of magnitude gets a log axis.
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
    return {
        "x_dim": x,
        "line_dims": series,
        "facet_dims": facets,
        "facets": list(dict.fromkeys(c["facet"] for c in table["columns"])),
        "metric": metrics[0],
        "type": chart,
        "numeric_x": numeric,
        "log_x": numeric and chart == LINE and min(xs) > 0 and max(xs) / min(xs) >= 100,
        # the catalog row, so the y axis title carries the unit
        "metric_info": info.to_dict(),
        **pivot_json(table),
    }


def _label(values) -> str:
    return " · ".join(str(v) for v in values)


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
        out.append(
            {
                "cell": cell_id,
                "label": f"{cell.run_label} {cell.key} #{cell.repeat}",
                "x": [p[0] for p in pts],
                "y": [p[1] for p in pts],
                "total": len(points.get(cell_id, [])),
            }
        )
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
        chunk = inner[int(b * size) : int((b + 1) * size)]
        if not chunk:
            continue
        lo = min(chunk, key=lambda p: p[1])
        hi = max(chunk, key=lambda p: p[1])
        out.extend(sorted({lo, hi}, key=lambda p: p[0]))
    out.append(points[-1])
    return out
