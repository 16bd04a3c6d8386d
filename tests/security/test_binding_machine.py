"""A binding names the machine that connects (docs/trust-model.md, "Credentials
belong to targets"): a credential bound through a target on the worker's own
loopback is refused for a cell whose client is another machine, at save and by
a real worker before that client connects. A network namespace stands in for a
team's SSH client host: a real sshd on its veth address and a listener on its
own loopback, at the same port as the worker's bound server. Neither hears
anything. Also: one address for every client (a socket beside a host is
refused), host patterns compared per label and as addresses, static_cluster
credentials checked at save."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from benchapp.models import Artifact, Cell, Credential, Run
from benchapp.runs import orchestration
from benchapp.store import frozenparts
from runners import endpoint as ep
from tests.security.test_credential_binding import PASSWORD, recorder, team_password  # noqa: F401 (fixtures)
from tests.support.waiting import finished, wait_for

pytestmark = pytest.mark.django_db

# Benchmarking addresses (RFC 2544), the half test_inputs_guard does not use:
# never a real network, never one of this machine's lasting addresses.
NS_RANGE = ipaddress.ip_network("198.19.0.0/16")


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _forged_run(team, document, rewrite) -> Run:
    """A run saved through validation whose frozen cells are then rewritten
    (rewrite(cell spec): validation bypassed in the database) before dispatch."""
    with transaction.atomic():  # dispatch leaves on commit, after the rewrite
        run = orchestration.start_run(team, document, origin="api")
        for cell in Cell.objects.filter(run=run):
            # The whole spec, rewritten, stored whole (a form the worker reads).
            spec = frozenparts.frozen(cell)
            rewrite(spec)
            Cell.objects.filter(pk=cell.pk).update(spec=spec)
    return run


def _pg_plan(target, client=None) -> dict:
    plan = {"name": "steal", "tool": "pgbench", "targets": [target], "params": {"time": 1}}
    if client is not None:
        plan["client"] = client
    return plan


# ------------------------------------------------------------------ host patterns


@pytest.mark.parametrize(
    ("pattern", "host", "port", "matches"),
    [
        ("10.20.30.*:5432", "10.20.30.7", 5432, True),
        ("10.20.30.*:5432", "10.20.30.7.evil.example", 5432, False),
        ("10.20.30.*:5432", "10.20.30.7", 5433, False),
        ("10.20.30.*", "10.20.30.07", 5432, True),  # the address a resolver reads
        ("10.0.0.0/24", "10.0.0.200", 5432, True),
        ("10.0.0.0/24", "10.0.1.1", 5432, False),
        ("10.0.0.0/24", "10.0.0.1.evil.example", 5432, False),
        ("10.0.0.0/24:5432", "10.0.0.9", 5432, True),
        ("10.0.0.0/24:5432", "10.0.0.9", 3306, False),
        ("fd00::/64", "fd00::17", 5432, True),
        ("*.db.example.com", "a.db.example.com", 5432, True),
        ("*.db.example.com", "a.b.db.example.com", 5432, False),
        ("*.db.example.com", "db.example.com", 5432, False),
        ("db?.example.com:5432", "db1.example.com", 5432, True),
        ("db?.example.com:5432", "db1.x.example.com", 5432, False),
        ("*.example.com", "10.0.0.1", 5432, False),  # a name pattern never matches an address
        ("[::1]:6432", "::1", 6432, True),
        ("unix:/run/postgresql/*", "unix:/run/postgresql/.s.PGSQL.5432", None, True),
        ("unix:/run/postgresql/*", "unix:/run/postgresql/x/.s.PGSQL.5432", None, False),
    ],
)
def test_host_pattern_matches_within_a_label_and_as_addresses(pattern, host, port, matches):
    assert ep.check_pattern(pattern) == pattern
    assert ep.pattern_matches(pattern, ep.key(host, port)) is matches


@pytest.mark.parametrize(
    ("pattern", "problem"),
    [
        ("*", "wildcards alone"),
        ("*:5432", "wildcards alone"),
        ("10.20.*", "four labels"),
        ("fd00::*", "takes no wildcard"),
        ("10.0.0.0/33", "a subnet is an address and a prefix length"),
        ("unix:/run/../tmp/*", "may not contain '..'"),
    ],
)
def test_host_pattern_that_would_bind_too_much_is_refused(pattern, problem):
    with pytest.raises(ValueError, match="is not a host pattern") as refused:
        ep.check_pattern(pattern)
    assert problem in str(refused.value)


@pytest.mark.parametrize(
    ("host", "relative"),
    [
        ("127.0.0.1", True),
        ("127.1", True),  # inet_aton's 127.0.0.1
        ("0x7f.0.0.1", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", True),
        ("localhost", True),
        ("db", True),  # each machine's own search list
        ("unix:/run/mysqld/mysqld.sock", True),
        ("db.example.com", False),
        ("10.20.30.7", False),
    ],
)
def test_endpoint_relative_to_its_client_is_recognised(host, relative):
    assert ep.is_relative(ep.key(host, 5432)) is relative


def test_binding_of_a_relative_endpoint_holds_only_from_its_machine():
    worker_db = ep.Binding(ep.WORKER, ep.key("127.0.0.1", 5432))
    remote_db = ep.Binding(ep.ssh_machine("db1.example.com", 22), ep.key("127.0.0.1", 5432))
    lab = ep.ssh_machine("lab.example.com", 22)
    loopback = ep.key("127.0.0.1", 5432)
    assert ep.holds(ep.WORKER, loopback, [worker_db], [])
    assert not ep.holds(lab, loopback, [worker_db], [])
    assert not ep.holds(lab, loopback, [], ["127.0.0.1:5432"])  # patterns name no machine
    assert ep.holds(ep.ssh_machine("DB1.example.com.", 22), loopback, [remote_db], [])
    assert not ep.holds(ep.WORKER, loopback, [remote_db], [])
    absolute = ep.Binding(ep.WORKER, ep.key("db.example.com", 5432))
    assert ep.holds(lab, ep.key("db.example.com", 5432), [absolute], [])


# ------------------------------------------------------------------ one address


def test_socket_beside_a_host_is_refused_at_save(member, team, team_password, recorder):
    team_password.host_patterns = ["unix:/run/postgresql/*"]
    team_password.save()
    target = {
        "name": "pg",
        "kind": "postgres",
        "socket": "/run/postgresql",
        "host": "127.0.0.1",
        "port": recorder.port,
        "user": "postgres",
        "credential": "team-pw",
    }
    response = _api(member).post("/api/plans/", {"document": _pg_plan(target)}, format="json")
    assert response.status_code == 400, response.content
    (message,) = response.json()["document"]
    assert message.startswith("targets[0].socket: give socket or host, not both")
    del target["host"]  # the socket alone: its file is the bound address
    response = _api(member).post("/api/plans/", {"document": _pg_plan(target)}, format="json")
    assert response.status_code == 201, response.content
    assert recorder.connections == 0


def test_socket_address_is_the_file_every_client_reaches():
    from runners.plantargets import TargetSpec

    pg = TargetSpec("pg", "postgres", port=5433, socket="/run/postgresql")
    assert ep.address(pg) == ep.Address(port=5433, socket="/run/postgresql/.s.PGSQL.5433")
    named = TargetSpec("pg", "postgres", port=5432, socket="/run/postgresql/.s.PGSQL.5433")
    assert ep.address(named).port == 5433  # the file names the server libpq reaches
    my = TargetSpec("my", "mysql", port=3306, socket="/run/mysqld/mysqld.sock")
    assert ep.address(my).key == ("unix:/run/mysqld/mysqld.sock", None)


@pytest.mark.django_db(transaction=True)
def test_a_forged_socket_beside_a_host_is_refused_by_the_worker(
    team, team_password, recorder, start_worker
):
    """A frozen cell naming both (validation bypassed): the worker refuses it
    before any client runs, and the host hears nothing."""
    team_password.host_patterns = ["unix:/run/postgresql/*"]
    team_password.save()
    target = {
        "name": "pg",
        "kind": "postgres",
        "socket": "/run/postgresql",
        "port": recorder.port,
        "user": "postgres",
        "credential": "team-pw",
    }

    def add_host(spec):
        spec["plan"]["targets"][0].update(host="127.0.0.1", port=recorder.port)

    start_worker("socket", BENCHBOARD_HEARTBEAT_SECONDS=1, BENCHBOARD_LEASE_SECONDS=6)
    run = _forged_run(team, _pg_plan(target), add_host)
    wait_for(lambda: finished(run), timeout=120)
    (cell,) = run.cells.all()
    assert cell.status == Cell.FAILED
    assert "target pg: give socket or host, not both" in cell.error
    assert not Artifact.objects.filter(cell__run=run).exists()
    assert recorder.connections == 0 and not recorder.received


# ------------------------------------------------------------------ static_cluster


def _cluster(**extra) -> dict:
    return {
        "name": "lab",
        "kind": "host",
        "provision": {
            "provider": "static_cluster",
            "hosts": [{"host": "10.9.9.9"}, {"host": "10.9.9.10"}],
            "price_per_hour": 0,
            **extra,
        },
    }


@pytest.mark.parametrize(
    ("spec", "path", "address"),
    [
        (
            {"ssh": {"user": "bench", "credential": "team-pw"}},
            "targets[0].provision.ssh.credential",
            "10.9.9.9:22",
        ),
        (
            {"ssh": {"user": "bench", "port": 2222, "credential": "team-pw"}},
            "targets[0].provision.ssh.credential",
            "10.9.9.9:2222",
        ),
    ],
)
def test_static_cluster_credentials_are_checked_at_save(
    member, team_admin, team, team_password, spec, path, address
):
    plan = {
        "name": "fio",
        "tool": "fio",
        "targets": [_cluster(**spec)],
        "client": {"on": "target"},
        "params": {"directory": ".", "size": "4M", "rw": "read", "runtime": 1},
    }
    response = _api(member).post("/api/plans/", {"document": plan}, format="json")
    assert response.status_code == 400, response.content
    (message,) = response.json()["document"]
    assert message.startswith(f"{path}: credential 'team-pw' is not bound to {address}")
    team_password.host_patterns = [address]  # a team admin binds the cluster's first host
    team_password.save()
    response = _api(member).post("/api/plans/", {"document": plan}, format="json")
    assert "is not bound" not in str(response.json())


def test_static_cluster_database_credential_goes_where_the_balancer_is(member, team, team_password):
    target = {
        "name": "lab",
        "kind": "postgres",
        "provision": {
            "provider": "static_cluster",
            "hosts": [{"host": "10.9.9.9"}],
            "via": {"host": "lb.example.com", "port": 6432},
            "price_per_hour": 0,
            "credential": "team-pw",
        },
    }
    response = _api(member).post("/api/plans/", {"document": _pg_plan(target)}, format="json")
    assert response.status_code == 400, response.content
    assert "credential 'team-pw' is not bound to lb.example.com:6432" in str(response.json())


# ------------------------------------------------------------------ another machine

SSHD_CONFIG = """\
Port 22
ListenAddress {address}
HostKey {dir}/host_ed25519
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
UsePAM no
StrictModes no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
LogLevel INFO
"""

# Runs inside the namespace: every connection to its loopback port is logged.
LISTENER = """
import socket, sys
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", int(sys.argv[1])))
sock.listen(8)
print("ready", flush=True)
while True:
    conn, _ = sock.accept()
    conn.settimeout(2)
    with open(sys.argv[2], "ab") as log:
        log.write(b"CONNECTION\\n")
        try:
            log.write(conn.recv(65536))
        except OSError:
            pass
    conn.close()
"""


class ClientHost:
    """A network namespace standing in for a team's SSH client host: a veth
    address the worker reaches, a real sshd there, and a listener on the
    namespace's own 127.0.0.1 at `port` (the worker's bound server's port)."""

    def __init__(self, directory: Path, port: int):
        suffix = os.getpid() % 16000
        self.ns, self.link, self.peer = f"bbbind{suffix}", f"bbb{suffix}a", f"bbb{suffix}b"
        base = NS_RANGE.network_address + 4 * suffix
        self.local, self.address = str(base + 1), str(base + 2)
        self.directory, self.port, self.processes = directory, port, []
        self.heard = directory / "heard.log"
        self._network()
        self._sshd()
        self._listener()

    def _ip(self, *argv, ns: bool = False) -> None:
        prefix = ["ip", "netns", "exec", self.ns] if ns else []
        subprocess.run([*prefix, "ip", *argv], check=True, capture_output=True)

    def _network(self) -> None:
        subprocess.run(["ip", "netns", "add", self.ns], check=True)
        veth = ("type", "veth", "peer", "name", self.peer, "netns", self.ns)
        self._ip("link", "add", self.link, *veth)
        self._ip("addr", "add", f"{self.local}/30", "dev", self.link)
        self._ip("link", "set", self.link, "up")
        self._ip("addr", "add", f"{self.address}/30", "dev", self.peer, ns=True)
        self._ip("link", "set", self.peer, "up", ns=True)
        self._ip("link", "set", "lo", "up", ns=True)

    def _sshd(self) -> None:
        d = self.directory
        for name in ("host_ed25519", "client_ed25519"):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / name)], check=True
            )
        (d / "authorized_keys").write_text((d / "client_ed25519.pub").read_text())
        (d / "sshd_config").write_text(SSHD_CONFIG.format(address=self.address, dir=d))
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        argv = ["/usr/sbin/sshd", "-D", "-E", str(d / "sshd.log"), "-f", str(d / "sshd_config")]
        self.processes.append(
            subprocess.Popen(["ip", "netns", "exec", self.ns, *argv], stderr=subprocess.DEVNULL)
        )
        pub = (d / "host_ed25519.pub").read_text().split()
        self.host_key, self.client_key = f"{pub[0]} {pub[1]}", (d / "client_ed25519").read_text()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((self.address, 22), timeout=0.5) as sock:
                    if sock.recv(7).startswith(b"SSH-"):
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("sshd in the namespace did not start")

    def _listener(self) -> None:
        argv = [sys.executable, "-c", LISTENER, str(self.port), str(self.heard)]
        listener = subprocess.Popen(
            ["ip", "netns", "exec", self.ns, *argv], stdout=subprocess.PIPE, text=True
        )
        self.processes.append(listener)
        assert listener.stdout.readline().strip() == "ready"

    def probe(self) -> None:
        """Connect to the listener from inside the namespace (the control)."""
        code = f"import socket; socket.create_connection(('127.0.0.1', {self.port})).send(b'x')"
        subprocess.run(["ip", "netns", "exec", self.ns, sys.executable, "-c", code], check=True)

    def heard_text(self) -> str:
        return self.heard.read_bytes().decode(errors="replace") if self.heard.exists() else ""

    def logins(self) -> int:
        log = self.directory / "sshd.log"
        return log.read_text().count("Accepted publickey") if log.exists() else 0

    def close(self) -> None:
        for process in self.processes:
            process.kill()
            process.wait(timeout=5)
        subprocess.run(["ip", "link", "del", self.link], check=False, capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], check=False)


@pytest.fixture
def client_host(tmp_path, recorder):
    host = ClientHost(tmp_path, recorder.port)
    yield host
    host.close()


def _ssh_client(host: ClientHost) -> dict:
    return {
        "ssh": {
            "host": host.address,
            "user": "root",
            "credential": "client-key",
            "known_host_key": host.host_key,
        }
    }


@pytest.fixture
def bound_setup(team, team_password, client_host):
    """The worker's server (the recorder) as a stored target using the team's
    password; the namespace as the SSH host of another stored target (its key)."""
    from benchapp.models import Target

    team.targets.create(
        name="local-db",
        kind="postgres",
        host="127.0.0.1",
        port=client_host.port,
        user="postgres",
        database="postgres",
        credential=team_password,
    )
    key = Credential(team=team, name="client-key", kind=Credential.SSH_KEY)
    key.set_secret(client_host.client_key)
    key.save()
    Target.objects.create(  # a database elsewhere whose machine is the namespace
        team=team,
        name="client-host",
        kind="postgres",
        host="db.example.com",
        ssh_host=client_host.address,
        ssh_user="root",
        ssh_credential=key,
        known_host_key=client_host.host_key,
    )
    return client_host


@pytest.mark.parametrize(
    ("client", "path"),
    [
        ("ssh", "targets[0].credential"),
        ("second of a list", "targets[0].credential"),
        ("on a target", "targets[0].credential"),
    ],
)
def test_worker_loopback_binding_is_refused_for_another_client_machine_at_save(
    member, bound_setup, recorder, client, path
):
    host = bound_setup
    ssh = _ssh_client(host)
    if client == "ssh":
        plan = _pg_plan({"name": "local-db"}, ssh)
    elif client == "second of a list":
        plan = _pg_plan({"name": "local-db"}, [{"local": True}, ssh])
    else:
        plan = _pg_plan({"name": "local-db"}, {"on": "client-host"})
        plan["targets"].append({"name": "client-host"})
        plan["axes"] = {"target": ["local-db"]}
    response = _api(member).post("/api/plans/", {"document": plan}, format="json")
    assert response.status_code == 400, response.content
    (message,) = response.json()["document"]
    assert message.startswith(
        f"{path}: credential 'team-pw' is not bound to 127.0.0.1:{host.port} "
        f"when SSH host {host.address}:22 connects: loopback, localhost, a socket or a name "
        "without a dot is another server on each machine"
    )
    host.probe()  # the control: the namespace's listener does hear what reaches it
    assert host.heard_text() == "CONNECTION\nx"
    assert host.logins() == 0 and recorder.connections == 0


@pytest.mark.django_db(transaction=True)
def test_the_worker_refuses_each_client_on_another_machine_before_it_connects(
    team, bound_setup, recorder, start_worker
):
    """Frozen cells forged after validation: the client is the namespace host,
    or the second of a list. The worker checks each client before it connects:
    no password reaches the namespace's loopback, nor sshd a login."""
    host = bound_setup
    ssh = {
        "kind": "ssh",
        "target": None,
        "provision": None,
        "ssh": {
            "host": host.address,
            "port": 22,
            "user": "root",
            "credential": "client-key",
            "password_env": None,
            "known_host_key": host.host_key,
        },
    }

    def only_client(spec):
        spec["plan"]["client"] = ssh

    def second_client(spec):
        spec["plan"]["more_clients"] = [ssh]
        spec["cell"]["clients"] = 2

    start_worker("machine", BENCHBOARD_HEARTBEAT_SECONDS=1, BENCHBOARD_LEASE_SECONDS=6)
    # The control: from the worker, the binding holds and the password arrives.
    control = _forged_run(team, _pg_plan({"name": "local-db"}), lambda spec: None)
    wait_for(lambda: finished(control), timeout=120)
    assert PASSWORD.encode() in bytes(recorder.received)
    recorder.received.clear()
    recorder.connections = 0

    runs = [
        _forged_run(team, _pg_plan({"name": "local-db"}), rewrite)
        for rewrite in (only_client, second_client)
    ]
    for run in runs:
        wait_for(lambda run=run: finished(run), timeout=120)
        (cell,) = run.cells.all()
        assert cell.status == Cell.FAILED
        assert (
            f"is not bound to 127.0.0.1:{host.port} when SSH host {host.address}:22 connects; "
            "refused before connecting"
        ) in cell.error
        assert not Artifact.objects.filter(cell__run=run, phase="measure").exists()
    assert host.heard_text() == "" and host.logins() == 0
    assert recorder.connections == 0 and not recorder.received
