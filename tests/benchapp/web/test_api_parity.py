"""The REST API carries what the pages do, with a token only (no session):
run filters, Test connection against the local MariaDB, schedules, and the
CSV/JSON exports; another team's token gets 404 and a viewer cannot act."""

from __future__ import annotations

import csv
import datetime
import io
import json

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchapp.models import Plan, Run, Target, Team
from tests.benchapp.results_data import make_run
from tests.benchapp.ui_data import make_target

pytestmark = pytest.mark.django_db


def token_client(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture
def api(owner):
    return token_client(owner)


@pytest.fixture
def plan(team):
    return Plan.objects.create(
        team=team,
        name="nightly",
        tool="sysbench",
        document={"name": "nightly", "tool": "sysbench", "params": {"test": "cpu"}},
    )


# ---------------------------------------------------------------- run filters


def _dated(run: Run, day: str) -> Run:
    Run.objects.filter(pk=run.pk).update(created_at=datetime.datetime.fromisoformat(day))
    return run


def test_run_list_filters_by_plan_status_tool_and_dates(api, team, plan, outsider):
    old = _dated(make_run(team, "old", plan=plan), "2026-01-10T12:00:00+00:00")
    failed = _dated(make_run(team, "failed", status=Run.FAILED), "2026-02-10T12:00:00+00:00")
    fio = _dated(make_run(team, "fio", tool="fio", plan=plan), "2026-03-10T12:00:00+00:00")
    theirs = make_run(Team.objects.get(membership__user=outsider), "theirs")

    def ids(**query):
        response = api.get("/api/runs/", query)
        assert response.status_code == 200, response.content
        return [run["id"] for run in response.json()["results"]]

    assert ids() == [fio.pk, failed.pk, old.pk]  # newest first
    assert ids(plan=plan.pk) == [fio.pk, old.pk]
    assert ids(status="failed") == [failed.pk]
    assert ids(tool="fio") == [fio.pk]
    assert ids(created_after="2026-02-01") == [fio.pk, failed.pk]
    assert ids(created_before="2026-02-10T12:00:00+00:00") == [old.pk]
    assert ids(created_after="2026-02-01", created_before="2026-03-01", tool="sysbench") == [
        failed.pk
    ]
    assert ids(plan=plan.pk, status="failed") == []
    assert theirs.pk not in ids() and ids(tool="sysbench") == [failed.pk, old.pk]


@pytest.mark.parametrize(
    ("query", "name"),
    [
        ({"created_after": "last week"}, "created_after"),
        ({"created_before": "2026-13-01"}, "created_before"),
        ({"status": "exploded"}, "status"),
        ({"plan": "nightly"}, "plan"),
    ],
)
def test_run_list_refuses_a_filter_it_cannot_read(api, team, query, name):
    response = api.get("/api/runs/", query)
    assert response.status_code == 400
    assert name in response.json()


def test_run_filters_are_documented_in_the_schema(client):
    schema = client.get("/api/schema/?format=json").json()
    names = {p["name"] for p in schema["paths"]["/api/runs/"]["get"]["parameters"]}
    assert {"plan", "status", "tool", "created_after", "created_before"} <= names
    assert "/api/cells/{id}/timeline/" in schema["paths"]
    assert "/api/targets/{id}/test/" in schema["paths"]
    assert {"/api/schedules/", "/api/schedules/{id}/"} <= set(schema["paths"])
    assert (
        "text/csv"
        in schema["paths"]["/api/runs/{id}/export.csv/"]["get"]["responses"]["200"]["content"]
    )


# ---------------------------------------------------------------- test connection


def test_connection_test_reaches_the_local_mariadb(api, team):
    target = make_target(team, credential=None)
    response = api.post(f"/api/targets/{target.pk}/test/")
    assert response.status_code == 200, response.content
    result = response.json()
    assert result["ok"] is True, result["error"]
    assert "MariaDB" in result["db"]["server_version"]
    assert "mysqlslap" in json.dumps(result["host"])
    target.refresh_from_db()  # recorded as the page records it (the home page's last check)
    assert target.last_check_ok is True and target.last_check_facts["db"]


def test_connection_test_names_what_is_missing(api, team):
    target = make_target(team, name="closed", port=1)
    result = api.post(f"/api/targets/{target.pk}/test/").json()
    assert result["ok"] is False and ("127.0.0.1" in result["error"] or "111" in result["error"])
    assert Target.objects.get(pk=target.pk).last_check_ok is False


def test_connection_test_is_for_members_and_the_team(team, viewer, member, outsider):
    target = make_target(team, credential=None)
    assert token_client(viewer).post(f"/api/targets/{target.pk}/test/").status_code == 403
    assert token_client(outsider).post(f"/api/targets/{target.pk}/test/").status_code == 404
    assert token_client(member).post(f"/api/targets/{target.pk}/test/").json()["ok"] is True


# ---------------------------------------------------------------- schedules


def test_schedule_create_list_pause_and_delete(api, plan):
    at = (timezone.now() + datetime.timedelta(days=2)).replace(microsecond=0)
    once = api.post("/api/schedules/", {"plan": plan.pk, "kind": "at", "at": at.isoformat()})
    assert once.status_code == 201, once.content
    cron = api.post("/api/schedules/", {"plan": plan.pk, "kind": "cron", "cron": "30 2 * * 1-5"})
    assert cron.status_code == 201, cron.content
    assert cron.json()["when"].startswith("cron 30 2 * * 1-5")
    assert once.json()["when"].startswith("once at ")

    listed = api.get("/api/schedules/").json()
    assert {s["id"] for s in listed} == {once.json()["id"], cron.json()["id"]}
    assert all(s["plan"] == plan.pk and s["enabled"] for s in listed)
    task = PeriodicTask.objects.get(pk=cron.json()["id"])
    assert json.loads(task.args) == [plan.pk] and task.task == "benchapp.start_plan"

    paused = api.patch(f"/api/schedules/{task.pk}/", {"enabled": False}, format="json")
    assert paused.status_code == 200 and paused.json()["enabled"] is False
    assert PeriodicTask.objects.get(pk=task.pk).enabled is False

    assert api.delete(f"/api/schedules/{task.pk}/").status_code == 204
    assert not PeriodicTask.objects.filter(pk=task.pk).exists()
    assert [s["id"] for s in api.get("/api/schedules/").json()] == [once.json()["id"]]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kind": "cron", "cron": "* * * * *"}, "cron"),  # more often than allowed
        ({"kind": "cron", "cron": "not cron"}, "cron"),
        ({"kind": "at", "at": "2001-01-01T00:00:00Z"}, "at"),
        ({"kind": "at"}, "at"),
    ],
)
def test_schedule_refused_with_the_pages_reasons(api, plan, body, field):
    response = api.post("/api/schedules/", {"plan": plan.pk, **body})
    assert response.status_code == 400 and field in response.json(), response.content
    assert not PeriodicTask.objects.filter(task="benchapp.start_plan").exists()


def test_schedules_viewer_reads_and_cannot_act_outsider_gets_404(api, plan, viewer, outsider):
    created = api.post("/api/schedules/", {"plan": plan.pk, "kind": "cron", "cron": "0 3 * * *"})
    pk = created.json()["id"]
    as_viewer = token_client(viewer)
    assert [s["id"] for s in as_viewer.get("/api/schedules/").json()] == [pk]
    refused = as_viewer.post(
        "/api/schedules/", {"plan": plan.pk, "kind": "cron", "cron": "0 4 * * *"}
    )
    assert refused.status_code == 403
    assert as_viewer.delete(f"/api/schedules/{pk}/").status_code == 403
    as_outsider = token_client(outsider)
    assert as_outsider.get("/api/schedules/").json() == []
    assert as_outsider.get(f"/api/schedules/{pk}/").status_code == 404
    assert as_outsider.delete(f"/api/schedules/{pk}/").status_code == 404
    theirs = as_outsider.post(
        "/api/schedules/", {"plan": plan.pk, "kind": "cron", "cron": "0 5 * * *"}
    )
    assert theirs.status_code in (400, 404)  # our plan does not exist for them
    assert PeriodicTask.objects.filter(task="benchapp.start_plan").count() == 1


# ---------------------------------------------------------------- exports


@pytest.fixture
def measured(team):
    return make_run(
        team,
        "exported",
        cells=[({"threads": 1}, 0, {"tps": 100.5}), ({"threads": 4}, 0, {"tps": 380.25})],
    )


def _csv_rows(content: bytes) -> list[dict]:
    return list(csv.DictReader(io.StringIO(content.decode())))


@pytest.mark.parametrize("url", ["/api/runs/{pk}/export.csv/", "/runs/{pk}/export.csv"])
def test_csv_export_with_a_token(api, measured, url):
    response = api.get(url.format(pk=measured.pk))
    assert response.status_code == 200, response.get("Location")
    assert response["Content-Type"].startswith("text/csv")
    rows = _csv_rows(response.content)
    assert sorted(float(r["value"]) for r in rows if r["metric"] == "tps") == [100.5, 380.25]
    assert {r["axis:threads"] for r in rows} == {"1", "4"}


@pytest.mark.parametrize("url", ["/api/runs/{pk}/export.json/", "/runs/{pk}/export.json"])
def test_json_export_with_a_token(api, measured, url):
    response = api.get(url.format(pk=measured.pk))
    assert response.status_code == 200
    doc = json.loads(response.content)
    assert [run["id"] for run in doc["runs"]] == [measured.pk]


@pytest.mark.parametrize(
    "url", ["/api/runs/{pk}/export.csv/", "/runs/{pk}/export.csv", "/runs/{pk}/export.json"]
)
def test_export_is_404_for_another_teams_token(measured, outsider, url):
    assert token_client(outsider).get(url.format(pk=measured.pk)).status_code == 404


def test_page_export_with_a_wrong_token_is_401_not_the_login_page(measured):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)
    response = client.get(f"/runs/{measured.pk}/export.csv")
    assert response.status_code == 401 and "Location" not in response


def test_page_export_without_a_token_still_sends_to_the_login_page(client, measured):
    response = client.get(f"/runs/{measured.pk}/export.csv")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
