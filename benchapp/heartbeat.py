"""The heartbeat of a running cell (a thread beside the tool): renews the
cell's lease and its target lock, forwards phase and output, and notices a
cancel or a lost lease."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from benchapp.models import Cell, Run, TargetLock


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

    def set_phase(self, phase: str) -> None:
        # The tail is cleared by the new phase's first output, not here: a
        # silent collect/cleanup phase must not wipe what measure printed.
        with self._lock:
            self._phase, self._new_phase, self._dirty = phase, True, True
        self._beat()

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
                self._beat()
            if self._dirty:  # the cell ended between beats: keep what it printed
                self._beat()
        finally:
            connection.close()

    def _beat(self) -> None:
        with self._lock:
            fields = {"lease_expires_at": self._lease()}
            if self._dirty:
                fields["output_tail"] = self._tail
                if self._phase:
                    fields["phase"] = self._phase
                    fields["phase_started_at"] = timezone.now()
                    self._phase = None
                self._dirty = False
        alive = Cell.objects.filter(pk=self.cell.pk, attempt=self.cell.attempt, status=Cell.RUNNING)
        if not alive.update(**fields):
            self.cancel_event.set()  # cancelled, or the reaper gave our cell away
            return
        TargetLock.objects.filter(holder=self.cell).update(
            lease_expires_at=fields["lease_expires_at"]
        )
        if Run.objects.filter(pk=self.cell.run_id, cancel_requested=True).exists():
            self.cancel_event.set()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=30)
