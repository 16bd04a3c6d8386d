"""Cells recorded before telemetry summaries were also stored as measurements
get them now (the same "telemetry.<source>.<figure>.<stat>" rows recording
writes, benchapp.recording.telemetry_rows), so their runs' results pages,
comparisons and trends can show them too."""

from django.db import migrations

from runners import telemetry


def add_telemetry_measurements(apps, schema_editor):
    Cell = apps.get_model("benchapp", "Cell")
    Measurement = apps.get_model("benchapp", "Measurement")
    cells = Cell.objects.filter(facts__has_key="telemetry").exclude(
        measurements__metric__startswith=telemetry.METRIC_PREFIX
    )
    for cell_id, run_id, attempt, facts in cells.values_list(
        "pk", "run_id", "attempt", "facts"
    ).iterator():
        metrics = telemetry.summary_metrics(facts.get("telemetry") or {})
        Measurement.objects.bulk_create(
            Measurement(
                run_id=run_id,
                cell_id=cell_id,
                attempt=attempt,
                iteration=0,
                group="",
                metric=name,
                value=value,
                unit=telemetry.metric(name).unit,
            )
            for name, value in metrics.items()
        )


def remove_telemetry_measurements(apps, schema_editor):
    Measurement = apps.get_model("benchapp", "Measurement")
    Measurement.objects.filter(metric__startswith=telemetry.METRIC_PREFIX).delete()


class Migration(migrations.Migration):
    dependencies = [("benchapp", "0011_target_telemetry")]

    operations = [
        migrations.RunPython(add_telemetry_measurements, remove_telemetry_measurements),
    ]
