"""The archive: search runs, tags and notes, import, exports."""

import json

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from benchapp.accounts.access import MEMBER, current_team, get_comparison, get_run, role_required
from benchapp.accounts.tokens import token_or_login_required
from benchapp.histories import archive as service
from benchapp.histories import comparisons, formats, pkb_import
from benchapp.models import Run
from benchapp.store import measurestore
from benchapp.web import uploads
from benchapp.web.middleware import safe_next
from runners import verdict
from runners.errors import ParseError
from runners.tools import MEASURED_TOOLS

PAGE = 100


def _pasted(text: str) -> str:
    """A pasted output with the final newline a copy usually drops: a tool's
    output ends with one, and the parsers read a last line that stops in a
    number with no newline as cut short (a file upload is kept byte for byte)."""
    return text if not text or text.endswith("\n") else text + "\n"


class SearchForm(forms.Form):
    q = forms.CharField(required=False, label="Text")
    tool = forms.ChoiceField(
        required=False, choices=[("", "any")] + [(t, t) for t in MEASURED_TOOLS]
    )
    target = forms.CharField(required=False)
    tag = forms.CharField(required=False)
    status = forms.ChoiceField(required=False, choices=[("", "any")] + Run.STATUSES)
    limit = forms.ChoiceField(
        required=False,
        label="What limited a cell",
        choices=[("", "any")] + [(code, code) for code in verdict.CODES],
    )
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))

    def __init__(self, team, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.team = team

    def results(self):
        data = self.cleaned_data if self.is_valid() else {}
        return service.search_runs(
            self.team,
            tool=data.get("tool", ""),
            target=data.get("target", ""),
            tag=data.get("tag", ""),
            status=data.get("status", ""),
            text=data.get("q", ""),
            since=data.get("since"),
            until=data.get("until"),
            limit=data.get("limit", ""),
        )


class AnnotateForm(forms.Form):
    tags = forms.CharField(required=False, max_length=500)
    notes = forms.CharField(required=False, widget=forms.Textarea)

    def clean_tags(self):
        return service.parse_tags(self.cleaned_data["tags"])


PKB = "pkb"


class ImportForm(forms.Form):
    tool = forms.ChoiceField(
        choices=[(t, t) for t in MEASURED_TOOLS]
        + [(PKB, "PerfKitBenchmarker samples (JSON lines)")],
        label="Tool or format",
    )
    name = forms.CharField(required=False, max_length=200, help_text="name of a new run")
    run = forms.ModelChoiceField(
        queryset=None, required=False, help_text="or add this output to an earlier import"
    )
    axes = forms.CharField(
        required=False, help_text="axis values, e.g. target=micro, load_type=read"
    )
    output = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 10}))
    file = forms.FileField(required=False)

    def __init__(self, team, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["run"].queryset = team.runs.filter(origin="import")

    def clean_axes(self):
        try:
            return service.parse_axes(self.cleaned_data["axes"])
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc

    def clean(self):
        data = super().clean()
        upload = data.get("file")
        try:
            text = uploads.read_text(upload) if upload else _pasted(data.get("output", ""))
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from None
        if not text.strip():
            raise forms.ValidationError("Paste an output or upload a file.")
        if data.get("tool") == PKB and data.get("run"):
            self.add_error("run", "PKB samples are imported as a new run")
        elif data.get("run") and data.get("tool") and data["run"].tool != data["tool"]:
            self.add_error("tool", f"that run holds {data['run'].tool} outputs")
        data["text"] = text
        return data


@login_required
def archive(request):
    team = current_team(request)
    form = SearchForm(team, request.GET)
    runs = list(form.results().select_related("created_by")[:PAGE])
    return render(
        request, "archive/list.html", {"form": form, "runs": runs, "tags": service.team_tags(team)}
    )


@login_required
@require_POST
@role_required(MEMBER, "run")
def annotate_run(request, pk):
    run = get_run(request, pk)
    form = AnnotateForm(request.POST)
    if form.is_valid():
        service.annotate(run, form.cleaned_data["tags"], form.cleaned_data["notes"])
        messages.success(request, f"Tags and notes of #{run.pk} saved.")
    return redirect(safe_next(request, "archive"))


@login_required
@role_required(MEMBER)
def import_page(request):
    team = current_team(request)
    form = ImportForm(team, request.POST or None, request.FILES or None)
    refused = getattr(request, "upload_refused", "")
    if refused:  # the upload handler stopped reading past the cap: nothing to import
        form.is_valid()
        form.add_error("file", refused)
        return render(request, "archive/import.html", {"form": form}, status=413)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        if d["tool"] == PKB:
            return _import_pkb(request, team, form)
        try:
            cell = service.import_output(
                team,
                d["tool"],
                d["text"],
                d["axes"],
                name=d["name"],
                run=d["run"],
                user=request.user,
            )
        except ParseError as exc:
            form.add_error("output", f"{d['tool']} could not read this output: {exc}")
        else:
            messages.success(request, f"Imported {cell.key} #{cell.repeat} into #{cell.run_id}.")
            warnings = cell.facts.get("parser_warnings")
            if warnings:  # stay on the page: say what the parser could not read
                context = {"form": ImportForm(team), "imported": cell, "parser_warnings": warnings}
                return render(request, "archive/import.html", context)
            return redirect("run_results", cell.run_id)
    return render(request, "archive/import.html", {"form": form})


def _import_pkb(request, team, form):
    d = form.cleaned_data
    try:
        run = pkb_import.import_samples(team, d["text"], name=d["name"], user=request.user)
    except ParseError as exc:
        form.add_error("output", f"not PKB samples: {exc}")
        return render(request, "archive/import.html", {"form": form})
    messages.success(
        request, f"Imported {measurestore.count([run.pk])} PKB samples into #{run.pk}."
    )
    return redirect("run_results", run.pk)


def _download(body: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@token_or_login_required
def export_run_csv(request, pk):
    run = get_run(request, pk)
    return _download(service.export_csv(run.team, [run]), "text/csv", f"run-{run.pk}.csv")


@token_or_login_required
def export_run_json(request, pk):
    run = get_run(request, pk)
    return _download(service.export_json(run.team, [run]), "application/json", f"run-{run.pk}.json")


@token_or_login_required
def export_run_pkb(request, pk):
    run = get_run(request, pk)
    return _download(formats.to_pkb_lines(run), "application/x-ndjson", f"run-{run.pk}.pkb.jsonl")


@token_or_login_required
def export_run_bmf(request, pk):
    run = get_run(request, pk)
    return _download(
        json.dumps(formats.to_bmf(run), indent=1), "application/json", f"run-{run.pk}.bmf.json"
    )


@token_or_login_required
def export_comparison_csv(request, pk):
    comparison = get_comparison(request, pk)
    runs = comparisons.comparison_runs(comparison)
    return _download(
        service.export_csv(comparison.team, runs, comparison.cells),
        "text/csv",
        f"comparison-{comparison.pk}.csv",
    )


@token_or_login_required
def export_comparison_json(request, pk):
    comparison = get_comparison(request, pk)
    runs = comparisons.comparison_runs(comparison)
    return _download(
        service.export_json(comparison.team, runs, comparison.cells, comparison),
        "application/json",
        f"comparison-{comparison.pk}.json",
    )
