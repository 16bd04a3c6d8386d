"""The final cleanup of a run whose plan has `prepare: {once: true}` and
`cleanup: true`: each prepared target's data (sysbench's sbtest tables) is
dropped once all of the run's cells are over, before the run gets its final
status, whether its cells succeeded, failed or were cancelled.

orchestration.finish_run asks `pending(run)`; while a target is left, it
sends the cleanup task instead of ending the run. `cleanup_run` (that task)
takes each target's lock, so no other run's cell uses the target while its
data is dropped, runs the tool's cleanup phase through runners, keeps the
output as an Artifact of the target's last cell (phase "final_cleanup"),
notes a failure on the run, forgets the target and dispatches the run again,
which then ends. A worker that dies mid-cleanup leaves the target in
`prepared_targets` with its lock leased: once the lease expires, the reaper's
dispatch sends the cleanup again.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from benchapp.dispatch import DISPATCH_RUN, send
from benchapp.models import Artifact, Cell, Run
from benchapp.runs import machines
from benchapp.runs.recording import SecretBook, cell_context, frozen_cell
from benchapp.store import artifactstore
from runners.cellcleanup import CLEANUP_TIMEOUT_S, cleanup_target, wants_final_cleanup
from runners.errors import RunnerError, ValidationError
from runners.phases import one_line

log = logging.getLogger(__name__)
PHASE = "final_cleanup"
# The lock covers the cleanup command's own timeout, plus a margin.
LOCK_SECONDS = CLEANUP_TIMEOUT_S + 60


def pending(run: Run) -> list[str]:
    """Targets whose prepared data the run must still drop (in name order)."""
    if not run.prepared_targets:
        return []
    try:
        wanted = wants_final_cleanup(run.spec)
    except ValidationError:
        return []
    return sorted(run.prepared_targets) if wanted else []


def cleanup_run(run_id: int) -> list[str]:
    """Drop the data of every prepared target of the run; return those done.

    A target whose lock another run holds is left for a later dispatch
    (the reaper's, at the latest).
    """
    run = Run.objects.select_related("team").filter(pk=run_id).first()
    if run is None or run.status not in Run.ACTIVE:
        return []
    done = []
    for target in pending(run):
        cells = run.cells.filter(target_name=target).order_by("index")
        first, last = cells.first(), cells.last()
        if first is None or not _take_lock(run, last):
            continue
        try:
            if target not in Run.objects.get(pk=run_id).prepared_targets:
                continue  # a duplicate task did it while we waited for the lock
            _cleanup_one(run, target, first, last)
        finally:
            machines.drop(last)
        done.append(target)
    if done:
        send(DISPATCH_RUN, run_id)
    return done


def _take_lock(run: Run, holder: Cell) -> bool:
    """The target's lock and its machines' for the cleanup, if free or
    expired (a duplicate task finds them held): dropping tables loads the
    server like a cell."""
    until = timezone.now() + timedelta(seconds=LOCK_SECONDS)
    return machines.take_wanted(run, holder, machines.machines_of(run, holder), until=until)


def _cleanup_one(run: Run, target: str, first: Cell, last: Cell) -> None:
    """Run the cleanup phase for target, keep its record, forget the target."""
    plan, spec = frozen_cell(first)
    book = SecretBook(run.team_id)
    plan, ctx = cell_context(run, plan, spec, book)
    problem = ""
    try:
        record = cleanup_target(plan, target, ctx, params=spec.params)
    except (RunnerError, ValidationError) as exc:
        record, problem = None, str(exc)
    finally:
        ctx.close()
    if record is not None:
        artifact = Artifact(
            cell=last,
            attempt=last.attempt,
            phase=PHASE,
            command=book.mask(record.command),
            exit_code=record.exit_code,
            started_at=datetime.fromtimestamp(record.started, tz=UTC),
            finished_at=datetime.fromtimestamp(record.finished, tz=UTC),
        )
        streams = {"stdout": book.mask(record.stdout), "stderr": book.mask(record.stderr)}
        artifactstore.create_artifacts([(artifact, streams)])
        if record.exit_code != 0:
            problem = f"exit {record.exit_code}: " + one_line(record.stderr or record.stdout)
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        locked.prepared_targets = [t for t in locked.prepared_targets if t != target]
        fields = ["prepared_targets"]
        if problem:
            note = f"final cleanup of {target} failed ({book.mask(problem)}); its data remains"
            locked.notes = (locked.notes + "\n" + note).strip()
            fields.append("notes")
            log.warning("run %s: %s", run.pk, note)
        locked.save(update_fields=fields)
