"""History pages (issue 14): a plan's trend (chart data served as JSON to
static/js/trend.js), pinning a baseline, the team's alerts and verdicts."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from benchapp import history
from benchapp.access import current_team, get_plan
from benchapp.models import Alert, Measurement

# Points per line sent to the browser; longer lines are thinned evenly, keeping
# the first, the last and every run where an alert starts.
MAX_POINTS = 400
DEFAULT_LINES = 10


@login_required
def plan_trend(request, pk):
    plan = get_plan(request, pk)
    alerts = list(Alert.objects.filter(plan=plan).select_related("start_run")[:50])
    return render(request, "history/trend.html", {"plan": plan, "alerts": alerts})


def _thin(series, keep_runs) -> list[int]:
    n = len(series.run_ids)
    if n <= MAX_POINTS:
        return list(range(n))
    step = n / MAX_POINTS
    picked = {int(i * step) for i in range(MAX_POINTS)} | {n - 1}
    picked |= {i for i, run_id in enumerate(series.run_ids) if run_id in keep_runs}
    return sorted(picked)


@login_required
def plan_trend_json(request, pk):
    plan = get_plan(request, pk)
    runs = history.history_runs(plan)
    dates = {run.pk: run.created_at.isoformat() for run in runs}
    metrics = sorted(Measurement.objects.filter(run_id__in=list(dates)).values_list("metric", flat=True)
                     .distinct())
    metric = request.GET.get("metric") or (metrics[0] if metrics else "")
    keys = sorted(Measurement.objects.filter(run_id__in=list(dates), metric=metric)
                  .values_list("cell__key", flat=True).distinct())
    wanted = [k for k in request.GET.get("keys", "").split("|") if k in keys]
    chosen = list(history.load_series(runs, [metric], wanted or keys[:DEFAULT_LINES]).values())
    starts = {(a.cell_key, a.group): a.start_run_id
              for a in Alert.objects.filter(plan=plan, metric=metric)}
    lines = []
    for s in chosen:
        idx = _thin(s, {starts.get((s.cell_key, s.group))})
        lines.append({
            "key": s.cell_key + (f" [{s.group}]" if s.group else ""),
            "runs": [s.run_ids[i] for i in idx], "x": [dates[s.run_ids[i]] for i in idx],
            "mean": [s.means[i] for i in idx], "low": [s.lows[i] for i in idx],
            "high": [s.highs[i] for i in idx],
            "change": starts.get((s.cell_key, s.group)),
        })
    return JsonResponse({"metric": metric, "metrics": metrics, "keys": keys, "lines": lines,
                         "baseline": plan.baseline_run_id,
                         "higher_is_better": history.higher_is_better(metric)})


@login_required
@require_POST
def plan_pin_baseline(request, pk):
    plan = get_plan(request, pk)
    run_id = request.POST.get("run") or None
    if run_id and not plan.runs.filter(pk=run_id).exists():
        messages.error(request, "That run is not a run of this plan.")
    else:
        plan.baseline_run_id = run_id
        plan.save(update_fields=["baseline_run"])
    return redirect("plan_trend", pk=plan.pk)


@login_required
def alert_list(request):
    team = current_team(request)
    alerts = Alert.objects.filter(team=team).select_related("plan", "start_run")[:200]
    return render(request, "history/alerts.html", {
        "team": team, "alerts": alerts, "verdicts": history.verdict_counts(team)})


@login_required
@require_POST
def alert_verdict(request, pk):
    alert = get_object_or_404(Alert, pk=pk, team=current_team(request))
    alert.verdict = {"true": True, "false": False}.get(request.POST.get("verdict"))
    alert.save(update_fields=["verdict", "updated_at"])
    return redirect("alert_list")
