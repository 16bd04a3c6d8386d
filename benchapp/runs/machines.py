"""The locks a sent or running cell holds: its team's target, and (plan
`isolation: machine`, the default) every machine whose load would change its
figure, named by runners.isolation. Locks are global across teams: a machine
is a machine.

A cell takes all its locks or none, in one transaction: rows another
transaction is changing count as taken (SKIP LOCKED), so two dispatches that
want machines in different orders never wait on each other (no deadlock);
the conditional UPDATE (free, or lease expired) is the compare-and-set that
also holds on SQLite, where SELECT ... FOR UPDATE does nothing. Whoever
holds a row changes it either way (takes or releases), and a release wakes
the waiting runs (orchestration._wake_waiting_runs).

`isolation: run` makes each cell want the machines of every target of its
run, and a finished cell of the run keeps them until the run's next cell
takes them over (or their lease runs out), so no other run slips in
between two cells of the run.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Min, Q
from django.utils import timezone

from benchapp.models import Cell, CellLock, Run
from benchapp.runs import workerpool
from benchapp.runs.hostid import host_id
from runners.errors import ValidationError
from runners.isolation import cell_machines

Machine = tuple[str, str]


def next_per_target(run: Run) -> list[Cell]:
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
        .only("id", "index", "target_name", "run_id", "key", "spec")
    )


def isolation(run: Run) -> str:
    """The run's isolation mode; the stored key itself when the document is
    one this version cannot read (an imported run, an older plan), so a page
    of such a run still shows why its cells wait."""
    try:
        return run.spec.isolation
    except ValidationError:
        return (run.document or {}).get("isolation", "machine")


def lease() -> timezone.datetime:
    return timezone.now() + timedelta(seconds=settings.BENCHBOARD_LEASE_SECONDS)


def target_lock(run: Run, target_name: str) -> Machine:
    """The lock of a team's target: one running cell per (team, target)."""
    return (f"target {run.team_id} {target_name}", f"target {target_name}")


def machines_of(run: Run, cell: Cell, host: str | None = None) -> list[Machine]:
    """The machines `cell` loads (whatever the isolation: the results page
    reads them to tell where cells overlapped) when it runs on worker host
    `host` (a stable id, benchapp.runs.hostid; by default the host it was
    placed on, else this one). [] for a cell without a frozen plan
    (imported runs have none, and never run)."""
    if "plan" not in (cell.spec or {}):
        return []
    host = host or workerpool.placed_host_id(cell.pk) or host_id()
    return cell_machines(cell.spec["plan"], cell.target_name, run_id=run.pk, worker_host=host)


def wanted(run: Run, cell: Cell, machines: list[Machine], host: str | None = None) -> list[Machine]:
    """The locks `cell` must hold to start on worker host `host`, given its own machines."""
    mode = isolation(run)
    if mode == "target":
        return [target_lock(run, cell.target_name)]
    if mode == "run":
        machines = _run_machines(run, host)
    return [target_lock(run, cell.target_name), *machines]


def _run_machines(run: Run, host: str | None = None) -> list[Machine]:
    """Every machine of every target of the run (one frozen cell per target)."""
    firsts = run.cells.values("target_name").annotate(first=Min("id")).values_list("first")
    found: dict[str, str] = {}
    for cell in Cell.objects.filter(pk__in=[pk for (pk,) in firsts]).only("spec", "target_name"):
        for key, label in machines_of(run, cell, host):
            found.setdefault(key, label)
    return list(found.items())


def take(cell: Cell, locks: list[Machine], until=None) -> bool:
    """Make `cell` the holder of every lock in `locks`, or of none; True when taken.

    A lock `cell` already holds is not free: only two dispatches of one run
    at once (a cell finishing on each of two workers) both find its locks
    free, and the one that loses the race must not send the cell again."""
    keys = [key for key, _ in locks]
    _create_missing(locks)
    now = timezone.now()
    free = Q(holder__isnull=True) | Q(lease_expires_at__lt=now)
    kept = _kept_by_own_run(cell)
    if kept:
        free |= Q(holder_id__in=kept)
    with transaction.atomic():
        rows = list(
            CellLock.objects.select_for_update(skip_locked=True)
            .filter(free, key__in=keys)
            .values_list("pk", flat=True)
        )
        if len(rows) != len(keys):
            return False
        taken = CellLock.objects.filter(free, pk__in=rows).update(
            holder=cell, lease_expires_at=until or lease()
        )
        if taken != len(keys):  # SQLite: another writer got there first
            transaction.set_rollback(True)
            return False
    return True


def _create_missing(locks: list[Machine]) -> None:
    known = set(
        CellLock.objects.filter(key__in=[k for k, _ in locks]).values_list("key", flat=True)
    )
    for key, label in locks:
        if key not in known:
            CellLock.objects.get_or_create(key=key, defaults={"label": label})


def _kept_by_own_run(cell: Cell) -> list[int]:
    """Finished cells of the cell's own run that still hold locks (`isolation: run`)."""
    return list(
        CellLock.objects.filter(holder__run_id=cell.run_id, holder__status__in=Cell.TERMINAL)
        .values_list("holder_id", flat=True)
        .distinct()
    )


def release(cell: Cell) -> None:
    """Let go of the cell's locks; a cell of an `isolation: run` run that
    still has queued cells keeps them for its next cell, for one lease."""
    held = CellLock.objects.filter(holder=cell)
    run = Run.objects.filter(pk=cell.run_id).only("document", "status").first()
    keep = (
        run is not None
        and isolation(run) == "run"
        and run.status in Run.ACTIVE
        and not run.cancel_requested
        and run.cells.filter(status=Cell.QUEUED).exists()
    )
    if keep:
        held.update(lease_expires_at=lease())
    else:
        held.update(holder=None, lease_expires_at=None)


def drop(cell: Cell) -> None:
    """Let go of every lock the cell holds, whatever its run's isolation."""
    CellLock.objects.filter(holder=cell).update(holder=None, lease_expires_at=None)


def renew(cell: Cell, until) -> None:
    CellLock.objects.filter(holder=cell).update(lease_expires_at=until)


def release_expired(now) -> None:
    CellLock.objects.filter(lease_expires_at__lt=now).update(holder=None, lease_expires_at=None)


def release_run(run: Run) -> None:
    """A finished or cancelled run lets go of whatever its cells still hold."""
    CellLock.objects.filter(holder__run=run).exclude(holder__status=Cell.RUNNING).update(
        holder=None, lease_expires_at=None
    )


def blockers(run: Run, cell: Cell) -> list[str]:
    """Why `cell` cannot take its locks now: "waiting for machine X, held by
    run R cell K" per lock another cell holds ([] when none is held)."""
    locks = wanted(run, cell, machines_of(run, cell))
    now = timezone.now()
    held = (
        CellLock.objects.filter(key__in=[k for k, _ in locks], lease_expires_at__gte=now)
        .exclude(holder=None)
        .exclude(holder_id=cell.pk)
        .select_related("holder")
    )
    by_key = {lock.key: lock for lock in held}
    return [
        f"waiting for {label}, held by run {lock.holder.run_id} cell {lock.holder.key}"
        for key, label in locks  # in the cell's own order: target, server, hosts
        if (lock := by_key.get(key)) is not None
        and not (lock.holder.run_id == run.pk and lock.holder.status in Cell.TERMINAL)
    ]


OVERLAPS_SHOWN = 10


def overlaps(run: Run) -> list[str]:
    """Where a cell of `run` ran at the same moment as another cell (of any
    run) on a shared machine: "cells on shared machines overlapped: cell K
    and run R cell K2 on machine X". Only an `isolation: target` run (or an
    older one, whose cells held no machines) can have them; [] otherwise."""
    mine = [c for c in run.cells.exclude(started_at=None).exclude(finished_at=None) if c.machines]
    if not mine or isolation(run) != "target":
        return []
    start, end = min(c.started_at for c in mine), max(c.finished_at for c in mine)
    others = (
        Cell.objects.filter(started_at__lt=end, finished_at__gt=start)
        .exclude(machines=[])
        .only("id", "run_id", "key", "started_at", "finished_at", "machines")
    )
    found = []
    for cell in mine:
        keys = {key: label for key, label in cell.machines}
        for other in others:
            if other.pk == cell.pk or (other.run_id == run.pk and other.pk < cell.pk):
                continue  # each pair of this run once
            if other.started_at < cell.finished_at and cell.started_at < other.finished_at:
                shared = [keys[k] for k, _ in other.machines if k in keys]
                if shared:
                    who = "cell" if other.run_id == run.pk else f"run {other.run_id} cell"
                    found.append(f"cell {cell.key} and {who} {other.key} on {', '.join(shared)}")
    return found[:OVERLAPS_SHOWN]
