"""Telemetry summaries and verdicts used like tool metrics: stored as
Measurements under "telemetry.<source>.<figure>.<stat>", read by the pivot,
its charts and the catalog; the verdict is a pivot dimension, a mark under
the figures, a row of a comparison's "what differs" and an archive filter."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.urls import reverse

from benchapp.analysis import results
from benchapp.histories import archive, comparisons
from benchapp.models import Cell, MeasureKey
from benchapp.runs import recording
from runners import telemetry, tools
from runners.metrics import HIGHER, NEUTRAL
from tests.benchapp.results_data import make_run

pytestmark = pytest.mark.django_db

# A cell's facts as runners.cellwatch writes them (summaries of a target host
# whose busiest disk is vda, and of the database).
FACTS = {
    "telemetry": {
        "target": {
            "cpu_busy_pct": {"mean": 96.5, "max": 100.0, "high_share": 0.93},
            "disk_vda_util_pct": {"mean": 12.0, "max": 30.0, "high_share": 0.0},
            "disk_vda_await_ms": {"mean": 0.8, "max": 2.5},
            "seconds": 30,
            "busiest_disk": "vda",
        },
        "db": {"hit_ratio_pct": {"mean": 99.9, "max": 100.0}, "seconds": 30},
    },
    "verdict": {"limit": "target_cpu", "text": "target CPU-bound: ...", "findings": []},
}


def test_summaries_become_catalogued_metrics():
    metrics = telemetry.summary_metrics(FACTS["telemetry"])
    assert metrics == {
        "telemetry.target.cpu_busy_pct.mean": 96.5,
        "telemetry.target.cpu_busy_pct.max": 100.0,
        # the busiest disk under one name, whatever the device is called
        "telemetry.target.disk_util_pct.mean": 12.0,
        "telemetry.target.disk_util_pct.max": 30.0,
        "telemetry.target.disk_await_ms.mean": 0.8,
        "telemetry.target.disk_await_ms.max": 2.5,
        "telemetry.db.hit_ratio_pct.mean": 99.9,
        "telemetry.db.hit_ratio_pct.max": 100.0,
    }
    longest = max(
        len(f"telemetry.{s}.{f}.mean") for s in telemetry.SOURCE_LABELS for f in telemetry.FIGURES
    )
    assert longest <= MeasureKey._meta.get_field("metric").max_length

    hit = tools.metric("sysbench", "telemetry.db.hit_ratio_pct.mean")
    assert (hit.label, hit.unit, hit.direction) == (
        "database buffer/cache hit ratio, mean",
        "%",
        HIGHER,
    )
    # a maximum is context, never judged
    assert tools.direction("sysbench", "telemetry.db.hit_ratio_pct.max") is None
    assert tools.metric("", "telemetry.target.cpu_busy_pct.mean").direction == NEUTRAL
    # context for the tool's figures: charted and compared, never alerted on by itself
    assert not hit.measured
    # a name that only looks like one is a plain metric
    assert (
        tools.metric("", "telemetry.target.nonsense.mean").label == "telemetry.target.nonsense.mean"
    )


def test_recording_stores_the_summaries_with_their_units(team):
    run = make_run(team, cells=[({"threads": 4}, 1, {"tps": 100.0})])
    cell = run.cells.get()
    rows = recording.telemetry_rows(cell, 1, FACTS)
    assert {(r.metric, r.value, r.unit) for r in rows} >= {
        ("telemetry.target.cpu_busy_pct.mean", 96.5, "%"),
        ("telemetry.target.disk_await_ms.mean", 0.8, "ms"),
    }
    assert recording.telemetry_rows(cell, 1, {}) == []


def _run_with_verdicts(team, name, busy):
    """Two thread counts: 4 with no limit found, 16 target-CPU-bound."""
    cells = []
    for threads, limit, cpu in ((4, "none", 40.0), (16, "target_cpu", busy)):
        facts = {**FACTS, "verdict": {"limit": limit, "text": limit, "findings": []}}
        for repeat in (1, 2):
            metrics = {"tps": 10.0 * threads, "telemetry.target.cpu_busy_pct.mean": cpu}
            cells.append(({"threads": threads}, repeat, metrics, {"facts": facts}))
    return make_run(team, name=name, cells=cells)


def test_results_pivot_and_chart_read_telemetry_and_the_verdict(team, owner_client):
    run = _run_with_verdicts(team, "verdicts", busy=97.0)
    data = results.results([run], {"metric": "telemetry.target.cpu_busy_pct.mean"})
    assert "telemetry.target.cpu_busy_pct.mean" in data["metrics"]
    assert [c[0].mean for c in data["table"]["cells"]] == [40.0, 97.0]
    assert data["catalog"]["telemetry.target.cpu_busy_pct.mean"]["title"] == (
        "target CPU busy, mean (%)"
    )
    assert "verdict" in data["dimensions"]

    by_verdict = results.results([run], {"metric": "tps", "rows": ["verdict"]})
    rows = {
        r["label"]: line[0].mean
        for r, line in zip(by_verdict["table"]["rows"], by_verdict["table"]["cells"])
    }
    assert rows == {"none": 40.0, "target_cpu": 160.0}

    page = owner_client.get(
        reverse("run_results", args=[run.pk]), {"metric": "tps", "rows": "threads"}
    ).content.decode()
    # the limit shows under the figure it limited, not under the unlimited one
    assert page.count('data-role="limits"') == 1 and "limit: target_cpu" in page


def test_comparison_diff_and_archive_search_by_verdict(team, owner):
    before = _run_with_verdicts(team, "before", busy=97.0)
    after = make_run(team, name="after", cells=[({"threads": 4}, 1, {"tps": 50.0})])
    after.cells.update(facts={"verdict": {"limit": "disk", "text": "disk", "findings": []}})
    comparison = comparisons.save_comparison(team, "c", [before, after], user=owner)
    facts = {r["name"]: r for r in comparisons.compare(comparison)["diff"]["facts"]}
    assert facts["what limited it"]["values"] == ["none, target_cpu", "disk"]
    # the summaries are compared as measurements, not repeated as host facts
    assert not any(name.startswith(("telemetry.", "verdict.")) for name in facts)

    assert list(archive.search_runs(team, limit="target_cpu")) == [before]
    assert list(archive.search_runs(team, limit="disk")) == [after]
    assert not archive.search_runs(team, limit="locks").exists()
    assert Cell.objects.filter(facts__verdict__limit="none").count() == 2


BEFORE = ("benchapp", "0011_target_telemetry")
AFTER = ("benchapp", "0012_telemetry_measurements")


@pytest.mark.django_db(transaction=True)
def test_migration_adds_the_summaries_of_cells_recorded_before(team):
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    old = executor.loader.project_state([BEFORE]).apps
    Run, OldCell = old.get_model("benchapp", "Run"), old.get_model("benchapp", "Cell")
    run = Run.objects.create(team_id=team.pk, name="r", tool="sysbench", document={})
    watched = OldCell.objects.create(run=run, index=1, key="a", repeat=1, axes={}, facts=FACTS)
    OldCell.objects.create(run=run, index=2, key="b", repeat=1, axes={}, facts={})
    executor = MigrationExecutor(connection)
    executor.migrate([AFTER])
    # Measurements were rows of their own then (packed by a later migration).
    Measurement = executor.loader.project_state([AFTER]).apps.get_model("benchapp", "Measurement")
    stored = dict(Measurement.objects.filter(cell_id=watched.pk).values_list("metric", "unit"))
    assert stored == {
        name: telemetry.metric(name).unit for name in telemetry.summary_metrics(FACTS["telemetry"])
    }
    assert Measurement.objects.filter(run_id=run.pk).count() == len(stored)  # none for the other
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    assert not Measurement.objects.filter(run_id=run.pk).exists()
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
