"""A cell's timeline: the tool's per-second series and the telemetry of the
machines and the database it used, on one time axis (the cell page's chart):
seconds from the measure's start, so the warmup's and the stress start's
telemetry are at negative times, and the phases' boundaries are marked."""

from __future__ import annotations

from benchapp.analysis.charts import downsample_arrays
from benchapp.models import Cell, CellSeries
from benchapp.store.seriesstore import TOOL, unpack
from runners import telemetry, tools

# Points per series sent to the page: the chart is at most ~1,200 px wide.
MAX_POINTS = 1200
# The machine whose CPU the timeline opens on: the one the tool ran on with
# the target (a local cell's "host"), else the target's, else the client's.
CPU_SOURCES = ("host", "target", "client")
CPU_FIGURE = "cpu_busy_pct"


def cell_timeline(cell: Cell, tool: str | None = None) -> dict:
    """{"sources": {source: {metric: {"x", "y", "total"[, "low", "high"]}}},
    "tool": [...], "tool_default": name, "defaults": ["source:metric"],
    "labels": {"source:metric": words}, "units": {"source:metric": unit},
    "source_labels": {source: words},
    "phases": [{"phase", "start", "end"}]} of the cell's latest attempt;
    per-core CPU series are left out (the summary keeps them).

    The chart opens on the tool's main rate (runners.tools.main_metric of its
    series, else its first series that is not all zero) and the machine's
    CPU: never on a series of zeros (err/s, a MyISAM cell's commits).
    phases: warmup, stress and measure as sampled (runners.cell.phase_times),
    in seconds on the chart's axis; [] for a cell recorded without telemetry
    or before the phases were kept."""
    tool = cell.run.tool if tool is None else tool  # the run's tool: its catalog and main metric
    rows = CellSeries.objects.filter(cell=cell, attempt=cell.attempt).values_list(
        "source", "metric", "t", "values", "lows", "highs"
    )
    sources: dict[str, dict] = {}
    empty: set[str] = set()
    for source, metric, t, values, lows, highs in rows.order_by("source", "metric"):
        if source != TOOL and metric.startswith("cpu") and metric[3:4].isdigit():
            continue
        times, numbers = unpack(t), unpack(values)
        xs, ys = downsample_arrays(times, numbers, MAX_POINTS)
        entry = {"x": xs, "y": ys, "total": len(times)}
        if lows is not None and len(times) <= MAX_POINTS:
            # Downsampled by retention: the minute means, with each minute's
            # min and max drawn as a band (a cell is hours, not 20 h of minutes).
            entry.update(low=unpack(lows).tolist(), high=unpack(highs).tolist())
        sources.setdefault(source, {})[metric] = entry
        if not numbers.size or not numbers.any():
            empty.add(f"{source}:{metric}")
    names = sorted(sources.get(TOOL, {}))
    lively = [n for n in names if f"{TOOL}:{n}" not in empty]
    labels, units = _words(tool, sources)
    return {
        "sources": sources,
        "tool": names,
        "tool_default": tools.main_metric(tool, lively) or (lively or names or [""])[0],
        "defaults": _machine_cpu(sources, empty),
        "labels": labels,
        "units": units,
        # the telemetry list's groups in words ("database", "client 2")
        "source_labels": {s: telemetry.source_label(s) or s for s in sources if s != TOOL},
        "phases": (cell.facts or {}).get("telemetry_phases") or [],
    }


def _machine_cpu(sources: dict, empty: set) -> list[str]:
    """["host:cpu_busy_pct"]: the first CPU_SOURCES's CPU series that was sampled."""
    for source in CPU_SOURCES:
        key = f"{source}:{CPU_FIGURE}"
        if CPU_FIGURE in sources.get(source, {}) and key not in empty:
            return [key]
    return []


def _words(tool: str, sources: dict) -> tuple[dict, dict]:
    """({"source:metric": label}, {"source:metric": unit}) for the chart's
    lists, legends and axes: the tool's catalog for its series, the
    telemetry's FIGURES ("host CPU busy", "%") for the rest."""
    labels, units = {}, {}
    for source, metrics in sources.items():
        for metric in metrics:
            key = f"{source}:{metric}"
            if source == TOOL:
                found = tools.metric(tool, metric)
                labels[key], units[key] = found.label, found.unit
            elif metric in telemetry.FIGURES:
                label, unit, _direction = telemetry.FIGURES[metric]
                labels[key] = f"{telemetry.source_label(source) or source} {label}"
                units[key] = unit
            else:
                labels[key], units[key] = f"{source} {metric}", ""
    return labels, units


def summary_rows(facts: dict) -> list[dict]:
    """[{"source", "label", "mean", "max", "unit"}] of a cell's telemetry
    summaries (the figures of runners.telemetry.FIGURES)."""
    return [
        {"source": source, "label": label, "unit": telemetry.FIGURES[figure][1], **entry}
        for source, summary in (facts.get("telemetry") or {}).items()
        for figure, label, entry in telemetry.figure_rows(source, summary)
    ]
