"""Plan edits in a history: where the documents two consecutive finished runs of a
plan froze differ, what changed ("params.time: 10 → 20"), who saved the edit,
and the edit a change point straddles (named on its alert: the change may be
the edit's). Read by benchapp.histories.history and the trend page.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, Window
from django.db.models.functions import Lag

from benchapp.models import Run
from benchapp.models_history import PlanRevision

FINISHED = (Run.SUCCEEDED, Run.PARTIAL)  # the runs a history is made of
MAX_EDIT_TEXT = 500


@dataclass
class PlanEdit:
    """A plan changed between two of its finished runs: the frozen documents
    of `previous_run_id` and `run_id` differ in `changes` ("params.time: 10 → 20")."""

    run_id: int
    previous_run_id: int
    at: datetime  # the first run measured with the edited plan
    changes: list[str]
    position: int  # the run's place in the history, in time order
    saved: str = ""  # "saved by ann at 2026-05-01 10:00 UTC" from the PlanRevision

    def text(self) -> str:
        body = "; ".join(self.changes)
        if len(body) > MAX_EDIT_TEXT:
            body = body[: MAX_EDIT_TEXT - 1] + "…"
        saved = f" ({self.saved})" if self.saved else ""
        return (
            f"plan edited between run #{self.previous_run_id} and run #{self.run_id}{saved}: {body}"
        )


def plan_edits(plan_ids: list[int]) -> tuple[list[PlanEdit], dict[int, int]]:
    """The plan edits of a history (from the documents its runs froze, so an
    edit through the form, the API or a stored target's change all count),
    and every finished run's position in time order (two queries).

    The database compares each run's document with its plan's previous run's
    (a window function) and returns only the runs whose document differs: a
    year's history is hundreds of documents, its edits a handful."""
    rows = Run.objects.filter(plan_id__in=plan_ids, status__in=FINISHED)
    in_time = rows.order_by("created_at", "pk")
    positions = {pk: i for i, pk in enumerate(in_time.values_list("pk", flat=True))}
    per_plan = {"partition_by": [F("plan_id")], "order_by": [F("created_at"), F("pk")]}
    differing = (
        rows.annotate(
            previous_id=Window(Lag("pk"), **per_plan),
            previous_at=Window(Lag("created_at"), **per_plan),
            previous_document=Window(Lag("document"), **per_plan),
        )
        .filter(previous_id__isnull=False)
        .exclude(previous_document=F("document"))
        .values_list(
            "pk",
            "plan_id",
            "created_at",
            "document",
            "previous_id",
            "previous_at",
            "previous_document",
        )
    )
    edits = []
    for pk, plan_id, at, document, previous, previous_at, before in differing:
        if changes := document_changes(before, document):
            saved = (plan_id, previous_at, at)
            edits.append(PlanEdit(pk, previous, at, changes, positions[pk], saved=saved))
    edits.sort(key=lambda e: e.position)
    _saved_by(edits)
    return edits, positions


def _saved_by(edits: list[PlanEdit]) -> None:
    """Who saved each edit and when: the last PlanRevision of its plan
    between its two runs (none for an edit made before revisions were kept)."""
    if not edits:
        return
    revisions = PlanRevision.objects.filter(plan_id__in={e.saved[0] for e in edits}).values_list(
        "plan_id", "created_at", "created_by__username"
    )
    found = defaultdict(list)
    for plan_id, at, user in revisions.order_by("created_at"):
        found[plan_id].append((at, user))
    for edit in edits:
        plan_id, low, high = edit.saved
        saved = [(at, user) for at, user in found[plan_id] if low < at <= high]
        edit.saved = ""
        if saved:
            at, user = saved[-1]
            edit.saved = f"saved by {user or 'someone'} at {at:%Y-%m-%d %H:%M} UTC"


def document_changes(old: dict, new: dict) -> list[str]:
    """What differs between two frozen plan documents, as "key: old → new"
    lines (parameters, axes, target names; other target settings only as
    changed, their addresses and credential names are not shown)."""
    from benchapp.histories.comparisons import run_parameters  # results pages import history

    a, b = run_parameters(Run(document=old or {})), run_parameters(Run(document=new or {}))
    lines = [
        f"{key}: {_shown(a.get(key))} → {_shown(b.get(key))}"
        for key in sorted(set(a) | set(b))
        if a.get(key) != b.get(key)
    ]
    for part in ("targets", "client"):
        if (old or {}).get(part) != (new or {}).get(part) and not (
            part == "targets" and a.get("targets") != b.get("targets")
        ):
            lines.append(f"{part} settings changed")
    return lines


def _shown(value) -> str:
    if value is None:
        return "(none)"
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def straddled_edit(edits: tuple, before: int | None, start: int) -> str:
    """The text of the plan edits between a series' last point before a
    change (run `before`) and its first point after (run `start`), or ""."""
    found, positions = edits
    if start not in positions:
        return ""
    low = positions.get(before, positions[start] - 1)
    return " · ".join(e.text() for e in found if low < e.position <= positions[start])
