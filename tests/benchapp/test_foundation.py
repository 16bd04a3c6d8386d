"""Foundation: settings, model constraints, admin, scoping, migrations, workers."""

import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import IntegrityError, transaction
from django.http import Http404
from django.test import RequestFactory

from benchapp.accounts import access
from benchapp.models import Cell, Credential, Run
from tests.support.measures import measure, stored

ROOT = Path(__file__).resolve().parents[2]
SETTINGS_VARS = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "REDIS_URL",
    "DJANGO_DEBUG",
    "DJANGO_SECRET_KEY",
    "BENCHBOARD_FERNET_KEYS",
    "DJANGO_ALLOWED_HOSTS",
)


def settings_in_subprocess(tmp_path, **env_vars):
    """Load settings in a fresh interpreter with exactly the given environment."""
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARS}
    env.update(BENCHBOARD_VAR_DIR=str(tmp_path), **env_vars)
    code = (
        "import json, django; from django.conf import settings; django.setup();"
        "print(json.dumps({'db': settings.DATABASES['default']['ENGINE'],"
        " 'broker': settings.CELERY_BROKER_URL, 'debug': settings.DEBUG}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )


def test_settings_embedded_default_without_environment(tmp_path):
    proc = settings_in_subprocess(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "db": "django.db.backends.sqlite3",
        "broker": "filesystem://",
        "debug": False,
    }
    assert (tmp_path / "django_secret_key").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "benchboard_fernet_keys").exists()


def test_settings_environment_selects_postgres_and_redis(tmp_path):
    proc = settings_in_subprocess(
        tmp_path,
        DATABASE_URL="postgres://u@127.0.0.1:5432/x",
        REDIS_URL="redis://127.0.0.1:6379/3",
        DJANGO_DEBUG="True",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {
        "db": "django.db.backends.postgresql",
        "broker": "redis://127.0.0.1:6379/3",
        "debug": True,
    }


def test_settings_production_refuses_missing_secret_key(tmp_path):
    proc = settings_in_subprocess(tmp_path, DJANGO_DEBUG="False")
    assert proc.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in proc.stderr


def test_settings_production_check_deploy_is_clean(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARS}
    env.update(
        BENCHBOARD_VAR_DIR=str(tmp_path),
        DJANGO_DEBUG="False",
        DJANGO_SECRET_KEY="x" * 20 + uuid.uuid4().hex + "y" * 20,
        BENCHBOARD_FERNET_KEYS="ZmVybmV0LWtleS1mb3ItdGVzdHMtb25seS0zMmJ5dGU=",
        DJANGO_ALLOWED_HOSTS="bench.example.test",
    )
    proc = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_env_example_names_every_setting_variable():
    source = (ROOT / "benchapp" / "settings.py").read_text()
    read = set(re.findall(r'env(?:\.\w+)?\(\s*"([A-Z_]+)"', source))
    read |= set(re.findall(r'_required\(\s*"([A-Z_]+)"', source))
    documented = set(re.findall(r"^#?\s*([A-Z_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert read, "the settings read no variables?"
    assert read - documented == set()


def test_migrations_are_complete(db):
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def _cell(run, key="a=1", repeat=1):
    return Cell.objects.create(run=run, index=0, key=key, repeat=repeat)


@pytest.fixture
def run(team):
    return Run.objects.create(team=team, name="r", tool="fio", document={})


def test_cell_unique_per_combination_and_repeat(run):
    _cell(run)
    _cell(run, repeat=2)
    with pytest.raises(IntegrityError), transaction.atomic():
        _cell(run)


def test_measurement_unique_per_attempt_iteration_group_metric(run):
    cell = _cell(run)
    measure(cell, "tps", 1.0, attempt=1)
    measure(cell, "tps", 2.0, attempt=2)
    measure(cell, "tps", 2.5, attempt=2, iteration=1)
    with pytest.raises(ValueError, match="two values"):
        measure(cell, "tps", 3.0, attempt=1)
    assert [(m.attempt, m.iteration, m.value) for m in stored(cells=[cell.pk])] == [
        (1, 0, 1.0),
        (2, 0, 2.0),
        (2, 1, 2.5),
    ]


def test_credential_encrypted_and_rotatable(team, settings):
    from cryptography.fernet import Fernet, InvalidToken

    from benchapp import crypto

    cred = Credential(team=team, name="db", kind=Credential.PASSWORD)
    cred.set_secret("s3cret-canary")
    cred.save()
    assert "s3cret-canary" not in cred.encrypted + repr(cred) + str(cred)
    new_key = Fernet.generate_key().decode()
    settings.FERNET_KEYS = [new_key] + settings.FERNET_KEYS
    rotated = crypto.rotate(cred.encrypted)
    settings.FERNET_KEYS = [new_key]  # the old key is retired
    with pytest.raises(InvalidToken):
        crypto.decrypt(cred.encrypted)
    assert crypto.decrypt(rotated) == "s3cret-canary"


def test_scoping_helper_404_for_outsider(run, owner, outsider):
    request = RequestFactory().get("/")
    request.user = owner
    assert access.get_run(request, run.pk) == run
    request.user = outsider
    with pytest.raises(Http404):
        access.get_run(request, run.pk)


@pytest.mark.parametrize(
    "model",
    [
        "team",
        "credential",
        "target",
        "plan",
        "run",
        "cell",
        "cellmeasurements",
        "artifact",
        "comparison",
        "cloudresource",
    ],
)
def test_admin_changelist_loads(admin_client, run, model):
    _cell(run)
    response = admin_client.get(f"/admin/benchapp/{model}/")
    assert response.status_code == 200


def _wait_for(path: Path, timeout=30):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text()
        time.sleep(0.2)
    return None


def test_worker_executes_task_through_redis(transactional_db, start_worker, settings):
    from benchapp.tasks import ping

    worker = start_worker("redis")
    nonce = uuid.uuid4().hex
    ping.delay(nonce)
    assert _wait_for(settings.VAR_DIR / "pings" / nonce) is not None, worker.output()[-2000:]


def test_worker_executes_task_through_filesystem_broker(tmp_path):
    """The embedded default: no Redis, kombu's filesystem transport under var/."""
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARS}
    env["BENCHBOARD_VAR_DIR"] = str(tmp_path)
    nonce = uuid.uuid4().hex
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "benchapp",
            "worker",
            "--concurrency=1",
            "--without-gossip",
            "--without-mingle",
            "--loglevel=INFO",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        send = subprocess.run(
            [
                sys.executable,
                "-c",
                f"import django; django.setup(); from benchapp.tasks import ping; ping.delay('{nonce}')",
            ],
            cwd=ROOT,
            env={**env, "DJANGO_SETTINGS_MODULE": "benchapp.settings"},
            capture_output=True,
            text=True,
        )
        assert send.returncode == 0, send.stderr
        assert _wait_for(tmp_path / "pings" / nonce, timeout=60) is not None
    finally:
        os.killpg(worker.pid, 15)
        worker.wait(timeout=30)
