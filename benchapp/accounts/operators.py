"""Operators: staff users (who may give targets data directories on the worker,
docs/trust-model.md) who also own a team, so their dashboard is not empty."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db import transaction

from benchapp.models import Membership, Team


@dataclass
class Operator:
    user: object
    team: Team
    created_user: bool
    created_team: bool
    was_staff: bool


@transaction.atomic
def make_operator(username: str, team_name: str, password: str | None = None) -> Operator:
    """Make `username` staff and an owner of `team_name`, creating either as needed.

    A new user gets `password`, or an unusable one when None (set it later
    with `manage.py changepassword`). An existing user keeps their password and
    other memberships; a lower role in the team is raised to owner.
    """
    User = get_user_model()
    user = User.objects.filter(username=username).first()
    created_user = user is None
    if created_user:
        user = User(username=username)
        user.set_password(password) if password else user.set_unusable_password()
    was_staff = user.is_staff
    user.is_staff = True
    user.save()
    team, created_team = Team.objects.get_or_create(name=team_name)
    membership, _ = Membership.objects.get_or_create(
        team=team, user=user, defaults={"role": Membership.OWNER}
    )
    if membership.role != Membership.OWNER:
        membership.role = Membership.OWNER
        membership.save(update_fields=["role"])
    return Operator(user, team, created_user, created_team, was_staff)
