"""Running real cells in runner tests, without Django: a plan document
through runners.cell.run_cell on this host, and the sysbench CPU cell the
telemetry and verdict tests load the machine with."""

from runners.cell import run_cell
from runners.context import CellContext
from runners.plan import expand, load_plan


def run_plan(plan_doc: dict, **ctx) -> list:
    """Every cell of the plan document (a 300 s timeout), run in order in one
    CellContext (ctx: its keyword arguments, e.g. limits); their outcomes."""
    plan = load_plan({"name": "t", "timeout": 300, **plan_doc})
    with CellContext(plan, **ctx) as context:
        return [run_cell(plan, cell, context) for cell in expand(plan)]


def cpu_cell(threads: int, **ctx):
    """A 6 s sysbench CPU cell of `threads` threads on this host (a CPU test
    has no data to prepare); its outcome, which must have succeeded."""
    (outcome,) = run_plan(
        {
            "tool": "sysbench",
            "targets": [{"name": "box", "kind": "host"}],
            "prepare": False,
            "params": {"test": "cpu", "threads": threads, "time": 6},
        },
        **ctx,
    )
    assert outcome.status == "succeeded", outcome.error
    return outcome
