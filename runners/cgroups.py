"""Hard limits on one sandboxed tool run: a cgroup of its own, or rlimits as the floor.

make_group(limits) returns the Group a tool runs in, by the first mechanism
this host offers:

- cgroup v2, where /sys/fs/cgroup is the unified hierarchy and the worker's
  own group can hand cpu, memory and pids to a child (cpu.max, memory.max,
  memory.swap.max 0, pids.max);
- cgroup v1, for each of the cpu, memory and pids controllers mounted
  (cpu.cfs_quota_us, memory.limit_in_bytes and memsw, pids.max); a
  controller that is missing falls back to its rlimit;
- rlimits only (RLIMIT_AS, RLIMIT_NPROC, RLIMIT_CPU) when no group can be
  made (no cgroup file system, or a worker not allowed to write it).

The group is made inside the worker's own group of each hierarchy, one per
cell: every local process of the cell (each local client, the background
stress-ng, the telemetry samplers) joins the same group, so the limits bound
the whole cell, not each process (runners.executors.local makes it at the
cell's first sandboxed process and removes it when the cell ends).
Group.enter() runs in the child before it drops privileges and execs, so
bwrap and everything the tool forks are inside; Group.marks() reads the
group's event counters as a process starts and Group.breach() compares them
after it ends (an OOM kill, a refused fork during its life); Group.remove()
deletes the group, killing whatever is left in it.

Where no group can be made, the rlimits are per process (RLIMIT_NPROC per
user): the floor, not the cell's bound.
"""

from __future__ import annotations

import itertools
import os
import resource
import signal
import time
from dataclasses import dataclass, field

from runners.limits import MB, Limits

ROOT = "/sys/fs/cgroup"
PERIOD_US = 100_000
CONTROLLERS = ("cpu", "memory", "pids")
_serial = itertools.count(1)


@dataclass
class Group:
    """The cgroup directories (controller -> path) one cell's local processes
    share, and the rlimits each of them gets."""

    limits: Limits
    version: str | None = None  # "v2", "v1" or None (rlimits only)
    dirs: dict[str, str] = field(default_factory=dict)
    rlimits: dict[int, int] = field(default_factory=dict)

    def describe(self) -> str:
        """What applied, for the cell's facts: 'cgroup v1: cpu 2.0, memory 4096 MB, pids 512'."""
        grouped = ", ".join(_shown(self.limits, c) for c in CONTROLLERS if c in self.dirs)
        floor = ", ".join(_RLIMIT_SHOWN[r](v) for r, v in self.rlimits.items())
        if not self.dirs:
            return f"rlimits only: {floor}"
        return f"cgroup {self.version}: {grouped}" + (f"; rlimits: {floor}" if floor else "")

    def enter(self) -> None:
        """In the child, before the uid drop: join the group, set the rlimits."""
        pid = str(os.getpid())
        for path in self.dirs.values():
            with open(os.path.join(path, "cgroup.procs"), "w") as procs:
                procs.write(pid)
        for which, value in self.rlimits.items():
            resource.setrlimit(which, (value, _hard(which, value)))

    def marks(self) -> dict[str, int]:
        """The group's event counters now: what a process's breach() is measured from."""
        return {
            "oom_kill": _counter(self.dirs.get("memory"), _MEMORY_EVENTS[self.version], "oom_kill"),
            "pids_max": _counter(self.dirs.get("pids"), "pids.events", "max"),
            "periods": _counter(self.dirs.get("cpu"), "cpu.stat", "nr_periods"),
            "throttled": _counter(self.dirs.get("cpu"), "cpu.stat", "nr_throttled"),
        }

    def breach(self, exit_code: int | None, since: dict[str, int] | None = None) -> str | None:
        """The limit the group hit since `since` (its marks() when the process
        started; None: since the group was made), as a cell error, or None.
        The group is the cell's: a limit hit while this process ran is the
        cell's limit, whichever of its processes pushed it over."""
        now, since = self.marks(), since or {}
        if now["oom_kill"] > since.get("oom_kill", 0):
            return f"killed: memory limit {self.limits.memory_mb} MB (BENCHBOARD_SANDBOX_MEMORY_MB)"
        if now["pids_max"] > since.get("pids_max", 0):
            return (
                f"pids limit {self.limits.pids} reached: the tool could not start more processes "
                "or threads (BENCHBOARD_SANDBOX_PIDS)"
            )
        if exit_code == 128 + signal.SIGXCPU and resource.RLIMIT_CPU in self.rlimits:
            seconds = self.rlimits[resource.RLIMIT_CPU]
            return (
                f"killed: CPU time limit {seconds} s "
                "(BENCHBOARD_SANDBOX_CPUS × BENCHBOARD_SANDBOX_SECONDS)"
            )
        if exit_code == 128 + signal.SIGXFSZ and resource.RLIMIT_FSIZE in self.rlimits:
            return (
                f"scratch directory full: file size limit {self.limits.scratch_mb} MB "
                "(BENCHBOARD_SANDBOX_SCRATCH_MB)"
            )
        return None

    def cpu_throttled(self, since: dict[str, int] | None = None) -> float | None:
        """The share of the CPU scheduling periods since `since` (a marks())
        in which the quota stopped the group (cpu.stat nr_throttled /
        nr_periods, the same in v1 and v2): near 1, the quota, not the work,
        set the pace. None without a cpu group or before a whole period ran."""
        if "cpu" not in self.dirs:
            return None
        now, since = self.marks(), since or {}
        periods = now["periods"] - since.get("periods", 0)
        if periods <= 0:
            return None
        return round((now["throttled"] - since.get("throttled", 0)) / periods, 3)

    def pids(self) -> list[int]:
        """The processes in the group now (its cgroup.procs)."""
        path = self.dirs.get("pids") or next(iter(self.dirs.values()), None)
        return _members(path) if path else []

    def remove(self) -> None:
        """Delete the group's directories; kill what is left in them first."""
        for path in self.dirs.values():
            _remove(path)


def make_group(limits: Limits, scratch_capped: bool = True) -> Group:
    """A new Group for one cell's local processes (see the module docstring for the order).

    scratch_capped: the scratch directory has a size limit of its own; when
    not, RLIMIT_FSIZE caps each file the tool writes at the scratch limit."""
    _sweep_once()
    group = _v2(limits) or _v1(limits) or Group(limits)
    missing = [c for c in CONTROLLERS if c not in group.dirs]
    for controller in missing:
        which, value = _RLIMIT_FOR[controller](limits)
        group.rlimits[which] = value
    if not scratch_capped:
        group.rlimits[resource.RLIMIT_FSIZE] = limits.scratch_mb * MB
    return group


# ---------------------------------------------------------------- cgroup v2


def _v2(limits: Limits) -> Group | None:
    if os.geteuid() != 0 or not os.path.exists(os.path.join(ROOT, "cgroup.controllers")):
        return None
    parent = ROOT + _own_paths().get("", "/")
    try:
        _write(parent, "cgroup.subtree_control", " ".join("+" + c for c in CONTROLLERS))
        path = _make_dir(parent)
    except OSError:
        return None
    try:
        _write(path, "cpu.max", f"{_quota(limits)} {PERIOD_US}")
        _write(path, "memory.max", str(limits.memory_mb * MB))
        if os.path.exists(os.path.join(path, "memory.swap.max")):
            _write(path, "memory.swap.max", "0")
        _write(path, "pids.max", str(limits.pids))
    except OSError:
        _remove(path)
        return None
    return Group(limits, "v2", dict.fromkeys(CONTROLLERS, path))


# ---------------------------------------------------------------- cgroup v1


def _v1(limits: Limits) -> Group | None:
    if os.geteuid() != 0:
        return None
    mounts, own = _v1_mounts(), _own_paths()
    group = Group(limits, "v1")
    for controller in CONTROLLERS:
        if controller not in mounts:
            continue
        try:
            path = _make_dir(mounts[controller] + own.get(controller, "/"))
        except OSError:
            continue
        group.dirs[controller] = path
        try:
            _V1_SETUP[controller](path, limits)
        except OSError:
            group.dirs.pop(controller)
            _remove(path)
    return group if group.dirs else None


def _v1_cpu(path: str, limits: Limits) -> None:
    _write(path, "cpu.cfs_period_us", str(PERIOD_US))
    _write(path, "cpu.cfs_quota_us", str(_quota(limits)))


def _v1_memory(path: str, limits: Limits) -> None:
    _write(path, "memory.limit_in_bytes", str(limits.memory_mb * MB))
    # Swap off for the group: the limit is on memory and swap together.
    if os.path.exists(os.path.join(path, "memory.memsw.limit_in_bytes")):
        _write(path, "memory.memsw.limit_in_bytes", str(limits.memory_mb * MB))
    _write(path, "memory.swappiness", "0")


def _v1_pids(path: str, limits: Limits) -> None:
    _write(path, "pids.max", str(limits.pids))


_V1_SETUP = {"cpu": _v1_cpu, "memory": _v1_memory, "pids": _v1_pids}
_MEMORY_EVENTS = {"v2": "memory.events", "v1": "memory.oom_control", None: ""}


def _v1_mounts() -> dict[str, str]:
    """controller -> mount point of its v1 hierarchy."""
    found: dict[str, str] = {}
    with open("/proc/self/mounts") as mounts:
        for line in mounts:
            fields = line.split()
            if len(fields) > 3 and fields[2] == "cgroup":
                for option in fields[3].split(","):
                    if option in CONTROLLERS:
                        found.setdefault(option, fields[1])
    return found


# ---------------------------------------------------------------- shared


def _own_paths() -> dict[str, str]:
    """controller -> this process's group path in its hierarchy ("" for v2)."""
    paths: dict[str, str] = {}
    with open("/proc/self/cgroup") as groups:
        for line in groups:
            _, names, path = line.rstrip("\n").split(":", 2)
            for name in names.split(",") if names else [""]:
                paths[name] = path.rstrip("/")
    return paths


def _sweep_once() -> None:
    """Remove the groups a dead worker left behind (killed with -9 before its
    tools' groups were removed), once per process: benchboard-PID-N groups
    in this process's own groups whose PID is gone."""
    global _swept
    if _swept or os.geteuid() != 0:
        return
    _swept = True
    own = _own_paths()
    parents = [mount + own.get(c, "/") for c, mount in _v1_mounts().items()]
    if os.path.exists(os.path.join(ROOT, "cgroup.controllers")):
        parents.append(ROOT + own.get("", "/"))
    for parent in parents:
        try:
            names = os.listdir(parent)
        except OSError:
            continue
        for name in names:
            parts = name.split("-")
            if len(parts) == 3 and parts[0] == "benchboard" and parts[1].isdigit():
                if not os.path.exists(f"/proc/{parts[1]}"):
                    _remove(os.path.join(parent, name))


_swept = False


def _make_dir(parent: str) -> str:
    path = os.path.join(parent, f"benchboard-{os.getpid()}-{next(_serial)}")
    os.mkdir(path)
    return path


def _write(path: str, name: str, value: str) -> None:
    with open(os.path.join(path, name), "w") as file:
        file.write(value)


def _quota(limits: Limits) -> int:
    return max(1000, round(limits.cpus * PERIOD_US))


def _counter(path: str | None, name: str, key: str) -> int:
    """A 'key N' line of a group's events file; 0 when absent or unreadable."""
    if not path or not name:
        return 0
    try:
        with open(os.path.join(path, name)) as events:
            for line in events:
                parts = line.split()
                if len(parts) == 2 and parts[0] == key:
                    return int(parts[1])
    except (OSError, ValueError):
        pass
    return 0


def _remove(path: str) -> None:
    """rmdir a group; its stragglers are killed, then waited for (up to ~2 s)."""
    for attempt in range(40):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if attempt == 0:
                _kill_members(path)
            time.sleep(0.05)


def _members(path: str) -> list[int]:
    try:
        with open(os.path.join(path, "cgroup.procs")) as procs:
            return [int(line) for line in procs if line.strip()]
    except OSError:
        return []


def _kill_members(path: str) -> None:
    for pid in _members(path):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue


def _shown(limits: Limits, controller: str) -> str:
    return {
        "cpu": f"cpu {float(limits.cpus)}",
        "memory": f"memory {limits.memory_mb} MB",
        "pids": f"pids {limits.pids}",
    }[controller]


def _hard(which: int, soft: int) -> int:
    # RLIMIT_CPU: SIGXCPU at the soft limit (a tool may print its figures), SIGKILL later.
    return soft + 5 if which == resource.RLIMIT_CPU else soft


_RLIMIT_FOR = {
    "cpu": lambda lim: (resource.RLIMIT_CPU, max(1, round(lim.cpus * lim.seconds))),
    "memory": lambda lim: (resource.RLIMIT_AS, lim.memory_mb * MB),
    "pids": lambda lim: (resource.RLIMIT_NPROC, lim.pids),
}
_RLIMIT_SHOWN = {
    resource.RLIMIT_CPU: lambda v: f"CPU time {v} s",
    resource.RLIMIT_AS: lambda v: f"address space {v // MB} MB",
    resource.RLIMIT_NPROC: lambda v: f"processes {v} (per user)",
    resource.RLIMIT_FSIZE: lambda v: f"file size {v // MB} MB",
}
