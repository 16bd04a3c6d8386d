"""Celery tasks: thin named wrappers that take ids and call domain functions.

The domain sends them by name through benchapp.dispatch.send, never by
importing this module. Retry policy: not Celery's; orchestration.retry_delay
retries transient cell failures with backoff (BENCHBOARD_CELL_RETRIES), and
reaper.reap re-queues the cell of a worker that died mid-cell,
capped by BENCHBOARD_MAX_ATTEMPTS. A failed tool is a result, never retried.
"""

import os
import socket

from celery import shared_task
from celery.signals import celeryd_after_setup, worker_ready, worker_shutdown
from django.conf import settings
from django.db import connection

from benchapp import history_tasks  # noqa: F401 (history_tasks: its tasks register)
from benchapp.cloud import cloudreaper, provisioning
from benchapp.models import Plan, Run
from benchapp.runs import finalcleanup, orchestration, reaper, workerpool
from benchapp.runs.hostid import host_queue
from benchapp.store import retention as retention_policy


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


@shared_task(name="benchapp.dispatch_active")
def dispatch_active() -> None:
    reaper.dispatch_active()


@shared_task(name="benchapp.execute_cell")
def execute_cell(cell_id: int) -> str | None:
    if not workerpool.is_mine(cell_id):
        return None  # placed on another host since (this one drained or was lost)
    return orchestration.execute_cell(cell_id)


@shared_task(name="benchapp.cleanup_run")
def cleanup_run(run_id: int) -> list[str]:
    """Drop the data a prepare-once run left on its targets, before it ends."""
    return finalcleanup.cleanup_run(run_id)


@shared_task(
    name="benchapp.teardown_run", autoretry_for=(Exception,), retry_backoff=10, max_retries=8
)
def teardown_run(run_id: int) -> None:
    """Release what a run provisioned (a no-op for static and local targets)."""
    provisioning.teardown_run(run_id)


@shared_task(name="benchapp.provision_run")
def provision_run(run_id: int) -> None:
    """Bring up a run's cloud targets and client, then dispatch its cells."""
    provisioning.provision_run(run_id)


@shared_task(name="benchapp.reap")
def reap() -> dict:
    return reaper.reap()


@shared_task(name="benchapp.start_plan")
def start_plan(plan_id: int, origin: str = "schedule") -> int | None:
    """Start a stored plan (scheduled runs from django-celery-beat); None
    when a scheduled tick was skipped (scheduling.start_scheduled)."""
    plan = Plan.objects.select_related("team").get(pk=plan_id)
    if origin != "schedule":
        return orchestration.start_run(plan.team, plan.document, plan=plan, origin=origin).pk
    from benchapp.histories import scheduling

    started = scheduling.start_scheduled(plan)  # a Run, or a SkippedTick
    scheduling.one_off_ran(plan_id)
    return started.pk if isinstance(started, Run) else None


@shared_task(name="benchapp.reap_cloud")
def reap_cloud() -> dict:
    """Tear down cloud resources of lost or finished runs; delete expired tagged ones."""
    return cloudreaper.reap_cloud()


@shared_task(name="benchapp.retention")
def retention() -> dict:
    """Downsample old series and expire old raw outputs, as the settings say (off by default)."""
    return retention_policy.apply()


# ------------------------------------------------------------ worker hosts
# Every worker also consumes its host's own queue, where the cells placed on
# this host are sent, and registers the host in the pool when it is ready,
# heartbeating until it stops (benchapp.runs.workerpool). Connected here: the
# worker imports this module before it sets up its queues.

_beats: list = []  # this worker process's heartbeat thread and process row


@celeryd_after_setup.connect
def _consume_own_queue(sender, instance, **kwargs):
    instance.app.amqp.queues.select_add(host_queue())


@worker_ready.connect
def _register_host(sender, **kwargs):
    queues = sorted(sender.app.amqp.queues.consume_from)
    slots = getattr(sender.controller, "concurrency", 1) or 1
    process = workerpool.register(sender.hostname, os.getpid(), slots, queues)
    connection.close()  # the heartbeat thread has its own
    beat = workerpool.HostBeat(process.pk)
    beat.start()
    _beats.append((beat, process.pk))


@worker_shutdown.connect
def _unregister_process(**kwargs):
    for beat, process_pk in _beats:
        beat.stop()
        workerpool.stopped(process_pk)
