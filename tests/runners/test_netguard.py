"""runners.netguard: targets that reach the app's own services are refused."""

from __future__ import annotations

import pytest

from runners.netguard import Service, TargetRefused, check_target, service_from_url

DB = Service("the app's database", "127.0.0.1", 5432)
BROKER = Service("the app's broker", "127.0.0.1", 6379)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.0.0.2", "::1", "0.0.0.0"])
def test_loopback_aliases_match_the_app_database(host):
    with pytest.raises(TargetRefused, match="the app's database"):
        check_target(host, 5432, [DB, BROKER])


def test_broker_refused_and_message_names_it():
    with pytest.raises(TargetRefused, match="the app's broker"):
        check_target("localhost", 6379, [DB, BROKER])


def test_other_port_on_this_machine_is_allowed():
    check_target("127.0.0.1", 3306, [DB, BROKER])  # MariaDB target: not an app service


def test_service_url_parsing_drops_secrets():
    service = service_from_url("the app's broker", "redis://:s3cret@127.0.0.1:6380/15", 6379)
    assert service == Service("the app's broker", "127.0.0.1", 6380)
    with pytest.raises(TargetRefused) as refused:
        check_target("127.0.0.1", 6380, [service])
    assert "s3cret" not in str(refused.value)


def test_deny_and_allow_networks():
    with pytest.raises(TargetRefused, match="denied"):
        check_target("127.0.0.1", 3306, [], deny=["127.0.0.0/8"])
    with pytest.raises(TargetRefused, match="outside the networks"):
        check_target("127.0.0.1", 3306, [], allow=["10.0.0.0/8"])
    check_target("127.0.0.1", 3306, [], allow=["127.0.0.0/8"])


def test_unresolvable_host_is_refused():
    with pytest.raises(TargetRefused, match="does not resolve"):
        check_target("no-such-host.invalid", 5432, [DB])


# -- the runner's side: CellContext checks every endpoint and SSH host -------------------


def _context(target: dict, **kwargs):
    from runners.context import CellContext
    from runners.netguard import Guard
    from runners.plan import load_plan

    plan = load_plan({"name": "p", "tool": "pgbench", "targets": [target]})
    return CellContext(plan, guard=Guard((DB, BROKER)), **kwargs), plan.targets[0]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.0.0.2", "::1"])
def test_cell_context_refuses_an_endpoint_on_the_app_database(host):
    from runners.errors import RunnerError

    ctx, target = _context({"name": "pg", "kind": "postgres", "host": host, "port": 5432})
    with pytest.raises(RunnerError) as refused:
        ctx.endpoint(target)
    assert refused.value.permanent
    assert refused.value.message == (
        f"target pg: Target {host}:5432 is the app's database; a "
        "target may not point at the app's own services."
    )


def test_cell_context_socket_on_this_machine_is_this_machine():
    from runners.errors import RunnerError

    ctx, target = _context(
        {"name": "pg", "kind": "postgres", "port": 5432, "socket": "/run/postgresql/.s.PGSQL.5432"}
    )
    with pytest.raises(RunnerError, match="the app's database"):
        ctx.endpoint(target)
    other, target = _context(
        {"name": "pg", "kind": "postgres", "port": 5433, "socket": "/run/postgresql/.s.PGSQL.5433"}
    )
    assert other.endpoint(target).socket == "/run/postgresql/.s.PGSQL.5433"


def test_cell_context_refuses_an_ssh_host_on_the_broker_port_before_connecting():
    from runners.errors import RunnerError
    from runners.plantargets import SSHSpec

    made = []
    ctx, _ = _context(
        {"name": "pg", "kind": "postgres", "host": "10.0.0.9", "port": 5432},
        executor_factory=lambda ssh, secret: made.append(ssh),
    )
    with pytest.raises(RunnerError, match="is the app's broker"):
        ctx.executor(SSHSpec(host="::1", port=6379, user="u"))
    assert made == []  # never connected


def test_cell_context_without_a_guard_checks_nothing():
    from runners.context import CellContext
    from runners.plan import load_plan

    plan = load_plan(
        {
            "name": "p",
            "tool": "pgbench",
            "targets": [{"name": "pg", "kind": "postgres", "host": "127.0.0.1", "port": 5432}],
        }
    )
    assert CellContext(plan).endpoint(plan.targets[0]).port == 5432  # python -m runners run
