"""What validates, runs: every test/mode of every measured tool, against every
kind of target it accepts, either is refused by load_plan with its reason or
builds every command its cells run (runners.phases.tool_steps), so no cell
of a loaded plan ever fails on "internal error: ValidationError".

Table-driven over the registry: each tool's choice parameters (its modes:
fio's rw, pgbench's builtin, mysqlslap's load type...) and sysbench's tests.
"""

from __future__ import annotations

import pytest

from runners.cell import run_cell
from runners.command import Endpoint
from runners.context import CellContext
from runners.errors import ValidationError
from runners.phases import PhaseLimits, PhaseRecord, phase_failure, tool_steps
from runners.plan import expand, load_plan
from runners.tools import MEASURED_TOOLS, get_tool, tool_phases
from runners.tools import sysbench as sysbench_tool

# Params that make a typical valid cell of each tool (fio needs a directory).
BASES = {"fio": {"directory": "/data/fio", "size": "1M"}, "sysbench": {"test": "oltp_read_write"}}
# How the plan's phases are set: the tool's default, none, and once.
PREPARES = ({}, {"prepare": False}, {"prepare": {"once": True}, "cleanup": True})
TARGET_FIELDS = {
    "mysql": {"host": "127.0.0.1", "port": 3306, "user": "bench", "database": "bench"},
    "postgres": {"host": "127.0.0.1", "port": 5432, "user": "bench", "database": "bench"},
    "redis": {"host": "127.0.0.1", "port": 6379},
    "host": {"data_dirs": ["/data"]},
}


def _modes(name: str) -> list[tuple[str, object]]:
    """(param, value) for every value of every choice parameter of the tool,
    and every sysbench test (a text parameter with a known list)."""
    module = get_tool(name)
    modes = [
        (param.name, value)
        for param in module.PARAMS.values()
        if param.kind == "choice"
        for value in param.choices
    ]
    if name == "sysbench":
        modes += [("test", t) for t in sysbench_tool.OLTP_TESTS + sysbench_tool.HOST_TESTS]
    return modes


CASES = [
    (name, kind, param, value)
    for name in MEASURED_TOOLS
    for kind in get_tool(name).TARGET_KINDS
    for param, value in _modes(name)
]


def _doc(name: str, kind: str, params: dict, **extra) -> dict:
    return {
        "name": "modes",
        "tool": name,
        "targets": [{"name": "t", "kind": kind, **TARGET_FIELDS[kind]}],
        "params": params,
        "warmup": {},
        **extra,
    }


@pytest.mark.parametrize(("name", "kind", "param", "value"), CASES)
def test_phase_steps_every_mode_is_refused_at_load_or_builds(name, kind, param, value):
    module = get_tool(name)
    params = {**BASES.get(name, {}), param: value}
    endpoint_fields = {k: v for k, v in TARGET_FIELDS[kind].items() if k != "data_dirs"}
    # A Redis target has no password (redis_benchmark refuses one).
    password = None if kind == "redis" else "pw"
    endpoint = Endpoint(kind=kind, password=password, **endpoint_fields)
    for extra in PREPARES:
        try:
            plan = load_plan(_doc(name, kind, params, **extra))
        except ValidationError as exc:
            assert exc.message and "internal" not in exc.message
            continue
        for cell in expand(plan):
            steps = tool_steps(
                module, cell.params, prepare=plan.prepare, warmup=plan.warmup, cleanup=plan.cleanup
            )
            assert steps[-1].phase in ("measure", "cleanup")
            for step in steps:
                assert step.tool_phase in tool_phases(module, module.validate(step.params))
                module.build(step.params, endpoint, step.tool_phase)


def test_phase_steps_sysbench_cpu_skips_prepare_and_cleanup():
    plan = load_plan(_doc("sysbench", "host", {"test": "cpu", "time": 1}))
    steps = tool_steps(get_tool("sysbench"), expand(plan)[0].params, prepare=plan.prepare)
    assert [s.phase for s in steps] == ["measure"]


def test_phase_steps_refuses_oltp_on_a_host_target_naming_the_target():
    with pytest.raises(ValidationError) as caught:
        load_plan(_doc("sysbench", "host", {"test": "oltp_read_only"}))
    assert caught.value.param == "targets[0]"
    assert "needs a mysql or postgres endpoint" in caught.value.message


def test_phase_steps_refuses_a_test_lacking_a_phase_in_an_axis_cell():
    # oltp on the host target of a target axis: refused naming the cell.
    doc = {
        "name": "two",
        "tool": "sysbench",
        "targets": [
            {"name": "db", "kind": "mysql", **TARGET_FIELDS["mysql"]},
            {"name": "box", "kind": "host"},
        ],
        "params": {"test": "oltp_point_select"},
        "axes": {"target": ["db", "box"]},
    }
    with pytest.raises(ValidationError) as caught:
        load_plan(doc)
    assert "target=box" in caught.value.message


def test_phase_steps_sysbench_cpu_cell_runs_without_prepare_on_a_host_target():
    """The issue's plan (sysbench cpu on a host target, prepare left on)
    runs for real: its measure alone, no internal error, the skip in the facts."""
    plan = load_plan(
        {
            "name": "cpu",
            "tool": "sysbench",
            "targets": [{"name": "box", "kind": "host"}],
            "params": {"test": "cpu", "time": 1, "threads": 1},
            "timeout": 60,
        }
    )
    with CellContext(plan) as ctx:
        outcome = run_cell(plan, expand(plan)[0], ctx)
    assert (outcome.status, outcome.error) == ("succeeded", "")
    assert [record.phase for record in outcome.phases] == ["measure"]
    assert outcome.facts["skipped_phases"] == ["prepare", "cleanup"]
    assert outcome.result.metrics["events_per_s"] > 0


# ---------------------------------------------------------------- limits


def test_phase_limits_share_the_timeout_up_to_the_measure_and_give_tidy_phases_their_own():
    limits = PhaseLimits(20)
    prepare = limits.of("prepare")
    assert 19 < prepare.seconds <= 20 and prepare.why == "the plan's timeout of 20 s"
    limits.deadline -= 25  # the prepare used it all up
    assert limits.of("measure") is None
    assert limits.of("cleanup").seconds == 20
    assert limits.of("restore:start").seconds == 20


def test_phase_limits_default_per_phase_without_a_timeout():
    limits = PhaseLimits(None)
    assert limits.of("cleanup").seconds == 600
    assert limits.of("checksum").seconds == 600
    assert limits.of("prepare").seconds == 3600
    assert limits.of("cleanup").why == "its default limit of 600 s"
    # A plan timeout above a tidy phase's default does not lengthen it.
    assert PhaseLimits(7200).of("cleanup").seconds == 600


def test_phase_failure_names_phase_limit_and_last_output():
    limit = PhaseLimits(20).of("prepare")
    record = PhaseRecord(
        "prepare", "sysbench ... prepare", None, "Creating table 'sbtest1'...\n", "", 0.0, 20.4
    )
    record.timed_out, record.limit = True, limit
    assert phase_failure("prepare", record) == (
        "prepare timed out after 20 s (the plan's timeout of 20 s); "
        "last output: Creating table 'sbtest1'..."
    )
    silent = PhaseRecord("cleanup", "c", None, "", "", 0.0, 3.0, cancelled=True)
    assert phase_failure("cleanup", silent) == "cleanup cancelled after 3 s; no output"
