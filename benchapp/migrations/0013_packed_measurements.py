# Measurements move from one row per value (217 bytes each in PostgreSQL)
# to one packed row per cell attempt (benchapp.measurestore), with their
# (group, metric, unit) as MeasureKey ids and a run's RunMetric totals.
# The data functions copy the layout of measurestore on purpose: a migration
# must not follow later changes of the live module.

import django.db.models.deletion
import numpy as np
from django.db import migrations, models

_KEY, _ITERATION, _FLOAT = np.dtype("<i4"), np.dtype("<i4"), np.dtype("<f8")
BATCH = 2000  # cell attempts per INSERT


def pack_measurements(apps, schema_editor):
    Measurement = apps.get_model("benchapp", "Measurement")
    CellMeasurements = apps.get_model("benchapp", "CellMeasurements")
    MeasureKey = apps.get_model("benchapp", "MeasureKey")
    RunMetric = apps.get_model("benchapp", "RunMetric")
    keys, batch, totals = {}, [], {}
    rows = Measurement.objects.order_by("cell_id", "attempt", "pk").values_list(
        "run_id", "cell_id", "attempt", "iteration", "group", "metric", "value", "unit"
    )
    current, values = None, []
    for run_id, cell_id, attempt, iteration, group, metric, value, unit in rows.iterator(
        chunk_size=10000
    ):
        name = (group, metric, unit)
        if name not in keys:
            keys[name] = MeasureKey.objects.get_or_create(group=group, metric=metric, unit=unit)[
                0
            ].pk
        if (run_id, cell_id, attempt) != current:
            if current:
                batch.append(CellMeasurements(**_packed(current, values)))
            current, values = (run_id, cell_id, attempt), []
        values.append((keys[name], iteration, value))
        entry = totals.setdefault((run_id, metric), [unit, 0, 0.0])
        entry[1] += 1
        entry[2] += value
        if len(batch) >= BATCH:
            CellMeasurements.objects.bulk_create(batch)
            batch.clear()
    if current:
        batch.append(CellMeasurements(**_packed(current, values)))
    CellMeasurements.objects.bulk_create(batch)
    # A run's metrics in the order of its cells: the headline is the first one.
    RunMetric.objects.bulk_create(
        RunMetric(run_id=run_id, metric=metric, unit=unit, count=n, total=total)
        for (run_id, metric), (unit, n, total) in totals.items()
    )
    if schema_editor.connection.vendor == "postgresql":
        # Check the deferred foreign keys of rows written in this transaction
        # now: PostgreSQL refuses to drop a table with checks still pending.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def _packed(attempt, values) -> dict:
    ids, iterations, numbers = zip(*values)
    return dict(
        run_id=attempt[0],
        cell_id=attempt[1],
        attempt=attempt[2],
        count=len(values),
        keys=np.array(ids, _KEY).tobytes(),
        iterations=np.array(iterations, _ITERATION).tobytes() if any(iterations) else b"",
        values=np.array(numbers, _FLOAT).tobytes(),
    )


def unpack_measurements(apps, schema_editor):
    Measurement = apps.get_model("benchapp", "Measurement")
    CellMeasurements = apps.get_model("benchapp", "CellMeasurements")
    MeasureKey = apps.get_model("benchapp", "MeasureKey")
    names = {k.pk: (k.group, k.metric, k.unit) for k in MeasureKey.objects.all()}
    batch = []
    for row in CellMeasurements.objects.order_by("pk").iterator(chunk_size=BATCH):
        ids = np.frombuffer(bytes(row.keys), _KEY)
        numbers = np.frombuffer(bytes(row.values), _FLOAT)
        iterations = (
            np.frombuffer(bytes(row.iterations), _ITERATION) if row.iterations else [0] * len(ids)
        )
        for key, iteration, value in zip(ids.tolist(), list(iterations), numbers.tolist()):
            group, metric, unit = names[key]
            batch.append(
                Measurement(
                    run_id=row.run_id,
                    cell_id=row.cell_id,
                    attempt=row.attempt,
                    iteration=int(iteration),
                    group=group,
                    metric=metric,
                    value=value,
                    unit=unit,
                )
            )
        if len(batch) >= 10000:
            Measurement.objects.bulk_create(batch)
            batch.clear()
    Measurement.objects.bulk_create(batch)


class Migration(migrations.Migration):
    dependencies = [("benchapp", "0012_telemetry_measurements")]

    operations = [
        migrations.CreateModel(
            name="CellMeasurements",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("attempt", models.PositiveIntegerField(default=1)),
                ("count", models.PositiveIntegerField(default=0)),
                ("keys", models.BinaryField()),
                ("iterations", models.BinaryField(blank=True, default=b"")),
                ("values", models.BinaryField()),
                (
                    "cell",
                    models.ForeignKey(
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="measurements",
                        to="benchapp.cell",
                    ),
                ),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="measurements",
                        to="benchapp.run",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="MeasureKey",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("group", models.CharField(blank=True, max_length=200)),
                ("metric", models.CharField(max_length=60)),
                ("unit", models.CharField(blank=True, max_length=20)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        fields=("group", "metric", "unit"), name="one_measure_key"
                    )
                ]
            },
        ),
        migrations.CreateModel(
            name="RunMetric",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("metric", models.CharField(max_length=60)),
                ("unit", models.CharField(blank=True, max_length=20)),
                ("count", models.PositiveIntegerField(default=0)),
                ("total", models.FloatField(default=0.0)),
                (
                    "run",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="metric_totals",
                        to="benchapp.run",
                    ),
                ),
            ],
        ),
        migrations.AddConstraint(
            model_name="cellmeasurements",
            constraint=models.UniqueConstraint(
                fields=("cell", "attempt"), name="one_measurement_set"
            ),
        ),
        migrations.AddConstraint(
            model_name="runmetric",
            constraint=models.UniqueConstraint(fields=("run", "metric"), name="one_run_metric"),
        ),
        migrations.RunPython(pack_measurements, unpack_measurements),
        migrations.DeleteModel(name="Measurement"),
    ]
