"""Polling helpers for tests that watch runs progress through real workers."""

from __future__ import annotations

import time


def wait_for(predicate, timeout=90, step=0.2, reap=False):
    """Poll predicate until it returns something truthy (returned); fail after timeout.

    reap=True runs reaper.reap() before each poll, as beat would.
    """
    from benchapp.runs import reaper

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if reap:
            reaper.reap()
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout} s")


def finished(run) -> bool:
    """True once the run has left its active states."""
    run.refresh_from_db()
    return not run.is_active
