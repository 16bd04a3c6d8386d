"""Run results: pivot table, charts and their JSON endpoints.

The JSON endpoints are gzipped when the browser accepts it (gzip_page); the
pages are not: they carry a CSRF token beside what the URL asks for, which
compression would let an attacker guess (BREACH).
"""

import functools

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import JsonResponse, QueryDict
from django.shortcuts import render
from django.views.decorators.gzip import gzip_page

from benchapp.accounts.access import get_run
from benchapp.analysis import charts, defaults, metricnames, pivot, queryparams, results
from benchapp.runs import machines

MAX_SERIES_CELLS = 12


def refuses_bad_query(view):
    """A view that raises queryparams.BadParameter answers 400 with the
    message: a page for people, {"error": ...} for a .json address."""

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except queryparams.BadParameter as exc:
            if request.path.endswith(".json"):
                return JsonResponse({"error": str(exc), "parameter": exc.name}, status=400)
            context = {"error": exc, "back": request.path}
            return render(request, "400.html", context, status=400)

    return wrapped


def checked_results(request, runs, **kwargs) -> dict:
    """results.results for the request's view, refusing (BadParameter) a
    parameter whose value the data does not offer."""
    data = results.results(runs, _requested(request), **kwargs)
    queryparams.check(request.GET, queryparams.view_parameters(data))
    return data


class PivotForm(forms.Form):
    """The GET form of a results page, rendered with the choices the data
    offers. Requests are read by `_requested`; the pages refuse unknown names
    (queryparams) and resolve_view drops those of a saved view."""

    rows = forms.MultipleChoiceField(required=False)
    columns = forms.MultipleChoiceField(required=False)
    metric = forms.MultipleChoiceField(required=False)
    statistic = forms.ChoiceField(required=False, choices=[(s, s) for s in pivot.STATISTICS])
    chart_x = forms.ChoiceField(required=False)
    chart = forms.ChoiceField(
        required=False, choices=[("", "auto")] + [(c, c) for c in defaults.CHARTS]
    )
    baseline = forms.CharField(required=False)

    def __init__(self, data, dimensions=(), metrics=(), tool="", units=None):
        data = data.copy()
        for name, allowed in (("rows", dimensions), ("columns", dimensions), ("metric", metrics)):
            data.setlist(name, [v for v in data.getlist(name) if v in allowed])
        super().__init__(data)
        for name in ("rows", "columns", "chart_x"):
            self.fields[name].choices = [("", "default")] * (name == "chart_x") + [
                (d, d) for d in dimensions
            ]
        # in words, grouped: the tool's own, then telemetry by source
        self.fields["metric"].choices = metricnames.grouped(tool, metrics, units)


@refuses_bad_query
@login_required
def run_results_page(request, pk):
    run = get_run(request, pk)
    data = checked_results(request, [run])
    return render(
        request,
        "results/run.html",
        {
            "run": run,
            "data": data,
            "form": pivot_form(data),
            "view_query": view_query(data),
            "charts": charts_payload(data, False),
            "overlaps": machines.overlaps(run),
        },
    )


def charts_payload(data: dict, several_runs: bool) -> dict:
    """What a page's charts draw: the view, the results chart and the series
    picker's cells. The page carries it (json_script: no second computation
    and round trip before the first chart); results.json serves the same."""
    return {
        "view": data["view"],
        "chart": data["chart"],
        "cells": results.cell_choices(data["cells"], several_runs),
    }


@gzip_page
@refuses_bad_query
@login_required
def run_results_json(request, pk):
    run = get_run(request, pk)
    data = checked_results(request, [run])
    return JsonResponse(
        {"run": run.pk, **charts_payload(data, False), "table": pivot.pivot_json(data["table"])}
    )


@gzip_page
@login_required
def run_series_json(request, pk):
    run = get_run(request, pk)
    return JsonResponse(series_payload(request.GET, [run]))


def series_payload(query, runs, allowed_cells=None) -> dict:
    """Series of the asked cells (of `runs` only), at most 2 × width points each."""
    ids = [int(c) for c in query.get("cells", "").split(",") if c.strip().isdigit()]
    if allowed_cells:
        ids = [i for i in ids if i in allowed_cells]
    cells = results.cell_infos(runs, ids[:MAX_SERIES_CELLS] or [-1])
    width = min(max(_int(query.get("width"), 800), 100), 4000)
    traces = charts.cell_series(cells, query.get("metric", "tps")[:60], 2 * width)
    return {"traces": traces, "max_points": 2 * width}


def _int(value, default):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _requested(request) -> dict:
    """The user's pivot choices in the page's query (results.requested_view)."""
    return results.requested_view(request.GET)


def view_query(data) -> QueryDict:
    """The view in effect (defaults included) as a query: the pivot form's
    values, the save form's hidden fields and the link that bookmarks it."""
    view = data["view"]
    query = QueryDict(mutable=True)
    for key in ("rows", "columns"):
        query.setlist(key, view[key])
    metric = view["metric"]
    query.setlist("metric", metric if isinstance(metric, list) else [metric])
    query["statistic"], query["chart_x"] = view["statistic"], view.get("chart_x") or ""
    query["chart"] = view.get("chart") or ""
    if len(data.get("run_labels") or []) > 1 and data.get("baseline"):
        query["baseline"] = data["baseline"]
    return query


def pivot_form(data) -> PivotForm:
    """The GET form, showing the view in effect (defaults included)."""
    return PivotForm(
        view_query(data), data["dimensions"], data["metrics"], data["tool"], data["units"]
    )
