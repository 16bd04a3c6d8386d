"""Data of the second loop's schema: keyed credential fingerprints, and the
per-run history summaries of runs finished before summaries existed."""

from collections import defaultdict

from django.db import migrations

FINISHED = ("succeeded", "completed_with_failures")


def summarize_finished_runs(apps, schema_editor):
    """RunSummary rows of the runs finished before summaries existed (as
    benchapp.history.run_points computes them)."""
    Run = apps.get_model("benchapp", "Run")
    Measurement = apps.get_model("benchapp", "Measurement")
    RunSummary = apps.get_model("benchapp", "RunSummary")
    runs = Run.objects.filter(status__in=FINISHED, plan__isnull=False)
    for run_id, plan_id, created_at in runs.values_list("pk", "plan_id", "created_at").iterator():
        rows = list(Measurement.objects.filter(run_id=run_id).values_list(
            "cell_id", "cell__key", "group", "metric", "attempt", "value"))
        latest = {}
        for cell_id, _, _, _, attempt, _ in rows:
            latest[cell_id] = max(latest.get(cell_id, 0), attempt)
        values = defaultdict(list)
        for cell_id, key, group, metric, attempt, value in rows:
            if attempt == latest[cell_id]:
                values[(key, group, metric)].append(value)
        RunSummary.objects.bulk_create(
            [RunSummary(run_id=run_id, plan_id=plan_id, run_created_at=created_at, cell_key=k,
                        group=g, metric=m, mean=sum(v) / len(v), low=min(v), high=max(v),
                        count=len(v))
             for (k, g, m), v in values.items()], batch_size=1000)


def refingerprint(apps, schema_editor):
    from benchapp import crypto

    Credential = apps.get_model("benchapp", "Credential")
    for cred in Credential.objects.all().iterator():
        cred.fingerprint = crypto.fingerprint(crypto.decrypt(cred.encrypted))
        cred.save(update_fields=["fingerprint"])


class Migration(migrations.Migration):
    dependencies = [("benchapp", "0004_second_loop")]
    operations = [
        migrations.RunPython(refingerprint, migrations.RunPython.noop),
        migrations.RunPython(summarize_finished_runs, migrations.RunPython.noop),
    ]
