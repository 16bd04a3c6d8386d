"""The archive: search runs, tag and annotate them, import outputs of runs
made elsewhere, export runs and comparisons (measurements and metadata,
never secrets).
"""

from __future__ import annotations

import json
from datetime import date

from cryptography.fernet import InvalidToken
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from benchapp import crypto
from benchapp.analysis.csvexport import csv_text
from benchapp.models import Artifact, Cell, CellSeries, Credential, Run, Team
from benchapp.runs.recording import MASK, measurement_rows, series_rows, store_measurements
from benchapp.store import artifactstore, measurestore
from runners.errors import ParseError
from runners.plan import combination_key
from runners.tools import MEASURED_TOOLS, read_output
from runners.tools import metric as catalog_metric

# ------------------------------------------------------------------ search


def search_runs(
    team: Team,
    *,
    tool="",
    target="",
    tag="",
    status="",
    text="",
    since: date | None = None,
    until: date | None = None,
    limit="",
):
    """The team's runs matching every given filter, newest first. `limit`: a
    verdict code (runners.verdict, "target_cpu", "not_in_memory", "none", ...)
    that at least one of the run's cells got as its headline."""
    qs = Run.objects.for_team(team)
    if tool:
        qs = qs.filter(tool=tool)
    if status:
        qs = qs.filter(status=status)
    if target:
        qs = qs.filter(pk__in=Cell.objects.filter(target_name=target).values("run_id"))
    if limit:
        qs = qs.filter(pk__in=Cell.objects.filter(facts__verdict__limit=limit).values("run_id"))
    if tag:
        # JSON containment is PostgreSQL's; SQLite (embedded default) matches the text.
        qs = (
            qs.filter(tags__contains=[tag])
            if connection.vendor == "postgresql"
            else qs.filter(tags__icontains=f'"{tag}"')
        )
    if text:
        qs = qs.filter(Q(name__icontains=text) | Q(notes__icontains=text))
    if since:
        qs = qs.filter(created_at__date__gte=since)
    if until:
        qs = qs.filter(created_at__date__lte=until)
    return qs.order_by("-created_at")


def team_tags(team: Team) -> list[str]:
    tags = set()
    for run_tags in Run.objects.for_team(team).exclude(tags=[]).values_list("tags", flat=True):
        tags.update(str(t) for t in run_tags or [])
    return sorted(tags)


def parse_tags(text: str) -> list[str]:
    """ "a, b c" -> ["a", "b", "c"]: comma- or space-separated, unique, in order."""
    seen = []
    for tag in text.replace(",", " ").split():
        if tag not in seen:
            seen.append(tag[:50])
    return seen


def annotate(run: Run, tags: list[str], notes: str) -> Run:
    run.tags, run.notes = tags, notes
    run.save(update_fields=["tags", "notes"])
    return run


# ------------------------------------------------------------------ import


def parse_axes(text: str) -> dict:
    """ "threads=4, target=rds" -> {"threads": 4, "target": "rds"} (numbers and
    true/false converted, as a plan's axis values would be)."""
    axes = {}
    for part in text.replace("\n", ",").split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise ValueError(f"{part.strip()!r} is not name=value")
        name, value = (s.strip() for s in part.split("=", 1))
        if not name:
            raise ValueError(f"{part.strip()!r} has no name")
        axes[name] = _typed(value)
    return axes


def _typed(value: str):
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def parse_output(tool: str, text: str):
    """The tool's parser over an imported output; ParseError when unreadable."""
    if tool not in MEASURED_TOOLS:
        raise ParseError(f"unknown tool {tool!r}")
    return read_output(tool, text)


@transaction.atomic
def import_output(
    team: Team,
    tool: str,
    text: str,
    axes: dict,
    *,
    name: str = "",
    run: Run | None = None,
    target: str = "",
    user=None,
) -> Cell:
    """Store one raw output of a run made elsewhere as a Cell of an imported Run
    (a new one, or `run` when adding to an earlier import). The output is
    parsed by the tool's own parser and recorded like a worker would."""
    result = parse_output(tool, text)
    target = target or str(axes.get("target", "")) or "imported"
    if run is None:
        run = Run.objects.create(
            team=team,
            name=name or f"imported {tool}",
            tool=tool,
            origin="import",
            status=Run.SUCCEEDED,
            created_by=user,
            document={
                "name": name or f"imported {tool}",
                "tool": tool,
                "targets": [{"name": target}],
                "axes": {},
            },
            started_at=timezone.now(),
            finished_at=timezone.now(),
        )
    key = combination_key(axes) or "imported"
    repeat = run.cells.filter(key=key).count() + 1
    index = run.cells.count() + 1
    # Figures beside an error the tool reported (clients that never connected,
    # a cut summary) are kept as measurements but do not make a good cell.
    failed = bool(result.errors)
    cell = Cell.objects.create(
        run=run,
        index=index,
        key=key,
        repeat=repeat,
        axes=axes,
        target_name=target,
        status=Cell.FAILED if failed else Cell.SUCCEEDED,
        attempt=1,
        error="; ".join(result.errors[:5]) if failed else "",
        tool_version=str(result.facts.get("version", "")),
        facts={"imported": True, **_parser_warnings(result)},
        started_at=timezone.now(),
        finished_at=timezone.now(),
    )
    store_measurements(cell, 1, measurement_rows(cell, 1, result))
    CellSeries.objects.bulk_create(series_rows(cell, 1, result))
    artifactstore.create_artifacts(
        [(Artifact(cell=cell, attempt=1, phase="measure"), {"stdout": text})]
    )
    _merge_axes(run, axes)
    return cell


def _parser_warnings(result) -> dict:
    """{"parser_warnings": [...]} when the parser could not read all of the
    output's figure-carrying lines (shown on the cell page), else {}."""
    return {"parser_warnings": list(result.warnings)} if result.warnings else {}


def _merge_axes(run: Run, axes: dict) -> None:
    doc = dict(run.document)
    merged = dict(doc.get("axes") or {})
    for k, v in axes.items():
        if v not in merged.setdefault(k, []):
            merged[k].append(v)
    doc["axes"] = merged
    run.document = doc
    run.save(update_fields=["document"])


# ------------------------------------------------------------------ export


class Scrubber:
    """Replaces the team's secrets wherever they might appear (defence in depth:
    commands and outputs are masked when recorded)."""

    def __init__(self, team_id: int):
        self.secrets = []
        for enc in Credential.objects.filter(team_id=team_id).values_list("encrypted", flat=True):
            try:
                secret = crypto.decrypt(enc)
            except InvalidToken:  # a key rotated away: nothing to scrub with
                continue
            if len(secret) >= 4:
                self.secrets.append(secret)

    def __call__(self, value):
        if isinstance(value, str):
            for secret in self.secrets:
                value = value.replace(secret, MASK)
            return value
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items() if not _secret_key(k)}
        if isinstance(value, list):
            return [self(v) for v in value]
        return value


def _secret_key(key: str) -> bool:
    return any(word in str(key).lower() for word in ("password", "secret", "private_key"))


EXPORT_COLUMNS = [
    "run_id",
    "run",
    "cell_id",
    "cell",
    "repeat",
    "target",
    "status",
    "group",
    "metric",
    "value",
    "unit",
]


def export_rows(runs: list[Run], cell_ids=None):
    """(cell, measurement) rows of the latest attempts, in cell order (two queries)."""
    cells = Cell.objects.filter(run__in=runs).order_by("run_id", "index")
    if cell_ids:
        cells = cells.filter(pk__in=cell_ids)
    cells = {c.pk: c for c in cells}
    by_cell = {}
    rows = measurestore.read(runs=[r.pk for r in runs], cells=list(cells) if cell_ids else None)
    for m in sorted(rows, key=lambda m: (m.cell_id, m.group, m.metric)):
        by_cell.setdefault(m.cell_id, []).append(m)
    return cells, by_cell


def export_json(team: Team, runs: list[Run], cell_ids=None, comparison=None) -> str:
    """Runs' metadata, cells and measurements as JSON, scrubbed of secrets."""
    scrub = Scrubber(team.pk)
    cells, by_cell = export_rows(runs, cell_ids)
    doc = {"runs": [], "exported_at": timezone.now().isoformat()}
    if comparison is not None:
        doc["comparison"] = {
            "id": comparison.pk,
            "name": comparison.name,
            "chart_settings": comparison.chart_settings,
        }
    for run in runs:
        doc["runs"].append(
            {
                "id": run.pk,
                "name": run.name,
                "tool": run.tool,
                "status": run.status,
                "origin": run.origin,
                "tags": run.tags,
                "notes": run.notes,
                "created_at": run.created_at.isoformat(),
                "finished_at": run.finished_at.isoformat() if run.finished_at else None,
                "plan": run.document,
                "cells": [
                    _cell_json(c, by_cell.get(c.pk, []), run.tool)
                    for c in cells.values()
                    if c.run_id == run.pk
                ],
            }
        )
    return json.dumps(scrub(doc), indent=1, default=str)


def _unit(tool: str, measurement: measurestore.Value) -> str:
    """The stored unit, else the metric catalog's (runners.metrics)."""
    return measurement.unit or catalog_metric(tool, measurement.metric).unit


def _cell_json(cell: Cell, measurements, tool: str = "") -> dict:
    return {
        "id": cell.pk,
        "key": cell.key,
        "repeat": cell.repeat,
        "axes": cell.axes,
        "target": cell.target_name,
        "status": cell.status,
        "attempt": cell.attempt,
        "error": cell.error,
        "command": cell.command,
        "tool_version": cell.tool_version,
        "client_bound": cell.client_bound,
        "facts": cell.facts,
        "measurements": [
            {"group": m.group, "metric": m.metric, "value": m.value, "unit": _unit(tool, m)}
            for m in measurements
        ],
    }


def export_csv(team: Team, runs: list[Run], cell_ids=None) -> str:
    """One line per measurement, with the cell's axes as extra columns (no cell
    starts a spreadsheet formula: benchapp/analysis/csvexport.py)."""
    scrub = Scrubber(team.pk)
    cells, by_cell = export_rows(runs, cell_ids)
    axes = list(dict.fromkeys(a for c in cells.values() for a in c.axes))
    names = {r.pk: r.name for r in runs}
    tools = {r.pk: r.tool for r in runs}
    header = EXPORT_COLUMNS[:6] + [f"axis:{a}" for a in axes] + EXPORT_COLUMNS[6:]
    rows = (
        scrub(
            [cell.run_id, names[cell.run_id], cell.pk, cell.key, cell.repeat, cell.target_name]
            + [cell.axes.get(a, "") for a in axes]
            + [cell.status, m.group, m.metric, m.value, _unit(tools[cell.run_id], m)]
        )
        for cell in cells.values()
        for m in by_cell.get(cell.pk, [])
    )
    return csv_text([header, *rows])
