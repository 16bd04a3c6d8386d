"""benchapp.wsgi as gunicorn imports it: views loaded, templates compiled, the
connection opened and all of it frozen before a request."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet
from django.db import connection

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, json, sys
import benchapp.wsgi as wsgi
frozen = gc.get_freeze_count()
from django.db import connection
from django.template import engines
loader = engines["django"].engine.template_loaders[0]
cached = sorted(loader.get_template_cache) if hasattr(loader, "get_template_cache") else []
opened = connection.connection is not None
views = sorted(m for m in sys.modules if m.startswith("benchapp.web.views."))
# a request still works, and what it makes is collected as usual
from django.test import Client
status = Client().get("/healthz").status_code
print(json.dumps({"frozen": frozen, "cached": cached, "opened": opened, "views": views, "status": status,
                  "scipy_stats": "scipy.stats" in sys.modules,
                  "after": gc.get_freeze_count(), "enabled": gc.isenabled()}))
"""


def probe(**env) -> dict:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "benchapp.settings", **env}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_wsgi_app_loads_its_views_and_freezes_them_before_the_first_request():
    found = probe()
    # Django, the app and every view module: tens of thousands of objects.
    assert found["frozen"] > 20_000
    assert (
        "benchapp.web.views.comparisons" in found["views"]
        and "benchapp.web.views.runs" in found["views"]
    )
    assert found["status"] == 200
    assert found["scipy_stats"]  # imported at start, not by the first comparison
    assert found["after"] <= found["frozen"]  # nothing a request makes is frozen
    assert found["enabled"]  # the collector still runs for everything newer


def test_the_wsgi_app_compiles_its_templates_and_opens_its_connection_at_start(db):
    """As production runs it (DEBUG off, PostgreSQL, connections kept): the
    cached loader already holds every page's template, the connection is open."""
    database = connection.settings_dict
    assert database["ENGINE"].endswith("postgresql")
    found = probe(
        DJANGO_DEBUG="False",
        DJANGO_SECRET_KEY=secrets.token_urlsafe(40),
        BENCHBOARD_FERNET_KEYS=Fernet.generate_key().decode(),
        DJANGO_ALLOWED_HOSTS="testserver",
        DJANGO_SECURE_SSL_REDIRECT="False",
        DATABASE_URL="postgres://{USER}@{HOST}:{PORT}/{NAME}".format(**database),
    )
    assert found["opened"]
    for page in ("results/run.html", "comparisons/detail.html", "history/trend.html", "base.html"):
        assert page in found["cached"], page
    assert found["status"] == 200


def test_without_kept_connections_the_app_starts_without_one():
    found = probe(DATABASE_CONN_MAX_AGE="0")
    assert not found["opened"]
    assert found["status"] == 200


FORK = """
import json, os
import benchapp.wsgi
from django.db import connection
opened = connection.connection is not None
pid = os.fork()
if pid == 0:  # a worker forked after the app loaded (gunicorn --preload)
    inherited = connection.connection is not None
    with connection.cursor() as cursor:  # its own connection
        cursor.execute("SELECT pg_backend_pid()")
        child = cursor.fetchone()[0]
    print(json.dumps({"inherited": inherited, "backend": child}), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
with connection.cursor() as cursor:
    cursor.execute("SELECT pg_backend_pid()")
    parent = cursor.fetchone()[0]
print(json.dumps({"opened": opened, "parent_backend": parent}))
"""


def test_a_process_forked_after_the_app_loaded_opens_its_own_connection(db):
    """gunicorn --preload imports the app once and then forks its workers:
    the connection opened at load is closed before the fork, not shared."""
    database = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "benchapp.settings",
        "DATABASE_URL": "postgres://{USER}@{HOST}:{PORT}/{NAME}".format(**database),
    }
    proc = subprocess.run(
        [sys.executable, "-c", FORK], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    child, parent = (json.loads(line) for line in proc.stdout.strip().splitlines()[-2:])
    assert parent["opened"]
    assert not child["inherited"]
    assert child["backend"] != parent["parent_backend"]
