"""Schedules: once at a time (ClockedSchedule) or cron (CrontabSchedule)
PeriodicTasks calling benchapp.start_plan [plan_id]; list, pause, delete."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import ClockedSchedule, PeriodicTask

from benchapp.histories import scheduling
from benchapp.models import Run
from benchapp.plans.planning import save_plan
from benchapp.tasks import start_plan
from tests.benchapp.ui_data import DEMO, make_target

pytestmark = pytest.mark.django_db


@pytest.fixture
def plan(team):
    make_target(team)
    return save_plan(team, DEMO)


@pytest.fixture
def cron(plan):
    return scheduling.schedule_cron(plan, scheduling.parse_cron("30 2 * * 1-5"))


def at(minutes=60):
    return (timezone.localtime() + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M")


def test_schedule_at_creates_a_one_off_clocked_task(member_client, plan):
    response = member_client.post(f"/plans/{plan.pk}/schedule/", {"kind": "at", "when": at()})
    assert response.url == "/schedules/"
    task = PeriodicTask.objects.get()
    assert (task.task, json.loads(task.args), task.one_off) == (
        "benchapp.start_plan",
        [plan.pk],
        True,
    )
    assert task.clocked.clocked_time > timezone.now()


def test_schedule_cron_creates_a_crontab_task(owner_client, plan):
    owner_client.post(f"/plans/{plan.pk}/schedule/", {"kind": "cron", "cron": "0 3 * * 1"})
    task = PeriodicTask.objects.get()
    c = task.crontab
    assert (c.minute, c.hour, c.day_of_month, c.month_of_year, c.day_of_week) == (
        "0",
        "3",
        "*",
        "*",
        "1",
    )
    assert not task.one_off and task.enabled


@pytest.mark.parametrize(
    "data,message",
    [
        ({"kind": "cron", "cron": "every day"}, "Write five fields"),
        ({"kind": "cron", "cron": "99 * * * *"}, "Not a valid cron expression"),
        ({"kind": "at", "when": ""}, "Choose a date and time"),
        ({"kind": "at", "when": "2001-01-01T00:00"}, "in the past"),
    ],
)
def test_schedule_errors_are_explained(owner_client, plan, data, message):
    response = owner_client.post(f"/plans/{plan.pk}/schedule/", data, follow=True)
    assert message in response.content.decode()
    assert not PeriodicTask.objects.exists()


@pytest.mark.parametrize("persona", ["owner_client", "member_client"])
def test_schedule_list_shows_the_team_schedules(request, persona, cron):
    html = request.getfixturevalue(persona).get("/schedules/").content.decode()
    assert "cron 30 2 * * 1-5" in html and "demo-mysqlslap" in html and "Pause" in html


def test_schedule_list_outsider_sees_none(outsider_client, cron):
    html = outsider_client.get("/schedules/").content.decode()
    assert "Nothing scheduled" in html and "demo-mysqlslap" not in html


def test_schedule_list_query_count(owner_client, plan, django_assert_max_num_queries):
    for i in range(10):
        scheduling.schedule_at(plan, timezone.now() + timedelta(hours=i + 1))
        scheduling.schedule_cron(plan, scheduling.parse_cron(f"{i} 1 * * *"))
    # session, user, team (x3: current team, switcher), plans, tasks, skipped ticks: none per row
    with django_assert_max_num_queries(10):  # + the plans' skipped ticks
        html = owner_client.get("/schedules/").content.decode()
    assert html.count("Pause") == 20


@pytest.mark.parametrize("url", ["/schedules/{pk}/toggle/", "/schedules/{pk}/delete/"])
def test_schedule_actions_outsider_gets_404(outsider_client, cron, url):
    assert outsider_client.post(url.format(pk=cron.pk)).status_code == 404
    assert PeriodicTask.objects.get(pk=cron.pk).enabled


def test_schedule_pause_resume_delete(member_client, plan, cron):
    member_client.post(f"/schedules/{cron.pk}/toggle/")
    cron.refresh_from_db()
    assert not cron.enabled
    assert "Resume" in member_client.get("/schedules/").content.decode()
    member_client.post(f"/schedules/{cron.pk}/toggle/")
    cron.refresh_from_db()
    assert cron.enabled
    member_client.post(f"/schedules/{cron.pk}/delete/")
    assert not PeriodicTask.objects.exists()


def test_schedule_delete_removes_its_clock(owner_client, plan):
    task = scheduling.schedule_at(plan, timezone.now() + timedelta(hours=1))
    owner_client.post(f"/schedules/{task.pk}/delete/")
    assert not ClockedSchedule.objects.exists()


def test_plan_delete_removes_its_schedules(owner_client, plan, cron):
    owner_client.post(f"/plans/{plan.pk}/delete/")
    assert not PeriodicTask.objects.exists()


def test_scheduled_task_starts_the_plan(plan, cron):
    """What beat sends: the task by name with the stored args and kwargs."""
    run_id = start_plan(*json.loads(cron.args), **json.loads(cron.kwargs))
    run = Run.objects.get(pk=run_id)
    assert (run.plan, run.origin, run.cells.count()) == (plan, "schedule", 4)


def test_plan_page_lists_its_schedules(owner_client, plan, cron):
    html = owner_client.get(f"/plans/{plan.pk}/").content.decode()
    assert "cron 30 2 * * 1-5" in html and "Manage schedules" in html


def test_one_time_schedule_is_done_after_it_ran(owner_client, plan, cron):
    """A one-off schedule used to stay "active" after beat had started its run."""
    once = scheduling.schedule_at(plan, timezone.now() - timedelta(seconds=5))
    later = scheduling.schedule_at(plan, timezone.now() + timedelta(hours=1))
    start_plan(plan.pk, origin="schedule")
    once.refresh_from_db()
    later.refresh_from_db()
    cron.refresh_from_db()
    assert not once.enabled and once.last_run_at is not None
    assert later.enabled and cron.enabled  # not due yet / repeating: still active
    html = owner_client.get("/schedules/").content.decode()
    assert html.count(">active<") == 2 and html.count(">done<") == 1
