"""The generated year (scripts/bench_scale.py, made by scripts/bench_scale_year.py)
at one day: what it writes is what the app would have written, read back
through the app's own modules."""

import importlib
import sys
from pathlib import Path

import pytest

from benchapp.histories import history
from benchapp.models import CellMeasurements, CellSeries, Run, RunMetric
from benchapp.store import measurestore, summarystore

pytestmark = pytest.mark.django_db(transaction=True)  # the generator COPYs over its own connections

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"


def _bench_scale():
    """scripts/bench_scale_year.py, which imports its studies from beside it."""
    if str(SCRIPTS) not in sys.path:
        sys.path.insert(0, str(SCRIPTS))
    return importlib.import_module("bench_scale_year")


def test_one_generated_day_is_what_the_app_reads():
    scale = _bench_scale()
    scale.TEAMS = 3  # a year has 50; three show the shape in seconds
    made = scale.generate(1, log=lambda text: None)
    studies = {s.name: s for s in scale.STUDIES}
    # Each team: its five plans nightly and one ad-hoc run.
    assert Run.objects.count() == scale.TEAMS * 6
    cells = sum(len(studies[r.plan.study].cells()) for r in Run.objects.select_related("plan"))
    assert made["cells"] == cells == CellMeasurements.objects.count()
    assert made["measurements"] == measurestore.count(Run.objects.values_list("pk", flat=True))
    assert CellSeries.objects.count() == cells * 3

    run = Run.objects.filter(plan__study="s4-engines").first()
    study = studies["s4-engines"]
    values = list(measurestore.read(runs=[run.pk]))
    assert len(values) == len(study.cells()) * len(study.metrics)
    assert {(v.group, v.metric, v.unit) for v in values} == set(study.metrics)
    qps = [v.value for v in values if v.metric == "qps"]
    total = RunMetric.objects.get(run=run, metric="qps")
    assert (total.count, total.total) == (len(qps), pytest.approx(sum(qps)))
    stored = [p for p in summarystore.read([run.plan_id]) if p.run_id == run.pk]
    (point,) = [
        p
        for p in stored
        if (p.cell_key, p.group, p.metric) == ("concurrency=1,queries=1000", "", "qps")
    ]
    repeats = [
        v.value
        for v in values
        if v.metric == "qps"
        and v.group == ""
        and v.cell_id
        in set(run.cells.filter(key="concurrency=1,queries=1000").values_list("pk", flat=True))
    ]
    assert point.count == study.repeats == len(repeats)
    assert point.mean == pytest.approx(sum(repeats) / len(repeats))
    # Every stored point is the one the app computes from the run's measurements.
    computed = sorted(history.run_points(run), key=_figures)
    assert [_figures(p)[:3] for p in sorted(stored, key=_figures)] == [
        _figures(p)[:3] for p in computed
    ]
    assert [x for p in sorted(stored, key=_figures) for x in _figures(p)[3:]] == pytest.approx(
        [x for p in computed for x in _figures(p)[3:]]
    )


def _figures(p) -> tuple:
    return (p.run_id, p.cell_key, p.group, p.metric, p.mean, p.low, p.high, p.count)
