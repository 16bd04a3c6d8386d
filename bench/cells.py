"""What the bench reads off a run: waiting for its end, and a cell's time beyond its tool.

Shared by `make bench` (bench/run.py) and the overhead study
(bench/overhead.py, bench/overhead_arms.py).
"""

from __future__ import annotations

import time

from benchapp.models import Artifact, Cell, Run
from benchapp.runs import orchestration
from benchapp.store import measurestore


def end_leftovers(team) -> int:
    """Cancel the runs an interrupted bench left active in its team; how many there were.

    Their worker is gone with the bench, so nothing would end them before the
    reaper (celery beat, not running here) and their target locks would hold
    the next bench's cells back. Their running cells are cancelled first, so
    cancel_run frees their locks and ends the run at once.
    """
    runs = list(Run.objects.filter(team=team, status__in=Run.ACTIVE))
    for run in runs:
        for cell in run.cells.filter(status=Cell.RUNNING):
            orchestration.cancel_cell(cell)
        orchestration.cancel_run(run)
    return len(runs)


def wait_for(run: Run, timeout: float = 300, poll: float = 0.2) -> Run:
    """The run, refreshed, once it has ended; polled every `poll` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(poll)
        if not Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).exists():
            run.refresh_from_db()
            return run
    raise RuntimeError(f"run {run.pk} did not finish in {timeout} s")


def phase_spans(cell: Cell, phases: tuple[str, ...] | None = None) -> list[float]:
    """Seconds each of the cell's phases ran (its last attempt), `phases` only if given."""
    artifacts = Artifact.objects.filter(cell=cell, attempt=cell.attempt)
    if phases is not None:
        artifacts = artifacts.filter(phase__in=phases)
    return [
        (a.finished_at - a.started_at).total_seconds()
        for a in artifacts
        if a.started_at and a.finished_at
    ]


def beyond_measure(cell: Cell) -> float | None:
    """The cell's wall time minus its measured run (the plan's other phases included)."""
    spans = phase_spans(cell, ("measure",))
    return cell.duration - spans[0] if cell.duration is not None and spans else None


def beyond_phases(cell: Cell) -> float | None:
    """The cell's wall time minus every phase the plan runs (prepare, measure, cleanup...).

    What is left is Benchboard's own cost per cell: claiming, connecting,
    work dir, facts, CPU sampling, recording.
    """
    spans = phase_spans(cell)
    return cell.duration - sum(spans) if cell.duration is not None and spans else None


def measured(run: Run, metric: str) -> float:
    """The one value of metric a one-cell run measured (its whole-output group)."""
    (value,) = [m.value for m in measurestore.read(runs=[run.pk], metrics=[metric], group="")]
    return value
