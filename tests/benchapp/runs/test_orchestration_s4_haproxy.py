"""S4's mechanics on real servers: a MySQL "cluster" reached through a load
balancer. Two private mariadbd nodes (each its own datadir and port) behind
Debian's haproxy in TCP mode, balancing roundrobin; a plan like S4's
(sysbench read-only and read-write, a threads axis) whose target is the
balancer's address, run by a real worker.

The two nodes do not replicate (a Galera cluster would): a prepare through
the balancer would create the tables on whichever node its one connection
reached. So the plan has `prepare: false` and the test prepares each node
directly, as the cluster's replication would have left them: the same
database, user and sysbench tables on both.

What must hold: every cell records the nodes its connections reach (both,
through the balancer); a node stopped in the middle of a cell fails that
cell with sysbench's own error line kept on it, while the later cells run
through the healthy node and succeed, and the run ends completed with
failures.
"""

from __future__ import annotations

import subprocess
import textwrap
import time

import pytest
from django.urls import reverse

from benchapp.models import Cell, Credential, Run
from benchapp.runs import orchestration
from tests.support.private_services import ScriptedMariaDB, Server, free_port
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

FAST = {**FAST_LEASES, "BENCHBOARD_LEASE_SECONDS": 10}
PASSWORD = "s4-node-pw"
TABLE_SIZE = 1000
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST)


def start_node(root, server_id: int) -> ScriptedMariaDB:
    """A running mariadbd with its own server_id, database `bench`, user `test`
    and the sysbench table, and a password-less `haproxy` user for the checks."""
    root.mkdir()
    node = ScriptedMariaDB(root)
    script = node.start_script.read_text()
    node.start_script.write_text(
        script.replace("--skip-log-bin", f"--skip-log-bin --server-id={server_id}")
    )
    node.sh(node.start_script)
    node.sql(
        "CREATE DATABASE bench;"
        f"CREATE USER 'test'@'%' IDENTIFIED BY '{PASSWORD}';"
        "GRANT ALL ON bench.* TO 'test'@'%';"
        "CREATE USER 'haproxy'@'%';"
    )
    subprocess.run(
        [
            "sysbench",
            "oltp_read_write",
            "--mysql-host=127.0.0.1",
            f"--mysql-port={node.port}",
            "--mysql-user=test",
            f"--mysql-password={PASSWORD}",
            "--mysql-db=bench",
            "--tables=1",
            f"--table-size={TABLE_SIZE}",
            "prepare",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return node


@pytest.fixture
def nodes(tmp_path):
    started = []
    try:
        for server_id in (1, 2):
            started.append(start_node(tmp_path / f"n{server_id}", server_id))
        yield started
    finally:
        for node in started:
            node.sh(node.stop_script)


@pytest.fixture
def balancer(tmp_path, nodes):
    """haproxy -db (foreground, no daemon, no system service) on a free loopback port."""
    port, config = free_port(), tmp_path / "haproxy.cfg"
    servers = "\n".join(
        f"    server n{i} 127.0.0.1:{node.port} check inter 500ms fall 1 rise 1"
        for i, node in enumerate(nodes, 1)
    )
    config.write_text(
        textwrap.dedent(f"""\
        global
            maxconn 256
        defaults
            mode tcp
            timeout connect 2s
            timeout client 60s
            timeout server 60s
            retries 1
            option redispatch
        listen mysql
            bind 127.0.0.1:{port}
            balance roundrobin
            option mysql-check user haproxy post-41
        """)
        + servers
        + "\n"
    )
    server = Server(["/usr/sbin/haproxy", "-f", str(config), "-db"], port, tmp_path / "haproxy.log")
    server.start()
    yield server
    server.stop()


def s4_plan(port: int) -> dict:
    return {
        "name": "s4-two-nodes-through-haproxy",
        "tool": "sysbench",
        "targets": [
            {
                "name": "maria-2node",
                "kind": "mysql",
                "nodes": ["n1.internal", "n2.internal"],
                "via": "haproxy",
                "host": "127.0.0.1",
                "port": port,
                "user": "test",
                "credential": "test-pw",
                "database": "bench",
            }
        ],
        "params": {"tables": 1, "table_size": TABLE_SIZE, "time": 3, "forced_shutdown": 5},
        "axes": {"test": ["oltp_read_only", "oltp_read_write"], "threads": [1, 2]},
        "prepare": False,
    }


def test_cells_show_the_nodes_and_a_dead_node_fails_only_its_cell(
    team, nodes, balancer, start_worker, owner_client
):
    cred = Credential(
        team=team, name="test-pw", kind=Credential.PASSWORD, host_patterns=["127.0.0.1"]
    )
    cred.set_secret(PASSWORD)
    cred.save()
    start_worker("a", **FAST)
    run = orchestration.start_run(team, s4_plan(balancer.port))
    victim = wait_for(
        lambda: run.cells.filter(
            status=Cell.RUNNING, phase="measure", axes={"test": "oltp_read_only", "threads": 2}
        ).first()
    )
    time.sleep(1)  # both threads connected, one to each node, and querying
    nodes[1].sh(nodes[1].stop_script)
    wait_for(lambda: finished(run), timeout=90)

    cells = {(c.axes["test"], c.axes["threads"]): c for c in run.cells.all()}
    assert run.status == Run.PARTIAL, {k: c.error for k, c in cells.items()}
    failed = cells["oltp_read_only", 2]
    assert failed.pk == victim.pk and failed.status == Cell.FAILED
    # sysbench's own line: the node went away under one of its threads.
    assert "measure failed" in failed.error and "FATAL: mysql_" in failed.error, failed.error
    later = [c for c in cells.values() if c.index > failed.index]
    assert later and all(c.status == Cell.SUCCEEDED for c in later), [c.error for c in later]

    ports = {node.port: server_id for server_id, node in enumerate(nodes, 1)}
    seen = {}
    for cell in cells.values():
        for node in cell.facts["db_nodes"]:
            assert node["host"] and ports[node["port"]] == node["server_id"]
            seen.setdefault(node["port"], set()).add(cell.index)
    assert set(seen) == set(ports)  # through the balancer, both nodes
    # Before node 2 stopped, the failed cell's connections reached both nodes;
    # the cells after it reached node 1 alone.
    assert {n["port"] for n in failed.facts["db_nodes"]} == set(ports)
    for cell in later:
        assert [n["port"] for n in cell.facts["db_nodes"]] == [nodes[0].port]

    page = owner_client.get(reverse("cell_artifacts", args=[run.pk, failed.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    for port in ports:
        assert f":{port} (server_id" in text
    assert PASSWORD not in text
