"""The one seam through which the domain sends Celery tasks: by name.

Domain modules (orchestration, provisioning, ...) never import
benchapp.tasks; they call `send("benchapp.execute_cell", cell_id)`. The
message leaves after the current transaction commits (at once outside
one), so a worker never reads rows that are not there yet.
"""

from __future__ import annotations

from django.db import transaction

from benchapp.celery import app

DISPATCH_RUN = "benchapp.dispatch_run"
DISPATCH_ACTIVE = "benchapp.dispatch_active"
EXECUTE_CELL = "benchapp.execute_cell"
PROVISION_RUN = "benchapp.provision_run"
TEARDOWN_RUN = "benchapp.teardown_run"
DETECT_CHANGES = "benchapp.detect_changes"
CLEANUP_RUN = "benchapp.cleanup_run"
DELIVER_NOTIFICATION = "benchapp.deliver_notification"


def send(task_name: str, *args, countdown: float | None = None, queue: str | None = None) -> None:
    """Send task_name(*args) after commit; countdown delays it (seconds);
    queue: one worker host's own queue (benchapp.runs.workerpool), else the shared one."""
    options = {"queue": queue} if queue else {}
    transaction.on_commit(
        lambda: app.send_task(task_name, args=args, countdown=countdown, **options)
    )
