"""Failed cells stay in the pivot: a target that failed on every cell keeps
its rows, as marked error cells with the error on hover and in the row."""

import pytest

from benchapp.analysis import results
from benchapp.analysis.pivot import CellInfo, Observation, pivot
from benchapp.models import Cell
from tests.benchapp.results_data import make_run

pytestmark = pytest.mark.django_db

PREPARE_ERROR = "prepare reported an error: FATAL: error 1050 (Table 'sbtest1' already exists)"


def _cell(i, target, threads, status="succeeded", error=""):
    axes = {"threads": threads, "target": target}
    key = f"target={target},threads={threads}"
    return CellInfo(i, 1, "#1 run", key, 1, target, axes, status, error)


def test_a_target_failed_everywhere_keeps_its_rows_as_errors():
    good = [_cell(i, "t1", t) for i, t in enumerate((1, 4))]
    bad = [_cell(10 + i, "t2", t, Cell.FAILED, PREPARE_ERROR) for i, t in enumerate((1, 4))]
    obs = [Observation(c, "", "tps", 100.0 * c.axes["threads"]) for c in good]
    table = pivot(obs, ["target", "threads"], [], "tps", failures=bad)
    assert [r["key"] for r in table["rows"]] == [["t1", 1], ["t1", 4], ["t2", 1], ["t2", 4]]
    t2 = [line[0] for line in table["cells"][2:]]
    assert all(s.n == 0 and s.mean is None for s in t2)
    assert t2[0].errors == [f"target=t2,threads=1 #1: {PREPARE_ERROR}"]
    assert table["cells"][0][0].mean == 100.0 and table["cells"][0][0].errors == []
    # without the failures the target vanishes, as it used to
    assert len(pivot(obs, ["target", "threads"], [], "tps")["rows"]) == 2


def test_a_failed_repeat_beside_values_is_noted_on_the_mean():
    ok = _cell(1, "t1", 1)
    failed = CellInfo(2, 1, "#1 run", ok.key, 2, "t1", ok.axes, Cell.FAILED, "measure timed out")
    table = pivot(
        [Observation(ok, "", "tps", 50.0)], ["threads"], ["target"], "tps", failures=[failed]
    )
    (stats,) = table["cells"][0]
    assert (stats.n, stats.mean) == (1, 50.0)
    assert stats.errors == ["target=t1,threads=1 #2: measure timed out"]


def test_results_page_shows_the_failed_targets_rows(owner_client, team):
    cells = [({"target": "t1", "threads": t}, 1, {"tps": 100.0 * t}) for t in (1, 4)] + [
        ({"target": "t2", "threads": t}, 1, {}, {"status": Cell.FAILED, "error": PREPARE_ERROR})
        for t in (1, 4)
    ]
    run = make_run(team, cells=cells, document={"targets": ["t1", "t2"]})
    data = results.results([run], {"rows": ["target", "threads"], "columns": []})
    rows = data["display"]
    assert [r["label"] for r in rows] == ["t1 · 1", "t1 · 4", "t2 · 1", "t2 · 4"]
    failed = rows[2]["cells"][0]
    assert failed["failed"] and failed["text"] == "failed"
    assert PREPARE_ERROR in failed["title"] and PREPARE_ERROR in failed["error"]
    html = owner_client.get(
        f"/runs/{run.pk}/results/?rows=target&rows=threads&metric=tps"
    ).content.decode()
    assert html.count('data-failed="1"') == 2
    assert "exit 0" not in html
    assert "✗ failed" in html and "Table &#x27;sbtest1&#x27; already exists" in html
