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

The isolation modes relax only the team's own guarantees (docs/trust-model.md):

- `machine` (the default): each cell holds its target and its machines alone.
- `run`: each cell wants the machines of every target of its run, and a
  finished cell of the run keeps them for the run's next cell (for one
  lease), so no run of its own team slips in between two of its cells; when
  a cell of another team waits for one of them, the run yields them at the
  cell's end (`release`): another team's cell waits for at most one cell.
- `target`: the run's cells share machines with the team's other
  `isolation: target` cells, and with nobody else: each takes a lock of its
  own per machine (a SHARED row, "<machine> | shared by team T cell C"),
  which a cell of another team (or a cell of the team that wants its
  machines alone) waits for, as it waits for the machine's own row.

The machine's own row is what every taker locks first (SELECT ... FOR UPDATE,
or the compare-and-set UPDATE on SQLite), shared or not, so two dispatches
deciding about one machine never both win.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Min, Q
from django.utils import timezone

from benchapp.models import Cell, CellLock, Run
from benchapp.runs import workerpool
from benchapp.runs.hostid import host_id
from benchapp.store import frozenparts
from runners.errors import ValidationError
from runners.isolation import cell_machines

# What runners.isolation reads of a frozen plan: not its scripts.
PLAN_KEYS = ("targets", "client", "more_clients")

Machine = tuple[str, str]
SHARED = " | shared by team "


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
    return (target_lock_key(run.team_id, target_name), f"target {target_name}")


def target_lock_key(team_id: int, target_name: str) -> str:
    return f"target {team_id} {target_name}"


def machines_of(
    run: Run, cell: Cell, host: str | None = None, spec: dict | None = None
) -> list[Machine]:
    """The machines `cell` loads (whatever the isolation: the results page
    reads them to tell where cells overlapped) when it runs on worker host
    `host` (a stable id, benchapp.runs.hostid; by default the host it was
    placed on, else this one). [] for a cell without a frozen plan
    (imported runs have none, and never run)."""
    if spec is None:  # spec: the cell's frozenparts.frozen(cell, PLAN_KEYS), read already
        spec = frozenparts.frozen(cell, plan_keys=PLAN_KEYS)
    if "plan" not in spec:
        return []
    host = host or workerpool.placed_host_id(cell.pk) or host_id()
    return cell_machines(spec["plan"], cell.target_name, run_id=run.pk, worker_host=host)


def wanted(
    run: Run, cell: Cell, machines: list[Machine], host: str | None = None
) -> tuple[list[Machine], list[Machine]]:
    """The locks `cell` must hold to start on worker host `host`, given its
    own machines: (those it holds alone, those it shares with its team's
    `isolation: target` cells)."""
    mode = isolation(run)
    alone = [target_lock(run, cell.target_name)]
    if mode == "target":
        return alone, machines
    if mode == "run":
        machines = _run_machines(run, host)
    return [*alone, *machines], []


def take_wanted(
    run: Run,
    cell: Cell,
    machines: list[Machine],
    until=None,
    yields=None,
    host=None,
    yields_for=None,
) -> bool:
    """Take what `cell` needs to start (wanted), all or none; True when taken.

    yields(run ids): for a cell that would share machines (`isolation:
    target`), whether the runs of other teams waiting for one of them come
    first (benchapp.runs.fairshare's order); then it does not take them: the
    team's shares drain and the other team gets its turn, instead of a team
    whose target cells overlap back to back holding the machine for good.
    yields_for(shared keys): the same question asked of a caller that knows
    who waits for what (benchapp.runs.placement.Waiting), without reading
    every waiting run again for each cell."""
    alone, shared = wanted(run, cell, machines, host)
    keys = [key for key, _ in shared]
    if shared and yields_for is not None:
        if yields_for(keys):
            return False
    elif shared and yields is not None:
        others = waiting_for(run, keys)
        if others and yields(others):
            return False
    return take(cell, alone, until, shared=shared, team_id=run.team_id)


def shared_key(key: str, team_id: int, cell_id: int) -> str:
    """The row of one `isolation: target` cell's share of a machine."""
    return f"{key}{SHARED}{team_id} cell {cell_id}"


def _run_machines(run: Run, host: str | None = None) -> list[Machine]:
    """Every machine of every target of the run (one frozen cell per target)."""
    firsts = run.cells.values("target_name").annotate(first=Min("id")).values_list("first")
    found: dict[str, str] = {}
    for cell in Cell.objects.filter(pk__in=[pk for (pk,) in firsts]).only("spec", "target_name"):
        for key, label in machines_of(run, cell, host):
            found.setdefault(key, label)
    return list(found.items())


def take(
    cell: Cell, locks: list[Machine], until=None, shared: list[Machine] = (), team_id=None
) -> bool:
    """Make `cell` the holder of every lock in `locks`, and a sharer (for
    team_id's `isolation: target` cells) of every machine in `shared`, or
    of none; True when taken.

    A lock `cell` already holds is not free: only two dispatches of one run
    at once (a cell finishing on each of two workers) both find its locks
    free, and the one that loses the race must not send the cell again."""
    keys = [key for key, _ in [*locks, *shared]]
    _create_missing([*locks, *shared])
    now = timezone.now()
    until = until or lease()
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
        mine = CellLock.objects.filter(free, key__in=[k for k, _ in locks])
        touched = CellLock.objects.filter(free, key__in=[k for k, _ in shared])
        # The shared machines' own rows stay free; the no-op UPDATE is the
        # compare-and-set that SQLite needs (PostgreSQL's row locks suffice).
        taken = mine.update(holder=cell, lease_expires_at=until) + touched.update(label=F("label"))
        if taken != len(keys) or _shared_by_others(keys, shared, team_id, now):
            transaction.set_rollback(True)
            return False
        for key, label in shared:
            CellLock.objects.update_or_create(
                key=shared_key(key, team_id, cell.pk),
                defaults={"label": label, "holder": cell, "lease_expires_at": until},
            )
    return True


def _shared_by_others(keys: list[str], shared: list[Machine], team_id, now) -> bool:
    """True when a live share of one of the machines stands in the way: any
    share of a machine wanted alone, another team's share of one wanted shared."""
    live = _live_shares(keys, now)
    together = {key for key, _ in shared}
    for row in live:
        machine, team = share_of(row.key)
        if machine not in together or team != team_id:
            return True
    return False


def _live_shares(keys: list[str], now, exclude_cell=None):
    if not keys:
        return []
    prefix = Q()
    for key in keys:
        prefix |= Q(key__startswith=key + SHARED)
    rows = CellLock.objects.filter(prefix, holder__isnull=False, lease_expires_at__gte=now)
    if exclude_cell is not None:
        rows = rows.exclude(holder_id=exclude_cell)
    return list(rows.select_related("holder"))


def share_of(key: str) -> tuple[str, int]:
    """(machine key, team id) of a shared row's key."""
    machine, rest = key.split(SHARED, 1)
    return machine, int(rest.split(" ", 1)[0])


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
    still has queued cells keeps them for its next cell, for one lease,
    unless a cell of another team waits for one of them (the fair-share
    promise: it waits for at most one cell of the run)."""
    held = CellLock.objects.filter(holder=cell)
    run = Run.objects.filter(pk=cell.run_id).only("document", "status", "team_id").first()
    keep = (
        run is not None
        and isolation(run) == "run"
        and run.status in Run.ACTIVE
        and not run.cancel_requested
        and run.cells.filter(status=Cell.QUEUED).exists()
        and not another_team_waits(run, list(held.values_list("key", flat=True)))
    )
    if keep:
        held.update(lease_expires_at=lease())
    else:
        _free(held)


def another_team_waits(run: Run, keys: list[str]) -> bool:
    """True when the next queued cell of a run of another team wants one of keys."""
    return bool(waiting_for(run, keys))


def waiting_for(run: Run, keys: list[str]) -> list[int]:
    """The active runs of other teams whose next queued cell wants one of keys."""
    keys, found = set(keys), []
    waiting = Cell.objects.filter(status=Cell.QUEUED, run__status__in=Run.ACTIVE)
    others = Run.objects.filter(pk__in=waiting.values("run_id")).exclude(team_id=run.team_id)
    for other in others.only("id", "document", "team_id"):
        for cell in next_per_target(other):
            alone, shared = wanted(other, cell, machines_of(other, cell))
            if keys & {key for key, _ in [*alone, *shared]}:
                found.append(other.pk)
                break
    return found


def _free(rows) -> None:
    """Free the lock rows: a share is deleted (one row per cell), a machine's
    own row stays, without a holder."""
    rows.filter(key__contains=SHARED).delete()
    rows.update(holder=None, lease_expires_at=None)


def drop(cell: Cell) -> None:
    """Let go of every lock the cell holds, whatever its run's isolation."""
    _free(CellLock.objects.filter(holder=cell))


def renew(cell: Cell, until) -> None:
    CellLock.objects.filter(holder=cell).update(lease_expires_at=until)


def release_expired(now) -> None:
    _free(CellLock.objects.filter(lease_expires_at__lt=now))


def release_run(run: Run) -> None:
    """A finished or cancelled run lets go of whatever its cells still hold."""
    _free(CellLock.objects.filter(holder__run=run).exclude(holder__status=Cell.RUNNING))


def blockers(run: Run, cell: Cell) -> list[str]:
    """Why `cell` cannot take its locks now: "waiting for machine X, held by
    run R cell K" per lock another cell holds ([] when none is held)."""
    alone, shared = wanted(run, cell, machines_of(run, cell))
    locks = [*alone, *shared]
    now = timezone.now()
    held = (
        CellLock.objects.filter(key__in=[k for k, _ in locks], lease_expires_at__gte=now)
        .exclude(holder=None)
        .exclude(holder_id=cell.pk)
        .select_related("holder")
    )
    by_key = {lock.key: lock for lock in held}
    together = {key for key, _ in shared}
    for row in _live_shares([k for k, _ in locks], now, exclude_cell=cell.pk):
        machine, team = share_of(row.key)
        if machine not in together or team != run.team_id:
            by_key.setdefault(machine, row)
    return [
        f"waiting for {label}, held by run {lock.holder.run_id} cell {lock.holder.key}"
        for key, label in locks  # in the cell's own order: target, server, hosts
        if (lock := by_key.get(key)) is not None
        and not (lock.holder.run_id == run.pk and lock.holder.status in Cell.TERMINAL)
    ]


OVERLAPS_SHOWN = 10


def overlaps(run: Run, only: Cell | None = None) -> list[str]:
    """Where a cell of `run` (or only `only`) ran at the same moment as
    another cell (of any run) on a shared machine: "cell K and run R cell K2
    on machine X". Whatever the isolation: the team's own `isolation:
    target` cells may share machines, and a lease that ran out (a worker
    that stalled) lets another cell in; [] when none did."""
    cells = run.cells if only is None else run.cells.filter(pk=only.pk)
    mine = [c for c in cells.exclude(started_at=None).exclude(finished_at=None) if c.machines]
    if not mine:
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
            if other.pk == cell.pk or (
                only is None and other.run_id == run.pk and other.pk < cell.pk
            ):
                continue  # each pair of this run once
            if other.started_at < cell.finished_at and cell.started_at < other.finished_at:
                shared = [keys[k] for k, _ in other.machines if k in keys]
                if shared:
                    who = "cell" if other.run_id == run.pk else f"run {other.run_id} cell"
                    found.append(f"cell {cell.key} and {who} {other.key} on {', '.join(shared)}")
    return found[:OVERLAPS_SHOWN]
