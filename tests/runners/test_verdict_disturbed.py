"""Whose CPU it was, what a verdict rests on, and table locks (docs/telemetry.md).

Units: the process accounting (runners.proctree) on listings written as the
sampler prints them, and the verdict's order and minimum. Real: cells of
sysbench on this machine, measured beside a stress-ng started outside the
cell (not a child of the process that runs it, like another team's tool),
alone, and saturating the CPU themselves; a MyISAM table updated by many
clients on a private MariaDB.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from benchapp.plans.templates_plans import PROVISION, bind, plan_templates
from runners import hostsampler, proctree, telemetry, verdict
from runners.plan import expand, load_plan
from runners.tools import duration_seconds
from tests.support.cells import cpu_cell, run_plan
from tests.support.private_services import private_mariadb  # noqa: F401

# ------------------------------------------------------------ accounting


def _sample(clock: float, cpu: tuple[int, int], procs: list[tuple], me: int = 100) -> str:
    """One sampler block: /proc/stat's cpu line (busy user ticks, idle ticks)
    and process lines (pid, ppid, state, ticks, name)."""
    user, idle = cpu
    lines = [f"@@ {clock:.2f} 0.00", f"cpu  {user} 0 0 {idle} 0 0 0 0 0 0", f"self {me}"]
    lines += [
        f"proc {pid} {ppid} {state} {ticks} 0 {name}" for pid, ppid, state, ticks, name in procs
    ]
    return "\n".join(lines + ["@@ end"]) + "\n"


# The worker (pid 50) runs the sampler (100) and the tool (200, born in the
# second interval); the server (300) is the worker's child too (a test's own
# MariaDB) but known by its listening socket; 400 is someone else's hog.
_TREE = [(50, 1, "S", 10, "python"), (100, 50, "S", 1, "sh"), (300, 50, "S", 0, "mariadbd")]


def _two_seconds() -> str:
    first = _sample(10.0, (1000, 1000), [*_TREE, (400, 1, "R", 0, "stress-ng")])
    second = _sample(
        11.0, (1150, 1050), [(200, 50, "R", 60, "sysbench"), (300, 50, "S", 30, "mariadbd")]
    )
    second = second.replace("@@ end", "proc 400 1 R 55 0 stress-ng\n@@ end")
    third = _sample(
        12.0,
        (1300, 1100),
        [(200, 50, "R", 120, "sysbench"), (300, 50, "S", 60, "mariadbd"), (400, 1, "R", 110, "x")],
    )
    return first + second + third


def test_cpu_splits_into_the_cells_the_servers_and_the_others():
    owners = proctree.Owners(proctree.PARENT, server_pids=(300,))
    series = telemetry.parse_samples(_two_seconds(), owners=owners)
    # Each interval: 200 ticks in all, 150 of them busy.
    assert series["cpu_cell_pct"] == [pytest.approx(30.0), pytest.approx(30.0)]
    assert series["cpu_server_pct"] == [pytest.approx(15.0), pytest.approx(15.0)]
    assert series["cpu_other_pct"] == [pytest.approx(30.0), pytest.approx(30.0)]
    assert series["runnable_other"] == [1.0, 1.0]  # the hog, running; the tool is the cell's


def test_without_a_known_pid_the_server_is_found_by_its_name():
    owners = proctree.Owners(proctree.PARENT, server_names=("mariadbd",))
    series = telemetry.parse_samples(_two_seconds(), owners=owners)
    assert series["cpu_server_pct"] == [pytest.approx(15.0)] * 2
    # Without any server, its CPU is the cell's: it is the worker's child here.
    alone = telemetry.parse_samples(_two_seconds(), owners=proctree.Owners(proctree.PARENT))
    assert alone["cpu_cell_pct"] == [pytest.approx(45.0)] * 2


def test_over_ssh_the_cell_is_the_connections_sshd_and_its_children():
    """The sampler's parents up to the sshd of its connection: a tool started
    on the same connection is the cell's, one of another login is not."""
    procs = [
        (10, 1, "S", 0, "sshd"),
        (20, 10, "S", 0, "sshd-session"),  # this cell's connection
        (21, 10, "S", 0, "sshd-session"),  # someone else's login
        (30, 20, "S", 0, "sh"),
        (100, 30, "S", 0, "sh"),
    ]
    first = _sample(5.0, (0, 0), procs)
    second = _sample(
        6.0, (100, 100), [(200, 30, "R", 40, "fio"), (210, 21, "R", 60, "make")], me=100
    )
    series = telemetry.parse_samples(first + second, owners=proctree.Owners(proctree.SESSION))
    assert series["cpu_cell_pct"] == [pytest.approx(20.0)]
    assert series["cpu_other_pct"] == [pytest.approx(30.0)]


def test_the_host_sampler_lists_this_machines_processes():
    from runners.executors.local import LocalExecutor

    executor = LocalExecutor()
    try:
        background = executor.start(hostsampler.sampler_command())
        time.sleep(2.5)
        text = executor.stop(background, grace=1.0).stdout
    finally:
        executor.close()
    (_, lines), *_ = telemetry.samples(text)
    listed = {int(line.split()[1]) for line in lines if line.startswith("proc ")}
    assert os.getpid() in listed and 1 in listed
    series = telemetry.parse_samples(text, owners=proctree.Owners())
    assert series["cpu_other_pct"] and all(0 <= v <= 100 for v in series["cpu_other_pct"])


# --------------------------------------------------------------- verdict


def _summary(seconds: int = 6, **means: float) -> dict:
    series = {"t": [float(i) for i in range(1, seconds + 1)]}
    series.update({name: [value] * seconds for name, value in means.items()})
    return telemetry.summarize(series)


def test_disturbed_comes_before_cpu_bound():
    busy = _summary(cpu_busy_pct=100, cpu_cell_pct=60, cpu_server_pct=0, cpu_other_pct=40)
    found = verdict.judge({"host": busy}, None, measured_s=6.2)
    assert [f["code"] for f in found["findings"]] == ["disturbed", "host_cpu"]
    assert found["text"].startswith("disturbed: other processes used 40 % of the host's CPU")
    assert found["findings"][0]["evidence"]["host.cpu_other_pct.mean"] == 40
    assert (found["seconds"], found["samples"]) == (6.2, 6)


def test_a_cpu_busy_with_the_others_work_is_not_the_cells_limit():
    busy = _summary(cpu_busy_pct=100, cpu_cell_pct=30, cpu_server_pct=5, cpu_other_pct=65)
    codes = [f["code"] for f in verdict.judge({"host": busy}, None)["findings"]]
    assert codes == ["disturbed"]
    quiet = _summary(cpu_busy_pct=30, cpu_cell_pct=25, cpu_server_pct=2, cpu_other_pct=3)
    assert verdict.judge({"host": quiet}, None)["limit"] == "none"


def test_under_the_minimum_a_verdict_is_too_short_to_judge():
    busy = _summary(seconds=4, cpu_busy_pct=100, cpu_cell_pct=100)
    found = verdict.judge({"host": busy}, None, measured_s=4.3)
    assert found["limit"] == "too_short" and found["findings"] == []
    assert found["text"].startswith("too short to judge: the measure lasted 4.3 s, 4 per-second")
    assert (found["seconds"], found["samples"]) == (4.3, 4)
    assert verdict.rests_on(found) == "4.3 measured seconds, 4 samples"
    # Long enough, but a starved sampler saw two seconds of it: still too short.
    starved = _summary(seconds=verdict.MIN_SAMPLES - 1, cpu_busy_pct=100, cpu_cell_pct=100)
    assert verdict.judge({"host": starved}, None, measured_s=6.1)["limit"] == "too_short"
    # Four samples of a 6.2 s measure on a busy machine: enough.
    assert verdict.judge({"host": busy}, None, measured_s=6.2)["limit"] == "host_cpu"
    # The measure's length unknown (judged again later): MIN_SECONDS samples.
    assert verdict.judge({"host": busy}, None)["limit"] == "too_short"
    enough = _summary(seconds=5, cpu_busy_pct=100, cpu_cell_pct=100)
    assert verdict.judge({"host": enough}, None)["limit"] == "host_cpu"


def test_table_lock_waits_are_lock_contention():
    db = _summary(table_locks_waited_per_s=300, table_locks_immediate_per_s=100)
    found = verdict.judge({}, db)
    assert found["limit"] == "locks"
    assert "300.0 table lock waits per second (75 % of table locks waited" in found["text"]
    calm = _summary(table_locks_waited_per_s=0.2, table_locks_immediate_per_s=900)
    assert verdict.judge({}, calm)["limit"] == "none"


# ------------------------------------------------------------- real load


class OutsideLoad:
    """stress-ng on every core, started outside this process's tree (setsid
    -f: its parent exits, it belongs to no one here), like another team's
    job on a shared machine."""

    def __init__(self, directory: Path, cpus: int = 2) -> None:
        self.pidfile = directory / "stress.pid"
        script = 'echo $$ > "$0"; exec stress-ng --cpu "$1" --timeout 120 --quiet'
        subprocess.run(
            ["setsid", "-f", "sh", "-c", script, str(self.pidfile), str(cpus)], check=True
        )
        deadline = time.monotonic() + 10
        while not (self.pidfile.exists() and self.pidfile.read_text().strip()):
            assert time.monotonic() < deadline, "stress-ng did not start"
            time.sleep(0.1)
        self.pid = int(self.pidfile.read_text())
        time.sleep(1.0)  # its workers forked and spinning

    def stop(self) -> None:
        try:
            os.kill(self.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        for _ in range(100):
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


def _codes(outcome) -> list[str]:
    return [f["code"] for f in outcome.facts["verdict"]["findings"]]


@pytest.mark.slow
def test_outside_load_is_disturbed_and_the_same_cell_alone_is_not(tmp_path):
    load = OutsideLoad(tmp_path)
    try:
        loaded = cpu_cell(threads=1)
    finally:
        load.stop()
    host = loaded.facts["telemetry"]["host"]
    found = loaded.facts["verdict"]
    print("beside stress-ng:", found["text"])
    assert found["limit"] == "disturbed", found
    other = host["cpu_other_pct"]["mean"]
    assert f"other processes used {other:.0f} %" in found["text"]
    # Two hogs on two cores beside one thread: most of the CPU is theirs, and
    # one thread is at most one core (50 %) of the cell's.
    assert other >= 40 and host["cpu_cell_pct"]["mean"] <= 55, host
    assert host["runnable_other"]["mean"] >= 1.5
    assert "host_cpu" not in _codes(loaded)  # busy, but not with the cell's work
    assert found["samples"] >= verdict.MIN_SAMPLES and found["seconds"] >= verdict.MIN_SECONDS

    alone = cpu_cell(threads=1)
    quiet = alone.facts["telemetry"]["host"]["cpu_other_pct"]["mean"]
    print("alone:", alone.facts["verdict"]["text"], f"(others {quiet:.0f} %)")
    # Other tests share this machine: "disturbed" exactly when they used a fifth.
    assert ("disturbed" in _codes(alone)) == (quiet >= verdict.DISTURBED_PCT)


@pytest.mark.slow
def test_a_tool_that_saturates_the_cpu_itself_is_cpu_bound():
    """Four sysbench threads on two cores: the CPU is busy with the cell's own
    work: CPU-bound, and not disturbed. Other tests share this machine, so
    the verdict is checked against whose CPU it was: CPU-bound exactly when
    the CPU was busy and at least half of it the cell's, disturbed exactly
    when the others used a fifth of it; on a quiet machine, both hold."""
    outcome = cpu_cell(threads=4)
    host = outcome.facts["telemetry"]["host"]
    print(outcome.facts["verdict"]["text"], host["cpu_cell_pct"], host["cpu_other_pct"])
    own, busy = host["cpu_cell_pct"]["mean"], host["cpu_busy_pct"]
    saturated = busy["high_share"] >= verdict.CPU_BUSY_SHARE
    assert ("host_cpu" in _codes(outcome)) == (
        saturated and own >= verdict.OWN_CPU_SHARE * busy["mean"]
    )
    disturbed = host["cpu_other_pct"]["mean"] >= verdict.DISTURBED_PCT
    assert ("disturbed" in _codes(outcome)) == disturbed
    if not disturbed:
        assert outcome.facts["verdict"]["limit"] == "host_cpu"


def _mysql(port: int, statement: str) -> None:
    subprocess.run(
        ["mariadb", "-h127.0.0.1", f"-P{port}", "-uroot", "-e", statement],
        check=True,
        capture_output=True,
        timeout=120,
    )


@pytest.mark.slow
def test_concurrent_updates_of_a_myisam_table_wait_for_table_locks(private_mariadb):  # noqa: F811
    port = private_mariadb.port
    _mysql(port, "CREATE DATABASE sb")
    (outcome,) = run_plan(
        {
            "tool": "sysbench",
            "targets": [
                {
                    "name": "db",
                    "kind": "mysql",
                    "host": "127.0.0.1",
                    "port": port,
                    "user": "root",
                    "database": "sb",
                }
            ],
            "params": {
                "test": "oltp_update_non_index",
                "mysql_storage_engine": "myisam",
                "tables": 1,
                "table_size": 1000,
                "threads": 8,
                "time": 6,
            },
            "prepare": {"once": True},
        }
    )
    assert outcome.status == "succeeded", outcome.error
    db = outcome.facts["telemetry"]["db"]
    (locks,) = [f for f in outcome.facts["verdict"]["findings"] if f["code"] == "locks"]
    print(locks["text"])
    assert "table lock waits per second" in locks["text"]
    assert db["table_locks_waited_per_s"]["mean"] >= verdict.LOCK_WAITS_S
    assert (
        locks["evidence"]["db.table_locks_waited_per_s"] == db["table_locks_waited_per_s"]["mean"]
    )
    # The server's CPU is its own, not "other processes" (found by its port).
    assert outcome.facts["telemetry"]["host"]["cpu_server_pct"]["mean"] > 5


# --------------------------------------------------------------- presets

# mysqlslap runs a number of queries, not a time: its presets' seconds are
# measured by the S1 and S5 tests in test_telemetry.py.
TIME_BASED = [t for t in plan_templates() if t["document"]["tool"] != "mysqlslap"]


@pytest.mark.parametrize("template", TIME_BASED, ids=[t["slug"] for t in TIME_BASED])
def test_every_quick_preset_measures_at_least_five_seconds_a_cell(template):
    roles = {role["name"]: PROVISION for role in template["roles"]}
    plan = load_plan(bind(template, "quick", roles))
    cells = expand(plan)
    seconds = {duration_seconds(plan.tool, cell.params) for cell in cells}
    assert None not in seconds and min(seconds) > verdict.MIN_SECONDS, seconds


def test_the_demo_measures_at_least_five_seconds_a_cell():
    from benchapp.management.commands.demo_run import MARIADB_DEMO, fio_demo

    for document in (MARIADB_DEMO, fio_demo("/tmp/demo")):
        plan = load_plan(document)
        cells = expand(plan)
        assert all(duration_seconds(plan.tool, c.params) > verdict.MIN_SECONDS for c in cells)
        # Within a minute: every cell's measure, one after the other.
        assert sum(duration_seconds(plan.tool, c.params) for c in cells) <= 40
