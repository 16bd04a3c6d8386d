#!/usr/bin/env python
"""`make run`: the web server (gunicorn), a Celery worker and beat together.

Prepares the database and static files, starts the three with their logs in
var/log/, waits until the web server answers, starts the demo run (unless
BENCHBOARD_DEMO=0, which `make run DEMO=0` sets), printing a line per step,
and ends its output with the URL and the login. Ctrl-C (or SIGTERM) stops all three.

With no environment this is the embedded default on one machine (SQLite and a
filesystem broker under var/, DEBUG off, secrets generated into var/); with
DATABASE_URL/CELERY_BROKER_URL it uses those (and then DJANGO_SECRET_KEY etc.
must be set). BENCHBOARD_DEV=1 (`make dev`) runs Django's runserver with DEBUG on.
"""

import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
HOST = os.environ.get("BENCHBOARD_HOST", "127.0.0.1")
PORT = os.environ.get("BENCHBOARD_PORT", "8000")
DEV = os.environ.get("BENCHBOARD_DEV", "0") == "1"
# `make run DEMO=0` sets BENCHBOARD_DEMO=0: no demo run.
DEMO = os.environ.get("BENCHBOARD_DEMO", "1") == "1"
VAR = Path(os.environ.get("BENCHBOARD_VAR_DIR", ROOT / "var"))
LOG = VAR / "log"
START_TIMEOUT = 120


def environment() -> dict:
    env = dict(os.environ)
    env.setdefault("DJANGO_DEBUG", "True" if DEV else "False")
    if not env.get("DATABASE_URL"):
        env["BENCHBOARD_EMBEDDED"] = "1"  # secrets generated into var/, plain HTTP
    hosts = "*" if HOST in ("0.0.0.0", "::") else f"{HOST},127.0.0.1,localhost"
    env.setdefault("DJANGO_ALLOWED_HOSTS", hosts)
    return env


def commands() -> dict:
    if DEV:
        web = [PY, "manage.py", "runserver", "--noreload", f"{HOST}:{PORT}"]
    else:
        web = [
            PY,
            "-m",
            "gunicorn",
            "benchapp.wsgi:application",
            "--bind",
            f"{HOST}:{PORT}",
            "--workers",
            os.environ.get("BENCHBOARD_WEB_WORKERS", "2"),
            "--access-logfile",
            "-",
            "--timeout",
            "60",
        ]
    return {
        "web": web,
        "worker": [
            PY,
            "-m",
            "celery",
            "-A",
            "benchapp",
            "worker",
            "--loglevel=INFO",
            "--concurrency=2",
            "-n",
            "worker@%h",
        ],
        "beat": [
            PY,
            "-m",
            "celery",
            "-A",
            "benchapp",
            "beat",
            "--loglevel=INFO",
            "--schedule",
            str(VAR / "celerybeat-schedule"),
        ],
    }


def manage(env: dict, *args: str) -> str:
    """Run a manage.py command; its output goes to var/log/setup.log (and is returned)."""
    done = subprocess.run(
        [PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )
    with open(LOG / "setup.log", "a") as log:
        log.write(f"$ manage.py {' '.join(args)}\n{done.stdout}{done.stderr}")
    if done.returncode:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def progress(step: str) -> None:
    """A line per setup step: the first start (migrations) takes a while."""
    print(f"... {step}", flush=True)


def start_demo(env: dict) -> None:
    """Start the demo run (it runs on the worker) and say what it uses and how
    to skip it; a demo that cannot start does not stop the app."""
    if not DEMO:
        print("Demo run skipped (DEMO=0).", flush=True)
        return
    done = subprocess.run(
        [PY, "manage.py", "demo_run"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    with open(LOG / "demo.log", "a") as log:
        log.write(done.stdout + done.stderr)
    if done.returncode:
        print(f"The demo run did not start; see {LOG / 'demo.log'}", flush=True)
    else:
        print(done.stdout.strip(), flush=True)
    print("Skip the demo next time: make run DEMO=0", flush=True)


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "healthz", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def main() -> int:
    LOG.mkdir(parents=True, exist_ok=True)
    env = environment()
    # Static files are collected (and compressed) while the database migrates.
    static = subprocess.Popen(
        [PY, "manage.py", "collectstatic", "--noinput"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    progress("migrating the database and collecting the static files")
    manage(env, "migrate", "--noinput")
    login = manage(env, "demo_user").strip().splitlines()[-1]
    output = static.communicate()[0]
    with open(LOG / "setup.log", "a") as log:
        log.write(f"$ manage.py collectstatic --noinput\n{output}")
    if static.returncode:
        sys.exit(f"manage.py collectstatic failed:\n{output[-2000:]}")
    progress(f"starting the web server, a Celery worker and beat (logs in {LOG})")
    procs = {}
    for name, argv in commands().items():
        with open(LOG / f"{name}.log", "a") as log:
            procs[name] = subprocess.Popen(
                argv,
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    url = f"http://{'127.0.0.1' if HOST in ('0.0.0.0', '::') else HOST}:{PORT}/"
    progress(f"waiting for the web server at {url}")
    deadline = time.monotonic() + START_TIMEOUT
    while not stopping and not answers(url):
        if time.monotonic() > deadline or procs["web"].poll() is not None:
            print(f"the web server did not answer at {url}; see {LOG / 'web.log'}", file=sys.stderr)
            stopping = True
            break
        time.sleep(0.3)
    if not stopping:
        start_demo(env)
        mode = "development mode (DEBUG on)" if DEV else f"logs in {LOG}"
        print(f"Benchboard is running ({mode}); Ctrl-C stops it.", flush=True)
        print(f"Open {url}", flush=True)
        print(login, flush=True)
    while not stopping:
        for name, proc in procs.items():
            if proc.poll() is not None:
                print(
                    f"{name} exited with {proc.returncode}; see {LOG / (name + '.log')}",
                    file=sys.stderr,
                )
                stopping = True
        time.sleep(0.5)
    for proc in procs.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs.values():
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
