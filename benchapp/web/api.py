"""The REST API (Django REST framework; OpenAPI by drf-spectacular).

Same services and team scoping as the pages: every queryset is the current
team's (the `team` query parameter picks one of the user's teams, else the
first), anything else is a 404. Pages never call this over HTTP.
Runs, their cells and measurements are in benchapp.web.api_runs, worker
hosts in benchapp.web.api_workers; this module holds the rest and what
they share (team scoping, the error schema, downloads).
"""

from django.db.models import Count
from django.http import Http404, HttpResponse
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.decorators import action
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from benchapp.accounts import tokens
from benchapp.accounts.access import ADMIN, MEMBER, require_role, user_teams
from benchapp.analysis import pivot, queryparams, results
from benchapp.histories import archive, comparisons, confirmation, history, scheduling
from benchapp.models import Alert, Comparison, Credential, Notifier, Plan, Run, Target
from benchapp.plans.planning import PlanRefused
from benchapp.runs import connection
from benchapp.web import serializers as s
from benchapp.web.serializers_targets import CredentialSerializer, TargetSerializer

TEAM_PARAM = OpenApiParameter(
    "team", OpenApiTypes.INT, description="team id (default: your first team)"
)


def api_team(request):
    teams = user_teams(request.user)
    wanted = request.query_params.get("team")
    team = teams.filter(pk=wanted).first() if str(wanted or "").isdigit() else teams.first()
    if team is None:
        raise Http404("No team")
    return team


_ERROR = {
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "additionalProperties": True,
                "properties": {"detail": {"type": "string"}},
            }
        }
    }
}


# The pivot choices a results endpoint reads (benchapp.analysis.results.requested_view),
# the same as the results page's query.
VIEW_PARAMETERS = [
    OpenApiParameter("rows", str, many=True),
    OpenApiParameter("columns", str, many=True),
    OpenApiParameter("metric", str, many=True),
    OpenApiParameter("statistic", str),
    OpenApiParameter("chart_x", str),
    OpenApiParameter("chart", str),
]


# What a download answers (its schema) and how: the run and comparison endpoints share them.
CSV = {(200, "text/csv"): OpenApiTypes.STR}
JSON_FILE = {(200, "application/json"): OpenApiTypes.OBJECT}


def download(content: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class BenchSchema(AutoSchema):
    """Documents the error answers every operation may give: 401 without a
    valid token, 404 for another team's (or no) object, 400 for refused input
    (a list's too when its filters refuse what they cannot read)."""

    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        responses.setdefault("401", {"description": "Not authenticated", **_ERROR})
        responses.setdefault("404", {"description": "Not found in your teams", **_ERROR})
        if (
            self.method in ("POST", "PUT", "PATCH")
            or self.method == "GET"
            and (not self._is_list_view() or getattr(self.view, "list_filters_refuse", False))
        ):
            responses.setdefault("400", {"description": "Refused input", **_ERROR})
        return responses


class TeamScoped:
    """Querysets and serializer context of the request's team. Reads need any
    role in the team; writes need `write_role` (403 below it)."""

    schema = BenchSchema()
    write_role = MEMBER
    action_roles: dict[str, str] = {}  # actions that need another role than write_role

    def _check_write_role(self, request):
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            role = self.action_roles.get(self.action, self.write_role)
            require_role(request.user, self.get_team(), role)

    def check_permissions(self, request):
        super().check_permissions(request)
        if self.lookup_field not in self.kwargs:  # detail routes: 404 first, then the role
            self._check_write_role(request)

    def check_object_permissions(self, request, obj):
        super().check_object_permissions(request, obj)
        self._check_write_role(request)

    def get_team(self):
        if not hasattr(self, "_team"):
            self._team = api_team(self.request)
        return self._team

    def get_serializer_context(self):
        return {**super().get_serializer_context(), "team": self.get_team()}

    def get_queryset(self):
        return self.queryset.filter(team=self.get_team())


@extend_schema_view(list=extend_schema(parameters=[TEAM_PARAM]))
class CredentialViewSet(TeamScoped, viewsets.ModelViewSet):
    """Credentials: the secret is write-only; reads show its fingerprint."""

    queryset = Credential.objects.order_by("name")
    serializer_class = CredentialSerializer
    write_role = ADMIN


@extend_schema_view(list=extend_schema(parameters=[TEAM_PARAM]))
class TargetViewSet(TeamScoped, viewsets.ModelViewSet):
    queryset = Target.objects.select_related("credential", "ssh_credential")
    serializer_class = TargetSerializer
    write_role = ADMIN
    action_roles = {"test_connection": MEMBER}  # as the target page's button

    @extend_schema(request=None, responses=s.ConnectionTestSerializer, parameters=[TEAM_PARAM])
    @action(detail=True, methods=["post"], url_path="test")
    def test_connection(self, request, pk=None):
        """Test connection (the target page's button, members and up): reach the
        target as a run would and answer its facts, or the error naming what is
        missing. An SSH host whose key is not yet known is not connected to:
        its key and fingerprint are answered, to be accepted on the target page."""
        target = self.get_object()
        result = connection.test_connection(target)
        connection.record_check(target, result)
        return Response(s.ConnectionTestSerializer(result).data)


@extend_schema_view(list=extend_schema(parameters=[TEAM_PARAM]))
class PlanViewSet(TeamScoped, viewsets.ModelViewSet):
    queryset = Plan.objects.all()
    serializer_class = s.PlanSerializer

    @extend_schema(
        parameters=[
            OpenApiParameter("metric", str, description="default: the first with a history"),
            OpenApiParameter("keys", str, description="cell keys separated by |; default all"),
        ],
        responses=OpenApiTypes.OBJECT,
    )
    @action(detail=True, methods=["get"])
    def trend(self, request, pk=None):
        """The plan's history series (the trend page's, every run, not downsampled):
        per cell key a line of run ids, dates and each run's mean with its 95 %
        confidence interval."""
        plan = self.get_object()
        plan_ids = history.history_plans(plan)
        try:
            names = history.series_names(plan_ids)  # read once for both
            metric, metrics, keys, wanted = history.trend_choices(
                plan_ids, request.query_params, names
            )
        except queryparams.BadParameter as exc:
            raise ValidationError({exc.name: [str(exc)]}) from exc
        series = history.load_series(plan_ids, [metric], wanted or keys, names=names).values()
        return Response(
            {
                "metric": metric,
                "metrics": metrics,
                "keys": keys,
                "lines": [_trend_line(line) for line in series],
                "baseline": plan.baseline_run_id,
            }
        )


def _trend_line(series) -> dict:
    return {
        "key": series.cell_key,
        "group": series.group,
        "runs": series.run_ids,
        "dates": [d.isoformat() for d in series.dates],
        "mean": series.means,
        "low": series.lows,
        "high": series.highs,
    }


@extend_schema_view(
    list=extend_schema(
        parameters=[TEAM_PARAM, OpenApiParameter("plan", int), OpenApiParameter("status", str)]
    )
)
class AlertViewSet(TeamScoped, viewsets.ReadOnlyModelViewSet):
    """The team's alerts (the alerts page's). Members set a verdict and start
    a confirmation re-run; viewers read."""

    queryset = Alert.objects.select_related("plan", "start_run")
    serializer_class = s.AlertSerializer

    def get_queryset(self):
        qs = super().get_queryset()
        for name in ("plan", "status"):
            value = self.request.query_params.get(name)
            if value and (name == "status" or value.isdigit()):
                qs = qs.filter(**{name: value})
        return qs

    @extend_schema(responses=OpenApiTypes.OBJECT, parameters=[TEAM_PARAM])
    @action(detail=False, methods=["get"])
    def verdicts(self, request):
        """How often the team's alerts were right (the alerts page's counts)."""
        return Response(history.verdict_counts(self.get_team()))

    @extend_schema(request=s.VerdictSerializer, responses=s.AlertSerializer)
    @action(detail=True, methods=["post"])
    def verdict(self, request, pk=None):
        """Mark the alert a true (true) or false (false) alert, or undecided (null)."""
        alert = self.get_object()
        given = s.VerdictSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        alert.verdict = given.validated_data["verdict"]
        alert.save(update_fields=["verdict", "updated_at"])
        return Response(self.get_serializer(alert).data)

    @extend_schema(request=None, responses={201: s.RunSerializer})
    @action(detail=True, methods=["post"])
    def confirm(self, request, pk=None):
        """Re-run the alert's cells; the alert is judged when that run has finished."""
        alert = self.get_object()
        if alert.status != Alert.NEW or (alert.confirm_run and alert.confirm_run.is_active):
            raise ValidationError({"detail": "This alert is already being or has been judged."})
        try:
            run = confirmation.start([alert], user=request.user)
        except PlanRefused as exc:
            raise ValidationError({"detail": f"Cannot re-run {alert.cell_key}: {exc}"}) from None
        run = Run.objects.annotate(cells_total=Count("cells")).get(pk=run.pk)
        context = self.get_serializer_context()
        return Response(s.RunSerializer(run, context=context).data, status=201)


class NotificationSettings(APIView):
    """The team's alert notifications (team admins, as the page): GET reads,
    PATCH changes; the webhook secret is write-only."""

    schema = BenchSchema()

    def _notifier(self, request):
        team = api_team(request)
        require_role(request.user, team, ADMIN)
        return Notifier.objects.filter(team=team).first() or Notifier(team=team)

    @extend_schema(parameters=[TEAM_PARAM], responses=s.NotifierSerializer)
    def get(self, request):
        return Response(s.NotifierSerializer(self._notifier(request)).data)

    @extend_schema(
        parameters=[TEAM_PARAM], request=s.NotifierSerializer, responses=s.NotifierSerializer
    )
    def patch(self, request):
        given = s.NotifierSerializer(self._notifier(request), data=request.data, partial=True)
        given.is_valid(raise_exception=True)
        return Response(s.NotifierSerializer(given.save()).data)


@extend_schema_view(list=extend_schema(parameters=[TEAM_PARAM]))
class ComparisonViewSet(TeamScoped, viewsets.ModelViewSet):
    queryset = Comparison.objects.prefetch_related("runs")
    serializer_class = s.ComparisonSerializer

    @extend_schema(responses=CSV, operation_id="comparisons_export_csv")
    @action(detail=True, methods=["get"], url_path="export.csv")
    def export_csv(self, request, pk=None):
        """The compared runs' measurements as CSV (the comparison page's export)."""
        comparison = self.get_object()
        runs = comparisons.comparison_runs(comparison)
        content = archive.export_csv(comparison.team, runs, comparison.cells)
        return download(content, "text/csv", f"comparison-{comparison.pk}.csv")

    @extend_schema(responses=JSON_FILE, operation_id="comparisons_export_json")
    @action(detail=True, methods=["get"], url_path="export.json")
    def export_json(self, request, pk=None):
        """The comparison with its runs' cells and measurements as one JSON document."""
        comparison = self.get_object()
        runs = comparisons.comparison_runs(comparison)
        content = archive.export_json(comparison.team, runs, comparison.cells, comparison)
        return download(content, "application/json", f"comparison-{comparison.pk}.json")

    @extend_schema(request=None, responses=s.ShareSerializer)
    @action(detail=True, methods=["post"])
    def share(self, request, pk=None):
        """A new share link (replacing any earlier one); the token is shown only now."""
        token = self.get_object().share()
        return Response(
            {"token": token, "url": request.build_absolute_uri(f"/share/{token}/")},
            status=status.HTTP_201_CREATED,
        )

    @extend_schema(request=None, responses={204: None})
    @action(detail=True, methods=["post"])
    def revoke(self, request, pk=None):
        self.get_object().revoke()
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        parameters=[*VIEW_PARAMETERS, OpenApiParameter("baseline", str)],
        responses=OpenApiTypes.OBJECT,
    )
    @action(detail=True, methods=["get"])
    def results(self, request, pk=None):
        data = comparisons.compare(
            self.get_object(),
            results.requested_view(request.query_params),
            request.query_params.get("baseline"),
        )
        return Response(
            {
                "view": data["view"],
                "table": pivot.pivot_json(data["table"]),
                "diff": data["diff"],
                "baseline": data["baseline"],
                # per metric, each run's geometric mean of ratios to the baseline
                "summary": [
                    {"metric": p["metric_label"], "runs": p["overall"]} for p in data["panels"]
                ],
            }
        )


_SCHEDULE_ID = OpenApiParameter("id", int, OpenApiParameter.PATH)


@extend_schema_view(
    list=extend_schema(
        parameters=[TEAM_PARAM, OpenApiParameter("plan", int, description="one plan's schedules")]
    ),
    retrieve=extend_schema(parameters=[_SCHEDULE_ID]),
    destroy=extend_schema(parameters=[_SCHEDULE_ID]),
    partial_update=extend_schema(parameters=[_SCHEDULE_ID]),
)
class ScheduleViewSet(
    TeamScoped,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet,
):
    """Scheduled runs of the team's plans (the schedules page's): once at a
    time ("at") or repeatedly ("cron", in the site's time zone). Viewers read,
    members create, pause/resume (PATCH enabled) and delete."""

    serializer_class = s.ScheduleSerializer
    http_method_names = ("get", "post", "patch", "delete", "head", "options")
    lookup_value_regex = "[0-9]+"
    pagination_class = None

    def get_queryset(self):
        plan = None
        wanted = self.request.query_params.get("plan")
        if wanted and wanted.isdigit():
            plan = Plan.objects.filter(team=self.get_team(), pk=wanted).first()
            if plan is None:
                return []
        return scheduling.team_schedules(self.get_team(), plan)

    def get_object(self):
        pk = self.kwargs["pk"]
        task = scheduling.get_schedule(self.get_team(), int(pk) if str(pk).isdigit() else 0)
        task = next(t for t in scheduling.team_schedules(self.get_team()) if t.pk == task.pk)
        self.check_object_permissions(self.request, task)
        return task

    def perform_destroy(self, instance):
        scheduling.delete(instance)

    @extend_schema(
        request=s.ScheduleEnabledSerializer,
        responses=s.ScheduleSerializer,
        parameters=[_SCHEDULE_ID],
    )
    def partial_update(self, request, pk=None):
        task = self.get_object()
        given = s.ScheduleEnabledSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        scheduling.set_enabled(task, given.validated_data["enabled"])
        return Response(self.get_serializer(task).data)


class ObtainToken(ObtainAuthToken):
    """POST username and password, get the API token (header `Authorization: Token <key>`).
    Wrong passwords count towards the login lockout (429 while locked out)."""

    schema = BenchSchema()

    def post(self, request, *args, **kwargs):
        try:
            return super().post(request, *args, **kwargs)
        except ValidationError:
            if getattr(request, "axes_locked_out", False):
                request._request.axes_locked_out = False  # answer in JSON, not the page
                raise Throttled(detail="Too many failed logins; try again later.") from None
            raise


class TokenList(APIView):
    """Your API tokens (a key prefix and when it was made, never the key)."""

    schema = BenchSchema()

    @extend_schema(responses=s.TokenSerializer(many=True))
    def get(self, request):
        return Response(s.TokenSerializer(tokens.user_tokens(request.user), many=True).data)


class TokenRevoke(APIView):
    """DELETE revokes your token with this prefix: it gets a 401 from then on."""

    schema = BenchSchema()

    @extend_schema(request=None, responses={204: None})
    def delete(self, request, prefix):
        if not tokens.revoke_token(request.user, prefix):
            raise Http404("No such token")
        return Response(status=status.HTTP_204_NO_CONTENT)
