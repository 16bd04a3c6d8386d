"""Loaded first (`-p tests.support.isolation` in pyproject): give this pytest
process a Celery queue of its own before Django reads its settings.

Several test sessions on one machine share the broker's Redis database; with
one queue name they would take each other's tasks and look the ids up in the
wrong test database. The worker processes a test starts inherit the variable.
Under pytest-xdist (`make test` runs three processes) each process inherits the
controller's environment, so each adds its own worker id to the name.

The tests run the development settings (DJANGO_DEBUG=True: secrets generated
into the test var/ directory); DEBUG is off by default (benchapp/settings.py),
and tests of that default load the settings in a subprocess without it.
"""

import os

os.environ.setdefault("BENCHBOARD_QUEUE", f"test-{os.getpid()}")
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["BENCHBOARD_QUEUE"] += "-" + os.environ["PYTEST_XDIST_WORKER"]
os.environ.setdefault("DJANGO_DEBUG", "True")
