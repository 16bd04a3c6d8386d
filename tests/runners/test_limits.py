"""The plan check against the worker's limits (runners/limits.py): each tool's
LIMITS rows, products of parameters, where a tool runs (worker or SSH), and
sizes read as the tools read them."""

from __future__ import annotations

import pytest

from runners.errors import ValidationError
from runners.limits import Limits, size_bytes
from runners.plan import load_plan
from runners.planlimits import check_plan_limits
from runners.tools import TOOLS

LIMITS = Limits(cpus=2.0, memory_mb=4096, pids=512, scratch_mb=1024, seconds=14400)
WORKER = [{"name": "w", "kind": "host"}]
OWN_HOST = [{"name": "w", "kind": "host", "ssh": {"host": "192.0.2.10", "user": "bench"}}]


def _plan(tool: str, params: dict, targets=WORKER, **extra) -> dict:
    client = {} if targets is WORKER else {"client": {"on": "target"}}
    return {"name": "p", "tool": tool, "targets": targets, "params": params, **client, **extra}


def _refusal(document: dict) -> ValidationError:
    with pytest.raises(ValidationError) as refused:
        check_plan_limits(load_plan(document), LIMITS)
    return refused.value


@pytest.mark.parametrize(
    ("value", "expected"),
    [(4096, 4096), ("4k", 4096), ("16MiB", 16 << 20), ("1P", 1 << 50), ("64G", 64 << 30)],
)
def test_sizes_are_read_as_the_tools_read_them(value, expected):
    assert size_bytes(value) == expected


def test_a_list_counts_its_largest_value():
    assert size_bytes([1, 8, 64]) == 64
    assert size_bytes("not a size") is None


BOMBS = [
    # (tool, params, extra plan keys, refused parameter, named setting, words in the message)
    (
        "sysbench",
        {"test": "cpu", "threads": 100000},
        {},
        "params.threads",
        "BENCHBOARD_SANDBOX_PIDS",
        "threads 100000 is over the worker's limit of 512 processes and threads",
    ),
    (
        "sysbench",
        {"test": "memory", "threads": 256, "memory_block_size": "64G"},
        {},
        "params.memory_block_size",
        "BENCHBOARD_SANDBOX_MEMORY_MB",
        "memory_block_size 64G × threads 256 = 16,777,216 MB is over the worker's limit "
        "of 4,096 MB of memory",
    ),
    (
        "sysbench",
        {"test": "memory", "threads": 1024, "memory_block_size": "64G"},
        {},
        "params.threads",
        "BENCHBOARD_SANDBOX_PIDS",
        "threads 1024",
    ),
    (
        "sysbench",
        {
            "test": "fileio",
            "file_total_size": "100T",
            "file_num": 100000,
            "file_test_mode": "seqwr",
        },
        {},
        "params.file_total_size",
        "BENCHBOARD_SANDBOX_SCRATCH_MB",
        "file_total_size 100T is over the worker's limit of 1,024 MB in the scratch directory",
    ),
    (
        "fio",
        {"filename": "f", "size": "1P"},
        {},
        "params.size",
        "BENCHBOARD_SANDBOX_SCRATCH_MB",
        "size 1P is over the worker's limit of 1,024 MB",
    ),
    (
        "fio",
        {"filename": "f", "size": "256M", "numjobs": 8},
        {},
        "params.size",
        "BENCHBOARD_SANDBOX_SCRATCH_MB",
        "size 256M × numjobs 8 = 2,048 MB",
    ),
    (
        "fio",
        {"filename": "f", "size": "16M", "runtime": 604800, "time_based": True},
        {},
        "params.runtime",
        "BENCHBOARD_SANDBOX_SECONDS",
        "runtime 604800 is over the worker's limit of 14,400 s per run",
    ),
    (
        "sysbench",
        {"test": "cpu", "time": 604800},
        {"stress": {"cpu": 4096}},
        "params.time",
        "BENCHBOARD_SANDBOX_SECONDS",
        "time 604800",
    ),
    (
        "sysbench",
        {"test": "cpu", "time": 60},
        {"stress": {"cpu": 4096}},
        "stress.cpu",
        "BENCHBOARD_SANDBOX_PIDS",
        "cpu 4096 is over the worker's limit of 512 processes and threads",
    ),
    (
        "pgbench",
        {"client": 1000, "time": 10},
        {},
        "params.client",
        "BENCHBOARD_SANDBOX_PIDS",
        "client 1000",
    ),
    (
        "mysqlslap",
        {"concurrency": [1, 8, 5000]},
        {},
        "params.concurrency",
        "BENCHBOARD_SANDBOX_PIDS",
        "concurrency [1, 8, 5000]",
    ),
    (
        "redis_benchmark",
        {"clients": 20000},
        {},
        "params.clients",
        "BENCHBOARD_SANDBOX_PIDS",
        "clients 20000",
    ),
]


def _targets_for(tool: str, own_host: bool):
    kind = TOOLS[tool].TARGET_KIND
    target = {"name": "w", "kind": kind, "host": "127.0.0.1"} if kind != "host" else {**WORKER[0]}
    if own_host:
        target = {**target, "host": "192.0.2.10", "ssh": {"host": "192.0.2.10", "user": "bench"}}
    return [target]


@pytest.mark.parametrize(("tool", "params", "extra", "param", "setting", "words"), BOMBS)
def test_resource_bombs_on_the_worker_are_refused_naming_the_limit(
    tool, params, extra, param, setting, words
):
    document = _plan(tool, params, _targets_for(tool, own_host=False), **extra)
    document.pop("client", None)  # the default: the tool runs on the worker
    refused = _refusal(document)
    assert refused.param == param
    assert words in refused.message and setting in refused.message


@pytest.mark.parametrize(("tool", "params", "extra", "param", "setting", "words"), BOMBS)
def test_the_same_bombs_on_a_teams_own_host_are_not_the_workers_business(
    tool, params, extra, param, setting, words
):
    document = _plan(tool, params, _targets_for(tool, own_host=True), **extra)
    document["client"] = {"on": "target"}
    check_plan_limits(load_plan(document), LIMITS)


def test_an_axis_value_over_the_limit_names_its_cell():
    document = _plan("sysbench", {"test": "cpu"}, axes={"threads": [1, 2, 600]})
    refused = _refusal(document)
    assert refused.param == "params.threads" and "(cell threads=600)" in refused.message


def test_warmup_and_prepare_params_count_too():
    warm = _plan("sysbench", {"test": "cpu", "time": 5}, warmup={"threads": 9000})
    assert _refusal(warm).param == "warmup.threads"


def test_stress_on_a_remote_target_with_a_local_client_counts_only_the_tool():
    # stress-ng runs on the target's host (the team's own); the tool on the worker.
    document = _plan("sysbench", {"test": "cpu", "time": 5}, OWN_HOST, stress={"cpu": 4096})
    document.pop("client")
    check_plan_limits(load_plan(document), LIMITS)
    document["params"]["threads"] = 4096
    assert _refusal(document).param == "params.threads"


def test_plans_within_the_limits_pass():
    for document in (
        _plan("sysbench", {"test": "cpu", "threads": 512, "time": 14400}),
        _plan("fio", {"filename": "f", "size": "512M", "numjobs": 2, "runtime": 60}),
        _plan("sysbench", {"test": "memory", "threads": 4, "memory_block_size": "1G"}),
    ):
        check_plan_limits(load_plan(document), LIMITS)


def test_every_limits_row_names_a_parameter_of_its_tool():
    for name, tool in TOOLS.items():
        for use in tool.LIMITS:
            assert use.param in tool.PARAMS, (name, use.param)
            assert all(other in tool.PARAMS for other in use.times), (name, use)
