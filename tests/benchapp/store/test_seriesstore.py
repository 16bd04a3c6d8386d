"""The per-second series store (benchapp.store.seriesstore): one row per series,
packed arrays read back as the values written; the migration from one row
per value keeps every point; pages read the same series after it."""

import numpy as np
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from benchapp.analysis.charts import downsample, downsample_arrays
from benchapp.models import CellSeries
from benchapp.store import seriesstore
from tests.benchapp.results_data import make_run

BEFORE = ("benchapp", "0005_second_loop_data")
AFTER = ("benchapp", "0006_cell_series")


def test_series_rows_one_per_metric_and_missing_values_left_out(team):
    cell = make_run(team, cells=[({}, 1, {})]).cells.get()
    series = {"t": [1.0, 2.0, 3.0], "tps": [10.0, None, 12.5], "lat_ms": [1, 2, 3]}
    CellSeries.objects.bulk_create(seriesstore.rows(cell, 1, series))
    assert CellSeries.objects.filter(cell=cell).count() == 2
    stored = seriesstore.read({cell.pk: 1}, "tps")
    t, values = stored[cell.pk]
    assert t.tolist() == [1.0, 3.0] and values.tolist() == [10.0, 12.5]
    assert CellSeries.objects.get(cell=cell, metric="tps").count == 2


def test_series_of_another_attempt_are_not_read(team):
    cell = make_run(team, cells=[({}, 1, {}, {"attempt": 2})]).cells.get()
    CellSeries.objects.bulk_create(seriesstore.rows(cell, 1, {"t": [1.0], "tps": [5.0]}))
    assert seriesstore.read({cell.pk: 2}, "tps") == {}


@pytest.mark.parametrize("n, width", [(0, 10), (1, 10), (3, 2), (50, 200), (1000, 100), (997, 37)])
def test_downsample_arrays_keeps_first_last_and_each_buckets_extremes(n, width):
    rng = np.random.default_rng(n)
    t = np.arange(1, n + 1, dtype=float)
    values = rng.normal(100, 10, n)
    xs, ys = downsample_arrays(t, values, width)
    assert len(xs) == len(ys) <= max(width, 2)
    if n:
        assert xs[0] == 1.0 and xs[-1] == float(n)
        assert xs == sorted(xs)
    if n > width >= 4:  # the global extremes survive
        assert values.min() in ys and values.max() in ys
    assert downsample(list(zip(t.tolist(), values.tolist())), width) == list(zip(xs, ys))


@pytest.fixture
def back_to_the_latest_schema():
    """The test database at the latest migration again, whatever the test
    did: a test left on an old schema failed every later test of its process."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_migration_moves_every_point_to_arrays_and_back(team, back_to_the_latest_schema):
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    old = executor.loader.project_state([BEFORE]).apps
    Cell, SeriesPoint = old.get_model("benchapp", "Cell"), old.get_model("benchapp", "SeriesPoint")
    Run = old.get_model("benchapp", "Run")
    run = Run.objects.create(team_id=team.pk, name="r", tool="sysbench", document={})
    cells = [Cell.objects.create(run=run, index=i, key=f"k{i}", repeat=1, axes={}) for i in (1, 2)]
    written = sorted(
        (cell.pk, attempt, metric, float(t), float(t * 1.5 + cell.pk))
        for cell in cells
        for attempt in (1, 2)
        for metric in ("tps", "lat_ms")
        for t in range(1, 31)
    )
    SeriesPoint.objects.bulk_create(
        SeriesPoint(cell_id=c, attempt=a, metric=m, t=t, value=v) for c, a, m, t, v in written
    )
    executor = MigrationExecutor(connection)
    executor.migrate([AFTER])
    new = executor.loader.project_state([AFTER]).apps.get_model("benchapp", "CellSeries")
    assert new.objects.count() == 8
    moved = sorted(
        (cell_id, attempt, metric, t, v)
        for cell_id in (c.pk for c in cells)
        for attempt in (1, 2)
        for (t, metric, v) in seriesstore.points(cell_id, attempt)
    )
    assert moved == written
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    back = executor.loader.project_state([BEFORE]).apps.get_model("benchapp", "SeriesPoint")
    assert sorted(back.objects.values_list("cell_id", "attempt", "metric", "t", "value")) == written
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
