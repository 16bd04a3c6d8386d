"""S2's data-directory snapshot and restore, for real: a private mariadbd
(its own datadir and port, in a tmp dir) that the plan's phases stop and
start over a loopback sshd, sysbench inserting rows in every cell, and a
real worker. Every cell must start from the data the snapshot holds: the
table checksums taken before each measure are all equal, although each
measure changed the data."""

from __future__ import annotations

import pytest

from benchapp.models import Artifact, Credential, Run
from benchapp.runs import orchestration
from tests.support.private_services import scripted_mariadb  # noqa: F401
from tests.support.sshd import sshd  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

FAST = {**FAST_LEASES, "BENCHBOARD_LEASE_SECONDS": 10}
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST)


def _secret(plain):
    cred = Credential()
    cred.set_secret(plain)
    return {"encrypted": cred.encrypted, "fingerprint": cred.fingerprint}


def test_every_cell_starts_from_the_snapshot(
    team,
    scripted_mariadb,
    sshd,  # noqa: F811
    start_worker,
):
    private_db = scripted_mariadb
    key = Credential.objects.create(
        team=team, name="ssh-key", kind=Credential.SSH_KEY, **_secret(sshd.client_key)
    )
    # The team admin allowed scripts (the stop/start commands) on this target.
    team.targets.create(
        name="private",
        kind="mysql",
        host="127.0.0.1",
        port=private_db.port,
        user="root",
        database="bench",
        ssh_host=sshd.host,
        ssh_port=sshd.port,
        ssh_user=sshd.user,
        ssh_credential=key,
        known_host_key=sshd.host_key,
        allow_custom_scripts=True,
    )
    plan = {
        "name": "s2-snapshot",
        "tool": "sysbench",
        "targets": [{"name": "private"}],
        "client": {"on": "target"},
        "params": {"test": "oltp_insert", "tables": 1, "table_size": 500, "time": 1},
        "axes": {"threads": [1, 2, 4]},
        "prepare": {
            "once": True,
            "snapshot_datadir": True,
            "datadir": str(private_db.datadir),
            "snapshot_dir": str(private_db.snapshot),
            "service_manager": "command",
            "stop_command": ["sh", str(private_db.stop_script)],
            "start_command": ["sh", str(private_db.start_script)],
        },
    }
    start_worker("a", **FAST)
    run = orchestration.start_run(team, plan)
    wait_for(lambda: finished(run), timeout=240)
    cells = list(run.cells.order_by("index"))
    assert run.status == Run.SUCCEEDED, [c.error for c in cells]
    sums = [c.facts["data_checksums"] for c in cells]
    assert set(sums[0]) == {"sbtest1"} and sums[0]["sbtest1"] not in ("", "NULL", "0")
    assert sums == [sums[0]] * 3  # identical data before every measure
    phases = {
        c.index: list(Artifact.objects.filter(cell=c).values_list("phase", flat=True))
        for c in cells
    }
    assert phases[1][:4] == ["prepare", "snapshot:stop", "snapshot:copy", "snapshot:start"]
    for index in (2, 3):
        assert phases[index][:3] == ["restore:stop", "restore:copy", "restore:start"]
        assert "prepare" not in phases[index]
    # The last measure inserted rows: the live data is no longer the snapshot's.
    rows = int(private_db.sql("SELECT COUNT(*) FROM bench.sbtest1"))
    assert rows > 500
    checksum = private_db.sql("CHECKSUM TABLE bench.sbtest1 EXTENDED").split()[-1]
    assert checksum != sums[0]["sbtest1"]
