"""The history pages are reachable: navigation, dashboard, plan list and plan page link them."""

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


def test_navigation_has_alerts(member_client):
    html = member_client.get("/").content.decode()
    assert '<a href="/alerts/">Alerts</a>' in html


def test_dashboard_shows_recent_alerts_and_trend_links(member_client, plan, dropped):
    html = member_client.get("/").content.decode()
    box = html.split('class="card recent-alerts"')[1].split("</section>")[0]
    trend = reverse("plan_trend", args=[plan.pk])
    # each alert opens the trend on its own metric and cell
    assert f'href="{trend}?metric=tps&amp;keys=threads%3D' in box and "threads=4" in box
    assert "tps worse -" in box and " % from " in box  # the magnitude as a percentage
    assert html.count(f'href="{trend}" class="trend-link"') >= 1  # on the recent runs


def test_dashboard_without_alerts_says_so(member_client):
    html = member_client.get("/").content.decode()
    assert "No alerts." in html.split('class="card recent-alerts"')[1]


def test_plan_page_links_trend_and_its_alerts(member_client, plan, dropped):
    html = member_client.get(reverse("plan_detail", args=[plan.pk])).content.decode()
    assert f'href="{reverse("plan_trend", args=[plan.pk])}"' in html
    open_alerts = Alert.objects.filter(plan=plan, status__in=Alert.OPEN).count()
    assert open_alerts > 0
    assert (
        f'href="/alerts/?plan={plan.pk}" id="plan-alerts-link">Alerts ({open_alerts} open)' in html
    )


def test_plan_list_links_trends(member_client, plan):
    html = member_client.get(reverse("plan_list")).content.decode()
    assert f'href="{reverse("plan_trend", args=[plan.pk])}" class="trend-link"' in html


def test_alert_list_of_one_plan(member_client, team, plan, dropped):
    other = Plan.objects.create(team=team, name="other", tool="sysbench", document={})
    nightly(team, other, [10] * 20 + [20] * 10)
    history.detect_plan(other)
    everything = member_client.get(reverse("alert_list")).context["alerts"]
    assert {a.plan_id for a in everything} == {plan.pk, other.pk}
    page = member_client.get(reverse("alert_list"), {"plan": plan.pk})
    assert {a.plan_id for a in page.context["alerts"]} == {plan.pk}
    assert "Alerts of nightly" in page.content.decode()


@pytest.mark.parametrize("bad", ["zzz", "999999"])
def test_alert_list_names_an_unknown_plan(member_client, plan, dropped, bad):
    page = member_client.get(reverse("alert_list"), {"plan": bad})
    assert page.status_code == 200
    assert f"No plan &#x27;{bad}&#x27; in alpha: showing every alert." in page.content.decode()
    assert len(page.context["alerts"]) == Alert.objects.filter(lead=None).count()  # incidents


def test_outsider_cannot_filter_by_a_foreign_plan(outsider_client, plan, dropped):
    page = outsider_client.get(reverse("alert_list"), {"plan": plan.pk})
    assert list(page.context["alerts"]) == []
    assert "No plan" in page.content.decode()
