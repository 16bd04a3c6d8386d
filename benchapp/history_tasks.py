"""Celery tasks of histories: detection after a run finishes (issue 14).

Thin named wrappers taking primitive arguments (STYLE.md); the work is in
benchapp.history. Sent by name from orchestration.finish_run, so a failure
here never touches the run itself.
"""

from celery import shared_task

from benchapp import history
from benchapp.models import Run


@shared_task(name="benchapp.detect_changes")
def detect_changes(run_id: int) -> list[int]:
    """Change detection over the history of the run's plan; ids of new alerts."""
    run = Run.objects.select_related("plan").filter(pk=run_id).first()
    if run is None or run.plan is None or run.status not in history.FINISHED:
        return []
    return [alert.pk for alert in history.detect_plan(run.plan)]
