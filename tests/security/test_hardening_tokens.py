"""API tokens are listed (never their keys) and revocable by their owner, on
a page and over the API; a revoked token gets a 401 at once."""

from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


def _api(key):
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api


def test_page_lists_creates_and_revokes(owner_client, owner):
    key = Token.objects.create(user=owner).key
    assert _api(key).get("/api/runs/").status_code == 200
    page = owner_client.get("/tokens/")
    assert page.status_code == 200
    body = page.content.decode()
    assert key[:8] in body and key not in body
    response = owner_client.post(f"/tokens/{key[:8]}/revoke/", follow=True)
    assert b"revoked" in response.content
    assert not Token.objects.filter(user=owner).exists()
    assert _api(key).get("/api/runs/").status_code == 401
    created = owner_client.post("/tokens/")
    new_key = Token.objects.get(user=owner).key
    assert new_key in created.content.decode()  # shown once, in this answer
    assert new_key not in owner_client.get("/tokens/").content.decode()
    assert _api(new_key).get("/api/runs/").status_code == 200


def test_revoke_is_post_only_and_owner_only(client, owner, member):
    key = Token.objects.create(user=owner).key
    client.force_login(member)
    assert client.get(f"/tokens/{key[:8]}/revoke/").status_code == 405
    client.post(f"/tokens/{key[:8]}/revoke/")
    assert Token.objects.filter(key=key).exists()  # not member's token
    assert key[:8] not in client.get("/tokens/").content.decode()


def test_api_lists_and_revokes(owner, member):
    key = Token.objects.create(user=owner).key
    other = Token.objects.create(user=member).key
    api = _api(key)
    listed = api.get("/api/tokens/").json()
    assert listed == [{"prefix": key[:8], "created": listed[0]["created"]}]
    assert api.delete(f"/api/tokens/{other[:8]}/").status_code == 404
    assert _api(other).get("/api/runs/").status_code == 200
    assert api.delete(f"/api/tokens/{key[:8]}/").status_code == 204
    assert api.get("/api/tokens/").status_code == 401
    assert api.get("/api/runs/").status_code == 401
