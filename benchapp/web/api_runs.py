"""The REST API's runs, their cells and their measurements (see benchapp/web/api.py):
filters, downloads (CSV, standard formats, environments, timelines) and diffs
against another run or cell. Same team scoping as the rest of the API.
"""

import math

from django.db.models import Count, F
from django.shortcuts import get_object_or_404
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from benchapp.analysis import environments, pivot, queryparams, results, timeline
from benchapp.histories import archive
from benchapp.models import Cell, CellMeasurements, Run
from benchapp.runs import orchestration
from benchapp.store import envstore, measurestore
from benchapp.web import serializers as s
from benchapp.web.api import CSV, JSON_FILE, TEAM_PARAM, VIEW_PARAMETERS, TeamScoped, download

RUN_FILTERS = [
    OpenApiParameter("plan", int, description="runs of this plan (id)"),
    OpenApiParameter(
        "status", str, enum=[code for code, _ in Run.STATUSES], description="runs in this status"
    ),
    OpenApiParameter("tool", str, description="runs of this tool (its name in the tool registry)"),
    OpenApiParameter(
        "created_after",
        str,
        description="created at or after (ISO 8601 date or date-time; a date is its midnight)",
    ),
    OpenApiParameter(
        "created_before",
        str,
        description="created before (ISO 8601 date or date-time; a date is its midnight)",
    ),
]


def run_filters(query) -> dict:
    """The queryset filters of the run list's query parameters (RUN_FILTERS);
    a value that cannot be read is a 400 naming the parameter, never ignored."""
    found = {}
    plan = query.get("plan")
    if plan:
        if not plan.isdigit():
            raise ValidationError({"plan": ["a plan id (a whole number)"]})
        found["plan"] = int(plan)
    status_value = query.get("status")
    if status_value:
        if status_value not in dict(Run.STATUSES):
            raise ValidationError({"status": [f"one of {', '.join(dict(Run.STATUSES))}"]})
        found["status"] = status_value
    if query.get("tool"):
        found["tool"] = query["tool"][:20]
    for name, lookup in (
        ("created_after", "created_at__gte"),
        ("created_before", "created_at__lt"),
    ):
        if query.get(name):
            found[lookup] = _moment(name, query[name])
    return found


def _moment(name: str, text: str):
    """An aware datetime from an ISO 8601 date-time or date (its midnight, in
    the site's time zone)."""
    try:
        moment = parse_datetime(text)
        day = None if moment else parse_date(text)
    except ValueError:
        moment = day = None
    if day is not None:
        moment = timezone.datetime(day.year, day.month, day.day)
    if moment is None:
        raise ValidationError({name: ["an ISO 8601 date (2026-01-31) or date-time"]})
    return timezone.make_aware(moment) if timezone.is_naive(moment) else moment


AGAINST_RUN = OpenApiParameter("against", int, description="a run of the team to diff against")
AGAINST_CELL = OpenApiParameter("against", int, description="a cell of the team to diff against")


def _against(request, rows):
    """The row named by ?against= among rows (the team's), None without one; 404 otherwise."""
    value = request.query_params.get("against")
    if not value:
        return None
    if not value.isdigit():
        raise ValidationError({"against": ["an id"]})
    return get_object_or_404(rows, pk=int(value))


@extend_schema_view(list=extend_schema(parameters=[TEAM_PARAM, *RUN_FILTERS]))
class RunViewSet(
    TeamScoped, mixins.CreateModelMixin, mixins.UpdateModelMixin, viewsets.ReadOnlyModelViewSet
):
    """Runs, newest first. POST starts one (orchestration.start_run); PATCH
    edits tags and notes. The list filters by plan, status, tool and creation
    dates (query parameters)."""

    queryset = Run.objects.annotate(cells_total=Count("cells")).order_by("-created_at", "-pk")
    serializer_class = s.RunSerializer
    http_method_names = ("get", "post", "patch", "head", "options")
    list_filters_refuse = True  # a filter it cannot read is a 400 (run_filters)

    def get_queryset(self):
        qs = super().get_queryset()
        if self.action == "list":
            qs = qs.filter(**run_filters(self.request.query_params))
        return qs

    @extend_schema(responses=CSV, operation_id="runs_export_csv")
    @action(detail=True, methods=["get"], url_path="export.csv")
    def export_csv(self, request, pk=None):
        """The run's measurements as CSV (the run page's CSV export)."""
        run = self.get_object()
        return download(archive.export_csv(run.team, [run]), "text/csv", f"run-{run.pk}.csv")

    @extend_schema(responses=JSON_FILE, operation_id="runs_export_json")
    @action(detail=True, methods=["get"], url_path="export.json")
    def export_json(self, request, pk=None):
        """The run with its cells and measurements as one JSON document (the
        run page's JSON export)."""
        run = self.get_object()
        content = archive.export_json(run.team, [run])
        return download(content, "application/json", f"run-{run.pk}.json")

    @extend_schema(request=None, responses=s.RunSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request, pk=None):
        run = orchestration.cancel_run(self.get_object())
        return Response(self.get_serializer(run).data)

    @extend_schema(parameters=[AGAINST_RUN], responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def environment(self, request, pk=None):
        """The run's distinct environment snapshots (the cells each served);
        with ?against=<run id> of the same team, also what differs from that run."""
        run = self.get_object()
        answer = {"snapshots": environments.run_snapshots(run)}
        other = _against(request, Run.objects.filter(team=self.get_team()))
        if other is not None:
            answer["against"] = other.pk
            answer["diff"] = environments.run_diff(other, run).get("diff", {})
        return Response(answer)

    @extend_schema(parameters=VIEW_PARAMETERS, responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        """The pivot table (the results page's), as JSON."""
        q = request.query_params
        requested = results.requested_view(q)
        data = results.results([self.get_object()], requested)
        accepted = queryparams.view_parameters(data)
        try:
            queryparams.check(q, {k: v for k, v in accepted.items() if k in requested})
        except queryparams.BadParameter as exc:
            raise ValidationError({exc.name: [str(exc)]}) from exc
        return Response({"view": data["view"], "table": pivot.pivot_json(data["table"])})


class _RunFilterMixin:
    def get_queryset(self):
        qs = self.queryset.filter(run__team=self.get_team())
        for name in ("run", "cell", "metric", "status"):
            value = self.request.query_params.get(name)
            if value and (name in ("metric", "status") or value.isdigit()):
                qs = qs.filter(**{name: value})
        return qs


@extend_schema_view(
    list=extend_schema(
        parameters=[TEAM_PARAM, OpenApiParameter("run", int), OpenApiParameter("status", str)]
    )
)
class CellViewSet(_RunFilterMixin, TeamScoped, viewsets.ReadOnlyModelViewSet):
    queryset = Cell.objects.order_by("run_id", "index")
    serializer_class = s.CellSerializer

    @extend_schema(responses=s.TimelineSerializer, parameters=[TEAM_PARAM])
    @action(detail=True, methods=["get"])
    def timeline(self, request, pk=None):
        """The cell's per-second series (the cell page's timeline): the tool's
        and each telemetry source's ("host", "db", ...), as seconds from the
        measure's start (x) and values (y, at most 1,200 points each, spikes
        kept; "total" is the number of seconds stored), with the phases'
        boundaries."""
        return Response(_finite(timeline.cell_timeline(self.get_object())))

    @extend_schema(parameters=[AGAINST_CELL], responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def environment(self, request, pk=None):
        """The cell's environment snapshot; with ?against=<cell id> of the
        same team, also what differs (by group: database, host, cloud, tools, plan)."""
        cell = self.get_object()
        found = envstore.contents([cell.environment_id])
        answer = {"hash": cell.environment_id, "snapshot": found.get(cell.environment_id)}
        other = _against(request, Cell.objects.filter(run__team=self.get_team()))
        if other is not None:
            answer["against"] = other.pk
            answer["diff"] = environments.cell_diff(other, cell)["diff"]
        return Response(answer)


def _finite(value):
    """value with every NaN or infinity as null (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


@extend_schema_view(
    list=extend_schema(
        parameters=[
            TEAM_PARAM,
            OpenApiParameter("run", int),
            OpenApiParameter("cell", int),
            OpenApiParameter("metric", str),
            OpenApiParameter("all_attempts", bool, description="include earlier attempts' rows"),
        ]
    )
)
class MeasurementViewSet(TeamScoped, viewsets.GenericViewSet):
    """Measurements of each cell's latest attempt (all_attempts=true for every
    row), in cell, attempt and stored order, unpacked from one stored row per
    cell attempt (benchapp.store.measurestore.Listing: a page reads only its rows)."""

    serializer_class = s.MeasurementSerializer

    def list(self, request):
        q = request.query_params
        rows = CellMeasurements.objects.filter(run__team=self.get_team())
        for name in ("run", "cell"):
            if (q.get(name) or "").isdigit():
                rows = rows.filter(**{name: q[name]})
        if q.get("all_attempts") not in ("true", "1"):
            rows = rows.filter(attempt=F("cell__attempt"))
        page = self.paginate_queryset(measurestore.Listing(rows, q.get("metric", "")[:60]))
        return self.get_paginated_response(self.get_serializer(page, many=True).data)
