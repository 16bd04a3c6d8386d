"""Whose CPU it was: the cell's own processes, the target's server, everyone else.

The host sampler (runners.telemetry) lists, each second, the processes of
its machine from /proc/PID/stat, one line each:

    self 4242                          the sampler's own pid ($$)
    proc 4242 4100 S 9 3 sh            pid, parent, state, utime, stime (ticks), name

Every process is listed every second (about 35 bytes each: 6 KB a second
for 170 processes). `Accounting` follows the listings sample by sample and
gives, for each interval, the CPU ticks of three groups:

- cell: the descendants of the cell's root. Locally that is the worker
  process that runs the cell (the sampler's parent: every tool, stress and
  sampler of the cell is its child); over SSH, the connection's sshd
  process (the sampler's nearest sshd ancestor: every command of the cell
  on that machine runs on that one leased connection).
- server: the target's server and its descendants: the process listening on
  the target's port where the worker can see it (`listening_pids`, local
  targets), else the processes named as the kind's server (mariadbd, mysqld,
  postgres, redis-server).
- other: everything else on the machine (other teams' tools, a backup, a
  stress test someone forgot), including the kernel's threads.

Ticks are USER_HZ, the unit of /proc/stat, so a group's share of the
machine's CPU is its ticks over the interval's total ticks of all CPUs.
A process that ends between two samples loses the CPU of its last
interval; benchmark tools and servers live through the measure.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from runners import engines

SELF = "self"
PROC = "proc"
# The sed rule that turns each /proc/PID/stat line into a "proc" line: pid,
# parent, state, utime, stime and the name (the name last: it may hold
# spaces and parentheses; the greedy match ends at the last ") "). The
# host sampler runs it in its one sed over /proc/[0-9]*/stat (a process that
# ends between the glob and the read is skipped), after `echo self $$`.
PROC_RULE = (
    "s/^\\([0-9]*\\) (\\(.*\\)) \\([A-Za-z]\\) \\([0-9]*\\) \\([-0-9]* \\)\\{9\\}"
    f"\\([0-9]*\\) \\([0-9]*\\) .*/{PROC} \\1 \\4 \\3 \\6 \\7 \\2/p"
)
PROC_FILES = "/proc/[0-9]*/stat"
GROUPS = ("cell", "server", "other")
PARENT, SESSION = "parent", "session"
_MAX_DEPTH = 64  # a parent chain longer than this is cut (a loop from a reused pid)


@dataclass(frozen=True)
class Owners:
    """Who is whom on one machine: the cell's root (PARENT: the sampler's
    parent, the worker; SESSION: its nearest sshd ancestor) and the server
    (pids known to listen on the target's address, else names)."""

    root: str = PARENT
    server_pids: tuple[int, ...] = ()
    server_names: tuple[str, ...] = ()


@dataclass
class _Proc:
    ppid: int
    name: str
    ticks: int


class Accounting:
    """Feed each sample's lines in order; `interval` gives the CPU ticks per
    group since the previous sample and the other processes running."""

    def __init__(self, owners: Owners) -> None:
        self.owners = owners
        self.known: dict[int, _Proc] = {}
        self.sampler: int | None = None

    def interval(self, lines: list[str]) -> tuple[dict[str, int], int] | None:
        """({group: ticks}, other processes running now), or None for the first
        sample (or one without process lines): the baseline."""
        listed = dict(_listed(lines, self))
        if not listed:
            return None
        first = not self.known
        deltas = {}
        for pid, (proc, _state) in listed.items():
            old = self.known.get(pid)
            same = old is not None and old.ppid == proc.ppid and old.ticks <= proc.ticks
            # A pid never seen before was born during the interval: all its CPU is of it.
            deltas[pid] = proc.ticks - old.ticks if same else proc.ticks
            self.known[pid] = proc
        if first:
            return None
        group = self._grouper()
        ticks = dict.fromkeys(GROUPS, 0)
        for pid, delta in deltas.items():
            ticks[group(pid)] += delta
        running = sum(
            1 for pid, (_, state) in listed.items() if state == "R" and group(pid) == "other"
        )
        return ticks, running

    def _root(self) -> int | None:
        me = self.known.get(self.sampler) if self.sampler else None
        if me is None:
            return None
        if self.owners.root == SESSION:
            pid, depth = me.ppid, 0
            while pid > 1 and depth < _MAX_DEPTH:
                proc = self.known.get(pid)
                if proc is None:
                    break
                if proc.name.startswith("sshd"):
                    return pid
                pid, depth = proc.ppid, depth + 1
        return me.ppid

    def _servers(self) -> set[int]:
        if self.owners.server_pids:
            return set(self.owners.server_pids)
        names = self.owners.server_names
        return {pid for pid, proc in self.known.items() if proc.name in names}

    def _grouper(self):
        root, servers = self._root(), self._servers()
        memo: dict[int, str] = {}

        def group(pid: int) -> str:
            chain, found = [], "other"
            while pid > 1 and len(chain) < _MAX_DEPTH:
                if pid in memo:
                    found = memo[pid]
                    break
                chain.append(pid)
                if pid in servers:
                    found = "server"
                    break
                if pid == root:
                    found = "cell"
                    break
                proc = self.known.get(pid)
                if proc is None:
                    break
                pid = proc.ppid
            for seen in chain:
                memo[seen] = found
            return found

        return group


def _listed(lines: list[str], accounting: Accounting):
    """(pid, (_Proc, state)) of a sample's process lines; notes the sampler's pid."""
    for line in lines:
        if line.startswith(SELF + " "):
            try:
                accounting.sampler = int(line.split()[1])
            except (IndexError, ValueError):
                continue
        elif line.startswith(PROC + " "):
            parts = line.split(" ", 6)
            try:
                pid, ppid = int(parts[1]), int(parts[2])
                ticks = int(parts[4]) + int(parts[5])
            except (IndexError, ValueError):
                continue  # a line cut by the stop
            yield pid, (_Proc(ppid, parts[6] if len(parts) > 6 else "", ticks), parts[3])


def shares(ticks: dict[str, int], running: int, total: float, busy: float) -> dict[str, float]:
    """The row's figures: each group's share of the machine's CPU (all CPUs:
    100 % is every core busy), of `total` ticks in the interval, `busy` of
    them in user, nice and system time (what processes are charged with);
    other: the busy ticks that were neither the cell's nor the server's."""
    if total <= 0:
        return {}
    other = max(0.0, busy - ticks["cell"] - ticks["server"])
    return {
        "cpu_cell_pct": min(100.0, 100.0 * ticks["cell"] / total),
        "cpu_server_pct": min(100.0, 100.0 * ticks["server"] / total),
        "cpu_other_pct": min(100.0, 100.0 * other / total),
        "runnable_other": float(running),
    }


# ------------------------------------------------------- the server's pid

_LISTEN = "0A"  # TCP_LISTEN in /proc/net/tcp's st column


def listening_pids(port: int | None = None, socket: str | None = None) -> tuple[int, ...]:
    """The pids of this machine holding the listening TCP port (any address)
    or unix socket path: the target's server, when it runs here. Empty when
    none is found or the worker may not read the other processes' file
    descriptors (they belong to another user and the worker is not root)."""
    inodes = _tcp_inodes(port) if port else set()
    if socket:
        inodes |= _unix_inodes(socket)
    if not inodes:
        return ()
    wanted = {f"socket:[{inode}]" for inode in inodes}
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and _holds(entry, wanted):
            found.append(int(entry))
    return tuple(sorted(found))


def _tcp_inodes(port: int) -> set[str]:
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as rows:
                next(rows, None)
                for row in rows:
                    fields = row.split()
                    if len(fields) > 9 and fields[3] == _LISTEN:
                        if int(fields[1].rsplit(":", 1)[1], 16) == port:
                            inodes.add(fields[9])
        except OSError:
            continue
    return inodes


def _unix_inodes(path: str) -> set[str]:
    try:
        with open("/proc/net/unix") as rows:
            return {
                fields[6] for row in rows if len(fields := row.split()) > 7 and fields[7] == path
            }
    except OSError:
        return set()


def _holds(pid: str, wanted: set[str]) -> bool:
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                return True
        except OSError:
            continue
    return False


def owners_for(kind: str | None, local: bool, port=None, socket=None) -> Owners:
    """The Owners of one sampled machine: local (the worker's own machine,
    the sampler the worker's child) or reached over SSH; the server found by
    its listening socket where it runs here, else by name."""
    engine = engines.find(kind)  # the server's process names, where no pid is known
    names = engine.SERVER_PROCESSES if engine is not None else ()
    pids = listening_pids(port, socket) if local and names and (port or socket) else ()
    return Owners(PARENT if local else SESSION, pids, names)
