"""Reading results: observations, pivot tables, default views, downsampling.

The pure functions here (pivot, default_settings, downsample) take
plain values and are shared by the run results page, comparisons, the share
page, exports and the API. `load_observations` is the one place that reads
Measurements for display: only each cell's latest attempt counts (earlier
attempts' rows stay in the database for the record).
"""

from __future__ import annotations

from django.conf import settings

from benchapp.analysis import client_load, costs, defaults, significance
from benchapp.analysis.charts import chart_data
from benchapp.analysis.pivot import STATISTICS, CellInfo, Observation, extremes_of, pivot
from benchapp.analysis.tables import display_rows
from benchapp.models import Cell, Run
from benchapp.store import measurestore
from runners import tools
from runners.tools import DERIVED

# Dimensions every observation has besides the plan's axes.
BUILTIN_DIMENSIONS = ("target", "repeat", "run", "metric", "group", "verdict")
# ------------------------------------------------------------------ loading


def cell_infos(runs: list[Run], cell_ids=None) -> dict[int, CellInfo]:
    """CellInfo by cell id for the runs (one query; tuples, not model
    instances: a comparison page reads a thousand cells)."""
    labels = {r.pk: run_label(r) for r in runs}
    qs = Cell.objects.filter(run_id__in=list(labels))
    if cell_ids:
        qs = qs.filter(pk__in=cell_ids)
    rows = qs.order_by("run_id", "index").values_list(
        "id",
        "run_id",
        "key",
        "repeat",
        "target_name",
        "axes",
        "status",
        "error",
        "client_bound",
        "attempt",
        "tool_version",
        "facts",
        "environment_id",
    )
    return {
        row[0]: CellInfo(
            row[0],
            row[1],
            labels[row[1]],
            row[2],
            row[3],
            row[4],
            row[5] or {},
            row[6],
            row[7],
            row[8],
            row[9],
            row[10],
            row[11] or {},
            row[12],
        )
        for row in rows
    }


def plan_order(runs: list[Run]) -> dict[str, list]:
    """{axis: values} in the order the plans list them (targets by their
    list), so tables and charts keep the study's order (read, write, key...)."""
    order: dict[str, list] = {}
    for run in runs:
        doc = run.document if isinstance(run.document, dict) else {}
        axes = dict(doc.get("axes") or {}) if isinstance(doc.get("axes"), dict) else {}
        targets = [t.get("name") if isinstance(t, dict) else t for t in doc.get("targets") or []]
        axes.setdefault("target", targets)
        for name, values in axes.items():
            if isinstance(values, list):
                seen = order.setdefault(name, [])
                seen += [v for v in values if v not in seen and not isinstance(v, (dict, list))]
    return order


def run_label(run: Run) -> str:
    return f"#{run.pk} {run.name}"


def available_metrics(run_ids) -> list[str]:
    """Metric names stored for the runs, plus the DERIVED ones they allow
    (one query of the runs' RunMetric totals)."""
    names = set(measurestore.metric_units(run_ids))
    names |= {d for d, (sources, _f) in DERIVED.items() if names & set(sources)}
    return sorted(names)


def metric_units(run_ids, tool: str) -> dict[str, str]:
    """{metric: unit} of stored measurements, for a tool the registry does
    not know (an import): the unit is then all that says which way is better.
    No query for a registry tool (its catalog says it)."""
    if tools.TOOLS.get((tool or "").replace("-", "_")):
        return {}
    return {m: u for m, u in measurestore.metric_units(run_ids).items() if u}


def load_observations(
    cells: dict[int, CellInfo], metrics=None, all_groups: bool = False
) -> list[Observation]:
    """Measurements of the cells' latest attempts, plus DERIVED metrics (two queries).

    metrics: the names to read (None: all); a page makes Observations only
    of what it shows. The runs' packed rows are read whole (one per cell).
    """
    run_ids = sorted({c.run_id for c in cells.values()})
    wanted = None
    if metrics is not None:
        wanted = set(metrics)
        for name in metrics:
            wanted |= set(DERIVED.get(name, ((), None))[0])
    rows = measurestore.read(runs=run_ids, metrics=wanted, group=None if all_groups else "")
    observations, per_cell = [], {}
    for m in rows:
        cell = cells.get(m.cell_id)
        if cell is None or m.attempt != cell.attempt:
            continue
        observations.append(Observation(cell, m.group, m.metric, m.value))
        per_cell.setdefault((m.cell_id, m.group), {})[m.metric] = m.value
    for name, (_sources, fn) in DERIVED.items():
        if wanted is not None and name not in wanted:
            continue
        for (cell_id, group), values in per_cell.items():
            value = fn(values)
            if value is not None and name not in values:
                observations.append(Observation(cells[cell_id], group, name, value))
    return observations


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


def cell_choices(cells: dict[int, CellInfo], several_runs: bool) -> list[list]:
    """[id, label] of every cell, for the series picker (sent as JSON: a
    thousand <option>s rendered by the template engine cost 100 ms)."""
    return [
        [c.id, (f"{c.run_label} " if several_runs else "") + f"{c.key} #{c.repeat}"]
        for c in cells.values()
    ]


def failed_cells(cells: dict[int, CellInfo]) -> list[CellInfo]:
    return [c for c in cells.values() if c.status in (Cell.FAILED, Cell.CANCELLED)]


# ---------------------------------------------------------- default settings


def default_settings(tool: str, axes: list[str], cells=()) -> dict:
    """The view a run opens with (benchapp.analysis.defaults): from which axes of the
    cells vary and the tool's registry metric."""
    return defaults.default_view(tool, list(cells), list(axes))


# ------------------------------------------------------------- one service

VIEW_KEYS = ("rows", "columns", "metric", "statistic", "chart_x", "chart")


def requested_view(query) -> dict:
    """The user's pivot choices from a query (a page's GET, a form's POST,
    the API's query_params: anything with get and getlist); names are
    checked against the data later, by resolve_view. The one reader of a
    view request, for pages and API alike."""
    req = {
        "rows": [v for v in query.getlist("rows") if v],
        "columns": [v for v in query.getlist("columns") if v],
        "metric": [v for v in query.getlist("metric") if v],
        "statistic": query.get("statistic") if query.get("statistic") in STATISTICS else "",
        "chart_x": query.get("chart_x", ""),
        "chart": query.get("chart") if query.get("chart") in defaults.CHARTS else "",
    }
    if len(req["metric"]) == 1:
        req["metric"] = req["metric"][0]
    return req


def resolve_view(
    tool: str, cells: dict[int, CellInfo], metrics: list[str], requested: dict | None = None
) -> dict:
    """The pivot settings to show: the defaults overridden by what the user
    picked (empty values keep the default; unknown names are dropped);
    metrics not in the data fall back to the first one that is."""
    dims = dimension_names(cells)
    view = default_settings(tool, axis_names(cells), cells.values())
    requested = {k: v for k, v in (requested or {}).items() if k in VIEW_KEYS}
    for key in ("rows", "columns"):
        if key in requested:
            requested[key] = [d for d in requested[key] if d in dims]
    if requested.get("statistic") not in STATISTICS:
        requested.pop("statistic", None)
    if requested.get("chart") not in defaults.CHARTS:
        requested.pop("chart", None)
    if requested.get("chart_x") not in dims:
        requested.pop("chart_x", None)
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
        view["chart_x"] = next(
            (d for d in view["rows"] + view["columns"] if d not in ("metric", "repeat")), "repeat"
        )
    if not requested.get("chart"):
        view["chart"] = ""  # line for a numeric x, bars otherwise (benchapp.analysis.charts)
    view["extra_metrics"] = [
        m
        for m in view.get("extra_metrics", [])
        if m in metrics and m not in chosen and len(chosen) == 1
    ]
    return view


def results(
    runs: list[Run], requested: dict | None = None, cell_ids=None, baseline: str | None = None
) -> dict:
    """Everything a results or comparison page shows, in three queries
    (cells, measurements; runs come in). With several runs "run" becomes a
    column dimension and `baseline` (a run label) gets deltas."""
    cells = cell_infos(runs, cell_ids)
    client_load.clear_shared(runs, cells)
    requested = dict(requested or {})
    metrics = available_metrics(r.pk for r in runs)
    tool = runs[0].tool if runs else ""
    units = metric_units([r.pk for r in runs], tool)
    view = resolve_view(tool, cells, metrics, requested)
    all_groups = "group" in view["rows"] + view["columns"]
    shown = view["metric"] if isinstance(view["metric"], list) else [view["metric"]]
    extremes = {m: pair for m in shown if (pair := extremes_of(m, metrics))}
    wanted = shown + view["extra_metrics"] + [n for pair in extremes.values() for n in pair]
    observations = load_observations(cells, wanted, all_groups=all_groups)
    if len(runs) > 1 and "run" not in view["rows"] + view["columns"]:
        side_by_side(view, bool(requested.get("columns")))
    labels = [run_label(r) for r in runs]
    baseline = baseline if baseline in labels else (labels[0] if labels else None)
    data = {
        "cells": cells,
        "metrics": metrics,
        "dimensions": dimension_names(cells),
        "view": view,
        "failed": failed_cells(cells),
        "client_bound": [c for c in cells.values() if c.client_bound],
        "client_load": client_load.summary(runs, cells),
        "costs": costs.costs(runs, shown, metrics),
        "baseline": baseline,
        "run_labels": labels,
        "order": {**plan_order(runs), "metric": shown},
        "tool": tool,
        "units": units,
        "catalog": tools.catalog(tool, metrics, units),
        "threshold": settings.BENCHBOARD_NOISE_CV,
        "test_method": significance.METHOD,
        "test_minimum": significance.minimum_repeats(),
    }
    data["chart"] = (
        chart_data(observations, view, tool, data["order"], extremes, units, data["failed"])
        if view["metric"]
        else None
    )
    data["tables"] = [
        _table(data, observations, metric, extremes, len(runs) > 1)
        for metric in [view["metric"] or []] + view["extra_metrics"]
    ]
    data.update(data["tables"][0])  # the main table: data["table"], ["display"], ...
    return data


def side_by_side(view: dict, columns_chosen: bool) -> None:
    """Several runs: the runs become the columns, side by side, and the
    default's own column dimensions move to the rows (run × load type made
    eleven columns with the deltas off-screen). Columns the user chose stay,
    after the run."""
    if columns_chosen:
        view["columns"] = ["run"] + view["columns"]
    else:
        view["rows"] = view["rows"] + [c for c in view["columns"] if c not in view["rows"]]
        view["columns"] = ["run"]


def _table(data: dict, observations, metric, extremes: dict, several_runs: bool) -> dict:
    view, tool, units = data["view"], data["tool"], data["units"]
    table = pivot(
        observations,
        view["rows"],
        view["columns"],
        metric,
        view["statistic"],
        extremes=extremes,
        order=data["order"],
        failures=data["failed"],
    )
    _title_metrics(table, tool)
    part = {
        "table": table,
        "deltas": significance.deltas(table, data["baseline"], tool, units=units)
        if several_runs
        else None,
    }
    part["display"] = display_rows({**data, **part})
    # A row's mean over its columns is meaningless when the columns are metrics.
    part["show_margin"] = len(table["columns"]) > 1 and "metric" not in view["columns"]
    part["metric_label"] = ", ".join(tools.metric(tool, m).title() for m in table["metrics"])
    # "Transactions per second (tps): higher is better", from the catalog
    rows = [tools.metric(tool, m, units.get(m, "")) for m in table["metrics"]]
    part["senses"] = [f"{r.title()}: {r.sense()}" for r in rows if r.sense()]
    return part


def _title_metrics(table: dict, tool: str) -> None:
    """Headers say "Transactions per second (tps)", not "tps"; a table with no
    column dimension has one column, headed by its metric."""
    for lines, dims in (
        (table["rows"], table["row_dims"]),
        (table["columns"], table["column_dims"]),
    ):
        if "metric" in dims:
            i = dims.index("metric")
            for line in lines:
                parts = [
                    tools.metric(tool, v).title() if j == i else ("" if v is None else str(v))
                    for j, v in enumerate(line["key"])
                ]
                line["label"] = " · ".join(parts)
    if not table["column_dims"] and len(table["columns"]) == 1:
        table["columns"][0]["label"] = ", ".join(
            tools.metric(tool, m).title() for m in table["metrics"]
        )


def flatten_facts(facts: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in (facts or {}).items():
        if isinstance(value, dict):
            out.update(flatten_facts(value, f"{prefix}{key}."))
        elif not isinstance(value, list):
            out[prefix + key] = value
    return out
