"""Standard result formats (issue 14): a run as PerfKitBenchmarker sample JSON
lines and as Bencher Metric Format. The mapping is documented in docs/formats.md.

Only each cell's latest attempt is exported, like every results page.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict

from benchapp.archive import Scrubber
from benchapp.models import Measurement, Run


def _measurements(run: Run) -> list:
    rows = list(
        Measurement.objects.filter(run=run)
        .select_related("cell")
        .order_by("cell__index", "iteration", "group", "metric")
    )
    latest: dict[int, int] = {}
    for m in rows:
        latest[m.cell_id] = max(latest.get(m.cell_id, 0), m.attempt)
    return [m for m in rows if m.attempt == latest[m.cell_id]]


def to_pkb_lines(run: Run) -> str:
    """One PKB sample per measurement, as JSON lines (PKB's publisher layout),
    scrubbed of the team's secrets like every export."""
    scrub = Scrubber(run.team_id)
    run_uri = f"benchboard-{run.pk}"
    timestamp = (run.finished_at or run.created_at).timestamp()
    lines = []
    for m in _measurements(run):
        metadata = {
            **{str(k): v for k, v in m.cell.axes.items()},
            "cell_key": m.cell.key,
            "repeat": m.cell.repeat,
            "iteration": m.iteration,
            "target": m.cell.target_name,
            "tool": run.tool,
            "tool_version": m.cell.tool_version,
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
                        "sample_uri": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{run_uri}/{m.pk}")),
                        "product_name": "Benchboard",
                        "official": False,
                        "owner": "",
                    }
                ),
                sort_keys=True,
            )
        )
    return "\n".join(lines) + ("\n" if lines else "")


def to_bmf(run: Run) -> dict:
    """Bencher Metric Format: {benchmark: {measure: {value, lower_value, upper_value}}}.

    A benchmark is a cell key (plus its group); the value is the mean over the
    cell's repeats and iterations, the bounds their min and max.
    """
    values: dict[tuple, list[float]] = defaultdict(list)
    for m in _measurements(run):
        name = m.cell.key + (f" [{m.group}]" if m.group else "")
        values[(name or run.tool, m.metric)].append(m.value)
    out: dict[str, dict] = {}
    for (name, metric), points in sorted(values.items()):
        out.setdefault(name, {})[metric] = {
            "value": sum(points) / len(points),
            "lower_value": min(points),
            "upper_value": max(points),
        }
    return out
