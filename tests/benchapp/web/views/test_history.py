"""Trend page, its JSON, baseline pinning, the alerts page and verdicts."""

import pytest
from django.urls import reverse

from benchapp.histories import history
from benchapp.models import Alert, Plan
from tests.benchapp.histories.test_history import nightly

pytestmark = pytest.mark.django_db


@pytest.fixture
def plan(team):
    return Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})


@pytest.fixture
def dropped(team, plan):
    runs = nightly(team, plan, [1000] * 20 + [850] * 10)
    history.detect_plan(plan)
    return runs


def test_trend_page_and_json(member_client, plan, dropped):
    page = member_client.get(reverse("plan_trend", args=[plan.pk]))
    assert page.status_code == 200
    assert b"threads=1" in page.content  # the alert table
    data = member_client.get(
        reverse("plan_trend_json", args=[plan.pk]), {"metric": "tps", "keys": "threads=4"}
    ).json()
    assert data["metrics"] == ["latency_avg_ms", "tps"]
    assert data["keys"] == ["threads=1", "threads=4"]
    (line,) = data["lines"]
    assert line["key"] == "threads=4"
    assert line["runs"] == [r.pk for r in dropped]
    assert line["change"] == dropped[20].pk
    assert all(lo <= m <= hi for lo, m, hi in zip(line["low"], line["mean"], line["high"]))
    assert line["low"][0] < line["high"][0]  # three repeats make a band


def test_trend_json_query_count(member_client, plan, dropped, django_assert_max_num_queries):
    url = reverse("plan_trend_json", args=[plan.pk])
    with django_assert_max_num_queries(10):
        member_client.get(url, {"metric": "tps"})


def test_long_histories_are_thinned_but_keep_the_change(member_client, plan, dropped, monkeypatch):
    from benchapp.web.views import history as views

    monkeypatch.setattr(views, "MAX_POINTS", 7)
    data = member_client.get(reverse("plan_trend_json", args=[plan.pk]), {"metric": "tps"}).json()
    for line in data["lines"]:
        assert len(line["runs"]) <= 9
        assert line["runs"][-1] == dropped[-1].pk
        assert dropped[20].pk in line["runs"]


def test_outsiders_get_404(outsider_client, plan, dropped):
    assert outsider_client.get(reverse("plan_trend", args=[plan.pk])).status_code == 404
    assert outsider_client.get(reverse("plan_trend_json", args=[plan.pk])).status_code == 404
    alert = Alert.objects.first()
    url = reverse("alert_verdict", args=[alert.pk])
    assert outsider_client.post(url, {"verdict": "true"}).status_code == 404
    assert outsider_client.get(reverse("alert_list")).content.count(b"threads=") == 0


def test_pin_baseline(member_client, plan, dropped, team):
    url = reverse("plan_pin_baseline", args=[plan.pk])
    member_client.post(url, {"run": dropped[3].pk})
    plan.refresh_from_db()
    assert plan.baseline_run == dropped[3]
    foreign = nightly(team, None, [1])[0]
    member_client.post(url, {"run": foreign.pk})
    plan.refresh_from_db()
    assert plan.baseline_run == dropped[3]


def test_verdicts_are_counted(member_client, team, dropped):
    first, second = Alert.objects.order_by("pk")
    member_client.post(reverse("alert_verdict", args=[first.pk]), {"verdict": "true"})
    member_client.post(reverse("alert_verdict", args=[second.pk]), {"verdict": "false"})
    counts = history.verdict_counts(team)
    assert (counts["true"], counts["false"], counts["open"]) == (1, 1, 0)
    assert counts["precision"] == 0.5
    page = member_client.get(reverse("alert_list"))
    assert (
        "1 true, 1 false, 0 without a verdict · 50 % of judged alerts were right"
        in page.content.decode()
    )


def test_recent_alerts_include(team, dropped):
    from django.template.loader import render_to_string

    html = render_to_string("history/_recent_alerts.html", {"alerts": history.recent_alerts(team)})
    assert html.count("<li") == 2


def test_trend_refuses_unknown_metric_or_key_naming_the_accepted_ones(member_client, plan, dropped):
    page = member_client.get(f"/plans/{plan.pk}/trend/?metric=zzz")
    assert page.status_code == 400
    assert "metric=&#x27;zzz&#x27; is not accepted here. Accepted values: " in page.content.decode()
    data = member_client.get(f"/plans/{plan.pk}/trend.json?metric=tps&keys=threads%3D999")
    assert data.status_code == 400 and data.json()["parameter"] == "keys"
    assert "threads=4" in data.json()["error"]


def test_trend_json_describes_the_alert_marker_in_percent(member_client, plan, dropped):
    alert = Alert.objects.get(plan=plan, cell_key="threads=4", metric="tps")
    data = member_client.get(f"/plans/{plan.pk}/trend.json?metric=tps&keys=threads%3D4").json()
    (line,) = data["lines"]
    expected = f"worse {alert.magnitude * 100:+.1f} % from run #{alert.start_run_id} (new)"
    assert line["alert"] == {"change": "worse", "text": expected}
    assert line["change"] == alert.start_run_id


def test_trend_opens_on_the_plans_main_metric_with_its_title(member_client, plan, dropped):
    # latency_avg_ms comes first by name; sysbench's main metric is tps
    data = member_client.get(reverse("plan_trend_json", args=[plan.pk])).json()
    assert data["metric"] == "tps"
    assert data["metric_title"] == "Transactions per second (tps)"
    assert (data["unit"], data["sense"]) == ("tps", "higher is better")
    (group,) = data["metric_groups"]
    assert group["group"] == "sysbench"
    assert [o["label"] for o in group["options"]] == [
        "Transactions per second (tps)",
        "Average latency (ms)",
    ]
