"""Targets never reach the app's own services (docs/trust-model.md): a target on
the app's PostgreSQL or Redis (as 127.0.0.1, localhost, 127.0.0.2 or ::1) is
refused when it is saved (target form, API, plan documents) and, should one
get past that, when a real worker's cell connects, before any tool runs."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection, transaction
from rest_framework.test import APIClient

from benchapp.models import Artifact, Cell, Plan, Target
from benchapp.store import frozenparts
from runners.netguard import service_from_url
from tests.benchapp.ui_data import target_post

pytestmark = pytest.mark.django_db

LOOPBACKS = ["127.0.0.1", "localhost", "127.0.0.2", "::1"]


def _app_db():
    db = settings.DATABASES["default"]
    return db["HOST"], int(db["PORT"] or 5432), db["NAME"]


def _broker_port() -> int:
    return service_from_url("broker", settings.CELERY_BROKER_URL, 6379).port


def _target_post(**fields):
    base = {"name": "sneaky", "kind": "postgres", "port": "5432", "user": "postgres"}
    return target_post(**{**base, **fields})


@pytest.mark.parametrize("host", LOOPBACKS)
def test_target_form_refuses_the_app_database(team_admin_client, team, host):
    port = _app_db()[1]
    response = team_admin_client.post("/targets/new/", _target_post(host=host, port=str(port)))
    assert response.status_code == 200
    html = response.content.decode()
    assert (
        f"Target {host}:{port} is the app&#x27;s database; a target may not point at the "
        "app&#x27;s own services." in html
    )
    assert not Target.objects.filter(team=team, name="sneaky").exists()


@pytest.mark.parametrize("host", LOOPBACKS)
def test_api_refuses_a_target_on_the_app_broker(team_admin, team, host):
    client = APIClient()
    client.force_authenticate(team_admin)
    port = _broker_port()
    response = client.post(
        "/api/targets/",
        {"name": "sneaky", "kind": "redis", "host": host, "port": port},
        format="json",
    )
    assert response.status_code == 400
    assert f"Target {host}:{port} is the app's broker" in str(response.json())
    assert not Target.objects.filter(team=team, name="sneaky").exists()


def test_api_refuses_a_plan_with_an_inline_target_on_the_app_database(member, team):
    client = APIClient()
    client.force_authenticate(member)
    document = {
        "name": "p",
        "tool": "pgbench",
        "targets": [
            {
                "name": "pg",
                "kind": "postgres",
                "host": "localhost",
                "port": _app_db()[1],
                "user": "postgres",
            }
        ],
    }
    response = client.post("/api/plans/", {"document": document}, format="json")
    assert response.status_code == 400
    assert "is the app's database" in str(response.json())
    assert not Plan.objects.filter(team=team).exists()


def test_ssh_host_on_the_app_database_port_is_refused(team_admin_client, team):
    response = team_admin_client.post(
        "/targets/new/",
        _target_post(
            kind="mysql",
            host="db.invalid",
            port="3306",
            ssh_host="127.0.0.1",
            ssh_port=str(_app_db()[1]),
            ssh_user="root",
        ),
    )
    assert "is the app&#x27;s database" in response.content.decode()
    assert not Target.objects.filter(team=team, name="sneaky").exists()


def test_operator_deny_and_allow_networks(team_admin_client, team, settings):
    settings.BENCHBOARD_TARGET_DENY_NETWORKS = ["127.0.0.0/8"]
    response = team_admin_client.post(
        "/targets/new/", _target_post(kind="mysql", port="3306", user="root")
    )
    assert "in a network the operator denied" in response.content.decode()
    settings.BENCHBOARD_TARGET_DENY_NETWORKS = []
    settings.BENCHBOARD_TARGET_ALLOW_NETWORKS = ["10.0.0.0/8"]
    response = team_admin_client.post(
        "/targets/new/", _target_post(kind="mysql", port="3306", user="root")
    )
    assert "outside the networks the operator allowed" in response.content.decode()
    settings.BENCHBOARD_TARGET_ALLOW_NETWORKS = ["127.0.0.0/8"]
    response = team_admin_client.post(
        "/targets/new/", _target_post(kind="mysql", port="3306", user="root")
    )
    assert response.status_code == 302
    assert Target.objects.filter(team=team, name="sneaky").exists()


def test_test_connection_refuses_the_app_database(team):
    from benchapp.runs.connection import test_connection

    target = Target.objects.create(
        team=team, name="pg", kind="postgres", host="::1", port=_app_db()[1], user="postgres"
    )  # bypasses the form
    result = test_connection(target)
    assert not result["ok"] and "is the app's database" in result["error"]


def _app_tables() -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.django_db(transaction=True)
def test_a_target_that_got_in_is_refused_by_a_real_worker(team, start_worker):
    """Plans saved while their hosts resolved elsewhere, whose targets now reach
    the app's database and broker (a DNS change, simulated by rewriting the
    frozen cells before dispatch): refused when the cell connects, before
    any tool runs, the app's tables untouched."""
    from benchapp.runs import orchestration
    from tests.support.waiting import finished, wait_for

    _, db_port, db_name = _app_db()
    before = _app_tables()
    plans = [
        (
            "pgbench",
            {
                "name": "pg",
                "kind": "postgres",
                "host": "pg.invalid",
                "port": db_port,
                "user": "postgres",
                "database": db_name,
            },
            {"time": 1, "scale": 1},
            "127.0.0.2",
            "the app's database",
        ),
        (
            "redis_benchmark",
            {"name": "cache", "kind": "redis", "host": "cache.invalid", "port": _broker_port()},
            {"tests": "set", "requests": 1000},
            "localhost",
            "the app's broker",
        ),
    ]
    start_worker("guard", BENCHBOARD_HEARTBEAT_SECONDS=1, BENCHBOARD_LEASE_SECONDS=6)
    runs = []
    for tool, target, params, loopback, _ in plans:
        with transaction.atomic():  # dispatch leaves on commit, after the rewrite
            run = orchestration.start_run(
                team,
                {"name": tool, "tool": tool, "targets": [target], "params": params},
                origin="api",
            )
            for cell in Cell.objects.filter(run=run):
                spec = frozenparts.frozen(cell)  # stored whole: rewritten in place
                spec["plan"]["targets"][0]["host"] = loopback
                Cell.objects.filter(pk=cell.pk).update(spec=spec)
        runs.append(run)
    for run, (_, _, _, loopback, service) in zip(runs, plans, strict=True):
        wait_for(lambda run=run: finished(run), timeout=120)
        cells = list(run.cells.all())
        assert [c.status for c in cells] == [Cell.FAILED], [c.error for c in cells]
        assert f"is {service}; a target may not point at the app's own services" in cells[0].error
        assert loopback in cells[0].error
        assert not Artifact.objects.filter(cell__run=run).exists()  # no tool ran
    assert _app_tables() == before
    assert not any(name.startswith("pgbench_") for name in _app_tables())


def test_a_socket_on_this_machine_at_the_app_database_port_is_refused(member):
    client = APIClient()
    client.force_authenticate(member)
    port = _app_db()[1]
    document = {
        "name": "p",
        "tool": "pgbench",
        "targets": [
            {
                "name": "pg",
                "kind": "postgres",
                "socket": f"/run/postgresql/.s.PGSQL.{port}",
                "port": port,
                "user": "postgres",
            }
        ],
    }
    response = client.post("/api/plans/", {"document": document}, format="json")
    assert response.status_code == 400
    assert "is the app's database" in str(response.json())
