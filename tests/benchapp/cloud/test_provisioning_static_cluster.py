"""The second provider end to end: a static_cluster target (two existing
hosts, 0.50 USD per host-hour) is quota-checked, budgeted, leased, run on
through a real worker, released and priced, with no benchapp code naming it."""

from __future__ import annotations

import pytest

from benchapp.cloud import pricing
from benchapp.models import CloudResource, Run
from benchapp.plans import planning
from benchapp.runs import orchestration
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)

CLUSTER = {
    "provider": "static_cluster",
    "kind": "host",
    # Two names of this machine: fio runs here, as on a lab host without ssh.
    "hosts": [{"host": "127.0.0.1"}, {"host": "localhost"}],
    "price_per_hour": 0.5,
}


def plan(cluster: dict = CLUSTER) -> dict:
    return {
        "name": "fio on a lab cluster",
        "tool": "fio",
        "targets": [{"name": "lab", "kind": "host", "provision": cluster}],
        "client": {"on": "target"},
        "params": {
            "filename": "/tmp/benchboard-cluster-fio",
            "bs": "4k",
            "size": "4M",
            "runtime": 1,
            "time_based": True,
            "group_reporting": True,
        },
        "axes": {"rw": ["read", "write"]},
        "timeout": 60,
    }


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def test_preview_and_budget_price_every_host(team):
    estimate = pricing.estimate_run(team, plan())
    assert (estimate["total"], estimate["hours"], estimate["resources"]) == (1.0, 1.0, 2)
    assert [(line["target"], line["quantity"], line["unit"]) for line in estimate["lines"]] == [
        ("lab", 2, "host-hour")
    ]
    team.max_run_cost = 0.99
    team.save()
    with pytest.raises(planning.PlanRefused, match="estimated cost of this run is 1.00 USD"):
        orchestration.start_run(team, plan())
    assert Run.objects.count() == 0


def test_quota_counts_one_resource_per_host(team):
    team.max_cloud_resources = 1
    team.save()
    with pytest.raises(planning.PlanRefused, match="needs 2 cloud resources"):
        orchestration.start_run(team, plan())


def test_run_leases_the_hosts_runs_and_releases_them(team, start_worker):
    start_worker("a", **FAST_LEASES)
    run = orchestration.start_run(team, plan())
    wait_for(lambda: finished(run), timeout=120)
    assert (run.status, run.error) == (Run.SUCCEEDED, "")
    assert sorted(c.status for c in run.cells.all()) == ["succeeded", "succeeded"]
    rows = CloudResource.objects.filter(run=run).order_by("token")
    # Teardown is a task sent when the run ends: wait for it, as a user would.
    wait_for(lambda: not rows.exclude(state="deleted").exists(), timeout=60)
    assert [(r.kind, r.cloud_id, r.state) for r in rows] == [
        ("cluster_host", "lab/0/127.0.0.1", "deleted"),
        ("cluster_host", "lab/1/localhost", "deleted"),
    ]
    assert [float(r.price_per_hour) for r in rows] == [0.5, 0.5]
    held_hours = sum((r.deleted_at - r.created_at).total_seconds() / 3600 for r in rows)
    assert pricing.actual_cost(run)["total"] == pytest.approx(0.5 * held_hours)
    assert pricing.price_performance(run)["lab"]["dollars_per_hour"] == 1.0
