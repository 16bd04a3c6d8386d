"""The app served for a browser the way `make run` and production serve it:
DEBUG off, static files collected, gunicorn with 2 workers (whitenoise), on
the embedded default (SQLite, no DATABASE_URL) or a PostgreSQL database of
scripts/bench_results.py's. bench/pages.py loads its pages in Chromium.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SECRET_KEY = secrets.token_urlsafe(40)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def environment(database: str, var_dir: Path) -> dict:
    """The server's environment, DEBUG off; SQLite as `make run` has it (no DATABASE_URL)."""
    env = {
        **os.environ,
        "DJANGO_DEBUG": "False",
        "BENCHBOARD_VAR_DIR": str(var_dir),
        # The server's key: the session's auth hash is signed with it.
        "DJANGO_SECRET_KEY": SECRET_KEY,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECURE_SSL_REDIRECT": "False",
    }
    env.setdefault("BENCHBOARD_FERNET_KEYS", _fernet_key())
    if database == "sqlite":
        env.pop("DATABASE_URL", None)
        env["BENCHBOARD_EMBEDDED"] = "1"
    else:
        sys.path.insert(0, str(ROOT / "scripts"))
        import bench_results

        env["DATABASE_URL"] = bench_results.database_url(2)
        bench_results.create_database(env["DATABASE_URL"])
    return env


def collectstatic(env: dict) -> None:
    subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        check=True,
    )


# A gunicorn hook that logs each worker once it has loaded the app (benchapp.wsgi imports
# every view, and scipy, at that point): the port answers before, while the workers boot.
READY_HOOK = """def post_worker_init(worker):
    worker.log.info("worker ready")
"""


@contextlib.contextmanager
def server(env: dict, collect: bool = True, workers_ready: bool = False):
    """gunicorn as `make run` starts it, DEBUG off, static files collected;
    workers_ready: wait until both workers have loaded the app, not just
    until the port answers."""
    var_dir = Path(env["BENCHBOARD_VAR_DIR"])
    if collect:
        collectstatic(env)
    hook = var_dir / "gunicorn_ready.py"
    hook.write_text(READY_HOOK)
    port = _free_port()
    log = open(var_dir / "gunicorn.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "benchapp.wsgi:application",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            "2",
            "--timeout",
            "60",
            *(["--config", str(hook)] if workers_ready else []),
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if workers_ready:
                if (var_dir / "gunicorn.log").read_text().count("worker ready") >= 2:
                    break
            else:
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                    break
            if proc.poll() is not None:
                raise RuntimeError((var_dir / "gunicorn.log").read_text()[-2000:])
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def _fernet_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()
