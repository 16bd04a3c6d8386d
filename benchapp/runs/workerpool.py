"""The pool of worker hosts: registration, heartbeat, placement, drain, loss.

- A worker process registers its host when it starts (benchapp.celery,
  `worker_ready`): the host's stable id (benchapp.runs.hostid), its own
  queue, its slots (the process's concurrency; a host's slots are those of
  its live processes), the tools it has and their versions (each tool's
  version command, from the registry), its sandbox and cgroup mechanism and
  limits, architecture and Benchboard version. A thread of the process then
  heartbeats every BENCHBOARD_HEARTBEAT_SECONDS.
- Placement (placement.take_locks): once at least one host is
  registered, a cell is sent to one host's own queue, chosen among the hosts
  that are up, not draining, have the tools the cell runs locally and a
  free slot, most free slots first; a local cell's machine lock is that
  host's id, so two local cells never share a host. With no host
  registered (a fresh install) cells go to the shared queue, as before.
- Drain: the host takes no new cell; cells sent but not started there go
  back to dispatch; running ones finish. Resume undoes it.
- Loss: a host not seen for BENCHBOARD_LEASE_SECONDS is lost (reap, every
  BENCHBOARD_REAP_SECONDS): its running cells' leases end now, so the
  reaper re-queues them at once on the other hosts, and their cell pages
  say so.
"""

from __future__ import annotations

import logging
import platform
import shutil
import subprocess
import threading
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from importlib import metadata
from pathlib import Path

from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Count, Q
from django.utils import timezone

from benchapp.dispatch import DISPATCH_ACTIVE, DISPATCH_RUN, send
from benchapp.models import Cell, CellLock, CellPlacement, WorkerHost, WorkerProcess
from benchapp.plans import toolhosts
from benchapp.runs.hostid import host_id, host_queue, hostname
from benchapp.store import frozenparts
from runners import sandbox
from runners.tools import TOOLS

log = logging.getLogger(__name__)

UP, DRAINING, LOST = "up", "draining", "lost"
VERSION_TIMEOUT_S = 15


# -------------------------------------------------------------- inventory


def tool_versions() -> dict[str, str]:
    """{tool: version} of every registry tool found on this host's PATH."""
    found = {}
    for name, module in TOOLS.items():
        argv = module.version_command()
        if shutil.which(argv[0]) is None:
            continue
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=VERSION_TIMEOUT_S, check=False
            )
            found[name] = module.parse_version(done.stdout + done.stderr) or "unknown"
        except (OSError, subprocess.SubprocessError, ValueError):
            found[name] = "unknown"
    return found


def cgroup_mechanism() -> str:
    """How runners.cgroups limits a tool here: cgroup v2, v1, or rlimits only."""
    root = Path("/sys/fs/cgroup")
    if (root / "cgroup.controllers").exists():
        return "cgroup v2"
    if (root / "cpu").exists() or (root / "memory").exists():
        return "cgroup v1"
    return "rlimits"


def sandbox_facts() -> dict:
    problem = sandbox.unavailable(settings.BENCHBOARD_SANDBOX_USER)
    return {
        "mechanism": "bubblewrap" if problem is None else "none",
        "problem": problem or "",
        "cgroups": cgroup_mechanism(),
        "limits": {
            "cpus": settings.BENCHBOARD_SANDBOX_CPUS,
            "memory_mb": settings.BENCHBOARD_SANDBOX_MEMORY_MB,
            "pids": settings.BENCHBOARD_SANDBOX_PIDS,
            "scratch_mb": settings.BENCHBOARD_SANDBOX_SCRATCH_MB,
            "seconds": settings.BENCHBOARD_SANDBOX_SECONDS,
        },
    }


def benchboard_version() -> str:
    try:
        return metadata.version("benchboard")
    except metadata.PackageNotFoundError:
        return "unknown"


# ----------------------------------------------------------- registration


def register(name: str, pid: int, slots: int, queues: list[str]) -> WorkerProcess:
    """Write (or refresh) this host's row and one row for this worker process."""
    now = timezone.now()
    facts = dict(
        hostname=hostname(),
        queue=host_queue(),
        arch=platform.machine(),
        version=benchboard_version(),
        tools=tool_versions(),
        sandbox=sandbox_facts(),
        last_seen_at=now,
        lost_at=None,
    )
    with transaction.atomic():
        host, created = WorkerHost.objects.select_for_update().get_or_create(
            host_id=host_id(), defaults={**facts, "registered_at": now}
        )
        if not created:
            WorkerHost.objects.filter(pk=host.pk).update(**facts)
        process, _ = WorkerProcess.objects.update_or_create(
            host=host,
            name=name,
            pid=pid,
            defaults=dict(
                slots=max(1, slots), queues=queues, started_at=now, last_seen_at=now, stopped=False
            ),
        )
    log.info("worker host %s registered (%s, %s slots)", host.host_id, name, slots)
    _dispatch_active()  # a host that joins takes waiting cells at once
    return process


def _dispatch_active() -> None:
    """One pass over the active runs (benchapp.runs.reaper.dispatch_active):
    a message per active run was hundreds of messages per worker start
    under load, each a dispatch ahead of the cells in the worker's queue."""
    send(DISPATCH_ACTIVE)


def beat(process_pk: int) -> None:
    """One heartbeat of a worker process and its host."""
    now = timezone.now()
    process = WorkerProcess.objects.filter(pk=process_pk)
    process.update(last_seen_at=now, stopped=False)
    host_pk = process.values_list("host_id", flat=True).first()
    if host_pk is not None:
        WorkerHost.objects.filter(pk=host_pk).update(last_seen_at=now, lost_at=None)


def stopped(process_pk: int) -> None:
    """A worker process that stops cleanly gives its slots back at once."""
    WorkerProcess.objects.filter(pk=process_pk).update(stopped=True)


class HostBeat(threading.Thread):
    """The heartbeat of one worker process, in the worker's main process; a
    failed beat (database away) is logged and the next one tried."""

    def __init__(self, process_pk: int):
        super().__init__(name="benchboard-host-beat", daemon=True)
        self.process_pk = process_pk
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(settings.BENCHBOARD_HEARTBEAT_SECONDS):
            try:
                close_old_connections()
                beat(self.process_pk)
            except Exception:
                log.exception("worker host heartbeat failed")
        connection.close()

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=10)


# ------------------------------------------------------------------ state


def _lease_start(now=None):
    return (now or timezone.now()) - timedelta(seconds=settings.BENCHBOARD_LEASE_SECONDS)


def state(host: WorkerHost, now=None) -> str:
    if host.last_seen_at < _lease_start(now):
        return LOST
    return DRAINING if host.draining else UP


def slots(hosts, now=None) -> dict[int, int]:
    """{host pk: slots of its live (heartbeating, not stopped) processes}."""
    rows = WorkerProcess.objects.filter(
        host__in=hosts, stopped=False, last_seen_at__gte=_lease_start(now)
    ).values_list("host_id", "slots")
    found: dict[int, int] = {}
    for host_pk, n in rows:
        found[host_pk] = found.get(host_pk, 0) + n
    return found


def busy(hosts, now=None) -> dict[int, int]:
    """{host pk: cells running there, or sent there within a lease and not started}."""
    placed = Cell.objects.filter(placement__host__in=hosts).filter(
        Q(status=Cell.RUNNING) | Q(status=Cell.QUEUED, placement__sent_at__gte=_lease_start(now))
    )
    rows = placed.values("placement__host").annotate(n=Count("id"))
    return {row["placement__host"]: row["n"] for row in rows}


# The parts of a frozen plan the tool check reads (the plan's scripts are left unread).
TOOL_KEYS = ("tool", "targets", "client", "more_clients")


def candidates(cell: Cell) -> list[WorkerHost | None]:
    """The hosts `cell` may be sent to, best first; [None] when no host is
    registered (the shared queue). [] when none may take it now."""
    hosts = list(WorkerHost.objects.all())
    if not hosts:
        return [None]
    now = timezone.now()
    need = toolhosts.needed_tools(frozenparts.frozen(cell, plan_keys=TOOL_KEYS))
    live = [h for h in hosts if state(h, now) == UP and need <= set(h.tools)]
    total, used = slots(live, now), busy(live, now)
    free = {h.pk: total.get(h.pk, 0) - used.get(h.pk, 0) for h in live}
    return sorted(
        (h for h in live if free[h.pk] > 0), key=lambda h: (-free[h.pk], h.hostname, h.host_id)
    )


def why_no_host(cell: Cell) -> str | None:
    """Why no worker host may take `cell` now ("no worker host may take it:
    a lost, b draining, c without fio, d with no free slot"); None when one
    may, or none is registered."""
    hosts = list(WorkerHost.objects.all())
    if not hosts or candidates(cell):
        return None
    now = timezone.now()
    need = toolhosts.needed_tools(frozenparts.frozen(cell, plan_keys=TOOL_KEYS))
    said = []
    for host in hosts:
        current = state(host, now)
        missing = sorted(need - set(host.tools))
        if current != UP:
            said.append(f"{host.hostname} {current}")
        elif missing:
            said.append(f"{host.hostname} without {', '.join(missing)}")
        else:
            said.append(f"{host.hostname} with no free slot")
    return "no worker host may take it: " + ", ".join(said)


def place(cell: Cell, host: WorkerHost | None) -> None:
    """Write where `cell` is sent (no row: the shared queue)."""
    if host is None:
        CellPlacement.objects.filter(cell_id=cell.pk).delete()
        return
    CellPlacement.objects.update_or_create(
        cell_id=cell.pk, defaults={"host": host, "sent_at": timezone.now()}
    )


def queue_of(cell_id: int) -> str | None:
    """The queue of the host `cell_id` was placed on; None: the shared queue."""
    return (
        CellPlacement.objects.filter(cell_id=cell_id, host__isnull=False)
        .values_list("host__queue", flat=True)
        .first()
    )


def placed_host_id(cell_id: int) -> str | None:
    return (
        CellPlacement.objects.filter(cell_id=cell_id)
        .values_list("host__host_id", flat=True)
        .first()
    )


def is_mine(cell_id: int) -> bool:
    """False when the cell was placed on another host since this message was
    sent (this host drained or was lost meanwhile): the other host runs it,
    with the machine lock of that host."""
    placed = CellPlacement.objects.filter(cell_id=cell_id).values_list("host__host_id").first()
    if placed is None:
        return True  # sent to the shared queue: any worker's
    return placed[0] == host_id()  # None: taken back (drained, lost), not yet placed again


# --------------------------------------------------------- drain and loss


def drain(host: WorkerHost) -> int:
    """Send `host` no new cells; the cells sent to it and not started go
    back to dispatch (another host takes them). Returns how many."""
    WorkerHost.objects.filter(pk=host.pk).update(draining=True)
    return _unplace_queued(host, f"host {host.hostname} drained: sent to another host")


def resume(host: WorkerHost) -> None:
    WorkerHost.objects.filter(pk=host.pk).update(draining=False)
    _dispatch_active()


def _unplace_queued(host: WorkerHost, note: str) -> int:
    cells = list(Cell.objects.filter(placement__host=host, status=Cell.QUEUED))
    for cell in cells:
        CellLock.objects.filter(holder=cell).update(holder=None, lease_expires_at=None)
        _note(cell.pk, note)
        CellPlacement.objects.filter(cell_id=cell.pk).update(host=None)
    for run_id in {c.run_id for c in cells}:
        send(DISPATCH_RUN, run_id)
    return len(cells)


class PoolRefused(Exception):
    """An operator's request the pool cannot do (forgetting a live host)."""


def forget(host: WorkerHost) -> None:
    """Delete a removed host's row; refused while a worker of it heartbeats."""
    if slots([host]).get(host.pk):
        raise PoolRefused(
            f"{host.hostname} still has a live worker: drain it, stop its workers, then forget it"
        )
    host.delete()


def _said(action, done: str):
    def run(host: WorkerHost) -> str:
        result = action(host)
        extra = f" ({result} waiting cells sent elsewhere)" if isinstance(result, int) else ""
        return f"{host.host_id}: {done}{extra}"

    return run


# `manage.py workers ACTION HOST_ID` ("list" takes no host).
ACTIONS = {
    "list": None,
    "drain": _said(drain, "draining"),
    "resume": _said(resume, "resumed"),
    "forget": _said(forget, "forgotten"),
}


def reap_lost(now=None) -> list[str]:
    """Mark hosts not seen for a lease lost, and end the leases of their
    running cells (benchapp.runs.reaper then re-queues them on other hosts).
    Returns the host ids found lost now."""
    now = now or timezone.now()
    lost = list(WorkerHost.objects.filter(last_seen_at__lt=_lease_start(now), lost_at=None))
    for host in lost:
        WorkerHost.objects.filter(pk=host.pk).update(lost_at=now)
        seen = timezone.localtime(host.last_seen_at).strftime("%H:%M:%S")
        note = f"host {host.hostname} lost (no heartbeat since {seen}): re-queued on another host"
        running = list(Cell.objects.filter(placement__host=host, status=Cell.RUNNING))
        ended = now - timedelta(seconds=1)
        for cell in running:
            Cell.objects.filter(pk=cell.pk, status=Cell.RUNNING).update(lease_expires_at=ended)
            CellLock.objects.filter(holder=cell).update(lease_expires_at=ended)
            _note(cell.pk, note)
        _unplace_queued(host, note)
        log.warning("worker host %s lost; %d running cells re-queued", host.host_id, len(running))
    return [h.host_id for h in lost]


def note_lease_ended(cell_id: int) -> None:
    """Say on a re-queued cell's page which host lost it when its own lease
    ran out before the host was found lost (the host's heartbeat and the
    cell's lease end about together: either may be seen first)."""
    placement = CellPlacement.objects.select_related("host").filter(cell_id=cell_id).first()
    if placement is None or placement.host is None:
        return
    name = placement.host.hostname
    if not any(f"host {name} lost" in note for note in placement.notes):
        _note(cell_id, f"host {name} lost the cell (its lease ran out): re-queued on another host")


def _note(cell_id: int, text: str) -> None:
    placement = CellPlacement.objects.filter(cell_id=cell_id).first()
    if placement is not None:
        stamp = timezone.localtime().strftime("%H:%M:%S")
        placement.notes = [*placement.notes, f"{stamp} {text}"]
        placement.save(update_fields=["notes"])


# ------------------------------------------------------------------ views


@dataclass
class HostView:
    """One host as the Workers page and the API show it."""

    host_id: str
    hostname: str
    state: str
    slots: int
    busy: int
    free: int
    queue: str
    arch: str
    version: str
    version_skew: bool
    tools: dict
    sandbox: dict
    registered_at: object
    last_seen_at: object
    running: list = field(default_factory=list)  # [{"cell", "run", "key", "team"}]

    def to_dict(self) -> dict:
        return asdict(self)


def overview(now=None) -> list[HostView]:
    """Every registered host with its state, slots, running cells and skew
    (a Benchboard version other than the most common one, or a tool version
    other than the other hosts')."""
    now = now or timezone.now()
    hosts = list(WorkerHost.objects.all())
    total, used = slots(hosts, now), busy(hosts, now)
    versions = [h.version for h in hosts]
    usual = max(set(versions), key=versions.count) if versions else ""
    running = _running_by_host(hosts)
    return [
        HostView(
            host_id=h.host_id,
            hostname=h.hostname,
            state=state(h, now),
            slots=total.get(h.pk, 0),
            busy=used.get(h.pk, 0),
            free=max(0, total.get(h.pk, 0) - used.get(h.pk, 0)),
            queue=h.queue,
            arch=h.arch,
            version=h.version,
            version_skew=h.version != usual or _tool_skew(h, hosts),
            tools=h.tools,
            sandbox=h.sandbox,
            registered_at=h.registered_at,
            last_seen_at=h.last_seen_at,
            running=running.get(h.pk, []),
        )
        for h in hosts
    ]


def _tool_skew(host: WorkerHost, hosts: list[WorkerHost]) -> bool:
    for tool, version in host.tools.items():
        others = {h.tools[tool] for h in hosts if tool in h.tools}
        if len(others) > 1 and version != max(others):
            return True
    return False


def _running_by_host(hosts) -> dict[int, list[dict]]:
    cells = (
        Cell.objects.filter(placement__host__in=hosts, status=Cell.RUNNING)
        .select_related("run", "placement")
        .only("id", "key", "run_id", "run__team_id", "run__name", "placement__host_id")
    )
    found: dict[int, list[dict]] = {}
    for cell in cells:
        found.setdefault(cell.placement.host_id, []).append(
            {"cell": cell.pk, "run": cell.run_id, "key": cell.key, "run_name": cell.run.name}
        )
    return found


def get_host(host: str) -> WorkerHost | None:
    return WorkerHost.objects.filter(host_id=host).first()
