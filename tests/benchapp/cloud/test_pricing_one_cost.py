"""One cost formula and one duration reader: the builder's preview, the
budget check and the results page give the same cost for one plan, and the
run's ETA reads a tool's parameter aliases."""

from __future__ import annotations

import pytest

from benchapp.analysis import results
from benchapp.cloud import pricing
from benchapp.models import Cell, Run
from benchapp.plans import planning
from benchapp.runs import orchestration, progress
from benchapp.web.views.plans import estimate as preview_estimate
from runners.plan import load_plan
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = {
    "name": "one cost",
    "tool": "fio",
    "targets": [
        {
            "name": "lab",
            "kind": "host",
            # A leased cluster (priced per host-hour by its provider) ...
            "provision": {
                "provider": "static_cluster",
                "hosts": [{"host": "127.0.0.1"}, {"host": "localhost"}],
                "price_per_hour": 0.25,
            },
        },
        # ... and an existing machine priced by the month.
        {"name": "box", "kind": "host", "host": "127.0.0.1", "price_per_month": 73},
    ],
    "client": {"on": "target"},
    "params": {
        "filename": "/tmp/benchboard-one-cost-fio",
        "bs": "4k",
        "size": "4M",
        "runtime": 1,
        "time_based": True,
    },
    "axes": {"target": ["lab", "box"]},
    "timeout": 60,
}
# 2 hosts x 0.25 + 73/730 per hour, one billed hour.
EXPECTED = 2 * 0.25 + 0.1


def test_preview_budget_and_results_give_one_cost(team, start_worker, settings):
    match_leases(settings, FAST_LEASES)
    plan = load_plan(PLAN)
    preview = preview_estimate(planning.check(PLAN, team))
    budget = pricing.estimate_plan(plan)
    assert (preview["cost"], preview["cost_hours"]) == (round(EXPECTED, 2), 1.0)
    assert budget["total"] == pytest.approx(EXPECTED)

    team.max_run_cost = EXPECTED - 0.01
    team.save()
    with pytest.raises(planning.PlanRefused, match="over the team's per-run budget"):
        orchestration.start_run(team, PLAN)
    team.max_run_cost = EXPECTED
    team.save()
    start_worker("a", **FAST_LEASES)
    run = orchestration.start_run(team, PLAN)
    wait_for(lambda: finished(run), timeout=120)
    assert (run.status, run.error) == (Run.SUCCEEDED, "")
    (shown,) = results.results([run])["costs"]
    assert (shown["total"], shown["hours"]) == (pytest.approx(EXPECTED), 1.0)


def test_eta_reads_the_frozen_cells_with_aliases(team):
    run = Run.objects.create(
        team=team,
        name="s4",
        tool="sysbench",
        status=Run.RUNNING,
        document={"tool": "sysbench", "params": {"max_time": 30}},
    )
    for index, seconds in enumerate([10, 30, 30, 50]):  # a `time` axis
        # The frozen cell holds canonical names (max_time became time) and axis values.
        Cell.objects.create(
            run=run,
            index=index,
            key=f"time={seconds},i={index}",
            target_name="db",
            spec={"cell": {"params": {"time": seconds, "threads": 4}}},
        )
    # 4 cells of 30 s on average + 3 s overhead, one target: not the 10 s default.
    assert progress.run_progress(run)["eta_s"] == 4 * 33.0
