"""benchapp.wsgi as gunicorn imports it: views loaded and frozen before a request."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, json, sys
import benchapp.wsgi as wsgi
frozen = gc.get_freeze_count()
views = sorted(m for m in sys.modules if m.startswith("benchapp.web.views."))
# a request still works, and what it makes is collected as usual
from django.test import Client
status = Client().get("/healthz").status_code
print(json.dumps({"frozen": frozen, "views": views, "status": status,
                  "scipy_stats": "scipy.stats" in sys.modules,
                  "after": gc.get_freeze_count(), "enabled": gc.isenabled()}))
"""


def test_the_wsgi_app_loads_its_views_and_freezes_them_before_the_first_request():
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "benchapp.settings"}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    found = json.loads(proc.stdout.strip().splitlines()[-1])
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
