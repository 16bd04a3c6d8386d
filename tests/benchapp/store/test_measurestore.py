"""The packed measurement store (benchapp.store.measurestore): an attempt's values
read back as written, in one row; a rewrite replaces and keeps the run's
totals right; bad input changes nothing; the migration from one row per
value keeps every measurement, forward and back."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from benchapp.models import CellMeasurements, RunMetric
from benchapp.store import measurestore
from benchapp.store.measurestore import Value
from tests.benchapp.results_data import make_run
from tests.support.measures import stored

BEFORE = ("benchapp", "0012_telemetry_measurements")
AFTER = ("benchapp", "0013_packed_measurements")


def _values(cell, attempt, rows):
    return [Value(cell.run_id, cell.pk, attempt, i, g, m, v, u) for i, g, m, v, u in rows]


def test_an_attempts_values_are_one_row_read_back_as_written(team):
    cell = make_run(team, cells=[({}, 1, {})]).cells.get()
    rows = [
        (0, "", "tps", 812.5, ""),
        (0, "engine=innodb", "avg_s", 0.25, "s"),
        (3, "", "tps", 9.0, ""),
    ]
    measurestore.write(cell, 1, _values(cell, 1, rows))
    assert CellMeasurements.objects.filter(cell=cell).count() == 1
    back = [(m.iteration, m.group, m.metric, m.value, m.unit) for m in stored(cells=[cell.pk])]
    assert back == rows
    only = measurestore.read(cells=[cell.pk], metrics=["tps"], group="")
    assert [m.value for m in only] == [812.5, 9.0]


def test_only_the_latest_attempt_is_read_unless_asked(team):
    cell = make_run(team, cells=[({}, 1, {}, {"attempt": 2})]).cells.get()
    measurestore.write(cell, 1, _values(cell, 1, [(0, "", "tps", 1.0, "")]))
    measurestore.write(cell, 2, _values(cell, 2, [(0, "", "tps", 2.0, "")]))
    assert [m.value for m in measurestore.read(cells=[cell.pk])] == [2.0]
    assert [m.value for m in measurestore.read(cells=[cell.pk], all_attempts=True)] == [1.0, 2.0]


def test_rewriting_an_attempt_replaces_it_and_the_run_totals_follow(team):
    run = make_run(team, cells=[({}, 1, {"tps": 10.0}), ({"x": 2}, 1, {"tps": 30.0})])
    first = run.cells.order_by("index").first()
    measurestore.write(
        first, 1, _values(first, 1, [(0, "", "tps", 20.0, ""), (0, "", "qps", 5.0, "")])
    )
    totals = {t.metric: (t.count, t.total) for t in RunMetric.objects.filter(run=run)}
    assert totals == {"tps": (2, 50.0), "qps": (1, 5.0)}
    assert measurestore.count([run.pk]) == 3


def test_a_duplicate_value_is_refused_and_nothing_is_lost(team):
    cell = make_run(team, cells=[({}, 1, {"tps": 10.0})]).cells.get()
    twice = _values(cell, 1, [(0, "", "tps", 1.0, ""), (0, "", "tps", 2.0, "")])
    with pytest.raises(ValueError, match="two values"):
        measurestore.write(cell, 1, twice)
    assert [m.value for m in stored(cells=[cell.pk])] == [10.0]
    assert RunMetric.objects.get(run=cell.run).total == 10.0


def test_migration_packs_every_measurement_and_unpacks_it_back(team):
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    old = executor.loader.project_state([BEFORE]).apps
    Run, Cell = old.get_model("benchapp", "Run"), old.get_model("benchapp", "Cell")
    Measurement = old.get_model("benchapp", "Measurement")
    run = Run.objects.create(team_id=team.pk, name="r", tool="sysbench", document={})
    cells = [Cell.objects.create(run=run, index=i, key=f"k{i}", repeat=1, axes={}) for i in (1, 2)]
    written = sorted(
        (run.pk, cell.pk, attempt, iteration, group, metric, float(cell.pk * 100 + n), unit)
        for cell in cells
        for attempt in (1, 2)
        for n, (iteration, group, metric, unit) in enumerate(
            [(0, "", "tps", ""), (1, "", "tps", ""), (0, "engine=innodb", "avg_s", "s")]
        )
    )
    Measurement.objects.bulk_create(
        Measurement(run_id=r, cell_id=c, attempt=a, iteration=i, group=g, metric=m, value=v, unit=u)
        for r, c, a, i, g, m, v, u in written
    )
    executor = MigrationExecutor(connection)
    executor.migrate([AFTER])
    assert CellMeasurements.objects.count() == 4
    moved = sorted(
        (m.run_id, m.cell_id, m.attempt, m.iteration, m.group, m.metric, m.value, m.unit)
        for m in stored(runs=[run.pk])
    )
    assert moved == written
    tps = RunMetric.objects.get(run_id=run.pk, metric="tps")
    assert (tps.count, tps.total) == (8, sum(v for *_k, m, v, _u in written if m == "tps"))
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    back = executor.loader.project_state([BEFORE]).apps.get_model("benchapp", "Measurement")
    fields = ("run_id", "cell_id", "attempt", "iteration", "group", "metric", "value", "unit")
    assert sorted(back.objects.values_list(*fields)) == written
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_a_listing_cuts_pages_across_packed_rows(team):
    run = make_run(team, cells=[({"threads": t}, 1, {}) for t in (1, 2, 3, 4)])
    for n, cell in enumerate(run.cells.order_by("pk")):
        rows = [(0, "", f"m{i}", float(n * 10 + i), "") for i in range(n + 1)]  # 1 to 4 values
        measurestore.write(cell, 1, _values(cell, 1, rows))
    every = stored(runs=[run.pk])
    listing = measurestore.Listing(CellMeasurements.objects.filter(run=run))
    assert len(listing) == len(every) == 10
    for start, stop in ((0, 3), (1, 2), (2, 7), (6, 10), (9, 15), (10, 12)):
        assert listing[start:stop] == every[start:stop]
    only = measurestore.Listing(CellMeasurements.objects.filter(run=run), "m1")
    assert len(only) == 3 and [v.value for v in only[1:3]] == [21.0, 31.0]
