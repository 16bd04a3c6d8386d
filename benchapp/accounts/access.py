"""Team scoping: one helper per object kind, returning the object or 404.

The current team is kept in the session (the team switcher sets it); a user
sees only their teams' objects and anything else is a 404, never a 403, so
the existence of other teams' objects does not leak.
"""

from functools import wraps

from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404

from benchapp.models import Comparison, Credential, Membership, Plan, Run, Target, Team

VIEWER, MEMBER, ADMIN, OWNER = (
    Membership.VIEWER,
    Membership.MEMBER,
    Membership.ADMIN,
    Membership.OWNER,
)

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
    if team_id != team.pk:  # an unchanged session is not written back (3 queries a page)
        request.session[SESSION_KEY] = team.pk
    return team


def require_role(user, team, role) -> Membership:
    """The user's membership of team; 404 for an outsider, 403 below `role`."""
    membership = Membership.objects.filter(team=team, user=user).first()
    if membership is None:
        raise Http404("No such team")
    if not membership.allows(role):
        raise PermissionDenied(f"This needs the {role} role in team {team.name}.")
    return membership


def _scoped(model, request, role, **lookup):
    obj = get_object_or_404(
        model.objects.select_related("team"), team__membership__user=request.user, **lookup
    )
    require_role(request.user, obj.team, role)
    return obj


def get_target(request, pk, role=VIEWER) -> Target:
    return _scoped(Target, request, role, pk=pk)


def get_credential(request, pk, role=VIEWER) -> Credential:
    return _scoped(Credential, request, role, pk=pk)


def get_plan(request, pk, role=VIEWER) -> Plan:
    return _scoped(Plan, request, role, pk=pk)


def get_run(request, pk, role=VIEWER) -> Run:
    return _scoped(Run, request, role, pk=pk)


def get_comparison(request, pk, role=VIEWER) -> Comparison:
    return _scoped(Comparison, request, role, pk=pk)


_GETTERS = {
    "plan": get_plan,
    "run": get_run,
    "comparison": get_comparison,
    "target": get_target,
    "credential": get_credential,
}


def role_required(role, kind: str | None = None):
    """View decorator: 403 below `role` (404 outside the team) before the view runs.

    kind names the object the URL's pk is ("plan", "run", ...): the role is
    checked in that object's team; without kind, in the current team.
    """

    def decorate(view):
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if kind is None:
                require_role(request.user, current_team(request), role)
            else:
                _GETTERS[kind](request, kwargs["pk"], role=role)
            return view(request, *args, **kwargs)

        return wrapped

    return decorate
