"""The heartbeat of a running cell (a thread beside the tool): renews the
cell's lease and its locks, forwards phase and output, notices a cancel or a
lost lease, and stops a cell that runs past its runtime cap."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from benchapp.dbretry import LOST, reconnect
from benchapp.models import Cell, Run
from benchapp.plans import estimates
from benchapp.runs import machines
from benchapp.store import frozenparts


def runtime_limits(cell: Cell) -> tuple[float, float | None, str]:
    """(cell cap, measure cap or None, how the measure cap was reckoned).

    The cell cap is the operator's BENCHBOARD_CELL_MAX_SECONDS, for every
    phase together. The measure cap is the plan's estimate of the measured
    phase (benchapp.plans.estimates) times BENCHBOARD_CELL_ESTIMATE_MARGIN, for a
    tool that states its own duration; a tool without one (mysqlslap) gets
    the cell cap only: a guessed duration is no ground to stop a cell.
    Prepare phases have no estimate (their size is the data's), so the
    estimate caps the measured phase only."""
    cap = float(settings.BENCHBOARD_CELL_MAX_SECONDS)
    spec = frozenparts.frozen(cell, plan_keys=("tool",))
    params = (spec.get("cell") or {}).get("params") or {}
    tool = (spec.get("plan") or {}).get("tool", "")
    if estimates.tool_seconds(tool, params) is None:
        return cap, None, ""
    estimate = estimates.cell_seconds(tool, params)
    margin = settings.BENCHBOARD_CELL_ESTIMATE_MARGIN
    return cap, estimate * margin, f"estimate {estimate:g} s × {margin:g}"


class Heartbeat(threading.Thread):
    """Renews a running cell's lease, forwards phase/output, watches for cancel.

    Writes happen here, not in the callbacks, so a tool that prints a lot
    costs one UPDATE per beat, not one per line.
    """

    TAIL = 4000

    def __init__(self, cell: Cell, lease: Callable[[], datetime]):
        super().__init__(daemon=True, name=f"heartbeat-{cell.pk}")
        self.cell, self._lease = cell, lease
        self.cancel_event = threading.Event()
        self._stop_event = threading.Event()
        self._lock = threading.Lock()
        self._phase = None
        self._tail = ""
        self._new_phase = False
        self._dirty = False
        self._began = time.monotonic()
        self._measure_started: float | None = None
        self._limits = runtime_limits(cell)
        self.overrun = ""  # why the runtime cap stopped the cell, once it did

    def set_phase(self, phase: str) -> None:
        # The tail is cleared by the new phase's first output, not here: a
        # silent collect/cleanup phase must not wipe what measure printed.
        with self._lock:
            self._phase, self._new_phase, self._dirty = phase, True, True
            self._measure_started = time.monotonic() if phase == "measure" else None
        self._beat_or_later()

    def add_output(self, phase: str, stream: str, chunk: str) -> None:
        with self._lock:
            if self._new_phase:
                self._tail, self._new_phase = "", False
            self._tail = (self._tail + chunk)[-self.TAIL :]
            self._dirty = True

    def run(self) -> None:
        from django.db import connection

        try:
            while not self._stop_event.wait(settings.BENCHBOARD_HEARTBEAT_SECONDS):
                self._check_runtime()
                self._beat_or_later()
            if self._dirty:  # the cell ended between beats: keep what it printed
                self._beat_or_later()
        finally:
            connection.close()

    def _check_runtime(self) -> None:
        """Stop the cell (the executors kill the tool's process group on
        cancel) once it passed a cap; `overrun` says which, for its error."""
        if self.overrun:
            return
        cap, measure_cap, reckoned = self._limits
        now = time.monotonic()
        if now - self._began > cap:
            self.overrun = f"stopped: ran past its limit of {cap:g} s (BENCHBOARD_CELL_MAX_SECONDS)"
        elif (
            measure_cap is not None
            and self._measure_started is not None
            and now - self._measure_started > measure_cap
        ):
            self.overrun = f"stopped: measure ran past its limit of {measure_cap:g} s ({reckoned})"
        if self.overrun:
            self.cancel_event.set()

    def _beat_or_later(self) -> None:
        """A beat; when the app's database is away, the next one tries again
        on a new connection (the cell goes on measuring meanwhile: its lease
        is not renewed, and the reaper waits a lease after the database's
        return before it calls that a dead worker, benchapp.runs.reaper)."""
        try:
            self._beat()
        except LOST:
            reconnect()

    def _beat(self) -> None:
        with self._lock:
            fields = {"lease_expires_at": self._lease()}
            phase = self._phase
            if self._dirty:
                fields["output_tail"] = self._tail
                if phase:
                    fields["phase"] = phase
                    fields["phase_started_at"] = timezone.now()
                    self._phase = None
                self._dirty = False
        try:
            self._write(fields)
        except LOST:
            with self._lock:  # written next time, unless a newer phase came
                if "output_tail" in fields:
                    self._dirty = True
                    self._phase = self._phase or phase
            raise

    def _write(self, fields: dict) -> None:
        alive = Cell.objects.filter(pk=self.cell.pk, attempt=self.cell.attempt, status=Cell.RUNNING)
        if not alive.update(**fields):
            self.cancel_event.set()  # cancelled, or the reaper gave our cell away
            return
        machines.renew(self.cell, fields["lease_expires_at"])
        if Run.objects.filter(pk=self.cell.run_id, cancel_requested=True).exists():
            self.cancel_event.set()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)
