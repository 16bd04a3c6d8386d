"""manage.py makeoperator: a staff user who owns a team, whose dashboard works."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from benchapp.models import Membership, Team

pytestmark = pytest.mark.django_db


def _run(*args, **kwargs):
    out = StringIO()
    call_command("makeoperator", *args, stdout=out, **kwargs)
    return out.getvalue()


def test_new_user_and_team(client):
    out = _run("alice", "--team", "ops", "--no-input")
    user = get_user_model().objects.get(username="alice")
    assert user.is_staff and not user.is_superuser and not user.has_usable_password()
    assert Membership.objects.get(user=user).role == Membership.OWNER
    assert Membership.objects.get(user=user).team.name == "ops"
    assert out.splitlines() == [
        "Created user alice: now staff (operator), owner of team ops (new team).",
        "Set a password: python manage.py changepassword alice",
    ]
    client.force_login(user)
    page = client.get("/")
    assert page.status_code == 200 and "<h1>ops</h1>" in page.content.decode()
    # Staff may give a target data directories: the form offers the field.
    assert 'name="data_dirs"' in client.get("/targets/new/").content.decode()


def test_existing_user_joins_an_existing_team_as_owner(team, member):
    assert Membership.objects.get(user=member, team=team).role == Membership.MEMBER
    other = Team.objects.create(name="second")
    Membership.objects.create(team=other, user=member, role=Membership.VIEWER)
    out = _run("max", "--team", "alpha")
    member.refresh_from_db()
    assert member.is_staff and member.check_password("pw-max")  # password kept
    assert Membership.objects.get(user=member, team=team).role == Membership.OWNER
    assert Membership.objects.get(user=member, team=other).role == Membership.VIEWER
    assert out.strip() == "Updated user max: now staff (operator), owner of team alpha."
    assert Team.objects.count() == 2
    again = _run("max", "--team", "alpha")
    assert "already staff" in again and Membership.objects.filter(user=member).count() == 2


def test_password_asked_twice(monkeypatch):
    answers = iter(["s3cret-pass", "s3cret-pass"])
    monkeypatch.setattr("getpass.getpass", lambda prompt: next(answers))
    _run("bob", "--team", "ops")
    assert get_user_model().objects.get(username="bob").check_password("s3cret-pass")


def test_mismatched_passwords_change_nothing(monkeypatch):
    from django.core.management.base import CommandError

    answers = iter(["one", "two"])
    monkeypatch.setattr("getpass.getpass", lambda prompt: next(answers))
    with pytest.raises(CommandError, match="do not match"):
        _run("bob", "--team", "ops")
    assert not get_user_model().objects.filter(username="bob").exists()
    assert not Team.objects.filter(name="ops").exists()
