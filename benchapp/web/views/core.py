from django.contrib.auth.decorators import login_required
from django.db.models import Case, Count, F, IntegerField, OuterRef, Q, Subquery, Value, When
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchapp.accounts.access import SESSION_KEY, current_team, user_teams
from benchapp.histories.history import recent_alerts
from benchapp.models import Cell, Run, RunMetric
from benchapp.web.middleware import safe_next
from runners import tools

RECENT_RUNS = 15


@login_required
def home(request):
    """The dashboard: running runs with live progress, the team's latest alerts,
    recent runs with their headline figure, the team's targets and their last
    connection check."""
    team = current_team(request)
    runs = Run.objects.for_team(team).select_related("plan").order_by("-created_at", "-pk")
    active = list(
        runs.filter(status__in=Run.ACTIVE).annotate(
            cell_total=Count("cells"),
            cell_done=Count("cells", filter=Q(cells__status__in=Cell.TERMINAL)),
        )
    )
    for run in active:
        run.percent = round(100.0 * run.cell_done / run.cell_total, 1) if run.cell_total else 0.0
    recent = list(with_headline(runs.exclude(status__in=Run.ACTIVE))[:RECENT_RUNS])
    for run in recent:
        run.headline = headline(run)
    return render(
        request,
        "home.html",
        {
            "team": team,
            "active": active,
            "recent": recent,
            "recent_alerts": recent_alerts(team),
            "targets": team.targets.all(),
        },
    )


def with_headline(runs):
    """Annotate each run with its headline figure in the same query: the mean
    of its tool's main metric (runners.tools.main_metric: the first of its
    MAIN_METRICS the run measured; else its first measured metric), as
    `headline_metric`, `headline_value`, `headline_unit`, from the run's
    RunMetric totals, not its measurements. headline() words it."""
    rank = Case(
        *[
            When(run__tool=tool, metric=name, then=Value(i))
            for tool in tools.TOOL_NAMES
            for i, name in enumerate(tools.main_metrics(tool))
        ],
        default=Value(len(tools.TOOL_NAMES) * 10),
        output_field=IntegerField(),
    )
    first = (
        RunMetric.objects.filter(run=OuterRef("pk"), count__gt=0)
        .annotate(rank=rank)
        .order_by("rank", "pk")
    )
    mean = first.annotate(mean=F("total") / F("count")).values("mean")
    return runs.annotate(
        headline_metric=Subquery(first.values("metric")[:1]),
        headline_unit=Subquery(first.values("unit")[:1]),
        headline_value=Subquery(mean[:1]),
    )


def headline(run) -> dict | None:
    """A run's headline in words, from with_headline's annotations: {"label"
    ("Transactions per second"), "value", "unit" ("tps")} by the tool's
    catalog; None when the run measured nothing."""
    if run.headline_value is None:
        return None
    found = tools.metric(run.tool, run.headline_metric, run.headline_unit or "")
    return {
        "label": found.label,
        "value": run.headline_value,
        "unit": found.unit or run.headline_unit or "",
        "sense": found.sense(),
    }


@login_required
@require_POST
def switch_team(request):
    team = user_teams(request.user).filter(pk=request.POST.get("team")).first()
    if team:
        request.session[SESSION_KEY] = team.pk
    return redirect(safe_next(request, "home"))


def healthz(request):
    return HttpResponse("ok", content_type="text/plain")
