"""Executors: run Commands locally or over SSH behind one interface.

    from runners.executors import LocalExecutor, SSHExecutor, trust_on_first_use

Execution and Background (base.py) are what runs return; LocalExecutor
(local.py) uses subprocess with a new session per tool; SSHExecutor (ssh.py)
uses paramiko and detaches tools remotely (remote.py), with the host keys
of hostkeys.py. paramiko is imported only when SSHExecutor or
trust_on_first_use is first used.
"""

from runners.executors.base import Background, Execution, Executor
from runners.executors.local import LocalExecutor

__all__ = [
    "Background",
    "Execution",
    "Executor",
    "LocalExecutor",
    "SSHExecutor",
    "trust_on_first_use",
]


def __getattr__(name):
    # Heavy library (paramiko) loaded where used, not at import time.
    if name == "SSHExecutor":
        from runners.executors import ssh

        return ssh.SSHExecutor
    if name in ("trust_on_first_use", "fingerprint"):
        from runners.executors import hostkeys

        return getattr(hostkeys, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
