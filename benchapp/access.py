"""Team scoping: one helper per object kind, returning the object or 404.

The current team is kept in the session (the team switcher sets it); a user
sees only their teams' objects and anything else is a 404, never a 403, so
the existence of other teams' objects does not leak.
"""

from django.http import Http404
from django.shortcuts import get_object_or_404

from benchapp.models import Comparison, Credential, Plan, Run, Target, Team

SESSION_KEY = "team_id"


def user_teams(user):
    return Team.objects.filter(membership__user=user).order_by("name")


def current_team(request) -> Team:
    """The team chosen in the session, else the user's first team; 404 without one."""
    if not request.user.is_authenticated:
        raise Http404("No team")
    teams = user_teams(request.user)
    team_id = request.session.get(SESSION_KEY)
    team = teams.filter(pk=team_id).first() if team_id else None
    team = team or teams.first()
    if team is None:
        raise Http404("You are not a member of any team")
    request.session[SESSION_KEY] = team.pk
    return team


def _scoped(model, request, **lookup):
    return get_object_or_404(model, team__membership__user=request.user, **lookup)


def get_target(request, pk) -> Target:
    return _scoped(Target, request, pk=pk)


def get_credential(request, pk) -> Credential:
    return _scoped(Credential, request, pk=pk)


def get_plan(request, pk) -> Plan:
    return _scoped(Plan, request, pk=pk)


def get_run(request, pk) -> Run:
    return _scoped(Run, request, pk=pk)


def get_comparison(request, pk) -> Comparison:
    return _scoped(Comparison, request, pk=pk)
