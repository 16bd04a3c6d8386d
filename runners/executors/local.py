"""LocalExecutor: subprocesses on this machine, each in its own session.

start_new_session=True makes every tool the leader of a fresh process group,
so a timeout or cancel can kill it and whatever it forked with one killpg().
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path

from runners.errors import RunnerError
from runners.executors.base import Background, Executor, check_upload_name, not_installed

READ_SIZE = 65536
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to signal the tool if the thread
    that started it dies. A worker killed with -9 then leaves no benchmark
    running (the tool's own session is outside the worker's process group).
    SIGTERM, not SIGKILL: fio and stress-ng fork job processes, and only a
    TERM lets the tool stop them; a KILL would orphan them."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except OSError:
        pass  # not Linux/glibc: the tool outlives a killed worker, as before
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


class LocalExecutor(Executor):
    """Runs Commands here with subprocess.Popen (never a shell)."""

    def __init__(self) -> None:
        super().__init__()

    def _make_workdir(self) -> str:
        # mkdtemp creates the directory with mode 0700.
        return tempfile.mkdtemp(prefix="benchboard.")

    def _launch(self, bg: Background, timeout: float | None) -> None:
        command = bg.command
        env = {**os.environ, **command.env}
        if shutil.which(command.argv[0], path=env.get("PATH")) is None:
            raise not_installed(command, self.host)
        try:
            proc = subprocess.Popen(
                command.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd=self.workdir,
                start_new_session=True,
                preexec_fn=_die_with_parent,
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
        threading.Thread(target=_reap, args=(bg, proc, readers), daemon=True).start()

    def _kill(self, bg: Background, grace: float) -> None:
        proc = bg.handle
        if proc is None:
            return
        # The group id is the leader's pid (start_new_session).
        if not _signal_group(proc.pid, signal.SIGTERM):
            return
        bg.done.wait(grace)
        # Whatever is left of the group after grace (a leader that ignored
        # TERM, or children that outlived it) is killed.
        _signal_group(proc.pid, signal.SIGKILL)

    def _close(self) -> None:
        with self._lock:
            workdir, self._workdir = self._workdir, None
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


def _reap(bg: Background, proc: subprocess.Popen, readers: list[threading.Thread]) -> None:
    """Wait for the leader, then for its output, then record the end."""
    code = proc.wait()
    for reader in readers:
        reader.join(STRAGGLER_WAIT)
    if any(reader.is_alive() for reader in readers):
        # A child the tool left behind still holds the pipes: kill the group.
        _signal_group(proc.pid, signal.SIGKILL)
        for reader in readers:
            reader.join()
    # Popen reports death by signal N as -N; report 128+N like a shell.
    bg.finish(128 - code if code < 0 else code)
