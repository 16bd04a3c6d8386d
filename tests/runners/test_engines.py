"""The engines' registry: every engine declares the whole interface, what the
registry derives, and each engine's one credential-file writer."""

from __future__ import annotations

import pytest

from runners import engines
from runners.command import Endpoint
from runners.engines import mysql, postgres, redis
from runners.errors import RunnerError

INTERFACE = (
    "NAME",
    "LABEL",
    "PROTOCOL",
    "DEFAULT_PORT",
    "CLIENT",
    "CLIENT_PACKAGE",
    "SERVER_PROCESSES",
    "access",
    "speaks",
    "QUESTION",
    "answers",
    "COUNTERS",
    "GAUGES",
    "GAUGE_SCALES",
    "HIT_RATIOS",
    "LOGICAL_INCLUDES_PHYSICAL",
    "split_line",
    "sampler",
    "read_environment",
)
SQL_INTERFACE = (
    "client_command",
    "FACTS_QUERY",
    "FACTS",
    "table_listing",
    "PRIVILEGED_CONNECTIONS",
    "RAISE_MAX_CONNECTIONS",
)


@pytest.mark.parametrize("kind", list(engines.ENGINES))
def test_every_engine_declares_the_whole_interface(kind):
    module = engines.get(kind)
    missing = [name for name in INTERFACE if not hasattr(module, name)]
    assert missing == []
    assert module.NAME == kind
    if hasattr(module, "client_command"):  # a SQL server: all of it
        assert [name for name in SQL_INTERFACE if not hasattr(module, name)] == []


def test_registry_derives_kinds_labels_and_ports():
    assert engines.TARGET_KINDS == ("host", "mysql", "postgres", "redis")
    assert engines.TARGET_KIND_LABELS == {
        "host": "Host / filesystem",
        "mysql": "MySQL / MariaDB",
        "postgres": "PostgreSQL",
        "redis": "Redis",
    }
    assert engines.DEFAULT_KIND == "mysql"
    assert engines.TABLE_KINDS == ("mysql", "postgres")
    assert engines.CHECKSUM_KINDS == ("mysql",)
    assert engines.find("host") is None and engines.find(None) is None
    with pytest.raises(KeyError, match="known: mysql, postgres, redis"):
        engines.get("oracle")


def test_one_question_per_engine_that_does_not_speak_first():
    """identify() asks each engine that waits for a question once."""
    assert mysql.QUESTION == b"" and mysql.answers(b"\x4a\x00\x00\x00\x0a8.0")
    assert postgres.answers(b"N") and not postgres.answers(b"E")
    assert redis.answers(b"-NOAUTH") and not redis.answers(b"HTTP/1.1 400")


@pytest.mark.parametrize(
    "endpoint, database, line",
    [
        (
            Endpoint("postgres", "db", 5432, "u", password="a:b\\c"),
            None,
            b"db:5432:*:u:a\\:b\\\\c\n",
        ),
        (Endpoint("postgres", "db", 5432, "u", "d", password="p"), "d", b"db:5432:d:u:p\n"),
        # A socket connection is "localhost" to libpq: '*' matches it.
        (
            Endpoint("postgres", None, 5433, None, socket="/run/pg/.s.PGSQL.5433"),
            None,
            b"*:5433:*:*:\n",
        ),
    ],
)
def test_pgpass_line_is_the_one_password_file(endpoint, database, line):
    assert postgres.pgpass_line(endpoint, database=database) == line


def test_option_file_quotes_every_value_and_refuses_a_line_break():
    endpoint = Endpoint("mysql", "db", 3306, "scott", password='t"ig\\er')
    assert mysql.option_file(endpoint) == (
        b'[client]\nhost="db"\nport="3306"\nuser="scott"\npassword="t\\"ig\\\\er"\n'
    )
    with pytest.raises(RunnerError, match="control character"):
        mysql.option_file(Endpoint("mysql", "db", password="pw\nplugin-dir=/tmp"))


@pytest.mark.parametrize(
    "path, port, address",
    [
        ("/run/postgresql", None, (5432, "/run/postgresql/.s.PGSQL.5432")),
        ("/run/postgresql/", 5433, (5433, "/run/postgresql/.s.PGSQL.5433")),
        ("/tmp/.s.PGSQL.6000", 5432, (6000, "/tmp/.s.PGSQL.6000")),
    ],
)
def test_postgres_socket_address_names_the_file(path, port, address):
    assert postgres.socket_address(path, port) == address
    assert postgres.socket_directory(address[1]) == address[1].rsplit("/", 1)[0]


def test_redis_password_goes_through_a_file_never_argv():
    command = redis.sampler(Endpoint("redis", "127.0.0.1", 6380, password="s3cret"), " ".join)
    assert "s3cret" not in " ".join(command.argv)
    assert [(u.name, u.content, u.mode) for u in command.uploads] == [
        ("telemetry.redisauth", b"s3cret", 0o600)
    ]
    assert command.argv[2].startswith('REDISCLI_AUTH="$(cat @WORKDIR@/telemetry.redisauth)"')
