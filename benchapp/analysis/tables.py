"""The pivot as template-ready rows: formatted numbers, hover text, deltas."""

from __future__ import annotations

from benchapp.analysis import significance
from benchapp.analysis.pivot import Stats


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


def error_cell(stats: Stats) -> dict:
    """A pivot cell whose cells all failed: marked, the errors on hover and
    under the mark (the first one; how many more)."""
    first = stats.errors[0]
    more = len(stats.errors) - 1
    return {
        "text": "failed",
        "failed": True,
        "errors": stats.errors,
        "title": "\n".join(stats.errors),
        "error": first + (f" (and {more} more)" if more else ""),
        "noisy": False,
        "n": 0,
        "spread": "",
        "client_bound": False,
    }


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
            if not stats.n:  # only failed cells here: an error cell, not a blank
                cells.append(error_cell(stats))
                continue
            value = stats.get(statistic)
            cell = {
                "text": f"{value:.1%}" if statistic == "cv" and value is not None else fmt(value),
                "title": hover(stats),
                "noisy": stats.noisy,
                "n": stats.n,
                "spread": spread(stats),
                "client_bound": stats.client_bound,
                "limits": stats.limits,
                # measured while other processes used the CPU (runners.verdict)
                "disturbed": "disturbed" in stats.limits,
                # shown under the figure only when a rule found a limit
                "limited_by": ", ".join(code for code in stats.limits if code != "none"),
            }
            if stats.limits:  # the verdict of the cells under this figure (runners.verdict)
                cell["title"] += " · limited by: " + ", ".join(stats.limits)
            if stats.errors:  # some repeats failed: the mean is of the others
                cell["errors"] = stats.errors
                cell["title"] += " · failed: " + "; ".join(stats.errors)
            delta = deltas_[i][j] if deltas_ else None
            if delta:
                # coloured better/worse only when significant (benchapp.analysis.significance)
                cell["better"] = delta["better"]
                cell["verdict"] = delta["verdict"]
                cell["delta"] = significance.describe(delta)
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
