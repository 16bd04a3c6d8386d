"""The Celery app: `celery -A benchapp worker` and `celery -A benchapp beat`.

Every worker also consumes its host's own queue (benchapp.runs.hostid), where
cells placed on this host are sent, and registers the host in the pool
(benchapp.runs.workerpool) when it is ready, heartbeating until it stops.
"""

import os

from celery import Celery
from celery.signals import celeryd_after_setup, worker_ready, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")

app = Celery("benchapp")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

_beat = []  # this worker process's heartbeat thread


@celeryd_after_setup.connect
def _consume_own_queue(sender, instance, **kwargs):
    from benchapp.runs.hostid import host_queue

    instance.app.amqp.queues.select_add(host_queue())


@worker_ready.connect
def _register_host(sender, **kwargs):
    from django.db import connection

    from benchapp.runs import workerpool

    queues = sorted(sender.app.amqp.queues.consume_from)
    slots = getattr(sender.controller, "concurrency", 1) or 1
    process = workerpool.register(sender.hostname, os.getpid(), slots, queues)
    connection.close()  # the heartbeat thread has its own
    beat = workerpool.HostBeat(process.pk)
    beat.start()
    _beat.append((beat, process.pk))


@worker_shutdown.connect
def _unregister_process(**kwargs):
    from benchapp.runs import workerpool

    for beat, process_pk in _beat:
        beat.stop()
        workerpool.stopped(process_pk)
