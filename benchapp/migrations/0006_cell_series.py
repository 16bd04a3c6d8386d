"""Per-second series as one row per (cell, attempt, source, metric) with the
times and values packed as float64 arrays (CellSeries), instead of one
SeriesPoint row per value; existing points move over and back."""

from itertools import groupby

import numpy as np
from django.db import migrations, models
import django.db.models.deletion

FLOAT = np.dtype("<f8")


def rows_to_arrays(apps, schema_editor):
    SeriesPoint = apps.get_model("benchapp", "SeriesPoint")
    CellSeries = apps.get_model("benchapp", "CellSeries")
    points = (
        SeriesPoint.objects.order_by("cell_id", "attempt", "metric", "t")
        .values_list("cell_id", "attempt", "metric", "t", "value")
        .iterator(chunk_size=20000)
    )
    batch = []
    for (cell_id, attempt, metric), group in groupby(points, key=lambda p: p[:3]):
        group = list(group)
        batch.append(
            CellSeries(
                cell_id=cell_id,
                attempt=attempt,
                source="tool",
                metric=metric,
                count=len(group),
                t=np.asarray([p[3] for p in group], dtype=FLOAT).tobytes(),
                values=np.asarray([p[4] for p in group], dtype=FLOAT).tobytes(),
            )
        )
        if len(batch) >= 500:
            CellSeries.objects.bulk_create(batch)
            batch = []
    CellSeries.objects.bulk_create(batch)


def arrays_to_rows(apps, schema_editor):
    SeriesPoint = apps.get_model("benchapp", "SeriesPoint")
    CellSeries = apps.get_model("benchapp", "CellSeries")
    for series in CellSeries.objects.filter(source="tool").iterator(chunk_size=500):
        t = np.frombuffer(bytes(series.t), dtype=FLOAT)
        values = np.frombuffer(bytes(series.values), dtype=FLOAT)
        SeriesPoint.objects.bulk_create(
            (
                SeriesPoint(
                    cell_id=series.cell_id,
                    attempt=series.attempt,
                    metric=series.metric,
                    t=float(a),
                    value=float(b),
                )
                for a, b in zip(t, values)
            ),
            batch_size=2000,
        )


class Migration(migrations.Migration):
    dependencies = [("benchapp", "0005_second_loop_data")]
    operations = [
        migrations.CreateModel(
            name="CellSeries",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("attempt", models.PositiveIntegerField(default=1)),
                ("source", models.CharField(default="tool", max_length=40)),
                ("metric", models.CharField(max_length=60)),
                ("count", models.PositiveIntegerField(default=0)),
                ("t", models.BinaryField()),
                ("values", models.BinaryField()),
                (
                    "cell",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="series_arrays",
                        to="benchapp.cell",
                    ),
                ),
            ],
        ),
        migrations.AddConstraint(
            model_name="cellseries",
            constraint=models.UniqueConstraint(
                fields=("cell", "attempt", "source", "metric"), name="one_series_per_metric"
            ),
        ),
        migrations.RunPython(rows_to_arrays, arrays_to_rows),
        migrations.DeleteModel(name="SeriesPoint"),
        migrations.AlterField(
            model_name="cellseries",
            name="cell",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="series",
                to="benchapp.cell",
            ),
        ),
    ]
