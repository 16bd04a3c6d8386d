"""The columnar series of runners.results: rows in and out, parts joined."""

from runners.results import Result, concat_series, rows_to_series, series_points
from tests.support.series import series_to_rows

ROWS = [
    {"t": 1, "tps": 10.0, "latency_p95_ms": 4.5},
    {"t": 2, "tps": 11.0},
    {"t": 3, "tps": 12.0, "latency_p99_ms": 7.0},
]
SERIES = {
    "t": [1, 2, 3],
    "tps": [10.0, 11.0, 12.0],
    "latency_p95_ms": [4.5, None, None],
    "latency_p99_ms": [None, None, 7.0],
}


def test_results_rows_become_columns_with_none_where_a_line_lacks_a_metric():
    assert rows_to_series(ROWS) == SERIES
    assert series_to_rows(SERIES) == ROWS
    assert rows_to_series([]) == {} and Result().to_dict()["series"] == {}


def test_results_series_points_skip_missing_values():
    assert list(series_points(SERIES)) == [
        (1.0, "tps", 10.0), (2.0, "tps", 11.0), (3.0, "tps", 12.0),
        (1.0, "latency_p95_ms", 4.5), (3.0, "latency_p99_ms", 7.0),
    ]  # fmt: skip


def test_results_concat_series_equals_the_rows_read_together():
    parts = [rows_to_series(ROWS[:1]), {}, rows_to_series(ROWS[1:])]
    assert concat_series(parts) == SERIES
    assert concat_series([]) == {}
