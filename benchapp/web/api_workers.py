"""The pool of worker hosts in the REST API, for operators (staff) only:
GET /api/workers/ lists the hosts as the Workers page shows them; POST
/api/workers/ID/drain/ and /resume/ steer one (benchapp.runs.workerpool).
Anyone else gets a 403."""

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAdminUser
from rest_framework.response import Response
from rest_framework.views import APIView

from benchapp.runs import workerpool
from benchapp.web.api import BenchSchema

FORBIDDEN = OpenApiResponse(description="Not an operator (staff)")


class RunningCellSerializer(serializers.Serializer):
    cell = serializers.IntegerField()
    run = serializers.IntegerField()
    key = serializers.CharField()
    run_name = serializers.CharField()


class WorkerHostSerializer(serializers.Serializer):
    host_id = serializers.CharField(help_text="Stable id: host name and a machine-id digest.")
    hostname = serializers.CharField()
    state = serializers.ChoiceField(choices=[workerpool.UP, workerpool.DRAINING, workerpool.LOST])
    slots = serializers.IntegerField(help_text="Slots of its live worker processes.")
    busy = serializers.IntegerField()
    free = serializers.IntegerField()
    queue = serializers.CharField()
    arch = serializers.CharField()
    version = serializers.CharField(help_text="Benchboard's version on the host.")
    version_skew = serializers.BooleanField()
    tools = serializers.DictField(child=serializers.CharField(), help_text="{tool: version}")
    sandbox = serializers.DictField()
    registered_at = serializers.DateTimeField()
    last_seen_at = serializers.DateTimeField()
    running = RunningCellSerializer(many=True)


class DrainSerializer(serializers.Serializer):
    host_id = serializers.CharField()
    state = serializers.CharField()
    moved = serializers.IntegerField(help_text="Waiting cells sent to other hosts.")


class WorkerList(APIView):
    """Every worker host: state (up, draining, lost), slots, running cells,
    tools and versions, version skew."""

    permission_classes = [IsAdminUser]
    schema = BenchSchema()

    @extend_schema(responses={200: WorkerHostSerializer(many=True), 403: FORBIDDEN})
    def get(self, request):
        hosts = [h.to_dict() for h in workerpool.overview()]
        return Response(WorkerHostSerializer(hosts, many=True).data)


def _host(host_id: str):
    host = workerpool.get_host(host_id)
    if host is None:
        raise Http404("No such worker host")
    return host


class WorkerDrain(APIView):
    """Drain a host: its running cells finish, it is sent no new cells."""

    permission_classes = [IsAdminUser]
    schema = BenchSchema()

    @extend_schema(request=None, responses={200: DrainSerializer, 403: FORBIDDEN})
    def post(self, request, host_id):
        host = _host(host_id)
        moved = workerpool.drain(host)
        return Response({"host_id": host.host_id, "state": workerpool.DRAINING, "moved": moved})


class WorkerResume(APIView):
    """Resume a drained host: it takes cells again."""

    permission_classes = [IsAdminUser]
    schema = BenchSchema()

    @extend_schema(request=None, responses={200: DrainSerializer, 403: FORBIDDEN})
    def post(self, request, host_id):
        host = _host(host_id)
        workerpool.resume(host)
        host.refresh_from_db()
        return Response({"host_id": host.host_id, "state": workerpool.state(host), "moved": 0})
