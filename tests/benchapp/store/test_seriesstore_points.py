"""The columnar series of a Result (runners.results.Series) is stored (one
CellSeries row per metric) and read back as the same points as the series of
one dict per interval line it replaced.

tests/fixtures/series_points.json holds, for every real capture whose parser
reports a series, the (t, metric, value) points the row-per-line series gave
(written by that parser, before the series became columnar).
"""

import json
from pathlib import Path

import pytest

from benchapp.models import CellSeries
from benchapp.runs.recording import series_rows
from benchapp.store import seriesstore
from runners.errors import ParseError
from runners.results import rows_to_series
from runners.tools import TOOLS
from tests.benchapp.results_data import make_run
from tests.support.series import series_to_rows

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BEFORE = json.loads((FIXTURES / "series_points.json").read_text())


def _parse(capture: str):
    tool, name = capture.split("/")
    return TOOLS[tool].parse((FIXTURES / tool / name).read_text())


@pytest.mark.parametrize("capture", sorted(BEFORE))
def test_series_points_stored_equal_the_row_form_points(team, capture):
    cell = make_run(team, cells=[({}, 1, {})]).cells.get()
    CellSeries.objects.bulk_create(series_rows(cell, 1, _parse(capture)))
    stored = seriesstore.points(cell.pk, 1)
    assert sorted(stored) == sorted(tuple(point) for point in BEFORE[capture])


@pytest.mark.parametrize("capture", sorted(BEFORE))
def test_series_survives_json_and_the_row_view(capture):
    series = _parse(capture).series
    assert json.loads(json.dumps(_parse(capture).to_dict()))["series"] == series
    assert len({len(column) for column in series.values()}) == 1
    assert rows_to_series(series_to_rows(series)) == series


def test_every_capture_with_a_series_has_its_points_before():
    """Every capture with a series is checked above (a new one adds its points)."""
    with_series = set()
    for tool in TOOLS:
        for path in sorted((FIXTURES / tool).glob("*.out")):
            try:
                if _parse(f"{tool}/{path.name}").series:
                    with_series.add(f"{tool}/{path.name}")
            except ParseError:
                continue
    assert with_series == set(BEFORE)
