"""A real `celery -A benchapp worker` process for integration tests.

The worker is a separate OS process that talks to the same PostgreSQL test
database (tests that use it need `transactional_db`, so rows are committed)
and to the broker given in its environment.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# Short heartbeats and leases, for tests that kill or cancel a running cell.
FAST_LEASES = {"BENCHBOARD_HEARTBEAT_SECONDS": 1, "BENCHBOARD_LEASE_SECONDS": 4}


def match_leases(settings, env: dict) -> None:
    """Give this test process the heartbeat and lease of a worker started with
    env: the lease dispatch hands out is the one the worker renews."""
    for name in FAST_LEASES:
        setattr(settings, name, env[name])


ROOT = Path(__file__).resolve().parents[2]


def worker_env(**extra) -> dict:
    """The environment of a worker process that shares this test database."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    env = dict(os.environ)
    if db["ENGINE"].endswith("postgresql"):
        env["DATABASE_URL"] = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    env.update({k: str(v) for k, v in extra.items()})
    return env


def own_host(host: str | None) -> list[str]:
    """The argv prefix that runs a worker as another worker host: in a UTS
    namespace of its own (root only), under the host name `host`."""
    if host is None:
        return []
    return ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"', host]


class Worker:
    """A running worker process; `kill(sig)` and `stop()` for fault tests."""

    def __init__(
        self,
        log_path: Path,
        env: dict,
        name: str,
        concurrency: int = 1,
        host: str | None = None,
        cwd: Path = ROOT,
    ):
        self.log_path = log_path
        self.host = host
        argv = [
            *own_host(host),
            sys.executable,
            "-m",
            "celery",
            "-A",
            "benchapp",
            "worker",
            "--loglevel=INFO",
            f"--concurrency={concurrency}",
            "-n",
            f"{name}@%h",
            "--without-gossip",
            "--without-mingle",
        ]
        self.log = open(log_path, "w")
        # cwd: the code the worker runs (an older version's tree in the upgrade test).
        self.proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._wait_ready()

    def _wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "ready." in self.log_path.read_text():
                return
            if self.proc.poll() is not None:
                raise RuntimeError("worker exited:\n" + self.log_path.read_text()[-3000:])
            time.sleep(0.2)
        raise RuntimeError("worker not ready:\n" + self.log_path.read_text()[-3000:])

    def output(self) -> str:
        return self.log_path.read_text()

    def kill(self, sig=signal.SIGKILL) -> None:
        """Signal the whole process group (main process and pool children)."""
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.kill(signal.SIGTERM)
        self.log.close()


@pytest.fixture
def start_worker(tmp_path):
    """Factory: start_worker(name="w1", concurrency=1, host=None, **env) -> Worker.

    host: run it as another worker host (own_host), with its own var dir.
    All stopped after."""
    from benchapp.celery import app

    app.control.purge()  # messages left by earlier tests name rows that are gone
    workers: list[Worker] = []

    def start(name: str = "w1", concurrency: int = 1, host: str | None = None, **extra_env):
        if host is not None:  # another machine: its own host name and var dir
            extra_env.setdefault("BENCHBOARD_VAR_DIR", tmp_path / f"var-{host}")
        worker = Worker(
            tmp_path / f"{name}-{len(workers)}.log",
            worker_env(**extra_env),
            name,
            concurrency,
            host,
        )
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.stop()
