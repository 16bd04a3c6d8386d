"""The REST API: contract tests driven by its OpenAPI schema (schemathesis,
in-process through the WSGI app), plus explicit tests of token auth, team
scoping, write-only credentials and run creation starting a run."""

import pytest
import redis
import schemathesis
from django.conf import settings
from django.core.wsgi import get_wsgi_application
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hsettings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from schemathesis.checks import (
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from benchapp.models import Cell, Credential, Run
from tests.benchapp.results_data import make_run

# Kept short: no coverage phase (it generates every case the schema defines),
# a handful of generated examples per operation.
CONFIG = schemathesis.config.SchemathesisConfig.from_dict(
    {"phases": {"coverage": {"enabled": False}, "stateful": {"enabled": False}}}
)
schema = schemathesis.openapi.from_wsgi(
    "/api/schema/?format=json", get_wsgi_application(), config=CONFIG
)

PLAN = {
    "name": "api-demo",
    "tool": "mysqlslap",
    "targets": [{"name": "local", "kind": "mysql", "host": "127.0.0.1", "user": "root"}],
    "params": {"auto_generate_sql": True, "add_autoincrement": True, "number_of_queries": 50},
    "axes": {"load_type": ["read", "key"]},
}


@pytest.fixture
def token(owner):
    return Token.objects.create(user=owner).key


@pytest.fixture
def api(token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


@pytest.fixture
def keep_connection():
    """The WSGI handler closes the database connection after each request;
    inside a test transaction it must stay open (as Django's test Client does)."""
    from django.core import signals
    from django.db import close_old_connections

    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@pytest.mark.django_db
@schema.parametrize()
@hsettings(
    max_examples=4,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_api_contract(case, token, team, keep_connection):
    """Every operation, with generated inputs: no server error, documented
    status codes, responses matching the schema."""
    case.call_and_validate(
        headers={"Authorization": f"Token {token}"},
        checks=[not_a_server_error, status_code_conformance, response_schema_conformance],
    )


def test_schema_and_docs_are_served(client):
    schema_doc = client.get("/api/schema/?format=json").json()
    assert {"/api/runs/", "/api/comparisons/{id}/share/", "/api/measurements/"} <= set(
        schema_doc["paths"]
    )
    assert "tokenAuth" in schema_doc["components"]["securitySchemes"]
    html = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in html and "cdn." not in html and "jsdelivr" not in html


def test_token_auth_required(team, owner):
    anonymous = APIClient()
    assert anonymous.get("/api/runs/").status_code == 401
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token not-a-token")
    assert bad.get("/api/runs/").status_code == 401


def test_obtain_token_with_password(owner):
    response = APIClient().post(
        "/api/token/", {"username": owner.username, "password": f"pw-{owner.username}"}
    )
    assert response.status_code == 200 and response.json()["token"]


def test_team_scoping_outsider_gets_404(api, team, outsider):
    run = make_run(outsider.teams.get(), name="theirs", cells=[({"threads": 1}, 1, {"tps": 1.0})])
    mine = make_run(team, name="mine", cells=[({"threads": 1}, 1, {"tps": 2.0})])
    assert [r["name"] for r in api.get("/api/runs/").json()["results"]] == ["mine"]
    assert api.get(f"/api/runs/{run.pk}/").status_code == 404
    assert api.get(f"/api/cells/{run.cells.get().pk}/").status_code == 404
    assert api.get(f"/api/measurements/?run={run.pk}").json()["count"] == 0
    values = [m["value"] for m in api.get("/api/measurements/").json()["results"]]
    assert values == [2.0]
    assert api.patch(f"/api/runs/{run.pk}/", {"tags": ["x"]}, format="json").status_code == 404
    response = api.post(
        "/api/comparisons/", {"name": "x", "runs": [mine.pk, run.pk]}, format="json"
    )
    assert response.status_code == 400


def test_credentials_are_write_only(api, team):
    response = api.post(
        "/api/credentials/",
        {"name": "db-pw", "kind": "password", "secret": "s3cret-canary"},
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.content.decode()
    assert "s3cret-canary" not in body and "encrypted" not in body
    assert response.json()["fingerprint"].startswith("hmac:")
    assert Credential.objects.get(team=team).secret() == "s3cret-canary"
    listing = api.get("/api/credentials/").content.decode()
    assert "s3cret-canary" not in listing
    response = api.post(
        "/api/targets/",
        {
            "name": "db8",
            "kind": "mysql",
            "host": "127.0.0.1",
            "user": "root",
            "credential": "db-pw",
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    assert response.json()["credential"] == "db-pw"
    assert response.json()["telemetry"] is True  # on unless turned off
    url = f"/api/targets/{response.json()['id']}/"
    turned_off = api.patch(url, {"telemetry": False}, format="json")
    assert turned_off.status_code == 200, turned_off.json()
    assert turned_off.json()["telemetry"] is False and turned_off.json()["credential"] == "db-pw"
    assert "s3cret" not in api.get("/api/targets/").content.decode()


def test_plan_validation_errors_name_the_key(api):
    response = api.post(
        "/api/plans/", {"document": {**PLAN, "params": {"bogus": 1}}}, format="json"
    )
    assert response.status_code == 400
    assert "bogus" in str(response.json()["document"])
    response = api.post("/api/plans/", {"document": PLAN}, format="json")
    assert response.status_code == 201 and response.json()["tool"] == "mysqlslap"


@pytest.fixture
def broker():
    """The Redis database of CELERY_BROKER_URL, emptied of this session's queue."""
    conn = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    conn.queue = settings.CELERY_TASK_DEFAULT_QUEUE
    conn.delete(conn.queue)
    yield conn
    conn.delete(conn.queue)


def test_creating_a_run_starts_it(api, team, broker, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/runs/", {"document": PLAN, "tags": ["api"]}, format="json")
    assert response.status_code == 201, response.json()
    run = Run.objects.get(pk=response.json()["id"])
    assert (run.origin, run.status, run.tags) == ("api", Run.QUEUED, ["api"])
    assert sorted(run.cells.values_list("key", flat=True)) == ["load_type=key", "load_type=read"]
    assert response.json()["cells_total"] == 2
    assert broker.llen(broker.queue) == 1  # the dispatch task
    assert b"benchapp" in broker.lindex(broker.queue, 0)


def test_creating_a_run_from_a_stored_plan(api, team, broker, django_capture_on_commit_callbacks):
    plan_id = api.post("/api/plans/", {"document": PLAN}, format="json").json()["id"]
    with django_capture_on_commit_callbacks(execute=True):
        response = api.post("/api/runs/", {"plan": plan_id}, format="json")
    assert response.status_code == 201
    assert Run.objects.get(pk=response.json()["id"]).plan_id == plan_id
    assert Cell.objects.filter(run_id=response.json()["id"]).count() == 2


def test_run_results_and_comparison_share(api, team, client):
    a = make_run(team, name="a", cells=[({"threads": t}, 1, {"tps": 10.0 * t}) for t in (1, 2)])
    b = make_run(team, name="b", cells=[({"threads": t}, 1, {"tps": 11.0 * t}) for t in (1, 2)])
    table = api.get(f"/api/runs/{a.pk}/results/").json()["table"]
    assert [line[0]["mean"] for line in table["cells"]] == [10.0, 20.0]
    comp = api.post("/api/comparisons/", {"name": "ab", "runs": [a.pk, b.pk]}, format="json").json()
    data = api.get(f"/api/comparisons/{comp['id']}/results/").json()
    assert data["baseline"] == f"#{a.pk} a"
    ((run,),) = [s["runs"] for s in data["summary"]]
    assert run["run"] == f"#{b.pk} b" and run["summary"]["text"] == "1.10× faster"
    bad = api.get(f"/api/runs/{a.pk}/results/?statistic=avg")
    assert (
        bad.status_code == 400
        and "Accepted values: mean, median, p95" in bad.json()["statistic"][0]
    )
    share = api.post(f"/api/comparisons/{comp['id']}/share/").json()
    assert client.get(f"/share/{share['token']}/").status_code == 200
    assert api.post(f"/api/comparisons/{comp['id']}/revoke/").status_code == 204
    assert client.get(f"/share/{share['token']}/").status_code == 404
    assert "token" not in api.get(f"/api/comparisons/{comp['id']}/").json()


def test_api_reads_the_view_request_as_the_page_does(api, owner_client, team):
    """One view-request parser: chart options and the statistic reach the API too."""
    run = make_run(team, cells=[({"threads": t}, 1, {"tps": 10.0 * t}) for t in (1, 2)])
    query = "rows=threads&metric=tps&statistic=max&chart=bar&chart_x=threads"
    view = api.get(f"/api/runs/{run.pk}/results/?{query}").json()["view"]
    assert (view["statistic"], view["chart"], view["chart_x"]) == ("max", "bar", "threads")
    page = owner_client.get(f"/runs/{run.pk}/results/?{query}").context["data"]["view"]
    assert {k: page[k] for k in ("rows", "statistic", "chart", "chart_x")} == {
        k: view[k] for k in ("rows", "statistic", "chart", "chart_x")
    }
