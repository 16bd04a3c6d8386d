"""Host and database facts, and the client CPU sampler, against real things."""

from __future__ import annotations

import os
import platform

import pytest

from runners.command import Command, Endpoint
from runners.engines.mysql import nodes as db_nodes
from runners.engines.postgres import pgpass_line
from runners.errors import RunnerError
from runners.executors import LocalExecutor, SSHExecutor
from runners.facts import (
    CLIENT_BOUND_PCT,
    CpuSampler,
    client_bound,
    db_facts,
    host_facts,
    parse_cpuinfo,
    parse_os_release,
    parse_proc_stat,
)
from tests.support.sshd import sshd  # noqa: F401

MYSQL = Endpoint(kind="mysql", host="127.0.0.1", port=3306, user="root")


@pytest.fixture
def local():
    ex = LocalExecutor()
    yield ex
    ex.close()


@pytest.fixture(params=["local", "ssh"])
def executor(request):
    if request.param == "local":
        ex = LocalExecutor()
    else:
        server = request.getfixturevalue("sshd")
        ex = SSHExecutor(
            server.host,
            server.port,
            server.user,
            private_key=server.client_key,
            known_host_key=server.host_key,
        )
    yield ex
    ex.close()


def pretty_name() -> str:
    with open("/etc/os-release") as handle:
        return parse_os_release(handle.read())


def test_host_facts_describe_this_machine(executor):
    facts = host_facts(executor)
    with open("/proc/cpuinfo") as handle:
        model = parse_cpuinfo(handle.read())[1]
    assert facts["cpus"] == os.cpu_count()
    assert facts["cpu_model"] == model
    assert facts["kernel"] == platform.release()
    assert facts["os"] == pretty_name()
    assert facts["memory_kib"] > 0
    assert facts["tool_versions"] == {}


def test_host_facts_skip_unknown_and_missing_tools(local):
    assert host_facts(local, tools=["no-such-tool"])["tool_versions"] == {}


def test_host_facts_read_tool_versions_where_modules_exist(local):
    sysbench = pytest.importorskip("runners.tools.sysbench")
    expected = sysbench.parse_version(local.run(Command(argv=sysbench.version_command())).output)
    assert host_facts(local, tools=["sysbench"])["tool_versions"] == {"sysbench": expected}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\n",
            (2, "Intel(R) Xeon(R) CPU @ 2.20GHz"),
        ),
        ("processor\t: 0\nBogoMIPS\t: 50.00\nCPU part\t: 0xd0c\n", (1, "0xd0c")),
        ("", (0, "")),
    ],
)
def test_parse_cpuinfo_counts_processors_and_finds_model(text, expected):
    assert parse_cpuinfo(text) == expected


def test_parse_proc_stat_reads_busy_and_total():
    text = "cpu  21707 0 8722 90304 1403 0 449 2470 0 0\ncpu0 6426 0 3478 51009 331 0 39 1225 0 0\n"
    assert parse_proc_stat(text) == (
        21707 + 8722 + 449 + 2470,
        21707 + 8722 + 90304 + 1403 + 449 + 2470,
    )


def test_pgpass_line_escapes_colons_and_backslashes():
    endpoint = Endpoint(kind="postgres", host="db", port=5432, user="u", password="a:b\\c")
    assert pgpass_line(endpoint) == b"db:5432:*:u:a\\:b\\\\c\n"


def test_db_facts_mysql_reads_version_and_variables(local):
    facts = db_facts(local, MYSQL)
    version = local.run(
        Command(argv=["mysql", "-h127.0.0.1", "-uroot", "-N", "-e", "SELECT @@version"])
    ).stdout
    assert facts["server_version"] == version.strip()
    assert isinstance(facts["max_connections"], int) and facts["max_connections"] > 0
    assert (
        isinstance(facts["innodb_buffer_pool_size"], int) and facts["innodb_buffer_pool_size"] > 0
    )
    # The option file with the credentials is gone afterwards.
    assert os.listdir(local.workdir) == []


def test_db_facts_mysql_wrong_password_is_permanent(local):
    wrong = Endpoint(
        kind="mysql", host="127.0.0.1", port=3306, user="root", password="wrong-pw-123"
    )
    with pytest.raises(RunnerError) as caught:
        db_facts(local, wrong)
    assert caught.value.permanent is True
    assert caught.value.message.startswith(
        "mysql on 127.0.0.1: ERROR 1045 (28000): Access denied for user 'root'"
    )
    assert "wrong-pw-123" not in caught.value.message + caught.value.output


def test_db_nodes_of_a_single_server_is_that_server_for_every_connection(local):
    nodes = db_nodes(local, MYSQL, connections=3)
    port = local.run(
        Command(argv=["mysql", "-h127.0.0.1", "-uroot", "-N", "-e", "SELECT @@port"])
    ).stdout
    assert len(nodes) == 1 and nodes[0]["port"] == int(port) and nodes[0]["connections"] == 3
    assert nodes[0]["host"] and isinstance(nodes[0]["server_id"], int)
    assert os.listdir(local.workdir) == []


def test_db_nodes_none_answering_is_an_error_with_the_clients_message(local):
    wrong = Endpoint(kind="mysql", host="127.0.0.1", port=3306, user="root", password="no-such-pw")
    with pytest.raises(RunnerError) as caught:
        db_nodes(local, wrong, connections=2)
    assert "Access denied" in caught.value.message and "no-such-pw" not in caught.value.message
    assert os.listdir(local.workdir) == []


def test_db_facts_postgres_reads_version_and_variables(local, private_postgres_server):
    port = private_postgres_server.port  # the tests' own server, never the app's
    endpoint = Endpoint(
        kind="postgres", host="127.0.0.1", port=port, user="postgres", database="postgres"
    )
    facts = db_facts(local, endpoint)
    version = local.run(
        Command(
            argv=[
                "psql",
                "-h",
                "127.0.0.1",
                "-p",
                str(port),
                "-U",
                "postgres",
                "-XAtc",
                "SHOW server_version",
            ]
        )
    ).stdout
    assert facts["server_version"] == version.strip()
    assert isinstance(facts["max_connections"], int) and facts["max_connections"] > 0
    assert facts["shared_buffers"].endswith(("kB", "MB", "GB"))
    assert os.listdir(local.workdir) == []


def test_db_facts_of_a_host_target_are_empty(local):
    assert db_facts(local, Endpoint(kind="host")) == {}


def test_cpu_sampler_sees_stress_ng_keeping_cpus_busy(executor):
    sampler = CpuSampler()
    sampler.start(executor)
    executor.run(Command(argv=["stress-ng", "--cpu", "2", "--timeout", "2", "--quiet"]), timeout=20)
    busy = sampler.stop()["client_cpu_busy_pct"]
    assert 40 < busy <= 100


def test_client_bound_above_threshold():
    assert [client_bound(p) for p in (None, 50.0, CLIENT_BOUND_PCT, 95.5)] == [
        False,
        False,
        False,
        True,
    ]
