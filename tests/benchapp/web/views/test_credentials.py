"""Credentials pages: team scoping, write-only secrets, validation."""

import pytest

from benchapp.models import Credential
from tests.benchapp.ui_data import CANARY, assert_no_canary, make_credential, make_target

pytestmark = pytest.mark.django_db


@pytest.fixture
def cred(team):
    return make_credential(team)


@pytest.mark.parametrize("persona", ["owner_client", "member_client"])
def test_credential_list_shows_fingerprint_never_secret(request, persona, cred):
    response = request.getfixturevalue(persona).get("/credentials/")
    assert response.status_code == 200
    html = response.content.decode()
    assert cred.fingerprint in html and "set, changed on" in html
    assert_no_canary(response)


def test_credential_list_outsider_sees_only_own_team(outsider_client, cred):
    response = outsider_client.get("/credentials/")
    assert response.status_code == 200
    assert cred.name not in response.content.decode()
    assert "No credentials yet" in response.content.decode()


@pytest.mark.parametrize(
    "method,url",
    [
        ("get", "/credentials/{pk}/edit/"),
        ("post", "/credentials/{pk}/edit/"),
        ("post", "/credentials/{pk}/delete/"),
    ],
)
def test_credential_object_pages_outsider_gets_404(outsider_client, cred, method, url):
    response = getattr(outsider_client, method)(url.format(pk=cred.pk))
    assert response.status_code == 404
    assert Credential.objects.filter(pk=cred.pk, name="db-pw").exists()


def test_credential_list_query_count(owner_client, team, django_assert_max_num_queries):
    for i in range(15):
        make_credential(team, name=f"c{i}", secret=f"s{i}")
    # 8, and two for the "Bound to" column (the team's targets, the explicit
    # bindings), whatever the number of credentials.
    with django_assert_max_num_queries(10):
        response = owner_client.get("/credentials/")
    assert response.content.decode().count("set, changed on") == 15


def test_credential_create_encrypts_and_redirects(owner_client, team):
    response = owner_client.post(
        "/credentials/new/",
        {"name": "ops-key", "kind": "password", "username": "", "secret": CANARY},
    )
    assert response.status_code == 302
    cred = Credential.objects.get(team=team, name="ops-key")
    assert cred.secret() == CANARY and CANARY not in cred.encrypted
    assert_no_canary(owner_client.get("/credentials/"))


def test_credential_create_errors_never_echo_the_secret(owner_client, cred):
    response = owner_client.post(
        "/credentials/new/", {"name": "db-pw", "kind": "password", "secret": CANARY}
    )
    assert response.status_code == 200
    assert "already has a credential with this name" in response.content.decode()
    assert_no_canary(response)


def test_credential_create_needs_a_secret(owner_client):
    response = owner_client.post("/credentials/new/", {"name": "x", "kind": "password"})
    assert response.status_code == 200
    assert "This field is required." in response.content.decode()


def test_credential_edit_keeps_secret_when_left_empty(owner_client, cred):
    page = owner_client.get(f"/credentials/{cred.pk}/edit/")
    assert_no_canary(page)
    assert cred.fingerprint in page.content.decode()
    response = owner_client.post(
        f"/credentials/{cred.pk}/edit/", {"name": "db-pw-renamed", "kind": "password", "secret": ""}
    )
    assert response.status_code == 302
    cred.refresh_from_db()
    assert cred.name == "db-pw-renamed" and cred.secret() == CANARY


def test_credential_edit_replaces_secret(owner_client, cred):
    owner_client.post(
        f"/credentials/{cred.pk}/edit/",
        {"name": "db-pw", "kind": "password", "secret": "new-secret"},
    )
    cred.refresh_from_db()
    assert cred.secret() == "new-secret"


def test_credential_delete_refused_while_a_target_uses_it(owner_client, team, cred):
    make_target(team, credential=cred)
    response = owner_client.post(f"/credentials/{cred.pk}/delete/", follow=True)
    assert "is used by a target" in response.content.decode()
    assert Credential.objects.filter(pk=cred.pk).exists()


def test_credential_delete(owner_client, cred):
    assert owner_client.post(f"/credentials/{cred.pk}/delete/").status_code == 302
    assert not Credential.objects.filter(pk=cred.pk).exists()
