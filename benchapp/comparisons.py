"""Comparisons: runs (or some of their cells) side by side.

The page, the share page, the export and the API all call `compare`; a
Comparison row only stores the selection and the chosen pivot settings.
"""

from __future__ import annotations

from django.db import transaction
from django.http import Http404

from benchapp import crypto, results
from benchapp.models import Cell, Comparison, Run, Team

# Facts that are per-cell noise or already shown elsewhere, not host facts.
# The telemetry's summaries are measurements (the pivot compares them) and
# the verdict is diffed as one row of headline codes ("what limited it").
SKIP_FACTS = {
    "tool_errors",
    "warnings",
    "client_bound",
    "version",
    "client_cpu_busy_pct",
    "telemetry",
    "verdict",
}


def comparison_runs(comparison: Comparison) -> list[Run]:
    return list(comparison.runs.order_by("pk"))


def compare(
    comparison: Comparison, requested: dict | None = None, baseline: str | None = None
) -> dict:
    """The comparison's results (pivot, deltas vs baseline, charts) and the
    diff of parameters, tool versions and host facts."""
    runs = comparison_runs(comparison)
    saved = dict(comparison.chart_settings or {})
    baseline = baseline or saved.pop("baseline", None)
    # What the URL leaves empty keeps the saved choice (an empty request
    # must not turn a saved view back into the default one).
    asked = {k: v for k, v in (requested or {}).items() if v not in (None, "", [])}
    data = results.results(runs, {**saved, **asked}, comparison.cells or None, baseline)
    data["runs"] = runs
    data["diff"] = diff(runs, data["cells"])
    return data


@transaction.atomic
def save_comparison(
    team: Team,
    name: str,
    runs,
    cell_ids=(),
    user=None,
    chart_settings: dict | None = None,
    comparison: Comparison | None = None,
) -> Comparison:
    """Create (or update) a Comparison of the team's runs; cells narrow the runs
    and must belong to them. Raises Http404 for another team's run or cell."""
    runs = list(runs)
    if any(r.team_id != team.pk for r in runs):
        raise Http404("No such run")
    cell_ids = sorted({int(c) for c in cell_ids})
    if cell_ids:
        found = Cell.objects.filter(pk__in=cell_ids, run__in=runs).count()
        if found != len(cell_ids):
            raise Http404("No such cell")
    comparison = comparison or Comparison(team=team, created_by=user)
    comparison.name = name
    comparison.cells = cell_ids
    comparison.chart_settings = chart_settings or {}
    comparison.save()
    comparison.runs.set(runs)
    return comparison


def by_share_token(token: str) -> Comparison:
    """The shared comparison for a token (compared by hash) or Http404."""
    comparison = Comparison.objects.filter(share_token_hash=crypto.hash_token(token)).first()
    if comparison is None or not token:
        raise Http404("No such link")
    return comparison


# -------------------------------------------------------------------- diff


def _flatten(value, prefix=""):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): value}


def run_parameters(run: Run) -> dict:
    """The plan's parameters as flat "params.threads" -> value (targets by name
    only: their addresses and credential names are not parameters)."""
    doc = dict(run.document or {})
    doc.pop("name", None)
    doc["targets"] = ", ".join(
        t if isinstance(t, str) else str(t.get("name")) for t in doc.get("targets") or []
    )
    doc.pop("client", None)
    return _flatten(doc)


def diff(runs: list[Run], cells: dict) -> dict:
    """Rows of {"name", "values": [per run], "differs"} for parameters, tool
    versions and host facts; values of one run's cells are joined when they vary."""
    params = [run_parameters(r) for r in runs]
    versions = [set() for _ in runs]
    facts = [{} for _ in runs]
    position = {r.pk: i for i, r in enumerate(runs)}
    for cell in cells.values():
        i = position[cell.run_id]
        if cell.tool_version:
            versions[i].add(cell.tool_version)
        if cell.verdict:
            facts[i].setdefault("what limited it", set()).add(cell.verdict)
        for key, value in results._flatten_facts(cell.facts).items():
            if key.split(".")[0] not in SKIP_FACTS:
                facts[i].setdefault(key, set()).add(str(value))
    return {
        "parameters": _rows([{k: _show(v) for k, v in p.items()} for p in params]),
        "tool_versions": _rows([{"tool version": ", ".join(sorted(v))} for v in versions]),
        "facts": _rows([{k: _joined(v) for k, v in f.items()} for f in facts]),
    }


def _joined(values: set) -> str:
    return ", ".join(sorted(values)) if len(values) <= 4 else f"{len(values)} different values"


def _show(value) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def _rows(per_run: list[dict]) -> list[dict]:
    names = sorted({k for d in per_run for k in d})
    rows = []
    for name in names:
        values = [d.get(name, "") for d in per_run]
        rows.append({"name": name, "values": values, "differs": len(set(values)) > 1})
    return rows
