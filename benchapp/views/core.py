from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchapp.access import SESSION_KEY, current_team, user_teams


@login_required
def home(request):
    team = current_team(request)
    runs = team.runs.all()[:20]
    return render(request, "home.html", {"team": team, "runs": runs})


@login_required
@require_POST
def switch_team(request):
    team = user_teams(request.user).filter(pk=request.POST.get("team")).first()
    if team:
        request.session[SESSION_KEY] = team.pk
    return redirect(request.POST.get("next") or "home")


def healthz(request):
    return HttpResponse("ok", content_type="text/plain")
