"""The REST API under /api/ (see benchapp/api.py), its OpenAPI schema and docs."""

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from benchapp import api

router = DefaultRouter()
router.register("credentials", api.CredentialViewSet, basename="api-credential")
router.register("targets", api.TargetViewSet, basename="api-target")
router.register("plans", api.PlanViewSet, basename="api-plan")
router.register("runs", api.RunViewSet, basename="api-run")
router.register("cells", api.CellViewSet, basename="api-cell")
router.register("measurements", api.MeasurementViewSet, basename="api-measurement")
router.register("comparisons", api.ComparisonViewSet, basename="api-comparison")

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("redoc/", SpectacularRedocView.as_view(url_name="api-schema"), name="api-redoc"),
    path("token/", api.ObtainToken.as_view(), name="api-token"),
    path("tokens/", api.TokenList.as_view(), name="api-tokens"),
    path("tokens/<str:prefix>/", api.TokenRevoke.as_view(), name="api-token-revoke"),
    path("", include(router.urls)),
]
