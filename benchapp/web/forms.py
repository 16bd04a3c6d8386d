"""Forms of the web UI: they validate and convert, services do the rest.

The plan builder (PlanForm) is generated from the tools' allow-lists
(runners.tools.get_tool(name).PARAMS) and produces one plan document, the
single source of truth, validated by planning.validate_document. Its
errors (ValidationError.param, a key path such as "axes.load_type[1]") are
mapped back onto the field that holds that key.
"""

from __future__ import annotations

import re

from django import forms

from benchapp.plans import planning
from benchapp.plans.planning import check
from benchapp.plans.templates_plans import apply_target_directories
from benchapp.web.forms_targets import _parse_yaml, _yaml
from benchapp.web.forms_templates import target_where
from benchapp.web.forms_values import (
    bool_or_raw,
    named_pairs,
    scalar,
    shown,
    shown_pairs,
    split_commas,
    typed_value,
)
from runners import safeyaml
from runners.errors import ValidationError
from runners.plan import ORDERS
from runners.planspec import canonical
from runners.tools import DEFAULT_TOOL, MEASURED_TOOLS, get_tool

SPECIAL_AXES = ("target", "stress.cpu", "stress.load", "volumes", "client_hosts")
# Keys the structured form edits itself; everything else lives in `extra`.
# `repeat: {min, max, until_cv, metric}`: min is the builder's `repeat`, KEY its repeat_KEY.
ADAPTIVE_KEYS = ("until_cv", "max", "metric")
STRUCTURED_KEYS = (
    "name",
    "tool",
    "targets",
    "params",
    "axes",
    "overrides",
    "repeat",
    "order",
    "seed",
)
BLANK_ROWS = 1  # empty axis/override rows offered after the filled ones


# ------------------------------------------------------------ plan builder


def param_field_name(tool: str, name: str) -> str:
    return f"param-{tool}-{name}"


def _param_field(param) -> forms.Field:
    """A form field for one runners.params.Param: typed text in, value out."""
    field = _param_widget_field(param)
    field.label = param.name  # the name a plan file uses, so form and YAML read alike
    return field


def _param_widget_field(param) -> forms.Field:
    help_text = f"{param.help}. Expected: {param.describe()}" if param.help else param.describe()
    default = "" if param.default is None else shown(param.default)
    if param.kind == "bool":
        label = f"default ({default})" if default else "default"
        return forms.ChoiceField(
            required=False,
            help_text=help_text,
            choices=[("", label), ("true", "yes"), ("false", "no")],
        )
    if param.kind == "choice":
        label = f"default ({default})" if default else "default"
        return forms.ChoiceField(
            required=False,
            help_text=help_text,
            choices=[("", label)] + [(c, c) for c in param.choices],
        )
    if param.kind == "sql":
        return forms.CharField(
            required=False,
            help_text=help_text,
            strip=False,
            widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
        )
    attrs = {"placeholder": default, "autocomplete": "off"}
    if param.many:
        help_text += " (a comma-separated list runs them all in one cell)"
    return forms.CharField(required=False, help_text=help_text, widget=forms.TextInput(attrs))


class PlanForm(forms.Form):
    """The structured plan builder. `document` is set when the form is valid."""

    name = forms.CharField(max_length=200, help_text="Shown on runs and results.")
    tool = forms.ChoiceField(choices=[(t, t) for t in MEASURED_TOOLS])
    targets = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Stored targets of this team. Several targets need a `target` axis.",
    )
    repeat = forms.IntegerField(
        min_value=1,
        max_value=1000,
        initial=1,
        label="Repeats",
        help_text="Runs of every combination (with a CV target: the fewest, at least 2).",
    )
    repeat_until_cv = forms.FloatField(
        required=False,
        label="Until CV ≤",
        help_text="Adaptive repeats: e.g. 0.03 repeats a combination until the coefficient "
        "of variation of the metric over its repeats is at most 3%. Empty: a "
        "fixed count.",
    )
    repeat_max = forms.IntegerField(
        required=False,
        min_value=2,
        max_value=100,
        label="Up to",
        help_text="With a CV target: the most repeats.",
    )
    repeat_metric = forms.CharField(
        required=False,
        max_length=100,
        label="Of metric",
        help_text="With a CV target: a metric of the tool, e.g. tps.",
    )
    order = forms.ChoiceField(
        choices=[(o, o) for o in ORDERS],
        initial="sequential",
        help_text="sequential: repeats together; interleaved: round "
        "by round; shuffled: random, reproducible with the seed.",
    )
    seed = forms.IntegerField(required=False, min_value=0, help_text="For shuffled order.")
    extra = forms.CharField(
        required=False,
        label="Other plan keys (YAML)",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="client, prepare, warmup, stress, timeout, sysbench_version, inline or "
        "provisioned targets… as in a plan file.",
    )

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.team = team
        self.document = None
        self.checked = None  # planning.check of the document, when valid
        self.warnings = []  # likely failures found by the pre-run checks (benchapp.plans.prerun)
        self.stored = {
            t.name: t for t in team.targets.select_related("credential", "ssh_credential")
        }
        self.fields["targets"].choices = [
            (t.name, f"{t.name} — {t.get_kind_display()} {target_where(t)}")
            for t in self.stored.values()
        ]
        for tool in MEASURED_TOOLS:
            for name, param in get_tool(tool).PARAMS.items():
                self.fields[param_field_name(tool, name)] = _param_field(param)
        self.axis_count = self._rows("axis", self.initial.get("axes", []))
        self.override_count = self._rows("override", self.initial.get("overrides", []))
        for i in range(self.axis_count):
            self.fields[f"axis-{i}-name"] = forms.CharField(required=False, label="Axis")
            self.fields[f"axis-{i}-values"] = forms.CharField(required=False, label="Values")
        for i in range(self.override_count):
            self.fields[f"override-{i}-when"] = forms.CharField(required=False, label="When")
            self.fields[f"override-{i}-set"] = forms.CharField(required=False, label="Set")
        for i, (name, values) in enumerate(self.initial.get("axes", [])):
            self.initial[f"axis-{i}-name"], self.initial[f"axis-{i}-values"] = name, values
        for i, (when, sets) in enumerate(self.initial.get("overrides", [])):
            self.initial[f"override-{i}-when"], self.initial[f"override-{i}-set"] = when, sets

    def _rows(self, prefix: str, initial: list) -> int:
        """Rows present in the POST (JS may add some), else the initial ones + blanks."""
        if self.is_bound:
            found = [
                int(m.group(1))
                for key in self.data
                if (m := re.fullmatch(rf"{prefix}-(\d+)-\w+", key)) and int(m.group(1)) < 50
            ]
            return max(found, default=-1) + 1
        return len(initial) + BLANK_ROWS

    # -- rendering helpers (templates) --

    def tool_params(self):
        """[(tool, fields with a value, the other fields)] for the per-tool fieldsets:
        the parameters in use first, the rest of the allow-list folded away."""
        result = []
        for tool in MEASURED_TOOLS:
            fields = [self[param_field_name(tool, n)] for n in get_tool(tool).PARAMS]
            used = [f for f in fields if f.value() not in (None, "")]
            result.append((tool, used, [f for f in fields if f not in used]))
        return result

    def axis_rows(self):
        return [(self[f"axis-{i}-name"], self[f"axis-{i}-values"]) for i in range(self.axis_count)]

    def override_rows(self):
        return [
            (self[f"override-{i}-when"], self[f"override-{i}-set"])
            for i in range(self.override_count)
        ]

    def axis_names(self):
        names = list(SPECIAL_AXES)
        for tool in MEASURED_TOOLS:
            module = get_tool(tool)
            names += [
                n for n in (*module.PARAMS, *getattr(module, "ALIASES", {})) if n not in names
            ]
        return names

    # -- validation --

    def clean_extra(self):
        extra = _parse_yaml(self.cleaned_data["extra"], "extra") or {}
        if not isinstance(extra, dict):
            raise forms.ValidationError("Expected a mapping of plan keys, e.g. {timeout: 60}.")
        owned = sorted(set(extra) & (set(STRUCTURED_KEYS) - {"targets"}))
        if owned:
            raise forms.ValidationError(f"Set {', '.join(owned)} with the form fields above.")
        return extra

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            self.document = self._document(data)
        except ValidationError as exc:
            self._add_plan_error(exc)
            return data
        try:
            self.checked = check(self.document, self.team)
            self.spec, self.warnings = self.checked.spec, self.checked.warnings
        except ValidationError as exc:
            self._add_plan_error(exc)
            self.document = None
        return data

    def _document(self, data) -> dict:
        tool = data["tool"]
        extra = dict(data["extra"])
        doc = {"name": data["name"], "tool": tool}
        targets = [{"name": n} for n in data["targets"]] + list(extra.pop("targets", []) or [])
        if targets:
            doc["targets"] = targets
        params = {}
        for name, param in get_tool(tool).PARAMS.items():
            raw = data.get(param_field_name(tool, name), "")
            if raw not in ("", None):
                params[name] = typed_value(raw, param)
        if params:
            doc["params"] = params
        axes = self._axes(data)
        if axes:
            doc["axes"] = axes
        overrides = self._overrides(data)
        if overrides:
            doc["overrides"] = overrides
        adaptive = {key: data.get(f"repeat_{key}") for key in ADAPTIVE_KEYS}
        adaptive = {key: value for key, value in adaptive.items() if value not in (None, "")}
        if adaptive:
            doc["repeat"] = {"min": data["repeat"], **adaptive}
        elif data["repeat"] != 1:
            doc["repeat"] = data["repeat"]
        if data["order"] != "sequential":
            doc["order"] = data["order"]
        if data.get("seed") is not None:
            doc["seed"] = data["seed"]
        doc.update(extra)
        apply_target_directories(doc, {n: self.stored[n] for n in data["targets"]})
        return doc

    def _axes(self, data) -> dict:
        axes = {}
        for i in range(self.axis_count):
            name = data.get(f"axis-{i}-name", "").strip()
            values = data.get(f"axis-{i}-values", "").strip()
            if not name and not values:
                continue
            if not name or not values:
                field = f"axis-{i}-values" if name else f"axis-{i}-name"
                raise ValidationError(field, "give both an axis and its comma-separated values")
            if name in axes:
                raise ValidationError(f"axis-{i}-name", f"{name} is already an axis")
            axes[name] = [scalar(v) for v in split_commas(values)]
        return axes

    def _overrides(self, data) -> list:
        overrides = []
        for i in range(self.override_count):
            when = data.get(f"override-{i}-when", "").strip()
            sets = data.get(f"override-{i}-set", "").strip()
            if not when and not sets:
                continue
            overrides.append(
                {
                    "when": named_pairs(when, f"override-{i}-when"),
                    "set": named_pairs(sets, f"override-{i}-set"),
                }
            )
        return overrides

    def _add_plan_error(self, exc: ValidationError) -> None:
        field = self.field_for(exc.param)
        message = exc.message if field else str(exc)
        self.add_error(field, message)

    def field_for(self, path: str) -> str | None:
        """The form field that holds a plan key path (ValidationError.param)."""
        if path in self.fields:
            return path
        tool = self.data.get("tool") if self.is_bound else None
        head = re.split(r"[.\[]", path, maxsplit=1)[0]
        if head == "params" and tool in MEASURED_TOOLS:
            name = canonical(get_tool(tool), path.split(".")[1].split("[")[0])
            field = param_field_name(tool, name)
            return field if field in self.fields else None
        if head == "axes" and "." in path:
            axis = path.split(".", 1)[1].split("[")[0]
            for i in range(self.axis_count):
                if self.data.get(f"axis-{i}-name", "").strip() == axis:
                    return f"axis-{i}-values"
        if m := re.match(r"overrides\[(\d+)\]\.(when|set)", path):
            return self._override_field(int(m.group(1)), m.group(2))
        if m := re.fullmatch(r"repeat\.(max|until_cv|metric)", path):
            return f"repeat_{m.group(1)}"
        if head in ("name", "tool", "repeat", "order", "seed"):
            return head
        if head == "targets":
            return "targets"
        if head in (self.cleaned_data.get("extra") or {}):
            return "extra"
        return None

    def _override_field(self, index: int, part: str) -> str | None:
        """The nth non-empty override row's field."""
        filled = [
            i
            for i in range(self.override_count)
            if self.data.get(f"override-{i}-when", "").strip()
            or self.data.get(f"override-{i}-set", "").strip()
        ]
        return f"override-{filled[index]}-{part}" if index < len(filled) else None


def initial_from_document(document: dict, team) -> dict:
    """The builder's initial data for a plan document (edit, template, import).

    Targets that are (or resolve exactly to) a stored Target become ticked
    boxes; everything the structured fields do not hold goes to `extra`.
    """
    stored = {
        t.name: planning.target_document(t)
        for t in team.targets.select_related("credential", "ssh_credential")
    }
    tool_name = document.get("tool", DEFAULT_TOOL)
    tool = get_tool(tool_name) if tool_name in MEASURED_TOOLS else None
    picked, inline = [], []
    for entry in document.get("targets") or []:
        name = entry if isinstance(entry, str) else entry.get("name")
        bare = isinstance(entry, str) or set(entry) == {"name"}
        if name in stored and (bare or entry == stored[name]):
            picked.append(name)
        else:
            inline.append(entry)
    initial = {
        "name": document.get("name", ""),
        "tool": tool_name,
        "targets": picked,
        "repeat": document.get("repeat", 1),
        "order": document.get("order", "sequential"),
        "seed": document.get("seed"),
    }
    if isinstance(initial["repeat"], dict):
        adaptive = initial["repeat"]
        initial["repeat"] = adaptive.get("min")
        initial.update({f"repeat_{key}": adaptive.get(key) for key in ADAPTIVE_KEYS})
    for name, value in (document.get("params") or {}).items():
        key = canonical(tool, name) if tool else name
        param = tool.PARAMS.get(key) if tool else None
        if param is not None and param.kind == "bool":
            value = bool_or_raw(param, value)  # `direct: 1` is the choice "true"
        initial[param_field_name(tool_name, key)] = shown(value)
    initial["axes"] = [
        (name, ", ".join(shown(v) for v in values))
        for name, values in (document.get("axes") or {}).items()
    ]
    initial["overrides"] = [
        (shown_pairs(o.get("when", {})), shown_pairs(o.get("set", {})))
        for o in document.get("overrides") or []
    ]
    extra = {k: v for k, v in document.items() if k not in STRUCTURED_KEYS}
    if inline:
        extra = {"targets": inline, **extra}
    initial["extra"] = _yaml(extra) if extra else ""
    return initial


class PlanYamlForm(forms.Form):
    """The advanced mode and import: a whole plan file, pasted or uploaded."""

    text = forms.CharField(
        required=False,
        label="Plan YAML",
        widget=forms.Textarea(attrs={"rows": 18, "spellcheck": "false"}),
    )
    file = forms.FileField(required=False, label="…or upload a plan file (.yaml, .json)")

    def __init__(self, *args, team, **kwargs):
        super().__init__(*args, **kwargs)
        self.team = team
        self.document = None
        self.checked = None  # planning.check of the document, when valid
        self.warnings = []  # likely failures found by the pre-run checks (benchapp.plans.prerun)

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        if upload and upload.size > safeyaml.MAX_DOCUMENT_BYTES:
            # The cap every plan text has (runners/safeyaml.py), before reading the file.
            raise forms.ValidationError(
                f"The plan file is {upload.size} bytes; the limit is "
                f"{safeyaml.MAX_DOCUMENT_BYTES} bytes."
            )
        text = upload.read().decode("utf-8", "replace") if upload else data.get("text")
        if not text or not text.strip():
            raise forms.ValidationError("Paste a plan or choose a file.")
        document = _parse_yaml(text, "text")
        if not isinstance(document, dict):
            raise forms.ValidationError("A plan is a mapping with name, tool, targets, ...")
        try:
            self.checked = check(document, self.team)
            self.warnings = self.checked.warnings
        except ValidationError as exc:
            raise forms.ValidationError(str(exc)) from None
        self.document = document
        return data
