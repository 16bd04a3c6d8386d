"""The history API: alerts with their verdicts and confirmations, a plan's
trend series, the team's notification settings, with the pages' roles
(outsiders 404, viewers read only, notification settings for team admins)."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchapp.models import Alert, Notifier, Plan, Run
from benchapp.store import summarystore

pytestmark = pytest.mark.django_db


def api(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def plan(team):
    document = {"name": "p", "tool": "fio", "targets": [{"name": "disk", "kind": "host"}]}
    return Plan.objects.create(team=team, name="p", tool="fio", document=document)


def make_run(team, plan, mean: float) -> Run:
    run = Run.objects.create(
        team=team, plan=plan, name="r", tool="fio", document=plan.document, status=Run.SUCCEEDED
    )
    point = summarystore.Point(
        run_id=run.pk,
        run_created_at=run.created_at,
        cell_key="rw=read",
        group="",
        metric="iops",
        mean=mean,
        low=mean - 1,
        high=mean + 1,
        count=3,
    )
    summarystore.write(run, [point])
    return run


@pytest.fixture
def alert(team, plan):
    make_run(team, plan, 100)
    after = make_run(team, plan, 50)
    return Alert.objects.create(
        team=team,
        plan=plan,
        cell_key="rw=read",
        metric="iops",
        start_run=after,
        before_mean=100,
        before_low=99,
        before_high=101,
        after_mean=50,
        after_low=49,
        after_high=51,
        magnitude=-0.5,
        pvalue=0.001,
        bad=True,
    )


def test_alerts_list_filter_and_read(viewer, alert, plan):
    client = api(viewer)
    (row,) = client.get("/api/alerts/", {"plan": plan.pk}).json()["results"]
    assert row["id"] == alert.pk and row["change"] == "worse" and row["verdict"] is None
    assert client.get("/api/alerts/", {"status": "resolved"}).json()["results"] == []
    assert client.get(f"/api/alerts/{alert.pk}/").json()["magnitude"] == -0.5


def test_a_member_gives_a_verdict_a_viewer_cannot(member, viewer, alert):
    response = api(viewer).post(f"/api/alerts/{alert.pk}/verdict/", {"verdict": True})
    assert response.status_code == 403
    alert.refresh_from_db()
    assert alert.verdict is None
    response = api(member).post(f"/api/alerts/{alert.pk}/verdict/", {"verdict": False})
    assert response.status_code == 200 and response.json()["verdict"] is False
    alert.refresh_from_db()
    assert alert.verdict is False
    counts = api(viewer).get("/api/alerts/verdicts/").json()
    assert counts["false"] == 1 and counts["true"] == 0 and counts["precision"] == 0
    bad = api(member).post(f"/api/alerts/{alert.pk}/verdict/", {"verdict": "maybe"})
    assert bad.status_code == 400 and "verdict" in bad.json()


def test_a_judged_alert_is_not_confirmed_again(member, alert):
    Alert.objects.filter(pk=alert.pk).update(status=Alert.CONFIRMED)
    response = api(member).post(f"/api/alerts/{alert.pk}/confirm/")
    assert response.status_code == 400
    assert response.json()["detail"] == "This alert is already being or has been judged."
    assert Run.objects.count() == 2


@pytest.mark.parametrize(
    "method, url",
    [
        ("get", "/api/alerts/{alert}/"),
        ("post", "/api/alerts/{alert}/verdict/"),
        ("post", "/api/alerts/{alert}/confirm/"),
        ("get", "/api/plans/{plan}/trend/"),
    ],
)
def test_an_outsider_gets_404(outsider, alert, plan, method, url):
    response = getattr(api(outsider), method)(
        url.format(alert=alert.pk, plan=plan.pk), {"verdict": True}
    )
    assert response.status_code == 404
    alert.refresh_from_db()
    assert alert.verdict is None and alert.status == Alert.NEW
    assert api(outsider).get("/api/alerts/").json()["results"] == []  # their own team's


def test_trend_is_the_plans_history_series(viewer, alert, plan):
    data = api(viewer).get(f"/api/plans/{plan.pk}/trend/").json()
    assert data["metric"] == "iops" and data["metrics"] == ["iops"]
    (line,) = data["lines"]
    runs = list(plan.runs.order_by("created_at").values_list("pk", flat=True))
    assert line["key"] == "rw=read" and line["runs"] == runs
    assert line["mean"] == [100, 50] and line["low"] == [99, 49] and line["high"] == [101, 51]
    # A metric or cell key the history does not have is refused, as on the trend page.
    unknown = api(viewer).get(f"/api/plans/{plan.pk}/trend/", {"metric": "bw"})
    assert unknown.status_code == 400 and "iops" in unknown.json()["metric"][0]
    unknown = api(viewer).get(f"/api/plans/{plan.pk}/trend/", {"keys": "rw=write"})
    assert unknown.status_code == 400 and "rw=read" in unknown.json()["keys"][0]


@pytest.mark.parametrize("persona", ["viewer", "member"])
def test_notification_settings_are_for_team_admins(request, persona, team):
    client = api(request.getfixturevalue(persona))
    assert client.get("/api/notifications/").status_code == 403
    response = client.patch("/api/notifications/", {"emails": "x@example.com"}, format="json")
    assert response.status_code == 403
    assert not Notifier.objects.filter(team=team).exists()


def test_a_team_admin_sets_notifications_the_secret_is_write_only(team_admin, team):
    client = api(team_admin)
    assert client.get("/api/notifications/").json() == {
        "webhook_url": "",
        "emails": "",
        "only_bad": True,
        "has_secret": False,
    }
    response = client.patch(
        "/api/notifications/",
        {
            "webhook_url": "https://hooks.example.com/x",
            "emails": "a@x.org; b@x.org",
            "secret": "s3cret-value",
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    assert response.json() == {
        "webhook_url": "https://hooks.example.com/x",
        "emails": "a@x.org, b@x.org",
        "only_bad": True,
        "has_secret": True,
    }
    assert "s3cret-value" not in response.content.decode()
    notifier = Notifier.objects.get(team=team)
    assert notifier.webhook_secret and "s3cret-value" not in notifier.webhook_secret
    bad = client.patch("/api/notifications/", {"emails": "not-an-email"}, format="json")
    assert bad.status_code == 400 and "emails" in bad.json()
    assert Notifier.objects.get(team=team).emails == "a@x.org, b@x.org"
    cleared = client.patch("/api/notifications/", {"clear_secret": True}, format="json")
    assert cleared.json()["has_secret"] is False
