"""Confirmation of alerts (docs/history.md): re-run only the affected cells,
then judge the alert on that evidence.

`start` re-runs the frozen cells of the alerts' cell keys from the run that
showed the change (the alert's start run): the cells as they were measured,
the same parameters, targets and pinned tool version, never the plan as it
was edited since, which would measure something else and confirm nothing
(one run for several alerts of one start run). When that run has finished,
`evaluate_run` decides
for each alert it was started for: the new run's point is compared with the
points before the change (a 95 % prediction interval for one more point of
that level) and with the points after it:

- confirmed: outside the before interval, on the alert's side, and nearer
  the after level than the before level;
- not reproduced: otherwise;
- undecided (the alert stays as it was, the note says why): the run gave no
  value for the series (failed or cancelled cells).
"""

from __future__ import annotations

import logging
import statistics

from django.db import transaction

from benchapp.histories import history, notify
from benchapp.models import Alert, Run
from benchapp.plans.planning import PlanRefused
from benchapp.runs import orchestration
from runners import levels
from runners.changepoint import relative_change

log = logging.getLogger(__name__)

BEFORE_POINTS = history.WINDOW  # the level before: at most this many points


def start(alerts: list[Alert], *, user=None) -> Run:
    """One run of the frozen cells of the alerts' cell keys from their start
    run (all alerts of one plan and one start run); PlanRefused when that run
    kept no frozen cells to re-run."""
    plan, source = alerts[0].plan, alerts[0].start_run
    if any(a.plan_id != plan.pk for a in alerts):
        raise ValueError("alerts of several plans")
    if any(a.start_run_id != source.pk for a in alerts):
        raise ValueError("alerts of several start runs")
    keys = sorted({a.cell_key for a in alerts})
    with transaction.atomic():
        run = orchestration.rerun_cells(
            source, keys, user=user, plan=plan, origin="confirm", tags=["confirmation"]
        )
        note = f"confirmation run #{run.pk} started: the cells of run #{source.pk} as measured"
        Alert.objects.filter(pk__in=[a.pk for a in alerts]).update(
            confirm_run=run, confirm_note=note
        )
    for alert in alerts:
        alert.confirm_run = run
    return run


def start_all(alerts: list[Alert], *, user=None) -> list[Run]:
    """`start` for each start run among the alerts (of one plan)."""
    by_source: dict[int, list[Alert]] = {}
    for alert in alerts:
        by_source.setdefault(alert.start_run_id, []).append(alert)
    return [start(group, user=user) for _, group in sorted(by_source.items())]


def decide(before: list[float], after: list[float], value: float, rising: bool) -> tuple[bool, str]:
    """(confirmed, why) for a new point `value` of a series that changed from
    `before` to `after`, upwards when `rising` (runners.levels.reproduces)."""
    level = statistics.fmean(before)
    new_level = statistics.fmean(after) if after else level
    low, high = levels.prediction_interval(before)
    why = (
        f"new value {value:.4g} ({relative_change(level, value):+.1%} vs before {level:.4g}, "
        f"interval {low:.4g}–{high:.4g}; after {new_level:.4g})"
    )
    return levels.reproduces(before, new_level, value, rising), why


def evaluate_run(run: Run) -> list[Alert]:
    """Judge every alert whose confirmation run is `run` (a finished run);
    the alerts that became confirmed."""
    alerts = list(
        Alert.objects.filter(confirm_run=run, status=Alert.NEW).select_related("plan", "start_run")
    )
    if not alerts:
        return []
    history.summarize_run(run)
    confirmed = []
    for alert in alerts:
        alert.status, alert.confirm_note = _judge(alert, run)
        alert.save(update_fields=["status", "confirm_note", "updated_at"])
        if alert.status == Alert.CONFIRMED:
            confirmed.append(alert)
    return confirmed


def _judge(alert: Alert, run: Run) -> tuple[str, str]:
    plan_ids = history.history_plans(alert.plan)
    history.ensure_summaries(plan_ids)
    s = history.load_series(plan_ids, [alert.metric], [alert.cell_key]).get(
        (alert.cell_key, alert.group, alert.metric)
    )
    if run.status not in history.FINISHED or s is None or run.pk not in s.run_ids:
        return Alert.NEW, f"confirmation run #{run.pk} gave no value ({run.get_status_display()})"
    if alert.start_run_id not in s.run_ids:
        return Alert.NEW, f"run #{alert.start_run_id} is no longer in the history"
    i, j = s.run_ids.index(alert.start_run_id), s.run_ids.index(run.pk)
    before, after = s.means[max(0, i - BEFORE_POINTS) : i], s.means[i:j]
    if not before:
        return Alert.NEW, "no points before the change"
    ok, why = decide(before, after, s.means[j], rising=alert.magnitude > 0)
    if ok:
        return Alert.CONFIRMED, f"confirmed by run #{run.pk}: {why}"
    return Alert.NOT_REPRODUCED, f"not reproduced by run #{run.pk}: {why}"


def after_run(run: Run) -> list[Alert]:
    """The after-run alert workflow of a finished (or stopped) run of a saved
    plan: judge the alerts it was a confirmation of, then change detection
    over the plan's history; returns the new alerts.

    New bad alerts of a plan with confirm_alerts get a confirmation run and are
    notified when it has decided (confirmed, or undecided as "new"); not
    reproduced alerts are not notified. Others are notified at once.
    """
    for alert in evaluate_run(run):
        notify.queue(alert, "confirmed")
    for alert in Alert.objects.filter(confirm_run=run, status=Alert.NEW):
        notify.queue(alert, "new")  # undecided: no longer held back
    if run.status not in history.FINISHED:
        return []
    resolved: list[Alert] = []
    created = history.detect_plan(run.plan, resolved)
    held = [a for a in created if a.bad and run.plan.confirm_alerts and run.origin != "confirm"]
    if held:
        try:
            start_all(held)
        except PlanRefused as exc:
            log.warning("confirmation of run %s's alerts refused: %s", run.pk, exc)
            Alert.objects.filter(pk__in=[a.pk for a in held]).update(
                confirm_note=f"confirmation refused: {exc}"[:500]
            )
            held = []
    for alert in created:
        if alert not in held:
            notify.queue(alert, "new")
    for alert in resolved:
        notify.queue(alert, "resolved")
    return created
