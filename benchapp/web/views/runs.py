"""Runs: the list, the live run page (progress polled from progress.json),
cancel (run and cell), raw output per cell, and a first results table."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, IntegerField, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.text import slugify
from django.views.decorators.http import require_POST

from benchapp.accounts.access import MEMBER, current_team, get_run, role_required
from benchapp.analysis import environments, profiles, rawoutput, timeline
from benchapp.analysis.documents import result_document
from benchapp.models import Artifact, Cell, Run
from benchapp.runs import fairshare, machines, orchestration
from benchapp.runs.progress import run_progress
from benchapp.store import artifactstore
from runners import verdict


@login_required
def run_list(request):
    team = current_team(request)
    runs = (
        Run.objects.for_team(team)
        .select_related("plan", "created_by")
        .annotate(
            cell_total=_cells_counted(Q()),
            cell_done=_cells_counted(Q(status__in=Cell.TERMINAL)),
            cell_failed=_cells_counted(Q(status=Cell.FAILED)),
        )
        .order_by("-created_at", "-pk")
    )
    page = Paginator(runs, 50).get_page(request.GET.get("page"))
    return render(request, "runs/list.html", {"team": team, "page": page})


def _cells_counted(condition: Q):
    """How many of a run's cells meet condition, as a subquery: PostgreSQL
    counts them for the page's 50 runs only, where a join and GROUP BY
    counted every cell of all the team's runs before sorting (165 ms at
    1,300 runs; scripts/bench_scale.py)."""
    cells = Cell.objects.filter(condition, run=OuterRef("pk")).order_by().values("run")
    count = cells.annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(count, output_field=IntegerField()), 0)


# Past this many cells the per-cell results table is left to the pivot page:
# rendering it costs ~1 ms per cell (0.7 s at 500 cells, measured by make bench).
INLINE_TABLE_MAX_CELLS = 200


@login_required
def run_detail(request, pk):
    run = get_run(request, pk)
    progress = run_progress(run)
    inline = 0 < progress["done"] and progress["total"] <= INLINE_TABLE_MAX_CELLS
    return render(
        request,
        "runs/detail.html",
        {
            "run": run,
            "progress": progress,
            "tails": _tails(run),
            "table": results_table(result_document(run)) if inline else None,
            "too_many_cells": progress["total"] > INLINE_TABLE_MAX_CELLS,
            "limits": _limits(run),
            "waits": fairshare.wait_reasons(run),
            "overlaps": machines.overlaps(run),
        },
    )


@login_required
def run_environment(request, pk):
    """The Environment view: each distinct snapshot of the run's cells
    (database, host, cloud, tools), the cells that ran in it, and what
    differs from the run's previous run of the same plan."""
    run = get_run(request, pk)
    previous = (
        Run.objects.filter(plan_id=run.plan_id, team=run.team, pk__lt=run.pk)
        .order_by("-pk")
        .first()
        if run.plan_id
        else None
    )
    return render(
        request,
        "runs/environment.html",
        {
            "run": run,
            "snapshots": environments.run_snapshots(run),
            "previous": previous,
            "changes": environments.run_diff(previous, run) if previous else {},
        },
    )


def _limits(run) -> str | None:
    """What limited the run's local tools (the latest cell that says; docs/sandbox.md)."""
    cells = run.cells.filter(facts__has_key="limits").order_by("-index")
    return cells.values_list("facts__limits", flat=True).first()


@login_required
def run_progress_json(request, pk):
    run = get_run(request, pk)
    return JsonResponse(
        {
            **run_progress(run),
            "active": run.is_active,
            "tails": _tails(run),
            "waits": fairshare.wait_reasons(run),
        }
    )


@login_required
@require_POST
@role_required(MEMBER, "run")
def run_cancel(request, pk):
    run = get_run(request, pk)
    if run.is_active:
        orchestration.cancel_run(run)
        messages.success(
            request,
            "Cancelling: queued cells are cancelled, running ones stop within a few seconds.",
        )
    return redirect("run_detail", pk=run.pk)


@login_required
@require_POST
@role_required(MEMBER, "run")
def cell_cancel(request, pk, cell_id):
    run = get_run(request, pk)
    cell = get_object_or_404(Cell, run=run, pk=cell_id)
    orchestration.cancel_cell(cell)
    messages.success(request, f"Cell {cell.index} ({cell.key or 'single cell'}) cancelled.")
    return redirect("run_detail", pk=run.pk)


@login_required
def cell_artifacts(request, pk, cell_id):
    run = get_run(request, pk)
    cell = get_object_or_404(Cell, run=run, pk=cell_id)
    return render(
        request,
        "runs/artifacts.html",
        {
            "run": run,
            "cell": cell,
            "timeline": timeline.cell_timeline(cell, run.tool),
            "telemetry_rows": timeline.summary_rows(cell.facts or {}),
            "profiles": profiles.cell_profiles(cell),
            "verdict": (cell.facts or {}).get("verdict"),
            "verdict_rests_on": verdict.rests_on((cell.facts or {}).get("verdict") or {}),
            "prepared_by": _prepared_by(run, cell),
            "artifacts": rawoutput.excerpts(cell.artifacts.all()),
            "excerpt_kib": rawoutput.EXCERPT_CHARS // 1024,
            "overlaps": machines.overlaps(run, only=cell),
        },
    )


def _prepared_by(run: Run, cell: Cell) -> int | None:
    """The earlier run of the same plan whose prepare made the data this cell
    reused (runners.prepared), or None."""
    if not (cell.facts or {}).get("reused_data") or run.plan_id is None:
        return None
    prepare = (
        Artifact.objects.filter(
            cell__run__plan_id=run.plan_id,
            cell__run_id__lt=run.pk,
            cell__target_name=cell.target_name,
            phase="prepare",
            exit_code=0,
        )
        .order_by("-cell__run_id")
        .values_list("cell__run_id", flat=True)
    )
    return prepare.first()


@login_required
def cell_artifact_download(request, pk, cell_id, artifact_id, stream):
    """The full stdout or stderr of one artifact, streamed slice by slice."""
    run = get_run(request, pk)
    artifact = get_object_or_404(
        Artifact.objects.only("pk", "phase", "attempt"),
        cell__run=run,
        cell_id=cell_id,
        pk=artifact_id,
    )
    if stream not in rawoutput.STREAMS:
        raise Http404("No such stream")
    try:
        chunks = rawoutput.download(artifact.pk, stream)
    except artifactstore.StoreError as exc:
        # Expired or missing: say which, in place of the file (not a 500).
        text = f"The full {stream} of this output cannot be downloaded: {exc}.\n"
        return HttpResponse(text, status=404, content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(chunks, content_type="text/plain; charset=utf-8")
    name = f"run-{run.pk}-cell-{cell_id}-{slugify(artifact.phase)}-{artifact.attempt}.{stream}.txt"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


def _tails(run: Run) -> dict:
    """{cell id: output tail} of the running cells (masked by the worker).

    With no cell running, the tail of the cell that ended last, so a cell
    shorter than the heartbeat still shows what it printed.
    """
    rows = list(run.cells.filter(status=Cell.RUNNING).values_list("pk", "output_tail"))
    if not rows:
        rows = list(
            run.cells.filter(status__in=Cell.TERMINAL, finished_at__isnull=False)
            .exclude(output_tail="")
            .order_by("-finished_at", "-pk")
            .values_list("pk", "output_tail")[:1]
        )
    return {str(pk): tail for pk, tail in rows}


def results_table(document: dict) -> dict:
    """Rows of (axes, repeat, group labels) -> metrics from a result document.

    One row per group of each cell (mysqlslap prints a block per engine and
    concurrency), so nothing the tool measured is hidden.
    """
    axes, labels, metrics, rows = [], [], [], []
    for cell in document["cells"]:
        groups = cell["groups"] or [{"labels": {}, "metrics": {}}]
        for group in groups:
            _extend(axes, cell["axes"])
            _extend(labels, group["labels"])
            _extend(metrics, group["metrics"])
            rows.append({"cell": cell, "labels": group["labels"], "metrics": group["metrics"]})
    labels = [name for name in labels if name not in axes]
    return {
        "axes": axes,
        "labels": labels,
        "metrics": metrics,
        "rows": [
            {
                "axes": [row["cell"]["axes"].get(a, "") for a in axes],
                "repeat": row["cell"]["repeat"],
                "status": row["cell"]["status"],
                "labels": [row["labels"].get(name, "") for name in labels],
                "metrics": [row["metrics"].get(name) for name in metrics],
            }
            for row in rows
        ],
    }


def _extend(names: list, more) -> None:
    """Append the names not seen yet, keeping first-seen order."""
    names.extend(name for name in more if name not in names)
