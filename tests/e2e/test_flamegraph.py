"""Chromium draws a cell's CPU profile as a flame graph and two cells'
profiles as a differential flame graph, under the pages' CSP: real sysbench
cells profiled by real perf (runners.profiler), recorded as the worker
records them."""

from __future__ import annotations

import pytest

from benchapp.models import Cell, Comparison, Run
from benchapp.runs.recording import record_outcome
from runners.cell import run_cell
from runners.context import CellContext
from runners.plan import expand, load_plan
from tests.support.browser import browser, login, page, screenshot  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = {
    "name": "profiled",
    "tool": "sysbench",
    "profile": True,
    "telemetry": False,
    "targets": [{"name": "box", "kind": "host"}],
    "prepare": False,
    "params": {"test": "cpu", "threads": 1, "time": 3},
    "axes": {"cpu_max_prime": [3, 50000]},
}


def _recorded_cells(team) -> list[Cell]:
    plan = load_plan(PLAN)
    run = Run.objects.create(team=team, name="profiled", tool="sysbench", document=PLAN)
    cells = []
    with CellContext(plan, profile_local=True) as context:
        for index, spec in enumerate(expand(plan), 1):
            outcome = run_cell(plan, spec, context)
            assert outcome.status == "succeeded", outcome.error
            cell = Cell.objects.create(
                run=run, index=index, key=spec.key, status=Cell.RUNNING, attempt=1
            )
            assert record_outcome(cell, outcome)
            cells.append(cell)
    return cells


FRAMES = "(sel) => document.querySelectorAll(sel + ' svg g rect').length"
# The differential colours: red where a frame's own share grew (r 220, b below it).
REDDENED = """(sel) => [...document.querySelectorAll(sel + ' svg g rect')].filter(r => {
  const m = (r.getAttribute('fill') || r.style.fill || '').match(/rgb\\((\\d+),\\s*(\\d+),\\s*(\\d+)/);
  return m && +m[1] === 220 && +m[3] < 220; }).length"""


def test_chromium_draws_the_flame_graph_and_the_differential(page, live_server, owner, team):  # noqa: F811
    light, heavy = _recorded_cells(team)
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/runs/{heavy.run_id}/cells/{heavy.pk}/artifacts/")
    page.wait_for_selector(".flamegraph[data-drawn='true']", state="attached")
    assert page.evaluate(FRAMES, ".flamegraph") >= 2  # the root, sysbench and its frames
    assert "[sysbench]" in page.inner_text("[data-role=profile]")
    screenshot(page, "flamegraph-cell")

    comparison = Comparison.objects.create(team=team, name="primes")
    comparison.runs.add(light.run)
    page.goto(
        f"{live_server.url}/comparisons/{comparison.pk}/profiles/"
        f"?before={light.pk}&after={heavy.pk}&role=tool"
    )
    page.wait_for_selector("#profile-diff .flamegraph[data-drawn='true']", state="attached")
    assert page.evaluate(FRAMES, "#profile-diff") >= 2
    assert page.evaluate(REDDENED, "#profile-diff") >= 1
    grew = page.locator("[data-role=profile-changes] tr[data-change=grew]").first.inner_text()
    assert "[sysbench]" in grew
    assert page.locator("tr[data-change=shrank]").count() >= 1
    assert page.console_errors == []
    screenshot(page, "flamegraph-diff")
