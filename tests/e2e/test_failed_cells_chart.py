"""A target that failed on every cell, in a real browser: its rows are
marked error cells in the table (error on hover and in the row) and its
points are marked in the chart, the error in the hover."""

import pytest

from benchapp.models import Cell
from tests.benchapp.results_data import make_run
from tests.support.browser import browser, login, page, screenshot  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

ERROR = "prepare reported an error: FATAL: error 1213: Deadlock found when trying to get lock"


def test_a_target_failed_everywhere_is_marked_in_table_and_chart(page, live_server, owner, team):  # noqa: F811
    cells = [({"target": "single", "threads": t}, 1, {"tps": 100.0 * t}) for t in (1, 4, 16)]
    cells += [
        ({"target": "cluster", "threads": t}, 1, {}, {"status": Cell.FAILED, "error": ERROR})
        for t in (1, 4, 16)
    ]
    run = make_run(team, name="s4", cells=cells, document={"targets": ["single", "cluster"]})
    login(page, live_server, owner)
    page.goto(
        f"{live_server.url}/runs/{run.pk}/results/"
        "?rows=threads&columns=target&metric=tps&chart_x=threads"
    )
    # the table: the failed target's column is there, every cell marked, the error in the row
    headers = page.locator("table.pivot thead th").all_text_contents()
    assert "cluster" in headers and "single" in headers
    failed = page.locator("table.pivot td.failed-cell")
    assert failed.count() == 3
    assert ERROR in failed.first.get_attribute("title")
    assert "Deadlock found" in failed.first.locator(".cell-error").text_content()
    assert "exit 0" not in page.content()
    # the chart: the failed series' points as marks whose hover is the error
    page.wait_for_function("document.getElementById('chart-main').dataset.ready === '1'")
    traces = page.evaluate(
        "Array.from(document.getElementById('chart-main').data)"
        ".map(t => ({name: t.name, x: t.x, y: t.y, text: t.text || null}))"
    )
    marks = [t for t in traces if t["name"] == "cluster (failed)"]
    assert len(marks) == 1 and marks[0]["x"] == [1, 4, 16]
    assert all(ERROR in text for text in marks[0]["text"])
    line = next(t for t in traces if t["name"] == "cluster")
    assert line["y"] == [None, None, None]  # a gap, not a zero
    point = page.locator("#chart-main .scatterlayer .trace").last.locator(".point").first
    point.hover(force=True)
    page.wait_for_selector("#chart-main .hoverlayer .hovertext", state="attached")
    assert "Deadlock found" in page.locator("#chart-main .hoverlayer").text_content()
    screenshot(page, "results-failed-target")
