"""WSGI entry point (gunicorn benchapp.wsgi).

Before the first request it imports every view (through the URLconf) and
then takes everything loaded so far out of the cycle collector's walks
(gc.freeze): modules, settings and URL patterns live as long as the process,
and a full collection that walks them all again added 120-160 ms to the
request it fell on (one in 20 to 40 comparison pages, measured with
scripts/bench_results.py on a slow 2-core machine).
"""

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
application = get_wsgi_application()
get_resolver().url_patterns  # noqa: B018 (imports every view module now, not on a request)
# The comparison page's significance tests import scipy.stats on first use:
# 4.3 s on a slow machine, paid by the first comparison after a restart.
import scipy.stats  # noqa: E402, F401

gc.freeze()
