"""A cell measured with a warmup and stress-ng (real sysbench, real
stress-ng, the real host sampler), recorded as the worker records it: its
timeline JSON carries the phases' boundaries and the warmup's telemetry at
negative seconds, and Chromium draws the phases as shapes on the shared time
axis, with the zoom still taken from the URL."""

from __future__ import annotations

from benchapp.analysis import timeline
from benchapp.models import Cell, Run
from benchapp.runs.recording import record_outcome
from runners.cell import run_cell
from runners.context import CellContext
from runners.plan import expand, load_plan
from tests.support.browser import browser, login, page, screenshot  # noqa: F401

PLAN = {
    "name": "phases",
    "tool": "sysbench",
    "timeout": 300,
    "targets": [{"name": "box", "kind": "host"}],
    "prepare": False,
    "params": {"test": "cpu", "threads": 1, "time": 3, "report_interval": 1},
    "warmup": {"time": 2},
    "stress": {"cpu": 1, "cpu_load": 50},
}


def _recorded_cell(team) -> Cell:
    plan = load_plan(PLAN)
    with CellContext(plan) as context:
        (spec,) = expand(plan)
        outcome = run_cell(plan, spec, context)
    assert outcome.status == "succeeded", outcome.error
    run = Run.objects.create(team=team, name="phases", tool="sysbench", document=PLAN)
    cell = Cell.objects.create(run=run, index=1, key="", status=Cell.RUNNING, attempt=1)
    assert record_outcome(cell, outcome)
    cell.refresh_from_db()
    return cell


def test_the_timeline_marks_warmup_stress_and_measure(page, live_server, owner, team):  # noqa: F811
    cell = _recorded_cell(team)
    data = timeline.cell_timeline(cell)
    assert [p["phase"] for p in data["phases"]] == ["warmup", "stress", "measure"]
    warmup = data["phases"][0]
    assert warmup["start"] < warmup["end"] < 0
    host = data["sources"]["host"]["cpu_busy_pct"]
    assert min(host["x"]) < 0 <= max(host["x"])  # the warmup's seconds, then the measure's
    assert data["sources"]["tool"]  # sysbench's own series, from 0

    login(page, live_server, owner)
    page.goto(f"{live_server.url}/runs/{cell.run_id}/cells/{cell.pk}/artifacts/?x0=-1&x1=2")
    page.wait_for_selector("#cell-timeline[data-ready='1']", state="attached")
    layout = page.evaluate(
        "(() => { const l = document.getElementById('cell-timeline').layout;"
        " return {shapes: l.shapes.map(s => [s.name, s.x0, s.x1]),"
        " labels: l.annotations.map(a => a.text), range: l.xaxis.range}; })()"
    )
    assert layout["shapes"] == [[p["phase"], p["start"], p["end"]] for p in data["phases"]]
    assert layout["labels"] == ["warmup", "stress start", "measure"]
    assert layout["range"] == [-1, 2]
    screenshot(page, "cell-timeline-phases")
    assert page.console_errors == []
