"""The cell page of a run whose series retention downsampled: Chromium draws
the tool series as its minute means over a min..max band, and the page says
what was done (a real browser, a real PostgreSQL)."""

from __future__ import annotations

from benchapp.store import retention
from tests.benchapp.store.test_retention import NOW, finished_run
from tests.support.browser import browser, login, page, screenshot  # noqa: F401


def test_downsampled_series_chart_and_note(page, live_server, owner, team, settings, tmp_path):  # noqa: F811
    from benchapp.settings import artifact_storage

    settings.STORAGES = {**settings.STORAGES, "artifacts": artifact_storage(str(tmp_path), "", "")}
    run = finished_run(team, 40)
    retention.apply(series_days=30, raw_days=0, now=NOW)
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/runs/{run.pk}/cells/{run.cells.get().pk}/artifacts/")
    page.wait_for_selector("#cell-timeline[data-ready='1']", state="attached")
    names = page.evaluate(
        "Array.from(document.getElementById('cell-timeline').data, t => t.name || '')"
    )
    assert names == ["", "minute min–max", "Transactions per second (tps) (minute mean)"]
    note = page.inner_text("[data-role=retention]")
    assert "downsampled to min/mean/max per minute" in note and "30 days" in note
    screenshot(page, "retention-downsampled-cell")
    assert page.console_errors == []
