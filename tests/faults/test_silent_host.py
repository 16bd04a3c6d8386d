"""A host that goes silent mid-measure (docs/operations.md, "Timeouts that
bound a silent host").

The host is an sshd in a network namespace of the test's own, reached over
a veth; mid-measure both ends of the veth drop every packet (a queue of no
packets, `tc qdisc add dev X root pfifo limit 0`, does what `netem loss
100%` would where sch_netem is not built): nothing is refused or reset, the
host just stops answering. The cell
must fail within the SSH keepalive bound naming the host and the phase, its
locks must be free at once, and another team's run must go on meanwhile.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import subprocess
import time
import uuid

import pytest

from benchapp.models import Cell, CellLock, Credential, Run, Team
from benchapp.runs import orchestration
from tests.support.sshd import start_sshd, stop_sshd
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)

FAST = {**FAST_LEASES, "BENCHBOARD_CELL_RETRIES": 0}
# SSH: silent for 2 keepalives (15 s each), then a probe waits one more: 45 s;
# plus the executor's check period and a busy machine.
SILENT_BOUND = 120
# Not the range other tests' veths use (tests/security/test_inputs_guard.py).
RANGE = ipaddress.ip_network("198.19.0.0/16")


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST)


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


class Link:
    """A namespace joined to this machine by a veth; silence() drops every packet."""

    def __init__(self):
        suffix = os.getpid() % 100_000
        self.ns, self.outer, self.inner = f"bbsil{suffix}", f"bbs{suffix}a", f"bbs{suffix}b"
        base = RANGE.network_address + 4 * (suffix % 16000)
        self.here, self.there = str(base + 1), str(base + 2)
        sh("ip", "netns", "add", self.ns)
        sh("ip", "link", "add", self.outer, "type", "veth", "peer", "name", self.inner)
        sh("ip", "link", "set", self.inner, "netns", self.ns)
        sh("ip", "addr", "add", f"{self.here}/30", "dev", self.outer)
        sh("ip", "link", "set", self.outer, "up")
        for argv in (
            ("ip", "addr", "add", f"{self.there}/30", "dev", self.inner),
            ("ip", "link", "set", self.inner, "up"),
            ("ip", "link", "set", "lo", "up"),
        ):
            sh("ip", "netns", "exec", self.ns, *argv)

    def silence(self) -> None:
        loss = ("root", "pfifo", "limit", "0")
        sh("tc", "qdisc", "add", "dev", self.outer, *loss)
        sh("ip", "netns", "exec", self.ns, "tc", "qdisc", "add", "dev", self.inner, *loss)

    def remove(self) -> None:
        subprocess.run(["ip", "link", "del", self.outer], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], capture_output=True)


@pytest.fixture
def silent_host(team, tmp_path):
    link = Link()
    server = start_sshd(tmp_path, listen=link.there, netns=link.ns)
    cred = Credential(team=team, name="ssh-key", kind=Credential.SSH_KEY)
    cred.set_secret(server.client_key)
    cred.save()
    team.targets.create(
        name="remote",
        kind="host",
        ssh_host=server.host,
        ssh_port=server.port,
        ssh_user=server.user,
        ssh_credential=cred,
        known_host_key=server.host_key,
    )
    try:
        yield link
    finally:
        stop_sshd(server)
        link.remove()


def kill_tools(pattern: str) -> None:
    """The far side's fio, orphaned by the silence (its session never closed)."""
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout
    for pid in out.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_silent_host_fails_its_cell_within_the_keepalive_bound(
    team, silent_host, tmp_path, start_worker
):
    name = f"silent-{uuid.uuid4().hex[:8]}"
    remote = {
        "name": "silent",
        "tool": "fio",
        "targets": [{"name": "remote"}],
        "client": {"on": "target"},
        "params": {"size": "2M", "bs": "4k", "runtime": 90, "time_based": True},
        "axes": {"filename": [f"{name}-1.data", f"{name}-2.data"]},
    }
    local = {
        "name": "bystander",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {
            "filename": f"{tmp_path}/local.data",
            "size": "2M",
            "bs": "4k",
            "runtime": 2,
            "time_based": True,
        },
        "axes": {"rw": ["read", "write", "randread"]},
    }
    start_worker("silent", concurrency=2, **FAST)
    try:
        run = orchestration.start_run(team, remote)
        first = wait_for(
            lambda: run.cells.filter(status=Cell.RUNNING, phase="measure").first(), timeout=120
        )
        other = orchestration.start_run(Team.objects.create(name="bystanders"), local)
        silent_host.silence()
        silenced = time.monotonic()
        wait_for(lambda: Cell.objects.get(pk=first.pk).status != Cell.RUNNING, timeout=180)
        took = time.monotonic() - silenced
        first.refresh_from_db()
        assert not CellLock.objects.filter(holder=first).exists()
        wait_for(lambda: finished(run) and finished(other), reap=True, timeout=240, step=1)
    finally:
        kill_tools(name)
    print(f"silent host: cell failed {took:.0f} s after the silence")
    assert first.status == Cell.FAILED
    assert silent_host.there in first.error and first.error.startswith("measure: "), first.error
    assert took < SILENT_BOUND
    assert run.status == Run.FAILED
    assert not run.cells.exclude(status=Cell.FAILED).exists()
    assert other.status == Run.SUCCEEDED, [c.error for c in other.cells.all()]
    assert not CellLock.objects.exclude(holder=None).exists()
