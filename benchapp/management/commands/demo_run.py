"""The demo of `make run`: a small plan on what this machine has.

Local MariaDB (127.0.0.1:3306, root without a password) when it answers, in
a schema of its own (DEMO_SCHEMA, which mysqlslap creates and drops: it
cannot run inside an existing database), else fio on a temporary directory.
It finishes within a minute. The line it prints names where it runs.
"""

import socket
import tempfile

from django.core.management.base import BaseCommand

from benchapp.models import Team
from benchapp.runs import orchestration

# mysqlslap drops its schema before and after the run: a name no one else uses.
DEMO_SCHEMA = "benchboard_demo"
MARIADB_DEMO = {
    "name": "demo: mysqlslap load types on local MariaDB",
    "tool": "mysqlslap",
    "targets": [
        {
            "name": "local-mariadb",
            "kind": "mysql",
            "host": "127.0.0.1",
            "port": 3306,
            "user": "root",
        }
    ],
    "params": {
        "auto_generate_sql": True,
        "add_autoincrement": True,
        "number_char_cols": 3,
        "number_int_cols": 5,
        "number_of_queries": 500,
        "concurrency": 2,
        "iterations": 2,
        "engine": "innodb",
        "create_schema": DEMO_SCHEMA,
    },
    "axes": {"load_type": ["read", "write", "key", "update", "mixed"]},
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
            "runtime": 2,
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


class Command(BaseCommand):
    help = "Start the demo plan for the demo team."

    def handle(self, *args, **options):
        team, _ = Team.objects.get_or_create(name="demo")
        if mariadb_reachable():
            document, where = MARIADB_DEMO, f"schema {DEMO_SCHEMA} on 127.0.0.1:3306"
        else:
            directory = tempfile.mkdtemp(prefix="benchboard-demo-")
            document, where = fio_demo(directory), f"directory {directory}"
        run = orchestration.start_run(team, document, origin="demo")
        self.stdout.write(
            f"Demo run #{run.pk} started: {document['name']} ({run.cells.count()} cells) "
            f"in {where} — see it at /runs/{run.pk}/"
        )
