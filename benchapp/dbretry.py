"""Ride out an outage of the app's own database: retry a unit of database
work after reconnecting, with backoff, for up to BENCHBOARD_DB_RETRY_SECONDS.

A worker keeps its database connection between tasks. When PostgreSQL
restarts or is unreachable for a while, that connection is dead and every
write on it fails, though the cell beside it (a tool on a target) may be
measuring happily. Without this, the first failed write ended the cell's
task: its measurement was thrown away and the cell stayed "running" until
the reaper's lease re-ran it. With it, the write waits for the database and
happens once it is back (docs/operations.md, "What each fault costs").

Only whole units are retried: a function that opens its own transaction
(record_outcome), or a single statement outside one. Inside an atomic block
a failure is raised at once, since the block is lost with the connection and
only its caller can start it again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

log = logging.getLogger(__name__)

T = TypeVar("T")

# Errors that mean "the connection or the server is gone", not "the query is wrong".
LOST = (OperationalError, InterfaceError)
FIRST_WAIT, LONGEST_WAIT = 0.5, 5.0


def lost_database(exc: BaseException) -> bool:
    """True when exc (or what it was raised from) is a lost connection or server."""
    while exc is not None:
        if isinstance(exc, LOST):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def reconnect() -> None:
    """Drop this thread's connection; the next query opens a new one."""
    try:
        connection.close()
    except Exception:  # a dead socket may fail to close: it is dropped either way
        log.debug("closing a lost database connection failed", exc_info=True)


def retrying(work: Callable[[], T], what: str, budget: float | None = None) -> T:
    """work(), again after each lost connection until budget seconds
    (BENCHBOARD_DB_RETRY_SECONDS) have passed; then the last error is raised.

    Waits 0.5 s, 1 s, 2 s, ... up to 5 s between tries, so a returning
    database is found within 5 s of accepting connections."""
    budget = settings.BENCHBOARD_DB_RETRY_SECONDS if budget is None else budget
    deadline = time.monotonic() + budget
    wait = FIRST_WAIT
    while True:
        try:
            return work()
        except LOST as exc:
            if connection.in_atomic_block or time.monotonic() + wait > deadline:
                raise
            log.warning("database lost while %s (%s); retrying in %.1f s", what, exc, wait)
            reconnect()
            time.sleep(wait)
            wait = min(wait * 2, LONGEST_WAIT)
