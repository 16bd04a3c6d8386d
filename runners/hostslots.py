"""A bound on the cells that run sandboxed tools on one worker host at once.

The limits (runners/limits.py) bound one cell; without a bound on the cells,
a host running as many of them as its workers have slots could be asked for
that many times the memory and CPU. A cell takes one of `count` slots (an
exclusive flock on a file `slot-<i>` of the slots directory) at its first
sandboxed process and lets it go when it ends (runners.executors.local). The
directory is the host's: every worker process on the host shares it, and a
lock dies with the process that held it, so a killed worker frees its slots.

A cell that finds every slot taken waits (a cancel stops the wait); the cell's
runtime cap bounds the wait like any other phase.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable

from runners.errors import RunnerError

POLL_S = 0.25


class Slot:
    """One held slot: an open file with an exclusive flock on it."""

    def __init__(self, fd: int, index: int) -> None:
        self.fd, self.index = fd, index

    @classmethod
    def take(cls, directory: str, count: int, cancelled: Callable[[], bool]) -> Slot:
        """The first free slot of `count` in directory, waiting for one;
        RunnerError when cancelled while waiting."""
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise RunnerError(
                f"cannot make the sandbox slots directory {directory}: {exc}"
            ) from exc
        while True:
            refused: list[OSError] = []
            for index in range(count):
                try:
                    slot = cls._try(directory, index)
                except OSError as exc:  # e.g. a slot file not made yet on a full or read-only var/
                    refused.append(exc)
                    continue
                if slot is not None:
                    return slot
            if len(refused) == count:
                raise RunnerError(
                    f"no sandbox slot file can be opened in {directory}: {refused[0]}"
                )
            if cancelled():
                raise RunnerError(
                    "cancelled while waiting for one of the worker host's "
                    f"{count} sandbox slots (BENCHBOARD_SANDBOX_MAX_CELLS)"
                )
            time.sleep(POLL_S)

    @classmethod
    def _try(cls, directory: str, index: int) -> Slot | None:
        # Read-only: a lock needs no write access, so slot files made earlier
        # keep working when var/ is full or turns read-only.
        fd = os.open(os.path.join(directory, f"slot-{index}"), os.O_RDONLY | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return cls(fd, index)

    def release(self) -> None:
        """Let the slot go (closing the file drops its lock)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def held(directory: str, count: int) -> int:
    """How many of the `count` slots some process holds now (tests, pages)."""
    if not os.path.isdir(directory):
        return 0
    taken = 0
    for index in range(count):
        slot = Slot._try(directory, index)
        if slot is None:
            taken += 1
        else:
            slot.release()
    return taken
