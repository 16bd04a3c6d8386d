"""`python -m runners parse|run` as a user runs it: a real subprocess."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from runners.tools import get_tool
from tests.support.dbtargets import mariadb_target  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def _cli(*args: str, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "runners", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


@pytest.mark.parametrize(
    ("tool", "name"),
    [
        ("fio", "fio_randread_4k_json"),
        ("sysbench", "sysbench_oltp_read_write_run_interval_histogram"),
        ("mysqlslap", "mysqlslap_multi_engine_multi_concurrency"),
        ("pgbench", "pgbench_run_c2_j2_T5"),
    ],
)
def test_cli_parse_prints_the_result_as_json(tool, name):
    output = FIXTURES / tool / f"{name}.out"
    done = _cli("parse", tool, str(output))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == get_tool(tool).parse(output.read_text()).to_dict()


def test_cli_parse_exits_2_with_one_line_on_garbage(tmp_path):
    garbage = tmp_path / "garbage.out"
    garbage.write_text("this is not\nsysbench output\n")
    done = _cli("parse", "sysbench", str(garbage))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(f"{garbage}: cannot parse sysbench output: ")


def test_cli_parse_unknown_tool_exits_2():
    done = _cli("parse", "hammerdb", "/dev/null")
    assert done.returncode == 2
    assert done.stderr.startswith("unknown tool 'hammerdb'; known: ")


def test_cli_run_demo_prints_a_result_document():
    done = _cli("run", "examples/demo.yaml")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["plan"]["name"] == "demo-mysqlslap"
    cells = document["cells"]
    assert [(c["axes"], c["repeat"], c["status"], c["error"]) for c in cells] == [
        ({"load_type": load, "concurrency": clients}, 1, "succeeded", "")
        for load in ("read", "key")
        for clients in (1, 4)
    ]
    for cell in cells:
        assert cell["metrics"]["avg_s"] > 0
        assert cell["groups"][0]["metrics"] == cell["metrics"]
        assert cell["command"].startswith("mysqlslap --defaults-extra-file=")
        assert cell["facts"]["db"]["server_version"].startswith("10.11")
    lines = done.stderr.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(
        "[1/4] load_type=read concurrency=1 target=local-mariadb rep 1 ... ok "
    )


def test_cli_run_exits_1_when_a_cell_fails(tmp_path, mariadb_target):  # noqa: F811
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"""
name: wrong-password
tool: mysqlslap
targets: [{{name: db, host: 127.0.0.1, user: {mariadb_target.user}, credential: db-pw}}]
params: {{number_of_queries: 10}}
""")
    secret = tmp_path / "pw"
    secret.write_text("not-it\n")
    done = _cli("run", str(plan), "--secret", f"db-pw=@{secret}", "--phases")
    assert done.returncode == 1
    (cell,) = json.loads(done.stdout)["cells"]
    assert cell["status"] == "failed"
    assert "Access denied for user" in cell["error"]
    assert "Access denied" in cell["phases"][0]["stdout"] + cell["phases"][0]["stderr"]
    assert "FAILED" in done.stderr and "not-it" not in done.stdout + done.stderr


def test_cli_run_reads_credentials_from_the_environment(tmp_path, mariadb_target):  # noqa: F811
    plan = tmp_path / "plan.yaml"
    plan.write_text(f"""
name: env-password
tool: mysqlslap
targets: [{{name: db, host: 127.0.0.1, user: {mariadb_target.user}, credential: db-pw}}]
params: {{number_of_queries: 10}}
""")
    env = {"PATH": "/usr/bin:/bin", "BENCHBOARD_SECRET_DB_PW": mariadb_target.password}
    done = _cli("run", str(plan), env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["cells"][0]["status"] == "succeeded"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("name: x\ntool: mysqlslap\n", "targets: expected a non-empty list of targets"),
        (
            "name: x\ntool: fio\ntargets: [{name: t, kind: host, password: hunter2}]\n",
            "targets[0].password: secrets are never inline",
        ),
    ],
)
def test_cli_run_exits_2_on_a_bad_plan(tmp_path, content, message):
    plan = tmp_path / "bad.yaml"
    plan.write_text(content)
    done = _cli("run", str(plan))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"{plan}: {message}")


def test_cli_run_refuses_a_secret_on_the_command_line(tmp_path):
    done = _cli("run", "examples/demo.yaml", "--secret", "db-pw=hunter2")
    assert done.returncode == 2
    assert done.stderr == "examples/demo.yaml: --secret: expected NAME=@FILE, got db-pw=...\n"
