"""Histories: the finished runs of a plan (and of plans with the same study
label) as one series per (cell key, group, metric), and change detection over
them (runners.changepoint) that turns new change points into Alerts.

A run contributes one point per series: the mean of its cells' repeats and
iterations (latest attempt of each cell), with their min and max for the band
on the trend page.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.db import transaction

from benchapp.models import Alert, HistoryState, Measurement, Plan, Run
from runners import changepoint

FINISHED = (Run.SUCCEEDED, Run.PARTIAL)
WINDOW = 50
MAX_PVALUE = changepoint.DEFAULT_MAX_PVALUE
MIN_MAGNITUDE = 0.03

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


def load_series(runs: list[Run], metrics=None, keys=None) -> dict[tuple, Series]:
    """One Series per (cell key, group, metric) over `runs` (one query),
    optionally only of some metrics and cell keys."""
    order = {run.pk: i for i, run in enumerate(runs)}
    qs = Measurement.objects.filter(run_id__in=list(order))
    if metrics:
        qs = qs.filter(metric__in=list(metrics))
    if keys:
        qs = qs.filter(cell__key__in=list(keys))
    rows = list(qs.values_list("run_id", "cell_id", "cell__key", "group", "metric",
                               "attempt", "value"))
    latest: dict[int, int] = {}
    for _, cell_id, _, _, _, attempt, _ in rows:
        latest[cell_id] = max(latest.get(cell_id, 0), attempt)
    values: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run_id, cell_id, key, group, metric, attempt, value in rows:
        if attempt == latest[cell_id]:
            values[(key, group, metric)][run_id].append(value)
    series = {}
    for name, per_run in sorted(values.items()):
        s = Series(*name)
        for run_id in sorted(per_run, key=order.__getitem__):
            points = per_run[run_id]
            s.run_ids.append(run_id)
            s.means.append(sum(points) / len(points))
            s.lows.append(min(points))
            s.highs.append(max(points))
        series[name] = s
    return series


def detect_plan(plan: Plan) -> list[Alert]:
    """Run detection over `plan`'s history, incrementally; new Alerts are returned.

    A change point becomes an Alert once: the unique constraint on (plan, cell
    key, group, metric, start run) makes a repeated task harmless.
    """
    runs = history_runs(plan)
    if len(runs) < 2 * changepoint.DEFAULT_MIN_SIZE:
        return []
    states = {(h.cell_key, h.group, h.metric): h
              for h in HistoryState.objects.filter(plan=plan)}
    created = []
    for name, s in load_series(runs).items():
        held = states.get(name)
        analysis = changepoint.detect(
            s.means, window=WINDOW, max_pvalue=MAX_PVALUE, min_magnitude=MIN_MAGNITUDE,
            previous=held.state if held else None)
        with transaction.atomic():
            HistoryState.objects.update_or_create(
                plan=plan, cell_key=name[0], group=name[1], metric=name[2],
                defaults={"state": analysis.state()})
            for cp in analysis.change_points:
                alert, new = _alert_for(plan, s, cp)
                if new:
                    created.append(alert)
    return created


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


def recent_alerts(team, limit: int = 5) -> list[Alert]:
    """The team's latest alerts, for the home page include (one query)."""
    return list(Alert.objects.filter(team=team).select_related("plan", "start_run")[:limit])


def verdict_counts(team) -> dict:
    """How often the team's alerts were right: users' true/false verdicts."""
    qs = Alert.objects.filter(team=team)
    return {"true": qs.filter(verdict=True).count(), "false": qs.filter(verdict=False).count(),
            "open": qs.filter(verdict__isnull=True).count()}

