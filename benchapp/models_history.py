"""History models (docs/history.md): alerts, detection state, per-run series
summaries, and the team's alert notifications.

Re-exported by benchapp.models; related models are named by string so this
module imports no other model module.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Alert(models.Model):
    """A change detected in the history of one cell key and metric of a plan."""

    NEW, CONFIRMED, NOT_REPRODUCED, RESOLVED = "new", "confirmed", "not_reproduced", "resolved"
    STATUSES = [(s, s.replace("_", " ")) for s in (NEW, CONFIRMED, NOT_REPRODUCED, RESOLVED)]
    OPEN = (NEW, CONFIRMED)

    team = models.ForeignKey("benchapp.Team", on_delete=models.CASCADE, related_name="alerts")
    plan = models.ForeignKey("benchapp.Plan", on_delete=models.CASCADE, related_name="alerts")
    cell_key = models.CharField(max_length=500)
    group = models.CharField(max_length=200, blank=True)
    metric = models.CharField(max_length=60)
    start_run = models.ForeignKey("benchapp.Run", on_delete=models.CASCADE, related_name="alerts")
    before_mean = models.FloatField()
    before_low = models.FloatField()  # 95 % confidence interval of the mean
    before_high = models.FloatField()
    after_mean = models.FloatField()
    after_low = models.FloatField()
    after_high = models.FloatField()
    magnitude = models.FloatField()  # relative change of the mean, signed
    pvalue = models.FloatField()
    # The metric got worse (True) or better (False) by its catalogued
    # direction; None for a metric with none: the alert only says "changed".
    bad = models.BooleanField(null=True)
    status = models.CharField(max_length=15, choices=STATUSES, default=NEW)
    verdict = models.BooleanField(null=True, blank=True)  # a user's "true alert" / "false alert"
    confirm_run = models.ForeignKey(
        "benchapp.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="confirmed_alerts",
    )
    # What the confirmation run showed (or why it could not decide).
    confirm_note = models.TextField(blank=True)
    resolved_run = models.ForeignKey(
        "benchapp.Run", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # The plan edit(s) between the last run before the change and the first
    # after it (benchapp.histories.planedits.straddled_edit): the change may be the edit's.
    plan_edit = models.TextField(blank=True)
    # What else changed around the change point, nearest first
    # (benchapp.histories.explain.changes): settings, versions, verdicts.
    explanation = models.JSONField(default=list, blank=True)
    # One change, one incident: the alerts of a plan that moved at the same
    # change point follow the first of them (its lead), which alone is listed
    # first and notified, naming every metric and cell that moved.
    lead = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="followers"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["plan", "cell_key", "group", "metric", "start_run"],
                name="one_alert_per_change",
            )
        ]
        indexes = [models.Index(fields=["team", "-created_at"])]

    def __str__(self):
        return f"{self.metric} {self.magnitude:+.1%} at run #{self.start_run_id}"

    @property
    def series_name(self) -> str:
        return self.cell_key + (f" [{self.group}]" if self.group else "")

    @property
    def change(self) -> str:
        """ "worse", "better", or "changed" for a metric with no direction."""
        return {True: "worse", False: "better"}.get(self.bad, "changed")


class HistoryState(models.Model):
    """Where change detection stopped in one series, so the next run's task
    re-analyses only the tail (runners.changepoint.Analysis.state())."""

    plan = models.ForeignKey(
        "benchapp.Plan", on_delete=models.CASCADE, related_name="history_states"
    )
    cell_key = models.CharField(max_length=500)
    group = models.CharField(max_length=200, blank=True)
    metric = models.CharField(max_length=60)
    state = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["plan", "cell_key", "group", "metric"], name="one_history_state"
            )
        ]


class SeriesKey(models.Model):
    """The name of one series of a plan's history: (metric, cell key, group);
    RunPoints rows hold its id (benchapp.store.summarystore)."""

    plan = models.ForeignKey(
        "benchapp.Plan", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    metric = models.CharField(max_length=60)
    cell_key = models.CharField(max_length=500)
    group = models.CharField(max_length=200, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["plan", "metric", "cell_key", "group"], name="one_series_key"
            )
        ]


class RunPoints(models.Model):
    """One finished run's points of one metric: per series (a SeriesKey id)
    the mean, min, max and count of the latest attempts' repeats and
    iterations, packed as arrays (benchapp.store.summarystore writes and reads
    them). Written once when the run finishes (benchapp.histories.history.summarize_run);
    histories and the trend page read these instead of every measurement.
    The run's plan and creation time are copied so a history of one metric
    is one index range."""

    run = models.ForeignKey(
        "benchapp.Run", on_delete=models.CASCADE, related_name="points", db_index=False
    )
    plan = models.ForeignKey(
        "benchapp.Plan", on_delete=models.CASCADE, related_name="+", db_index=False
    )
    run_created_at = models.DateTimeField()
    metric = models.CharField(max_length=60)
    count = models.PositiveIntegerField()  # points in the arrays
    keys = models.BinaryField()  # SeriesKey ids, big-endian int4
    means = models.BinaryField()  # big-endian float8, as the keys
    lows = models.BinaryField()
    highs = models.BinaryField()
    counts = models.BinaryField()  # values behind each point, big-endian int4

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "metric"], name="one_points_row_per_metric")
        ]
        indexes = [models.Index(fields=["plan", "metric", "run_created_at"], name="points_series")]


class Notifier(models.Model):
    """Where a team's alerts are sent: a signed webhook and/or email."""

    team = models.OneToOneField("benchapp.Team", on_delete=models.CASCADE, related_name="notifier")
    webhook_url = models.URLField(max_length=500, blank=True)
    webhook_secret = models.TextField(blank=True, editable=False)  # encrypted (benchapp.crypto)
    emails = models.TextField(blank=True)  # recipients, comma-separated
    only_bad = models.BooleanField(default=True)  # improvements are not sent
    updated_at = models.DateTimeField(auto_now=True)

    def __repr__(self):
        return f"<Notifier team={self.team_id} webhook={bool(self.webhook_url)}>"

    @property
    def recipients(self) -> list[str]:
        return [e.strip() for e in self.emails.replace(";", ",").split(",") if e.strip()]


class AlertDelivery(models.Model):
    """One notification of one alert event on one channel: sent at most once."""

    WEBHOOK, EMAIL = "webhook", "email"
    PENDING, SENT, FAILED = "pending", "sent", "failed"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=15)  # new | confirmed | resolved
    channel = models.CharField(max_length=10)
    status = models.CharField(max_length=10, default=PENDING)
    attempts = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["alert", "event", "channel"], name="one_delivery")
        ]


class PlanRevision(models.Model):
    """A plan document as saved (benchapp.plans.planning.save_plan): who changed
    the plan and when, for the plan-edit markers of the trend page."""

    plan = models.ForeignKey("benchapp.Plan", on_delete=models.CASCADE, related_name="revisions")
    document = models.JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["plan", "created_at"]
