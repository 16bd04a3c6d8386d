"""Credential fingerprints are keyed with the server secret."""

import hashlib

from django.test import override_settings

from benchapp import crypto


def test_fingerprint_is_keyed_not_a_plain_hash():
    tag = crypto.fingerprint("hunter2")
    assert tag.startswith("hmac:") and len(tag) == 5 + 16
    assert hashlib.sha256(b"hunter2").hexdigest()[:12] not in tag
    with override_settings(SECRET_KEY="another-server-secret-" * 3):
        assert crypto.fingerprint("hunter2") != tag
    assert crypto.fingerprint("hunter2") == tag


def test_migration_recomputes_existing_fingerprints(team):
    import importlib

    from django.apps import apps

    from benchapp.models import Credential

    old = "sha256:" + hashlib.sha256(b"s3cret").hexdigest()[:12]
    cred = Credential.objects.create(
        team=team, name="db", kind="password", encrypted=crypto.encrypt("s3cret"), fingerprint=old
    )
    migration = importlib.import_module("benchapp.migrations.0005_second_loop_data")
    migration.refingerprint(apps, None)
    cred.refresh_from_db()
    assert cred.fingerprint == crypto.fingerprint("s3cret") != old
