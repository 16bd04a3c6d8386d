#!/usr/bin/env python
"""`make run`: the web server, a Celery worker and beat together.

Prints the URL, then waits; Ctrl-C (or SIGTERM) stops all three cleanly.
With no environment this is the embedded default (SQLite + filesystem broker
under var/); with DATABASE_URL/CELERY_BROKER_URL it uses those.
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
HOST = os.environ.get("BENCHBOARD_HOST", "127.0.0.1")
PORT = os.environ.get("BENCHBOARD_PORT", "8000")

COMMANDS = {
    "web": [PY, "manage.py", "runserver", "--noreload", f"{HOST}:{PORT}"],
    "worker": [PY, "-m", "celery", "-A", "benchapp", "worker", "--loglevel=INFO",
               "--concurrency=2", "-n", "worker@%h"],
    "beat": [PY, "-m", "celery", "-A", "benchapp", "beat", "--loglevel=INFO",
             "--schedule", str(ROOT / "var" / "celerybeat-schedule")],
}


def main() -> int:
    procs = {name: subprocess.Popen(argv, cwd=ROOT) for name, argv in COMMANDS.items()}
    stopping = False

    def stop(*_):
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    time.sleep(2)
    print(f"\nBenchboard is running: http://{HOST}:{PORT}/  (Ctrl-C stops it)\n", flush=True)
    if os.environ.get("BENCHBOARD_DEMO", "1") == "1":
        subprocess.Popen([PY, "manage.py", "demo_run"], cwd=ROOT)
    while not stopping:
        for name, proc in procs.items():
            if proc.poll() is not None:
                print(f"{name} exited with {proc.returncode}; stopping", file=sys.stderr)
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
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
