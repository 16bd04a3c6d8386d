"""Benchboard settings: the one place that reads the environment.

With no environment at all, a fresh clone runs on the embedded default:
SQLite and a filesystem Celery broker under var/, with SECRET_KEY and the
Fernet key generated into var/ on first run. DATABASE_URL and
CELERY_BROKER_URL (or REDIS_URL) switch to PostgreSQL and Redis. With
DJANGO_DEBUG unset (DEBUG off, Django's convention) and DATABASE_URL set, the
required secrets must come from the environment.
Every variable read here is listed in .env.example (a test checks it).
"""

import ipaddress
import os
from datetime import timedelta
from pathlib import Path

import environ
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

from benchapp.settings_secrets import check_fernet_keys, generated_secret

BASE_DIR = Path(__file__).resolve().parent.parent
env = environ.Env()

# Off unless the operator turns it on (Django's convention): an error must not
# show the debug page to whoever caused it. `make dev` and the tests turn it on.
DEBUG = env.bool("DJANGO_DEBUG", default=False)
# The embedded default (no DATABASE_URL, as `make run` has it): one machine over
# plain HTTP, DEBUG off, secrets generated into var/. A fresh clone with no
# environment at all is embedded too; an explicit DJANGO_DEBUG=False without
# BENCHBOARD_EMBEDDED is production, on SQLite as on PostgreSQL.
EMBEDDED = env.bool(
    "BENCHBOARD_EMBEDDED", default="DJANGO_DEBUG" not in os.environ
) and not env.str("DATABASE_URL", default="")
VAR_DIR = Path(env.str("BENCHBOARD_VAR_DIR", default=str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def _required(name: str, make) -> str:
    """In production the variable must be set; in debug or embedded it is generated."""
    value = env.str(name, default="")
    if value:
        return value
    if not DEBUG and not EMBEDDED:
        raise ImproperlyConfigured(f"{name} must be set when DJANGO_DEBUG=False")
    return generated_secret(VAR_DIR / name.lower(), make)


SECRET_KEY = _required("DJANGO_SECRET_KEY", get_random_secret_key)
# Comma-separated; the first key encrypts, all decrypt (MultiFernet rotation).
FERNET_KEYS = [
    k.strip()
    for k in _required("BENCHBOARD_FERNET_KEYS", lambda: Fernet.generate_key().decode()).split(",")
    if k.strip()
]


check_fernet_keys(FERNET_KEYS)
ALLOWED_HOSTS = env.list(
    "DJANGO_ALLOWED_HOSTS",
    default=["*"] if DEBUG else ["127.0.0.1", "localhost"] if EMBEDDED else [],
)
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must be set when DJANGO_DEBUG=False")
CSRF_TRUSTED_ORIGINS = env.list("DJANGO_CSRF_TRUSTED_ORIGINS", default=[])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_celery_beat",
    "axes",
    "benchapp",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "benchapp.web.uploads.UploadCapMiddleware",
    "benchapp.web.middleware.NulBytesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: turns a lockout into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

# Content-Security-Policy on every answer (django-csp). Pages load scripts
# and styles only from this site and carry no inline script (no <script>
# without src, no on*= attributes); Plotly is its strict bundle (no eval).
# style-src allows 'unsafe-inline' because plotly.js adds its chart CSS
# (mode bar, hover labels) as a <style> element at run time and ships no
# stylesheet to load instead; styles cannot run script.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'", "'unsafe-inline'"],
        # blob: for Plotly's PNG export (it draws the chart's SVG via a blob: image).
        "img-src": ["'self'", "data:", "blob:"],
        "frame-ancestors": ["'none'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
    }
}

ROOT_URLCONF = "benchapp.urls"
WSGI_APPLICATION = "benchapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "benchapp.web.context_processors.teams",
            ]
        },
    }
]

DATABASES = {
    "default": env.db_url("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'benchboard.sqlite3'}")
}
# Persistent connections on PostgreSQL: a request reuses its process's
# connection for up to 10 minutes instead of opening one (a connection and
# its server process's first queries cost tens of ms). SQLite opens a file.
_POSTGRES = DATABASES["default"]["ENGINE"].endswith("postgresql")
DATABASES["default"]["CONN_MAX_AGE"] = env.int(
    "DATABASE_CONN_MAX_AGE", default=600 if _POSTGRES else 0
)
# A kept connection is checked before a request reuses it (a database restart
# then costs one reconnect, not an error page).
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if _POSTGRES:
    # A database host that goes silent (packets dropped, not refused) is
    # noticed within DATABASE_CONNECT_TIMEOUT on connecting and within about
    # idle + interval x count seconds on an open connection (TCP keepalives;
    # docs/operations.md, "Timeouts that bound a silent host").
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        connect_timeout=env.int("DATABASE_CONNECT_TIMEOUT", default=10),
        keepalives=1,
        keepalives_idle=10,
        keepalives_interval=5,
        keepalives_count=3,
    )
if DATABASES["default"]["ENGINE"].endswith("sqlite3"):
    # The embedded default has a web server and a worker writing at once:
    # wait for the lock instead of failing, and take it up front.
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
# Login rate limit (django-axes): after FAILURE_LIMIT wrong passwords for one
# username from one address, that pair is locked out for COOLOFF minutes (a
# right password is refused too). Wrong API tokens count the same way, per
# address (benchapp.accounts.tokens). The address is REMOTE_ADDR: behind a reverse
# proxy every client shares the proxy's, so the lockout is per username then.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env.int("BENCHBOARD_LOGIN_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("BENCHBOARD_LOGIN_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = env.str("BENCHBOARD_TIME_ZONE", default="UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)  # whitenoise warns about a missing root at every start


def artifact_storage(url: str, endpoint_url: str, region: str) -> dict:
    """The STORAGES entry of the artifact store (raw outputs, benchapp.store.artifactstore).

    url: "" (files under VAR_DIR/artifacts), an absolute directory, or
    s3://bucket/prefix (any S3-compatible store; endpoint_url for one that
    is not AWS). Credentials are never settings: boto3 reads the standard
    AWS variables or the instance's role, so they stay out of every dump.
    """
    if url.startswith("s3://"):
        bucket, _, prefix = url[len("s3://") :].partition("/")
        if not bucket:
            raise ImproperlyConfigured("BENCHBOARD_ARTIFACTS=s3://... names no bucket")
        options = {"bucket_name": bucket, "location": prefix.strip("/"), "region_name": region}
        if endpoint_url:
            options["endpoint_url"] = endpoint_url
        return {"BACKEND": "benchapp.store.artifactstore_s3.S3ArtifactStorage", "OPTIONS": options}
    location = Path(url or VAR_DIR / "artifacts")
    if not location.is_absolute():
        raise ImproperlyConfigured(
            f"BENCHBOARD_ARTIFACTS must be s3://bucket/prefix or an absolute directory, not {url!r}"
        )
    return {
        "BACKEND": "benchapp.store.artifactstore.FileArtifactStorage",
        "OPTIONS": {"location": str(location)},
    }


STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "artifacts": artifact_storage(
        env.str("BENCHBOARD_ARTIFACTS", default=""),
        env.str(
            "BENCHBOARD_ARTIFACTS_ENDPOINT_URL", default=env.str("AWS_ENDPOINT_URL", default="")
        ),
        env.str(
            "BENCHBOARD_ARTIFACTS_REGION",
            default=env.str("AWS_DEFAULT_REGION", default="us-east-1"),
        ),
    ),
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# --- Celery -----------------------------------------------------------------
_redis_url = env.str("REDIS_URL", default="")
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=_redis_url or "filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # A cell may run for hours (S2 measures 600 s per cell, S3 up to 128 s x 20);
    # Redis re-delivers unacked messages after this, so it must exceed the
    # longest cell or a running cell would be delivered twice.
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=4 * 3600)
}
if CELERY_BROKER_URL == "filesystem://":
    _queue_dir = VAR_DIR / "celery" / "queue"
    _queue_dir.mkdir(parents=True, exist_ok=True)
    (VAR_DIR / "celery" / "processed").mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        {
            "data_folder_in": str(_queue_dir),
            "data_folder_out": str(_queue_dir),
            "processed_folder": str(VAR_DIR / "celery" / "processed"),
            # kombu otherwise writes its control exchange into the current directory.
            "control_folder": str(VAR_DIR / "celery" / "control"),
            "store_processed": False,
        }
    )
CELERY_RESULT_BACKEND = None
# One queue name per installation by default; tests give each pytest process its own.
CELERY_TASK_DEFAULT_QUEUE = env.str("BENCHBOARD_QUEUE", default="celery")
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SOFT_TIME_LIMIT = env.int("CELERY_TASK_SOFT_TIME_LIMIT", default=3 * 3600)
CELERY_TASK_TIME_LIMIT = env.int("CELERY_TASK_TIME_LIMIT", default=3 * 3600 + 300)
CELERY_TASK_ALWAYS_EAGER = False
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_BEAT_SCHEDULE = {
    # Recovers cells whose worker died and re-dispatches active runs.
    "reap": {"task": "benchapp.reap", "schedule": env.int("BENCHBOARD_REAP_SECONDS", default=15)},
    # Tears down cloud resources of finished or lost runs and expired tagged ones.
    "reap-cloud": {
        "task": "benchapp.reap_cloud",
        "schedule": env.int("BENCHBOARD_CLOUD_REAP_SECONDS", default=300),
    },
    # Downsamples old series and expires old raw outputs (both off by default).
    "retention": {
        "task": "benchapp.retention",
        "schedule": env.int("BENCHBOARD_RETENTION_SECONDS", default=3600),
    },
}
CELERY_TIMEZONE = TIME_ZONE

# --- Benchboard -------------------------------------------------------------
BENCHBOARD_CELL_LIMIT = env.int("BENCHBOARD_CELL_LIMIT", default=2000)
# A running cell renews its lease every HEARTBEAT seconds; the reaper treats a
# lease older than LEASE as a dead worker.
BENCHBOARD_HEARTBEAT_SECONDS = env.int("BENCHBOARD_HEARTBEAT_SECONDS", default=10)
BENCHBOARD_LEASE_SECONDS = env.int("BENCHBOARD_LEASE_SECONDS", default=60)
BENCHBOARD_MAX_ATTEMPTS = env.int("BENCHBOARD_MAX_ATTEMPTS", default=3)
# A worker whose database went away (restarted, unreachable) retries its writes
# for this long before it gives the cell up (benchapp.dbretry): a measurement
# that finished meanwhile is recorded when the database returns.
BENCHBOARD_DB_RETRY_SECONDS = env.float("BENCHBOARD_DB_RETRY_SECONDS", default=180.0)
# The pool of worker hosts (docs/operations.md, "Worker hosts"): a host's id
# (default: its host name and a digest of /etc/machine-id); a host whose
# workers have not heartbeat for LEASE seconds is lost and its cells re-queued.
BENCHBOARD_HOST_ID = env.str("BENCHBOARD_HOST_ID", default="")
# A cell that failed for a transient reason (connection reset, timeout, cloud
# capacity) is retried up to CELL_RETRIES times, after BACKOFF, 2*BACKOFF, ...
# seconds (at most BACKOFF_CAP); permanent failures and failed tools never are.
BENCHBOARD_CELL_RETRIES = env.int("BENCHBOARD_CELL_RETRIES", default=3)
BENCHBOARD_RETRY_BACKOFF_SECONDS = env.float("BENCHBOARD_RETRY_BACKOFF_SECONDS", default=5.0)
BENCHBOARD_RETRY_BACKOFF_CAP_SECONDS = env.float(
    "BENCHBOARD_RETRY_BACKOFF_CAP_SECONDS", default=300.0
)
BENCHBOARD_NOISE_CV = env.float("BENCHBOARD_NOISE_CV", default=0.05)
# Retention (benchapp.store.retention), 0 = off: per-second series of runs finished
# more than SERIES days ago are downsampled to min/mean/max per minute; raw
# outputs of runs finished more than RAW days ago are deleted from the store
# (their first and last KiB stay). Baselines and runs in a saved comparison
# are never touched.
BENCHBOARD_SERIES_RETENTION_DAYS = env.int("BENCHBOARD_SERIES_RETENTION_DAYS", default=0)
BENCHBOARD_RAW_RETENTION_DAYS = env.int("BENCHBOARD_RAW_RETENTION_DAYS", default=0)
for _name in ("SERIES", "RAW"):
    if globals()[f"BENCHBOARD_{_name}_RETENTION_DAYS"] < 0:
        raise ImproperlyConfigured(f"BENCHBOARD_{_name}_RETENTION_DAYS must be 0 (off) or more")
# Fair share (docs/operations.md, "Sharing one installation"): per team, cells
# sent or running at once and runs queued or running at once (a team's own
# fields override both); a cell's runtime cap, for all its phases (below
# Celery's soft time limit, so the cell says why it stopped) and for its
# measured phase as the plan's estimate times MARGIN; the shortest interval
# between a cron schedule's starts.
BENCHBOARD_TEAM_MAX_RUNNING_CELLS = env.int("BENCHBOARD_TEAM_MAX_RUNNING_CELLS", default=2)
BENCHBOARD_TEAM_MAX_ACTIVE_RUNS = env.int("BENCHBOARD_TEAM_MAX_ACTIVE_RUNS", default=10)
BENCHBOARD_CELL_MAX_SECONDS = env.int("BENCHBOARD_CELL_MAX_SECONDS", default=2 * 3600)
BENCHBOARD_CELL_ESTIMATE_MARGIN = env.float("BENCHBOARD_CELL_ESTIMATE_MARGIN", default=3.0)
BENCHBOARD_SCHEDULE_MIN_INTERVAL_SECONDS = env.int(
    "BENCHBOARD_SCHEDULE_MIN_INTERVAL_SECONDS", default=15 * 60
)
# Tools run on the worker host are sandboxed (docs/sandbox.md): as this user
# when the worker is root. Without bubblewrap, web/API plans that need local
# execution are refused unless the operator accepts the risk with UNSAFE.
BENCHBOARD_SANDBOX_USER = env.str("BENCHBOARD_SANDBOX_USER", default="nobody")
BENCHBOARD_UNSAFE_LOCAL_EXECUTION = env.bool("BENCHBOARD_UNSAFE_LOCAL_EXECUTION", default=False)
# CPU profiles (plans' profile: true) on the worker host: perf, run as the worker's
# user outside the sandbox, attached to the target's own server and the cell's tool
# only. Off: a team's profile: true then profiles its SSH hosts only.
BENCHBOARD_PROFILE_LOCAL = env.bool("BENCHBOARD_PROFILE_LOCAL", default=False)
# Hard limits of each cell's local processes on the worker, together
# (docs/sandbox.md): one cgroup per cell with a CPU quota (CPUs), memory (MB,
# no swap) and pids, a size-capped scratch directory (MB); web/API plans
# asking for more (threads x clients, sizes, SECONDS of run time) are refused
# when saved. MAX_CELLS: cells running sandboxed tools on one worker host at once.
BENCHBOARD_SANDBOX_CPUS = env.float("BENCHBOARD_SANDBOX_CPUS", default=2.0)
BENCHBOARD_SANDBOX_MEMORY_MB = env.int("BENCHBOARD_SANDBOX_MEMORY_MB", default=4096)
BENCHBOARD_SANDBOX_PIDS = env.int("BENCHBOARD_SANDBOX_PIDS", default=512)
BENCHBOARD_SANDBOX_SCRATCH_MB = env.int("BENCHBOARD_SANDBOX_SCRATCH_MB", default=1024)
BENCHBOARD_SANDBOX_SECONDS = env.int("BENCHBOARD_SANDBOX_SECONDS", default=14400)
BENCHBOARD_SANDBOX_MAX_CELLS = env.int("BENCHBOARD_SANDBOX_MAX_CELLS", default=4)
for _name in ("CPUS", "MEMORY_MB", "PIDS", "SCRATCH_MB", "SECONDS", "MAX_CELLS"):
    if not globals()["BENCHBOARD_SANDBOX_" + _name] > 0:
        raise ImproperlyConfigured(f"BENCHBOARD_SANDBOX_{_name} must be above 0")
# Targets never point at the app's own services (docs/trust-model.md): the
# database, the broker and the web server on this port are refused, and so is
# any target outside ALLOW (when set) or inside DENY (CIDR lists).
BENCHBOARD_WEB_PORT = env.int("BENCHBOARD_PORT", default=8000)
BENCHBOARD_TARGET_ALLOW_NETWORKS = env.list("BENCHBOARD_TARGET_ALLOW_NETWORKS", default=[])
BENCHBOARD_TARGET_DENY_NETWORKS = env.list("BENCHBOARD_TARGET_DENY_NETWORKS", default=[])
for _cidr in BENCHBOARD_TARGET_ALLOW_NETWORKS + BENCHBOARD_TARGET_DENY_NETWORKS:
    try:
        ipaddress.ip_network(_cidr.strip(), strict=False)
    except ValueError:
        raise ImproperlyConfigured(
            f"not a network in BENCHBOARD_TARGET_*_NETWORKS: {_cidr!r}"
        ) from None
# Provisioning (benchapp.cloud.provisioning): how often and how long to wait for
# cloud resources, when a PROVISIONING run counts as lost (its worker died),
# where SSH into new hosts comes from. A cloud's own settings (region,
# endpoint) are its provider module's: runners/providers/.
BENCHBOARD_CLOUD_POLL_SECONDS = env.float("BENCHBOARD_CLOUD_POLL_SECONDS", default=15.0)
BENCHBOARD_CLOUD_WAIT_SECONDS = env.float("BENCHBOARD_CLOUD_WAIT_SECONDS", default=1800.0)
BENCHBOARD_PROVISION_TIMEOUT = env.int("BENCHBOARD_PROVISION_TIMEOUT", default=7200)
BENCHBOARD_WORKER_CIDR = env.str("BENCHBOARD_WORKER_CIDR", default="127.0.0.1/32")
# Whether an operator's own plan file (manage.py runplan, Run.origin "cli") may
# provision and read cloud monitoring with the worker's own cloud identity
# (environment keys, config files, instance role) when it names no credential.
# Plans from the web, the API and schedules never may (docs/trust-model.md).
BENCHBOARD_CLI_CLOUD_IDENTITY = env.bool("BENCHBOARD_CLI_CLOUD_IDENTITY", default=False)

# Alert notifications (benchapp.histories.notify): email through Django's SMTP backend,
# webhooks refused for non-public addresses unless allowed; failed deliveries
# are retried with exponential backoff.
EMAIL_BACKEND = env.str(
    "BENCHBOARD_EMAIL_BACKEND", default="django.core.mail.backends.smtp.EmailBackend"
)
EMAIL_HOST = env.str("EMAIL_HOST", default="localhost")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_HOST_USER = env.str("EMAIL_HOST_USER", default="")
EMAIL_HOST_PASSWORD = env.str("EMAIL_HOST_PASSWORD", default="")
EMAIL_USE_TLS = env.bool("EMAIL_USE_TLS", default=False)
EMAIL_USE_SSL = env.bool("EMAIL_USE_SSL", default=False)
EMAIL_TIMEOUT = env.int("EMAIL_TIMEOUT", default=10)
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="benchboard@localhost")
BENCHBOARD_WEBHOOK_ALLOW_PRIVATE = env.bool("BENCHBOARD_WEBHOOK_ALLOW_PRIVATE", default=False)
BENCHBOARD_NOTIFY_RETRIES = env.int("BENCHBOARD_NOTIFY_RETRIES", default=6)
BENCHBOARD_NOTIFY_BACKOFF_SECONDS = env.float("BENCHBOARD_NOTIFY_BACKOFF_SECONDS", default=30.0)
BENCHBOARD_NOTIFY_BACKOFF_CAP_SECONDS = env.float(
    "BENCHBOARD_NOTIFY_BACKOFF_CAP_SECONDS", default=3600.0
)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "benchapp.accounts.tokens.CountedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {"TITLE": "Benchboard API", "VERSION": "1"}
# Swagger UI and Redoc from local static files, never a CDN (issue 8): the
# assets come with drf-spectacular-sidecar.
try:
    import drf_spectacular_sidecar  # noqa: F401
except ImportError:  # pragma: no cover - the docs pages then fall back to the CDN
    pass
else:
    INSTALLED_APPS.append("drf_spectacular_sidecar")
    SPECTACULAR_SETTINGS.update(
        SWAGGER_UI_DIST="SIDECAR", SWAGGER_UI_FAVICON_HREF="SIDECAR", REDOC_DIST="SIDECAR"
    )

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("BENCHBOARD_LOG_LEVEL", default="INFO")},
}

# Request size caps (deliberate, not Django's defaults by accident): form and
# JSON bodies up to 10 MiB, at most 2000 fields; uploads above 2.5 MiB spool to
# a temporary file instead of memory.
DATA_UPLOAD_MAX_MEMORY_SIZE = env.int("BENCHBOARD_MAX_BODY_MB", default=10) * 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FIELDS = 2000
FILE_UPLOAD_MAX_MEMORY_SIZE = 2621440
# Uploaded files (raw outputs, plan files) are counted chunk by chunk and
# refused past BENCHBOARD_MAX_UPLOAD_MB (benchapp/web/uploads.py).
BENCHBOARD_MAX_UPLOAD_MB = env.int("BENCHBOARD_MAX_UPLOAD_MB", default=50)
FILE_UPLOAD_HANDLERS = [
    "benchapp.web.uploads.CappedUploadHandler",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]

if not DEBUG and not EMBEDDED:  # embedded: plain HTTP on this machine
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env.bool("DJANGO_SECURE_SSL_REDIRECT", default=True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env.int("DJANGO_HSTS_SECONDS", default=31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
