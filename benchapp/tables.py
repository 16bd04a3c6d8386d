"""The pivot as template-ready rows: formatted numbers, hover text, deltas."""

from __future__ import annotations

from benchapp.pivot import Stats
from runners.tools import metric as catalog_metric


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
    text = f"n={stats.n} · min {fmt(stats.min)} · max {fmt(stats.max)} · stddev {fmt(stats.stddev)}"
    if stats.cv is not None:
        text += f" · cv {stats.cv:.1%}"
    return text


SHOW_VALUES_UP_TO = 5  # repeats listed one by one up to this many; min–max beyond


def spread(stats: Stats) -> str:
    """What varies under a mean: the repeats (each one when few, so an upset
    shows), and the tool's own min–max over its iterations when it reports them."""
    parts = []
    if 1 < stats.n <= SHOW_VALUES_UP_TO:
        parts.append(f"n={stats.n}: " + ", ".join(fmt(v) for v in stats.values))
    elif stats.n > SHOW_VALUES_UP_TO:
        parts.append(f"n={stats.n} · {fmt(stats.min)}–{fmt(stats.max)}")
    if stats.lo is not None and stats.hi is not None:
        parts.append(f"min–max {fmt(stats.lo)}–{fmt(stats.hi)}")
    return " · ".join(parts)


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
            cell = {
                "text": f"{value:.1%}" if statistic == "cv" and value is not None else fmt(value),
                "title": hover(stats),
                "noisy": stats.noisy,
                "n": stats.n,
                "spread": spread(stats),
                "client_bound": stats.client_bound,
            }
            delta = deltas_[i][j] if deltas_ else None
            if delta:
                # better/worse by the metric's direction in the catalog (None: neither)
                cell["better"] = _better(data, j, delta["delta"])
                cell["delta"] = (
                    f"{delta['delta']:+.4g}"
                    + (f" ({delta['pct']:+.1%})" if delta["pct"] is not None else "")
                    + f" ± {fmt(delta['spread'])}"
                )
            cells.append(cell)
        margin = table["margin"][i]
        out.append(
            {
                "label": row["label"],
                "cells": cells,
                "margin": {"text": fmt(margin.mean), "title": hover(margin), "noisy": margin.noisy},
            }
        )
    return out


def _better(data: dict, column: int, delta: float) -> bool | None:
    """Whether delta in this column is an improvement, by the metric's
    catalogued direction (the column's metric when metrics are columns)."""
    table, view = data["table"], data["view"]
    name = table["metrics"][0]
    if "metric" in table["column_dims"]:
        name = table["columns"][column]["key"][table["column_dims"].index("metric")]
    return catalog_metric(data.get("tool", ""), name).better(delta) if view else None
