"""The view a results page opens with, chosen from the plan's axes.

No scenario is named here: the rows, columns and chart follow from which
axes vary and whether their values are numbers, the metric from the tool's
registry (`default_view(axes)` in runners/tools: the number its studies read).

- Repeats fold into each cell's n (min–max and, for a few, every value
  shown); "repeat" is a row or column only when asked for.
- Several metrics side by side (sysbench's TPS, QPS, latency): the metrics
  are the columns, every varying axis a row.
- Otherwise the numeric axis with the most values (a sweep: threads, cores,
  volumes) is the column; the other axes, the target first, are rows. With
  no numeric axis the target is the row and the other axes the columns.
- The output's groups (several blocks in one cell's output) count as an
  axis when the tool's view names "group".
- Chart: that numeric axis as x and a line chart; else the first categorical
  axis that is not the target, as grouped bars (see benchapp.analysis.charts for the
  lines and panels).
"""

from __future__ import annotations

from runners import metrics as catalog
from runners.tools import TOOLS

LINE, BAR, BOX = "line", "bar", "box"
CHARTS = (LINE, BAR, BOX)


def is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def varying_dimensions(cells) -> dict[str, list]:
    """{dimension: distinct values} of the axes (plan order) and the target
    that take more than one value in these cells."""
    values: dict[str, list] = {}
    for cell in cells:
        for name in [*cell.axes, "target"]:
            seen = values.setdefault(name, [])
            value = cell.dimension(name)
            if value not in seen:
                seen.append(value)
    return {name: vals for name, vals in values.items() if len(vals) > 1}


def tool_view(tool: str, axes: list[str]) -> dict:
    """The tool's registry view: which metric(s) its studies read."""
    module = TOOLS.get(tool.replace("-", "_"))
    if module is None:
        return catalog.view(["target"], [], None)
    return module.default_view(list(axes))


def series_metric(tool: str, metric) -> str:
    """The per-second metric to plot first ("" when the tool has none)."""
    module = TOOLS.get(tool.replace("-", "_"))
    series = tuple(getattr(module, "SERIES", ()) or ()) if module else ()
    first = metric[0] if isinstance(metric, list) and metric else metric
    return first if first in series else (series[0] if series else "")


def default_view(tool: str, cells, axes: list[str]) -> dict:
    """The pivot and chart settings a run (or comparison) opens with."""
    dims = varying_dimensions(cells)
    metric = tool_view(tool, axes)
    numeric = [d for d, vals in dims.items() if all(is_number(v) for v in vals)]
    categorical = [d for d in dims if d not in numeric]
    if "target" in categorical:  # the target first: "one row (or line) per target"
        categorical.remove("target")
        categorical.insert(0, "target")
    if "group" in metric["rows"] + metric["columns"]:
        # the output's own blocks (redis-benchmark's tests in one run) are a dimension too
        categorical.insert(0, "group")
        dims["group"] = []
    sweep = max(numeric, key=lambda d: len(dims[d])) if numeric else None
    metrics = metric["metric"]
    if isinstance(metrics, list) and len(metrics) > 1:
        rows, columns = list(dims) or ["target"], ["metric"]
    elif len(dims) <= 1:
        rows, columns = list(dims) or ["target"], []
    elif sweep:
        rows, columns = categorical + [d for d in numeric if d != sweep], [sweep]
    else:
        rows, columns = categorical[:1], categorical[1:]
    if sweep:
        x, chart = sweep, LINE
    else:
        others = [d for d in categorical if d != "target"]
        x, chart = (others or categorical or ["target"])[0], BAR
    return {
        "rows": rows,
        "columns": columns,
        "metric": metrics,
        "statistic": "mean",
        "chart_x": x,
        "chart": chart,
        "extra_metrics": list(metric.get("extra_metrics") or []),
        "series_metric": series_metric(tool, metrics),
    }
