"""REST serializers of credentials and targets (see benchapp/web/serializers.py).
Validation is the pages' own: targets by benchapp.plans.targetrules (the target
form's rules), credentials through benchapp.web.forms_targets. Credentials are
write-only: the secret is accepted, never returned.
"""

from rest_framework import serializers

from benchapp.models import Credential, Target
from benchapp.plans import targetrules
from benchapp.web import forms_targets


def _form_errors(form) -> serializers.ValidationError:
    return serializers.ValidationError(
        {("non_field_errors" if k == "__all__" else k): v for k, v in form.errors.items()}
    )


class TeamTargetName(serializers.SlugRelatedField):
    """A stored target referred to by name, within the request's team."""

    def get_queryset(self):
        return Target.objects.filter(team=self.context["team"])


class CredentialSerializer(serializers.ModelSerializer):
    """A credential; team admins bind it to targets (names) and host patterns
    (docs/trust-model.md): where plans may send it besides the targets using it."""

    secret = serializers.CharField(
        write_only=True, required=False, trim_whitespace=False, style={"input_type": "password"}
    )
    bound_targets = TeamTargetName(slug_field="name", many=True, required=False)
    host_patterns = serializers.ListField(child=serializers.CharField(), required=False)

    class Meta:
        model = Credential
        fields = (
            "id",
            "name",
            "kind",
            "username",
            "secret",
            "bound_targets",
            "host_patterns",
            "fingerprint",
            "updated_at",
        )
        read_only_fields = ("fingerprint", "updated_at")

    def validate(self, attrs):
        instance = self.instance
        bound = attrs.get("bound_targets", list(instance.bound_targets.all()) if instance else [])
        data = {
            "name": attrs.get("name", getattr(instance, "name", "")),
            "kind": attrs.get("kind", getattr(instance, "kind", "")),
            "username": attrs.get("username", getattr(instance, "username", "")),
            "secret": attrs.get("secret", ""),
            "bound_targets": [t.pk for t in bound],
            "host_patterns": "\n".join(
                attrs.get("host_patterns", getattr(instance, "host_patterns", None) or [])
            ),
        }
        form = forms_targets.CredentialForm(data, instance=self.instance, team=self.context["team"])
        if not form.is_valid():
            raise _form_errors(form)
        attrs["_form"] = form
        return attrs

    def save(self, **kwargs):
        self.instance = self.validated_data["_form"].save()
        return self.instance


class CredentialName(serializers.SlugRelatedField):
    """A credential referred to by name, within the request's team."""

    def get_queryset(self):
        return Credential.objects.filter(team=self.context["team"])


class TargetSerializer(serializers.ModelSerializer):
    credential = CredentialName(slug_field="name", required=False, allow_null=True)
    ssh_credential = CredentialName(slug_field="name", required=False, allow_null=True)
    provision = serializers.JSONField(required=False)
    nodes = serializers.ListField(child=serializers.CharField(), required=False)
    data_dirs = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Where tools may write on the worker host; operators (staff) only.",
    )
    allow_custom_scripts = serializers.BooleanField(
        required=False, help_text="Code-running features over SSH on this target; team admins only."
    )

    class Meta:
        model = Target
        fields = (
            "id",
            "name",
            "kind",
            "host",
            "port",
            "user",
            "database",
            "directory",
            "credential",
            "ssh_host",
            "ssh_port",
            "ssh_user",
            "ssh_credential",
            "via",
            "nodes",
            "provision",
            "price_per_hour",
            "notes",
            "allow_custom_scripts",
            "data_dirs",
            "telemetry",
            "link_mbit",
            "cloud_instance",
            "created_at",
        )
        read_only_fields = ("created_at",)

    def validate(self, attrs):
        """The form's rules (benchapp.plans.targetrules) on the typed values: the
        same fields named with the same messages as the target page."""
        team = self.context["team"]
        current = self.instance or Target(team=team)
        target = Target.objects.get(pk=current.pk) if current.pk else Target(team=team)
        for name, value in attrs.items():
            setattr(target, name, value)
        target.provision = {} if target.provision is None else target.provision
        target.nodes = target.nodes or []
        target.cloud_instance = {} if target.cloud_instance is None else target.cloud_instance
        may = targetrules.may_change(self.context["request"].user, team)
        problems = targetrules.check(target, current, may)
        if problems:
            raise serializers.ValidationError(
                {(f if f in self.fields else "non_field_errors"): [m] for f, m in problems.items()}
            )
        return {"_target": target}

    def save(self, **kwargs):
        self.instance = self.validated_data["_target"]
        self.instance.save()
        return self.instance
