"""A cell's timeline: the tool's per-second series and the telemetry of the
machines and the database it used, on one time axis (the cell page's chart)."""

from __future__ import annotations

from benchapp.charts import downsample_arrays
from benchapp.models import Cell, CellSeries
from benchapp.seriesstore import TOOL, unpack

# Points per series sent to the page: the chart is at most ~1,200 px wide.
MAX_POINTS = 1200
# Telemetry shown first (the rest are one click away in the chart's menu).
DEFAULT_TELEMETRY = ("cpu_busy_pct", "hit_ratio_pct", "commits_per_s")


def cell_timeline(cell: Cell) -> dict:
    """{"sources": {source: {metric: {"x", "y", "total"[, "low", "high"]}}}, "tool": [...],
    "defaults": [...]}
    of the cell's latest attempt; per-core CPU series are left out (the
    summary keeps them)."""
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
    return {"sources": sources, "tool": sorted(sources.get(TOOL, {})), "defaults": defaults}


# The summary rows the cell page shows per source: (figure, label, unit).
SUMMARY_FIGURES = (
    ("cpu_busy_pct", "CPU busy", "%"),
    ("cpu_iowait_pct", "CPU iowait", "%"),
    ("cpu_steal_pct", "CPU steal", "%"),
    ("load1", "load (1 min)", ""),
    ("procs_running", "run queue", ""),
    ("mem_used_mb", "memory used", "MB"),
    ("swap_in_pages_s", "swap in", "pages/s"),
    ("swap_out_pages_s", "swap out", "pages/s"),
    ("ctxt_per_s", "context switches", "/s"),
    ("questions_per_s", "queries", "/s"),
    ("commits_per_s", "commits", "/s"),
    ("hit_ratio_pct", "buffer/cache hit ratio", "%"),
    ("buffer_pool_disk_reads_per_s", "buffer pool reads from disk", "/s"),
    ("blocks_read_per_s", "blocks read from disk", "/s"),
    ("row_lock_waits_per_s", "row lock waits", "/s"),
    ("deadlocks_per_s", "deadlocks", "/s"),
    ("threads_running", "threads running", ""),
    ("active_backends", "active backends", ""),
    ("waiting_locks", "waiting locks", ""),
    # The cloud's monitoring of a managed target (CloudWatch, per minute).
    ("cpu_pct", "CPU utilisation", "%"),
    ("cpu_credit_balance", "CPU credit balance", "credits"),
    ("cpu_credit_usage", "CPU credits used", "per minute"),
    ("burst_balance_pct", "storage burst balance", "%"),
    ("read_iops", "read IOPS", "/s"),
    ("write_iops", "write IOPS", "/s"),
    ("disk_queue_depth", "disk queue depth", ""),
    ("freeable_memory_mb", "freeable memory", "MB"),
)


def summary_rows(facts: dict) -> list[dict]:
    """[{"source", "label", "mean", "max", "unit"}] of a cell's telemetry summaries,
    the busiest disk of each host included."""
    rows = []
    for source, summary in (facts.get("telemetry") or {}).items():
        figures = list(SUMMARY_FIGURES)
        disk = summary.get("busiest_disk")
        if disk:
            figures += [
                (f"disk_{disk}_util_pct", f"disk {disk} utilisation", "%"),
                (f"disk_{disk}_await_ms", f"disk {disk} await", "ms"),
                (f"disk_{disk}_iops", f"disk {disk} IOPS", "/s"),
            ]
        for name, label, unit in figures:
            entry = summary.get(name)
            if isinstance(entry, dict):
                rows.append({"source": source, "label": label, "unit": unit, **entry})
    return rows
