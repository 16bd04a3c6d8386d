"""The cell profiler (runners.profiler) with real perf, ss, ps and sysbench:
what it attaches to, the profiles it folds, and the warning a machine
without perf gets instead of an error."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess

import pytest

from runners.command import Command
from runners.executors import LocalExecutor, SSHExecutor
from runners.profiler import (
    CellProfiler,
    descendants,
    listener_pids,
    process_table,
    record_command,
    refusal,
)
from runners.profiles import top_frames
from tests.support.sshd import sshd  # noqa: F401

# What perf 6.1 printed to a non-root user attaching to root's mariadbd, paranoid 2.
REFUSED = """Error:
Access to performance monitoring and observability operations is limited.
Consider adjusting /proc/sys/kernel/perf_event_paranoid setting to open
access to performance monitoring and observability operations for processes
without CAP_PERFMON, CAP_SYS_PTRACE or CAP_SYS_ADMIN Linux capability.
perf_event_paranoid setting is 2:
"""


def test_listener_pids_finds_the_process_on_a_port_in_real_ss_output():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        out = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True).stdout
    assert listener_pids(out, port) == [os.getpid()]
    assert listener_pids(out, 1) == []


def test_descendants_of_a_real_process_tree_are_the_tree_only():
    child = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        for _ in range(50):
            out = subprocess.run(
                ["ps", "-e", "-o", "pid=,ppid=,comm="], capture_output=True, text=True
            ).stdout
            table = process_table(out)
            found = descendants(table, child.pid)
            if len(found) == 3:
                break
        assert found[0] == child.pid
        assert [table[p][1] for p in found[1:]] == ["sleep", "sleep"]
        assert os.getpid() not in found
    finally:
        child.kill()
        subprocess.run(["pkill", "-P", str(child.pid)])
        child.wait()


@pytest.mark.parametrize(
    ("output", "says"),
    [
        (REFUSED, "kernel.perf_event_paranoid is 2"),
        ("Error: No permission to enable cpu-clock event.", "another user's process"),
        (
            "Error: The sys_perf_event_open() syscall returned with 95 (Operation not supported)",
            "no perf events",
        ),
        ("", "no samples"),
        ("something else entirely\n", "perf failed on box: something else entirely"),
    ],
)
def test_refusal_says_which_and_how_to_allow_it(output, says):
    message = refusal(output, "box", "bench", "2")
    assert says in message
    if "paranoid" in says:
        assert "sysctl -w kernel.perf_event_paranoid=1" in message and "bench" in message


@pytest.mark.parametrize("pids", [[], [0], [-1], ["1; rm -rf /"], ["12,13"]])
def test_record_command_takes_positive_integer_pids_only(pids):
    with pytest.raises(ValueError):
        record_command(pids, "profile-tool.data")


def test_record_command_is_the_operators_unsandboxed_perf():
    command = record_command([12, 13], "profile-server.data")
    assert command.argv[:7] == ["perf", "record", "-q", "-F", "99", "-g", "-p"]
    assert command.argv[7] == "12,13" and command.sandbox is False


def _profile(executor, argv: list[str]):
    profiler = CellProfiler({"tool": executor, "server": None})
    execution = executor.run(Command(argv=argv), timeout=120, on_start=profiler.attach_tool)
    assert execution.exit_code == 0, execution.output
    profiler.stop()
    return profiler


SYSBENCH = ["sysbench", "--threads=1", "--time=4"]


def test_sysbench_cpu_and_memory_have_different_top_frames():
    with LocalExecutor() as executor:
        cpu = _profile(executor, [*SYSBENCH, "cpu", "run"])
        memory = _profile(executor, [*SYSBENCH, "memory", "run"])
    assert cpu.warnings == [] and memory.warnings == []
    (cpu_tool,), (memory_tool,) = cpu.profiles, memory.profiles
    assert cpu_tool.process == memory_tool.process == "sysbench"
    assert cpu_tool.samples >= 10 and memory_tool.samples >= 10
    cpu_top = [name for name, _ in top_frames(cpu_tool.stacks, 3)]
    memory_top = [name for name, _ in top_frames(memory_tool.stacks, 3)]
    # sysbench is stripped: the prime loop is "[sysbench]"; memory's events are
    # short, so its timing calls (clock_gettime, the histogram) take a share.
    assert cpu_top[0] == "[sysbench]"
    assert cpu_top != memory_top
    assert {"__vdso_clock_gettime", "sb_histogram_update", "clock_gettime"} & set(memory_top)


def test_a_machine_without_perf_gets_the_reason_not_an_error(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "cat", "id", "sysbench", "ps"):
        os.symlink(shutil.which(tool), bin_dir / tool)
    monkeypatch.setenv("PATH", str(bin_dir))
    with LocalExecutor() as executor:
        profiler = _profile(executor, [*SYSBENCH[:2], "--time=1", "cpu", "run"])
    assert profiler.profiles == []
    assert profiler.warnings == [
        "profile: perf is not installed on localhost: install the Debian package "
        "'linux-perf' (or the distribution's perf) for CPU profiles"
    ]


def test_a_tool_over_ssh_is_profiled_on_its_host(sshd):  # noqa: F811
    executor = SSHExecutor(
        sshd.host, sshd.port, sshd.user, private_key=sshd.client_key, known_host_key=sshd.host_key
    )
    with executor:
        profiler = _profile(executor, [*SYSBENCH, "cpu", "run"])
    assert profiler.warnings == []
    (tool,) = profiler.profiles
    assert tool.process == "sysbench" and tool.host == executor.host
    assert tool.samples >= 10


PROFILED_PLAN = {
    "name": "profiled",
    "tool": "sysbench",
    "profile": True,
    "telemetry": False,
    "targets": [{"name": "box", "kind": "host"}],
    "prepare": False,
    "params": {"test": "cpu", "threads": 1, "time": 3},  # long enough for perf on a busy machine
}


@pytest.mark.parametrize(("allowed", "profiled"), [(False, 0), (True, 1)])
def test_the_worker_host_is_profiled_only_when_the_operator_allows_it(allowed, profiled):
    from runners.cell import run_cell
    from runners.cellprofile import LOCAL_OFF
    from runners.context import CellContext
    from runners.plan import expand, load_plan

    plan = load_plan(PROFILED_PLAN)
    with CellContext(plan, profile_local=allowed) as context:
        (spec,) = expand(plan)
        outcome = run_cell(plan, spec, context)
    assert outcome.status == "succeeded", outcome.error  # a profile never fails a cell
    assert len(outcome.profiles) == profiled
    assert (LOCAL_OFF in outcome.warnings) is not allowed
