"""runners.environment: what a machine and a server are set to, read for real
on this machine (its /proc and /sys, the local MariaDB, PostgreSQL and Redis),
redacted by rule, named by content and diffed by group."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from runners import environment
from runners.command import Endpoint
from runners.executors.local import LocalExecutor


@pytest.fixture
def local():
    executor = LocalExecutor()
    yield executor
    executor.close()


def test_read_host_reads_this_machine(local):
    host = environment.read_host(local, ("/tmp",))
    assert host["kernel"] == os.uname().release
    meminfo = open("/proc/meminfo").read()
    assert host["memory_kib"] == int(re.search(r"MemTotal:\s*(\d+)", meminfo).group(1))
    swappiness = open("/proc/sys/vm/swappiness").read().strip()
    assert host["sysctl"]["vm.swappiness"] == swappiness
    assert host["cpus_online"] == open("/sys/devices/system/cpu/online").read().strip()
    assert host["mounts"]["/tmp"]["fstype"]  # the filesystem /tmp lies on
    for device, queue in host["block"].items():
        assert queue["rotational"] in ("0", "1"), device


def test_read_database_mysql_reads_every_global_variable(local):
    found = environment.read_database(
        local, Endpoint(kind="mysql", host="127.0.0.1", port=3306, user="root")
    )
    expected = subprocess.run(
        ["mysql", "-h127.0.0.1", "-uroot", "-N", "-e", "SELECT @@innodb_buffer_pool_size"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert found["variables"]["innodb_buffer_pool_size"] == expected
    assert len(found["variables"]) > 300
    assert "InnoDB" in found["engines"]
    assert found["version"].startswith(found["variables"]["version"][:5])


def test_read_database_postgres_keeps_each_settings_source(local):
    found = environment.read_database(
        local, Endpoint(kind="postgres", host="127.0.0.1", port=5432, user="postgres")
    )
    assert found["variables"]["max_connections"].isdigit()
    assert found["version"].startswith("PostgreSQL")
    # The reading session's own settings are not the server's.
    assert "application_name" not in found["variables"]
    assert set(found["sources"].values()) <= {
        "configuration file",
        "command line",
        "environment variable",
        "override",
        "global",
        "database",
        "user",
        "database user",
    }


def test_read_database_redis_reads_config_and_server(local):
    found = environment.read_database(local, Endpoint(kind="redis", host="127.0.0.1", port=6379))
    assert found["version"].count(".") == 2
    assert "maxmemory" in found["variables"]
    assert "uptime_in_seconds" not in found["server"]  # it moves by itself


def test_an_unchanged_server_gives_the_same_snapshot(local):
    endpoint = Endpoint(kind="mysql", host="127.0.0.1", port=3306, user="root")
    first = environment.read_database(local, endpoint)
    subprocess.run(
        [
            "mysql",
            "-h127.0.0.1",
            "-uroot",
            "-e",
            "CREATE DATABASE IF NOT EXISTS envsame;"
            " CREATE TABLE IF NOT EXISTS envsame.t (a INT); INSERT INTO envsame.t VALUES (1);"
            " DROP DATABASE envsame",
        ],
        check=True,
    )
    again = environment.read_database(local, endpoint)
    assert environment.snapshot_hash(first) == environment.snapshot_hash(again)


@pytest.mark.parametrize(
    "name,value,expected",
    [
        ("requirepass", "hunter2", environment.REDACTED),
        ("masterauth", "hunter2", environment.REDACTED),
        ("ssl_key", "/etc/mysql/server-key.pem", environment.REDACTED),
        ("wsrep_sst_auth", "sst:hunter2", environment.REDACTED),
        ("password_encryption", "scram-sha-256", "scram-sha-256"),
        ("default_password_lifetime", "0", "0"),
        ("requirepass", "", ""),
        (
            "primary_conninfo",
            "host=h user=u password=hunter2 port=5432",
            "host=h user=u password=[redacted] port=5432",
        ),
        (
            "init_connect",
            "postgres://app:hunter2@db.example:5432/x",
            "postgres://app:[redacted]@db.example:5432/x",
        ),
        ("innodb_buffer_pool_size", "134217728", "134217728"),
        ("key_buffer_size", "134217728", "134217728"),
    ],
)
def test_redact_replaces_secrets_by_rule(name, value, expected):
    assert environment.redact({"variables": {name: value}})["variables"][name] == expected


def test_redact_is_idempotent():
    once = environment.redact({"a": {"password": "x", "url": "mysql://u:p@h/d"}})
    assert environment.redact(once) == once


def test_diff_lists_only_what_differs_by_group():
    before = {"database": {"variables": {"a": "1", "b": "2"}}, "host": {"kernel": "6.1"}}
    after = {"database": {"variables": {"a": "1", "b": "3", "c": "4"}}, "host": {"kernel": "6.1"}}
    assert environment.diff(before, after) == {
        "database": [
            {"key": "variables.b", "before": "2", "after": "3"},
            {"key": "variables.c", "before": None, "after": "4"},
        ]
    }


def test_snapshot_hash_does_not_depend_on_key_order():
    assert environment.snapshot_hash({"a": 1, "b": {"c": 2, "d": 3}}) == environment.snapshot_hash(
        {"b": {"d": 3, "c": 2}, "a": 1}
    )


@pytest.mark.parametrize(
    "path,expected",
    [("/var/lib/mysql", "/var"), ("/var", "/var"), ("/varnish", "/"), ("/home/x", "/")],
)
def test_mount_of_takes_the_longest_mount_point(path, expected):
    mounts = "rootfs / ext4 rw 0 0\n/dev/vdb /var xfs rw,noatime 0 0\n"
    assert environment.mount_of(mounts, path)["mount"] == expected
