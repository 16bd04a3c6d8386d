"""The run lifecycle: plans become runs and cells, cells are dispatched,
claimed, executed and recorded.

Views, the API, Celery tasks and management commands all call these
functions. State lives on the rows (status, attempt, lease, error) so any
worker can pick up where another died:

- `start_run` freezes a plan document into a Run and its Cells, then asks
  for a dispatch after commit.
- `dispatch` starts every cell that may start now: the next queued cell of
  each target whose TargetLock it can take (one running cell per target,
  across runs), within the run's concurrency.
- `execute_cell` claims the cell atomically, runs its frozen spec through
  runners.cell with a heartbeat thread that renews the lease and watches for
  cancel, records the outcome exactly once per attempt, applies the adaptive
  repeat rule (benchapp.adaptive), releases the lock and dispatches again; a
  transient failure is retried after a backoff (`retry_delay`, the one retry
  policy).

Tasks are sent by name through benchapp.dispatch, after commit.
- `reap` (periodic) re-queues cells whose lease expired (dead worker), up to
  BENCHBOARD_MAX_ATTEMPTS, then fails them "worker lost".
"""

from __future__ import annotations

import logging
import socket
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Min, Q
from django.utils import timezone

from benchapp import adaptive, finalcleanup, provisioning, recording
from benchapp.dispatch import (
    CLEANUP_RUN,
    DETECT_CHANGES,
    DISPATCH_RUN,
    EXECUTE_CELL,
    PROVISION_RUN,
    TEARDOWN_RUN,
    send,
)
from benchapp.heartbeat import Heartbeat
from benchapp.models import Cell, Plan, Run, TargetLock, Team
from benchapp.planning import (  # noqa: F401 - the lifecycle's public names
    PlanRefused,
    check_plan,
    resolve_stored_targets,
    save_plan,
    target_document,
    validate_document,
)
from runners.frozen import freeze
from runners.plan import expand, load_plan

log = logging.getLogger(__name__)


# ------------------------------------------------------------------- runs


def start_run(
    team: Team,
    document: dict | str,
    *,
    user=None,
    plan: Plan | None = None,
    origin: str = "manual",
    concurrency: int = 0,
    tags=(),
    only_keys=None,
) -> Run:
    """Freeze a plan document into a Run with its Cells; dispatch after commit.

    only_keys: run only the cells of these cell keys (all their repeats), as
    a confirmation re-run does; PlanRefused when the plan has none of them.
    """
    spec = validate_document(document, team)
    cells = list(expand(spec))
    if only_keys is not None:
        cells = [c for c in cells if c.key in set(only_keys)]
        if not cells:
            raise PlanRefused(
                "axes", "the plan has none of the cells " + ", ".join(sorted(only_keys))
            )
    provisioning.check_budget(team, spec)
    first_step = _enqueue_provision if provisioning.needs_provisioning(spec) else _enqueue_dispatch
    with transaction.atomic():
        run = Run.objects.create(
            team=team,
            plan=plan,
            name=spec.name,
            tool=spec.tool,
            document=spec.document,
            origin=origin,
            concurrency=concurrency,
            created_by=user,
            tags=list(tags),
        )
        Cell.objects.bulk_create(
            (
                Cell(
                    run=run,
                    index=c.index,
                    key=c.key,
                    repeat=c.repeat,
                    axes=c.axes,
                    target_name=c.target,
                    spec=freeze(spec, c),
                )
                for c in cells
            ),
            batch_size=500,
        )
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
    spec = load_plan(source.document)
    check_plan(spec)
    provisioning.check_budget(source.team, spec)
    first_step = _enqueue_provision if provisioning.needs_provisioning(spec) else _enqueue_dispatch
    with transaction.atomic():
        run = Run.objects.create(
            team=source.team,
            plan=plan if plan is not None else source.plan,
            name=source.name,
            tool=source.tool,
            document=source.document,
            origin=origin,
            concurrency=source.concurrency,
            created_by=user,
            tags=list(tags),
        )
        Cell.objects.bulk_create(
            (
                Cell(
                    run=run,
                    index=c.index,
                    key=c.key,
                    repeat=c.repeat,
                    axes=c.axes,
                    target_name=c.target_name,
                    spec=c.spec,
                )
                for c in cells
            ),
            batch_size=500,
        )
        first_step(run.pk)
    return run


def _enqueue_provision(run_id: int) -> None:
    send(PROVISION_RUN, run_id)


def _enqueue_dispatch(run_id: int) -> None:
    send(DISPATCH_RUN, run_id)


def dispatch(run_id: int) -> list[int]:
    """Send every cell of the run that may start now; return their ids.

    Cells are taken in index order per target. A cell is "sent" once it holds
    its target's lock; the lock's lease covers the time until a worker claims
    it, so a lost message is recovered by `reap` like a dead worker.

    One dispatch of a run at a time (its row is locked for the transaction):
    two at once (a cell finishing on each of two workers) would each count
    the free slots from its own snapshot and together exceed the run's
    concurrency.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        return _dispatch_locked(run_id, run)


def _dispatch_locked(run_id: int, run: Run | None) -> list[int]:
    if run is None or run.status not in Run.ACTIVE:
        return []
    if run.cancel_requested:
        finish_run(run_id)  # once the running cells have stopped
        return []
    if run.status == Run.PROVISIONING:
        return []  # provisioning.provision_run sets RUNNING and dispatches when ready
    if run.status == Run.QUEUED:
        if provisioning.needs_provisioning(load_plan(run.document)):
            return []  # the provision_run task has not started yet
        Run.objects.filter(pk=run_id, status=Run.QUEUED).update(
            status=Run.RUNNING, started_at=timezone.now()
        )
    queued = _next_per_target(run)
    busy = set(run.cells.filter(status=Cell.RUNNING).values_list("target_name", flat=True))
    held = set(TargetLock.objects.filter(holder__run=run).values_list("target_name", flat=True))
    slots = (run.concurrency - len(busy | held)) if run.concurrency else len(queued)
    sent = []
    for cell in queued:
        if len(sent) >= slots:
            break
        if cell.target_name in busy or cell.target_name in held:
            continue
        if _take_lock(run.team_id, cell):
            sent.append(cell.pk)
    for cell_id in sent:
        send(EXECUTE_CELL, cell_id)
    if not queued and not busy:
        finish_run(run_id)
    return sent


def _next_per_target(run: Run) -> list[Cell]:
    """The first queued cell of each target, in index order: later cells of a
    target wait for it either way, so a dispatch reads one row per target,
    not every queued cell.

    Two queries (each target's first index, then those cells), not one with
    a subquery: on a run just created, before PostgreSQL has analyzed its
    rows, the planner joined the subquery to every queued row, and one
    dispatch of a 2,000-cell run took 2-4 s instead of milliseconds."""
    queued = Cell.objects.filter(run_id=run.pk, status=Cell.QUEUED)
    firsts = queued.values("target_name").annotate(first=Min("index")).values_list("first")
    return list(
        queued.filter(index__in=[first for (first,) in firsts])
        .order_by("index")
        .only("id", "index", "target_name", "run_id")
    )


def _lease() -> timezone.datetime:
    return timezone.now() + timedelta(seconds=settings.BENCHBOARD_LEASE_SECONDS)


def _take_lock(team_id: int, cell: Cell) -> bool:
    """Compare-and-set the target's lock to `cell`; True when taken.

    A lock `cell` already holds is not free: only two dispatches of one run
    at once (a cell finishing on each of two workers) both find its target
    free, and the one that loses the race must not send the cell again."""
    TargetLock.objects.get_or_create(team_id=team_id, target_name=cell.target_name)
    now = timezone.now()
    free = Q(holder__isnull=True) | Q(lease_expires_at__lt=now)
    # A lock row another transaction is changing counts as taken (SKIP
    # LOCKED): waiting on it could deadlock two runs' dispatches that take
    # shared targets in different orders. Whoever changes it either takes
    # the target or releases it, and a release wakes the waiting runs.
    with transaction.atomic():
        lock = (
            TargetLock.objects.select_for_update(skip_locked=True)
            .filter(free, team_id=team_id, target_name=cell.target_name)
            .first()
        )
        if lock is None:
            return False
        taken = TargetLock.objects.filter(free, pk=lock.pk).update(
            holder=cell, lease_expires_at=_lease()
        )
    return bool(taken)


def _release_lock(cell: Cell) -> None:
    TargetLock.objects.filter(holder=cell).update(holder=None, lease_expires_at=None)


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
        lease_expires_at=_lease(),
        worker=socket.gethostname(),
        error="",
        output_tail="",
    )
    if not claimed:
        return None
    cell = Cell.objects.select_related("run", "run__team").get(pk=cell_id)
    TargetLock.objects.filter(holder=cell).update(lease_expires_at=cell.lease_expires_at)
    return cell


def execute_cell(cell_id: int) -> str | None:
    """Claim, run, record and release one cell; return its final status.

    Returns None when the cell was not ours to run (already claimed, done,
    or cancelled before start).
    """
    cell = claim(cell_id)
    if cell is None:
        return None
    if cell.run.cancel_requested:
        _finish_cell(cell, Cell.CANCELLED, "cancelled before start")
        return Cell.CANCELLED
    watcher = Heartbeat(cell, _lease)
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
        _finish_cell(
            cell, Cell.FAILED, f"internal error: {type(exc).__name__}: {exc}", kind="permanent"
        )
        return Cell.FAILED
    watcher.stop()
    delay = retry_delay(cell, outcome)
    if not recording.record_outcome(cell, outcome, requeue=delay is not None):
        return None  # our lease was lost: another attempt owns the cell now
    if delay is not None:
        _retry_later(cell, delay)
        return Cell.QUEUED
    adaptive.after_cell(cell)  # before the lock goes: no later repeat is dispatched yet
    _finish_cell(cell, outcome.status, outcome.error, record=False)
    return outcome.status


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
    """Keep the target's lock for the retried cell over the backoff (so no
    other cell takes the target meanwhile) and send the attempt delayed; a
    lost message is healed by reap like any expired lock."""
    until = timezone.now() + timedelta(seconds=delay + settings.BENCHBOARD_LEASE_SECONDS)
    TargetLock.objects.filter(holder=cell).update(lease_expires_at=until)
    send(EXECUTE_CELL, cell.pk, countdown=delay)


def _finish_cell(
    cell: Cell, status: str, error: str = "", record: bool = True, kind: str = ""
) -> None:
    if record:
        Cell.objects.filter(pk=cell.pk, attempt=cell.attempt).update(
            status=status,
            error=error,
            error_kind=kind,
            finished_at=timezone.now(),
            phase="",
            lease_expires_at=None,
        )
    _release_lock(cell)
    _enqueue_dispatch(cell.run_id)
    _wake_waiting_runs(cell)


def _wake_waiting_runs(cell: Cell) -> None:
    """Other runs of the team with cells queued on the target just released
    (e.g. behind a confirmation run) are dispatched now, not at the next reap.
    One dispatch per run: order_by() drops Cell's default ordering, whose
    columns would make DISTINCT yield a row (and a message) per queued cell."""
    waiting = (
        Cell.objects.filter(
            run__team_id=cell.run.team_id,
            target_name=cell.target_name,
            status=Cell.QUEUED,
            run__status__in=Run.ACTIVE,
        )
        .exclude(run_id=cell.run_id)
        .order_by()
        .values_list("run_id", flat=True)
        .distinct()
    )
    for run_id in waiting:
        _enqueue_dispatch(run_id)


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
    TargetLock.objects.filter(holder__run=run, holder__status=Cell.CANCELLED).update(
        holder=None, lease_expires_at=None
    )
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
        _release_lock(cell)
        _enqueue_dispatch(cell.run_id)
        return
    # A running cell: ending its lease row makes its heartbeat cancel it.
    Cell.objects.filter(pk=cell.pk, status=Cell.RUNNING).update(
        status=Cell.CANCELLED, finished_at=now, error="cancelled"
    )


# ------------------------------------------------------------------ reaper


def reap() -> dict:
    """Recover cells whose worker died (lease expired): re-queue them, up to
    BENCHBOARD_MAX_ATTEMPTS attempts, then fail them "worker lost". Also
    re-dispatch active runs, so a lost dispatch message heals itself.
    Returns counts for logs and tests.
    """
    now = timezone.now()
    expired = Cell.objects.filter(status=Cell.RUNNING, lease_expires_at__lt=now)
    requeued = failed = 0
    for cell in expired:
        if cell.attempt >= settings.BENCHBOARD_MAX_ATTEMPTS:
            failed += Cell.objects.filter(
                pk=cell.pk, attempt=cell.attempt, status=Cell.RUNNING
            ).update(
                status=Cell.FAILED,
                finished_at=now,
                phase="",
                lease_expires_at=None,
                error_kind="transient",
                error=f"failed: worker lost ({cell.attempt} attempts; last on {cell.worker})",
            )
        else:
            requeued += Cell.objects.filter(
                pk=cell.pk, attempt=cell.attempt, status=Cell.RUNNING
            ).update(
                status=Cell.QUEUED,
                phase="",
                lease_expires_at=None,
                error_kind="transient",
                error=f"worker lost on attempt {cell.attempt}; retrying",
            )
        _release_lock(cell)
    TargetLock.objects.filter(lease_expires_at__lt=now).update(holder=None, lease_expires_at=None)
    for run_id in Run.objects.active().values_list("pk", flat=True):
        dispatch(run_id)
    _resend_lost_provisioning(now)
    return {"requeued": requeued, "failed": failed}


def _resend_lost_provisioning(now) -> None:
    """A run that needs provisioning and is still QUEUED a while after its
    creation lost its provision_run message (e.g. Redis restarted): send it
    again. provision_run claims the run atomically, so a duplicate is harmless."""
    stale = Run.objects.filter(
        status=Run.QUEUED, cancel_requested=False, created_at__lt=now - timedelta(seconds=60)
    )
    for run in stale.only("pk", "document"):
        if provisioning.needs_provisioning(load_plan(run.document)):
            _enqueue_provision(run.pk)
