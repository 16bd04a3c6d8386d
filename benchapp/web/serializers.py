"""REST serializers. Validation is the pages' own: plan documents through
planning.validate_document; credentials' and targets' in
benchapp.web.serializers_targets."""

from django.utils import timezone
from rest_framework import serializers

from benchapp.histories import scheduling
from benchapp.models import Alert, Cell, Comparison, Plan, Run
from benchapp.plans import planning
from benchapp.plans.planning import CheckedPlan
from benchapp.runs import orchestration
from runners.errors import ValidationError as PlanError


def _check_document(document, team) -> CheckedPlan:
    """planning.check of a plan the API starts, pre-run checks included (as
    the page's), or a 400 naming the key."""
    try:
        return planning.check(document, team)
    except PlanError as exc:
        raise serializers.ValidationError({"document": [str(exc)]}) from exc


def _check_untrusted(document, team) -> CheckedPlan:
    """planning.check of a plan saved through the API (its warnings), or a 400."""
    try:
        return planning.check(document, team)
    except PlanError as exc:
        raise serializers.ValidationError([str(exc)]) from exc


class PlanSerializer(serializers.ModelSerializer):
    document = serializers.JSONField()
    warnings = serializers.SerializerMethodField(
        help_text="What the pre-run checks found likely to fail (only in the answer to a save)."
    )

    class Meta:
        model = Plan
        fields = ("id", "name", "tool", "document", "warnings", "created_at", "updated_at")
        read_only_fields = ("name", "tool", "created_at", "updated_at")

    def get_warnings(self, plan) -> list[str]:
        return list(getattr(plan, "warnings", []))

    def validate_document(self, document):
        self._checked = _check_untrusted(document, self.context["team"])
        return document

    def save(self, **kwargs):
        self.instance = planning.save_plan(
            self.context["team"],
            self._checked,  # the check validate_document made
            user=self.context["request"].user,
            plan=self.instance,
        )
        return self.instance


class RunSerializer(serializers.ModelSerializer):
    """Creating a run starts it: give a plan document, or the id of a stored plan."""

    plan = serializers.PrimaryKeyRelatedField(
        queryset=Plan.objects.none(), required=False, allow_null=True
    )
    document = serializers.JSONField(required=False)
    cells_total = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = (
            "id",
            "name",
            "tool",
            "plan",
            "document",
            "status",
            "origin",
            "concurrency",
            "tags",
            "notes",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "cells_total",
        )
        read_only_fields = (
            "name",
            "tool",
            "status",
            "origin",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        team = self.context.get("team")
        if team is not None:
            self.fields["plan"].queryset = team.plans.all()

    def validate(self, attrs):
        if self.instance is None:
            plan = attrs.get("plan")
            document = attrs.get("document") or (plan.document if plan else None)
            if not document:
                raise serializers.ValidationError(
                    {"document": ["Give a plan document or a plan id."]}
                )
            self._checked = _check_document(document, self.context["team"])
            attrs["document"] = document
        else:  # an existing run: only tags and notes change
            attrs = {k: v for k, v in attrs.items() if k in ("tags", "notes")}
        return attrs

    def get_cells_total(self, obj) -> int:
        total = getattr(obj, "cells_total", None)
        return obj.cells.count() if total is None else total

    def validate_tags(self, tags):
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise serializers.ValidationError("A list of strings.")
        return tags

    def create(self, validated):
        try:
            return orchestration.start_run(
                self.context["team"],
                self._checked,  # the check validate made
                user=self.context["request"].user,
                plan=validated.get("plan"),
                origin="api",
                concurrency=validated.get("concurrency", 0),
                tags=validated.get("tags", ()),
            )
        except PlanError as exc:  # refused at start: a quota, the budget
            raise serializers.ValidationError({"document": [str(exc)]}) from exc


class CellSerializer(serializers.ModelSerializer):
    class Meta:
        model = Cell
        fields = (
            "id",
            "run",
            "index",
            "key",
            "repeat",
            "axes",
            "target_name",
            "status",
            "phase",
            "attempt",
            "started_at",
            "finished_at",
            "command",
            "tool_version",
            "facts",
            "client_bound",
            "error",
            "repeat_stop",
        )
        read_only_fields = fields


class MeasurementSerializer(serializers.Serializer):
    """One measurestore.Value."""

    run = serializers.IntegerField(source="run_id")
    cell = serializers.IntegerField(source="cell_id")
    attempt = serializers.IntegerField()
    iteration = serializers.IntegerField()
    group = serializers.CharField()
    metric = serializers.CharField()
    value = serializers.FloatField()
    unit = serializers.CharField()


class ComparisonSerializer(serializers.ModelSerializer):
    runs = serializers.PrimaryKeyRelatedField(queryset=Run.objects.none(), many=True)
    cells = serializers.ListField(child=serializers.IntegerField(), required=False)
    chart_settings = serializers.JSONField(required=False)
    shared = serializers.SerializerMethodField()

    class Meta:
        model = Comparison
        fields = (
            "id",
            "name",
            "runs",
            "cells",
            "chart_settings",
            "created_at",
            "shared",
            "shared_at",
        )
        read_only_fields = ("created_at", "shared_at")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        team = self.context.get("team")
        if team is not None:
            self.fields["runs"].child_relation.queryset = team.runs.all()

    def get_shared(self, obj) -> bool:
        return bool(obj.share_token_hash)

    def validate_runs(self, value):
        from benchapp.histories import comparisons

        problems = comparisons.run_problems(list(value))
        if problems:
            raise serializers.ValidationError(problems)
        return value

    def validate_chart_settings(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("An object.")
        return value

    def save(self, **kwargs):
        from benchapp.histories import comparisons

        data = self.validated_data
        current = self.instance
        self.instance = comparisons.save_comparison(
            self.context["team"],
            data.get("name", getattr(current, "name", "")),
            data.get("runs", list(current.runs.all()) if current else []),
            data.get("cells", current.cells if current else []),
            user=self.context["request"].user,
            chart_settings=data.get("chart_settings", current.chart_settings if current else {}),
            comparison=current,
        )
        return self.instance


class ShareSerializer(serializers.Serializer):
    url = serializers.CharField(read_only=True)
    token = serializers.CharField(read_only=True)


class TokenSerializer(serializers.Serializer):
    prefix = serializers.CharField(read_only=True, help_text="the key's first characters")
    created = serializers.DateTimeField(read_only=True)


class AlertSerializer(serializers.ModelSerializer):
    """A detected change (docs/history.md); only `verdict` is written, through
    the alert's verdict action."""

    change = serializers.CharField(read_only=True, help_text="worse, better or changed")

    class Meta:
        model = Alert
        fields = (
            "id",
            "plan",
            "cell_key",
            "group",
            "metric",
            "start_run",
            "before_mean",
            "before_low",
            "before_high",
            "after_mean",
            "after_low",
            "after_high",
            "magnitude",
            "pvalue",
            "bad",
            "change",
            "status",
            "verdict",
            "confirm_run",
            "confirm_note",
            "resolved_run",
            "plan_edit",
            "explanation",
            "lead",
            "created_at",
        )
        read_only_fields = fields


class VerdictSerializer(serializers.Serializer):
    verdict = serializers.BooleanField(
        allow_null=True, help_text="true: a true alert; false: a false alert; null: undecided"
    )


class NotifierSerializer(serializers.Serializer):
    """The team's alert notifications; the webhook secret is write-only."""

    webhook_url = serializers.URLField(max_length=500, allow_blank=True, required=False)
    emails = serializers.CharField(
        max_length=2000, allow_blank=True, required=False, help_text="comma-separated"
    )
    only_bad = serializers.BooleanField(required=False, help_text="only changes for the worse")
    secret = serializers.CharField(
        max_length=200, write_only=True, required=False, help_text="signs each POST (HMAC-SHA256)"
    )
    clear_secret = serializers.BooleanField(write_only=True, required=False)
    has_secret = serializers.SerializerMethodField()

    def get_has_secret(self, notifier) -> bool:
        return bool(notifier.webhook_secret)

    def validate(self, data):
        """The page's form rules (benchapp.web.views.notifications.NotifierForm)."""
        from benchapp.web.views.notifications import NotifierForm

        current = self.instance
        values = {
            "webhook_url": data.get("webhook_url", current.webhook_url),
            "emails": data.get("emails", current.emails),
            "only_bad": data.get("only_bad", current.only_bad),
        }
        form = NotifierForm(values)
        if not form.is_valid():
            raise serializers.ValidationError(
                {name: [str(e) for e in errors] for name, errors in form.errors.items()}
            )
        return {**data, **{k: form.cleaned_data[k] for k in values}}

    def update(self, notifier, data):
        from benchapp.histories import notify

        return notify.save_settings(
            notifier,
            webhook_url=data["webhook_url"],
            emails=data["emails"],
            only_bad=data["only_bad"],
            secret=data.get("secret") or None,
            clear_secret=data.get("clear_secret", False),
        )


class ConnectionTestSerializer(serializers.Serializer):
    """A Test connection's answer (benchapp.runs.connection.test_connection)."""

    ok = serializers.BooleanField()
    where = serializers.CharField(help_text="what was reached, and from where")
    error = serializers.CharField(help_text="what is missing, when not ok")
    access = serializers.CharField(help_text="the access check's finding")
    host = serializers.DictField(help_text="host facts: CPUs, memory, kernel, tool versions")
    db = serializers.DictField(help_text="the database's version and key variables")
    disk = serializers.DictField(help_text="free space of a host target's directory")
    host_key = serializers.CharField(
        help_text="an SSH host key not yet accepted (accept it on the page)"
    )
    fingerprint = serializers.CharField()


class TimelineSerializer(serializers.Serializer):
    """A cell's per-second series (benchapp.analysis.timeline.cell_timeline)."""

    sources = serializers.DictField(
        child=serializers.DictField(),
        help_text='{source ("tool", "host", "db", ...): {metric: {"x": [s], "y": [value], '
        '"total": seconds stored[, "low", "high"]}}}; x in seconds from the measure\'s start',
    )
    tool = serializers.ListField(child=serializers.CharField(), help_text="the tool's series")
    defaults = serializers.ListField(child=serializers.CharField(), help_text="shown first")
    phases = serializers.ListField(
        child=serializers.DictField(), help_text='[{"phase", "start", "end"}] on the same axis'
    )


class ScheduleSerializer(serializers.Serializer):
    """A scheduled run of a plan: once `at` a time, or on a `cron` line
    ("minute hour day-of-month month day-of-week", in the site's time zone)."""

    AT, CRON = "at", "cron"
    id = serializers.IntegerField(source="pk", read_only=True)
    plan = serializers.PrimaryKeyRelatedField(queryset=Plan.objects.none())
    kind = serializers.ChoiceField(choices=[AT, CRON], write_only=True)
    at = serializers.DateTimeField(write_only=True, required=False)
    cron = serializers.CharField(write_only=True, required=False, max_length=100)
    when = serializers.CharField(read_only=True, help_text="the schedule in words")
    enabled = serializers.BooleanField(read_only=True)
    last_run_at = serializers.DateTimeField(read_only=True, allow_null=True)
    total_run_count = serializers.IntegerField(read_only=True)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if "team" in self.context:
            self.fields["plan"].queryset = Plan.objects.filter(team=self.context["team"])

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["plan"] = instance.plan.pk
        return data

    def validate(self, attrs):
        """The schedule form's rules (benchapp.web.forms_schedule)."""
        if attrs["kind"] == self.AT:
            if "at" not in attrs:
                raise serializers.ValidationError({"at": ["Give the date and time."]})
            if attrs["at"] <= timezone.now():
                raise serializers.ValidationError({"at": ["This time is in the past."]})
        else:
            try:
                attrs["cron_fields"] = scheduling.parse_cron(attrs.get("cron", ""))
                scheduling.check_interval(attrs["cron_fields"])
            except ValueError as exc:
                raise serializers.ValidationError({"cron": [str(exc)]}) from None
        return attrs

    def create(self, validated_data):
        plan = validated_data["plan"]
        if validated_data["kind"] == self.AT:
            task = scheduling.schedule_at(plan, validated_data["at"])
        else:
            task = scheduling.schedule_cron(plan, validated_data["cron_fields"])
        task.plan, task.when = plan, scheduling.describe(task)
        return task


class ScheduleEnabledSerializer(serializers.Serializer):
    enabled = serializers.BooleanField(help_text="false pauses the schedule, true resumes it")
