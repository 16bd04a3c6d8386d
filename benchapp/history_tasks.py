"""Celery tasks of histories: detection after a run finishes, confirmation
re-runs and alert notifications (docs/history.md).

Thin named wrappers taking primitive arguments (STYLE.md); the work is in
benchapp.history, benchapp.confirmation and benchapp.notify. Sent by name
after a run finished, so a failure here never touches the run itself.
"""

import logging

from celery import shared_task
from django.conf import settings

from benchapp import confirmation, history, notify
from benchapp.models import Alert, Run
from benchapp.planning import PlanRefused

log = logging.getLogger(__name__)


@shared_task(name="benchapp.detect_changes")
def detect_changes(run_id: int) -> list[int]:
    """Judge the alerts this run was a confirmation of, then change detection
    over the history of the run's plan; ids of new alerts.

    New bad alerts of a plan with confirm_alerts get a confirmation run and are
    notified when it has decided (confirmed, or undecided as "new"); not
    reproduced alerts are not notified. Others are notified at once.
    """
    run = Run.objects.select_related("plan").filter(pk=run_id).first()
    if run is None or run.plan is None:
        return []
    for alert in confirmation.evaluate_run(run):
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
            confirmation.start_all(held)
        except PlanRefused as exc:
            log.warning("confirmation of run %s's alerts refused: %s", run_id, exc)
            Alert.objects.filter(pk__in=[a.pk for a in held]).update(
                confirm_note=f"confirmation refused: {exc}"[:500]
            )
            held = []
    for alert in created:
        if alert not in held:
            notify.queue(alert, "new")
    for alert in resolved:
        notify.queue(alert, "resolved")
    return [alert.pk for alert in created]


@shared_task(name="benchapp.deliver_notification", bind=True, max_retries=None)
def deliver_notification(self, delivery_id: int) -> str:
    """One delivery attempt; retried with exponential backoff on failure, up
    to BENCHBOARD_NOTIFY_RETRIES times."""
    retries = settings.BENCHBOARD_NOTIFY_RETRIES
    final = self.request.retries >= retries
    try:
        return notify.deliver(delivery_id, final=final)
    except notify.DeliveryError as exc:
        if final:
            log.warning(
                "notification %s failed after %s attempts: %s", delivery_id, retries + 1, exc
            )
            return "failed"
        delay = min(
            settings.BENCHBOARD_NOTIFY_BACKOFF_SECONDS * 2**self.request.retries,
            settings.BENCHBOARD_NOTIFY_BACKOFF_CAP_SECONDS,
        )
        raise self.retry(exc=exc, countdown=delay) from exc
