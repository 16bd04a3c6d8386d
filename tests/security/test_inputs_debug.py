"""DEBUG is off unless the operator sets DJANGO_DEBUG (Django's convention);
`make dev` (BENCHBOARD_DEV=1) and the tests turn it on. Each case loads the
settings in a fresh interpreter with exactly the environment given."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.benchapp.test_foundation import SETTINGS_VARS, settings_in_subprocess

ROOT = Path(__file__).resolve().parents[2]


def test_debug_is_off_with_django_debug_unset(tmp_path):
    proc = settings_in_subprocess(tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["debug"] is False


def test_debug_is_off_on_postgres_and_secrets_are_then_required(tmp_path):
    proc = settings_in_subprocess(tmp_path, DATABASE_URL="postgres://u@127.0.0.1:5432/x")
    assert proc.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in proc.stderr
    proc = settings_in_subprocess(
        tmp_path,
        DATABASE_URL="postgres://u@127.0.0.1:5432/x",
        DJANGO_SECRET_KEY="k" * 50,
        BENCHBOARD_FERNET_KEYS="ZmVybmV0LWtleS1mb3ItdGVzdHMtb25seS0zMmJ5dGU=",
        DJANGO_ALLOWED_HOSTS="bench.example.test",
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["debug"] is False


def test_debug_is_on_only_when_set(tmp_path):
    for value, debug in (("True", True), ("1", True), ("False", False), ("0", False)):
        proc = settings_in_subprocess(tmp_path, DJANGO_DEBUG=value, BENCHBOARD_EMBEDDED="1")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["debug"] is debug


def test_make_dev_turns_debug_on_and_make_run_leaves_it_off():
    code = (
        "import sys, json; sys.path.insert(0, 'scripts'); import run;"
        "print(json.dumps(run.environment().get('DJANGO_DEBUG')))"
    )
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARS}
    for dev, expected in (("1", "True"), ("0", "False")):
        proc = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            env={**env, "BENCHBOARD_DEV": dev},
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == expected
