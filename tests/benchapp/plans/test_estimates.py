"""The one duration estimator: per tool, per cell, per plan."""

from benchapp.plans.estimates import (
    DEFAULT_CELL_SECONDS,
    OVERHEAD_SECONDS,
    cell_seconds,
    plan_duration,
    tool_seconds,
)
from runners.plan import load_plan


def test_each_tool_states_its_duration_in_its_own_parameter():
    assert tool_seconds("sysbench", {"time": 30}) == 30.0
    assert tool_seconds("fio", {"runtime": 7, "time": 99}) == 7.0
    assert tool_seconds("pgbench", {"time": 5}) == 5.0
    assert tool_seconds("mysqlslap", {"time": 5}) is None
    assert tool_seconds("sysbench", {"time": 0}) is None  # 0: no limit
    assert cell_seconds("mysqlslap", {}) == DEFAULT_CELL_SECONDS + OVERHEAD_SECONDS


def test_targets_run_in_parallel_and_overrides_change_a_cells_duration():
    plan = load_plan(
        {
            "name": "d",
            "tool": "fio",
            "targets": [{"name": "a", "kind": "host"}, {"name": "b", "kind": "host"}],
            "params": {
                "directory": "/data",
                "size": "4M",
                "runtime": 10,
                "time_based": True,
                "rw": "read",
            },
            "axes": {"target": ["a", "b"], "bs": ["4k", "8k"]},
            "overrides": [{"when": {"target": "b"}, "set": {"runtime": 20}}],
        }
    )
    duration = plan_duration(plan)
    per_cell_a, per_cell_b = 10 + OVERHEAD_SECONDS, 20 + OVERHEAD_SECONDS
    assert duration.cells == 4 and duration.known
    assert duration.serial_s == 2 * per_cell_a + 2 * per_cell_b
    assert duration.wall_s == 2 * per_cell_b
