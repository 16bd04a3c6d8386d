"""NUL bytes anywhere in a request get a 400, never a 500 (PostgreSQL
refuses NUL in text)."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


@pytest.mark.parametrize(
    "url",
    [
        "/runs/?q=a%00b",
        "/plans/?tool=%00",
        "/login/?next=/%00",
        "/api/runs/?status=x%00",
        "/runs/%00/",
    ],
)
def test_nul_in_query_or_path_is_400(owner_client, url):
    response = owner_client.get(url)
    assert response.status_code == 400
    assert b"NUL characters" in response.content


def test_nul_in_form_field_is_400(owner_client, team):
    response = owner_client.post("/plans/import/", {"text": "name: a\x00b\ntool: fio\n"})
    assert response.status_code == 400
    assert not team.plans.exists()


def test_nul_in_login_form_is_400(client, owner):
    response = client.post("/login/", {"username": "olivia\x00", "password": "x"})
    assert response.status_code == 400


def test_nul_in_json_body_is_400(owner, team):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=owner).key}")
    response = api.post(
        "/api/plans/", {"document": {"name": "a\x00", "tool": "fio"}}, format="json"
    )
    assert response.status_code == 400
    assert not team.plans.exists()
    response = api.post(
        "/api/credentials/", {"name": "n", "kind": "password", "secret": "s\x00"}, format="json"
    )
    assert response.status_code == 400


def test_ordinary_requests_pass(owner_client):
    assert owner_client.get("/runs/?q=abc").status_code == 200
