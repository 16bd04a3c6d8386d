"""A plan is checked once and the result carried (benchapp.plans.planning.check):
counted by the tool validations each way of saving or starting a plan makes
per combination, on the real sysbench validate (wrapped, still called)."""

import pytest
import yaml
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchapp.cloud import pricing
from benchapp.histories import scheduling
from benchapp.models import Plan, Run
from benchapp.plans import planning
from benchapp.plans.planning import PlanRefused, save_plan
from benchapp.runs.orchestration import start_run
from runners.tools import sysbench
from tests.benchapp.ui_data import make_target

pytestmark = pytest.mark.django_db

COMBINATIONS = 3  # one axis of three values


def document():
    return {
        "name": "once",
        "tool": "sysbench",
        "targets": [{"name": "local-mariadb"}],
        "params": {"test": "oltp_read_only", "table_size": 100, "time": 1},
        "axes": {"threads": [1, 2, 4]},
    }


def builder_post():
    return {
        "name": "once",
        "tool": "sysbench",
        "targets": ["local-mariadb"],
        "repeat": "1",
        "order": "sequential",
        "extra": "",
        "param-sysbench-test": "oltp_read_only",
        "param-sysbench-table_size": "100",
        "param-sysbench-time": "1",
        "axis-0-name": "threads",
        "axis-0-values": "1, 2, 4",
    }


@pytest.fixture
def stored(team):
    return make_target(team)


@pytest.fixture
def validations(monkeypatch):
    """Counts calls of sysbench's own validate, which still runs."""
    calls = []
    real = sysbench.validate

    def counted(params):
        calls.append(params)
        return real(params)

    monkeypatch.setattr(sysbench, "validate", counted)
    return calls


@pytest.fixture
def api(owner):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    return client


def per_combination(calls) -> float:
    return len(calls) / COMBINATIONS


def test_builder_save_validates_each_combination_once(owner_client, stored, validations):
    response = owner_client.post("/plans/new/", builder_post())
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert per_combination(validations) == 1


def test_live_preview_validates_each_combination_once(owner_client, stored, validations):
    data = owner_client.post("/plans/preview.json", builder_post()).json()
    assert data["valid"] and data["count"] == COMBINATIONS
    assert per_combination(validations) == 1


def test_run_now_validates_each_combination_once(member_client, team, stored, owner, validations):
    plan = save_plan(team, document(), user=owner)
    validations.clear()
    response = member_client.post(f"/plans/{plan.pk}/run/")
    run = Run.objects.get(plan=plan)
    assert response.url == f"/runs/{run.pk}/"
    assert run.cells.count() == COMBINATIONS
    assert per_combination(validations) == 1


def test_api_save_validates_each_combination_once(api, stored, validations):
    response = api.post("/api/plans/", {"document": document()}, format="json")
    assert response.status_code == 201, response.json()
    assert per_combination(validations) == 1


def test_api_run_validates_each_combination_once(api, stored, validations):
    response = api.post("/api/runs/", {"document": document()}, format="json")
    assert response.status_code == 201, response.json()
    assert Run.objects.get().cells.count() == COMBINATIONS
    assert per_combination(validations) == 1


def test_schedule_start_validates_each_combination_once(team, stored, owner, validations):
    plan = save_plan(team, document(), user=owner)
    validations.clear()
    run = scheduling.start_scheduled(plan)
    assert isinstance(run, Run) and run.origin == "schedule"
    assert per_combination(validations) == 1


def test_start_run_validates_each_combination_once(team, stored, validations):
    run = start_run(team, document())
    assert run.cells.count() == COMBINATIONS
    assert per_combination(validations) == 1


def refused_document():
    """A plan only the pre-run checks refuse: password_env reads the worker's environment."""
    doc = document()
    doc["targets"] = [
        {"name": "env-db", "kind": "mysql", "host": "127.0.0.1", "password_env": "DB_PW"}
    ]
    return doc


def page_message(owner_client) -> str:
    response = owner_client.post(
        "/plans/new/", {"mode": "yaml", "text": yaml.safe_dump(refused_document())}
    )
    assert response.status_code == 200 and not Plan.objects.exists()
    (message,) = response.context["yaml_form"].non_field_errors()
    return message


def test_api_run_refuses_what_the_page_refuses_with_its_message(owner_client, api):
    message = page_message(owner_client)
    assert "password_env (DB_PW) reads the worker's environment" in message
    response = api.post("/api/runs/", {"document": refused_document()}, format="json")
    assert response.status_code == 400
    assert response.json() == {"document": [message]}
    assert not Run.objects.exists()


def test_schedule_refuses_what_the_page_refuses_with_its_message(owner_client, team):
    message = page_message(owner_client)
    # Stored before the check existed (or edited in the database): a schedule's tick checks it.
    plan = Plan.objects.create(team=team, name="once", tool="sysbench", document=refused_document())
    with pytest.raises(PlanRefused) as refused:
        scheduling.start_scheduled(plan)
    assert str(refused.value) == message
    assert not Run.objects.exists()


def test_checked_plan_carries_cells_duration_and_cost(team, stored, validations):
    checked = planning.check(document(), team)
    assert [c.params["threads"] for c in checked.cells] == [1, 2, 4]
    assert checked.duration.cells == COMBINATIONS
    assert pricing.plan_cost(checked) is pricing.plan_cost(checked)  # worked out once
    assert per_combination(validations) == 1
