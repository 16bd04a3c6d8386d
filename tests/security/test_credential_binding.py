"""Credentials belong to targets (docs/trust-model.md): a member's plan that writes
its own target and names the team's stored credential is refused through the API,
and a frozen cell forged to do it anyway (validation bypassed in the database) is
refused by a real worker before it connects. A fake server on 127.0.0.1 records
every byte it is sent: through the stored target the credential is bound to, it
receives the password (the control: the recorder works); through a forged
address, it receives nothing at all."""

from __future__ import annotations

import socket
import struct
import threading

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from benchapp.models import Artifact, Cell, Credential, Plan, Run
from benchapp.runs import orchestration
from benchapp.store import frozenparts
from tests.support.waiting import finished, wait_for

pytestmark = pytest.mark.django_db

PASSWORD = "team-secret-9f2c1d"
FIO = {"directory": ".", "size": "4M", "bs": "4k", "runtime": 1, "time_based": True, "rw": "read"}
SSL_REQUEST = 80877103
GSS_REQUEST = 80877104


class Recorder:
    """A TCP server on 127.0.0.1 that keeps every byte it receives.

    pg=True: it plays a PostgreSQL server far enough to receive a password (it
    refuses SSL and asks for the password in clear text, as a hostile server
    would); otherwise it only listens.
    """

    def __init__(self, pg: bool = False):
        self.pg = pg
        self.received = bytearray()
        self.connections = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections += 1
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        conn.settimeout(5)
        try:
            if self.pg:
                self._pg_handshake(conn)
            while chunk := conn.recv(4096):
                self.received += chunk
        except OSError:
            pass
        finally:
            conn.close()

    def _pg_handshake(self, conn: socket.socket) -> None:
        while True:
            length = struct.unpack("!i", self._read(conn, 4))[0]
            body = self._read(conn, length - 4)
            if struct.unpack("!i", body[:4])[0] in (SSL_REQUEST, GSS_REQUEST):
                conn.sendall(b"N")
                continue
            conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
            return

    def _read(self, conn: socket.socket, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise OSError("closed")
            data += chunk
        self.received += data
        return data

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=2)
        self.sock.close()


@pytest.fixture
def recorder():
    server = Recorder(pg=True)
    yield server
    server.close()


@pytest.fixture
def team_password(team):
    cred = Credential(team=team, name="team-pw", kind=Credential.PASSWORD)
    cred.set_secret(PASSWORD)
    cred.save()
    return cred


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _pg_plan(target: dict) -> dict:
    return {"name": "steal", "tool": "pgbench", "targets": [target], "params": {"time": 1}}


# ------------------------------------------------------------------ validation


def test_a_plan_written_target_naming_a_stored_credential_is_refused(
    member, team, team_password, recorder
):
    """Saving and starting through the API both refuse it, naming the rule."""
    team.targets.create(
        name="prod", kind="postgres", host="db.example.com", port=5432, credential=team_password
    )
    evil = {
        "name": "mine",
        "kind": "postgres",
        "host": "127.0.0.1",
        "port": recorder.port,
        "user": "postgres",
        "credential": "team-pw",
    }
    client = _api(member)
    for path in ("/api/plans/", "/api/runs/"):
        response = client.post(path, {"document": _pg_plan(evil)}, format="json")
        assert response.status_code == 400, response.content
        text = str(response.json())
        assert f"credential 'team-pw' is not bound to 127.0.0.1:{recorder.port}" in text
        assert "only to a stored target it is bound to" in text
    assert not Plan.objects.filter(team=team).exists()
    assert not Run.objects.filter(team=team).exists()
    assert recorder.connections == 0


@pytest.mark.parametrize("where", ["target ssh", "client ssh", "second client ssh", "connect_via"])
def test_ssh_and_client_credentials_are_refused_on_plan_written_hosts(
    member, team, team_password, recorder, where
):
    ssh = {"host": "127.0.0.1", "port": recorder.port, "user": "root", "credential": "team-pw"}
    if where == "target ssh":
        plan = {
            "name": "steal",
            "tool": "fio",
            "targets": [{"name": "box", "kind": "host", "ssh": ssh}],
            "params": FIO,
            "client": {"on": "target"},
        }
        path = "targets[0].ssh.credential"
    elif where == "client ssh":
        plan = {
            "name": "steal",
            "tool": "pgbench",
            "targets": [{"name": "db", "kind": "postgres", "host": "db.example.com"}],
            "params": {"time": 1},
            "client": {"ssh": ssh},
        }
        path = "client.ssh.credential"
    elif where == "second client ssh":
        # Every client of a list is checked, not only the first.
        plan = {
            "name": "steal",
            "tool": "pgbench",
            "targets": [{"name": "db", "kind": "postgres", "host": "db.example.com"}],
            "params": {"time": 1},
            "client": [{"local": True}, {"ssh": ssh}],
        }
        path = "client[1].ssh.credential"
    else:
        plan = _pg_plan(
            {
                "name": "db",
                "kind": "postgres",
                "provision": {
                    "provider": "static",
                    "connect_via": {
                        "host": "127.0.0.1",
                        "port": recorder.port,
                        "credential": "team-pw",
                    },
                },
            }
        )
        path = "targets[0].provision.connect_via.credential"
    response = _api(member).post("/api/plans/", {"document": plan}, format="json")
    assert response.status_code == 400, response.content
    text = str(response.json())
    assert path in text and f"is not bound to 127.0.0.1:{recorder.port}" in text
    assert recorder.connections == 0


def test_a_stored_target_and_an_admins_binding_are_accepted(
    member, team_admin, team, team_password
):
    """Through the stored target that uses it, or a host an admin bound it to."""
    team.targets.create(
        name="prod", kind="postgres", host="db.example.com", port=5432, credential=team_password
    )
    client = _api(member)
    response = client.post("/api/plans/", {"document": _pg_plan({"name": "prod"})}, format="json")
    assert response.status_code == 201, response.content
    replica = {"name": "replica", "kind": "postgres", "host": "replica.example.com"}
    replica["credential"] = "team-pw"
    response = client.post("/api/plans/", {"document": _pg_plan(replica)}, format="json")
    assert response.status_code == 400
    # A member may not bind; an admin may, through the API.
    url = f"/api/credentials/{team_password.pk}/"
    assert client.patch(url, {"host_patterns": ["*.example.com"]}, format="json").status_code in (
        403,
        404,
    )
    response = _api(team_admin).patch(url, {"host_patterns": ["*.example.com:5432"]}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["host_patterns"] == ["*.example.com:5432"]
    response = client.post("/api/plans/", {"document": _pg_plan(replica)}, format="json")
    assert response.status_code == 201, response.content


def test_admin_binds_a_credential_to_a_target_in_the_form(team_admin_client, team, team_password):
    other = team.targets.create(name="other", kind="postgres", host="other.example.com")
    response = team_admin_client.post(
        f"/credentials/{team_password.pk}/edit/",
        {
            "name": "team-pw",
            "kind": "password",
            "username": "",
            "secret": "",
            "bound_targets": [other.pk],
            "host_patterns": "lab-*.example.com\nunix:/run/postgresql/.s.PGSQL.5432",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    team_password.refresh_from_db()
    assert list(team_password.bound_targets.all()) == [other]
    assert team_password.secret() == PASSWORD  # unchanged
    page = team_admin_client.get("/credentials/").content.decode()
    assert "other.example.com:5432" in page and "lab-*.example.com" in page
    response = team_admin_client.post(
        f"/credentials/{team_password.pk}/edit/",
        {"name": "team-pw", "kind": "password", "secret": "", "host_patterns": "a b;c"},
    )
    assert "is not a host pattern" in response.content.decode()


# ------------------------------------------------------------------ the worker


def _forged_run(team, document, rewrite) -> Run:
    """A run saved through validation, whose frozen cells are then rewritten
    (validation bypassed in the database) before dispatch."""
    with transaction.atomic():  # dispatch leaves on commit, after the rewrite
        run = orchestration.start_run(team, document, origin="api")
        for cell in Cell.objects.filter(run=run):
            spec = frozenparts.frozen(cell)  # stored whole: rewritten in place
            rewrite(spec["plan"])
            Cell.objects.filter(pk=cell.pk).update(spec=spec)
    return run


@pytest.mark.django_db(transaction=True)
def test_the_worker_sends_a_credential_only_where_it_is_bound(
    team, team_password, recorder, start_worker
):
    ssh_recorder = Recorder()
    try:
        team.targets.create(
            name="bound",
            kind="postgres",
            host="127.0.0.1",
            port=recorder.port,
            user="postgres",
            database="postgres",
            credential=team_password,
        )
        team.targets.create(
            name="prod",
            kind="postgres",
            host="127.0.0.1",
            port=1,
            user="postgres",
            database="postgres",
            credential=team_password,
        )
        key = Credential(team=team, name="team-key", kind=Credential.PASSWORD)
        key.set_secret(PASSWORD + "-ssh")
        key.save()
        team.targets.create(
            name="box",
            kind="host",
            ssh_host="ssh.example.com",
            ssh_port=22,
            ssh_user="root",
            ssh_credential=key,
            known_host_key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
        )
        start_worker("binding", BENCHBOARD_HEARTBEAT_SECONDS=1, BENCHBOARD_LEASE_SECONDS=6)

        # The control: through the stored target it is bound to, the password arrives.
        control = orchestration.start_run(team, _pg_plan({"name": "bound"}), origin="api")
        wait_for(lambda: finished(control), timeout=120)
        assert PASSWORD.encode() in bytes(recorder.received)

        # The admin removes that target: the credential is no longer bound there.
        team.targets.filter(name="bound").delete()
        recorder.received.clear()
        recorder.connections = 0

        def to_recorder(plan):
            plan["targets"][0].update(host="127.0.0.1", port=recorder.port)

        def ssh_to_recorder(plan):
            plan["targets"][0]["ssh"].update(host="127.0.0.1", port=ssh_recorder.port)

        def client_to_recorder(plan):
            plan["client"] = {
                "kind": "ssh",
                "target": None,
                "provision": None,
                "ssh": {
                    "host": "127.0.0.1",
                    "port": ssh_recorder.port,
                    "user": "root",
                    "credential": "team-key",
                    "password_env": None,
                    "known_host_key": None,
                },
            }

        fio = {
            "name": "fio",
            "tool": "fio",
            "targets": [{"name": "box"}],
            "params": FIO,
            "client": {"on": "target"},
        }
        forged = [
            (_forged_run(team, _pg_plan({"name": "prod"}), to_recorder), recorder, None),
            (_forged_run(team, fio, ssh_to_recorder), ssh_recorder, None),
            # The client is another machine: prod's loopback address is bound
            # for the worker only, so the database credential stops it first.
            (
                _forged_run(team, _pg_plan({"name": "prod"}), client_to_recorder),
                ssh_recorder,
                f"is not bound to 127.0.0.1:1 when SSH host 127.0.0.1:{ssh_recorder.port} connects",
            ),
        ]
        for run, server, expected in forged:
            wait_for(lambda run=run: finished(run), timeout=120)
            cells = list(run.cells.all())
            assert [c.status for c in cells] == [Cell.FAILED], [c.error for c in cells]
            assert (expected or f"is not bound to 127.0.0.1:{server.port}") in cells[0].error
            assert "refused before connecting" in cells[0].error
            assert not Artifact.objects.filter(cell__run=run).exists()  # no tool ran
        assert recorder.connections == 0 and ssh_recorder.connections == 0
        assert not recorder.received and not ssh_recorder.received
    finally:
        ssh_recorder.close()


def test_host_patterns_match_host_port_and_sockets(team, team_password):
    from benchapp.accounts.credbinding import is_bound, key

    team_password.host_patterns = ["*.example.com:5432", "unix:/run/postgresql/*", "[::1]:6432"]
    team_password.save()
    assert is_bound(team_password, key("DB1.example.com", 5432))
    assert not is_bound(team_password, key("db1.example.com", 3306))
    assert not is_bound(team_password, key("example.com.evil.net", 5432))
    assert is_bound(team_password, key("unix:/run/postgresql/.s.PGSQL.5432", None))
    assert not is_bound(team_password, key("unix:/tmp/.s.PGSQL.5432", None))
    assert is_bound(team_password, key("::1", 6432))
    assert not is_bound(team_password, key("", None))
