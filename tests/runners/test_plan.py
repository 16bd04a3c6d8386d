"""Plan files: the five scenarios load as written, bad documents are refused
with the key path, expansion and orders, round trip."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from runners.errors import ValidationError
from runners.plan import (
    combination_key,
    count_cells,
    dump_plan,
    expand,
    load_plan,
    substitute,
    with_seed,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# The plans of ../shared/scenarios.md, verbatim.
SCENARIOS = {
    "S1": """
name: rds-classes-mysqlslap
tool: mysqlslap
targets:
  - name: micro
    provision: {provider: aws_rds, engine: mysql, instance_class: db.t1.micro, allocated_storage: 5,
                region: ap-northeast-1, availability_zone: ap-northeast-1c}
  - name: m2-4xlarge-iops
    provision: {provider: aws_rds, engine: mysql, instance_class: db.m2.4xlarge, allocated_storage: 1000,
                iops: 10000, region: ap-northeast-1, availability_zone: ap-northeast-1c}
client:
  provision: {provider: aws_ec2, instance_type: m3.2xlarge, availability_zone: ap-northeast-1c}
params: {engine: innodb, auto_generate_sql: true, add_autoincrement: true, number_char_cols: 3,
         number_int_cols: 5, number_of_queries: 10000, concurrency: 3, iterations: 10}
axes:
  target: [micro, m2-4xlarge-iops]
  load_type: [read, write, key, update, mixed]
overrides:
  - when: {load_type: key}
    set: {number_of_queries: 100000}
""",
    "S2": """
name: oltp-vs-cpu-stress
tool: sysbench
targets:
  - {name: db8, kind: mysql, host: db8.internal, port: 3306, user: sbuser, credential: sb-password,
     ssh: {host: db8.internal, user: ops, credential: ops-key}}
client: {on: target}          # sysbench runs on the database host itself
params: {test: oltp_read_write, tables: 30, table_size: 1000000, threads: 30, time: 600, report_interval: 1}
prepare: {once: true, snapshot_datadir: true}   # restore before every cell
stress: {cpu_load: 90}
axes:
  stress.cpu: [0, 2, 4, 6, 8]
repeat: 2
""",
    "S3": """
name: ebs-raid0-fio
tool: fio
targets:
  - name: c1-medium
    provision: {provider: aws_ec2, instance_type: c1.medium, region: ap-northeast-1,
                volumes: {count: "${volumes}", size_gb: 20, type: standard, raid: 0,
                          filesystem: xfs, mount: /data}}
client: {on: target}
params: {filename: /data/testfio, direct: 1, bs: 4k, size: 5G, numjobs: 64, runtime: 16, group_reporting: true}
axes:
  volumes: [1, 2, 4, 8, 16]
  rw: [read, write, randread, randwrite]
""",
    "S4": """
name: managed-mysql-threads
tool: sysbench
sysbench_version: "0.4"
targets:
  - {name: rds-mysql, kind: mysql, host: rds.example.internal, user: test, credential: test-pw, price_per_month: 187.18}
  - {name: galera-3node, kind: mysql, nodes: [n1.internal, n2.internal, n3.internal], via: haproxy,
     host: haproxy.internal, user: test, credential: test-pw, price_per_month: 31200, currency: JPY}
params: {test: oltp, oltp_table_size: 1000000, max_time: 120}
warmup: {threads: 16, read_only: true}
axes:
  target: [rds-mysql, galera-3node]
  threads: [4, 16, 64, 128, 256]
  read_only: [true, false]
""",
    "S5": """
name: myisam-update
tool: mysqlslap
targets: [{name: m2-4xlarge, kind: mysql, host: db.internal, user: scott, credential: scott-pw}]
params: {engine: myisam, auto_generate_sql: true, add_autoincrement: true, number_int_cols: 3,
         number_char_cols: 8, concurrency: 8, auto_generate_sql_execute_number: 10000, load_type: update}
axes:
  auto_generate_sql_write_number: [10000, 1000000]
repeat: 3
""",
}


@pytest.mark.parametrize(
    ("scenario", "cells"), [("S1", 10), ("S2", 10), ("S3", 20), ("S4", 20), ("S5", 6)]
)
def test_scenario_plan_expands_to_its_cell_count(scenario, cells):
    plan = load_plan(SCENARIOS[scenario])
    assert count_cells(plan) == cells
    assert len(expand(plan)) == cells


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_scenario_plan_round_trips_through_dump(scenario):
    plan = load_plan(SCENARIOS[scenario])
    assert load_plan(dump_plan(plan)) == plan
    assert expand(load_plan(dump_plan(plan))) == expand(plan)


def test_s1_key_override_sets_number_of_queries():
    cells = expand(load_plan(SCENARIOS["S1"]))
    queries = {(c.target, c.axes["load_type"]): c.params["number_of_queries"] for c in cells}
    assert queries == {
        (target, load): 100000 if load == "key" else 10000
        for target in ("micro", "m2-4xlarge-iops")
        for load in ("read", "write", "key", "update", "mixed")
    }
    assert cells[0].key == "load_type=read,target=micro"
    assert cells[0].params["auto_generate_sql_load_type"] == "read"


def test_s2_stress_axis_and_repeats_are_sequential():
    plan = load_plan(SCENARIOS["S2"])
    cells = expand(plan)
    assert [(c.stress["cpu"], c.repeat) for c in cells] == [
        (cpu, rep) for cpu in (0, 2, 4, 6, 8) for rep in (1, 2)
    ]
    assert {c.stress["cpu_load"] for c in cells} == {90}
    assert plan.client.kind == "on" and plan.client.target == "target"
    assert plan.prepare.once and plan.prepare.snapshot_datadir
    assert plan.prepare.snapshot_path == "/var/lib/mysql.benchboard-snapshot"


def test_s3_volumes_axis_substitutes_into_provision():
    plan = load_plan(SCENARIOS["S3"])
    cells = expand(plan)
    assert [c.volumes for c in cells[::4]] == [1, 2, 4, 8, 16]
    spec = substitute(plan.targets[0].provision, cells[8])
    assert spec["volumes"]["count"] == 4
    assert plan.targets[0].kind == "host"


def test_s4_uses_legacy_sysbench_and_warmup():
    plan = load_plan(SCENARIOS["S4"])
    cells = expand(plan)
    assert {c.params["sysbench_version"] for c in cells} == {"0.4"}
    assert cells[0].params["table_size"] == 1000000
    assert plan.warmup == {"threads": 16, "read_only": True}
    assert plan.target("galera-3node").nodes == ("n1.internal", "n2.internal", "n3.internal")
    assert plan.target("galera-3node").currency == "JPY"


def test_s5_repeats_each_write_number_three_times():
    cells = expand(load_plan(SCENARIOS["S5"]))
    assert [(c.params["auto_generate_sql_write_number"], c.repeat) for c in cells] == [
        (10000, 1),
        (10000, 2),
        (10000, 3),
        (1000000, 1),
        (1000000, 2),
        (1000000, 3),
    ]


# ---------------------------------------------------------------- refusals

BASE = {
    "name": "x",
    "tool": "mysqlslap",
    "targets": [{"name": "a", "host": "127.0.0.1", "user": "root"}],
    "params": {"number_of_queries": 10},
}


def _with(path: str, value):
    """BASE with value set at a dotted path ("targets.0.port"); None deletes."""
    document = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node = document
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    if value is None:
        del node[last]
    elif isinstance(node, list):
        node.append(value)
    else:
        node[last] = value
    return document


SECRET_HINT = (
    "secrets are never inline: use credential (the name of a stored credential) "
    "or password_env (the name of an environment variable)"
)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            _with("targets.+", {"name": "b", "host": "h", "port": "x"}),
            "targets[1].port: expected an integer, got 'x'",
        ),
        (_with("targets.0.password", "s3cret"), f"targets[0].password: {SECRET_HINT}"),
        (
            _with("targets.0.ssh", {"user": "x", "password": "y"}),
            f"targets[0].ssh.password: {SECRET_HINT}",
        ),
        (_with("params.mysql_password", "y"), f"params.mysql_password: {SECRET_HINT}"),
        (
            _with("tool", "hammerdb"),
            "tool: 'hammerdb' is not allowed: expected one of mysqlslap, sysbench, fio, pgbench, redis_benchmark",
        ),
        (_with("tool", None), "tool: required"),
        (_with("targets", None), "targets: expected a non-empty list of targets"),
        (
            _with("axes", {"load_type": ["read", "scan"]}),
            "axes.load_type[1]: 'scan' is not allowed: expected one of read, write, key, update, mixed",
        ),
        (
            _with("axes", {"load_type": ["read", "key"]}),
            (
                "axes.load_type[1]: key needs add_autoincrement: true (or auto_generate_sql_guid_primary) "
                "(cell load_type=key)"
            ),
        ),
        (
            _with("axes", {"target": ["a", "nope"]}),
            "axes.target[1]: 'nope' is not a target; targets: a",
        ),
        (
            _with("axes", {"concurrency": []}),
            "axes.concurrency: expected a non-empty list of values",
        ),
        (_with("axes", {"concurrency": [1, 1]}), "axes.concurrency[1]: 1 is listed twice"),
        (
            _with("axes", {"stress.cpu": [-1]}),
            "axes.stress.cpu[0]: -1 is out of range: expected between 0 and 4096",
        ),
        (
            _with("client", {"on": "nope"}),
            "client.on: 'nope' is not a target; expected `target` (each cell's own) or one of: a",
        ),
        (
            _with("client", "remote"),
            "client: expected local, {on: TARGET}, {ssh: {...}} or {provision: {...}}",
        ),
        (
            _with("order", "random"),
            "order: 'random' is not allowed: expected one of sequential, interleaved, shuffled",
        ),
        (_with("repeat", 0), "repeat: 0 is out of range: expected between 1 and 1000"),
        (
            _with("targets.+", {"name": "b", "host": "h"}),
            "axes: several targets: add a `target` axis listing the ones to run",
        ),
        (_with("targets.+", {"name": "a", "host": "h"}), "targets[1].name: 'a' is used twice"),
        (_with("targets.0.kind", "postgres"), "targets[0].kind: mysqlslap needs a mysql target"),
        (
            _with("targets.0.host", "a;rm -rf /"),
            "targets[0].host: 'a;rm -rf /' is not allowed: expected a host name or IP address",
        ),
        (
            _with("targets.0.password_env", "1X"),
            (
                "targets[0].password_env: '1X' is not allowed: "
                "expected an environment variable name (letters, digits, _)"
            ),
        ),
        (
            _with("overrides", [{"when": {"load_type": "key"}, "set": {"number_of_queries": 5}}]),
            "overrides[0].when.load_type: not an axis; axes: none",
        ),
        (
            _with("prepare", {"datadir": "/"}),
            "prepare.datadir: '/' is not allowed for a data snapshot",
        ),
        (
            _with("stress", {"cpu": 2, "load": 3}),
            "stress.load: unknown key; known: cpu, cpu_load, taskset",
        ),
        (
            _with("params.concurrency", "many"),
            "params.concurrency: 'many' is not allowed: expected an integer >= 1 <= 100000",
        ),
        (_with("sysbench_version", "0.4"), "sysbench_version: only allowed with tool: sysbench"),
    ],
)
def test_load_plan_refuses_with_key_path(document, message):
    with pytest.raises(ValidationError) as caught:
        load_plan(document)
    assert str(caught.value) == message


def test_load_plan_lists_known_keys_for_a_typo():
    with pytest.raises(ValidationError) as caught:
        load_plan(_with("repeats", 2))
    assert str(caught.value).startswith("repeats: unknown key; known: axes, cleanup, client,")


def test_load_plan_says_no_known_param_is_close_to_a_bogus_one():
    with pytest.raises(ValidationError) as caught:
        load_plan(_with("params.bogus", 1))
    assert caught.value.param == "params.bogus"
    assert "unknown mysqlslap parameter and none of its" in str(caught.value)
    assert "add_autoincrement" not in str(caught.value)  # not the list of all names


@pytest.mark.parametrize(
    ("typo", "suggestion"),
    [
        ("concurency", "did you mean concurrency?"),
        ("number_of_query", "did you mean number_of_queries"),
        ("iteration", "did you mean iterations"),
    ],
)
def test_load_plan_suggests_the_closest_param_names(typo, suggestion):
    with pytest.raises(ValidationError) as caught:
        load_plan(_with(f"params.{typo}", 1))
    message = str(caught.value)
    assert suggestion in message and "known:" not in message
    assert message.count(",") == 0  # at most a few names, joined by "or"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "name: [x",
            # libyaml's wording (runners/safeyaml.py reads plans with its C parser)
            "cannot read the plan at line 2, column 1: did not find expected ',' or ']'",
        ),
        ("- a\n- b", "a plan must be a mapping of keys (name, tool, targets, ...)"),
        ("", "a plan must be a mapping of keys (name, tool, targets, ...)"),
    ],
)
def test_load_plan_refuses_unreadable_text(text, message):
    with pytest.raises(ValidationError) as caught:
        load_plan(text)
    assert str(caught.value) == message


def test_load_plan_reads_json_text():
    import json

    assert load_plan(json.dumps(BASE)) == load_plan(BASE)


# ---------------------------------------------------------------- orders

ORDERED = {**BASE, "axes": {"concurrency": [1, 2], "iterations": [1, 2]}, "repeat": 2}


def _order(order: str, seed: int | None = None) -> list[tuple[str, int]]:
    plan = load_plan({**ORDERED, "order": order, **({"seed": seed} if seed is not None else {})})
    return [(c.key, c.repeat) for c in expand(plan)]


def test_expand_sequential_keeps_repeats_together():
    assert _order("sequential") == [
        ("concurrency=1,iterations=1", 1),
        ("concurrency=1,iterations=1", 2),
        ("concurrency=1,iterations=2", 1),
        ("concurrency=1,iterations=2", 2),
        ("concurrency=2,iterations=1", 1),
        ("concurrency=2,iterations=1", 2),
        ("concurrency=2,iterations=2", 1),
        ("concurrency=2,iterations=2", 2),
    ]


def test_expand_interleaved_runs_each_repeat_across_all_combinations():
    assert _order("interleaved") == [
        ("concurrency=1,iterations=1", 1),
        ("concurrency=1,iterations=2", 1),
        ("concurrency=2,iterations=1", 1),
        ("concurrency=2,iterations=2", 1),
        ("concurrency=1,iterations=1", 2),
        ("concurrency=1,iterations=2", 2),
        ("concurrency=2,iterations=1", 2),
        ("concurrency=2,iterations=2", 2),
    ]


def test_expand_shuffled_is_reproducible_from_the_seed():
    first, again = _order("shuffled", seed=7), _order("shuffled", seed=7)
    assert first == again
    assert sorted(first) == sorted(_order("sequential"))
    assert _order("shuffled", seed=8) != first


def test_expand_seed_argument_and_with_seed_agree():
    plan = load_plan({**ORDERED, "order": "shuffled"})
    seeded = with_seed(plan, 7)
    assert seeded.document["seed"] == 7
    assert expand(plan, seed=7) == expand(seeded) == expand(load_plan(dump_plan(seeded)))


def test_expand_indexes_are_one_based_run_order():
    cells = expand(load_plan({**ORDERED, "order": "shuffled", "seed": 3}))
    assert [c.index for c in cells] == list(range(1, 9))


def test_expand_typed_axis_values_match_overrides():
    plan = load_plan(
        {
            **BASE,
            "axes": {"concurrency": ["1", 4]},
            "overrides": [{"when": {"concurrency": 1}, "set": {"iterations": 3}}],
        }
    )
    assert [(c.axes["concurrency"], c.params.get("iterations")) for c in expand(plan)] == [
        (1, 3),
        (4, None),
    ]


def test_plan_accepts_on_key_read_by_yaml_as_boolean():
    # YAML 1.1 reads `on` as true; `client: {on: target}` must still mean the target.
    plan = load_plan(
        "name: x\ntool: fio\ntargets: [{name: t, kind: host}]\n"
        "client: {on: target}\nparams: {filename: /tmp/f}\n"
    )
    assert plan.document["client"] == {"on": "target"}
    assert load_plan(dump_plan(plan)) == plan


# ---------------------------------------------------------------- examples


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_example_plan_loads_and_expands(path):
    plan = load_plan(path.read_text())
    assert len(expand(plan)) == count_cells(plan) > 0
    assert yaml.safe_load(dump_plan(plan)) == plan.document


def test_example_s4_legacy_plan_expands_like_the_scenario():
    legacy = load_plan((EXAMPLES / "s4-managed-mysql-threads-0.4.yaml").read_text())
    assert [c.params for c in expand(legacy)] == [
        c.params for c in expand(load_plan(SCENARIOS["S4"]))
    ]


@pytest.mark.parametrize(
    ("axes", "key"),
    [
        ({"direct": True, "sync": False}, "direct=true,sync=false"),
        ({"ratio": 0.5, "size": 2.0}, "ratio=0.5,size=2.0"),
        ({"b": 1, "a": "x"}, "a=x,b=1"),
        ({}, ""),
    ],
)
def test_combination_key_spells_booleans_and_floats_one_way(axes, key):
    assert combination_key(axes) == key
