"""Chart data: the sweep/bar/box chart of a pivot and the per-second series."""

from __future__ import annotations

from benchapp.models import SeriesPoint
from benchapp.pivot import CellInfo, pivot, pivot_json
from runners.tools import metric as catalog_metric


def chart_data(observations, view: dict, tool: str = "") -> dict:
    """Data of the sweep/bar/box charts: the first metric against view["chart_x"],
    one line per combination of the other chosen dimensions; repeats are folded
    into each point (mean, min–max error bars, raw values for box plots)."""
    x = view.get("chart_x") or (view["rows"] or ["repeat"])[0]
    lines = [d for d in view["rows"] + view["columns"] if d not in (x, "repeat", "metric")]
    metrics = view["metric"] if isinstance(view["metric"], list) else [view["metric"]]
    table = pivot(observations, [x], lines, metrics[0])
    numeric = all(
        isinstance(r["key"][0], (int, float)) and not isinstance(r["key"][0], bool)
        for r in table["rows"]
    )
    # metric_info: the catalog row, so the y axis title carries the unit.
    return {
        "x_dim": x,
        "line_dims": lines,
        "metric": metrics[0],
        "numeric_x": numeric,
        "metric_info": catalog_metric(tool, metrics[0]).to_dict(),
        **pivot_json(table),
    }


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
