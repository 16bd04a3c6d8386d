"""The reaper (periodic, BENCHBOARD_REAP_SECONDS): cells whose worker died
(their lease expired, or their worker host was found lost:
benchapp.runs.workerpool) are re-queued, up to BENCHBOARD_MAX_ATTEMPTS
attempts, then failed "worker lost"; locks whose lease ran out are freed;
the active runs are dispatched again (benchapp.runs.orchestration), so a
lost dispatch or provisioning message heals itself.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from benchapp.dispatch import PROVISION_RUN, send
from benchapp.models import Cell, Run
from benchapp.runs import fairshare, machines, orchestration, placement, workerpool
from runners.providers.slots import needs_provisioning


def reap() -> dict:
    """Recover cells whose worker died (lease expired): re-queue them, up to
    BENCHBOARD_MAX_ATTEMPTS attempts, then fail them "worker lost". Also
    re-dispatch active runs, so a lost dispatch message heals itself.
    Returns counts for logs and tests.
    """
    now = timezone.now()
    workerpool.reap_lost(now)  # a lost host's running cells: their leases end now
    requeued = failed = 0
    unproven = _leases_unproven()
    expired = Cell.objects.none() if unproven else _expired_cells(now)
    for cell in expired:
        if cell.attempt >= settings.BENCHBOARD_MAX_ATTEMPTS:
            failed += Cell.objects.filter(
                pk=cell.pk, attempt=cell.attempt, status=Cell.RUNNING
            ).update(
                status=Cell.FAILED,
                finished_at=now,
                phase="",
                lease_expires_at=None,
                error_kind="transient",
                error=f"failed: worker lost ({cell.attempt} attempts; last on {cell.worker})",
            )
        else:
            taken_back = Cell.objects.filter(
                pk=cell.pk, attempt=cell.attempt, status=Cell.RUNNING
            ).update(
                status=Cell.QUEUED,
                phase="",
                lease_expires_at=None,
                error_kind="transient",
                error=f"worker lost on attempt {cell.attempt}; retrying",
            )
            if taken_back:
                workerpool.note_lease_ended(cell.pk)
            requeued += taken_back
        machines.release(cell)
    if not unproven:
        machines.release_expired(now)
    dispatch_active()
    _resend_lost_provisioning(now)
    return {"requeued": requeued, "failed": failed}


def dispatch_active() -> None:
    """Dispatch every active run, least served first, in one pass (those
    that could send nothing skipped): the reaper's tick, and a worker host
    that joins or resumes (one message, not one per active run)."""
    waiting = placement.Waiting()
    active = fairshare.fair_order(list(Run.objects.active().values_list("pk", flat=True)))
    orchestration.dispatch_in_turn(waiting, active)


def _expired_cells(now):
    return Cell.objects.filter(status=Cell.RUNNING, lease_expires_at__lt=now)


def _leases_unproven() -> bool:
    """True while the app's database has been up for less than one lease: a
    lease that ran out while it was down (restarted, stopped) proves no
    worker dead, since no worker could renew it; their heartbeats renew
    them within a beat of its return. PostgreSQL only (SQLite has no server)."""
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT extract(epoch FROM now() - pg_postmaster_start_time())")
        (uptime,) = cursor.fetchone()
    return float(uptime) < settings.BENCHBOARD_LEASE_SECONDS


def _resend_lost_provisioning(now) -> None:
    """A run that needs provisioning and is still QUEUED a while after its
    creation lost its provision_run message (e.g. Redis restarted): send it
    again. provision_run claims the run atomically, so a duplicate is harmless."""
    stale = Run.objects.filter(
        status=Run.QUEUED, cancel_requested=False, created_at__lt=now - timedelta(seconds=60)
    )
    for run in stale.only("pk", "document"):
        if needs_provisioning(run.spec):
            send(PROVISION_RUN, run.pk)
