"""Celery tasks: thin named wrappers that take ids and call domain functions."""

import socket

from celery import shared_task
from django.conf import settings


@shared_task(name="benchapp.ping")
def ping(nonce: str) -> str:
    """Prove a worker is alive: writes var/pings/<nonce> with the worker's host name.

    Used by `manage.py check_worker` and the foundation tests; the nonce is
    validated so that it cannot name a path outside var/pings.
    """
    if not nonce.isalnum():
        raise ValueError("nonce must be alphanumeric")
    folder = settings.VAR_DIR / "pings"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / nonce).write_text(socket.gethostname())
    return nonce
