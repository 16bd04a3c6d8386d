"""Placement: which queued cells of a run take their locks now, and on which
worker host; and, when something frees up, which waiting runs are worth a
dispatch at all.

`take(run, waiting)` is the heart of a dispatch (benchapp.runs.orchestration
holds the run's row and sends what it returns): the next queued cell of each
target, within the run's concurrency and its team's cap of running cells
(benchapp.runs.fairshare), takes every lock it needs (benchapp.runs.machines)
on the first worker host that may run it (benchapp.runs.workerpool).

`Waiting` is one look at every run that waits, taken once per wake-up: the
fair order, each team's room, the target locks held, the worker slots free,
and which locks each waiting run's next cells want. With 500 runs of 50 teams
waiting (issue 41, tests/faults/test_load.py), a finished cell used to
dispatch each of them in turn, and each lock taking of an `isolation: target`
cell asked every other waiting run what it wanted (fair share: it yields to
a team that comes first): O(runs²) queries for one finished cell, tens of
seconds of its worker's time. Now the runs that cannot send anything (their
team at its cap, their targets held by another run, no worker slot left)
are skipped without a transaction, and the question "does a team that comes
first want this machine" is answered from the one look.
"""

from __future__ import annotations

from collections import defaultdict

from django.db.models import Min, Q
from django.utils import timezone

from benchapp.models import Cell, CellLock, Run, Team, WorkerHost
from benchapp.runs import fairshare, machines, workerpool
from benchapp.runs.hostid import host_id
from benchapp.store import frozenparts

# The worker host of a cell not placed yet: any host up with a free slot.
ANY_HOST = "any worker host"
ANY_HOST_KEY = f"host {ANY_HOST}"
_KEYS: dict[int, tuple[frozenset, frozenset]] = {}  # Waiting._needs, per cell id
KEYS_KEPT = 50_000


class Waiting:
    """The runs that wait for a turn, as one dispatch pass sees them.

    order: active runs with queued cells, least served first (fairshare);
    the rest is read when first needed and updated as the pass sends cells,
    never re-read: each dispatch still decides under its run's and its
    team's row locks and takes its locks with a compare-and-set, so a stale
    look costs a dispatch that sends nothing, never a cell sent twice or
    over a cap."""

    def __init__(self, order: list[int] | None = None):
        self.order = fairshare.waiting_runs() if order is None else order
        self.position = {run_id: i for i, run_id in enumerate(self.order)}
        self._team_of: dict[int, int] | None = None
        self._rooms: dict[int, int] | None = None
        self._next: dict[int, list[Cell]] | None = None
        self._cell_keys: dict[int, tuple[frozenset, frozenset]] | None = None
        self._held: dict[str, tuple] | None = None
        self._shares: dict[str, set[int]] = defaultdict(set)
        self._hosts: list[str] | None = None
        self._worker_keys: set[str] | None = None
        self._sent_cells: set[int] = set()
        self.free_slots: int | None = None  # None: no host registered (the shared queue)

    # ------------------------------------------------------------ the look

    def team_of(self, run_id: int) -> int | None:
        if self._team_of is None:
            rows = Run.objects.filter(pk__in=self.order).values_list("pk", "team_id")
            self._team_of = dict(rows)
        return self._team_of.get(run_id)

    def room(self, team_id: int) -> int:
        """The team's room as the look saw it, less what this pass sent."""
        if self._rooms is None:
            teams = {self.team_of(r) for r in self.order} - {None}
            limits = {t.pk: t.running_cells_limit for t in Team.objects.filter(pk__in=teams)}
            used = fairshare.running_cells_of(teams)
            self._rooms = {t: max(limits[t] - used.get(t, 0), 0) for t in limits}
        return self._rooms.get(team_id, 0)

    def next_cells(self, run_id: int) -> list[Cell]:
        """The first queued cell of each target of a waiting run
        (machines.next_per_target, for every waiting run in two queries)."""
        if self._next is None:
            self._next = _next_per_target(self.order)
        return self._next.get(run_id, [])

    def _needs(self) -> dict[int, tuple[frozenset, frozenset]]:
        """{cell id: (keys it holds alone, keys it shares)} of every next cell,
        its worker host written ANY_HOST (it is not placed yet). A cell's
        keys never change (its frozen spec and its run's isolation do not):
        this process keeps them (_KEYS), so a pass reads only new cells."""
        if self._cell_keys is None:
            cells = [c for r in self.order for c in self.next_cells(r)]
            new = [c for c in cells if c.pk not in _KEYS]
            if new:
                if len(_KEYS) > KEYS_KEPT:
                    _KEYS.clear()
                runs = Run.objects.filter(pk__in={c.run_id for c in new}).only(
                    "id", "document", "team_id"
                )
                runs = {run.pk: run for run in runs}
                specs = frozenparts.frozen_many(new, machines.PLAN_KEYS)
                for cell in new:
                    run = runs[cell.run_id]
                    found = machines.machines_of(run, cell, ANY_HOST, specs[cell.pk])
                    alone, shared = machines.wanted(run, cell, found, ANY_HOST)
                    _KEYS[cell.pk] = (
                        frozenset(k for k, _ in alone),
                        frozenset(k for k, _ in shared),
                    )
            self._cell_keys = {c.pk: _KEYS[c.pk] for c in cells}
        return self._cell_keys

    def wants(self, run_id: int) -> set[str]:
        """Every lock key the next cells of a waiting run want."""
        needs, found = self._needs(), set()
        for cell in self.next_cells(run_id):
            if cell.pk in self._sent_cells:
                continue  # sent in this pass: it holds its locks, it waits for none
            alone, shared = needs[cell.pk]
            found |= alone | shared
        return found

    def _locks(self) -> None:
        """The live locks: {key: holder's run id}, {machine key: teams sharing it}."""
        if self._held is None:
            self._held = {}
            live = CellLock.objects.filter(
                holder__isnull=False, lease_expires_at__gte=timezone.now()
            ).values_list("key", "holder__run_id", "holder__run__team_id")
            for key, run_id, team_id in live:
                self._hold(key, run_id, team_id)

    def _hold(self, key: str, run_id: int, team_id: int | None) -> None:
        if machines.SHARED in key:
            machine, team = machines.share_of(key)
            self._shares[machine].add(team)
        else:
            self._held[key] = (run_id, team_id)

    def hosts(self) -> list[str]:
        """The worker hosts a cell may go to now: those up with a free slot
        (this host when none is registered: the shared queue)."""
        if self._hosts is None:
            registered = list(WorkerHost.objects.all())
            self._worker_keys = {f"host {h.host_id}" for h in registered} | {f"host {host_id()}"}
            if not registered:
                self.free_slots, self._hosts = None, [host_id()]
            else:
                up = [h for h in registered if workerpool.state(h) == workerpool.UP]
                total, used = workerpool.slots(up), workerpool.busy(up)
                free = {h.host_id: total.get(h.pk, 0) - used.get(h.pk, 0) for h in up}
                self.free_slots = sum(max(n, 0) for n in free.values())
                self._hosts = [h for h, n in free.items() if n > 0]
        return self._hosts

    # ------------------------------------------------------------ decisions

    def yields(self, run: Run, others: list[int]) -> bool:
        """Whether a run of `others` (runs of other teams waiting for one of
        run's machines) comes first in the fair order."""
        if run.pk not in self.position or any(o not in self.position for o in others):
            return fairshare.fair_order([run.pk, *others])[0] != run.pk
        mine = self.position[run.pk]
        return any(self.position[o] < mine for o in others)

    def waiting_for(self, run: Run, keys: list[str]) -> list[int]:
        """machines.waiting_for, from the look: the waiting runs of other
        teams whose next cell wants one of keys (a worker host is wanted by
        every cell that would run its tools on a worker host)."""
        self.hosts()
        wanted = {ANY_HOST_KEY if k in self._worker_keys else k for k in keys}
        return [
            other
            for other in self.order
            if self.team_of(other) != run.team_id
            and self.wants(other) & wanted
            and self.could_go(other, but_for=run.team_id)
        ]

    def could_go(self, run_id: int, but_for: int) -> bool:
        """Whether the run could send a cell now (room, locks), were it not
        for team but_for's cells: yielding a machine to a run that cannot
        take it anyway (its own target busy) would leave the machine idle."""
        team = self.team_of(run_id)
        room = team is None or self.room(team) > 0
        return room and not self.blocked(run_id, but_for=but_for)

    def blocked(self, run_id: int, but_for: int | None = None) -> bool:
        """True when no next cell of the run could take its locks now: for
        each, a lock it wants is held by a cell of another run or shared by
        another team (its worker host: on every host with a free slot);
        but_for: a team whose locks and shares do not count."""
        cells = self.next_cells(run_id)
        if not cells:
            return False  # nothing queued: a dispatch may end the run
        team, needs, hosts = self.team_of(run_id), self._needs(), self.hosts()
        self._locks()

        def taken(key: str, alone: bool) -> bool:
            if key == ANY_HOST_KEY:
                return all(taken(f"host {h}", alone) for h in hosts)
            holder, holder_team = self._held.get(key, (None, None))
            if holder is not None and holder != run_id and holder_team != but_for:
                return True
            sharers = self._shares.get(key, set()) - {but_for}
            return bool(sharers) and (alone or sharers != {team})

        return all(
            any(taken(k, True) for k in needs[c.pk][0])
            or any(taken(k, False) for k in needs[c.pk][1])
            for c in cells
        )

    def sent(self, run_id: int, cell_ids: list[int]) -> None:
        """What a dispatch of the pass sent: its locks held, its team's room
        and the worker slots used."""
        if not cell_ids:
            # Another pass (another worker's finished cell, the reaper) took
            # what this look saw free: read the slots and locks again, or
            # each later run of this pass is a dispatch that sends nothing.
            self._hosts, self._held, self._shares = None, None, defaultdict(set)
            return
        team = self.team_of(run_id)
        if self._rooms is not None and team in self._rooms:
            self._rooms[team] = max(self._rooms[team] - len(cell_ids), 0)
        self._sent_cells.update(cell_ids)
        if self.free_slots is not None:
            self.free_slots -= len(cell_ids)
            self._hosts = None  # read again: which hosts still have a slot
        if self._held is not None:
            taken = CellLock.objects.filter(holder_id__in=cell_ids).values_list("key", flat=True)
            for key in taken:
                self._hold(key, run_id, team)

    def turns(self, run_ids: list[int], keep: int | None = None):
        """run_ids in their order, without those that could send nothing now:
        their team at its cap of running cells, every next cell of theirs
        blocked by a lock (blocked), or no worker slot left (the pass's own
        sends counted). keep: dispatched whatever (a finished cell's run,
        which may end now); so is a run that has no queued cell (it may end).
        A generator: each decision sees the sends before it (`sent`)."""
        self._needs()  # read before any dispatch holds a row lock
        for run_id in run_ids:
            if run_id != keep and run_id in self.position and self.next_cells(run_id):
                self.hosts()
                if self.free_slots is not None and self.free_slots <= 0:
                    continue
                team = self.team_of(run_id)
                if team is not None and self.room(team) == 0:
                    continue
                if self.blocked(run_id):
                    continue
            yield run_id


def _next_per_target(run_ids: list[int]) -> dict[int, list[Cell]]:
    """{run id: the first queued cell of each of its targets, in index order}."""
    if not run_ids:
        return {}
    queued = Cell.objects.filter(run_id__in=run_ids, status=Cell.QUEUED)
    firsts: dict[int, list[int]] = defaultdict(list)
    for run_id, first in (
        queued.order_by().values("run_id", "target_name").annotate(first=Min("index"))
    ).values_list("run_id", "first"):
        firsts[run_id].append(first)
    which = Q()
    for run_id, indexes in firsts.items():
        which |= Q(run_id=run_id, index__in=indexes)
    found: dict[int, list[Cell]] = defaultdict(list)
    cells = (
        queued.filter(which)
        .order_by("run_id", "index")
        .only("id", "index", "target_name", "run_id", "key", "spec")
    )
    for cell in cells:
        found[cell.run_id].append(cell)
    return found


# ------------------------------------------------------------- one run


def take(run: Run, waiting: Waiting | None = None) -> tuple[list[int], bool]:
    """The cells of `run` (its row locked by the caller) that take their locks
    now: (their ids, whether the run still has cells queued or running).

    Cells are taken in index order per target, within the run's concurrency
    and its team's room; a target with a cell of the run running or sent is
    skipped."""
    queued = machines.next_per_target(run)
    busy = set(run.cells.filter(status=Cell.RUNNING).values_list("target_name", flat=True))
    held = set(
        CellLock.objects.filter(holder__run=run, holder__status=Cell.QUEUED).values_list(
            "holder__target_name", flat=True
        )
    )
    slots = (run.concurrency - len(busy | held)) if run.concurrency else len(queued)
    if queued:
        # The team's row orders its dispatches: two runs of one team must not
        # both count the same free place under its cap.
        team = Team.objects.select_for_update().get(pk=run.team_id)
        slots = min(slots, fairshare.room(team))
    sent = []
    for cell in queued:
        if len(sent) >= slots:
            break
        if cell.target_name in busy or cell.target_name in held:
            continue
        if take_locks(run, cell, waiting):
            sent.append(cell.pk)
    return sent, bool(queued or busy)


def take_locks(run: Run, cell: Cell, waiting: Waiting | None = None) -> bool:
    """Take every lock the cell needs (benchapp.runs.machines), all or none,
    on the first worker host that may run it (benchapp.runs.workerpool: its
    local machine is that host's); on success the cell's machines are
    written on it for the results page and it is placed on that host.

    waiting: the pass's look at the waiting runs, which answers whether a
    run of another team that wants one of its shared machines comes first;
    without it, the waiting runs are read here."""

    def yields(others: list[int]) -> bool:  # another team waiting comes first
        return fairshare.fair_order([run.pk, *others])[0] != run.pk

    def yields_to_waiting(keys: list[str]) -> bool:
        others = waiting.waiting_for(run, keys)
        return bool(others) and waiting.yields(run, others)

    tried = []
    for host in workerpool.candidates(cell):
        host_key = host.host_id if host else None
        found = machines.machines_of(run, cell, host_key)
        locks = machines.wanted(run, cell, found, host_key)
        if locks in tried:
            continue  # the same locks on another host (an SSH cell): taken already
        tried.append(locks)
        if waiting is None:
            taken = machines.take_wanted(run, cell, found, yields=yields, host=host_key)
        else:
            taken = machines.take_wanted(
                run, cell, found, yields_for=yields_to_waiting, host=host_key
            )
        if taken:
            Cell.objects.filter(pk=cell.pk).update(machines=[list(m) for m in found])
            workerpool.place(cell, host)
            return True
    return False
