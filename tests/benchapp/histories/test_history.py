"""Histories and change detection over stored runs (benchapp.histories.history)."""

import random

import pytest

from benchapp.histories import history
from benchapp.history_tasks import detect_changes
from benchapp.models import Alert, HistoryState, Plan, Run, RunPoints
from tests.benchapp.results_data import make_run

pytestmark = pytest.mark.django_db


def nightly(team, plan, tps_values, latency=None):
    """One finished run per value: two threads cells, three repeats each."""
    rng = random.Random(1)
    runs = []
    for i, tps in enumerate(tps_values):
        cells = [
            (
                {"threads": t},
                r,
                {
                    "tps": tps * t * (1 + rng.gauss(0, 0.01)),
                    "latency_avg_ms": (latency or 5.0) * (1 + rng.gauss(0, 0.01)),
                },
            )
            for t in (1, 4)
            for r in (1, 2, 3)
        ]
        runs.append(make_run(team, name=f"night {i}", plan=plan, cells=cells))
    return runs


@pytest.fixture
def plan(team):
    return Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})


def test_a_drop_in_tps_raises_one_bad_alert_per_cell_key(team, plan):
    runs = nightly(team, plan, [1000] * 20 + [850] * 10)
    created = history.detect_plan(plan)
    assert sorted((a.cell_key, a.metric) for a in created) == [
        ("threads=1", "tps"),
        ("threads=4", "tps"),
    ]
    for alert in created:
        assert alert.start_run == runs[20]
        assert alert.bad and alert.status == Alert.NEW
        assert alert.magnitude == pytest.approx(-0.15, abs=0.01)
        assert alert.before_low < alert.before_mean < alert.before_high
    assert history.detect_plan(plan) == []  # the same change is not alerted twice
    assert Alert.objects.count() == 2


def test_a_lower_latency_is_a_good_change(team, plan):
    nightly(team, plan, [1000] * 30, latency=5.0)
    runs = nightly(team, plan, [1000] * 10, latency=4.0)
    alerts = history.detect_plan(plan)
    assert {(a.cell_key, a.metric, a.bad) for a in alerts} == {
        ("threads=1", "latency_avg_ms", False),
        ("threads=4", "latency_avg_ms", False),
    }
    assert {a.start_run for a in alerts} == {runs[0]}


def test_failed_and_other_plans_runs_are_not_history(team, plan):
    nightly(team, plan, [1000] * 20)
    other = Plan.objects.create(team=team, name="other", tool="sysbench", document={})
    nightly(team, other, [500] * 10)
    failed = nightly(team, plan, [500] * 10)
    Run.objects.filter(pk__in=[r.pk for r in failed]).update(status=Run.FAILED)
    assert history.detect_plan(plan) == []
    # The history detection read: the plan's 20 finished runs, summarized.
    in_history = RunPoints.objects.filter(plan_id__in=history.history_plans(plan))
    assert in_history.values("run").distinct().count() == 20


def test_plans_of_one_study_share_a_history(team, plan):
    nightly(team, plan, [1000] * 20)
    successor = Plan.objects.create(
        team=team, name="nightly v2", tool="sysbench", document={}, study="oltp"
    )
    Plan.objects.filter(pk=plan.pk).update(study="oltp")
    nightly(team, successor, [700] * 10)
    assert {a.metric for a in history.detect_plan(successor)} == {"tps"}


def test_the_task_is_incremental_and_keeps_its_state(team, plan):
    runs = nightly(team, plan, [1000] * 25)
    assert detect_changes(runs[-1].pk) == []
    state = HistoryState.objects.get(plan=plan, cell_key="threads=1", metric="tps").state
    assert state["length"] == 25
    more = nightly(team, plan, [800] * 8)
    assert len(detect_changes(more[-1].pk)) == 2
    assert (
        HistoryState.objects.get(plan=plan, cell_key="threads=1", metric="tps").state["length"]
        == 33
    )


def test_directions_come_from_the_catalog(plan):
    assert history.judged(plan, "tps") == (True, "higher")
    assert history.judged(plan, "latency_p95_ms") == (True, "lower")
    assert history.judged(plan, "threads") == (False, None)  # a parameter printed back
