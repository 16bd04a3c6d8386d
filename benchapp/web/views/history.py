"""History pages (issue 14): a plan's trend (chart data served as JSON to
static/js/trend.js), pinning a baseline, the team's alerts and verdicts."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.html import escape
from django.views.decorators.http import require_POST

from benchapp.accounts.access import MEMBER, current_team, get_plan, require_role
from benchapp.analysis import metricnames
from benchapp.histories import confirmation, history, planedits
from benchapp.models import Alert
from benchapp.plans.planning import PlanRefused
from benchapp.web.views.results import refuses_bad_query
from runners import tools

# Points per line sent to the browser; a longer line is downsampled into
# buckets of consecutive runs (mean of their means, min of lows, max of highs),
# a bucket starting at every run where an alert starts and the last run alone.
MAX_POINTS = 200
DEFAULT_LINES = 10


@refuses_bad_query
@login_required
def plan_trend(request, pk):
    plan = get_plan(request, pk)
    history.trend_choices(history.history_plans(plan), request.GET, tool=plan.tool)
    alerts = list(
        Alert.objects.filter(plan=plan, lead=None)
        .select_related("plan", "start_run")
        .prefetch_related("followers")[:50]
    )
    return render(request, "history/trend.html", {"plan": plan, "alerts": alerts})


def buckets(n: int, keep: set[int]) -> list[tuple[int, int]]:
    """[start, end) index ranges covering n points in at most about MAX_POINTS
    buckets, each index of `keep` starting one, the last index alone."""
    if n <= MAX_POINTS:
        return [(i, i + 1) for i in range(n)]
    edges = sorted({int(i * n / MAX_POINTS) for i in range(MAX_POINTS)} | keep | {n - 1})
    return list(zip(edges, edges[1:] + [n]))


def _line(s, change: int | None) -> dict:
    keep = {s.run_ids.index(change)} if change in s.run_ids else set()
    line = {
        "key": s.cell_key + (f" [{s.group}]" if s.group else ""),
        "change": change,
        "runs": [],
        "x": [],
        "mean": [],
        "low": [],
        "high": [],
        "n": [],
    }
    for a, b in buckets(len(s.run_ids), keep):
        line["runs"].append(s.run_ids[a])
        line["x"].append(s.dates[a].isoformat())
        line["mean"].append(sum(s.means[a:b]) / (b - a))
        line["low"].append(min(s.lows[a:b]))
        line["high"].append(max(s.highs[a:b]))
        line["n"].append(b - a)
    return line


@refuses_bad_query
@login_required
def plan_trend_json(request, pk):
    plan = get_plan(request, pk)
    plan_ids = history.history_plans(plan)
    names = history.series_names(plan_ids)  # read once for both
    metric, metrics, keys, wanted = history.trend_choices(
        plan_ids, request.GET, names, tool=plan.tool
    )
    chosen = history.load_series(plan_ids, [metric], wanted or keys[:DEFAULT_LINES], names=names)
    alerts = {
        (a.cell_key, a.group): a  # the latest alert of a series wins
        for a in Alert.objects.filter(plan=plan, metric=metric).order_by("created_at")
    }
    lines = []
    for s in chosen.values():
        alert = alerts.get((s.cell_key, s.group))
        lines.append(_line(s, alert.start_run_id if alert else None))
        lines[-1]["alert"] = _alert_marker(alert) if alert else None
    row = tools.metric(plan.tool, metric)
    edits, _ = planedits.plan_edits(plan_ids)
    return JsonResponse(
        {
            "metric": metric,
            "metrics": metrics,
            # the same names in words, grouped (tool's own, then telemetry by source)
            "metric_groups": metricnames.as_json(plan.tool, metrics),
            "keys": keys,
            "lines": lines,
            "baseline": plan.baseline_run_id,
            # from the metric catalog (runners.tools.direction): "" when neither
            "direction": row.judged,
            "sense": row.sense(),
            "metric_title": row.title(),
            "unit": row.unit,
            # vertical markers: where the runs' frozen plan changed
            "edits": [{"run": e.run_id, "x": e.at.isoformat(), "text": e.text()} for e in edits],
        }
    )


def _alert_marker(alert: Alert) -> dict:
    """What the trend's marker of a detected change says: "worse -34.4 %
    from run #12 (new)", coloured by `change` (worse, better, changed)."""
    text = (
        f"{alert.change} {alert.magnitude * 100:+.1f} % from run #{alert.start_run_id} "
        f"({alert.get_status_display().lower()})"
    )
    # What else changed, nearest first: the hover names the likely cause.
    for change in (alert.explanation or [])[:3]:
        text += "<br>" + escape(change["text"])  # Plotly reads tags (<a>) in hover text
    return {"change": alert.change, "text": text}


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
@require_POST
def plan_history_settings(request, pk):
    """The plan's study label (plans sharing one share a history) and whether
    new bad alerts are confirmed by a re-run automatically."""
    plan = get_plan(request, pk, role=MEMBER)
    plan.study = request.POST.get("study", "").strip()[:100]
    plan.confirm_alerts = request.POST.get("confirm_alerts") == "on"
    plan.save(update_fields=["study", "confirm_alerts"])
    messages.success(request, "History settings saved.")
    return redirect("plan_trend", pk=plan.pk)


@login_required
def alert_list(request):
    """The team's alerts, or one plan's with ?plan=ID (the plan page links here)."""
    team = current_team(request)
    # One row per incident: an alert's followers (what moved with it) are listed in its row.
    alerts = (
        Alert.objects.filter(team=team, lead=None)
        .select_related("plan", "start_run")
        .prefetch_related("followers")
    )
    plan = None
    raw = request.GET.get("plan")
    if raw:
        plan = team.plans.filter(pk=raw).first() if raw.isdigit() else None
        if plan is None:
            messages.error(request, f"No plan {raw!r} in {team.name}: showing every alert.")
        else:
            alerts = alerts.filter(plan=plan)
    return render(
        request,
        "history/alerts.html",
        {
            "team": team,
            "plan": plan,
            "alerts": alerts[:200],
            "verdicts": history.verdict_counts(team),
        },
    )


@login_required
@require_POST
def alert_confirm(request, pk):
    """Re-run the alert's cells; the alert is judged when that run has finished."""
    team = current_team(request)
    require_role(request.user, team, MEMBER)
    alert = get_object_or_404(Alert.objects.select_related("plan"), pk=pk, team=team)
    if alert.status != Alert.NEW or (alert.confirm_run and alert.confirm_run.is_active):
        messages.error(request, "This alert is already being or has been judged.")
        return redirect("alert_list")
    try:
        run = confirmation.start([alert], user=request.user)
    except PlanRefused as exc:
        messages.error(request, f"Cannot re-run {alert.cell_key}: {exc}")
        return redirect("alert_list")
    messages.success(request, f"Confirmation run #{run.pk} started for {alert.series_name}.")
    return redirect("run_detail", run.pk)


@login_required
@require_POST
def alert_verdict(request, pk):
    alert = get_object_or_404(Alert, pk=pk, team=current_team(request))
    alert.verdict = {"true": True, "false": False}.get(request.POST.get("verdict"))
    alert.save(update_fields=["verdict", "updated_at"])
    return redirect("alert_list")
