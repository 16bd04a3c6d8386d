"""The "test connection" check says what is missing: the database, the right to create
tables (real MariaDB at 127.0.0.1:3306 with a limited user, a private
PostgreSQL and a private Redis started here); never the app's own services."""

from __future__ import annotations

import secrets

import pytest

from benchapp.runs.connection import test_connection as check_target
from tests.benchapp.ui_data import make_credential, make_target
from tests.support.dbtargets import mariadb_sql
from tests.support.private_services import free_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def limited_mariadb_user():
    """A database and a user who may only SELECT in it: (database, user, password)."""
    suffix = secrets.token_hex(4)
    database, user, password = f"bb_c_{suffix}", f"bb_r_{suffix}", f"pw-{suffix}"
    statements = [f"CREATE DATABASE {database}"]
    for host in ("127.0.0.1", "localhost"):  # MariaDB here may see 127.0.0.1 as localhost
        statements += [
            f"CREATE USER '{user}'@'{host}' IDENTIFIED BY '{password}'",
            f"GRANT SELECT ON {database}.* TO '{user}'@'{host}'",
        ]
    mariadb_sql("; ".join(statements))
    yield database, user, password
    mariadb_sql(
        f"DROP DATABASE IF EXISTS {database}; DROP USER IF EXISTS '{user}'@'127.0.0.1'; "
        f"DROP USER IF EXISTS '{user}'@'localhost'"
    )


@pytest.fixture
def private_postgres(private_postgres_server):
    """The tests' private PostgreSQL (never the app's own at 5432) with a
    database `bench` owned by the superuser and a user `reader` who may
    connect but not create (PostgreSQL 15: public allows no CREATE); its port."""
    server = private_postgres_server
    server.psql("CREATE DATABASE bench")
    server.psql("CREATE USER reader")
    try:
        yield server.port
    finally:
        server.psql("DROP DATABASE IF EXISTS bench WITH (FORCE)")
        server.psql("DROP USER IF EXISTS reader")


def test_connection_mysql_user_who_may_create_tables(team):
    target = make_target(team, database="mysql")
    result = check_target(target)
    assert result["ok"], result["error"]
    assert result["access"] == "user 'root' can create and drop tables in 'mysql'"


def test_connection_mysql_missing_database(team):
    target = make_target(team, database="bb_missing_db")
    result = check_target(target)
    assert not result["ok"]
    assert result["error"] == "database 'bb_missing_db' does not exist on 127.0.0.1:3306"


def test_connection_mysql_user_without_create(team, limited_mariadb_user):
    database, user, password = limited_mariadb_user
    target = make_target(
        team, user=user, database=database, credential=make_credential(team, secret=password)
    )
    result = check_target(target)
    assert result["error"] == f"user '{user}' cannot CREATE in '{database}' on 127.0.0.1:3306"
    assert password not in str(result)


def test_connection_mysql_user_without_any_grant_on_database(team, limited_mariadb_user):
    database, user, password = limited_mariadb_user
    target = make_target(
        team, user=user, database="mysql", credential=make_credential(team, secret=password)
    )
    result = check_target(target)
    assert (
        result["error"] == f"user '{user}' has no privileges on database 'mysql' on 127.0.0.1:3306"
    )


def test_connection_postgres_checks_database_and_create(team, private_postgres):
    def check(user, database):
        target = make_target(
            team,
            name=f"pg-{user}-{database}",
            kind="postgres",
            port=private_postgres,
            user=user,
            database=database,
        )
        return check_target(target)

    good = check("postgres", "bench")
    assert good["ok"], good["error"]
    assert good["access"] == "user 'postgres' can create and drop tables in 'bench'"
    assert good["db"]["server_version"].startswith("15")
    where = f"127.0.0.1:{private_postgres}"
    assert check("postgres", "nope")["error"] == f"database 'nope' does not exist on {where}"
    assert check("reader", "bench")["error"] == f"user 'reader' cannot CREATE in 'bench' on {where}"


def test_connection_redis_ping(team, private_redis):
    cache = make_target(team, name="cache", kind="redis", port=private_redis.port, user="")
    assert check_target(cache)["access"] == f"redis on 127.0.0.1:{private_redis.port} answered PING"
    closed = free_port()
    result = check_target(make_target(team, name="closed", kind="redis", port=closed, user=""))
    assert result["error"].startswith(f"redis on 127.0.0.1:{closed} did not answer PING: ")
    assert "refused" in result["error"]


def test_connection_page_shows_what_is_missing(owner_client, team):
    target = make_target(team, database="bb_missing_db")
    html = owner_client.post(f"/targets/{target.pk}/test/").content.decode()
    assert "Connection failed" in html
    assert "database &#x27;bb_missing_db&#x27; does not exist on 127.0.0.1:3306" in html
    target.refresh_from_db()
    assert (target.last_check_ok, target.last_check_error) == (
        False,
        "database 'bb_missing_db' does not exist on 127.0.0.1:3306",
    )


def test_connection_host_directory_must_exist(team, tmp_path, settings):
    """Checked in the sandbox, as the sandbox user: the directory must be one of the
    target's data directories (the only places a local tool may write), reachable
    and writable by that user."""
    import os
    import pwd
    import shutil
    import tempfile

    user = settings.BENCHBOARD_SANDBOX_USER
    closed = str(tmp_path)  # pytest's own base directory is 0700: nobody cannot enter it
    target = make_target(
        team,
        name="disk",
        kind="host",
        host="",
        port=None,
        user="",
        directory=closed,
        data_dirs=[closed],
    )
    assert check_target(target)["error"].startswith(
        f"the sandbox user {user} cannot reach {closed}"
    )
    directory = tempfile.mkdtemp(dir="/var/tmp")
    try:
        os.chown(directory, pwd.getpwnam(user).pw_uid, -1)
        target.directory, target.data_dirs = directory, [directory]
        assert check_target(target)["access"] == (
            f"directory {directory} exists on this server and the sandbox user can write it"
        )
        target.directory = f"{directory}/missing"
        assert check_target(target)["error"] == (
            f"directory {directory}/missing does not exist on this server"
        )
    finally:
        shutil.rmtree(directory, ignore_errors=True)
