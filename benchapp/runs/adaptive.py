"""Adaptive repeats in a run: after each repeat of a combination, the stop
rule (runners.repeats.decide) over the values it measured so far.

A run holds `max` cells per combination (start_run expands them all). When
a repeat ends, `after_cell` reads the metric of the combination's succeeded
repeats (their current attempt's whole-output measurement); once the rule
says stop, the combination's queued repeats are deleted (they never ran, so
no figure is missing) and every repeat that ran gets the decision in
`Cell.repeat_stop`. The combination's cells share its target, whose lock the
ending cell still holds, so no later repeat of it has been dispatched yet.
"""

from __future__ import annotations

from django.db import transaction

from benchapp.models import Cell, Run
from benchapp.store import frozenparts, measurestore
from runners.repeats import RepeatRule, Stop, decide


def rule_of(cell: Cell) -> RepeatRule | None:
    """The adaptive rule frozen with the cell, or None (`repeat: N`)."""
    rule = frozenparts.frozen(cell, plan_keys=("repeat_rule",)).get("plan", {}).get("repeat_rule")
    return RepeatRule(**rule) if rule else None


def after_cell(cell: Cell) -> Stop | None:
    """Apply the stop rule to the cell's combination after one of its repeats ended."""
    rule = rule_of(cell)
    if rule is None:
        return None
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=cell.run_id)
        if run.cancel_requested:
            return None
        siblings = Cell.objects.filter(run_id=cell.run_id, key=cell.key)
        ran = siblings.filter(status__in=(Cell.SUCCEEDED, Cell.FAILED))
        order = dict(ran.filter(status=Cell.SUCCEEDED).values_list("pk", "index"))
        rows = measurestore.read(cells=order, metrics=[rule.metric], group="")
        values = [m.value for m in sorted(rows, key=lambda m: order[m.cell_id])]
        left = siblings.filter(status__in=(Cell.QUEUED, Cell.RUNNING)).count()
        stop = decide(rule, values, ran.count(), left=left)
        if stop is None:
            return None
        siblings.filter(status=Cell.QUEUED).delete()
        siblings.exclude(status=Cell.RUNNING).update(repeat_stop=stop.to_dict(rule))
    return stop
