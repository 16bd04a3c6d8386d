"""Start one command on each of several clients at one moment; stop all if one fails.

run_together() gives every client a thread; the threads meet at a
threading.Barrier and launch their command the moment it opens, so the
commands start within the time one launch takes (an SSH exec request, a
fork), not a person's seconds apart. The calling thread then watches them:
the first client whose command fails (an exit code other than 0, a lost
connection) stops the others' commands (executor.stop: TERM then KILL
of the process group, or the SSH channel closed), so a cell with one
broken client does not keep loading the target from the rest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from runners.errors import RunnerError
from runners.executors.base import Background, Execution

# Seconds the clients may take to reach the barrier (their SSH connections are
# open by then: the prepare phase or the CPU sampler used them).
BARRIER_TIMEOUT_S = 60
# How often the watcher looks at the clients' commands.
POLL_S = 0.05


@dataclass
class ClientRun:
    """One client's measured command: its execution, or the error that ended it.

    stopped: its command was stopped because another client failed first.
    """

    index: int  # 1-based client number
    execution: Execution | None = None
    error: RunnerError | None = None
    stopped: bool = False

    @property
    def failed(self) -> bool:
        run = self.execution
        return self.error is not None or (
            run is not None and (run.exit_code != 0 or run.timed_out or run.cancelled)
        )


def run_together(
    executors: Sequence, commands: Sequence, *, timeout: float | None = None
) -> list[ClientRun]:
    """Run commands[i] on executors[i], started together; one ClientRun per client.

    Every command has ended (or was stopped) when this returns; timeout
    stops them all, marked timed out.
    """
    count = len(commands)
    barrier = threading.Barrier(count)
    started: list[Background | None] = [None] * count
    errors: list[RunnerError | None] = [None] * count
    launched = [threading.Event() for _ in range(count)]

    def launch(i: int) -> None:
        try:
            barrier.wait(BARRIER_TIMEOUT_S)
            started[i] = executors[i].start(commands[i])
        except threading.BrokenBarrierError:
            errors[i] = RunnerError("did not reach the start barrier")
        except RunnerError as exc:
            errors[i] = exc
            barrier.abort()  # the others must not wait for a client that failed
        finally:
            launched[i].set()
        if started[i] is not None:
            # A local tool dies with the thread that started it (its parent-
            # death signal): this thread lives until the command has ended.
            started[i].done.wait()

    threads = [threading.Thread(target=launch, args=(i,), daemon=True) for i in range(count)]
    for thread in threads:
        thread.start()
    for event in launched:
        event.wait()
    runs = [ClientRun(index=i + 1, error=errors[i]) for i in range(count)]
    try:
        _watch(executors, started, runs, timeout)
    finally:
        for thread in threads:
            thread.join()
    return runs


def _watch(executors, started, runs: list[ClientRun], timeout: float | None) -> None:
    """Wait for every started command; the first failure stops the rest."""
    deadline = None if timeout is None else time.monotonic() + timeout
    stop_all = any(run.error for run in runs)
    while True:
        pending = [
            i for i, bg in enumerate(started) if bg is not None and runs[i].execution is None
        ]
        for i in pending:
            if started[i].done.is_set():
                _finish(executors[i], started[i], runs[i])
                stop_all = stop_all or runs[i].failed
        pending = [i for i in pending if runs[i].execution is None and runs[i].error is None]
        if not pending:
            return
        timed_out = deadline is not None and time.monotonic() >= deadline
        if stop_all or timed_out:
            for i in pending:
                started[i].timed_out = timed_out
                runs[i].stopped = not timed_out
                _finish(executors[i], started[i], runs[i])
            return
        time.sleep(POLL_S)


def _finish(executor, bg: Background, run: ClientRun) -> None:
    """Collect bg (stopping it if it still runs) into run."""
    try:
        run.execution = executor.stop(bg)
    except RunnerError as exc:
        run.error = exc
