"""Frozen cells: a cell's JSON form runs exactly like the expanded plan's cell."""

import json

import pytest

from runners.frozen import freeze, thaw
from runners.plan import expand, load_plan

PLAN = {
    "name": "frozen",
    "tool": "sysbench",
    "targets": [
        {"name": "db-a", "kind": "mysql", "host": "127.0.0.1", "port": 3306, "user": "root"},
        {
            "name": "db-b",
            "kind": "mysql",
            "host": "127.0.0.1",
            "port": 3307,
            "user": "bench",
            "ssh": {"host": "127.0.0.1", "port": 2222, "user": "bench", "credential": "key"},
        },
    ],
    "params": {"test": "oltp_read_only", "time": 5, "threads": 1},
    "axes": {"target": ["db-a", "db-b"], "threads": [1, 8]},
    "overrides": [{"when": {"threads": 8}, "set": {"time": 9}}],
    "repeat": 2,
    "warmup": {"time": 2},
    "timeout": 600,
}


def test_a_frozen_cell_thaws_to_the_same_cell_and_phases():
    plan = load_plan(PLAN)
    for cell in expand(plan):
        thawed_plan, thawed = thaw(json.loads(json.dumps(freeze(plan, cell))))
        assert thawed == cell
        assert thawed_plan.target(cell.target) == plan.target(cell.target)
        assert [t.name for t in thawed_plan.targets] == [cell.target]
        assert (
            thawed_plan.tool,
            thawed_plan.params,
            thawed_plan.warmup,
            thawed_plan.timeout,
            thawed_plan.prepare,
            thawed_plan.client,
        ) == (plan.tool, plan.params, plan.warmup, plan.timeout, plan.prepare, plan.client)
    overridden = next(c for c in expand(plan) if c.axes["threads"] == 8)
    assert thaw(freeze(plan, overridden))[1].params["time"] == 9


def test_an_unknown_version_is_refused_by_name():
    plan = load_plan(PLAN)
    data = {**freeze(plan, expand(plan)[0]), "version": 99}
    with pytest.raises(ValueError, match="version 99"):
        thaw(data)
