"""Code-running and file-reaching features refused by the trust model: each
class through the runners validation (tool params + Scope), then through a
real worker with an untrusted plan that is refused and leaves no effect."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from runners.cell import run_cell
from runners.context import CellContext, Permissions
from runners.errors import RunnerError, ValidationError
from runners.phases import check_snapshot
from runners.plan import expand, load_plan
from runners.planspec import PrepareSpec
from runners.sandbox import ANYTHING, Scope
from runners.tools import get_tool

LOCAL = Scope(
    custom_scripts=False, paths=("/srv/bench",), private_tmp=True, where="local execution"
)
SSH_NOT_ALLOWED = Scope(custom_scripts=False, paths=(), where="target db")

REFUSED = [
    ("sysbench", {"script": "os.execute('id')"}, "script"),
    ("sysbench", {"test": "/usr/share/sysbench/oltp_common.lua"}, "test"),
    ("sysbench", {"test": "/tmp/evil.lua"}, "test"),
    ("pgbench", {"script": "\\shell touch /tmp/x"}, "script"),
    ("pgbench", {"script": "SELECT 1;\n  \\SetShell v id"}, "script"),
    ("pgbench", {"script": "\\  SHELL id"}, "script"),
    ("mysqlslap", {"query": "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE t"}, "query"),
    ("mysqlslap", {"create": "load  /*x*/ data\nlocal infile 'x' into table t"}, "create"),
    ("mysqlslap", {"query": "LOAD XML LOCAL INFILE '/etc/hosts' INTO TABLE t"}, "query"),
    ("fio", {"filename": "/etc/passwd"}, "filename"),
    ("fio", {"filename": "/dev/sda"}, "filename"),
    ("fio", {"filename": "/srv/bench/a:/root/b"}, "filename"),
    ("fio", {"filename": "/srv/bench/../../etc/x"}, "filename"),
    ("fio", {"directory": "/var/lib/mysql"}, "directory"),
    ("fio", {"filename": "/srv/benchmark-other/x"}, "filename"),
    ("stress_ng", {"cpu": 1, "hdd": 1, "temp_path": "/etc"}, "temp_path"),
]


def _checked(tool_name: str, params: dict, scope: Scope) -> None:
    tool = get_tool(tool_name)
    tool.check_scope(tool.validate(params), scope)


@pytest.mark.parametrize(("tool", "params", "param"), REFUSED)
def test_refused_for_local_execution_naming_the_parameter(tool, params, param):
    with pytest.raises(ValidationError) as refused:
        _checked(tool, params, LOCAL)
    assert refused.value.param == param


@pytest.mark.parametrize(("tool", "params", "param"), REFUSED)
def test_refused_over_ssh_unless_the_target_allows_custom_scripts(tool, params, param):
    with pytest.raises(ValidationError):
        _checked(tool, params, SSH_NOT_ALLOWED)
    _checked(tool, params, ANYTHING)  # allowed custom scripts / operator plan file


@pytest.mark.parametrize(
    ("tool", "params"),
    [
        ("sysbench", {"test": "oltp_read_only"}),
        ("pgbench", {"script": "SELECT 1; -- shell is just a word here"}),
        ("mysqlslap", {"query": "SELECT 1"}),
        ("fio", {"filename": "/srv/bench/f1:/srv/bench/f2"}),
        ("fio", {"directory": "/tmp/fio"}),  # the sandbox's private /tmp is scratch
        ("stress_ng", {"cpu": 1, "hdd": 1, "temp_path": "/srv/bench/t"}),
    ],
)
def test_legitimate_params_pass_for_local_execution(tool, params):
    _checked(tool, params, LOCAL)


def test_snapshot_and_service_refused_locally_and_confined_over_ssh():
    prepare = PrepareSpec(snapshot_datadir=True, datadir="/var/lib/mysql")
    with pytest.raises(ValidationError) as refused:
        check_snapshot(prepare, LOCAL)
    assert refused.value.param == "prepare.snapshot_datadir"
    assert "custom scripts" in refused.value.message
    check_snapshot(prepare, ANYTHING)


def test_password_env_refused_for_untrusted_plans(monkeypatch):
    monkeypatch.setenv("BB_SOME_SECRET", "worker-secret")
    plan = load_plan(
        {
            "name": "t",
            "tool": "mysqlslap",
            "targets": [{"name": "db", "host": "127.0.0.1", "password_env": "BB_SOME_SECRET"}],
        }
    )
    with pytest.raises(RunnerError) as refused:
        CellContext(plan, trusted=False).endpoint(plan.targets[0])
    assert refused.value.permanent and "operator plan files" in refused.value.message
    assert CellContext(plan, trusted=True).endpoint(plan.targets[0]).password == "worker-secret"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def canary():
    """A world-writable file outside every scratch dir: only the trust model protects it."""
    folder = Path(tempfile.mkdtemp(prefix="bb-canary-", dir="/var/tmp"))
    os.chmod(folder, 0o777)
    path = folder / "canary"
    path.write_bytes(b"canary " * 512)
    os.chmod(path, 0o666)
    yield path
    shutil.rmtree(folder, ignore_errors=True)


def test_run_cell_untrusted_refuses_before_anything_runs(canary):
    before = _sha(canary)
    plan = load_plan(
        {
            "name": "t",
            "tool": "fio",
            "targets": [{"name": "disk", "kind": "host"}],
            "params": {"filename": str(canary), "rw": "write", "size": "64k"},
        }
    )
    with CellContext(plan, trusted=False, permissions={"disk": Permissions()}) as ctx:
        outcome = run_cell(plan, expand(plan)[0], ctx)
    assert (outcome.status, outcome.permanent, outcome.phases) == ("failed", True, [])
    assert outcome.error.startswith(f"filename: '{canary}' is outside the scratch directory")
    assert _sha(canary) == before


@pytest.mark.django_db(transaction=True)
def test_api_plan_is_refused_by_a_real_worker_and_leaves_no_effect(team, start_worker, canary):
    from benchapp.models import Cell
    from benchapp.plans import planning
    from benchapp.runs import orchestration
    from tests.support.waiting import finished, wait_for

    team.targets.create(name="disk", kind="host", data_dirs=[str(canary.parent)])
    before = _sha(canary)
    fio = {
        "name": "bad-fio",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {"filename": "/var/tmp/elsewhere", "rw": "write", "size": "64k"},
    }
    pgbench = {
        "name": "shell",
        "tool": "pgbench",
        "targets": [
            {"name": "pg", "kind": "postgres", "host": "127.0.0.1", "port": 5999, "user": "x"}
        ],
        "params": {"script": f"\\shell sh -c 'echo x > {canary}'", "time": 1},
    }
    start_worker("refusals", BENCHBOARD_HEARTBEAT_SECONDS=1, BENCHBOARD_LEASE_SECONDS=6)
    # Past the start's pre-run checks (planning.check refuses both at start,
    # test_api_refuses_what_the_page_refuses): the worker refuses them on its own.
    runs = [
        orchestration.start_run(team, planning.check(plan, team, prerun=False), origin="api")
        for plan in (fio, pgbench)
    ]
    for run in runs:
        wait_for(lambda run=run: finished(run), timeout=120)
    errors = [cell.error for run in runs for cell in run.cells.all()]
    assert [c.status for run in runs for c in run.cells.all()] == [Cell.FAILED, Cell.FAILED]
    assert errors[0].startswith("filename: '/var/tmp/elsewhere' is outside the scratch directory")
    assert errors[1].startswith("script: a pgbench script with \\shell or \\setshell is refused")
    assert _sha(canary) == before
