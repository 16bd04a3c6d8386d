"""The packed run summaries (benchapp.store.summarystore) and the migration that
packs the former one-row-per-point RunSummary table (0016)."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from benchapp.histories import history
from benchapp.models import Alert, Plan, Run, RunPoints
from benchapp.store import summarystore
from benchapp.store.summarystore import Point

pytestmark = pytest.mark.django_db

BEFORE = ("benchapp", "0016_target_cloud_instance")
AFTER = ("benchapp", "0017_packed_run_summaries")


def _run(team, plan, **fields) -> Run:
    return Run.objects.create(
        team=team, plan=plan, name="r", tool="sysbench", document={}, status=Run.SUCCEEDED, **fields
    )


def _point(run, key, group, metric, mean, count=3) -> Point:
    return Point(run.pk, run.created_at, key, group, metric, mean, mean - 1, mean + 2, count)


@pytest.fixture
def plan(team):
    return Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})


def test_a_runs_points_are_one_row_per_metric_read_back_as_written(team, plan):
    run = _run(team, plan)
    points = [
        _point(run, "threads=1", "", "tps", 812.5),
        _point(run, "threads=4", "", "tps", 2400.0, count=1),
        _point(run, "threads=1", "engine=innodb", "tps", 700.0),
        _point(run, "threads=1", "", "latency_avg_ms", 5.5),
    ]
    summarystore.write(run, points)
    assert RunPoints.objects.filter(run=run).count() == 2
    by_name = lambda p: (p.cell_key, p.group, p.metric)  # noqa: E731
    assert sorted(summarystore.read([plan.pk]), key=by_name) == sorted(points, key=by_name)
    only = summarystore.read([plan.pk], metrics=["tps"], keys=["threads=1"], dates=False)
    assert sorted((p.group, p.mean, p.low, p.run_created_at) for p in only) == [
        ("", 812.5, None, None),
        ("engine=innodb", 700.0, None, None),
    ]
    assert set(summarystore.names([plan.pk]).values()) == {
        ("threads=1", "", "tps"),
        ("threads=4", "", "tps"),
        ("threads=1", "engine=innodb", "tps"),
        ("threads=1", "", "latency_avg_ms"),
    }
    summarystore.write(run, points[:1])  # rewritten, not added to
    assert list(summarystore.read([plan.pk])) == points[:1]


def test_a_history_is_read_in_run_order_from_the_plans_rows_only(team, plan):
    other = Plan.objects.create(team=team, name="other", tool="sysbench", document={})
    late, early = _run(team, plan), _run(team, plan)
    Run.objects.filter(pk=early.pk).update(created_at=late.created_at - timedelta(days=1))
    early.refresh_from_db()
    for run, mean in ((late, 2.0), (early, 1.0)):
        summarystore.write(run, [_point(run, "k", "", "tps", mean)])
    stranger = _run(team, other)
    summarystore.write(stranger, [_point(stranger, "k", "", "tps", 9.0)])
    series = history.load_series([plan.pk])[("k", "", "tps")]
    assert (series.run_ids, series.means) == ([early.pk, late.pk], [1.0, 2.0])
    since = history.load_series([plan.pk], since=late.created_at)[("k", "", "tps")]
    assert since.run_ids == [late.pk]
    assert list(summarystore.unsummarized(Run.objects.filter(plan=other))) == []


@pytest.fixture
def back_to_the_latest_schema():
    """The test database at the latest migration again, whatever the test
    did: a test left on an old schema failed every later test of its process."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)  # SQLite alters tables outside a transaction only
def test_migration_packs_every_summary_with_the_same_history_and_alerts(
    team, plan, back_to_the_latest_schema
):
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    old = executor.loader.project_state([BEFORE]).apps
    RunSummary = old.get_model("benchapp", "RunSummary")
    runs = [_run(team, plan) for _ in range(30)]
    rows = []
    for i, run in enumerate(runs):
        for key, group, metric, level in (
            ("threads=1", "", "tps", 1000.0),
            ("threads=4", "", "tps", 3000.0),
            ("threads=1", "engine=innodb", "latency_avg_ms", 5.0),
        ):
            # tps drops by 15 % from run 20 on; the wiggle keeps a variance
            mean = level * (0.85 if i >= 20 and metric == "tps" else 1) * (1 + (i % 3) * 0.002)
            rows.append((run.pk, key, group, metric, mean, mean * 0.99, mean * 1.01, 3))
    RunSummary.objects.bulk_create(
        RunSummary(
            run_id=r,
            plan_id=plan.pk,
            run_created_at=Run.objects.get(pk=r).created_at,
            cell_key=k,
            group=g,
            metric=m,
            mean=mean,
            low=low,
            high=high,
            count=n,
        )
        for r, k, g, m, mean, low, high, n in rows
    )
    executor = MigrationExecutor(connection)
    executor.migrate([AFTER])
    assert RunPoints.objects.count() == 30 * 2  # one row per run and metric
    series = history.load_series([plan.pk])
    assert list(series) == sorted({(k, g, m) for _r, k, g, m, *_f in rows})
    for (key, group, metric), s in series.items():
        mine = [row for row in rows if row[1:4] == (key, group, metric)]
        assert s.run_ids == [row[0] for row in mine]
        assert (s.means, s.lows, s.highs) == tuple([row[i] for row in mine] for i in (4, 5, 6))
    assert [p.count for p in summarystore.read([plan.pk])] == [3] * len(rows)
    executor = MigrationExecutor(connection)  # the alerts' own columns came later
    executor.migrate(executor.loader.graph.leaf_nodes())
    alerts = history.detect_plan(plan)
    assert sorted((a.cell_key, a.metric, a.start_run_id, a.bad) for a in alerts) == [
        ("threads=1", "tps", runs[20].pk, True),
        ("threads=4", "tps", runs[20].pk, True),
    ]
    Alert.objects.all().delete()
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    back = executor.loader.project_state([BEFORE]).apps.get_model("benchapp", "RunSummary")
    fields = ("run_id", "cell_key", "group", "metric", "mean", "low", "high", "count")
    assert sorted(back.objects.values_list(*fields)) == sorted(rows)
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())
