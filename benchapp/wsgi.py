"""WSGI entry point (gunicorn benchapp.wsgi).

Before the first request it imports every view (through the URLconf),
compiles every template (the cached loader keeps them for the process),
opens the process's database connection (kept between requests on
PostgreSQL: DATABASE_CONN_MAX_AGE) and then takes everything loaded so far
out of the cycle collector's walks (gc.freeze): modules, settings, URL
patterns and templates live as long as the process, and a full collection
that walks them all again added 120-160 ms to the request it fell on (one in
20 to 40 comparison pages, measured with scripts/bench_results.py on a slow
2-core machine).

gunicorn imports this module in each worker after forking: the connection
opened here is the worker's own. With --preload it is imported once, before
the fork, and a connection shared by two processes would mix their
messages: it is closed before any fork, so each worker opens its own.
"""

import gc
import logging
import os
from pathlib import Path

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 (imports every view module now, not on a request)
# The comparison page's significance tests import scipy.stats on first use:
# 4.3 s on a slow machine, paid by the first comparison after a restart.
import scipy.stats  # noqa: E402, F401

log = logging.getLogger(__name__)


def compile_templates() -> int:
    """Compile every template of the project's and the apps' template
    directories once; returns how many. With DEBUG off Django's cached loader
    keeps each compiled template, so the first request of each page does not
    parse its templates and their includes."""
    from django.template import TemplateDoesNotExist, TemplateSyntaxError, engines
    from django.template.utils import get_app_template_dirs

    count = 0
    for engine in engines.all():
        dirs = [*engine.dirs, *(get_app_template_dirs("templates") if engine.app_dirs else ())]
        for root in map(Path, dirs):
            for path in sorted(root.rglob("*.html")):
                try:
                    engine.get_template(path.relative_to(root).as_posix())
                except (TemplateDoesNotExist, TemplateSyntaxError):
                    continue  # shadowed by another directory, or not a Django template
                count += 1
    return count


def open_connection() -> bool:
    """Open the process's database connection now (when it is kept between
    requests): a database that is down is the first request's error, not a
    worker that fails to boot."""
    from django.db import DatabaseError, connection

    if not connection.settings_dict.get("CONN_MAX_AGE"):
        return False
    try:
        connection.ensure_connection()
    except DatabaseError as exc:
        log.warning("database not reachable at start (%s): the first request connects", exc)
        return False
    return True


def close_before_fork() -> None:
    """Close this process's database connections (os.register_at_fork's
    `before`): a child must not inherit an open one."""
    from django.db import connections

    connections.close_all()


compile_templates()
open_connection()
os.register_at_fork(before=close_before_fork)
gc.freeze()
