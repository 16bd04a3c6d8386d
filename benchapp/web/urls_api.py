"""The REST API under /api/ (see benchapp/web/api.py), its OpenAPI schema and docs."""

from csp.decorators import csp_update
from django.urls import include, path
from drf_spectacular.views import (
    SpectacularAPIView,
    SpectacularRedocView,
    SpectacularSwaggerSplitView,
)
from rest_framework.routers import DefaultRouter

from benchapp.web import api, api_runs, api_workers

router = DefaultRouter()
router.register("credentials", api.CredentialViewSet, basename="api-credential")
router.register("targets", api.TargetViewSet, basename="api-target")
router.register("plans", api.PlanViewSet, basename="api-plan")
router.register("runs", api_runs.RunViewSet, basename="api-run")
router.register("cells", api_runs.CellViewSet, basename="api-cell")
router.register("measurements", api_runs.MeasurementViewSet, basename="api-measurement")
router.register("comparisons", api.ComparisonViewSet, basename="api-comparison")
router.register("alerts", api.AlertViewSet, basename="api-alert")
router.register("schedules", api.ScheduleViewSet, basename="api-schedule")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view serves its start-up script as a file: no inline script (CSP).
    path("docs/", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    # Redoc runs its search in a worker made from a blob: URL.
    path(
        "redoc/",
        csp_update({"worker-src": ["'self'", "blob:"]})(
            SpectacularRedocView.as_view(url_name="api-schema")
        ),
        name="api-redoc",
    ),
    path("token/", api.ObtainToken.as_view(), name="api-token"),
    path("notifications/", api.NotificationSettings.as_view(), name="api-notifications"),
    path("tokens/", api.TokenList.as_view(), name="api-tokens"),
    path("tokens/<str:prefix>/", api.TokenRevoke.as_view(), name="api-token-revoke"),
    path("workers/", api_workers.WorkerList.as_view(), name="api-workers"),
    path(
        "workers/<str:host_id>/drain/", api_workers.WorkerDrain.as_view(), name="api-worker-drain"
    ),
    path(
        "workers/<str:host_id>/resume/",
        api_workers.WorkerResume.as_view(),
        name="api-worker-resume",
    ),
    path("", include(router.urls)),
]
