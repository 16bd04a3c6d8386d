"""`next=` only ever redirects to this site (login, logout, team switcher,
run annotation)."""

import pytest

from benchapp.models import Membership, Team
from tests.benchapp.results_data import make_run

EVIL = ["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)"]


@pytest.mark.parametrize("target", EVIL)
def test_login_ignores_foreign_next(client, owner, target):
    response = client.post(
        f"/login/?next={target}", {"username": "olivia", "password": "pw-olivia"}
    )
    assert response.status_code == 302
    assert "evil" not in response["Location"] and "javascript" not in response["Location"]


@pytest.mark.parametrize("target", EVIL)
def test_team_switcher_ignores_foreign_next(owner_client, owner, target):
    other = Team.objects.create(name="beta")
    Membership.objects.create(team=other, user=owner)
    response = owner_client.post("/team/switch/", {"team": other.pk, "next": target})
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_team_switcher_keeps_local_next(owner_client):
    response = owner_client.post("/team/switch/", {"team": 0, "next": "/runs/?page=2"})
    assert response["Location"] == "/runs/?page=2"


@pytest.mark.parametrize("target", EVIL)
def test_annotate_ignores_foreign_next(owner_client, team, target):
    run = make_run(team)
    response = owner_client.post(
        f"/runs/{run.pk}/annotate/", {"tags": "a", "notes": "", "next": target}
    )
    assert response.status_code == 302
    assert "evil" not in response["Location"] and "javascript" not in response["Location"]


@pytest.mark.parametrize("target", EVIL)
def test_logout_ignores_foreign_next(owner_client, target):
    response = owner_client.post(f"/logout/?next={target}")
    assert response.status_code == 302
    assert "evil" not in response["Location"] and "javascript" not in response["Location"]
