"""Scheduled runs, on django-celery-beat.

A schedule is a PeriodicTask calling the task "benchapp.start_plan" with
args [plan_id] (kwargs {"origin": "schedule"}), either one-off at a
ClockedSchedule or repeating on a CrontabSchedule. No model of our own: a
schedule belongs to the team of the plan named in its args, so scoping is
"args is one of this team's plans" — the args are always written here, by
`_args`, so the text comparison is exact.
"""

from __future__ import annotations

import json
import uuid

from django.conf import settings
from django.db.models import F
from django.http import Http404
from django_celery_beat.models import ClockedSchedule, CrontabSchedule, PeriodicTask, PeriodicTasks

from benchapp.models import Plan, Run, SkippedTick, Team

TASK = "benchapp.start_plan"
CRON_FIELDS = ("minute", "hour", "day_of_month", "month_of_year", "day_of_week")


def _args(plan_id: int) -> str:
    return json.dumps([plan_id])


def parse_cron(text: str) -> dict:
    """'30 2 * * 1-5' -> CrontabSchedule fields; ValueError with a readable message."""
    from django.core.exceptions import ValidationError
    from django_celery_beat.validators import crontab_validator

    parts = text.split()
    if len(parts) != 5:
        raise ValueError(
            "Write five fields: minute hour day-of-month month day-of-week (e.g. 30 2 * * 1-5)."
        )
    try:
        crontab_validator(" ".join(parts))
    except ValidationError as exc:
        raise ValueError(f"Not a valid cron expression: {' '.join(exc.messages)}") from None
    return dict(zip(CRON_FIELDS, parts))


def shortest_interval(fields: dict) -> int:
    """The shortest time, in seconds, between two starts of a cron schedule
    (fields from parse_cron): the smallest gap between its times of day,
    and from its last time of day to its first on the next day (a
    schedule on some days only is treated as daily there: never longer
    than it is)."""
    from celery.schedules import crontab

    cron = crontab(**fields)
    times = sorted(h * 60 + m for h in cron.hour for m in cron.minute)
    gaps = [b - a for a, b in zip(times, times[1:])]
    gaps.append(24 * 60 - times[-1] + times[0])
    return min(gaps) * 60


def check_interval(fields: dict) -> None:
    """ValueError naming the operator's limit when the schedule starts more often."""
    limit = settings.BENCHBOARD_SCHEDULE_MIN_INTERVAL_SECONDS
    every = shortest_interval(fields)
    if every < limit:
        raise ValueError(
            f"This schedule starts a run every {_span(every)} at times; this site allows "
            f"one every {_span(limit)} at most (BENCHBOARD_SCHEDULE_MIN_INTERVAL_SECONDS)."
        )


def _span(seconds: int) -> str:
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def start_scheduled(plan: Plan):
    """What beat's tick of a plan's schedule does: start a run, or record the
    tick as skipped (and start nothing) while the plan's previous scheduled
    run is still active or the team is at its cap of runs. Returns the Run
    or the SkippedTick."""
    from benchapp.runs import fairshare, orchestration

    active = plan.runs.filter(origin="schedule", status__in=Run.ACTIVE).order_by("-pk").first()
    if active is not None:
        reason = f"the previous scheduled run #{active.pk} was still {active.status}"
        return SkippedTick.objects.create(plan=plan, active_run=active, reason=reason)
    try:
        return orchestration.start_run(plan.team, plan.document, plan=plan, origin="schedule")
    except fairshare.TooManyRuns as exc:
        return SkippedTick.objects.create(plan=plan, reason=str(exc))


def schedule_at(plan: Plan, when) -> PeriodicTask:
    """Run `plan` once at `when` (an aware datetime)."""
    clocked = ClockedSchedule.objects.create(clocked_time=when)
    return _create(plan, f"once at {when:%Y-%m-%d %H:%M}", clocked=clocked, one_off=True)


def schedule_cron(plan: Plan, fields: dict) -> PeriodicTask:
    """Run `plan` on a cron schedule (fields from parse_cron), in the site's time zone."""
    crontab, _ = CrontabSchedule.objects.get_or_create(timezone=settings.TIME_ZONE, **fields)
    return _create(plan, "cron " + " ".join(fields[f] for f in CRON_FIELDS), crontab=crontab)


def _create(plan: Plan, what: str, **schedule) -> PeriodicTask:
    # PeriodicTask.name is unique: the uuid keeps two identical schedules apart.
    return PeriodicTask.objects.create(
        name=f"plan {plan.pk} {plan.name[:80]}: {what} [{uuid.uuid4().hex[:8]}]",
        task=TASK,
        args=_args(plan.pk),
        kwargs=json.dumps({"origin": "schedule"}),
        description=f"{plan.team.name}: {plan.name} ({what})",
        **schedule,
    )


def team_schedules(team: Team, plan: Plan | None = None) -> list[PeriodicTask]:
    """The team's schedules (optionally one plan's), each with `.plan` and `.when` set."""
    plans = {p.pk: p for p in (Plan.objects.filter(team=team) if plan is None else [plan])}
    tasks = list(
        PeriodicTask.objects.filter(task=TASK, args__in=[_args(pk) for pk in plans])
        .select_related("clocked", "crontab")
        .order_by("-date_changed")
    )
    skipped = skipped_ticks(list(plans.values()))
    for task in tasks:
        task.plan = plans[json.loads(task.args)[0]]
        task.when = describe(task)
        task.skipped = skipped.get(task.plan.pk, [])
    return tasks


SKIPPED_SHOWN = 5


def skipped_ticks(plans: list[Plan]) -> dict[int, list[SkippedTick]]:
    """The latest skipped ticks of each plan (newest first), by plan id."""
    found: dict[int, list[SkippedTick]] = {}
    for tick in SkippedTick.objects.filter(plan__in=plans).order_by("-at")[:200]:
        shown = found.setdefault(tick.plan_id, [])
        if len(shown) < SKIPPED_SHOWN:
            shown.append(tick)
    return found


def describe(task: PeriodicTask) -> str:
    if task.clocked_id:
        return f"once at {task.clocked.clocked_time:%Y-%m-%d %H:%M %Z}"
    if task.crontab_id:
        c = task.crontab
        return (
            f"cron {c.minute} {c.hour} {c.day_of_month} {c.month_of_year} "
            f"{c.day_of_week} ({c.timezone})"
        )
    return "—"


def get_schedule(team: Team, pk: int) -> PeriodicTask:
    """One of the team's schedules, or 404 (other teams' schedules do not exist)."""
    task = PeriodicTask.objects.filter(pk=pk, task=TASK).first()
    if task is None:
        raise Http404("No such schedule")
    try:
        plan_id = json.loads(task.args)[0]
    except (ValueError, IndexError, TypeError):
        raise Http404("No such schedule") from None
    if not Plan.objects.filter(pk=plan_id, team=team).exists():
        raise Http404("No such schedule")
    return task


def one_off_ran(plan_id: int) -> None:
    """A plan started by beat: its one-time schedules that were due are done.

    Beat itself disables a one-off task only when it next looks at it (and
    records last_run_at only at its next sync), so the list kept showing
    "active" after the run. Called by the task, whatever beat does later.
    """
    from django.utils import timezone

    now = timezone.now()
    # update(), not save(): PeriodicTask.save() clears last_run_at of a disabled task.
    done = PeriodicTask.objects.filter(
        task=TASK, args=_args(plan_id), one_off=True, enabled=True, clocked__clocked_time__lte=now
    ).update(enabled=False, last_run_at=now, total_run_count=F("total_run_count") + 1)
    if done:
        PeriodicTasks.update_changed()  # beat reloads its schedule


def set_enabled(task: PeriodicTask, enabled: bool) -> None:
    task.enabled = enabled
    task.save(update_fields=["enabled"])


def delete(task: PeriodicTask) -> None:
    clocked = task.clocked
    task.delete()
    if clocked is not None and not clocked.periodictask_set.exists():
        clocked.delete()


def delete_for_plan(plan: Plan) -> None:
    """Remove a plan's schedules (before the plan itself is deleted)."""
    for task in PeriodicTask.objects.filter(task=TASK, args=_args(plan.pk)):
        delete(task)
