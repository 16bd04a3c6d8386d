"""Import of PerfKitBenchmarker samples (JSON lines) into the archive.

PKB writes one sample per line: metric, value, unit, timestamp, run_uri and
either a `metadata` object or the same collapsed into a `labels` string
("|key:value|,|key:value|"). The mapping to runs, cells and measurements is
documented in docs/formats.md:

- Samples exported by Benchboard (their metadata carry `cell_key`) come back
  as the cells they were: key, repeat, iteration, group, target.
- Other samples: the scalar metadata that differ between the file's samples
  are the cell's axes (and so its key); a PKB run (run_uri) of the same axes
  is one repeat; the same metric again within it is the next iteration.
  Metadata common to every sample are kept in each cell's facts.

A line that is not a sample (no metric, a value that is not a finite
number) refuses the whole file: a wrong number is worse than none.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import transaction

from benchapp.histories.archive import _typed
from benchapp.models import Artifact, Cell, Run, Team
from benchapp.store import artifactstore, measurestore
from runners.errors import ParseError
from runners.plan import combination_key

# Metadata keys of Benchboard's own export (benchapp.histories.formats.to_pkb_lines).
OWN_KEYS = ("cell_key", "repeat", "iteration", "group", "target", "tool", "tool_version", "run")
MAX_METRIC, MAX_UNIT, MAX_KEY = 60, 20, 500


@dataclass
class Sample:
    line: int
    metric: str
    value: float
    unit: str
    test: str
    run_uri: str
    timestamp: float | None
    metadata: dict


def labels_to_dict(labels: str) -> dict:
    """PKB's labels -> {"k1": "v1", "k2": "v2"}: "|k1:v1|,|k2:v2|" as its publisher
    writes them now, "|k1:v1||k2:v2|" as older versions did (and their stray
    "|[" between two labels)."""
    entries = [e for e in re.split(r"\|[,\[]?\|?", labels.strip().strip("|")) if e]
    return dict(entry.split(":", 1) if ":" in entry else (entry, "") for entry in entries)


def parse_samples(text: str) -> list[Sample]:
    """Every sample of a PKB JSON-lines text; ParseError naming the first bad line."""
    samples = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except ValueError as exc:
            raise ParseError(f"line {n} is not JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise ParseError(f"line {n} is not a JSON object")
        samples.append(_sample(n, raw))
    if not samples:
        raise ParseError("no samples")
    return samples


def _sample(n: int, raw: dict) -> Sample:
    metric, value, unit = raw.get("metric"), raw.get("value"), raw.get("unit") or ""
    if not isinstance(metric, str) or not metric.strip():
        raise ParseError(f"line {n} has no metric")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ParseError(f"line {n}: value {value!r} of {metric!r} is not a finite number")
    if len(metric) > MAX_METRIC or len(str(unit)) > MAX_UNIT:
        raise ParseError(f"line {n}: metric name or unit too long")
    metadata = raw.get("metadata")
    if not isinstance(metadata, dict):
        metadata = {k: _typed(v) for k, v in labels_to_dict(str(raw.get("labels") or "")).items()}
    timestamp = raw.get("timestamp")
    return Sample(
        n,
        metric.strip(),
        float(value),
        str(unit),
        str(raw.get("test") or ""),
        str(raw.get("run_uri") or ""),
        float(timestamp) if isinstance(timestamp, (int, float)) else None,
        metadata,
    )


def _scalar(value) -> bool:
    return isinstance(value, (str, int, float, bool)) or value is None


def _identity(value) -> tuple:
    """Equal for equal JSON values, as json.dumps would be, at a fraction of its cost
    for scalars (1, 1.0 and true stay three values)."""
    if _scalar(value):
        return (type(value).__name__, value)
    return ("json", json.dumps(value, sort_keys=True, default=str))


def _metadata_summary(samples: list[Sample]) -> tuple[list[str], dict]:
    """(varying, common): the scalar metadata keys whose value is not the same in
    every sample (a sample without the key counts as null), and the keys every
    sample holds with one same value, with that value.

    One pass over each sample's own keys: linear in the file. (Looking every
    key of the file up in every sample was samples x keys: 12 s for 270 KB.)"""
    values: dict[str, set] = defaultdict(set)
    holders: dict[str, int] = defaultdict(int)
    not_scalar: set[str] = set()
    for s in samples:
        for name, value in s.metadata.items():
            values[name].add(_identity(value))
            holders[name] += 1
            if not _scalar(value):
                not_scalar.add(name)
    for name, count in holders.items():
        if count < len(samples):
            values[name].add(_identity(None))  # the samples without it
    varying = sorted(n for n, seen in values.items() if len(seen) > 1 and n not in not_scalar)
    common = {n: v for n, v in samples[0].metadata.items() if len(values[n]) == 1}
    return varying, common


@dataclass
class _CellRows:
    key: str
    repeat: int
    axes: dict
    target: str
    facts: dict
    measurements: list  # (iteration, group, metric, value, unit)


def _cells_of_own_export(samples: list[Sample]) -> list[_CellRows]:
    cells: dict[tuple, _CellRows] = {}
    for s in samples:
        md = s.metadata
        key, repeat = str(md["cell_key"]), int(md.get("repeat") or 1)
        cell = cells.setdefault(
            (key, repeat),
            _CellRows(
                key,
                repeat,
                {k: v for k, v in md.items() if k not in OWN_KEYS},
                str(md.get("target") or "imported"),
                {"tool_version": str(md.get("tool_version") or "")},
                [],
            ),
        )
        cell.measurements.append(
            (int(md.get("iteration") or 0), str(md.get("group") or ""), s.metric, s.value, s.unit)
        )
    return list(cells.values())


def _cells_of_samples(samples: list[Sample]) -> list[_CellRows]:
    axes_names, common = _metadata_summary(samples)
    axis_set = set(axes_names)
    cells: dict[tuple, _CellRows] = {}
    repeats: dict[str, dict[str, int]] = defaultdict(dict)  # key -> run_uri -> repeat
    iterations: dict[tuple, int] = defaultdict(int)
    for s in samples:
        # From the sample's own keys: looking each axis up in each sample was quadratic.
        axes = dict(sorted((k, v) for k, v in s.metadata.items() if k in axis_set))
        key = combination_key(axes) or "imported"
        if len(key) > MAX_KEY:
            raise ParseError(
                f"line {s.line}: its varying metadata make a key over {MAX_KEY} characters"
            )
        repeat = repeats[key].setdefault(s.run_uri, len(repeats[key]) + 1)
        cell = cells.setdefault(
            (key, repeat),
            _CellRows(
                key,
                repeat,
                axes,
                str(axes.get("target") or "imported"),
                {"pkb_metadata": common, "run_uri": s.run_uri},
                [],
            ),
        )
        iteration = iterations[(key, repeat, s.metric)]
        iterations[(key, repeat, s.metric)] += 1
        cell.measurements.append((iteration, "", s.metric, s.value, s.unit))
    return list(cells.values())


def _axis_values(cells: list[_CellRows]) -> dict[str, list]:
    """Each axis's distinct values in first-seen order (for the run's document)."""
    axes: dict[str, dict] = {}
    for c in cells:
        for k, v in c.axes.items():
            axes.setdefault(k, {}).setdefault(json.dumps(v, sort_keys=True, default=str), v)
    return {k: list(values.values()) for k, values in axes.items()}


def _when(samples: list[Sample], pick) -> datetime:
    stamps = [s.timestamp for s in samples if s.timestamp is not None]
    return datetime.fromtimestamp(pick(stamps), UTC) if stamps else datetime.now(UTC)


@transaction.atomic
def import_samples(team: Team, text: str, *, name: str = "", user=None) -> Run:
    """Store a PKB JSON-lines text as a new imported Run; ParseError if unreadable."""
    samples = parse_samples(text)
    own = all("cell_key" in s.metadata for s in samples)
    cells = _cells_of_own_export(samples) if own else _cells_of_samples(samples)
    limit = settings.BENCHBOARD_CELL_LIMIT
    if len(cells) > limit:  # the same cap as a plan's (benchapp/plans/planning.py)
        raise ParseError(
            f"these samples make {len(cells)} cells; the limit is {limit} "
            "(BENCHBOARD_CELL_LIMIT). Split the file."
        )
    tests = {s.test for s in samples}
    tool = (tests.pop() if len(tests) == 1 else "")[:20] or "pkb"
    axes = _axis_values(cells)
    targets = sorted({c.target for c in cells})
    name = name or f"imported PKB {tool}"
    run = Run.objects.create(
        team=team,
        name=name,
        tool=tool,
        origin="import",
        status=Run.SUCCEEDED,
        created_by=user,
        document={
            "name": name,
            "tool": tool,
            "targets": [{"name": t} for t in targets],
            "axes": axes,
        },
        started_at=_when(samples, min),
        finished_at=_when(samples, max),
    )
    # One INSERT for the cells and a few for the measurements, not one per cell.
    stored = Cell.objects.bulk_create(
        Cell(
            run=run,
            index=index,
            key=c.key,
            repeat=c.repeat,
            axes=c.axes,
            target_name=c.target,
            status=Cell.SUCCEEDED,
            attempt=1,
            tool_version=c.facts.pop("tool_version", ""),
            facts={"imported": True, **c.facts},
            started_at=run.started_at,
            finished_at=run.finished_at,
        )
        for index, c in enumerate(cells, 1)
    )
    attempts = []
    for c, cell in zip(cells, stored):
        seen, rows = set(), []
        for iteration, group, metric, value, unit in c.measurements:
            if (iteration, group, metric) in seen:
                raise ParseError(
                    f"two samples of {metric!r} for {c.key} #{c.repeat}, iteration {iteration}"
                )
            seen.add((iteration, group, metric))
            rows.append(
                measurestore.Value(run.pk, cell.pk, 1, iteration, group, metric, value, unit)
            )
        attempts.append((cell, 1, rows))
    measurestore.add(attempts)
    # The imported file itself, kept whole in the artifact store (shown on the
    # first cell's output page), so what a figure came from stays at hand.
    artifactstore.create_artifacts([(Artifact(cell=stored[0], phase="import"), {"stdout": text})])
    return run
