"""The run lifecycle: plans become runs and cells, cells are dispatched,
claimed, executed and recorded.

Views, the API, Celery tasks and management commands all call these
functions. State lives on the rows (status, attempt, lease, error) so any
worker can pick up where another died:

- `start_run` freezes a plan document into a Run and its Cells, then asks
  for a dispatch after commit.
- `dispatch` sends every cell that may start now, as benchapp.runs.placement
  chooses them and takes their locks.
- `execute_cell` claims the cell atomically, runs its frozen spec through
  runners.cell with a heartbeat thread that renews the lease and watches for
  cancel, records the outcome exactly once per attempt, applies the adaptive
  repeat rule (benchapp.runs.adaptive), releases its locks and dispatches the
  waiting runs again, least-served team first; a transient failure is
  retried after a backoff (`retry_delay`, the one retry policy). The
  heartbeat stops a cell that runs past its runtime cap.

Tasks are sent by name through benchapp.dispatch, after commit; the
periodic recovery of dead workers' cells is benchapp.runs.reaper.
"""

from __future__ import annotations

import logging
import socket
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from benchapp.accounts.targetguard import check_plan
from benchapp.cloud import provisioning
from benchapp.dbretry import lost_database, retrying
from benchapp.dispatch import (
    CLEANUP_RUN,
    DETECT_CHANGES,
    DISPATCH_RUN,
    EXECUTE_CELL,
    PROVISION_RUN,
    TEARDOWN_RUN,
    send,
)
from benchapp.models import Cell, Plan, Run, Team
from benchapp.plans.planning import CheckedPlan, PlanRefused, check
from benchapp.runs import (
    adaptive,
    fairshare,
    finalcleanup,
    machines,
    placement,
    recording,
    workerpool,
)
from benchapp.runs.heartbeat import Heartbeat
from benchapp.store import frozenparts
from runners.frozen import Parts, split_freeze
from runners.providers.slots import needs_provisioning

log = logging.getLogger(__name__)


# ------------------------------------------------------------------- runs


def start_run(
    team: Team,
    document: dict | str | CheckedPlan,
    *,
    user=None,
    plan: Plan | None = None,
    origin: str = "manual",
    concurrency: int = 0,
    tags=(),
    only_keys=None,
) -> Run:
    """Freeze a plan document into a Run with its Cells; dispatch after commit.

    document: a plan document, checked here (planning.check: the pre-run
    checks apply to every origin but an operator's plan file, "cli"), or
    the CheckedPlan of a caller that checked it already.
    only_keys: run only the cells of these cell keys (all their repeats), as
    a confirmation re-run does; PlanRefused when the plan has none of them.
    fairshare.TooManyRuns when the team is at its cap of queued/running runs.
    """
    checked = (
        document
        if isinstance(document, CheckedPlan)
        else check(document, team, trusted=origin == "cli")
    )
    spec, cells = checked.spec, list(checked.cells)
    if only_keys is not None:
        cells = [c for c in cells if c.key in set(only_keys)]
        if not cells:
            raise PlanRefused(
                "axes", "the plan has none of the cells " + ", ".join(sorted(only_keys))
            )
    provisioning.check_budget(team, checked)
    # The plan's large parts (scripts, params, targets) are stored once for
    # the run, not once per cell: what a run stores stays about its document.
    parts = Parts()
    rows = [
        dict(
            index=c.index,
            key=c.key,
            repeat=c.repeat,
            axes=c.axes,
            target_name=c.target,
            spec=split_freeze(spec, c, parts),
        )
        for c in cells
    ]
    return _create_run(
        team,
        spec,
        rows,
        lambda run: frozenparts.save(run, parts),
        plan=plan,
        name=spec.name,
        tool=spec.tool,
        document=spec.document,
        origin=origin,
        concurrency=concurrency,
        created_by=user,
        tags=list(tags),
    )


def _create_run(team: Team, spec, cells: list[dict], store_parts, **fields) -> Run:
    """Store a Run (fields), its frozen parts (store_parts(run)) and its Cells
    (their fields), within the team's cap of active runs; provision or
    dispatch after commit."""
    first_step = _enqueue_provision if needs_provisioning(spec) else _enqueue_dispatch
    with transaction.atomic():
        # The team's row is the lock of its counts: two starts at once must
        # not both see the last free place under the cap.
        Team.objects.select_for_update().filter(pk=team.pk).first()
        fairshare.check_active_runs(team)
        run = Run.objects.create(team=team, **fields)
        store_parts(run)
        Cell.objects.bulk_create((Cell(run=run, **c) for c in cells), batch_size=500)
        first_step(run.pk)
    return run


def rerun_cells(
    source: Run, keys, *, user=None, origin: str = "confirm", tags=(), plan: Plan | None = None
) -> Run:
    """A new run of `source`'s frozen cells of these cell keys, as they were
    measured: the same specs (parameters, targets, client, pinned tool
    version), whatever the plan says now. The document is the source run's.

    PlanRefused when the source kept no frozen cell of the keys (a run
    recorded by hand or imported) or its targets may no longer be reached
    (docs/trust-model.md: the guard is checked again, as for any run).
    """
    keys = set(keys)
    cells = list(source.cells.filter(key__in=keys).order_by("index"))
    unfrozen = sorted({c.key for c in cells if not c.spec})
    if not cells or unfrozen:
        missing = ", ".join(unfrozen or sorted(keys))
        raise PlanRefused(
            "axes", f"run #{source.pk} kept no frozen cells of {missing}: nothing to re-run"
        )
    spec = source.spec
    check_plan(spec)
    provisioning.check_budget(source.team, spec)
    rows = [
        dict(
            index=c.index,
            key=c.key,
            repeat=c.repeat,
            axes=c.axes,
            target_name=c.target_name,
            spec=c.spec,
        )
        for c in cells
    ]
    return _create_run(
        source.team,
        spec,
        rows,
        lambda run: frozenparts.copy(source.pk, run, [c.spec for c in cells]),
        plan=plan if plan is not None else source.plan,
        name=source.name,
        tool=source.tool,
        document=source.document,
        origin=origin,
        concurrency=source.concurrency,
        created_by=user,
        tags=list(tags),
    )


def _enqueue_provision(run_id: int) -> None:
    send(PROVISION_RUN, run_id)


def _enqueue_dispatch(run_id: int) -> None:
    send(DISPATCH_RUN, run_id)


def dispatch(run_id: int, waiting: placement.Waiting | None = None) -> list[int]:
    """Send every cell of the run that may start now (benchapp.runs.placement);
    return their ids. waiting: a pass's look at the waiting runs (else one is taken).

    A sent cell holds its locks; their lease covers the time until a worker
    claims it, so a lost message is recovered by the reaper. One dispatch of
    a run at a time (its row is locked): two at once would each count the
    free slots from their own snapshot and together exceed its concurrency.
    """
    if waiting is None:  # a message: most find nothing to send (a look at this run alone)
        if not any(placement.Waiting([run_id]).turns([run_id])):
            return []
        waiting = placement.Waiting()
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        return _dispatch_locked(run_id, run, waiting)


def _dispatch_locked(run_id: int, run: Run | None, waiting=None) -> list[int]:
    if run is None or run.status not in Run.ACTIVE:
        return []
    if run.cancel_requested:
        finish_run(run_id)  # once the running cells have stopped
        return []
    if run.status == Run.PROVISIONING:
        return []  # provisioning.provision_run sets RUNNING and dispatches when ready
    if run.status == Run.QUEUED:
        if needs_provisioning(run.spec):
            return []  # the provision_run task has not started yet
        Run.objects.filter(pk=run_id, status=Run.QUEUED).update(
            status=Run.RUNNING, started_at=timezone.now()
        )
    sent, left = placement.take(run, waiting)
    for cell_id in sent:
        send(EXECUTE_CELL, cell_id, queue=workerpool.queue_of(cell_id))
    if not left:
        finish_run(run_id)
    return sent


# ------------------------------------------------------------------ cells


def claim(cell_id: int) -> Cell | None:
    """Atomically move a queued cell to running; None if someone else has it.

    The conditional UPDATE is the claim: a redelivered or duplicated message
    finds the cell no longer queued and does nothing.
    """
    now = timezone.now()
    claimed = Cell.objects.filter(pk=cell_id, status=Cell.QUEUED).update(
        status=Cell.RUNNING,
        attempt=F("attempt") + 1,
        started_at=now,
        finished_at=None,
        phase="starting",
        phase_started_at=now,
        lease_expires_at=machines.lease(),
        worker=socket.gethostname(),
        error="",
        output_tail="",
    )
    if not claimed:
        return None
    cell = Cell.objects.select_related("run", "run__team").get(pk=cell_id)
    machines.renew(cell, cell.lease_expires_at)
    return cell


def execute_cell(cell_id: int) -> str | None:
    """Claim, run, record and release one cell; return its final status.

    Returns None when the cell was not ours to run (already claimed, done,
    or cancelled before start).
    """
    cell = retrying(lambda: claim(cell_id), f"claiming cell {cell_id}")
    if cell is None:
        return None
    if cell.run.cancel_requested:
        _finish_cell(cell, Cell.CANCELLED, "cancelled before start")
        return Cell.CANCELLED
    watcher = Heartbeat(cell, machines.lease)
    watcher.start()
    try:
        outcome = recording.run_cell_for(
            cell,
            cancel_event=watcher.cancel_event,
            on_phase=watcher.set_phase,
            on_output=watcher.add_output,
        )
    except Exception as exc:  # a bug or a lost database: record it, never lose the cell
        log.exception("cell %s crashed", cell_id)
        watcher.stop()
        return _crashed(cell, exc)
    watcher.stop()
    if watcher.overrun:  # stopped by the runtime cap, not by a person
        outcome.status, outcome.error = Cell.FAILED, watcher.overrun
        outcome.permanent, outcome.transient = True, False
    delay = retry_delay(cell, outcome)
    # The measurement is done: if the database is away now, it waits for it
    # (benchapp.dbretry) rather than be thrown away and measured again.
    recorded = retrying(
        lambda: recording.record_outcome(cell, outcome, requeue=delay is not None),
        f"recording cell {cell.pk}",
    )
    if not recorded:
        return None  # our lease was lost: another attempt owns the cell now
    if delay is not None:
        retrying(lambda: _retry_later(cell, delay), f"re-queueing cell {cell.pk}")
        return Cell.QUEUED
    # Before the lock goes: no later repeat is dispatched yet.
    retrying(lambda: adaptive.after_cell(cell), f"adaptive repeats after cell {cell.pk}")
    _finish_cell(cell, outcome.status, outcome.error, record=False)
    return outcome.status


def _crashed(cell: Cell, exc: Exception) -> str:
    """End a cell whose run raised: a lost app database (the cell could not
    read its context, a credential, ...) is transient and retried like a
    lost connection to a target; anything else is a bug, recorded as failed."""
    error = f"internal error: {type(exc).__name__}: {exc}"
    if lost_database(exc):
        error = f"the app's database was unreachable: {exc}"
        delay = retry_delay(cell, _LostDatabase)
        if delay is not None:
            retrying(lambda: _requeue(cell, error, delay), f"re-queueing cell {cell.pk}")
            return Cell.QUEUED
        _finish_cell(cell, Cell.FAILED, error, kind="transient")
        return Cell.FAILED
    _finish_cell(cell, Cell.FAILED, error, kind="permanent")
    return Cell.FAILED


class _LostDatabase:
    """The outcome retry_delay sees for a cell whose database went away."""

    status, transient = Cell.FAILED, True


def _requeue(cell: Cell, error: str, delay: float) -> None:
    with transaction.atomic():
        if Cell.objects.filter(pk=cell.pk, attempt=cell.attempt, status=Cell.RUNNING).update(
            status=Cell.QUEUED, error=error, error_kind="transient", phase="", lease_expires_at=None
        ):
            _retry_later(cell, delay)


def retry_delay(cell: Cell, outcome) -> float | None:
    """The one retry policy: seconds until the next attempt, or None for none.

    Only transient failures (a RunnerError that is not permanent: connection
    reset, timeout, cloud capacity) are retried, BENCHBOARD_CELL_RETRIES
    times, after BACKOFF * 2**(attempt-1) seconds up to BACKOFF_CAP.
    Permanent failures, failed tools (a result), cancels and successes never.
    """
    if outcome.status != Cell.FAILED or not getattr(outcome, "transient", False):
        return None
    if cell.attempt > settings.BENCHBOARD_CELL_RETRIES:
        return None
    return min(
        settings.BENCHBOARD_RETRY_BACKOFF_SECONDS * 2 ** (cell.attempt - 1),
        settings.BENCHBOARD_RETRY_BACKOFF_CAP_SECONDS,
    )


def _retry_later(cell: Cell, delay: float) -> None:
    """Keep the cell's locks for the retried cell over the backoff (so no
    other cell takes its target or machines meanwhile) and send the attempt delayed; a
    lost message is healed by reap like any expired lock."""
    until = timezone.now() + timedelta(seconds=delay + settings.BENCHBOARD_LEASE_SECONDS)
    machines.renew(cell, until)
    send(EXECUTE_CELL, cell.pk, countdown=delay, queue=workerpool.queue_of(cell.pk))


def _finish_cell(
    cell: Cell, status: str, error: str = "", record: bool = True, kind: str = ""
) -> None:
    """Record the cell's end (record=False: record_outcome did), free its
    locks and wake the runs waiting; each step waits out a database outage."""
    if record:
        retrying(
            lambda: Cell.objects.filter(pk=cell.pk, attempt=cell.attempt).update(
                status=status,
                error=error,
                error_kind=kind,
                finished_at=timezone.now(),
                phase="",
                lease_expires_at=None,
            ),
            f"recording the end of cell {cell.pk}",
        )
    retrying(lambda: machines.release(cell), f"releasing the locks of cell {cell.pk}")
    _wake_waiting_runs(cell)


def _wake_waiting_runs(cell: Cell) -> None:
    """Dispatch the runs with queued cells, least-served team first
    (benchapp.runs.fairshare), and the cell's own run (it may end now): the
    released target, machines and cap place may be what any of them waits
    for (a run of another team on the same database server, a run of the
    team behind its cap).

    Here, one after the other, not as messages: dispatch messages run in
    parallel on a worker pool, and the run that came last in the order
    could take the freed machine first. The runs that could send nothing
    are skipped (placement.Waiting.turns). A failed dispatch is logged and
    left to the next reap; the cell is recorded either way."""
    waiting = retrying(placement.Waiting, "listing the waiting runs")
    order = list(waiting.order)
    if cell.run_id not in waiting.position:
        order.insert(0, cell.run_id)
    try:
        dispatch_in_turn(waiting, order, keep=cell.run_id)
    except Exception:  # reading the waiting runs failed: the next reap dispatches
        log.exception("dispatches after cell %s failed", cell.pk)


def dispatch_in_turn(waiting: placement.Waiting, run_ids: list[int], keep=None) -> None:
    """Dispatch run_ids in their order, those that could send nothing left
    out (waiting.turns); one failed dispatch is logged, not the end of the rest."""
    for run_id in waiting.turns(run_ids, keep=keep):
        try:
            sent = retrying(
                lambda run_id=run_id: dispatch(run_id, waiting), f"dispatching run {run_id}"
            )
            waiting.sent(run_id, sent)
        except Exception:
            log.exception("dispatch of run %s failed", run_id)


# ------------------------------------------------------------ completion


def finish_run(run_id: int) -> Run:
    """Give a run whose cells are all terminal its final status (idempotent)."""
    run = Run.objects.get(pk=run_id)
    if run.status not in Run.ACTIVE or run.cells.exclude(status__in=Cell.TERMINAL).exists():
        return run
    if finalcleanup.pending(run):
        send(CLEANUP_RUN, run_id)  # it dispatches again when done, which ends the run
        return run
    statuses = set(run.cells.values_list("status", flat=True))
    if run.cancel_requested:
        status = Run.CANCELLED
    elif statuses <= {Cell.SUCCEEDED}:
        status = Run.SUCCEEDED
    elif Cell.SUCCEEDED in statuses:
        status = Run.PARTIAL
    else:
        status = Run.FAILED
    Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).update(
        status=status, finished_at=timezone.now()
    )
    run.refresh_from_db()
    send(TEARDOWN_RUN, run_id)
    send(DETECT_CHANGES, run_id)
    return run


def cancel_run(run: Run) -> Run:
    """Cancel a run: queued cells now, running cells at their next heartbeat
    (their executors kill the tool's process group, remote too)."""
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    now = timezone.now()
    run.cells.filter(status=Cell.QUEUED).update(
        status=Cell.CANCELLED, finished_at=now, error="cancelled"
    )
    machines.release_run(run)
    if not run.cells.filter(status=Cell.RUNNING).exists() and run.status != Run.PROVISIONING:
        # Nothing runs: the run ends now (after its final cleanup, if any),
        # and what it provisioned goes now too.
        if finalcleanup.pending(Run.objects.get(pk=run.pk)):
            send(CLEANUP_RUN, run.pk)
        elif Run.objects.filter(pk=run.pk, status__in=Run.ACTIVE).update(
            status=Run.CANCELLED, finished_at=now
        ):
            send(TEARDOWN_RUN, run.pk)
    run.refresh_from_db()
    return run


def cancel_cell(cell: Cell) -> None:
    """Cancel one cell: at once if queued, at its next heartbeat if running."""
    now = timezone.now()
    if Cell.objects.filter(pk=cell.pk, status=Cell.QUEUED).update(
        status=Cell.CANCELLED, finished_at=now, error="cancelled"
    ):
        machines.release(cell)
        _enqueue_dispatch(cell.run_id)
        return
    # A running cell: ending its lease row makes its heartbeat cancel it.
    Cell.objects.filter(pk=cell.pk, status=Cell.RUNNING).update(
        status=Cell.CANCELLED, finished_at=now, error="cancelled"
    )
