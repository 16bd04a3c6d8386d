"""Shared fixtures: test personas (owner, member, outsider) and their team.

Fixtures for real processes live in tests/support/ and are registered here.
"""

import os

import pytest

pytest_plugins = ["tests.support.worker", "tests.support.private_services"]

# `make test-fast` (BENCHBOARD_TEST_FAST=1): the pure units of the edit-test
# loop, on SQLite. Left out: tests marked slow and tests that start a real
# process or server (these fixtures), which `make test` runs.
SERVICE_FIXTURES = {
    "browser",
    "page",
    "browser_page",
    "mariadb_database",
    "mariadb_target",
    "postgres_target",
    "moto_server",
    "moto_endpoint",
    "private_redis",
    "private_mariadb",
    "scripted_mariadb",
    "private_postgres_server",
    "webhook_receiver",
    "mail_receiver",
    "sshd",
    "sshd_disposable",
    "start_worker",
}


def pytest_collection_modifyitems(config, items):
    """Under BENCHBOARD_TEST_FAST, deselect what is not a pure unit (above)."""
    if not os.environ.get("BENCHBOARD_TEST_FAST"):
        return
    keep, drop = [], []
    for item in items:
        # A test parametrized over executors asks for sshd by name in its "ssh" case.
        over_ssh = "ssh" in getattr(getattr(item, "callspec", None), "id", "").split("-")
        services = SERVICE_FIXTURES & set(getattr(item, "fixturenames", ()))
        (drop if item.get_closest_marker("slow") or services or over_ssh else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix):
    """One test database per pytest process, so that several test sessions
    on one machine (developers, CI, make bench) never drop each other's."""
    from django.conf import settings

    db = settings.DATABASES["default"]
    if db["ENGINE"].endswith("postgresql"):
        db.setdefault("TEST", {})["NAME"] = f"test_{db['NAME']}_{os.getpid()}"


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test databases, and before they are dropped, the
    sessions still open on them ended: a connection whose thread had ended
    without closing it made the drop fail ("is being accessed by other
    users") and left the database behind on the server."""
    yield
    from django.db import connections

    for alias in connections:
        connection = connections[alias]
        name = connection.settings_dict["NAME"]
        if connection.vendor != "postgresql" or not name.startswith("test_"):
            continue  # never another database's sessions
        # Django's own connection to the server's maintenance database, as
        # its test-database creation and teardown use.
        with django_db_blocker.unblock(), connection._nodb_cursor() as cursor:
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                [name],
            )


@pytest.fixture
def team(db):
    from benchapp.models import Team

    return Team.objects.create(name="alpha")


def _user(django_user_model, name):
    return django_user_model.objects.create_user(name, f"{name}@example.test", "pw-" + name)


@pytest.fixture
def owner(team, django_user_model):
    from benchapp.models import Membership

    user = _user(django_user_model, "olivia")
    Membership.objects.create(team=team, user=user, role=Membership.OWNER)
    return user


@pytest.fixture
def member(team, django_user_model):
    from benchapp.models import Membership

    user = _user(django_user_model, "max")
    Membership.objects.create(team=team, user=user)
    return user


@pytest.fixture
def viewer(team, django_user_model):
    from benchapp.models import Membership

    user = _user(django_user_model, "vera")
    Membership.objects.create(team=team, user=user, role=Membership.VIEWER)
    return user


@pytest.fixture
def team_admin(team, django_user_model):
    from benchapp.models import Membership

    user = _user(django_user_model, "ada")
    Membership.objects.create(team=team, user=user, role=Membership.ADMIN)
    return user


@pytest.fixture
def outsider(db, django_user_model):
    from benchapp.models import Membership, Team

    user = _user(django_user_model, "otto")
    Membership.objects.create(team=Team.objects.create(name="other"), user=user)
    return user


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def member_client(client, member):
    client.force_login(member)
    return client


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client


@pytest.fixture
def team_admin_client(client, team_admin):
    client.force_login(team_admin)
    return client


@pytest.fixture
def outsider_client(client, outsider):
    client.force_login(outsider)
    return client
