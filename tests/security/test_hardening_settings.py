"""Start-up checks: a malformed BENCHBOARD_FERNET_KEYS stops the app with a
message naming the variable (never the key); request size caps are set."""

import os
import subprocess
import sys
from pathlib import Path

from cryptography.fernet import Fernet
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def _check(keys: str, tmp_path):
    env = {**os.environ, "BENCHBOARD_FERNET_KEYS": keys, "BENCHBOARD_VAR_DIR": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_malformed_fernet_key_refuses_to_start(tmp_path):
    good = Fernet.generate_key().decode()
    bad = "not-a-real-key-SECRETVALUE"
    result = _check(f"{good},{bad}", tmp_path)
    assert result.returncode != 0
    assert "BENCHBOARD_FERNET_KEYS: key 2 is not a valid Fernet key" in result.stderr
    assert bad not in result.stderr + result.stdout
    assert good not in result.stderr + result.stdout


def test_valid_fernet_keys_start(tmp_path):
    result = _check(Fernet.generate_key().decode(), tmp_path)
    assert result.returncode == 0, result.stderr


def test_request_size_caps_are_deliberate():
    assert settings.DATA_UPLOAD_MAX_MEMORY_SIZE == 10 * 1024 * 1024
    assert settings.DATA_UPLOAD_MAX_NUMBER_FIELDS == 2000
    assert settings.BENCHBOARD_MAX_UPLOAD_MB == 50
