"""WSGI entry point (gunicorn benchapp.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
application = get_wsgi_application()
