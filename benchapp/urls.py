"""URL map. Pages are split by area, each module owning its own patterns."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from benchapp.web.views import core

urlpatterns = [
    path("", core.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("team/switch/", core.switch_team, name="switch_team"),
    path("healthz", core.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("", include("benchapp.web.urls_pages")),
    path("", include("benchapp.web.urls_results")),
    path("api/", include("benchapp.web.urls_api")),
]
