"""The result document of DESIGN.md, built from the database.

`python -m runners run` prints the same shape from an inline run:
{"plan": {...}, "cells": [{"axes", "repeat", "status", "error", "metrics",
"groups", "command", "facts"}]}.
"""

from __future__ import annotations

from collections import defaultdict

from benchapp.models import Cell, Run
from benchapp.store import measurestore


def result_document(run: Run) -> dict:
    """The whole run as plain JSON-able data (never secrets: commands are masked)."""
    cells = list(Cell.objects.filter(run=run).order_by("index"))
    metrics: dict[int, dict] = defaultdict(dict)
    groups: dict[int, dict[str, dict]] = defaultdict(dict)
    for m in measurestore.read(runs=[run.pk]):
        if m.group:
            groups[m.cell_id].setdefault(m.group, {})[m.metric] = m.value
        else:
            metrics[m.cell_id][m.metric] = m.value
    return {
        "run": {
            "id": run.pk,
            "status": run.status,
            "name": run.name,
            "tool": run.tool,
            "created_at": run.created_at.isoformat(),
            "tags": run.tags,
        },
        "plan": run.document,
        "cells": [
            {
                "axes": c.axes,
                "repeat": c.repeat,
                "status": c.status,
                "error": c.error,
                "metrics": metrics[c.pk],
                "groups": [{"labels": _labels(g), "metrics": m} for g, m in groups[c.pk].items()]
                or ([{"labels": {}, "metrics": metrics[c.pk]}] if metrics[c.pk] else []),
                "command": c.command,
                "facts": c.facts,
                "attempt": c.attempt,
                **({"repeat_stop": c.repeat_stop} if c.repeat_stop else {}),
            }
            for c in cells
        ],
    }


def _labels(group: str) -> dict:
    labels = {}
    for part in group.split(","):
        key, _, value = part.partition("=")
        labels[key] = value
    return labels
