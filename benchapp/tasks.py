"""Celery tasks: thin named wrappers that take ids and call domain functions.

Retry policy: cells are not retried by Celery; a failing cell is a result
(recorded with its error). Only a worker that dies mid-cell leads to another
attempt, through orchestration.reap, capped by BENCHBOARD_MAX_ATTEMPTS.
"""

import socket

from celery import shared_task
from django.conf import settings

from benchapp import orchestration


@shared_task(name="benchapp.ping")
def ping(nonce: str) -> str:
    """Prove a worker is alive: writes var/pings/<nonce> with the worker's host name.

    The nonce is validated so that it cannot name a path outside var/pings.
    """
    if not nonce.isalnum():
        raise ValueError("nonce must be alphanumeric")
    folder = settings.VAR_DIR / "pings"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / nonce).write_text(socket.gethostname())
    return nonce


@shared_task(name="benchapp.dispatch_run")
def dispatch_run(run_id: int) -> list[int]:
    return orchestration.dispatch(run_id)


@shared_task(name="benchapp.execute_cell")
def execute_cell(cell_id: int) -> str | None:
    return orchestration.execute_cell(cell_id)


@shared_task(name="benchapp.teardown_run", autoretry_for=(Exception,), retry_backoff=10,
             max_retries=8)
def teardown_run(run_id: int) -> None:
    """Release what a run provisioned (a no-op for static and local targets)."""
    from benchapp import provisioning

    provisioning.teardown_run(run_id)


@shared_task(name="benchapp.provision_run")
def provision_run(run_id: int) -> None:
    """Bring up a run's cloud targets and client, then dispatch its cells."""
    from benchapp import provisioning

    provisioning.provision_run(run_id)


@shared_task(name="benchapp.reap")
def reap() -> dict:
    return orchestration.reap()


@shared_task(name="benchapp.start_plan")
def start_plan(plan_id: int, origin: str = "schedule") -> int:
    """Start a stored plan (scheduled runs from django-celery-beat)."""
    from benchapp.models import Plan

    plan = Plan.objects.select_related("team").get(pk=plan_id)
    return orchestration.start_run(plan.team, plan.document, plan=plan, origin=origin).pk


@shared_task(name="benchapp.reap_cloud")
def reap_cloud() -> dict:
    """Tear down cloud resources of lost or finished runs; delete expired tagged ones."""
    from benchapp import provisioning

    return provisioning.reap_cloud()
