"""The scenario-template form: which of the team's targets (or the
scenario's own provisioning spec) plays each role, and a preset."""

from __future__ import annotations

from django import forms

from benchapp.models import Credential, Target
from benchapp.plans import planning
from benchapp.plans.templates_plans import PRESETS, PROVISION, bind
from runners.errors import ValidationError
from runners.providers import get_provider


class TemplateForm(forms.Form):
    """Choosing a scenario template: which target (or the scenario's own
    provisioning spec) plays each role, and a preset. `document` is the
    bound plan when the form is valid (templates_plans.bind)."""

    preset = forms.ChoiceField(widget=forms.RadioSelect, initial="quick")

    def __init__(self, *args, team, template, **kwargs):
        super().__init__(*args, **kwargs)
        self.team, self.template, self.document = team, template, None
        self.fields["preset"].choices = [(p, PRESETS.get(p, p)) for p in template["presets"]]
        targets = list(team.targets.order_by("name"))
        self.targets = {str(t.pk): t for t in targets}
        for role in template["roles"]:
            choices = [(str(t.pk), _target_label(t)) for t in targets if t.kind == role["kind"]]
            if role["provision"]:
                choices.append((PROVISION, "Provision it: " + _provision_label(role["provision"])))
            self.fields[f"role-{role['name']}"] = forms.ChoiceField(
                label=role["label"][:1].upper() + role["label"][1:],
                choices=[("", "— choose —"), *choices],
                help_text=f"A {dict(Target.KINDS)[role['kind']]} target. Plays "
                f"“{role['name']}” in the scenario.",
            )
        if any(role["provision"] for role in template["roles"]):
            # What a provisioned role is billed to: a team credential of the
            # cloud's account, never the worker's own identity (docs/trust-model.md).
            accounts = team.credentials.filter(kind__in=Credential.ACCOUNT_KINDS).order_by("name")
            self.fields["account"] = forms.ChoiceField(
                label="Cloud account for provisioned roles",
                required=False,
                choices=[("", "— choose —"), *((c.name, c.name) for c in accounts)],
                help_text="A team credential of the cloud's account: what provisioning is "
                "billed to and signed with.",
            )
        self.missing_kinds = sorted(
            {
                dict(Target.KINDS)[r["kind"]]
                for r in template["roles"]
                if len(self.fields[f"role-{r['name']}"].choices) == 1
            }
        )

    def role_fields(self):
        return [self[f"role-{r['name']}"] for r in self.template["roles"]]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        choices = {}
        for role in self.template["roles"]:
            value = data[f"role-{role['name']}"]
            choices[role["name"]] = PROVISION if value == PROVISION else self.targets[value]
        document = bind(self.template, data["preset"], choices)
        if PROVISION in choices.values():
            _name_account(document, data.get("account"))
        try:
            planning.validate_document(document, self.team)
        except ValidationError as exc:
            raise forms.ValidationError(f"With these targets the plan is refused: {exc}") from None
        self.document = document
        return data


def _name_account(document: dict, account: str | None) -> None:
    """Name the chosen cloud account in each provisioning spec of document."""
    if not account:
        raise forms.ValidationError(
            "Choose the cloud account provisioned roles are billed to (a team credential "
            "of the cloud's account): a plan never uses the worker's own identity."
        )
    client = document.get("client")
    holders = [t for t in document.get("targets", []) if isinstance(t, dict)]
    holders += [c for c in (client if isinstance(client, list) else [client]) if c]
    for holder in holders:
        spec = holder.get("provision")
        if isinstance(spec, dict) and spec.get("provider"):
            field = get_provider(spec["provider"]).CREDENTIAL_FIELD
            if field and not spec.get(field):  # a copy: the template's own spec stays as it is
                holder["provision"] = {**spec, field: account}


def _target_label(target: Target) -> str:
    return f"{target.name} — {target_where(target)}"


def target_where(target: Target) -> str:
    """'127.0.0.1:3306/test', 'this server /srv/fio', '(provisioned)'."""
    if target.provision and not target.host:
        return "(provisioned)"
    where = target.host or target.ssh_host or "this server"
    if target.port:
        where += f":{target.port}"
    if target.database:
        where += f"/{target.database}"
    if target.directory:
        where += f" {target.directory}"
    return where


def _provision_label(spec: dict) -> str:
    size = spec.get("instance_class") or spec.get("instance_type") or ""
    return " ".join(str(v) for v in (spec.get("provider"), spec.get("engine"), size) if v)
