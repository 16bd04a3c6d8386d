"""A plan is checked once and the result carried (benchapp.plans.planning.check):
counted by the tool validations each way of saving or starting a plan makes
per combination, on the real sysbench validate (wrapped, still called)."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchapp.histories import scheduling
from benchapp.models import Run
from benchapp.plans.planning import save_plan
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
