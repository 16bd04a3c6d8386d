"""Comparisons: list, pick runs/cells, side by side, save, share by link."""

import functools

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.gzip import gzip_page
from django.views.decorators.http import require_POST

from benchapp.accounts.access import MEMBER, current_team, get_comparison, role_required
from benchapp.accounts.redact import Redactor
from benchapp.analysis import environments, queryparams
from benchapp.histories import comparisons
from benchapp.web.views.archive import SearchForm
from benchapp.web.views.results import (
    _requested,
    charts_payload,
    pivot_form,
    refuses_bad_query,
    series_payload,
    view_query,
)


class NewComparisonForm(forms.Form):
    name = forms.CharField(max_length=200)
    runs = forms.ModelMultipleChoiceField(queryset=None)
    cells = forms.TypedMultipleChoiceField(required=False, coerce=int, choices=())

    def __init__(self, team, *args, cell_choices=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["runs"].queryset = team.runs.all()
        self.fields["cells"].choices = cell_choices

    def clean_runs(self):
        runs = list(self.cleaned_data["runs"])
        problems = comparisons.run_problems(runs)
        if problems:
            raise forms.ValidationError(problems)
        return runs


@login_required
def comparison_list(request):
    team = current_team(request)
    items = team.comparisons.prefetch_related("runs").select_related("created_by")
    return render(request, "comparisons/list.html", {"comparisons": items})


@login_required
@role_required(MEMBER)
def comparison_new(request):
    team = current_team(request)
    search = SearchForm(team, request.GET)
    runs = search.results()[:200]
    picked = team.runs.filter(pk__in=request.POST.getlist("runs") or request.GET.getlist("runs"))
    cell_choices = [
        (c.pk, f"#{c.run_id} {c.key} #{c.repeat}") for r in picked for c in r.cells.all()
    ]
    form = NewComparisonForm(team, request.POST or None, cell_choices=cell_choices)
    if request.method == "POST" and form.is_valid():
        comparison = comparisons.save_comparison(
            team,
            form.cleaned_data["name"],
            form.cleaned_data["runs"],
            form.cleaned_data["cells"],
            user=request.user,
        )
        return redirect("comparison", comparison.pk)
    return render(
        request,
        "comparisons/new.html",
        {
            "search": search,
            "runs": runs,
            "picked": picked,
            "form": form,
            "cell_choices": cell_choices,
        },
    )


def _compared(comparison, request, shared: bool = False) -> dict:
    """comparisons.compare for the request's view; a parameter the data does
    not offer raises queryparams.BadParameter (answered 400). A share page
    shows redacted run labels, so its baseline is not checked against (nor
    named with) the real ones."""
    data = comparisons.compare(comparison, _requested(request), request.GET.get("baseline"))
    accepted = queryparams.view_parameters(data)
    if shared:
        accepted.pop("baseline", None)
    queryparams.check(request.GET, accepted)
    return data


@refuses_bad_query
@login_required
def comparison_detail(request, pk):
    comparison = get_comparison(request, pk)
    data = _compared(comparison, request)
    return render(
        request,
        "comparisons/detail.html",
        {
            "comparison": comparison,
            "data": data,
            "form": pivot_form(data),
            "view_query": view_query(data),
            "charts": charts_payload(data, True),
        },
    )


@gzip_page
@refuses_bad_query
@login_required
def comparison_json(request, pk):
    return JsonResponse(_chart_json(get_comparison(request, pk), request))


@gzip_page
@login_required
def comparison_series(request, pk):
    return JsonResponse(_series(get_comparison(request, pk), request))


@login_required
@require_POST
@role_required(MEMBER, "comparison")
def comparison_save(request, pk):
    """Keep the view now shown (the form posts every setting in effect,
    defaults included), its baseline, and the name."""
    comparison = get_comparison(request, pk)
    chosen = {k: v for k, v in _requested(_Post(request)).items() if v}
    if request.POST.get("baseline"):
        chosen["baseline"] = request.POST["baseline"]
    comparisons.save_comparison(
        comparison.team,
        request.POST.get("name", "").strip()[:200] or comparison.name,
        comparison.runs.all(),
        comparison.cells,
        chart_settings=chosen,
        comparison=comparison,
    )
    messages.success(request, "Comparison saved.")
    return redirect("comparison", comparison.pk)


class _Post:
    """Lets _requested read a POST body the way it reads a GET query."""

    def __init__(self, request):
        self.GET = request.POST


@login_required
@require_POST
@role_required(MEMBER, "comparison")
def comparison_share(request, pk):
    comparison = get_comparison(request, pk)
    token = comparison.share()
    link = request.build_absolute_uri(f"/share/{token}/")
    messages.success(request, f"Share link (shown once; sharing again replaces it): {link}")
    return redirect("comparison", comparison.pk)


@login_required
@require_POST
@role_required(MEMBER, "comparison")
def comparison_revoke(request, pk):
    get_comparison(request, pk).revoke()
    messages.success(request, "Share link revoked.")
    return redirect("comparison", pk)


@login_required
@require_POST
@role_required(MEMBER, "comparison")
def comparison_delete(request, pk):
    get_comparison(request, pk).delete()
    messages.success(request, "Comparison deleted.")
    return redirect("comparisons")


# ------------------------------------------------ shared, read-only, no login


def _private(view):
    """Share pages stay out of shared caches and never leak their URL (the token) as Referer."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Cache-Control"] = "private, no-store"
        response["Referrer-Policy"] = "no-referrer"
        return response

    return wrapped


@_private
@refuses_bad_query
def shared(request, token):
    """The shared comparison only: no links to runs, exports or other pages."""
    comparison = comparisons.by_share_token(token)
    data = _compared(comparison, request, shared=True)
    data["diff"] = environments.for_share(data["diff"])
    # Everything the page shows goes through the redactor: no hosts, addresses,
    # ports or user names (benchapp/accounts/redact.py); the pivot form keeps the real
    # view names, which are the plan's axis and metric names.
    form, query = pivot_form(data), view_query(data)
    redactor = Redactor(comparison.team, comparison.runs.all())
    charts = redactor.data(charts_payload(data, True))
    data = redactor.data({k: v for k, v in data.items() if k != "runs"})
    return render(
        request,
        "comparisons/shared.html",
        {
            "comparison_name": redactor.text(comparison.name),
            "data": data,
            "token": token,
            "form": form,
            "view_query": query,
            "charts": charts,
        },
    )


@_private
@gzip_page
@refuses_bad_query
def shared_json(request, token):
    comparison = comparisons.by_share_token(token)
    return JsonResponse(
        Redactor(comparison.team, comparison.runs.all()).data(
            _chart_json(comparison, request, shared=True)
        )
    )


@_private
@gzip_page
def shared_series(request, token):
    comparison = comparisons.by_share_token(token)
    return JsonResponse(
        Redactor(comparison.team, comparison.runs.all()).data(_series(comparison, request))
    )


def _chart_json(comparison, request, shared: bool = False) -> dict:
    return charts_payload(_compared(comparison, request, shared), True)


def _series(comparison, request) -> dict:
    runs = comparisons.comparison_runs(comparison)
    if not runs:
        raise Http404("Empty comparison")
    allowed = set(comparison.cells) or None
    return series_payload(request.GET, runs, allowed)


class ProfileDiffForm(forms.Form):
    """The two cells of a differential flame graph and whose profile (tool or server)."""

    before = forms.TypedChoiceField(coerce=int, choices=())
    after = forms.TypedChoiceField(coerce=int, choices=())
    role = forms.ChoiceField(choices=[("tool", "tool"), ("server", "server")], required=False)

    def clean_role(self):
        return self.cleaned_data["role"] or "tool"

    def __init__(self, cells, *args, **kwargs):
        super().__init__(*args, **kwargs)
        choices = [(c.pk, f"run #{c.run_id} cell {c.index} {c.key}".strip()) for c in cells]
        self.fields["before"].choices = self.fields["after"].choices = choices


def _compared_cells(comparison):
    """The cells of a comparison: its chosen ones, or every cell of its runs."""
    from benchapp.models import Cell

    cells = Cell.objects.filter(run__in=comparison.runs.all())
    return cells.filter(pk__in=comparison.cells) if comparison.cells else cells


@login_required
def comparison_profiles(request, pk):
    """The differential flame graph of two profiled cells of a comparison,
    with the functions whose share grew and shrank most."""
    from benchapp.analysis import profiles

    comparison = get_comparison(request, pk)
    cells = profiles.profiled_cells(_compared_cells(comparison))
    defaults = {"before": cells[0].pk, "after": cells[-1].pk} if cells else {}
    form = ProfileDiffForm(cells, request.GET or {**defaults, "role": "tool"})
    diff = None
    if cells and form.is_valid():
        by_id = {c.pk: c for c in cells}
        d = form.cleaned_data
        diff = profiles.differential(by_id[d["before"]], by_id[d["after"]], d["role"])
    context = {"comparison": comparison, "form": form, "cells": cells, "diff": diff}
    return render(request, "comparisons/profiles.html", context)
