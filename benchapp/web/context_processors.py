from benchapp.accounts.access import SESSION_KEY, user_teams


def teams(request):
    """The team switcher's data for every page."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    return {
        "user_teams": list(user_teams(request.user)),
        "current_team_id": request.session.get(SESSION_KEY),
    }
