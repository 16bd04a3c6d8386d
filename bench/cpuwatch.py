"""CpuWatch: the CPU time of the processes below a few roots, by role, from /proc.

The overhead study (bench/overhead.py) asks where a cell's CPU goes while
the tool runs: the Celery worker and its pool process, the sshd session and
the shell, tail and cat the remote side starts, the OpenSSH client, the tool.
Each thread's time on a CPU is read from /proc/PID/task/TID/schedstat
(nanoseconds; /proc/PID/stat counts 10 ms ticks, too coarse for a worker
that sleeps), every `period` seconds from a thread of the bench itself.
"""

from __future__ import annotations

import os
import threading
import time

TOOLS = (b"sysbench", b"mysqlslap", b"fio", b"pgbench")


def processes() -> dict[int, tuple[int, bytes]]:
    """pid -> (parent pid, name) of every process."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                head, rest = handle.read().rsplit(b")", 1)
        except OSError:
            continue
        found[int(entry)] = (int(rest.split()[1]), head.split(b"(", 1)[1])
    return found


def task_cpu(pid: int) -> dict[int, int]:
    """tid -> nanoseconds on a CPU, for each thread of pid (schedstat: finer than ticks)."""
    found = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as handle:
                found[int(tid)] = int(handle.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return found


class CpuWatch(threading.Thread):
    """CPU seconds of the processes below some roots, by role, polled from /proc.

    roots: pid -> role of that process; its descendants are "tool" when
    named like a benchmark tool, "ssh client" for the bench's ssh, else the
    root's role + " children" (sshd sessions, the remote shell, tail and
    cat; the Celery pool process that runs the cell). Each thread's CPU
    counts from when it is first seen (all of it if it was born after the
    start); one that ends between polls keeps its last value.
    """

    def __init__(self, roots: dict[int, str], period: float = 0.5):
        super().__init__(daemon=True)
        self.roots, self.period = roots, period
        self.stop_event = threading.Event()
        self.base: dict[tuple[int, int], int] = {}  # (pid, tid) -> ns at the start
        self.roles: dict[tuple[int, int], str] = {}  # the role each thread had when last seen
        self.samples: list[tuple[float, dict[tuple[int, int], int]]] = []  # ns since the start
        for pid, _ in self.watched():
            self.base.update({(pid, tid): ns for tid, ns in task_cpu(pid).items()})

    def watched(self):
        """(pid, role) of every process below the roots."""
        table = processes()
        for pid in table:
            role = self.role(pid, table)
            if role is not None:
                yield pid, role

    def role(self, pid: int, table: dict) -> str | None:
        name = table[pid][1]
        root = pid
        while root in table and root not in self.roots:
            root = table[root][0]
        if root not in self.roots:
            return None
        if name in TOOLS:
            return "tool"
        if pid == root:
            return self.roots[root]
        if self.roots[root] == "bench" and name == b"ssh":
            return "ssh client"
        return f"{self.roots[root]} children"

    def poll(self) -> None:
        used = dict(self.samples[-1][1]) if self.samples else {}
        for pid, role in self.watched():
            for tid, ns in task_cpu(pid).items():
                used[(pid, tid)] = ns - self.base.get((pid, tid), 0)
                self.roles[(pid, tid)] = role
        self.samples.append((time.time(), used))

    def run(self) -> None:
        while not self.stop_event.wait(self.period):
            self.poll()

    def stop(self) -> None:
        self.stop_event.set()
        self.join()
        self.poll()

    def between(self, start: float, end: float) -> dict[str, float]:
        """CPU seconds by role from the first poll after start to the last before end.

        A thread counts under the role it had last (a forked shell that
        became the tool is the tool's).
        """
        inside = [used for at, used in self.samples if start <= at <= end]
        if len(inside) < 2:
            return {}
        first, last = inside[0], inside[-1]
        totals: dict[str, float] = {}
        for key, ns in last.items():
            role = self.roles[key]
            totals[role] = totals.get(role, 0.0) + (ns - first.get(key, 0)) / 1e9
        return {role: round(totals[role], 3) for role in sorted(totals)}
