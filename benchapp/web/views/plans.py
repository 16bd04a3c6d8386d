"""Plans: list, the builder (structured form and YAML mode), live preview,
import/export, clone, delete, run now. The plan document is the single
source of truth; every save goes through planning.save_plan."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Max
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchapp.accounts.access import MEMBER, current_team, get_plan, role_required
from benchapp.cloud import pricing
from benchapp.histories import scheduling
from benchapp.models import Alert, Plan
from benchapp.plans import planning
from benchapp.plans.templates_plans import get_template, plan_templates
from benchapp.runs import orchestration
from benchapp.web.forms import PlanForm, PlanYamlForm, initial_from_document
from benchapp.web.forms_schedule import ScheduleForm
from benchapp.web.forms_templates import TemplateForm
from runners.errors import ValidationError
from runners.plan import count_cells, dump_plan, load_plan
from runners.tools import DEFAULT_TOOL

PREVIEW_CELLS = 8


@login_required
def plan_list(request):
    team = current_team(request)
    plans = Plan.objects.filter(team=team).annotate(
        run_count=Count("runs"), last_run=Max("runs__created_at")
    )
    return render(
        request, "plans/list.html", {"team": team, "plans": plans, "templates": plan_templates()}
    )


@login_required
@role_required(MEMBER)
def plan_create(request):
    team = current_team(request)
    template = get_template(request.GET.get("template", ""))
    if template is None:
        return _builder(request, team, {"tool": DEFAULT_TOOL})
    # First which target plays each role and which preset (GET, so the
    # builder's own POST comes back to the same bound template).
    bind = TemplateForm(
        request.GET if "preset" in request.GET else None, team=team, template=template
    )
    if not bind.is_valid():
        return render(request, "plans/template.html", {"form": bind, "template": template})
    return _builder(
        request, team, bind.document, template={**template, "preset": bind.cleaned_data["preset"]}
    )


@login_required
@role_required(MEMBER, "plan")
def plan_edit(request, pk):
    plan = get_plan(request, pk)
    return _builder(request, plan.team, plan.document, plan=plan)


def _builder(request, team, document, plan=None, template=None):
    """The builder page: POST mode=yaml saves the YAML form, else the structured one."""
    yaml_mode = request.POST.get("mode") == "yaml"
    initial = initial_from_document(document, team)
    form = PlanForm(None if yaml_mode else (request.POST or None), initial=initial, team=team)
    yaml_form = PlanYamlForm(
        request.POST if yaml_mode else None,
        request.FILES or None,
        initial={"text": _dump(document)},
        team=team,
    )
    chosen = yaml_form if yaml_mode else form
    if request.method == "POST" and chosen.is_valid():
        plan = planning.save_plan(team, chosen.checked, user=request.user, plan=plan)
        messages.success(request, f"Plan {plan.name} saved.")
        _warn(request, plan)
        return redirect("plan_detail", pk=plan.pk)
    return render(
        request,
        "plans/builder.html",
        {
            "form": form,
            "yaml_form": yaml_form,
            "plan": plan,
            "template": template,
            "yaml_mode": yaml_mode,
            "templates": plan_templates(),
        },
    )


def _warn(request, plan) -> None:
    """The pre-run checks' warnings of a plan just saved (benchapp.plans.prerun)."""
    for warning in plan.warnings:
        messages.warning(request, f"Likely to fail: {warning}")


@login_required
@role_required(MEMBER)
def plan_import(request):
    team = current_team(request)
    form = PlanYamlForm(request.POST or None, request.FILES or None, team=team)
    if request.method == "POST" and form.is_valid():
        plan = planning.save_plan(team, form.checked, user=request.user)
        messages.success(request, f"Plan {plan.name} imported.")
        _warn(request, plan)
        return redirect("plan_detail", pk=plan.pk)
    return render(request, "plans/import.html", {"form": form})


@login_required
@require_POST
@role_required(MEMBER)
def plan_preview(request):
    """The builder's live preview: cell count, first cells, estimate or the errors."""
    team = current_team(request)
    form = PlanForm(request.POST, team=team)
    if not form.is_valid():
        errors = {field: [str(e) for e in errs] for field, errs in form.errors.items()}
        return JsonResponse({"valid": False, "errors": errors})
    checked = form.checked
    spec, cells = checked.spec, checked.cells
    return JsonResponse(
        {
            "valid": True,
            "count": len(cells),
            "yaml": _dump(spec.document, checked=True),
            "cells": [
                {
                    "index": c.index,
                    "key": c.key or "(single cell)",
                    "target": c.target,
                    "repeat": c.repeat,
                }
                for c in cells[:PREVIEW_CELLS]
            ],
            "estimate": estimate(checked),
            "warnings": checked.warnings,
        }
    )


def estimate(checked) -> dict:
    """Duration (benchapp.plans.estimates: targets in parallel) and the cost the
    budget check will count (benchapp.cloud.pricing: every priced item, provisioned
    or static, for the billed whole hours); cost None when nothing is priced
    or an item has no price in the table."""
    duration, cells = checked.duration, checked.cells
    try:
        cost = pricing.plan_cost(checked)
    except ValidationError:
        cost = None
    priced = bool(cost and cost["lines"])
    return {
        "seconds": round(duration.wall_s),
        "known": duration.known,
        # The most client hosts one cell loads its target from (runners.plan: client_hosts).
        "client_hosts": max((c.clients for c in cells), default=1),
        "cost": round(cost["total"], 2) if priced else None,
        "cost_hours": cost["hours"] if priced else None,
    }


@login_required
def plan_detail(request, pk):
    plan = get_plan(request, pk)
    try:
        cells, error = count_cells(plan.spec), ""
    except ValidationError as exc:
        cells, error = None, str(exc)
    return render(
        request,
        "plans/detail.html",
        {
            "plan": plan,
            "yaml": _dump(plan.document),
            "cells": cells,
            "error": error,
            "runs": plan.runs.order_by("-created_at")[:10],
            "open_alerts": plan.alerts.filter(status__in=Alert.OPEN).count(),
            "schedules": scheduling.team_schedules(plan.team, plan),
            "schedule_form": ScheduleForm(),
        },
    )


@login_required
def plan_export(request, pk):
    plan = get_plan(request, pk)
    response = HttpResponse(_dump(plan.document), content_type="application/yaml")
    response["Content-Disposition"] = f'attachment; filename="{_slug(plan.name)}.yaml"'
    return response


@login_required
@require_POST
@role_required(MEMBER, "plan")
def plan_clone(request, pk):
    plan = get_plan(request, pk)
    try:
        copy = planning.save_plan(
            plan.team, {**plan.document, "name": f"{plan.name} (copy)"}, user=request.user
        )
    except ValidationError as exc:
        messages.error(request, f"This plan cannot be cloned as it is: {exc}")
        return redirect("plan_detail", pk=plan.pk)
    _warn(request, copy)
    messages.success(request, f"Cloned as {copy.name}. Change what differs and save.")
    return redirect("plan_edit", pk=copy.pk)


@login_required
@require_POST
@role_required(MEMBER, "plan")
def plan_delete(request, pk):
    plan = get_plan(request, pk)
    scheduling.delete_for_plan(plan)
    plan.delete()
    messages.success(request, f"Plan {plan.name} deleted; its runs stay in the archive.")
    return redirect("plan_list")


@login_required
@require_POST
@role_required(MEMBER, "plan")
def plan_run(request, pk):
    plan = get_plan(request, pk)
    try:
        # Checked again (planning.check, in start_run): a target's facts or
        # the team's credentials may have changed since the save.
        run = orchestration.start_run(plan.team, plan.document, user=request.user, plan=plan)
    except ValidationError as exc:
        messages.error(request, f"This plan cannot start: {exc}")
        return redirect("plan_detail", pk=plan.pk)
    return redirect("run_detail", pk=run.pk)


# The order people write plan files in (PostgreSQL's jsonb does not keep key order).
KEY_ORDER = (
    "name",
    "tool",
    "sysbench_version",
    "targets",
    "client",
    "params",
    "axes",
    "overrides",
    "repeat",
    "order",
    "seed",
    "prepare",
    "warmup",
    "stress",
    "cleanup",
    "timeout",
    "isolation",
)


def _dump(document: dict, checked: bool = False) -> str:
    """The plan file as YAML, keys in the usual order. checked: the document
    of a checked plan (planning.check), plain already: not read again."""
    rank = {key: i for i, key in enumerate(KEY_ORDER)}
    ordered = dict(sorted(document.items(), key=lambda item: rank.get(item[0], len(rank))))
    if not checked:
        try:
            return dump_plan(load_plan(ordered))
        except ValidationError:
            pass
    import yaml

    return yaml.safe_dump(ordered, sort_keys=False, allow_unicode=True)


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name)[:80] or "plan"
