"""The trend and the alerts are reachable from the dashboard, in a real browser:
two clicks through the navigation and the plan list, one through an alert."""

import pytest

from benchapp.histories import history
from benchapp.models import Plan
from tests.benchapp.histories.test_history import nightly
from tests.support.browser import browser, browser_page, login, page  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def plan(team):
    plan = Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})
    nightly(team, plan, [1000] * 20 + [850] * 10)
    history.detect_plan(plan)
    return plan


def _on_trend(page, plan):
    page.wait_for_url(f"**/plans/{plan.pk}/trend/**")
    assert page.inner_text("h1") == "Trend of nightly"


def test_trend_in_two_clicks_from_the_dashboard(page, live_server, owner, plan):  # noqa: F811
    login(page, live_server, owner)
    page.goto(live_server.url + "/")
    page.click("nav.mainnav >> text=Plans")  # 1
    page.click(f"a.trend-link[href='/plans/{plan.pk}/trend/']")  # 2
    _on_trend(page, plan)


def test_trend_from_the_dashboards_alert_box(page, live_server, owner, plan):  # noqa: F811
    login(page, live_server, owner)
    page.goto(live_server.url + "/")
    box = page.locator("section.recent-alerts")
    assert "threads=4" in box.inner_text()
    box.locator("a", has_text="nightly").first.click()
    _on_trend(page, plan)
    assert "?metric=tps&keys=threads%3D" in page.url  # opens on the alert's metric and cell


def test_plan_page_to_its_alerts(page, live_server, owner, plan):  # noqa: F811
    login(page, live_server, owner)
    page.goto(live_server.url + "/")
    page.click("nav.mainnav >> text=Alerts")
    page.wait_for_url("**/alerts/")
    page.goto(f"{live_server.url}/plans/{plan.pk}/")
    page.click("#plan-alerts-link")
    page.wait_for_url(f"**/alerts/?plan={plan.pk}")
    assert page.inner_text("h1") == "Alerts of nightly"
    page.click("text=Trend of nightly")
    _on_trend(page, plan)
