"""Who this worker host is: its stable id and the queue only it consumes.

The id is the UTS host name with a short digest of the machine's id
(/etc/machine-id) and that name: two machines that share a name (cloned
images) differ, and two containers or UTS namespaces of one machine (one
machine id) differ by their names. BENCHBOARD_HOST_ID, when set, is the id
instead. No models here: the Celery app reads it before Django's apps load.
"""

from __future__ import annotations

import hashlib
import re
import socket
from pathlib import Path

from django.conf import settings

MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def machine_id() -> str:
    """The machine's id (systemd's), or "" where there is none (many containers)."""
    for path in MACHINE_ID_FILES:
        try:
            found = Path(path).read_text().strip()
        except OSError:
            continue
        if found:
            return found
    return ""


def hostname() -> str:
    return socket.gethostname()


def host_id() -> str:
    """This host's stable id: "NAME.DIGEST", or BENCHBOARD_HOST_ID."""
    chosen = getattr(settings, "BENCHBOARD_HOST_ID", "")
    if chosen:
        return _SAFE.sub("-", chosen)[:200]
    name = hostname()
    digest = hashlib.sha256(f"{machine_id()}\n{name}".encode()).hexdigest()[:8]
    return f"{_SAFE.sub('-', name)[:180]}.{digest}"


def host_queue(host: str | None = None) -> str:
    """The queue only the workers of host `host` (this one by default) consume."""
    return f"{settings.CELERY_TASK_DEFAULT_QUEUE}.host.{host or host_id()}"
