"""Plans with several clients: validation, the client_hosts axis, frozen cells, machines."""

import json

import pytest

from runners.errors import ValidationError
from runners.frozen import freeze, thaw
from runners.isolation import cell_machines
from runners.plan import expand, load_plan
from runners.plantargets import ClientSpec

TARGET = {"name": "db", "kind": "mysql", "host": "10.0.0.5", "port": 3306, "user": "bench"}


def _plan(client, **extra):
    return load_plan(
        {
            "name": "clients",
            "tool": "sysbench",
            "targets": [TARGET],
            "client": client,
            "params": {"test": "oltp_read_only", "time": 5},
            **extra,
        }
    )


def _ssh(host):
    return {"ssh": {"host": host, "user": "bench", "credential": "key"}}


def test_a_list_of_clients_with_count_and_the_client_hosts_axis():
    plan = _plan(
        [_ssh("10.0.0.7"), {"local": True, "count": 2}],
        axes={"client_hosts": [1, 3]},
        start_tolerance=0.5,
    )
    assert [c.kind for c in plan.clients] == ["ssh", "local", "local"]
    assert plan.client == plan.clients[0]
    assert plan.start_tolerance == 0.5
    assert [(c.key, c.clients) for c in expand(plan)] == [
        ("client_hosts=1", 1),
        ("client_hosts=3", 3),
    ]


def test_without_the_axis_a_cell_uses_every_listed_client():
    plan = _plan([_ssh("10.0.0.7"), _ssh("10.0.0.8")])
    assert [c.clients for c in expand(plan)] == [2]
    assert _plan("local").clients == (ClientSpec(),)


@pytest.mark.parametrize(
    ("client", "extra", "message"),
    [
        ([], {}, "client: expected at least one client"),
        (
            [{"local": True}],
            {"axes": {"client_hosts": [1, 2]}},
            "axes.client_hosts[1]: 2 clients, but the plan lists 1 under `client`",
        ),
        ([{"local": True, "count": 0}], {}, "client[0].count"),
        (
            {"local": True, "count": 2},
            {},
            "client: expected local, {on: TARGET}, {ssh: {...}} or {provision: {...}}",
        ),
        ([{"ssh": {"host": "h"}, "on": "db"}], {}, "client[0]: expected local"),
        ([{"local": True}], {"start_tolerance": -1}, "start_tolerance: expected a number >= 0"),
        ([{"local": True}], {"min_overlap": 1.5}, "min_overlap: a share between 0 and 1"),
    ],
)
def test_bad_clients_are_refused_by_key(client, extra, message):
    with pytest.raises(ValidationError) as caught:
        _plan(client, **extra)
    assert str(caught.value).startswith(message)


def test_a_frozen_cell_keeps_its_own_clients_and_tolerance():
    plan = _plan([_ssh("10.0.0.7"), _ssh("10.0.0.8")], axes={"client_hosts": [1, 2]})
    one, two = expand(plan)
    thawed_plan, thawed = thaw(json.loads(json.dumps(freeze(plan, two))))
    assert thawed == two and thawed_plan.clients == plan.clients
    assert thaw(freeze(plan, one))[0].clients == plan.clients[:1]
    assert thawed_plan.start_tolerance == plan.start_tolerance
    assert thawed_plan.min_overlap == plan.min_overlap == 0.9


def test_a_cell_occupies_every_client_host_it_loads_from():
    plan = _plan([_ssh("10.0.0.7"), _ssh("10.0.0.8")], axes={"client_hosts": [1, 2]})
    one, two = (freeze(plan, cell)["plan"] for cell in expand(plan))

    def machines(frozen):
        found = cell_machines(frozen, "db", run_id=1, worker_host="w", resolver=str)
        return [key for key, _ in found]

    assert machines(one) == ["server 10.0.0.5:3306", "host 10.0.0.7:22"]
    assert machines(two) == ["server 10.0.0.5:3306", "host 10.0.0.7:22", "host 10.0.0.8:22"]


def test_tools_refuse_what_would_collide():
    from runners.tools import client_params, get_tool

    fio = get_tool("fio")
    clean = fio.validate({"filename": "data:more", "size": "1M"})
    assert client_params(fio, clean, 2, 3)["filename"] == "data.c2:more.c2"
    assert client_params(fio, clean, 1, 1) is clean
    with pytest.raises(ValidationError, match="need `filename`"):
        client_params(fio, fio.validate({"directory": "d", "size": "1M"}), 1, 2)
    with pytest.raises(ValidationError, match="cannot share a device"):
        client_params(fio, fio.validate({"filename": "/dev/sdb", "size": "1M"}), 1, 2)
    sysbench = get_tool("sysbench")
    with pytest.raises(ValidationError, match="'fileio' with several clients"):
        client_params(sysbench, sysbench.validate({"test": "fileio"}), 1, 2)
    slap = get_tool("mysqlslap")
    clean = slap.validate({"auto_generate_sql": True, "create_schema": "s"})
    assert client_params(slap, clean, 3, 3)["create_schema"] == "s_c3"
