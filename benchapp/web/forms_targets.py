"""Forms of the team's credentials and targets (the plan builder is in benchapp.web.forms).

A target's permissions follow the trust model (docs/trust-model.md):
allow_custom_scripts is set by team admins (the views only let admins edit
targets), data_dirs only by staff (operators); for anyone else the field is
read-only and a posted value is refused with a message.
"""

from __future__ import annotations

import re

import yaml
from django import forms

from benchapp.models import Credential, Target
from benchapp.plans import targetrules
from runners import safeyaml
from runners.command import control_character
from runners.providers import PROVIDERS

# ------------------------------------------------------------ secrets


class SecretTextarea(forms.Textarea):
    """A textarea that never renders a value: secrets are write-only."""

    def format_value(self, value):
        return None


class CredentialForm(forms.ModelForm):
    secret = forms.CharField(
        required=False,
        strip=False,
        widget=SecretTextarea(attrs={"rows": 4, "autocomplete": "off", "spellcheck": "false"}),
        help_text="Password, SSH private key (OpenSSH/PEM) or AWS secret key. Write-only: "
        "it is encrypted at rest and never shown again. Leave empty to keep the "
        "current one.",
    )

    host_patterns = forms.CharField(
        required=False,
        label="Also bound to hosts",
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
        help_text="One per line: host, host:port (wildcards * and ? in the host) or "
        "unix:/path/to/socket. Plans may send this secret there too.",
    )

    class Meta:
        model = Credential
        fields = ("name", "kind", "username", "bound_targets")
        labels = {"username": "User / access key id", "bound_targets": "Also bound to targets"}
        help_texts = {
            "name": "Plans refer to it by this name (credential: NAME).",
            "username": "Optional; the AWS access key id for AWS keys.",
            "bound_targets": "The secret is sent only to the stored targets that use it as "
            "their credential or SSH credential, and to the targets and hosts chosen here.",
        }
        widgets = {"bound_targets": forms.CheckboxSelectMultiple}

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.team = team
        self.fields["bound_targets"].queryset = Target.objects.filter(team=team).order_by("name")
        if self.instance.pk and not self.is_bound:
            self.initial["host_patterns"] = "\n".join(self.instance.host_patterns or [])
        if not self.instance.pk:
            self.fields["secret"].required = True
            self.fields["secret"].help_text = self.fields["secret"].help_text.rsplit(" Leave", 1)[0]

    def clean(self):
        cleaned = super().clean()
        problem = secret_problem(cleaned.get("secret") or "", cleaned.get("kind", ""))
        if problem:
            self.add_error("secret", problem)
        return cleaned

    def clean_host_patterns(self):
        from benchapp.accounts.credbinding import check_pattern

        lines = [line.strip() for line in self.cleaned_data.get("host_patterns", "").splitlines()]
        try:
            return [check_pattern(line) for line in lines if line]
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_name(self):
        name = self.cleaned_data["name"]
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", name):
            raise forms.ValidationError("Use letters, digits, '.', '_' and '-' only.")
        taken = Credential.objects.filter(team=self.team, name=name).exclude(pk=self.instance.pk)
        if taken.exists():
            raise forms.ValidationError("This team already has a credential with this name.")
        return name

    def save(self, commit=True):
        cred = super().save(commit=False)
        cred.team = self.team
        cred.host_patterns = self.cleaned_data.get("host_patterns") or []
        if self.cleaned_data.get("secret"):
            cred.set_secret(self.cleaned_data["secret"])
        if commit:
            cred.save()
            self.save_m2m()
        return cred


def secret_problem(secret: str, kind: str = "") -> str:
    """Why a secret may not be stored ("" when it may).

    A secret is written into client option files ([client] files, pgpass):
    a line break or another control character would start an option of its
    own there (a plugin directory, a file to load), so none is accepted. An
    SSH private key is lines by nature: its line breaks (and only those) pass.
    """
    key = kind == Credential.SSH_KEY and _is_private_key(secret)
    body = secret.replace("\r\n", "\n") if key else secret
    allowed = "\n" if key else ""
    ch = control_character(body.replace(allowed, "") if allowed else body)
    if ch is not None:
        return (
            f"The secret contains a control character ({_char_name(ch)}); passwords "
            "and keys may not: they would add options to the client's option file."
        )
    return ""


def _is_private_key(secret: str) -> bool:
    text = secret.strip()
    return text.startswith("-----BEGIN") and "PRIVATE KEY-----" in text


def _char_name(ch: str) -> str:
    return {"\n": "a line break", "\r": "a carriage return", "\x00": "NUL", "\t": "a tab"}.get(
        ch, f"U+{ord(ch):04X}"
    )


# ------------------------------------------------------------ targets


class TargetForm(forms.ModelForm):
    provision = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        help_text="Optional provisioning spec as YAML: {provider: NAME, ...} with one of "
        f"the providers ({', '.join(PROVIDERS)}). Leave empty for an existing system.",
    )
    nodes = forms.CharField(
        required=False, help_text="Cluster nodes behind `host`, comma-separated."
    )
    cloud_instance = forms.CharField(
        required=False,
        label="Cloud instance",
        widget=forms.Textarea(attrs={"rows": 2, "spellcheck": "false"}),
        help_text="Optional, as YAML: the existing managed instance this target is, to read "
        "its cloud monitoring over each cell, e.g. {provider: NAME, <its id field>: ID, "
        "region: REGION} and the provider's credential field (docs/telemetry.md).",
    )
    allow_custom_scripts = forms.BooleanField(
        required=False,
        label="Allow custom scripts",
        help_text="Over SSH only: Lua scripts, pgbench \\shell, LOAD DATA LOCAL, any file "
        "path, data-directory snapshots and service stop/start on this host. Never "
        "on this server. Team admins only.",
    )
    data_dirs = forms.CharField(
        required=False,
        label="Data directories",
        help_text="Absolute directories on this server where tools may write, comma-separated. "
        "Operators (staff) only.",
    )

    PERMISSION_FIELDS = ("allow_custom_scripts", "data_dirs")

    class Meta:
        model = Target
        fields = (
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
            "price_per_hour",
            "notes",
            "telemetry",
            "link_mbit",
        )
        labels = {
            "credential": "Database password",
            "ssh_credential": "SSH key or password",
            "ssh_host": "SSH host",
            "ssh_port": "SSH port",
            "ssh_user": "SSH user",
            "via": "Reached via",
            "price_per_hour": "Price per hour",
            "link_mbit": "Link speed (Mb/s)",
        }
        help_texts = {
            "name": "Plans refer to it by this name.",
            "host": "Address of the database or machine.",
            "directory": "Host targets: the directory the tools work in (absolute). Over SSH a path "
            "on that host; on this server one of the target's data directories "
            "(an operator allows them).",
            "credential": "Leave empty to connect without a password.",
            "ssh_host": "Fill in to run the tool or read host facts over SSH.",
            "via": "e.g. haproxy, when host is a balancer in front of the nodes.",
            "price_per_hour": "For price-performance and cost estimates.",
            "telemetry": "Sample this target's host and database once a second while a cell "
            "measures (docs/telemetry.md); plans may still turn it off.",
            "link_mbit": "The network speed of the target's host, if its interfaces report "
            "none or not the real one (a virtual NIC, a shaped or cloud link): the "
            "network-bound verdict measures traffic against it.",
        }
        widgets = {"notes": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, team, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.team = team
        creds = Credential.objects.filter(team=team).order_by("name")
        self.fields["credential"].queryset = creds
        self.fields["ssh_credential"].queryset = creds
        self.initial["allow_custom_scripts"] = self.instance.allow_custom_scripts
        self.initial["data_dirs"] = ", ".join(self.instance.data_dirs)
        if self.instance.pk:
            self.initial["provision"] = (
                _yaml(self.instance.provision) if self.instance.provision else ""
            )
            self.initial["nodes"] = ", ".join(self.instance.nodes)
            self.initial["cloud_instance"] = (
                _yaml(self.instance.cloud_instance) if self.instance.cloud_instance else ""
            )
        self.may = targetrules.may_change(user, team)
        for name in self.PERMISSION_FIELDS:
            if not self.may[name]:
                self.fields[name].widget.attrs.update(readonly=True, disabled=True)

    def clean_allow_custom_scripts(self):
        value = self.cleaned_data["allow_custom_scripts"]
        if "allow_custom_scripts" not in self.data and not self.may["allow_custom_scripts"]:
            value = self.instance.allow_custom_scripts  # a disabled box is not posted
        return value

    def clean_data_dirs(self):
        if "data_dirs" not in self.data:
            return list(self.instance.data_dirs)  # not posted: unchanged
        return [d.strip() for d in self.cleaned_data["data_dirs"].split(",") if d.strip()]

    def clean_provision(self):
        return _parse_yaml(self.cleaned_data["provision"], "provision") or {}

    def clean_cloud_instance(self):
        value = _parse_yaml(self.cleaned_data["cloud_instance"], "cloud_instance") or {}
        if not isinstance(value, dict):
            raise forms.ValidationError("Expected a mapping such as {provider: NAME, ...}.")
        return value

    def clean_nodes(self):
        return [n.strip() for n in self.cleaned_data["nodes"].split(",") if n.strip()]

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        # The rules are the API's too (benchapp.plans.targetrules), on the typed row.
        for field, message in targetrules.check(self.trial(data), self.instance, self.may).items():
            self.add_error(field if field in self.fields else None, message)
        return data

    def trial(self, data) -> Target:
        """The target these cleaned values describe (not saved)."""
        trial = Target(team=self.team, pk=self.instance.pk)
        for name in (
            *self.Meta.fields,
            "provision",
            "nodes",
            "cloud_instance",
            *self.PERMISSION_FIELDS,
        ):
            if name in data:
                setattr(trial, name, data[name])
        return trial

    def save(self, commit=True):
        target = super().save(commit=False)
        target.team = self.team
        target.provision = self.cleaned_data["provision"]
        target.nodes = self.cleaned_data["nodes"]
        target.cloud_instance = self.cleaned_data["cloud_instance"]
        target.allow_custom_scripts = self.cleaned_data["allow_custom_scripts"]
        target.data_dirs = self.cleaned_data["data_dirs"]
        if commit:
            target.save()
        return target


def _yaml(data) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=None)


def _parse_yaml(text: str, field: str):
    if not text or not text.strip():
        return None
    try:
        return safeyaml.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark else ""
        raise forms.ValidationError(
            f"This is not valid YAML{where}: {getattr(exc, 'problem', exc)}"
        ) from None
