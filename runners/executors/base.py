"""What every executor shares: Execution, Background, output capture, run/stop/cancel.

An executor runs one Command at a time per call (several may run at once, e.g. a
stress-ng Background beside the measured tool) in a private 0700 work dir.
Subclasses implement the I/O primitives (_make_workdir, _launch, _kill,
_check_alive, upload, read_file, remove, check, _close); the waiting, the
timeout and the cancel logic live here once.
"""

from __future__ import annotations

import codecs
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

from runners.command import Command
from runners.errors import RunnerError

OnOutput = Callable[[str, str], None]

# Size of the in-memory tail a live view may read while a process runs; the
# whole output is still kept for Execution.stdout/stderr.
TAIL_BYTES = 64 * 1024
# How often a waiting run wakes up to check its connection (a timeout is kept
# to the moment; a cancel kills from the cancelling thread). Long: on a 2-core
# client every wake-up competes with the tool being measured.
CHECK_EVERY = 1.0


@dataclass
class Execution:
    """The outcome of one process: exit code, whole output, wall-clock times.

    exit_code is None when the process was killed by us (timeout, cancel);
    a process killed by a signal otherwise reports 128 + signal number.
    limit: the sandbox limit the process hit (runners/cgroups.py), as a
    cell error ("killed: memory limit 4096 MB ..."), or None.
    cpu_throttled: the share of CPU periods the sandbox's CPU quota stopped
    the process in (runners.cgroups.Group.cpu_throttled), or None.
    client_started / client_finished: the client machine's own clock (epoch
    seconds) right before the tool started and right after it ended, or
    None when the client did not say (Executor.clock_offset converts them
    to the worker's clock); started / finished are the worker's.
    """

    exit_code: int | None
    stdout: str
    stderr: str
    started: float
    finished: float
    timed_out: bool = False
    cancelled: bool = False
    limit: str | None = None
    cpu_throttled: float | None = None
    client_started: float | None = None
    client_finished: float | None = None

    @property
    def output(self) -> str:
        """stdout then stderr, as one text (what the parsers read)."""
        return self.stdout + self.stderr

    @property
    def duration(self) -> float:
        """Wall-clock seconds from start to end."""
        return self.finished - self.started


class _Stream:
    """One output stream: decodes UTF-8 incrementally, keeps it all, calls back."""

    def __init__(self, name: str, owner: Background):
        self.name = name
        self.owner = owner
        self.chunks: list[str] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, data: bytes, final: bool = False) -> None:
        """Append raw bytes; a multi-byte character split across reads is kept whole."""
        text = self._decoder.decode(data, final)
        if text:
            self.chunks.append(text)
            self.owner._deliver(self.name, text)

    def text(self) -> str:
        return "".join(self.chunks)


class Background:
    """A process started by an executor; run() waits on one, start() returns it.

    Filled in by the executor's reader: exit_code, finished, error (a
    RunnerError when the connection dropped). `done` is set once the process
    is over and its output fully read.
    """

    def __init__(self, command: Command, host: str, on_output: OnOutput | None = None):
        self.command = command
        self.host = host
        self.on_output = on_output
        self.started = time.time()
        self.finished: float | None = None
        self.exit_code: int | None = None
        self.timed_out = False
        self.cancelled = False
        self.error: RunnerError | None = None
        self.limit: str | None = None  # set by a sandboxing executor before finish()
        self.cpu_throttled: float | None = None  # likewise
        # The client machine's clock around the tool, set by the executor.
        self.client_started: float | None = None
        self.client_finished: float | None = None
        self.done = threading.Event()
        self.stdout = _Stream("stdout", self)
        self.stderr = _Stream("stderr", self)
        self.handle = None  # executor-specific: a Popen, an SSH channel...
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self._lock = threading.Lock()

    def _deliver(self, stream: str, text: str) -> None:
        """Keep a bounded tail and pass the (masked) chunk to on_output."""
        text = self.command.mask(text)
        with self._lock:
            self._tail.append(text)
            self._tail_size += len(text)
            while self._tail_size > TAIL_BYTES and len(self._tail) > 1:
                self._tail_size -= len(self._tail.popleft())
        if self.on_output is not None:
            try:
                self.on_output(stream, text)
            except Exception:  # noqa: BLE001 - a broken viewer must not lose the output
                self.on_output = None

    def tail(self) -> str:
        """The last ~64 KiB of output, stdout and stderr interleaved as they came."""
        with self._lock:
            return "".join(self._tail)

    def output(self) -> str:
        """Everything read so far, masked (for partial output on errors)."""
        return self.command.mask(self.stdout.text() + self.stderr.text())

    def finish(self, exit_code: int | None, error: RunnerError | None = None) -> None:
        """Record the end; called once by the executor's reader."""
        self.stdout.feed(b"", final=True)
        self.stderr.feed(b"", final=True)
        self.exit_code = exit_code
        self.error = error
        self.finished = time.time()
        self.done.set()

    def execution(self) -> Execution:
        """The finished process as an Execution (secrets masked)."""
        killed = self.timed_out or self.cancelled
        return Execution(
            exit_code=None if killed else self.exit_code,
            stdout=self.command.mask(self.stdout.text()),
            stderr=self.command.mask(self.stderr.text()),
            started=self.started,
            finished=self.finished or time.time(),
            timed_out=self.timed_out,
            cancelled=self.cancelled,
            limit=self.limit,
            cpu_throttled=self.cpu_throttled,
            client_started=self.client_started,
            client_finished=self.client_finished,
        )


def not_installed(command: Command, host: str) -> RunnerError:
    """The permanent error for a missing argv[0], naming the package to install."""
    binary = command.argv[0].rsplit("/", 1)[-1]
    package = command.package or command.tool or binary
    return RunnerError(
        f"{binary} is not installed on {host} (install the Debian package '{package}')",
        permanent=True,
    )


def check_upload_name(name: str) -> None:
    """Refuse upload names that could escape the work dir."""
    if not name or "/" in name or name in (".", "..") or "\0" in name:
        raise ValueError(f"upload name must be a plain file name, not {name!r}")


class Executor:
    """Runs Commands somewhere; see LocalExecutor and SSHExecutor."""

    host = "localhost"
    # Seconds between TERM and KILL when a timeout or cancel stops a process.
    grace = 5.0

    def __init__(self) -> None:
        self._workdir: str | None = None
        self._running: set[Background] = set()
        self._lock = threading.Lock()
        self.cancel_requested = False

    # -- the public interface -------------------------------------------------

    @property
    def workdir(self) -> str:
        """A private 0700 directory, made on first use and removed by close()."""
        with self._lock:
            if self._workdir is None:
                self._workdir = self._make_workdir()
            return self._workdir

    def run(
        self,
        command: Command,
        *,
        timeout: float | None = None,
        on_output: OnOutput | None = None,
        on_start: Callable[[Background], None] | None = None,
    ) -> Execution:
        """Run command to completion (or timeout/cancel) and return its Execution.

        A non-zero exit is not an error. Raises RunnerError for a missing
        binary (permanent) or a connection lost mid-run (transient, with the
        partial output in .output). on_start(bg) is called once the process
        has started (a profiler attaches to it); it must not block.
        """
        bg = self._start(command, on_output, timeout)
        try:
            if on_start is not None:
                on_start(bg)
            self._wait(bg, timeout)
        finally:
            self._forget(bg)
        if bg.error is not None:
            raise bg.error
        return bg.execution()

    def start(self, command: Command) -> Background:
        """Start command in the background (e.g. stress-ng); stop() ends it."""
        return self._start(command, None, None)

    def stop(self, bg: Background, grace: float = 5.0) -> Execution:
        """TERM the background process group, KILL it after grace; return its output."""
        if not bg.done.is_set():
            self._kill(bg, grace)
        try:
            self._wait(bg, None)
        finally:
            self._forget(bg)
        if bg.error is not None:
            raise bg.error
        return bg.execution()

    def cancel(self) -> None:
        """Kill every running process group of this executor (TERM, then KILL).

        Thread-safe; the run() in progress returns an Execution with
        cancelled=True. Later runs are not refused: cleanup may still need one.
        """
        self.cancel_requested = True
        with self._lock:
            running = list(self._running)
        for bg in running:
            bg.cancelled = True
        threads = [threading.Thread(target=self._kill, args=(bg, self.grace)) for bg in running]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    def clock_offset(self) -> float | None:
        """Seconds the client machine's clock is ahead of the worker's (None:
        unknown). Here the client is the worker: 0."""
        return 0.0

    def close(self) -> None:
        """Stop what still runs, remove the work dir, release connections."""
        self.cancel()
        self._close()

    # -- shared machinery -----------------------------------------------------

    def _start(
        self, command: Command, on_output: OnOutput | None, timeout: float | None
    ) -> Background:
        resolved = command.resolved(self.workdir)
        for upload in command.uploads:
            self.upload(upload.name, upload.content, upload.mode)
        bg = Background(resolved, self.host, on_output)
        with self._lock:
            self._running.add(bg)
        try:
            self._launch(bg, timeout)
        except BaseException:
            self._forget(bg)
            raise
        return bg

    def _wait(self, bg: Background, timeout: float | None) -> None:
        """Wait for bg to end; on timeout kill it and mark it timed out."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = CHECK_EVERY
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - time.monotonic()))
            if bg.done.wait(wait):
                return
            self._check_alive(bg)
            if deadline is not None and time.monotonic() >= deadline:
                deadline = None
                bg.timed_out = True
                self._kill(bg, self.grace)

    def _forget(self, bg: Background) -> None:
        with self._lock:
            self._running.discard(bg)

    # -- what subclasses implement ---------------------------------------------

    def _make_workdir(self) -> str:
        raise NotImplementedError

    def _launch(self, bg: Background, timeout: float | None) -> None:
        """Start bg.command and a reader that calls bg.finish() at the end."""
        raise NotImplementedError

    def _kill(self, bg: Background, grace: float) -> None:
        """TERM bg's process group, KILL it after grace seconds."""
        raise NotImplementedError

    def _check_alive(self, bg: Background) -> None:
        """Called while waiting; may detect a dead connection (default: nothing)."""

    def _close(self) -> None:
        raise NotImplementedError

    def process_root(self, bg: Background) -> int | None:
        """The pid, on the executor's host, of the process that leads bg's
        process tree (None when it is not known, or not yet)."""
        return None

    def upload(self, name: str, content: bytes, mode: int = 0o600) -> str:
        """Write content to workdir/name with mode (set before the data); return the path."""
        raise NotImplementedError

    def read_file(self, path: str) -> bytes:
        """The bytes of a file on the executor's host."""
        raise NotImplementedError

    def remove(self, path: str) -> None:
        """Delete a file on the executor's host (missing is fine)."""
        raise NotImplementedError

    def check(self) -> None:
        """Raise RunnerError with a clear message when the host cannot be used."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
