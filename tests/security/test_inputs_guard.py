"""The guard knows every address of the machine it runs on: a target at one
of this machine's interface addresses (not loopback) on the app's database
port is refused when saved and by a real worker before it connects.

The addresses are this machine's own (eth0's, and one the test puts on a
veth whose other end is in a network namespace it makes, the link left down):
the guard refuses before anything connects, so no packet is sent."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import time

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from benchapp.models import Artifact, Cell, Plan, Target
from benchapp.store import frozenparts
from runners import localaddrs
from runners.netguard import Guard, Service, TargetRefused
from tests.security.test_targets_guard import _app_db, _app_tables, _target_post

pytestmark = pytest.mark.django_db


# The range the `veth` fixture takes its addresses from (RFC 2544's, set aside
# for benchmark tests). Another test process's veth address comes and goes
# while this one runs (make test runs several): not one of this machine's
# lasting addresses.
TEST_RANGE = ipaddress.ip_network("198.18.0.0/15")


def interface_addresses() -> list[str]:
    """Global addresses of this machine's interfaces other than loopback, per
    `ip`, but for other tests' veth addresses (TEST_RANGE)."""
    out = subprocess.run(["ip", "-j", "addr", "show"], capture_output=True, text=True, check=True)
    return [
        info["local"]
        for link in json.loads(out.stdout)
        if link["ifname"] != "lo"
        for info in link.get("addr_info", [])
        if info.get("scope") == "global" and ipaddress.ip_address(info["local"]) not in TEST_RANGE
    ]


@pytest.fixture
def veth():
    """A function putting a fresh address on a veth of this machine (its peer in
    a namespace of the test's own); both are removed afterwards."""
    suffix = os.getpid() % 100_000
    namespace, link, peer = f"bbguard{suffix}", f"bbg{suffix}a", f"bbg{suffix}b"
    subprocess.run(["ip", "netns", "add", namespace], check=True)
    subprocess.run(
        ["ip", "link", "add", link, "type", "veth", "peer", "name", peer, "netns", namespace],
        check=True,
    )
    address = str(TEST_RANGE.network_address + 1 + 4 * (suffix % 16000))

    def add() -> str:
        subprocess.run(["ip", "addr", "add", f"{address}/30", "dev", link], check=True)
        return address

    yield add
    subprocess.run(["ip", "link", "del", link], check=False)
    subprocess.run(["ip", "netns", "del", namespace], check=False)


def test_local_addresses_see_a_new_address_once_the_cache_expires(veth):
    before = localaddrs.local_addresses()
    assert ipaddress.ip_address("127.0.0.1") in before
    for address in interface_addresses():
        assert ipaddress.ip_address(address) in before
    address = ipaddress.ip_address(veth())
    assert address not in before
    time.sleep(localaddrs.CACHE_SECONDS + 0.2)
    assert address in localaddrs.local_addresses()


def test_guard_counts_interface_addresses_as_this_machine(veth):
    guard = Guard((Service("the app's database", "127.0.0.1", 5432),))
    address = veth()
    time.sleep(localaddrs.CACHE_SECONDS + 0.2)
    for host in [address, *interface_addresses()]:
        with pytest.raises(TargetRefused, match="is the app's database"):
            guard.check(host, 5432)
        guard.check(host, 5433)  # another port of this machine is fine
    guard.check("198.51.100.7", 5432)  # another machine's address is fine


def test_target_form_and_api_refuse_an_interface_address(team_admin_client, team, member, veth):
    port = _app_db()[1]
    hosts = [veth(), *interface_addresses()]
    time.sleep(localaddrs.CACHE_SECONDS + 0.2)
    api = APIClient()
    api.force_authenticate(member)
    for host in hosts:
        response = team_admin_client.post("/targets/new/", _target_post(host=host, port=str(port)))
        assert response.status_code == 200
        assert f"Target {host}:{port} is the app&#x27;s database" in response.content.decode()
        document = {
            "name": "p",
            "tool": "pgbench",
            "targets": [{"name": "pg", "kind": "postgres", "host": host, "port": port}],
        }
        response = api.post("/api/plans/", {"document": document}, format="json")
        assert response.status_code == 400
        assert "is the app's database" in str(response.json())
    assert not Target.objects.filter(team=team, name="sneaky").exists()
    assert not Plan.objects.filter(team=team).exists()


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_refuses_an_interface_address_before_connecting(team, start_worker, veth):
    """A plan saved while its host resolved elsewhere, rewritten to this
    machine's interface addresses before dispatch (a DNS change): each cell
    fails at the worker's check, before any tool runs."""
    from benchapp.runs import orchestration
    from tests.support.waiting import finished, wait_for

    _, db_port, db_name = _app_db()
    before = _app_tables()
    hosts = [veth(), *interface_addresses()]
    start_worker("ifguard", BENCHBOARD_HEARTBEAT_SECONDS=1, BENCHBOARD_LEASE_SECONDS=6)
    target = {
        "name": "pg",
        "kind": "postgres",
        "host": "pg.invalid",
        "port": db_port,
        "user": "postgres",
        "database": db_name,
    }
    runs = []
    for host in hosts:
        with transaction.atomic():  # dispatch leaves on commit, after the rewrite
            run = orchestration.start_run(
                team,
                {"name": "pg", "tool": "pgbench", "targets": [target], "params": {"time": 1}},
                origin="api",
            )
            for cell in Cell.objects.filter(run=run):
                spec = frozenparts.frozen(cell)  # stored whole: rewritten in place
                spec["plan"]["targets"][0]["host"] = host
                Cell.objects.filter(pk=cell.pk).update(spec=spec)
        runs.append(run)
    for run, host in zip(runs, hosts, strict=True):
        wait_for(lambda run=run: finished(run), timeout=120)
        cells = list(run.cells.all())
        assert [c.status for c in cells] == [Cell.FAILED], [c.error for c in cells]
        assert f"Target {host}:{db_port} is the app's database" in cells[0].error
        assert not Artifact.objects.filter(cell__run=run).exists()  # no tool ran
    assert _app_tables() == before
