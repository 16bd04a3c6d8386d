"""run_cell against real things: local MariaDB and PostgreSQL, fio on a tmp
dir, stress-ng, a data-directory snapshot on a plain directory."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from runners.cell import run_cell
from runners.cellcleanup import cleanup_target
from runners.context import CellContext
from runners.plan import expand, load_plan
from tests.support.dbtargets import mariadb_sql, mariadb_target, postgres_target  # noqa: F401
from tests.support.sshd import host_target, sshd  # noqa: F401

PASSWORD_ENV = "BB_TEST_CELL_PASSWORD"


def _db_target(endpoint, **extra) -> dict:
    target = {
        "name": "db",
        "kind": endpoint.kind,
        "host": endpoint.host,
        "port": endpoint.port,
        "user": endpoint.user,
        "database": endpoint.database,
        **extra,
    }
    if endpoint.password:
        target["password_env"] = PASSWORD_ENV
    return target


def _plan(tool: str, target: dict, params: dict, **extra):
    return load_plan(
        {"name": "t", "tool": tool, "targets": [target], "params": params, "timeout": 120, **extra}
    )


@pytest.fixture
def sandbox_data_dir():
    """A data directory the sandbox user (nobody, when tests run as root) may write."""
    path = tempfile.mkdtemp(prefix="bb-data-")
    os.chmod(path, 0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _run_all(plan, **ctx_args):
    """Run every cell of plan in one context; return the outcomes."""
    with CellContext(plan, **ctx_args) as ctx:
        return [run_cell(plan, cell, ctx) for cell in expand(plan)]


def _phases(outcome) -> list[str]:
    return [record.phase for record in outcome.phases]


def _children(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    return [int(child) for child in found.stdout.split()]


def _gone(pattern: str, within: float) -> bool:
    deadline = time.monotonic() + within
    while _pids(pattern):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def _pids(pattern: str) -> list[int]:
    found = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True, check=False)
    return [int(pid) for pid in found.stdout.split()]


# ---------------------------------------------------------------- tools


def test_run_cell_mysqlslap_succeeds_with_masked_password(mariadb_target, monkeypatch):  # noqa: F811
    monkeypatch.setenv(PASSWORD_ENV, mariadb_target.password)
    plan = _plan(
        "mysqlslap",
        _db_target(mariadb_target),
        {
            "number_of_queries": 100,
            "concurrency": 2,
            "iterations": 2,
            "load_type": "key",
            "add_autoincrement": True,
        },
    )
    (outcome,) = _run_all(plan)
    assert (outcome.status, outcome.error) == ("succeeded", "")
    assert outcome.result.metrics["clients"] == 2
    assert outcome.result.metrics["queries_per_client"] == 50
    assert _phases(outcome) == ["measure"]
    assert mariadb_target.password not in outcome.command + repr(outcome.phases)
    assert outcome.command.startswith("mysqlslap --defaults-extra-file=@WORKDIR@/my.cnf")
    assert outcome.tool_version.startswith("10.11")
    assert outcome.facts["db"]["server_version"].startswith("10.11")
    assert outcome.facts["client"]["cpus"] >= 1
    assert 0 <= outcome.facts["client_cpu_busy_pct"] <= 100
    assert isinstance(outcome.facts["client_bound"], bool)


def test_run_cell_sysbench_prepares_warms_up_measures_and_cleans_up(mariadb_target, monkeypatch):  # noqa: F811
    monkeypatch.setenv(PASSWORD_ENV, mariadb_target.password)
    plan = _plan(
        "sysbench",
        _db_target(mariadb_target),
        {
            "test": "oltp_read_write",
            "tables": 1,
            "table_size": 500,
            "threads": 2,
            "time": 2,  # a 1 s run may end before its first 1 s report
            "report_interval": 1,
            "forced_shutdown": 5,
        },
        warmup={"threads": 1, "read_only": True, "time": 1},
    )
    phases = []
    with CellContext(plan) as ctx:
        outcome = run_cell(plan, expand(plan)[0], ctx, on_phase=phases.append)
    assert (outcome.status, outcome.error) == ("succeeded", "")
    assert phases == ["prepare", "warmup", "measure", "collect", "cleanup"]
    assert _phases(outcome) == ["prepare", "warmup", "measure", "cleanup"]
    warmup = outcome.phases[1].command
    assert "--threads=1" in warmup and "oltp_read_only run" in warmup
    assert outcome.result.metrics["tps"] > 0
    assert outcome.result.series  # --report-interval=1
    assert mariadb_target.password not in repr(outcome)
    assert "password" not in outcome.command  # MYSQL_PWD, never argv
    assert (
        mariadb_sql(f"SHOW TABLES FROM {mariadb_target.database}") == ""
    )  # cleanup dropped sbtest1


def test_run_cell_prepare_once_prepares_the_first_cell_only(mariadb_target, monkeypatch):  # noqa: F811
    monkeypatch.setenv(PASSWORD_ENV, mariadb_target.password)
    plan = _plan(
        "sysbench",
        _db_target(mariadb_target),
        {
            "test": "oltp_point_select",
            "tables": 1,
            "table_size": 200,
            "time": 1,
            "forced_shutdown": 5,
        },
        axes={"threads": [1, 2]},
        prepare={"once": True},
        cleanup=True,
    )
    with CellContext(plan) as ctx:
        outcomes = [run_cell(plan, cell, ctx) for cell in expand(plan)]
        assert ctx.prepared == {"db"}
        assert mariadb_sql(f"SHOW TABLES FROM {mariadb_target.database}") == "sbtest1\n"
        record = cleanup_target(plan, "db", ctx)
    assert [o.status for o in outcomes] == ["succeeded", "succeeded"]
    assert [_phases(o) for o in outcomes] == [["prepare", "measure"], ["measure"]]
    assert record.exit_code == 0 and ctx.prepared == set()
    assert mariadb_sql(f"SHOW TABLES FROM {mariadb_target.database}") == ""


def test_run_cell_fio_on_a_tmp_dir(sandbox_data_dir):
    # The sandboxed fio writes only its scratch dir and the target's data_dirs.
    plan = _plan(
        "fio",
        {"name": "disk", "kind": "host", "data_dirs": [sandbox_data_dir]},
        {"directory": sandbox_data_dir, "rw": "randwrite", "bs": "4k", "size": "4M", "runtime": 1},
    )
    (outcome,) = _run_all(plan)
    assert (outcome.status, outcome.error) == ("succeeded", "")
    assert outcome.result.metrics["write_iops"] > 0
    assert "db" not in outcome.facts
    assert outcome.tool_version.startswith("3.")


def test_run_cell_pgbench_initialises_and_runs(postgres_target):  # noqa: F811
    plan = _plan(
        "pgbench",
        _db_target(postgres_target),
        {"scale": 1, "client": 2, "time": 1, "builtin": "select-only"},
    )
    (outcome,) = _run_all(plan)
    assert (outcome.status, outcome.error) == ("succeeded", "")
    assert _phases(outcome) == ["prepare", "measure"]
    assert outcome.phases[0].command.startswith("pgbench -i")
    assert outcome.result.metrics["tps"] > 0
    assert outcome.facts["db"]["server_version"].startswith("15")


# ---------------------------------------------------------------- failures


def test_run_cell_wrong_password_fails_with_clear_error(mariadb_target, monkeypatch):  # noqa: F811
    monkeypatch.setenv(PASSWORD_ENV, "not-the-password")
    plan = _plan("mysqlslap", _db_target(mariadb_target), {"number_of_queries": 10})
    (outcome,) = _run_all(plan)
    assert outcome.status == "failed"
    assert outcome.error.startswith("measure failed (exit 1): ")
    # MariaDB names the client host as it resolved it: localhost or 127.0.0.1.
    assert re.search(
        rf"Access denied for user '{mariadb_target.user}'@'(localhost|127\.0\.0\.1)' "
        r"\(using password: YES\)$",
        outcome.error,
    )
    measure = outcome.phases[0]
    assert "Access denied" in measure.stdout + measure.stderr  # the raw output is kept
    assert "not-the-password" not in repr(outcome)


def test_run_cell_wrong_password_in_sysbench_prepare_is_masked(mariadb_target, monkeypatch):  # noqa: F811
    monkeypatch.setenv(PASSWORD_ENV, "wrong-pw-123")
    plan = _plan(
        "sysbench",
        _db_target(mariadb_target),
        {"test": "oltp_read_only", "tables": 1, "table_size": 10, "time": 1},
    )
    (outcome,) = _run_all(plan)
    assert outcome.status == "failed"
    assert outcome.error.startswith("prepare failed (exit 1): FATAL: error 1045: Access denied")
    assert _phases(outcome) == ["prepare", "cleanup"]  # cleanup still ran
    assert "wrong-pw-123" not in outcome.phases[0].command  # MYSQL_PWD, never argv
    assert "wrong-pw-123" not in repr(outcome)


def test_run_cell_missing_password_env_is_permanent(mariadb_target, monkeypatch):  # noqa: F811
    monkeypatch.delenv(PASSWORD_ENV, raising=False)
    plan = _plan("mysqlslap", _db_target(mariadb_target), {"number_of_queries": 10})
    (outcome,) = _run_all(plan)
    assert (outcome.status, outcome.permanent) == ("failed", True)
    assert outcome.error == f"environment variable {PASSWORD_ENV} (password_env) is not set"
    assert outcome.phases == []


def test_run_cell_target_to_provision_fails_permanently():
    plan = _plan("mysqlslap", {"name": "rds", "provision": {"provider": "aws_rds"}}, {})
    (outcome,) = _run_all(plan)
    assert (outcome.status, outcome.permanent) == ("failed", True)
    assert outcome.error == (
        "target rds needs provisioning (provider aws_rds); this runner has "
        "no provisioned address for it"
    )


def test_run_cell_timeout_fails_the_cell(sandbox_data_dir):
    plan = _plan(
        "fio",
        {"name": "disk", "kind": "host", "data_dirs": [sandbox_data_dir]},
        {
            "directory": sandbox_data_dir,
            "size": "1M",
            "runtime": 30,
            "time_based": True,
            "rate_iops": 10,
        },
        timeout=2,
    )
    started = time.monotonic()
    (outcome,) = _run_all(plan)
    assert time.monotonic() - started < 15
    assert outcome.status == "failed"
    assert outcome.error.startswith("measure timed out after ")


def test_run_cell_cancel_stops_measure_and_stress(sandbox_data_dir):
    plan = _plan(
        "fio",
        {"name": "disk", "kind": "host", "data_dirs": [sandbox_data_dir]},
        {
            "directory": sandbox_data_dir,
            "size": "1M",
            "runtime": 60,
            "time_based": True,
            "rate_iops": 10,
        },
        stress={"cpu": 1, "cpu_load": 10},
        timeout=4242,
    )
    with CellContext(plan) as ctx:
        timer = threading.Timer(1.5, ctx.cancel)
        timer.start()
        started = time.monotonic()
        outcome = run_cell(plan, expand(plan)[0], ctx)
        timer.join()
    assert time.monotonic() - started < 20
    # The cancel names the phase it stopped; that phase's record stays.
    assert outcome.status == "cancelled"
    assert outcome.error.startswith("measure cancelled after ")
    assert "measure" in _phases(outcome)
    assert "stress" in _phases(outcome)
    assert _pids("stress-ng --cpu 1 --cpu-load 10 --timeout 4242") == []


# ---------------------------------------------------------------- stress


def test_run_cell_stress_keeps_cores_busy_and_is_gone_after(sandbox_data_dir):
    # fio capped at 20 IOPS is nearly idle: the busy CPU is stress-ng's.
    params = {
        "directory": sandbox_data_dir,
        "size": "1M",
        "runtime": 2,
        "time_based": True,
        "rate_iops": 20,
    }
    stressed = _plan(
        "fio",
        {"name": "disk", "kind": "host", "data_dirs": [sandbox_data_dir]},
        params,
        stress={"cpu": 2, "cpu_load": 100},
        timeout=4243,
    )
    seen = {}

    def on_phase(phase):
        if phase == "measure":
            seen["parent"] = _pids("^stress-ng --cpu 2 --cpu-load 100 --timeout 4243")
            seen["workers"] = [pid for parent in seen["parent"] for pid in _children(parent)]

    with CellContext(stressed) as ctx:
        outcome = run_cell(stressed, expand(stressed)[0], ctx, on_phase=on_phase)
    assert (outcome.status, outcome.error) == ("succeeded", "")
    assert len(seen["parent"]) == 1 and len(seen["workers"]) == 2  # "stress-ng-cpu [run]"
    assert _pids("^stress-ng --cpu 2 --cpu-load 100 --timeout 4243") == []
    assert not any(Path(f"/proc/{pid}").exists() for pid in seen["workers"])
    assert outcome.facts["client_cpu_busy_pct"] >= 90  # both cores of 2
    assert outcome.stress_result.metrics["bogo_ops"] > 0
    assert _phases(outcome) == ["measure", "stress"]


def test_run_cell_stress_zero_cores_starts_nothing(sandbox_data_dir):
    plan = _plan(
        "fio",
        {"name": "disk", "kind": "host", "data_dirs": [sandbox_data_dir]},
        {"directory": sandbox_data_dir, "size": "1M", "runtime": 1},
        stress={"cpu_load": 90},
        axes={"stress.cpu": [0]},
    )
    (outcome,) = _run_all(plan)
    assert outcome.status == "succeeded"
    assert _phases(outcome) == ["measure"] and outcome.stress_result is None


def test_run_cell_stress_on_an_unreachable_host_fails_clearly(mariadb_target):  # noqa: F811
    target = {"name": "far", "kind": "mysql", "host": "db.example.internal", "user": "root"}
    plan = _plan("mysqlslap", target, {"number_of_queries": 10}, stress={"cpu": 1})
    (outcome,) = _run_all(plan)
    assert (outcome.status, outcome.permanent) == ("failed", True)
    assert outcome.error == (
        "target far: its host db.example.internal is not reachable (add ssh: "
        "{host, user, credential} to the target)"
    )


# ---------------------------------------------------------------- snapshots


def test_run_cell_snapshot_restores_the_data_directory_before_each_cell(tmp_path, sandbox_data_dir):
    # The mechanism on a plain directory (service_manager none): a MariaDB
    # datadir works the same way but needs the server stopped, which the
    # shared MariaDB of this machine cannot be.
    datadir = tmp_path / "data"
    datadir.mkdir()
    (datadir / "ibdata1").write_text("original")
    plan = _plan(
        "fio",
        {"name": "disk", "kind": "host", "data_dirs": [sandbox_data_dir]},
        {"directory": sandbox_data_dir, "size": "1M", "runtime": 1},
        axes={"bs": ["4k", "8k"]},
        prepare={
            "once": True,
            "snapshot_datadir": True,
            "datadir": str(datadir),
            "service_manager": "none",
        },
    )
    cells = expand(plan)
    with CellContext(plan) as ctx:
        first = run_cell(plan, cells[0], ctx)
        (datadir / "ibdata1").write_text("changed by the run")
        (datadir / "binlog.000002").write_text("new")
        second = run_cell(plan, cells[1], ctx)
    assert [first.status, second.status] == ["succeeded", "succeeded"]
    assert _phases(first) == ["snapshot:copy", "measure"]
    assert _phases(second) == ["restore:copy", "measure"]
    assert second.phases[0].command == (
        f"rsync -a --delete {tmp_path}/data.benchboard-snapshot/ {datadir}/"
    )
    assert sorted(p.name for p in datadir.iterdir()) == ["ibdata1"]
    assert (datadir / "ibdata1").read_text() == "original"


def test_snapshot_commands_stop_and_start_the_service():
    from runners.phases import snapshot_steps
    from runners.planspec import PrepareSpec

    steps = snapshot_steps(PrepareSpec(snapshot_datadir=True, service="mariadb"), "restore")
    assert [(name, command.argv) for name, command in steps] == [
        ("stop", ["systemctl", "stop", "mariadb"]),
        (
            "copy",
            ["rsync", "-a", "--delete", "/var/lib/mysql.benchboard-snapshot/", "/var/lib/mysql/"],
        ),
        ("start", ["systemctl", "start", "mariadb"]),
    ]


@pytest.mark.parametrize(
    ("output", "line"),
    [
        (
            (
                "FATAL: unable to connect to MySQL server on host '127.0.0.1', port 3306, aborting...\n"
                "FATAL: error 1045: Access denied for user 'u'@'localhost' (using password: YES)\n"
            ),
            "FATAL: error 1045: Access denied for user 'u'@'localhost' (using password: YES)",
        ),
        (
            (
                'pgbench: error: connection to server at "127.0.0.1", port 5432 failed: FATAL:  database '
                '"nope" does not exist\n'
            ),
            (
                'pgbench: error: connection to server at "127.0.0.1", port 5432 failed: FATAL: database '
                '"nope" does not exist'
            ),
        ),
        ("something\nlast words\n", "last words"),
        ("", ""),
    ],
)
def test_error_line_picks_the_cause(output, line):
    from runners.phases import error_line

    assert error_line(output) == line


# ---------------------------------------------------------------- over SSH


def test_run_cell_on_target_host_over_ssh_with_stress(sshd, tmp_path):  # noqa: F811
    # client: {on: target}: fio and stress-ng both run on the target's host,
    # reached over the fixture's sshd with a key resolved by name.
    target = host_target(sshd)
    plan = _plan(
        "fio",
        target,
        {"directory": str(tmp_path), "size": "1M", "runtime": 1},
        client={"on": "target"},
        stress={"cpu": 1, "cpu_load": 50},
        timeout=4244,
    )
    keys = {"box-key": sshd.client_key}
    (outcome,) = _run_all(plan, resolve_secret=keys.__getitem__)
    assert (outcome.status, outcome.error) == ("succeeded", "")
    assert _phases(outcome) == ["measure", "stress"]
    assert outcome.result.metrics["read_iops"] > 0
    assert outcome.stress_result.metrics["bogo_ops"] > 0
    # Over SSH the remote group's last processes may take a moment to be reaped.
    assert _gone("stress-ng --cpu 1 --cpu-load 50 --timeout 4244", within=5)


def test_run_cell_unknown_host_key_fails_permanently(sshd, tmp_path):  # noqa: F811
    target = {
        "name": "box",
        "kind": "host",
        "host": sshd.host,
        "ssh": {
            "host": sshd.host,
            "port": sshd.port,
            "user": sshd.user,
            "credential": "box-key",
            "known_host_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDeadBeefDeadBeef",
        },
    }
    plan = _plan(
        "fio",
        target,
        {"directory": str(tmp_path), "size": "1M", "runtime": 1},
        client={"on": "target"},
    )
    (outcome,) = _run_all(plan, resolve_secret={"box-key": sshd.client_key}.__getitem__)
    assert (outcome.status, outcome.permanent) == ("failed", True)
    assert "host key" in outcome.error
