"""A malformed or deeply nested JSON body is a 400 with a message wherever it
arrives: the API, the pages, signed in or anonymous (it was an unhandled
RecursionError, a 500)."""

import pytest
from rest_framework.authtoken.models import Token

DEEP = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 100 + b"1" + b"}" * 100
PATHS = ["/api/plans/", "/api/runs/", "/api/token/", "/login/", "/plans/import/", "/nowhere/"]


@pytest.fixture
def token(owner):
    return Token.objects.create(user=owner).key


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("body", [DEEP, DEEP_OBJECT], ids=["100000-levels", "100-levels"])
def test_deep_json_is_400_anonymous(client, db, path, body):
    response = client.post(path, body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"detail": "The JSON body nests more than 64 levels."}


@pytest.mark.parametrize("path", PATHS)
def test_deep_json_is_400_signed_in(client, token, path):
    response = client.post(
        path, DEEP, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}"
    )
    assert response.status_code == 400
    assert "nests more than 64 levels" in response.json()["detail"]


@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_deep_json_is_400_for_every_method(client, token, method):
    response = getattr(client, method)(
        "/api/plans/1/", DEEP, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}"
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    "body", [b'{"document": ', b"\xff\xfe{", b"{'a': 1}", b"[1, 2,]"], ids=repr
)
def test_malformed_json_is_400_with_a_message(client, token, body):
    for headers in ({}, {"HTTP_AUTHORIZATION": f"Token {token}"}):
        response = client.post("/api/plans/", body, content_type="application/json", **headers)
        assert response.status_code == 400
        assert response.json()["detail"].startswith("The body is not valid JSON: ")


def test_json_suffixed_types_are_read_too(client, db):
    response = client.post("/api/token/", DEEP, content_type="application/merge-patch+json")
    assert response.status_code == 400


def test_ordinary_json_still_works(client, owner, token, team):
    document = {
        "name": "ok",
        "tool": "fio",
        "targets": [{"name": "d", "kind": "host"}],
        "client": {"on": "target"},
        "params": {"filename": "/tmp/x", "size": "1M"},
    }
    response = client.post(
        "/api/plans/",
        {"document": document},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert response.status_code == 201, response.content
    empty = client.post(
        f"/api/plans/{response.json()['id']}/",
        b"",
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {token}",
    )
    assert empty.status_code == 405  # an empty body is no JSON error
