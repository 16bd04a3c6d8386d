"""The pool of worker hosts (docs/operations.md, "Worker hosts"): each host a
row, each worker process on it a row, and where each sent cell was placed.

Re-exported by benchapp.models; related models are named by string so this
module imports no other model module. benchapp.runs.workerpool writes them.
"""

from __future__ import annotations

from django.db import models


class WorkerHost(models.Model):
    """One machine that runs cells, registered by its workers when they start.

    `host_id` is stable per machine and host name (benchapp.runs.workerpool.
    host_id): the key of its machine lock and of its own queue. What it can
    run (tools and versions, sandbox, limits) is what its last starting
    worker found. `draining` is the operator's: a draining host finishes its
    running cells and is sent no new ones. Up or lost is read from
    `last_seen_at` (benchapp.runs.workerpool.state)."""

    host_id = models.CharField(max_length=200, unique=True)
    hostname = models.CharField(max_length=200)
    queue = models.CharField(max_length=300)
    arch = models.CharField(max_length=40, blank=True)
    version = models.CharField(max_length=40, blank=True)  # Benchboard's
    tools = models.JSONField(default=dict, blank=True)  # {tool: version}
    sandbox = models.JSONField(default=dict, blank=True)  # mechanism, cgroups, limits
    draining = models.BooleanField(default=False)
    registered_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    # When the reaper found it lost and re-queued its cells (None while up).
    lost_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["hostname", "host_id"]

    def __str__(self):
        return self.host_id


class WorkerProcess(models.Model):
    """One `celery worker` process of a host: its slots (concurrency) count
    while it heartbeats."""

    host = models.ForeignKey(WorkerHost, on_delete=models.CASCADE, related_name="processes")
    name = models.CharField(max_length=200)  # the Celery node name
    pid = models.PositiveIntegerField(default=0)
    slots = models.PositiveIntegerField(default=1)
    queues = models.JSONField(default=list, blank=True)
    started_at = models.DateTimeField()
    last_seen_at = models.DateTimeField()
    stopped = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["host", "name", "pid"], name="one_row_per_process")
        ]


class CellPlacement(models.Model):
    """The host a cell was last sent to, and the moves the pool made of it
    ("host X lost at T: re-queued"), which its cell page shows."""

    cell = models.OneToOneField(
        "benchapp.Cell", on_delete=models.CASCADE, primary_key=True, related_name="placement"
    )
    host = models.ForeignKey(
        WorkerHost, null=True, on_delete=models.SET_NULL, related_name="placements"
    )
    sent_at = models.DateTimeField()
    notes = models.JSONField(default=list, blank=True)
