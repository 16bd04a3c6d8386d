"""Rows of a cell's recorded results (docs/architecture.md, "How one cell
flows", step 5): a run's frozen parts, packed measurements and their keys,
per-metric run totals, per-second series, raw outputs and their stored
streams, CPU profiles.

Re-exported by benchapp.models; related models are named by string so this
module imports no other model module.
"""

from __future__ import annotations

from django.db import models


class FrozenPart(models.Model):
    """One large part of a run's frozen cells (a SQL script, the plan's params,
    a target), stored once per run and referred to by its hash from every
    cell that has it (runners.frozen.split). Without it each of 2,000 cells
    kept its own copy of the plan's script: a run stored about 2,000 times
    its document; now about its document once more."""

    run = models.ForeignKey("benchapp.Run", on_delete=models.CASCADE, related_name="frozen_parts")
    key = models.CharField(max_length=64)  # sha256 of the part's canonical JSON
    value = models.JSONField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="one_frozen_part")]


class MeasureKey(models.Model):
    """What a measured value is: its (group, metric, unit), stored once and
    referred to by a 4-byte id from every packed value (benchapp.store.measurestore).
    A year holds a few thousand of these against a hundred million values."""

    group = models.CharField(max_length=200, blank=True)  # "engine=innodb,concurrency=4" or ""
    metric = models.CharField(max_length=60)
    unit = models.CharField(max_length=20, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["group", "metric", "unit"], name="one_measure_key")
        ]


class CellMeasurements(models.Model):
    """Every measurement of one cell attempt, packed (benchapp.store.measurestore):
    `keys` are MeasureKey ids (int32), `values` float64 and `iterations`
    int32 (empty when every value is iteration 0), all little-endian and in
    the same order. One row per value cost 217 bytes in PostgreSQL with its
    indexes; packed, a value costs its 12 bytes and shares the row's.
    `run` is denormalised so that results pages read a run's rows by one index."""

    run = models.ForeignKey("benchapp.Run", on_delete=models.CASCADE, related_name="measurements")
    # No index of its own: the unique (cell, attempt) index serves lookups by cell.
    cell = models.ForeignKey(
        "benchapp.Cell", on_delete=models.CASCADE, related_name="measurements", db_index=False
    )
    attempt = models.PositiveIntegerField(default=1)
    count = models.PositiveIntegerField(default=0)
    keys = models.BinaryField()
    iterations = models.BinaryField(blank=True, default=b"")
    values = models.BinaryField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["cell", "attempt"], name="one_measurement_set")
        ]


class RunMetric(models.Model):
    """A run's running total of one metric over every stored value (all
    groups and attempts), kept by benchapp.store.measurestore as values are
    written, so that lists of runs show a headline mean without reading
    measurements. Rows are made in the order metrics are first measured."""

    run = models.ForeignKey("benchapp.Run", on_delete=models.CASCADE, related_name="metric_totals")
    metric = models.CharField(max_length=60)
    unit = models.CharField(max_length=20, blank=True)
    count = models.PositiveIntegerField(default=0)
    total = models.FloatField(default=0.0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "metric"], name="one_run_metric")]


class CellSeries(models.Model):
    """One per-second series of one cell attempt: a metric from one source
    (the tool's interval lines, "tool"; later the hosts' and databases'
    telemetry) with its times and values packed as float64 arrays
    (benchapp.store.seriesstore), one row for the whole series.

    One row per value (the earlier SeriesPoint) took 164 bytes a value in
    PostgreSQL with its index; packed, a value costs its 16 bytes of t and
    value and the row's overhead is shared by the whole series."""

    cell = models.ForeignKey("benchapp.Cell", on_delete=models.CASCADE, related_name="series")
    attempt = models.PositiveIntegerField(default=1)
    source = models.CharField(max_length=40, default="tool")
    metric = models.CharField(max_length=60)
    count = models.PositiveIntegerField(default=0)
    t = models.BinaryField()
    values = models.BinaryField()
    # 0: as recorded. Retention (benchapp.store.retention) downsamples old series to
    # one point per bin of this many seconds: t is the bin's start, values its
    # mean, lows and highs its min and max (None while as recorded).
    bin_seconds = models.PositiveIntegerField(default=0)
    lows = models.BinaryField(null=True, blank=True)
    highs = models.BinaryField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["cell", "attempt", "source", "metric"], name="one_series_per_metric"
            )
        ]


class Artifact(models.Model):
    """Raw output of one phase of one attempt, masked, kept whole: each
    non-empty stream is an object in the artifact store (an OutputBlob).
    stdout/stderr hold only outputs recorded before the store existed, until
    `manage.py move_artifacts` moves them there."""

    cell = models.ForeignKey("benchapp.Cell", on_delete=models.CASCADE, related_name="artifacts")
    attempt = models.PositiveIntegerField(default=1)
    phase = models.CharField(max_length=20)
    command = models.TextField(blank=True)
    exit_code = models.IntegerField(null=True, blank=True)
    stdout = models.TextField(blank=True)
    stderr = models.TextField(blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["cell", "attempt", "id"]


class CellProfile(models.Model):
    """The CPU profile of one process during one cell attempt's measure
    (runners.profiler): the database server or the tool, on which machine,
    how many samples. Its folded stacks are one gzip object in the artifact
    store (benchapp.store.artifactstore.save_profile) under key."""

    cell = models.ForeignKey("benchapp.Cell", on_delete=models.CASCADE, related_name="profiles")
    attempt = models.PositiveIntegerField(default=1)
    role = models.CharField(max_length=10)  # server | tool
    host = models.CharField(max_length=255, blank=True)
    process = models.CharField(max_length=64, blank=True)
    samples = models.PositiveIntegerField(default=0)
    key = models.CharField(max_length=400, unique=True)
    size = models.PositiveIntegerField(default=0)  # compressed bytes

    class Meta:
        ordering = ["cell", "attempt", "role"]


class OutputBlob(models.Model):
    """One stream of an Artifact, kept in the artifact store
    (benchapp.store.artifactstore): the object's key, size (bytes of UTF-8) and
    sha256, and the stream's first and last KiB, which the pages show when
    the object is gone (expired by retention, or missing from the store)."""

    artifact = models.ForeignKey(
        "benchapp.Artifact", on_delete=models.CASCADE, related_name="blobs"
    )
    stream = models.CharField(max_length=6)  # stdout | stderr
    key = models.CharField(max_length=400, unique=True)
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    head = models.TextField(blank=True)
    tail = models.TextField(blank=True)  # empty when head is the whole stream
    expired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["artifact", "stream"], name="one_blob_per_stream")
        ]
