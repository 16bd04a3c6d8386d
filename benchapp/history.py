"""Histories: the finished runs of a plan (and of plans with the same study
label) as one series per (cell key, group, metric), and change detection over
them (runners.changepoint) that turns new change points into Alerts.

A run contributes one point per series: the mean of its cells' repeats and
iterations (latest attempt of each cell), with their min and max for the band
on the trend page. The points are computed once per run (`summarize_run`,
stored as RunSummary rows) so histories read one row per run and series.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Q

from benchapp.models import Alert, HistoryState, Measurement, Plan, Run, RunSummary
from runners import changepoint, levels

FINISHED = (Run.SUCCEEDED, Run.PARTIAL)
WINDOW = 50
MAX_PVALUE = changepoint.DEFAULT_MAX_PVALUE
MIN_MAGNITUDE = 0.03
RECOVERY_POINTS = 5  # latest points that must be back at the old level

# Until the metric catalog (runners.metrics) lands: which way is better.
LOWER_IS_BETTER = ("latency", "_ms", "_us", "avg_ms", "p95", "p99", "max_ms", "min_ms",
                   "errors", "reconnects", "cost", "seconds", "elapsed", "duration")


def higher_is_better(metric: str) -> bool:
    """Direction of a metric: True when a larger value is an improvement."""
    name = metric.lower()
    return not any(word in name for word in LOWER_IS_BETTER)


@dataclass
class Series:
    cell_key: str
    group: str
    metric: str
    run_ids: list[int] = field(default_factory=list)
    means: list[float] = field(default_factory=list)
    lows: list[float] = field(default_factory=list)
    highs: list[float] = field(default_factory=list)


def history_plans(plan: Plan) -> list[int]:
    """Ids of the plans whose runs form `plan`'s history."""
    if not plan.study:
        return [plan.pk]
    return list(Plan.objects.filter(team_id=plan.team_id, study=plan.study)
                .values_list("pk", flat=True))


def history_runs(plan: Plan) -> list[Run]:
    """Finished runs of the history, oldest first (one query)."""
    return list(Run.objects.filter(plan_id__in=history_plans(plan), status__in=FINISHED)
                .order_by("created_at", "pk").only("pk", "name", "created_at", "plan_id"))


def run_points(run_id: int) -> list[RunSummary]:
    """The run's point of each series (unsaved RunSummary rows), from its
    measurements of each cell's latest attempt (one query)."""
    rows = list(Measurement.objects.filter(run_id=run_id).values_list(
        "cell_id", "cell__key", "group", "metric", "attempt", "value"))
    latest: dict[int, int] = {}
    for cell_id, _, _, _, attempt, _ in rows:
        latest[cell_id] = max(latest.get(cell_id, 0), attempt)
    values: dict[tuple, list[float]] = defaultdict(list)
    for cell_id, key, group, metric, attempt, value in rows:
        if attempt == latest[cell_id]:
            values[(key, group, metric)].append(value)
    return [RunSummary(run_id=run_id, cell_key=key, group=group, metric=metric,
                       mean=sum(v) / len(v), low=min(v), high=max(v), count=len(v))
            for (key, group, metric), v in sorted(values.items())]


@transaction.atomic
def summarize_run(run_id: int) -> int:
    """(Re)write the run's RunSummary rows; how many."""
    points = run_points(run_id)
    RunSummary.objects.filter(run_id=run_id).delete()
    RunSummary.objects.bulk_create(points, batch_size=1000)
    return len(points)


def ensure_summaries(runs: list[Run]) -> None:
    """Summarize the runs that have no RunSummary yet (one query when none lack)."""
    ids = [run.pk for run in runs]
    done = set(RunSummary.objects.filter(run_id__in=ids).values_list("run_id", flat=True)
               .distinct())
    for run_id in ids:
        if run_id not in done:
            summarize_run(run_id)


def load_series(runs: list[Run], metrics=None, keys=None) -> dict[tuple, Series]:
    """One Series per (cell key, group, metric) over `runs` from their
    summaries (one query), optionally only of some metrics and cell keys."""
    order = {run.pk: i for i, run in enumerate(runs)}
    qs = RunSummary.objects.filter(run_id__in=list(order))
    if metrics:
        qs = qs.filter(metric__in=list(metrics))
    if keys:
        qs = qs.filter(cell_key__in=list(keys))
    rows = sorted(qs.values_list("cell_key", "group", "metric", "run_id", "mean", "low", "high"),
                  key=lambda r: (r[0], r[1], r[2], order[r[3]]))
    series: dict[tuple, Series] = {}
    for key, group, metric, run_id, mean, low, high in rows:
        s = series.get((key, group, metric))
        if s is None:
            s = series[(key, group, metric)] = Series(key, group, metric)
        s.run_ids.append(run_id)
        s.means.append(mean)
        s.lows.append(low)
        s.highs.append(high)
    return series


def detect_plan(plan: Plan, resolved: list | None = None) -> list[Alert]:
    """Run detection over `plan`'s history, incrementally; new Alerts are returned.

    Each series' state (HistoryState) keeps the detector's resume point, the
    run id there (a history that changed before it is analysed afresh) and the
    start runs already alerted, so only new change points touch alerts. The
    unique constraint on (plan, cell key, group, metric, start run) makes a
    repeated task harmless. Open alerts whose series recovered are resolved
    and appended to `resolved`.
    """
    runs = history_runs(plan)
    if len(runs) < 2 * changepoint.DEFAULT_MIN_SIZE:
        return []
    ensure_summaries(runs)
    states = {(h.cell_key, h.group, h.metric): h.state
              for h in HistoryState.objects.filter(plan=plan)}
    updates, changes = [], []
    series = load_series(runs)
    for name, s in series.items():
        held = _usable(states.get(name), s)
        analysis = changepoint.detect(
            s.means, window=WINDOW, max_pvalue=MAX_PVALUE, min_magnitude=MIN_MAGNITUDE,
            previous=held)
        alerted = set(held["alerted"]) if held else set()
        fresh = [cp for cp in analysis.change_points if s.run_ids[cp.index] not in alerted]
        changes += [(s, cp) for cp in fresh]
        state = analysis.state()
        state["resume_run"] = s.run_ids[analysis.resume_from] if s.run_ids else None
        state["alerted"] = sorted(alerted | {s.run_ids[cp.index] for cp in fresh})
        updates.append(HistoryState(plan=plan, cell_key=name[0], group=name[1], metric=name[2],
                                    state=state))
    with transaction.atomic():
        HistoryState.objects.bulk_create(
            updates, batch_size=500, update_conflicts=True, update_fields=["state"],
            unique_fields=["plan", "cell_key", "group", "metric"])
        created = [alert for alert, new in (_alert_for(plan, s, cp) for s, cp in changes) if new]
        (resolved if resolved is not None else []).extend(resolve_recovered(plan, series))
    return created


def _usable(state: dict | None, s: Series) -> dict | None:
    """The stored state if it still describes the start of this series."""
    if not state or "alerted" not in state:
        return None
    resume = state.get("resume_from", 0)
    if resume >= len(s.run_ids) or state.get("resume_run") != s.run_ids[resume]:
        return None
    return state


def _alert_for(plan: Plan, s: Series, cp: changepoint.ChangePoint) -> tuple[Alert, bool]:
    worse = cp.magnitude < 0 if higher_is_better(s.metric) else cp.magnitude > 0
    return Alert.objects.get_or_create(
        plan=plan, cell_key=s.cell_key, group=s.group, metric=s.metric,
        start_run_id=s.run_ids[cp.index],
        defaults=dict(
            team_id=plan.team_id, before_mean=cp.before.mean, before_low=cp.before.ci_low,
            before_high=cp.before.ci_high, after_mean=cp.after.mean,
            after_low=cp.after.ci_low, after_high=cp.after.ci_high,
            magnitude=cp.magnitude, pvalue=cp.pvalue, bad=worse))


def resolve_recovered(plan: Plan, series: dict[tuple, Series]) -> list[Alert]:
    """Open alerts whose series is back at its level before the change: the
    mean of its last RECOVERY_POINTS points (all after the change) is within
    the before level's prediction interval and nearer it than the changed
    level (runners.levels.recovered). They become resolved by the latest run."""
    resolved = []
    for alert in Alert.objects.filter(plan=plan, status__in=Alert.OPEN):
        s = series.get((alert.cell_key, alert.group, alert.metric))
        if s is None or alert.start_run_id not in s.run_ids:
            continue
        i = s.run_ids.index(alert.start_run_id)
        if len(s.means) - i < 2 * RECOVERY_POINTS or i == 0:
            continue
        before, recent = s.means[max(0, i - WINDOW):i], s.means[-RECOVERY_POINTS:]
        if levels.recovered(before, alert.after_mean, recent):
            alert.status, alert.resolved_run_id = Alert.RESOLVED, s.run_ids[-1]
            alert.save(update_fields=["status", "resolved_run", "updated_at"])
            resolved.append(alert)
    return resolved


def recent_alerts(team, limit: int = 5) -> list[Alert]:
    """The team's latest alerts, for the home page include (one query)."""
    return list(Alert.objects.filter(team=team).select_related("plan", "start_run")[:limit])


def verdict_counts(team) -> dict:
    """How often the team's alerts were right: users' true/false verdicts and
    confirmation runs' outcomes (one query)."""
    counts = Alert.objects.filter(team=team).aggregate(
        true=Count("pk", filter=Q(verdict=True)), false=Count("pk", filter=Q(verdict=False)),
        open=Count("pk", filter=Q(verdict__isnull=True)),
        confirmed=Count("pk", filter=Q(status=Alert.CONFIRMED)),
        not_reproduced=Count("pk", filter=Q(status=Alert.NOT_REPRODUCED)))
    judged = counts["true"] + counts["false"]
    counts["precision"] = counts["true"] / judged if judged else None
    rerun = counts["confirmed"] + counts["not_reproduced"]
    counts["confirm_rate"] = counts["confirmed"] / rerun if rerun else None
    return counts

