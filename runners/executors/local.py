"""LocalExecutor: subprocesses on this machine, each in its own session.

start_new_session=True makes every tool the leader of a fresh process group,
so a timeout or cancel can kill it and whatever it forked with one killpg().
With a Sandbox (runners/sandbox.py) each tool runs inside bubblewrap, as an
unprivileged user when the worker is root, with an empty environment; with
the sandbox's limits, every process the executor starts (each local client
of the cell, its background stress-ng, its telemetry samplers) in ONE cgroup
made at the first of them and removed at close() (runners/cgroups.py: the
limits bound the whole cell), with a size-capped scratch directory
(runners/scratch.py), and holding one of the worker host's sandbox slots
(runners/hostslots.py) from the first sandboxed process to close().
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from runners.cgroups import make_group
from runners.errors import RunnerError
from runners.executors.base import Background, Executor, check_upload_name, not_installed
from runners.hostslots import Slot
from runners.sandbox import PATH, Sandbox, drop_privileges
from runners.scratch import Scratch

READ_SIZE = 65536
PR_SET_PDEATHSIG = 1


def _die_with_parent(drop=None, group=None):
    """The preexec function: join the tool's cgroup and set its rlimits while
    still root (so the whole tree is inside from its first instruction),
    drop privileges (a uid change clears the parent-death signal), then ask
    for the signal (see _set_pdeathsig)."""

    def preexec() -> None:
        if group is not None:
            group.enter()
        if drop is not None:
            drop()
        _set_pdeathsig()

    return preexec


def _set_pdeathsig() -> None:
    """In the child, before exec: ask Linux to signal the tool if the thread
    that started it dies. A worker killed with -9 then leaves no benchmark
    running (the tool's own session is outside the worker's process group).
    SIGTERM, not SIGKILL: fio and stress-ng fork job processes, and only a
    TERM lets the tool stop them; a KILL would orphan them."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _load_libc():
    # Loaded in the parent: a child that has dropped to the sandbox user may
    # no longer be allowed to read Python's own files to import ctypes.
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6", use_errno=True)
    except OSError:
        return None  # not Linux/glibc: the tool outlives a killed worker, as before


_LIBC = _load_libc()
# After the leader exits, how long its pipes may stay open (held by a
# straggler it forked) before the rest of the group is killed.
STRAGGLER_WAIT = 2.0


def _signal_group(pgid: int, sig: int) -> bool:
    """Send sig to process group pgid; False when the group is gone."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return False


def _signal_tools(pgid: int, sig: int) -> bool:
    """Send sig to the members of group pgid that are not bwrap; False when none is left."""
    sent = False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)
        except OSError:
            continue
        comm = fields[0].split(b"(", 1)[-1]
        rest = fields[-1].split()
        if len(rest) > 2 and int(rest[2]) == pgid:
            if comm != b"bwrap":
                try:
                    os.kill(int(entry), sig)
                except (ProcessLookupError, PermissionError):
                    continue
            sent = True
    return sent


class LocalExecutor(Executor):
    """Runs Commands here with subprocess.Popen (never a shell)."""

    def __init__(self, sandbox: Sandbox | None = None, clean_env: bool = False) -> None:
        """sandbox: contain every tool (None: plain subprocesses). clean_env:
        without a sandbox, still give tools only PATH, LANG and their own env."""
        super().__init__()
        self.sandbox = sandbox
        self.clean_env = clean_env or sandbox is not None
        self._ids = sandbox.ids() if sandbox is not None else None
        self._scratch: Scratch | None = None
        self.group = None  # the cell's one cgroup (runners.cgroups.Group), once made
        self._slot: Slot | None = None
        # What limited the last sandboxed tool run, for the cell's facts.
        self.limits_applied: str | None = None

    def contain(self, sandbox: Sandbox) -> None:
        """Sandbox every later tool run (before the work dir is made)."""
        self.sandbox, self.clean_env, self._ids = sandbox, True, sandbox.ids()

    def _make_workdir(self) -> str:
        # mkdtemp creates the directory with mode 0700, owned by the sandbox user;
        # the worker's pid in the name says whose it is (a leaked scratch mount
        # names the process that made it).
        path = tempfile.mkdtemp(prefix=f"benchboard.{os.getpid()}.")
        if self._ids is not None:
            os.chown(path, *self._ids)
        limits = self.sandbox.limits if self.sandbox is not None else None
        if limits is not None:
            self._scratch = Scratch.mount(path, limits.scratch_mb, self._ids)
        return path

    def _launch(self, bg: Background, timeout: float | None) -> None:
        command = bg.command
        if self.clean_env:
            env = {"PATH": PATH, "LANG": os.environ.get("LANG", "C.UTF-8"), **command.env}
        else:
            env = {**os.environ, **command.env}
        if shutil.which(command.argv[0], path=env.get("PATH")) is None:
            raise not_installed(command, self.host)
        argv, drop, group = command.argv, None, None
        if self.sandbox is not None and command.sandbox:
            argv, env, ids = self.sandbox.wrap(command.argv, self.workdir, command.env)
            drop = drop_privileges(ids)
            bg.sandboxed = True
            group = self._limit(bg)
        try:
            bg.client_started = time.time()  # the client is this machine: its clock
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=self.workdir,
                start_new_session=True,
                preexec_fn=_die_with_parent(drop, group),
            )
        except (FileNotFoundError, PermissionError) as exc:
            raise not_installed(command, self.host) from exc
        bg.handle = proc
        readers = [
            threading.Thread(target=_pump, args=(proc.stdout, bg.stdout), daemon=True),
            threading.Thread(target=_pump, args=(proc.stderr, bg.stderr), daemon=True),
        ]
        for reader in readers:
            reader.start()
        threading.Thread(target=_reap, args=(bg, proc, readers, self._scratch), daemon=True).start()

    def process_root(self, bg: Background) -> int | None:
        return bg.handle.pid if bg.handle is not None else None

    def _limit(self, bg: Background):
        """The cell's cgroup (or rlimits), made at its first sandboxed run and
        kept on bg with its counters at launch; None without limits."""
        limits = self.sandbox.limits if self.sandbox is not None else None
        if limits is None:
            return None
        with self._lock:
            if self._slot is None and limits.host_cells:
                self._slot = Slot.take(
                    limits.slots_dir, limits.host_cells, lambda: self.cancel_requested
                )
            if self.group is None:
                self.group = make_group(limits, scratch_capped=self._scratch is not None)
        bg.group, bg.group_marks = self.group, self.group.marks()
        # A scratch directory already full (a tool before this one filled it)
        # is not this run's doing.
        bg.scratch_was_full = self._scratch is not None and self._scratch.full()
        applied = bg.group.describe()
        if self._scratch is not None:
            applied += "; " + self._scratch.describe()
        self.limits_applied = applied
        return bg.group

    def _kill(self, bg: Background, grace: float) -> None:
        proc = bg.handle
        if proc is None:
            return
        # The group id is the leader's pid (start_new_session). In a sandbox
        # the TERM goes to the tool only: bwrap would die of it and take the
        # tool down with a KILL, before it could print what it measured.
        if getattr(bg, "sandboxed", False):
            if not _signal_tools(proc.pid, signal.SIGTERM):
                return
        elif not _signal_group(proc.pid, signal.SIGTERM):
            return
        bg.done.wait(grace)
        # Whatever is left of the group after grace (a leader that ignored
        # TERM, or children that outlived it) is killed.
        _signal_group(proc.pid, signal.SIGKILL)

    def _close(self) -> None:
        with self._lock:
            workdir, self._workdir = self._workdir, None
            scratch, self._scratch = self._scratch, None
            group, self.group = self.group, None
            slot, self._slot = self._slot, None
        if group is not None:
            group.remove()  # kills what is left of the cell's processes
        if slot is not None:
            slot.release()
        if scratch is not None:
            scratch.unmount()
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    def upload(self, name: str, content: bytes, mode: int = 0o600) -> str:
        check_upload_name(name)
        path = os.path.join(self.workdir, name)
        # Created with the final mode before any data is written, so the
        # content is never readable by others, even for an instant.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
        try:
            os.fchmod(fd, mode)  # the umask may have narrowed it
            if self._ids is not None:
                os.fchown(fd, *self._ids)  # the sandboxed tool reads it as its own
            os.write(fd, content)
        finally:
            os.close(fd)
        return path

    def read_file(self, path: str) -> bytes:
        try:
            return Path(path).read_bytes()
        except OSError as exc:
            raise RunnerError(f"cannot read {path} on {self.host}: {exc.strerror}") from exc

    def remove(self, path: str) -> None:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass

    def check(self) -> None:
        """The local machine is always reachable."""


def _pump(pipe, stream) -> None:
    """Read a pipe until EOF into a _Stream (runs in its own thread)."""
    with pipe:
        while True:
            data = pipe.read1(READ_SIZE)
            if not data:
                return
            stream.feed(data)


def _reap(
    bg: Background,
    proc: subprocess.Popen,
    readers: list[threading.Thread],
    scratch: Scratch | None = None,
) -> None:
    """Wait for the leader, then for its output, then record the end (and the
    limit the cell's group hit while it ran, read before finish())."""
    code = proc.wait()
    bg.client_finished = time.time()
    for reader in readers:
        reader.join(STRAGGLER_WAIT)
    if any(reader.is_alive() for reader in readers):
        # A child the tool left behind still holds the pipes: kill the group.
        _signal_group(proc.pid, signal.SIGKILL)
        for reader in readers:
            reader.join()
    # Popen reports death by signal N as -N; report 128+N like a shell.
    code = 128 - code if code < 0 else code
    group = getattr(bg, "group", None)
    if group is not None:
        bg.limit = group.breach(code, bg.group_marks)
        bg.cpu_throttled = group.cpu_throttled(bg.group_marks)
        filled = scratch is not None and not bg.scratch_was_full and scratch.full()
        if bg.limit is None and filled:
            bg.limit = scratch.breach()
    bg.finish(code)
