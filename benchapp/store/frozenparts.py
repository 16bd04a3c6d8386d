"""A run's frozen cells as stored: each cell row keeps its small fields and
references (runners.frozen.split) to the run's FrozenPart rows, which hold
every large part once. Every reader of a cell's frozen spec goes through
`frozen`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchapp.models import Cell, FrozenPart, Run
from runners import frozen as frozen_cells


def save(run: Run, parts: dict[str, Any]) -> None:
    """Store the parts split() collected for run's cells."""
    FrozenPart.objects.bulk_create(
        (FrozenPart(run=run, key=key, value=value) for key, value in parts.items()), batch_size=200
    )


def load(run_id: int) -> dict[str, Any]:
    """{key: part} of every part of the run (bounded by its document's size)."""
    return dict(FrozenPart.objects.filter(run_id=run_id).values_list("key", "value"))


def frozen(cell: Cell, plan_keys: Iterable[str] | None = None) -> dict[str, Any]:
    """The cell's whole frozen spec (runners.frozen.freeze's form), {} when it
    has none (recorded by hand or imported). plan_keys: resolve only these
    keys of its "plan" (the others are left out), e.g. the targets and
    clients the dispatcher's locks need without the plan's scripts. Reads
    only the parts the cell refers to, one query per level of nesting."""
    return frozen_many([cell], plan_keys)[cell.pk]


def frozen_many(
    cells: Iterable[Cell], plan_keys: Iterable[str] | None = None
) -> dict[int, dict[str, Any]]:
    """{cell id: frozen(cell, plan_keys)} for many cells (of many runs), one
    query per level of nesting in all: a dispatch pass reads the next cell
    of every waiting run (benchapp.runs.placement)."""
    plan_keys = None if plan_keys is None else tuple(plan_keys)
    stored: dict[int, tuple[int, dict[str, Any]]] = {}
    found: dict[int, dict[str, Any]] = {}
    for cell in cells:
        spec = cell.spec or {}
        if spec.get("version") != frozen_cells.SPLIT_VERSION:
            found[cell.pk] = spec
            continue
        if plan_keys is not None:
            plan = spec.get("plan") or {}
            spec = {**spec, "plan": {key: plan[key] for key in plan_keys if key in plan}}
        stored[cell.pk] = (cell.run_id, spec)
    parts: dict[int, dict[str, Any]] = {}
    wanted = {
        (run_id, key) for run_id, spec in stored.values() for key in frozen_cells.references(spec)
    }
    while wanted:
        runs = {run_id for run_id, _ in wanted}
        keys = {key for _, key in wanted}
        rows = FrozenPart.objects.filter(run_id__in=runs, key__in=keys)
        new = set()
        for run_id, key, value in rows.values_list("run_id", "key", "value"):
            if (run_id, key) in wanted:
                parts.setdefault(run_id, {})[key] = value
                new |= {(run_id, ref) for ref in frozen_cells.references(value)}
        wanted = {(r, k) for r, k in new if k not in parts.get(r, {})}
    for cell_id, (run_id, spec) in stored.items():
        found[cell_id] = frozen_cells.resolve(spec, parts.get(run_id, {}))
    return found


def copy(source_run_id: int, run: Run, specs: Iterable[dict[str, Any]]) -> None:
    """Give run the parts of source's that these stored cell specs refer to
    (a re-run keeps its source's cells as they were frozen)."""
    wanted: set[str] = set()
    for spec in specs:
        wanted |= frozen_cells.references(spec)
    if not wanted:
        return
    parts = load(source_run_id)
    save(run, {key: parts[key] for key in frozen_cells.closure(wanted, parts)})
