"""A cell's timeline: the tool's per-second series and the telemetry of the
machines and the database it used, on one time axis (the cell page's chart):
seconds from the measure's start, so the warmup's and the stress start's
telemetry are at negative times, and the phases' boundaries are marked."""

from __future__ import annotations

from benchapp.analysis.charts import downsample_arrays
from benchapp.models import Cell, CellSeries
from benchapp.store.seriesstore import TOOL, unpack
from runners import telemetry

# Points per series sent to the page: the chart is at most ~1,200 px wide.
MAX_POINTS = 1200
# Telemetry shown first (the rest are one click away in the chart's menu).
DEFAULT_TELEMETRY = ("cpu_busy_pct", "hit_ratio_pct", "commits_per_s")


def cell_timeline(cell: Cell) -> dict:
    """{"sources": {source: {metric: {"x", "y", "total"[, "low", "high"]}}}, "tool": [...],
    "defaults": [...], "phases": [{"phase", "start", "end"}]}
    of the cell's latest attempt; per-core CPU series are left out (the
    summary keeps them). phases: warmup, stress and measure as sampled
    (runners.cell.phase_times), in seconds on the chart's axis; [] for a cell
    recorded without telemetry or before the phases were kept."""
    rows = CellSeries.objects.filter(cell=cell, attempt=cell.attempt).values_list(
        "source", "metric", "t", "values", "lows", "highs"
    )
    sources: dict[str, dict] = {}
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
    defaults = [
        f"{source}:{metric}"
        for source, metrics in sources.items()
        if source != TOOL
        for metric in DEFAULT_TELEMETRY
        if metric in metrics
    ]
    return {
        "sources": sources,
        "tool": sorted(sources.get(TOOL, {})),
        "defaults": defaults,
        "phases": (cell.facts or {}).get("telemetry_phases") or [],
    }


def summary_rows(facts: dict) -> list[dict]:
    """[{"source", "label", "mean", "max", "unit"}] of a cell's telemetry
    summaries (the figures of runners.telemetry.FIGURES)."""
    return [
        {"source": source, "label": label, "unit": telemetry.FIGURES[figure][1], **entry}
        for source, summary in (facts.get("telemetry") or {}).items()
        for figure, label, entry in telemetry.figure_rows(source, summary)
    ]
