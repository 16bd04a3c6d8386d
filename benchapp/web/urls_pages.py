"""URL patterns of the web UI pages (issue 7): targets, credentials, plans,
runs and schedules. benchapp/urls.py includes them at the root."""

from django.contrib.auth.decorators import login_required
from django.urls import path

from benchapp.accounts.access import MEMBER, role_required
from benchapp.web.views import (
    credentials,
    history,
    members,
    notifications,
    plans,
    runs,
    schedules,
    targets,
    tokens,
    workers,
)


def _member(view, kind=None):
    """Writes of the history pages need the member role (403 for viewers)."""
    return login_required(role_required(MEMBER, kind)(view))


urlpatterns = [
    path("targets/", targets.target_list, name="target_list"),
    path("targets/new/", targets.target_create, name="target_create"),
    path("targets/<int:pk>/", targets.target_detail, name="target_detail"),
    path("targets/<int:pk>/edit/", targets.target_edit, name="target_edit"),
    path("targets/<int:pk>/delete/", targets.target_delete, name="target_delete"),
    path("targets/<int:pk>/test/", targets.target_test, name="target_test"),
    path("targets/<int:pk>/accept-key/", targets.target_accept_key, name="target_accept_key"),
    path("credentials/", credentials.credential_list, name="credential_list"),
    path("credentials/new/", credentials.credential_create, name="credential_create"),
    path("credentials/<int:pk>/edit/", credentials.credential_edit, name="credential_edit"),
    path("credentials/<int:pk>/delete/", credentials.credential_delete, name="credential_delete"),
    path("tokens/", tokens.token_list, name="token_list"),
    path("workers/", workers.worker_list, name="worker_list"),
    path("workers/<str:host_id>/drain/", workers.worker_drain, name="worker_drain"),
    path("workers/<str:host_id>/resume/", workers.worker_resume, name="worker_resume"),
    path("tokens/<str:prefix>/revoke/", tokens.token_revoke, name="token_revoke"),
    path("plans/", plans.plan_list, name="plan_list"),
    path("plans/new/", plans.plan_create, name="plan_create"),
    path("plans/import/", plans.plan_import, name="plan_import"),
    path("plans/preview.json", plans.plan_preview, name="plan_preview"),
    path("plans/<int:pk>/", plans.plan_detail, name="plan_detail"),
    path("plans/<int:pk>/edit/", plans.plan_edit, name="plan_edit"),
    path("plans/<int:pk>/yaml/", plans.plan_export, name="plan_export"),
    path("plans/<int:pk>/clone/", plans.plan_clone, name="plan_clone"),
    path("plans/<int:pk>/delete/", plans.plan_delete, name="plan_delete"),
    path("plans/<int:pk>/run/", plans.plan_run, name="plan_run"),
    path("plans/<int:pk>/schedule/", schedules.schedule_create, name="schedule_create"),
    path("plans/<int:pk>/trend/", history.plan_trend, name="plan_trend"),
    path("plans/<int:pk>/trend.json", history.plan_trend_json, name="plan_trend_json"),
    path(
        "plans/<int:pk>/baseline/",
        _member(history.plan_pin_baseline, "plan"),
        name="plan_pin_baseline",
    ),
    path(
        "plans/<int:pk>/history-settings/",
        _member(history.plan_history_settings, "plan"),
        name="plan_history_settings",
    ),
    path("alerts/", history.alert_list, name="alert_list"),
    path("alerts/<int:pk>/verdict/", _member(history.alert_verdict), name="alert_verdict"),
    path("alerts/<int:pk>/confirm/", _member(history.alert_confirm), name="alert_confirm"),
    path(
        "alerts/notifications/", notifications.notification_settings, name="notification_settings"
    ),
    path("schedules/", schedules.schedule_list, name="schedule_list"),
    path("schedules/<int:pk>/toggle/", schedules.schedule_toggle, name="schedule_toggle"),
    path("schedules/<int:pk>/delete/", schedules.schedule_delete, name="schedule_delete"),
    path("members/", members.member_list, name="member_list"),
    path("members/<int:pk>/role/", members.member_role, name="member_role"),
    path("members/<int:pk>/remove/", members.member_remove, name="member_remove"),
    path("runs/", runs.run_list, name="run_list"),
    path("runs/<int:pk>/", runs.run_detail, name="run_detail"),
    path("runs/<int:pk>/progress.json", runs.run_progress_json, name="run_progress"),
    path("runs/<int:pk>/cancel/", runs.run_cancel, name="run_cancel"),
    path("runs/<int:pk>/environment/", runs.run_environment, name="run_environment"),
    path("runs/<int:pk>/cells/<int:cell_id>/cancel/", runs.cell_cancel, name="cell_cancel"),
    path(
        "runs/<int:pk>/cells/<int:cell_id>/artifacts/", runs.cell_artifacts, name="cell_artifacts"
    ),
    path(
        "runs/<int:pk>/cells/<int:cell_id>/artifacts/<int:artifact_id>/<str:stream>.txt",
        runs.cell_artifact_download,
        name="cell_artifact_download",
    ),
]
