"""Export of a run in PKB sample JSON lines and Bencher Metric Format."""

import json

import pytest

from benchapp import formats
from tests.benchapp.results_data import make_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(team):
    return make_run(team, cells=[({"threads": 4}, 1, {"tps": 100.0}),
                                 ({"threads": 4}, 2, {"tps": 120.0}),
                                 ({"threads": 8}, 1, {"tps": 200.0, "latency_avg_ms": 4.0})])


def test_pkb_lines(run):
    samples = [json.loads(line) for line in formats.to_pkb_lines(run).splitlines()]
    assert [(s["metric"], s["value"]) for s in samples] == [
        ("tps", 100.0), ("tps", 120.0), ("latency_avg_ms", 4.0), ("tps", 200.0)]
    first = samples[0]
    assert first["metadata"]["threads"] == 4 and first["metadata"]["cell_key"] == "threads=4"
    assert first["metadata"]["repeat"] == 1
    assert "|threads:4|" in first["labels"]
    assert first["timestamp"] == run.created_at.timestamp()
    assert len({s["sample_uri"] for s in samples}) == 4


def test_bmf(run):
    assert formats.to_bmf(run) == {
        "threads=4": {"tps": {"value": 110.0, "lower_value": 100.0, "upper_value": 120.0}},
        "threads=8": {"latency_avg_ms": {"value": 4.0, "lower_value": 4.0, "upper_value": 4.0},
                      "tps": {"value": 200.0, "lower_value": 200.0, "upper_value": 200.0}},
    }
