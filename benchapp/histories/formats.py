"""Standard result formats (issue 14): a run as PerfKitBenchmarker sample JSON
lines and as Bencher Metric Format. The mapping is documented in docs/formats.md.

Only each cell's latest attempt is exported, like every results page.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict

from benchapp.histories.archive import Scrubber
from benchapp.models import Run
from benchapp.store import measurestore


def _measurements(run: Run) -> list[tuple]:
    """(cell, measurestore.Value) of each cell's latest measured attempt, in
    cell, iteration, group and metric order."""
    cells = {c.pk: c for c in run.cells.all()}
    rows = list(measurestore.read(runs=[run.pk], all_attempts=True))
    latest: dict[int, int] = {}
    for m in rows:
        latest[m.cell_id] = max(latest.get(m.cell_id, 0), m.attempt)
    kept = [(cells[m.cell_id], m) for m in rows if m.attempt == latest[m.cell_id]]
    return sorted(kept, key=lambda cm: (cm[0].index, cm[1].iteration, cm[1].group, cm[1].metric))


def to_pkb_lines(run: Run) -> str:
    """One PKB sample per measurement, as JSON lines (PKB's publisher layout),
    scrubbed of the team's secrets like every export."""
    scrub = Scrubber(run.team_id)
    run_uri = f"benchboard-{run.pk}"
    timestamp = (run.finished_at or run.created_at).timestamp()
    lines = []
    for cell, m in _measurements(run):
        metadata = {
            **{str(k): v for k, v in cell.axes.items()},
            "cell_key": cell.key,
            "repeat": cell.repeat,
            "iteration": m.iteration,
            "target": cell.target_name,
            "tool": run.tool,
            "tool_version": cell.tool_version,
            "run": run.pk,
        }
        if m.group:
            metadata["group"] = m.group
        lines.append(
            json.dumps(
                scrub(
                    {
                        "metric": m.metric,
                        "value": m.value,
                        "unit": m.unit,
                        "metadata": metadata,
                        "labels": ",".join(f"|{k}:{v}|" for k, v in sorted(metadata.items())),
                        "timestamp": timestamp,
                        "test": run.tool,
                        "run_uri": run_uri,
                        "sample_uri": _sample_uri(run_uri, m),
                        "product_name": "Benchboard",
                        "official": False,
                        "owner": "",
                    }
                ),
                sort_keys=True,
            )
        )
    return "\n".join(lines) + ("\n" if lines else "")


def _sample_uri(run_uri: str, m: measurestore.Value) -> str:
    """A stable id of one measurement: a UUID of what identifies it."""
    name = f"{run_uri}/{m.cell_id}/{m.attempt}/{m.iteration}/{m.group}/{m.metric}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def to_bmf(run: Run) -> dict:
    """Bencher Metric Format: {benchmark: {measure: {value, lower_value, upper_value}}}.

    A benchmark is a cell key (plus its group); the value is the mean over the
    cell's repeats and iterations, the bounds their min and max.
    """
    values: dict[tuple, list[float]] = defaultdict(list)
    for cell, m in _measurements(run):
        name = cell.key + (f" [{m.group}]" if m.group else "")
        values[(name or run.tool, m.metric)].append(m.value)
    out: dict[str, dict] = {}
    for (name, metric), points in sorted(values.items()):
        out.setdefault(name, {})[metric] = {
            "value": sum(points) / len(points),
            "lower_value": min(points),
            "upper_value": max(points),
        }
    return out
