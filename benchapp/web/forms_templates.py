"""The scenario-template form: which of the team's targets (or the
scenario's own provisioning spec) plays each role, and a preset."""

from __future__ import annotations

from django import forms

from benchapp.models import Target
from benchapp.plans import planning
from benchapp.plans.templates_plans import PRESETS, PROVISION, bind
from runners.errors import ValidationError


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
        try:
            planning.validate_document(document, self.team)
        except ValidationError as exc:
            raise forms.ValidationError(f"With these targets the plan is refused: {exc}") from None
        self.document = document
        return data


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
