"""Alerts judge by the metric catalog's direction (runners.tools.direction):
a mysqlslap slowdown (avg_s up) is worse and notified under "only changes
for the worse", a speed-up is better and not; a copy of a parameter
(clients) and a telemetry summary are never alerted on; a metric with no direction only "changed";
a plan edit between the runs is an event on the trend and on the alert."""

import random

import pytest
from django.urls import reverse

from benchapp.histories import history, notify, planedits
from benchapp.history_tasks import detect_changes
from benchapp.models import Alert, AlertDelivery, Notifier, Plan
from tests.benchapp.results_data import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def plan(team):
    return Plan.objects.create(team=team, name="slap", tool="mysqlslap", document={})


def slap_nights(team, plan, levels, clients=8, document=None):
    """One finished mysqlslap run per level of avg_s (seconds), two
    concurrency cells of three repeats; qps follows 1/avg_s, and clients is
    what mysqlslap prints back of the plan's --concurrency."""
    rng = random.Random(len(levels) * 7 + clients)
    runs = []
    for i, avg in enumerate(levels):
        cells = []
        for c in (1, 4):
            for r in (1, 2, 3):
                a = avg * c * (1 + rng.gauss(0, 0.01))
                cells.append(
                    (
                        {"concurrency": c},
                        r,
                        {
                            "avg_s": a,
                            "min_s": a * 0.9,
                            "max_s": a * 1.1,
                            "qps": 1000 / a,
                            "clients": float(clients * c),
                            "queries_per_client": 100.0,
                            # a telemetry summary that steps with the clients
                            "telemetry.client.cpu_busy_pct.mean": float(clients * c * 5),
                        },
                    )
                )
        runs.append(
            make_run(
                team, name=f"night {i}", tool="mysqlslap", plan=plan, cells=cells, document=document
            )
        )
    return runs


def test_a_slower_mysqlslap_is_worse_and_notified_under_only_worse(team, plan):
    Notifier.objects.create(team=team, emails="ops@example.com", only_bad=True)
    runs = slap_nights(team, plan, [1.0] * 20)
    # the plan's concurrency doubled at the same time: clients steps too
    runs += slap_nights(team, plan, [1.3] * 10, clients=16)
    ids = detect_changes(runs[-1].pk)
    alerts = Alert.objects.filter(pk__in=ids)
    by_metric = {(a.cell_key, a.metric): a for a in alerts}
    for key in ("concurrency=1", "concurrency=4"):
        assert by_metric[(key, "avg_s")].bad is True
        assert by_metric[(key, "avg_s")].change == "worse"
        assert by_metric[(key, "avg_s")].magnitude == pytest.approx(0.3, abs=0.02)
        assert by_metric[(key, "qps")].bad is True  # fewer queries per second: worse too
        assert by_metric[(key, "min_s")].bad is True
    # a copy of a parameter is no measurement: never alerted
    assert not alerts.filter(metric__in=["clients", "queries_per_client"]).exists()
    # telemetry explains the tool's figure; it is never alerted on by itself
    assert not alerts.filter(metric__startswith="telemetry.").exists()
    assert all(a.start_run == runs[20] for a in alerts)
    notified = set(AlertDelivery.objects.values_list("alert__metric", "channel"))
    assert ("qps", AlertDelivery.EMAIL) in notified  # the incident lead: the main metric
    # Every one of them is worse, and they moved at one change: one incident,
    # notified once through its lead, which the others follow.
    lead = AlertDelivery.objects.get().alert
    assert lead.lead is None and lead.followers.count() == alerts.count() - 1


def test_a_faster_mysqlslap_is_better_and_not_notified_under_only_worse(team, plan):
    Notifier.objects.create(team=team, emails="ops@example.com", only_bad=True)
    runs = slap_nights(team, plan, [1.0] * 20 + [0.7] * 10)
    ids = detect_changes(runs[-1].pk)
    alerts = Alert.objects.filter(pk__in=ids)
    assert {a.metric for a in alerts} == {"avg_s", "min_s", "max_s", "qps"}
    assert all(a.bad is False and a.change == "better" for a in alerts)
    assert not AlertDelivery.objects.exists()
    # without the filter, the improvements are sent too
    Notifier.objects.filter(team=team).update(only_bad=False)
    for alert in alerts:
        notify.queue(alert, "new")
    assert AlertDelivery.objects.count() == 1 and len(ids) > 1  # one incident


def test_a_metric_without_a_direction_only_changed(team):
    """sysbench's total of transactions has no better side (a count fixed by
    --events, or following --time): its step is "changed", never worse."""
    plan = Plan.objects.create(team=team, name="sb", tool="sysbench", document={})
    Notifier.objects.create(team=team, emails="ops@example.com", only_bad=True)
    rng = random.Random(3)
    runs = [
        make_run(
            team,
            plan=plan,
            cells=[
                ({"threads": 4}, r, {"transactions": v * (1 + rng.gauss(0, 0.01)), "tps": 500.0})
                for r in (1, 2, 3)
            ],
        )
        for v in [1000] * 20 + [1500] * 10
    ]
    (alert_id,) = detect_changes(runs[-1].pk)
    alert = Alert.objects.get(pk=alert_id)
    assert (alert.metric, alert.bad, alert.change) == ("transactions", None, "changed")
    assert not AlertDelivery.objects.exists()  # not "for the worse"
    page = history.recent_alerts(team)
    assert page == [alert]


def test_a_change_at_a_plan_edit_says_so_and_the_trend_marks_it(team, plan, member_client):
    before = {"params": {"concurrency": 8, "iterations": 3}}
    after = {"params": {"concurrency": 16, "iterations": 3}}
    runs = slap_nights(team, plan, [1.0] * 20, document=before)
    runs += slap_nights(team, plan, [1.3] * 10, clients=16, document=after)
    created = history.detect_plan(plan)
    avg = next(a for a in created if a.metric == "avg_s")
    assert f"between run #{runs[19].pk} and run #{runs[20].pk}" in avg.plan_edit
    assert "params.concurrency: 8 → 16" in avg.plan_edit
    page = member_client.get(reverse("plan_trend", args=[plan.pk]))
    assert "params.concurrency: 8 → 16" in page.content.decode()
    data = member_client.get(reverse("plan_trend_json", args=[plan.pk]), {"metric": "avg_s"}).json()
    assert [e["run"] for e in data["edits"]] == [runs[20].pk]
    assert "params.concurrency: 8 → 16" in data["edits"][0]["text"]
    assert (data["direction"], data["sense"]) == ("lower", "lower is better")


def test_no_edit_no_note(team, plan):
    doc = {"params": {"concurrency": 8}}
    slap_nights(team, plan, [1.0] * 20 + [1.3] * 10, document=doc)
    created = history.detect_plan(plan)
    assert created and all(a.plan_edit == "" for a in created)
    assert planedits.plan_edits(history.history_plans(plan))[0] == []
