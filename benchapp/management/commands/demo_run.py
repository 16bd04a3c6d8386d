"""The demo of `make run`: a small plan on what this machine has.

Local MariaDB (127.0.0.1:3306, root without a password) when it answers and
lets the demo create its database (DEMO_SCHEMA): sysbench OLTP at 1, 2 and 4
threads, the table prepared once and dropped at the end. Else fio on a
temporary directory. Each cell measures 6 s, so its timeline has points and
its verdict rests on the 5 per-second samples a verdict needs
(docs/telemetry.md); the run finishes within a minute. The line it prints
names where it runs.
"""

import shutil
import socket
import subprocess
import tempfile

from django.core.management.base import BaseCommand

from benchapp.models import Team
from benchapp.runs import orchestration

# The demo's own database (created if missing; sysbench's table is dropped at the end).
DEMO_SCHEMA = "benchboard_demo"
MEASURE_S = 6  # a verdict needs 5 per-second samples of the measure
MARIADB_DEMO = {
    "name": "demo: sysbench OLTP threads on local MariaDB",
    "tool": "sysbench",
    "targets": [
        {
            "name": "local-mariadb",
            "kind": "mysql",
            "host": "127.0.0.1",
            "port": 3306,
            "user": "root",
            "database": DEMO_SCHEMA,
        }
    ],
    "params": {
        "test": "oltp_read_write",
        "tables": 1,
        "table_size": 10000,
        "time": MEASURE_S,
        "report_interval": 1,
    },
    "prepare": {"once": True},
    "cleanup": True,
    "axes": {"threads": [1, 2, 4]},
    "timeout": 60,
}


def fio_demo(directory: str) -> dict:
    return {
        "name": "demo: fio on a temporary directory",
        "tool": "fio",
        "targets": [{"name": "local-disk", "kind": "host"}],
        "params": {
            "directory": directory,
            "size": "16M",
            "bs": "4k",
            "runtime": MEASURE_S,
            "time_based": True,
        },
        "axes": {"rw": ["read", "write", "randread", "randwrite"]},
    }


def mariadb_reachable() -> bool:
    try:
        socket.create_connection(("127.0.0.1", 3306), timeout=1).close()
        return True
    except OSError:
        return False


def demo_database() -> bool:
    """Create the demo's database on the local MariaDB; False when it cannot
    be (no client installed, or root needs a password there)."""
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        return False
    statement = f"CREATE DATABASE IF NOT EXISTS {DEMO_SCHEMA}"
    try:
        done = subprocess.run(
            [client, "-h127.0.0.1", "-P3306", "-uroot", "-e", statement],
            capture_output=True,
            timeout=20,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class Command(BaseCommand):
    help = "Start the demo plan for the demo team."

    def handle(self, *args, **options):
        team, _ = Team.objects.get_or_create(name="demo")
        if mariadb_reachable() and demo_database():
            document, where = MARIADB_DEMO, f"schema {DEMO_SCHEMA} on 127.0.0.1:3306"
        else:
            directory = tempfile.mkdtemp(prefix="benchboard-demo-")
            document, where = fio_demo(directory), f"directory {directory}"
        run = orchestration.start_run(team, document, origin="demo")
        self.stdout.write(
            f"Demo run #{run.pk} started: {document['name']} ({run.cells.count()} cells) "
            f"in {where} — see it at /runs/{run.pk}/"
        )
