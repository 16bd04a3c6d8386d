"""Histories: the finished runs of a plan (and of plans with the same study
label) as one series per (cell key, group, metric), and change detection over
them (runners.changepoint) that turns new change points into Alerts.

A run contributes one point per series: the mean of its cells' repeats and
iterations (latest attempt of each cell), with their min and max for the band
on the trend page. The points are computed once per run (`summarize_run`,
stored packed by benchapp.store.summarystore) so histories read one row per run
and metric.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction
from django.db.models import Count, Q

from benchapp.analysis import queryparams
from benchapp.histories import explain
from benchapp.histories.planedits import FINISHED, plan_edits, straddled_edit
from benchapp.models import Alert, HistoryState, Plan, Run
from benchapp.store import measurestore, summarystore
from runners import changepoint, levels, tools
from runners.metrics import HIGHER

WINDOW = 50
MAX_PVALUE = changepoint.DEFAULT_MAX_PVALUE
SIGNIFICANCE = "ttest"  # Welch's t-test of the best split (runners.changepoint)
MIN_MAGNITUDE = 0.03
RECOVERY_POINTS = 5  # latest points that must be back at the old level


def judged(plan: Plan, metric: str) -> tuple[bool, str | None]:
    """(measured, direction) of a series' metric by the metric catalog
    (runners.tools.direction): parameters the tool prints back are not
    measured; a metric without a direction is only ever "changed"."""
    row = tools.metric(plan.tool, metric)
    return row.measured, row.judged


@dataclass
class Series:
    cell_key: str
    group: str
    metric: str
    run_ids: list[int] = field(default_factory=list)
    dates: list = field(default_factory=list)  # the runs' creation times
    means: list[float] = field(default_factory=list)
    lows: list[float] = field(default_factory=list)
    highs: list[float] = field(default_factory=list)


def history_plans(plan: Plan) -> list[int]:
    """Ids of the plans whose runs form `plan`'s history."""
    if not plan.study:
        return [plan.pk]
    return list(
        Plan.objects.filter(team_id=plan.team_id, study=plan.study).values_list("pk", flat=True)
    )


def series_names(plan_ids: list[int]) -> dict:
    """The names of every series of the history (one query), for
    trend_choices and load_series to share."""
    return summarystore.names(plan_ids)


def trend_choices(
    plan_ids: list[int], query, names: dict | None = None, tool: str = ""
) -> tuple[str, list[str], list[str], list[str]]:
    """(metric, metrics, keys of that metric, chosen keys) of a trend, from a
    query (a page's GET or the API's query_params): the metric and keys it
    asks for, refused (queryparams.BadParameter) when the history has no such
    metric or cell key; without one, the tool's main metric (runners.tools.main_metric),
    else the first by name. `keys` is "|"-separated. One query, none when given
    the history's `names` (series_names)."""
    if names is None:
        names = series_names(plan_ids)
    pairs = {(m, k) for k, _g, m in names.values()}
    metrics = sorted({m for m, _ in pairs})
    queryparams.check(query, {"metric": metrics})
    default = tools.main_metric(tool, metrics) or (metrics[0] if metrics else "")
    metric = query.get("metric") or default
    keys = sorted({k for m, k in pairs if m == metric})
    wanted = [k for k in query.get("keys", "").split("|") if k]
    for key in wanted:
        if key not in keys:
            raise queryparams.BadParameter("keys", key, keys)
    return metric, metrics, keys, wanted


def run_points(run: Run) -> list[summarystore.Point]:
    """The run's point of each series, from its measurements of each cell's
    latest attempt (one query)."""
    keys = dict(run.cells.values_list("pk", "key"))
    rows = list(measurestore.read(runs=[run.pk], all_attempts=True))
    latest: dict[int, int] = {}
    for m in rows:
        latest[m.cell_id] = max(latest.get(m.cell_id, 0), m.attempt)
    values: dict[tuple, list[float]] = defaultdict(list)
    for m in rows:
        if m.attempt == latest[m.cell_id]:
            values[(keys[m.cell_id], m.group, m.metric)].append(m.value)
    return [
        summarystore.Point(
            run_id=run.pk,
            run_created_at=run.created_at,
            cell_key=key,
            group=group,
            metric=metric,
            mean=sum(v) / len(v),
            low=min(v),
            high=max(v),
            count=len(v),
        )
        for (key, group, metric), v in sorted(values.items())
    ]


@transaction.atomic
def summarize_run(run: Run) -> int:
    """(Re)write the stored points of a finished run of a plan; how many.
    Only finished runs have summaries: a history reads them as they are."""
    if run.plan_id is None or run.status not in FINISHED:
        summarystore.delete(run)
        return 0
    points = run_points(run)
    summarystore.write(run, points)
    return len(points)


def ensure_summaries(plan_ids: list[int]) -> int:
    """Summarize the history's finished runs that have no summary yet (one
    query when none lacks: runs recorded before summaries, or by hand)."""
    missing = summarystore.unsummarized(
        Run.objects.filter(plan_id__in=plan_ids, status__in=FINISHED)
    )
    runs = list(missing.only("pk", "plan_id", "created_at", "status"))
    for run in runs:
        summarize_run(run)
    return len(runs)


def load_series(
    plan_ids: list[int], metrics=None, keys=None, since=None, dates: bool = True, names=None
) -> dict[tuple, Series]:
    """One Series per (cell key, group, metric) of the history of `plan_ids`,
    from the runs' stored points (two queries, one when given the history's
    `names`), in name order, optionally only of some metrics and cell keys,
    and of runs created at or after `since`; without `dates` only run ids
    and means are read (detection needs no more)."""
    series: dict[tuple, Series] = {}
    for p in summarystore.read(plan_ids, metrics, keys, since, dates, names):
        name = (p.cell_key, p.group, p.metric)
        s = series.get(name)
        if s is None:
            s = series[name] = Series(*name)
        s.run_ids.append(p.run_id)
        s.dates.append(p.run_created_at)
        s.means.append(p.mean)
        s.lows.append(p.low)
        s.highs.append(p.high)
    return {name: series[name] for name in sorted(series)}


def detect_plan(plan: Plan, resolved: list | None = None) -> list[Alert]:
    """Run detection over `plan`'s history, incrementally; new Alerts are returned.

    Each series' state (HistoryState) keeps the detector's resume point, an
    anchor a window before it (index, run, date) and the start runs already
    alerted. When every series has a state, only the history from the
    earliest anchor on is read and analysed (changepoint offset); a history
    that changed before an anchor is analysed afresh. The unique constraint on
    (plan, cell key, group, metric, start run) makes a repeated task harmless.
    Open alerts whose series recovered are resolved and appended to `resolved`.
    """
    plan_ids = history_plans(plan)
    ensure_summaries(plan_ids)
    states = {
        (h.cell_key, h.group, h.metric): h.state for h in HistoryState.objects.filter(plan=plan)
    }
    since = _since(states)
    series = _measured(plan, load_series(plan_ids, since=since, dates=False))
    analyses = _analyse(series, states, tail=True) if since is not None else None
    if analyses is None:  # short or changed history, new series: read it all
        series = (
            _measured(plan, load_series(plan_ids, dates=False)) if since is not None else series
        )
        analyses = _analyse(series, states, tail=False)
    anchor_dates = dict(
        Run.objects.filter(
            pk__in=[
                s.run_ids[a.resume_from - WINDOW - offset]
                for s, offset, a, _ in analyses.values()
                if a.resume_from - WINDOW >= offset
            ]
        ).values_list("pk", "created_at")
    )
    updates, changes = [], []
    for name, (s, offset, analysis, held) in analyses.items():
        alerted = set(held.get("alerted", ())) if held else set()
        fresh = [
            cp
            for cp in analysis.change_points
            if cp.index >= offset and s.run_ids[cp.index - offset] not in alerted
        ]
        changes += [(s, cp, offset) for cp in fresh]
        updates.append(
            HistoryState(
                plan=plan,
                cell_key=name[0],
                group=name[1],
                metric=name[2],
                state=_state(analysis, s, offset, alerted, fresh, anchor_dates),
            )
        )
    with transaction.atomic():
        _relaxed_commit()
        HistoryState.objects.bulk_create(
            updates,
            batch_size=500,
            update_conflicts=True,
            update_fields=["state"],
            unique_fields=["plan", "cell_key", "group", "metric"],
        )
        created = _create_alerts(plan, changes)
        found = resolve_recovered(plan, plan_ids, series, tail=since is not None)
    if resolved is not None:
        resolved.extend(found)
    return created


def _measured(plan: Plan, series: dict[tuple, Series]) -> dict[tuple, Series]:
    """The series of measurements only: a parameter copied into the results
    (mysqlslap's clients) changes when the plan does, which is no alert."""
    return {name: s for name, s in series.items() if judged(plan, name[2])[0]}


def _relaxed_commit() -> None:
    """Detection's writes need not wait for the disk (PostgreSQL's
    synchronous_commit off, this transaction only): a crash can lose only the
    last states and alerts together, and the next run's detection finds the
    same changes again."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")


def _since(states: dict) -> object | None:
    """Where the history must be read from for the stored states, or None (all)."""
    anchors = [st.get("anchor") for st in states.values()]
    if not anchors or not all(anchors) or any(a["index"] < 0 for a in anchors):
        return None
    return min(datetime.fromisoformat(a["at"]) for a in anchors)


def _analyse(series: dict[tuple, Series], states: dict, tail: bool) -> dict | None:
    """{name: (series, offset, analysis, held state)}. With `tail`, the series
    hold the history from the earliest anchor on: each is cut at its own
    anchor and analysed from there; None if an anchor is not where it was
    (the caller then reads the whole history)."""
    out = {}
    for name, s in series.items():
        held, offset, values = states.get(name), 0, s.means
        if tail:
            anchor = held and held.get("anchor")
            if not anchor or anchor["run"] not in s.run_ids:
                return None
            first = s.run_ids.index(anchor["run"])
            offset, values = anchor["index"], s.means[first:]
            s.run_ids, s.dates, s.means, s.lows, s.highs = (
                s.run_ids[first:],
                s.dates[first:],
                values,
                s.lows[first:],
                s.highs[first:],
            )
        if offset + len(values) < 2 * changepoint.DEFAULT_MIN_SIZE:
            continue
        try:
            analysis = changepoint.detect(
                values,
                window=WINDOW,
                max_pvalue=MAX_PVALUE,
                min_magnitude=MIN_MAGNITUDE,
                significance=SIGNIFICANCE,
                previous=held,
                offset=offset,
            )
        except ValueError:
            if tail:
                return None
            raise
        out[name] = (s, offset, analysis, held)
    return out


def _state(analysis, s: Series, offset: int, alerted: set, fresh: list, dates: dict) -> dict:
    state = analysis.state()
    index = analysis.resume_from - WINDOW
    if index >= offset:
        run_id = s.run_ids[index - offset]
        state["anchor"] = {"index": index, "run": run_id, "at": dates[run_id].isoformat()}
    else:
        state["anchor"] = {"index": -1}
    state["alerted"] = sorted(alerted | {s.run_ids[cp.index - offset] for cp in fresh})
    return state


def _create_alerts(plan: Plan, changes: list) -> list[Alert]:
    if not changes:
        return []
    rows = []
    edits = plan_edits(history_plans(plan))
    for s, cp, offset in changes:
        direction = judged(plan, s.metric)[1]
        worse = None if direction is None else (cp.magnitude < 0) == (direction == HIGHER)
        start = s.run_ids[cp.index - offset]
        before = s.run_ids[cp.index - offset - 1] if cp.index - offset > 0 else None
        rows.append(
            Alert(
                plan=plan,
                team_id=plan.team_id,
                cell_key=s.cell_key,
                group=s.group,
                metric=s.metric,
                start_run_id=start,
                plan_edit=straddled_edit(edits, before, start),
                explanation=explain.changes(s.cell_key, s.run_ids, cp.index - offset),
                before_mean=cp.before.mean,
                before_low=cp.before.ci_low,
                before_high=cp.before.ci_high,
                after_mean=cp.after.mean,
                after_low=cp.after.ci_low,
                after_high=cp.after.ci_high,
                magnitude=cp.magnitude,
                pvalue=cp.pvalue,
                bad=worse,
            )
        )
    known = set(Alert.objects.filter(plan=plan).values_list("pk", flat=True))
    Alert.objects.bulk_create(rows, batch_size=500, ignore_conflicts=True)
    created = list(
        Alert.objects.filter(plan=plan)
        .exclude(pk__in=known)
        .select_related("plan", "start_run")
        .order_by("pk")
    )
    group_incidents(plan, created)
    return created


def group_incidents(plan: Plan, created: list[Alert]) -> None:
    """One change, one incident: new alerts that start at the same run follow
    one lead (a bad one, the plan's main metric first, then the largest
    change); so does a new alert whose change point already has a lead."""
    by_start: dict[int, list[Alert]] = {}
    for alert in created:
        by_start.setdefault(alert.start_run_id, []).append(alert)
    for start, alerts in by_start.items():
        main = tools.main_metric(plan.tool, {a.metric for a in alerts})
        existing = (
            Alert.objects.filter(plan=plan, start_run_id=start, lead=None)
            .exclude(pk__in=[a.pk for a in alerts])
            .first()
        )
        lead = existing or min(
            alerts, key=lambda a: (a.bad is not True, a.metric != main, -abs(a.magnitude))
        )
        followers = [a for a in alerts if a.pk != lead.pk]
        Alert.objects.filter(pk__in=[a.pk for a in followers]).update(lead=lead)
        for alert in followers:
            alert.lead = lead


def resolve_recovered(
    plan: Plan, plan_ids: list[int], series: dict[tuple, Series], tail: bool = False
) -> list[Alert]:
    """Open alerts whose series is back at its level before the change: the
    mean of its last RECOVERY_POINTS points (all after the change) is within
    the before level's prediction interval and nearer it than the changed
    level (runners.levels.recovered). They become resolved by the latest run."""
    alerts = list(Alert.objects.filter(plan=plan, status__in=Alert.OPEN))
    short = [
        a
        for a in alerts
        if (a.cell_key, a.group, a.metric) not in series
        or _start(series[(a.cell_key, a.group, a.metric)], a) < WINDOW
    ]
    if tail and short:  # only a tail was read: the level before needs the whole series
        series = {
            **series,
            **load_series(plan_ids, {a.metric for a in short}, {a.cell_key for a in short}),
        }
    resolved = []
    for alert in alerts:
        s = series.get((alert.cell_key, alert.group, alert.metric))
        i = _start(s, alert) if s else -1
        if i <= 0 or len(s.means) - i < 2 * RECOVERY_POINTS:
            continue
        before, recent = s.means[max(0, i - WINDOW) : i], s.means[-RECOVERY_POINTS:]
        if levels.recovered(before, alert.after_mean, recent):
            alert.status, alert.resolved_run_id = Alert.RESOLVED, s.run_ids[-1]
            alert.save(update_fields=["status", "resolved_run", "updated_at"])
            resolved.append(alert)
    return resolved


def _start(s: Series, alert: Alert) -> int:
    return s.run_ids.index(alert.start_run_id) if alert.start_run_id in s.run_ids else -1


def recent_alerts(team, limit: int = 5) -> list[Alert]:
    """The team's latest alerts, for the home page include (one query)."""
    return list(Alert.objects.filter(team=team).select_related("plan", "start_run")[:limit])


def verdict_counts(team) -> dict:
    """How often the team's alerts were right: users' true/false verdicts and
    confirmation runs' outcomes (one query)."""
    counts = Alert.objects.filter(team=team).aggregate(
        true=Count("pk", filter=Q(verdict=True)),
        false=Count("pk", filter=Q(verdict=False)),
        open=Count("pk", filter=Q(verdict__isnull=True)),
        confirmed=Count("pk", filter=Q(status=Alert.CONFIRMED)),
        not_reproduced=Count("pk", filter=Q(status=Alert.NOT_REPRODUCED)),
    )
    judged = counts["true"] + counts["false"]
    counts["precision"] = counts["true"] / judged if judged else None
    rerun = counts["confirmed"] + counts["not_reproduced"]
    counts["confirm_rate"] = counts["confirmed"] / rerun if rerun else None
    return counts
