"""Scheduled runs (django-celery-beat): create from a plan page, list,
pause/resume and delete on /schedules/."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchapp.accounts.access import MEMBER, current_team, get_plan, role_required
from benchapp.histories import scheduling
from benchapp.web.forms_schedule import ScheduleForm


@login_required
def schedule_list(request):
    team = current_team(request)
    return render(
        request, "schedules/list.html", {"team": team, "schedules": scheduling.team_schedules(team)}
    )


@login_required
@require_POST
@role_required(MEMBER, "plan")
def schedule_create(request, pk):
    plan = get_plan(request, pk)
    form = ScheduleForm(request.POST)
    if not form.is_valid():
        errors = "; ".join(e for errs in form.errors.values() for e in errs)
        messages.error(request, f"Not scheduled: {errors}")
        return redirect("plan_detail", pk=plan.pk)
    if form.cleaned_data["kind"] == ScheduleForm.AT:
        task = scheduling.schedule_at(plan, form.cleaned_data["when"])
    else:
        task = scheduling.schedule_cron(plan, form.cleaned_data["cron"])
    messages.success(request, f"Scheduled {plan.name}: {scheduling.describe(task)}.")
    return redirect("schedule_list")


@login_required
@require_POST
@role_required(MEMBER)
def schedule_toggle(request, pk):
    task = scheduling.get_schedule(current_team(request), pk)
    scheduling.set_enabled(task, not task.enabled)
    messages.success(request, f"Schedule {'resumed' if task.enabled else 'paused'}.")
    return redirect("schedule_list")


@login_required
@require_POST
@role_required(MEMBER)
def schedule_delete(request, pk):
    task = scheduling.get_schedule(current_team(request), pk)
    scheduling.delete(task)
    messages.success(request, "Schedule deleted.")
    return redirect("schedule_list")
