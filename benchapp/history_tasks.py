"""Celery tasks of histories: detection after a run finishes, confirmation
re-runs and alert notifications (docs/history.md).

Thin named wrappers taking primitive arguments (STYLE.md); the work is in
benchapp.histories.history, benchapp.histories.confirmation and benchapp.histories.notify. Sent by name
after a run finished, so a failure here never touches the run itself.
"""

import logging

from celery import shared_task
from django.conf import settings

from benchapp.histories import confirmation, notify
from benchapp.models import Run

log = logging.getLogger(__name__)


@shared_task(name="benchapp.detect_changes")
def detect_changes(run_id: int) -> list[int]:
    """The after-run alert workflow of a run of a saved plan
    (benchapp.histories.confirmation.after_run); ids of new alerts."""
    run = Run.objects.select_related("plan").filter(pk=run_id).first()
    if run is None or run.plan is None:
        return []
    return [alert.pk for alert in confirmation.after_run(run)]


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
