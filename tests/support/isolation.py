"""Loaded first (`-p tests.support.isolation` in pyproject): give this pytest
process a Celery queue of its own before Django reads its settings.

Several test sessions on one machine share the broker's Redis database; with
one queue name they would take each other's tasks and look the ids up in the
wrong test database. The worker processes a test starts inherit the variable.
"""

import os

os.environ.setdefault("BENCHBOARD_QUEUE", f"test-{os.getpid()}")
