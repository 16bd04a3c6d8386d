"""A target's permissions (docs/trust-model.md): allow_custom_scripts is set by team
admins, data_dirs only by staff (operators); anyone else gets a clear refusal, in
the target form and in the API, and nothing changes."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from benchapp.models import Membership, Target
from tests.benchapp.ui_data import target_post

pytestmark = pytest.mark.django_db

STAFF_ONLY = "Only an operator (staff) may set a target&#x27;s data directories"


def _post(**fields):
    return target_post(**{"name": "db", "host": "db.example.invalid", **fields})


@pytest.fixture
def operator(team, django_user_model):
    """A staff user who is also an admin of the team."""
    user = django_user_model.objects.create_user("sam", "sam@example.test", "pw-sam", is_staff=True)
    Membership.objects.create(team=team, user=user, role=Membership.ADMIN)
    return user


def _api(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_team_admin_allows_custom_scripts_in_the_form(team_admin_client, team):
    response = team_admin_client.post("/targets/new/", _post(allow_custom_scripts="on"))
    assert response.status_code == 302, response.content.decode()[:2000]
    assert Target.objects.get(team=team, name="db").allow_custom_scripts is True
    target = Target.objects.get(team=team, name="db")
    response = team_admin_client.post(f"/targets/{target.pk}/edit/", _post())  # box unchecked
    assert response.status_code == 302
    assert Target.objects.get(pk=target.pk).allow_custom_scripts is False


def test_team_admin_may_not_set_data_dirs(team_admin_client, team):
    response = team_admin_client.post("/targets/new/", _post(data_dirs="/srv/bench"))
    assert response.status_code == 200
    assert STAFF_ONLY in response.content.decode()
    assert not Target.objects.filter(team=team, name="db").exists()


def test_operator_sets_data_dirs_and_an_admin_edit_keeps_them(operator, team, team_admin_client):
    from django.test import Client

    client = Client()
    client.force_login(operator)
    response = client.post("/targets/new/", _post(data_dirs="/srv/bench, /var/tmp/bb"))
    assert response.status_code == 302, response.content.decode()[:2000]
    target = Target.objects.get(team=team, name="db")
    assert target.data_dirs == ["/srv/bench", "/var/tmp/bb"]
    page = team_admin_client.get(f"/targets/{target.pk}/edit/").content.decode()
    assert 'name="data_dirs"' in page and "disabled" in page.split('name="data_dirs"')[1][:200]
    # A browser does not post a disabled field: the admin's save keeps the operator's grant.
    response = team_admin_client.post(f"/targets/{target.pk}/edit/", _post(notes="edited"))
    assert response.status_code == 302
    target.refresh_from_db()
    assert (target.notes, target.data_dirs) == ("edited", ["/srv/bench", "/var/tmp/bb"])
    response = team_admin_client.post(f"/targets/{target.pk}/edit/", _post(data_dirs=""))
    assert STAFF_ONLY in response.content.decode()
    assert Target.objects.get(pk=target.pk).data_dirs == ["/srv/bench", "/var/tmp/bb"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("srv/bench", "an absolute path"),
        ("/srv/../etc", "an absolute path"),
        ("/etc", "is a system directory"),
    ],
)
def test_operator_data_dirs_are_checked(client, operator, team, value, message):
    client.force_login(operator)
    response = client.post("/targets/new/", _post(data_dirs=value))
    assert message in response.content.decode()
    assert not Target.objects.filter(team=team, name="db").exists()


def test_api_permissions(team_admin, operator, team):
    created = _api(team_admin).post(
        "/api/targets/",
        {
            "name": "db",
            "kind": "mysql",
            "host": "db.example.invalid",
            "port": 3306,
            "allow_custom_scripts": True,
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    assert created.json()["allow_custom_scripts"] is True and created.json()["data_dirs"] == []
    url = f"/api/targets/{created.json()['id']}/"
    refused = _api(team_admin).patch(url, {"data_dirs": ["/srv/bench"]}, format="json")
    assert refused.status_code == 400
    assert "Only an operator (staff) may set a target's data directories" in str(refused.json())
    assert Target.objects.get(name="db").data_dirs == []
    granted = _api(operator).patch(url, {"data_dirs": ["/srv/bench"]}, format="json")
    assert granted.status_code == 200, granted.content
    assert Target.objects.get(name="db").data_dirs == ["/srv/bench"]
    # The admin's later edit of another field keeps the grant.
    assert _api(team_admin).patch(url, {"notes": "n"}, format="json").status_code == 200
    assert Target.objects.get(name="db").data_dirs == ["/srv/bench"]


def test_only_admins_may_allow_custom_scripts():
    from benchapp.models import Team
    from benchapp.web.forms_targets import TargetForm

    team = Team.objects.create(name="t")
    form = TargetForm(_post(allow_custom_scripts="on"), team=team, user=None)
    assert not form.is_valid()
    assert form.errors["allow_custom_scripts"] == [
        "Only a team admin may allow custom scripts on a target."
    ]


def test_a_redis_target_with_a_credential_is_refused_at_save(team_admin, team):
    """redis-benchmark 7.0 would need the password in argv: refused with a clear message."""
    from tests.benchapp.ui_data import make_credential

    make_credential(team, name="cache-pw")
    response = _api(team_admin).post(
        "/api/targets/",
        {
            "name": "cache",
            "kind": "redis",
            "host": "cache.example.invalid",
            "port": 6380,
            "credential": "cache-pw",
        },
        format="json",
    )
    assert response.status_code == 400
    assert "a Redis target cannot have a password" in str(response.json())
    assert not Target.objects.filter(team=team, name="cache").exists()
