"""Roles on pages and API: admin actions (targets, credentials) refuse viewers
and members with 403; outsiders get 404; nothing changes on a refusal."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchapp.models import Credential, Target
from tests.benchapp.ui_data import make_credential, make_target


@pytest.fixture
def objects(team):
    return {"target": make_target(team), "cred": make_credential(team)}


ADMIN_PAGES = [
    ("post", "/targets/new/"),
    ("get", "/targets/{target}/edit/"),
    ("post", "/targets/{target}/edit/"),
    ("post", "/targets/{target}/delete/"),
    ("post", "/targets/{target}/accept-key/"),
    ("post", "/credentials/new/"),
    ("get", "/credentials/{cred}/edit/"),
    ("post", "/credentials/{cred}/edit/"),
    ("post", "/credentials/{cred}/delete/"),
]

ADMIN_API = [
    ("post", "/api/targets/"),
    ("patch", "/api/targets/{target}/"),
    ("delete", "/api/targets/{target}/"),
    ("post", "/api/credentials/"),
    ("patch", "/api/credentials/{cred}/"),
    ("delete", "/api/credentials/{cred}/"),
]


def _url(template, objects):
    return template.format(target=objects["target"].pk, cred=objects["cred"].pk)


def _unchanged(objects):
    target = Target.objects.get(pk=objects["target"].pk)
    cred = Credential.objects.get(pk=objects["cred"].pk)
    return target.name == objects["target"].name and cred.name == objects["cred"].name


@pytest.mark.parametrize("persona", ["viewer", "member"])
@pytest.mark.parametrize(("method", "url"), ADMIN_PAGES)
def test_admin_pages_refuse_viewer_and_member(client, request, persona, objects, method, url):
    client.force_login(request.getfixturevalue(persona))
    response = getattr(client, method)(_url(url, objects), {"name": "hijacked"})
    assert response.status_code == 403
    assert _unchanged(objects)


@pytest.mark.parametrize(("method", "url"), [u for u in ADMIN_PAGES if "{" in u[1]])
def test_admin_pages_outsider_gets_404(outsider_client, objects, method, url):
    response = getattr(outsider_client, method)(_url(url, objects), {"name": "hijacked"})
    assert response.status_code == 404
    assert _unchanged(objects)


def _api(user):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.mark.parametrize("persona", ["viewer", "member"])
@pytest.mark.parametrize(("method", "url"), ADMIN_API)
def test_admin_api_refuses_viewer_and_member(request, persona, objects, method, url):
    client = _api(request.getfixturevalue(persona))
    response = getattr(client, method)(_url(url, objects), {"name": "hijacked"}, format="json")
    assert response.status_code == 403, response.content
    assert _unchanged(objects)


@pytest.mark.parametrize(("method", "url"), [u for u in ADMIN_API if "{" in u[1]])
def test_admin_api_outsider_gets_404(outsider, objects, method, url):
    response = getattr(_api(outsider), method)(_url(url, objects), {"name": "x"}, format="json")
    assert response.status_code == 404
    assert _unchanged(objects)


def test_viewer_reads_targets(viewer_client, objects):
    assert viewer_client.get("/targets/").status_code == 200
    assert viewer_client.get(f"/targets/{objects['target'].pk}/").status_code == 200


def test_team_admin_edits_a_target(team_admin_client, objects):
    response = team_admin_client.get(f"/targets/{objects['target'].pk}/edit/")
    assert response.status_code == 200


# -- every write of every page and API route, by role ---------------------------------


@pytest.fixture
def world(team, owner):
    """One object of each kind in the team, and a snapshot of what a refusal must not change."""
    from django.utils import timezone

    from benchapp.histories import scheduling
    from benchapp.models import Alert, Comparison, Membership, Plan, Run

    plan = Plan.objects.create(
        team=team,
        name="p",
        tool="fio",
        document={"name": "p", "tool": "fio", "targets": [{"name": "disk", "kind": "host"}]},
    )
    run = Run.objects.create(
        team=team, plan=plan, name="r", tool="fio", document=plan.document, status=Run.RUNNING
    )
    cell = run.cells.create(index=0, key="", repeat=1, status="queued")
    comparison = Comparison.objects.create(team=team, name="c")
    task = scheduling.schedule_at(plan, timezone.now() + timezone.timedelta(days=1))
    alert = Alert.objects.create(
        team=team,
        plan=plan,
        cell_key="",
        metric="m",
        start_run=run,
        before_mean=1,
        before_low=1,
        before_high=1,
        after_mean=2,
        after_low=2,
        after_high=2,
        magnitude=1,
        pvalue=0.01,
        bad=True,
    )
    owner_membership = Membership.objects.get(team=team, user=owner)
    return {
        "target": make_target(team),
        "cred": make_credential(team),
        "plan": plan,
        "run": run,
        "cell": cell,
        "comparison": comparison,
        "task": task,
        "alert": alert,
        "owner": owner_membership,
    }


def _snapshot(team):
    from django_celery_beat.models import PeriodicTask

    from benchapp.models import Alert, Cell, Comparison, Membership, Plan, Run

    return (
        list(Plan.objects.filter(team=team).values_list("name", "baseline_run")),
        list(
            Run.objects.filter(team=team).values_list("status", "cancel_requested", "tags", "notes")
        ),
        list(Cell.objects.filter(run__team=team).values_list("status")),
        list(Comparison.objects.filter(team=team).values_list("name", "share_token_hash")),
        list(PeriodicTask.objects.values_list("enabled")),
        list(Alert.objects.filter(team=team).values_list("verdict")),
        sorted(Membership.objects.filter(team=team).values_list("user_id", "role")),
        list(Target.objects.filter(team=team).values_list("name", "allow_custom_scripts")),
        list(Credential.objects.filter(team=team).values_list("name")),
    )


MEMBER_PAGES = [
    ("get", "/plans/new/"),
    ("post", "/plans/new/"),
    ("get", "/plans/{plan}/edit/"),
    ("post", "/plans/{plan}/edit/"),
    ("get", "/plans/import/"),
    ("post", "/plans/import/"),
    ("post", "/plans/preview.json"),
    ("post", "/plans/{plan}/clone/"),
    ("post", "/plans/{plan}/delete/"),
    ("post", "/plans/{plan}/run/"),
    ("post", "/plans/{plan}/schedule/"),
    ("post", "/plans/{plan}/baseline/"),
    ("post", "/schedules/{task}/toggle/"),
    ("post", "/schedules/{task}/delete/"),
    ("post", "/alerts/{alert}/verdict/"),
    ("post", "/runs/{run}/cancel/"),
    ("post", "/runs/{run}/cells/{cell}/cancel/"),
    ("post", "/runs/{run}/annotate/"),
    ("get", "/archive/import/"),
    ("post", "/archive/import/"),
    ("get", "/comparisons/new/"),
    ("post", "/comparisons/new/"),
    ("post", "/comparisons/{comparison}/save/"),
    ("post", "/comparisons/{comparison}/share/"),
    ("post", "/comparisons/{comparison}/revoke/"),
    ("post", "/comparisons/{comparison}/delete/"),
]
ADMIN_ONLY_PAGES = ADMIN_PAGES + [
    ("get", "/targets/new/"),
    ("get", "/credentials/new/"),
    ("post", "/members/"),
    ("post", "/members/{owner}/role/"),
    ("post", "/members/{owner}/remove/"),
]
MEMBER_API = [
    ("post", "/api/plans/"),
    ("patch", "/api/plans/{plan}/"),
    ("delete", "/api/plans/{plan}/"),
    ("post", "/api/runs/"),
    ("patch", "/api/runs/{run}/"),
    ("post", "/api/runs/{run}/cancel/"),
    ("post", "/api/comparisons/"),
    ("patch", "/api/comparisons/{comparison}/"),
    ("delete", "/api/comparisons/{comparison}/"),
    ("post", "/api/comparisons/{comparison}/share/"),
    ("post", "/api/comparisons/{comparison}/revoke/"),
    ("post", "/api/alerts/{alert}/verdict/"),
    ("post", "/api/alerts/{alert}/confirm/"),
]
READS = [
    "/plans/",
    "/plans/{plan}/",
    "/plans/{plan}/yaml/",
    "/plans/{plan}/trend/",
    "/runs/",
    "/runs/{run}/",
    "/runs/{run}/progress.json",
    "/runs/{run}/results/",
    "/runs/{run}/export.csv",
    "/comparisons/",
    "/comparisons/{comparison}/",
    "/schedules/",
    "/alerts/",
    "/archive/",
    "/targets/",
    "/credentials/",
    "/members/",
    "/api/plans/",
    "/api/runs/{run}/",
    "/api/comparisons/",
    "/api/targets/",
    "/api/alerts/",
    "/api/alerts/{alert}/",
    "/api/alerts/verdicts/",
    "/api/plans/{plan}/trend/",
    "/api/cells/?run={run}",
]


def _fill(template, world):
    return template.format(**{k: getattr(v, "pk", v) for k, v in world.items()})


def _data(url):
    return {
        "name": "hijacked",
        "role": "admin",
        "username": "vera",
        "verdict": "true",
        "tags": "x",
        "notes": "x",
        "run": "",
        "kind": "at",
        "document": "{}",
    }


BELOW_ROLE = [("viewer", m, u) for m, u in ADMIN_ONLY_PAGES + MEMBER_PAGES] + [
    ("member", m, u) for m, u in ADMIN_ONLY_PAGES
]


@pytest.mark.parametrize(("persona", "method", "url"), BELOW_ROLE)
def test_every_write_page_refuses_below_its_role(
    client, request, persona, world, team, method, url
):
    client.force_login(request.getfixturevalue(persona))
    before = _snapshot(team)
    response = getattr(client, method)(_fill(url, world), _data(url))
    assert response.status_code == 403, response.content[:500]
    assert _snapshot(team) == before


@pytest.mark.parametrize(("method", "url"), [(m, u) for m, u in MEMBER_PAGES if m == "get"])
def test_member_may_use_member_pages(member_client, world, method, url):
    assert member_client.get(_fill(url, world)).status_code == 200


@pytest.mark.parametrize(("method", "url"), MEMBER_API)
def test_every_member_api_write_refuses_a_viewer(viewer, world, team, method, url):
    before = _snapshot(team)
    response = getattr(_api(viewer), method)(_fill(url, world), {"name": "hijacked"}, format="json")
    assert response.status_code == 403, response.content
    assert _snapshot(team) == before


@pytest.mark.parametrize("url", READS)
def test_a_viewer_reads_everything(viewer, viewer_client, world, url):
    url = _fill(url, world)
    response = _api(viewer).get(url) if url.startswith("/api/") else viewer_client.get(url)
    assert response.status_code == 200, url


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("post", "/members/{owner}/role/"),
        ("post", "/members/{owner}/remove/"),
        ("post", "/plans/{plan}/run/"),
        ("post", "/runs/{run}/cancel/"),
    ],
)
def test_outsider_gets_404_on_writes(outsider_client, world, team, method, url):
    before = _snapshot(team)
    assert getattr(outsider_client, method)(_fill(url, world), _data(url)).status_code == 404
    assert _snapshot(team) == before


def test_admin_manages_members_but_not_the_owner(team_admin_client, team, world, member, viewer):
    from benchapp.models import Membership

    page = team_admin_client.get("/members/").content.decode()
    assert "max" in page and "vera" in page and "Change role" in page
    mine = Membership.objects.get(team=team, user=member)
    assert (
        team_admin_client.post(f"/members/{mine.pk}/role/", {"role": "viewer"}).status_code == 302
    )
    assert Membership.objects.get(pk=mine.pk).role == "viewer"
    assert (
        team_admin_client.post(f"/members/{mine.pk}/role/", {"role": "owner"}).status_code == 302
    )  # refused with a message: owner is not assignable
    assert Membership.objects.get(pk=mine.pk).role == "viewer"
    owner = world["owner"]
    for action in ("role", "remove"):
        response = team_admin_client.post(f"/members/{owner.pk}/{action}/", {"role": "viewer"})
        assert response.status_code == 403
    assert Membership.objects.get(pk=owner.pk).role == "owner"
    theirs = Membership.objects.get(team=team, user=viewer)
    assert team_admin_client.post(f"/members/{theirs.pk}/remove/").status_code == 302
    assert not Membership.objects.filter(pk=theirs.pk).exists()


def test_admin_adds_a_member_by_user_name(team_admin_client, team, outsider):
    from benchapp.models import Membership

    response = team_admin_client.post("/members/", {"username": "otto", "role": "viewer"})
    assert response.status_code == 302
    assert Membership.objects.get(team=team, user=outsider).role == "viewer"
    again = team_admin_client.post("/members/", {"username": "otto", "role": "member"})
    assert "Already a member of this team." in again.content.decode()
