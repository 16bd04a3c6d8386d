"""Frozen cells: a cell's JSON form runs exactly like the expanded plan's cell."""

import json

import pytest

from runners.frozen import SPLIT_VERSION, Parts, freeze, resolve, split, split_freeze, thaw
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


# ---------------------------------------------------------------- stored split


def _through_json(value):
    return json.loads(json.dumps(value))


def test_a_split_cell_resolves_to_its_whole_frozen_form():
    document = json.loads(json.dumps(PLAN))
    document["targets"][1]["ssh"]["known_host_key"] = "ssh-ed25519 " + "A" * 300
    plan = load_plan(document)
    parts = Parts()
    for cell in expand(plan):
        stored = _through_json(split_freeze(plan, cell, parts))
        assert stored["version"] == SPLIT_VERSION
        assert resolve(stored, _through_json(parts)) == _through_json(freeze(plan, cell))
        assert thaw(resolve(stored, parts))[1] == cell


def test_a_large_part_is_stored_once_for_every_cell():
    script = "SELECT 1 /* " + "y" * 5000 + " */"
    plan = load_plan(
        {
            "name": "slap",
            "tool": "mysqlslap",
            "targets": [{"name": "db", "kind": "mysql", "host": "db.example", "user": "u"}],
            "params": {"query": script, "create": "CREATE TABLE t (id INT)"},
            "axes": {"concurrency": list(range(1, 51))},
        }
    )
    parts = Parts()
    rows = [split_freeze(plan, cell, parts) for cell in expand(plan)]
    assert json.dumps(parts).count("y" * 5000) == 1
    assert all(len(json.dumps(row)) < 1500 for row in rows)
    assert all("y" * 100 not in json.dumps(row) for row in rows)


def test_dollar_keys_of_a_plan_survive_and_never_read_as_references():
    frozen = {
        "version": 1,
        "cell": {"params": {}},
        "plan": {"provision": {"$part": "not-ours", "$$x": "z" * 300, "a": "b" * 300}},
    }
    parts = Parts()
    stored = {**split(frozen, parts), "version": SPLIT_VERSION}
    assert resolve(_through_json(stored), _through_json(parts)) == frozen


def test_a_whole_cell_reads_as_it_is_and_a_split_one_only_resolved():
    plan = load_plan(PLAN)
    cell = expand(plan)[0]
    whole = freeze(plan, cell)
    assert resolve(whole, {}) is whole
    stored = split_freeze(plan, cell, Parts())
    with pytest.raises(ValueError, match="version 2"):
        thaw(stored)
    with pytest.raises(ValueError, match="which the run lacks"):
        resolve(stored, {})
