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
