"""The settings' secrets (benchapp/settings.py reads the environment; these
read no variable): the secret key and Fernet keys generated into var/ on an
embedded or debug start, safely when several processes start at once, and a
malformed Fernet key refused at start.
"""

import os
import threading
from pathlib import Path

from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured


def generated_secret(path: Path, make) -> str:
    """Read the file at path, creating it (mode 0600) with make() on first run.

    Several processes start at once on a first run (`make run` migrates while
    it collects static files, then starts the web server and the worker). Each
    writes its own key to a file of its own and links it into place: the first
    link wins and every process reads that one whole file, so none reads a
    half-written key and all share the same one.
    """
    if not path.exists():
        own = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        try:
            with open(os.open(own, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as file:
                file.write(make())
            os.link(own, path)
        except FileExistsError:
            pass  # another process was first: read its key
        finally:
            own.unlink(missing_ok=True)
    return path.read_text().strip()


def check_fernet_keys(keys: list[str]) -> None:
    """Refuse to start on a malformed key; the message names the variable, never the key."""
    if not keys:
        raise ImproperlyConfigured("BENCHBOARD_FERNET_KEYS is empty: set at least one Fernet key")
    for position, key in enumerate(keys, start=1):
        try:
            Fernet(key.encode())
        except (ValueError, TypeError):
            raise ImproperlyConfigured(
                f"BENCHBOARD_FERNET_KEYS: key {position} is not a valid Fernet key (32 "
                "url-safe base64-encoded bytes; make one with "
                "`python -c 'from cryptography.fernet import Fernet; "
                "print(Fernet.generate_key().decode())'`)"
            ) from None
