"""Median and p95 of repeats as statistics; which numeric axes get a log scale."""

import pytest

from benchapp.analysis import charts, results
from benchapp.analysis.pivot import describe, percentile
from tests.benchapp.results_data import make_run


@pytest.mark.parametrize(
    "values, q, expected",
    [
        ([5.0], 95, 5.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.5),
        ([1.0, 2.0, 3.0, 4.0], 95, 3.85),  # between the two highest, as numpy's default
        ([10.0, 1.0, 7.0], 50, 7.0),  # order does not matter
    ],
)
def test_percentile_interpolates_between_ranks(values, q, expected):
    assert percentile(values, q) == pytest.approx(expected)


def test_describe_has_median_and_p95():
    stats = describe([100.0, 101.0, 102.0, 150.0], threshold=1.0)
    assert (stats.median, stats.p95) == (pytest.approx(101.5), pytest.approx(142.8))
    assert stats.to_dict()["median"] == stats.median


@pytest.mark.parametrize(
    "xs, log",
    [
        ([4, 16, 64, 256], True),
        ([1, 2, 4, 8, 16], True),
        ([1, 2, 4, 8], False),
        ([0, 10, 100], False),
    ],
)
def test_log_axis_from_a_decade(xs, log):
    assert charts.spans_decade(xs) is log


def test_median_view_fills_table_and_chart_points(team):
    cells = [
        ({"threads": t}, r, {"tps": v}) for t in (4, 64) for r, v in enumerate((10, 11, 30), 1)
    ]
    run = make_run(team, cells=cells)
    data = results.results([run], {"statistic": "median"})
    assert [row["cells"][0]["text"] for row in data["display"]] == ["11", "11"]
    chart = data["chart"]
    assert chart["point_statistic"] == "median" and chart["log_x"] and chart["x_ticks"] == [4, 64]
    assert chart["cells"][0][0]["median"] == 11
    # n, stddev and cv are not on the metric's scale: the chart keeps the mean
    assert results.results([run], {"statistic": "cv"})["chart"]["point_statistic"] == "mean"


@pytest.mark.parametrize(
    "bandwidths, log",
    [
        ({"4k": 30.0, "32m": 3000.0}, True),  # 100× apart over block sizes: log y
        ({"4k": 30.0, "32m": 2900.0}, False),  # 97×: linear
        ({"4k": 0.0, "32m": 3000.0}, False),  # a zero has no place on a log axis
    ],
)
def test_values_100x_apart_over_a_text_axis_get_a_log_y(team, bandwidths, log):
    cells = [({"bs": bs}, r, {"bw_mb_s": v}) for bs, v in bandwidths.items() for r in (1, 2)]
    run = make_run(team, tool="fio", cells=cells)
    chart = results.results([run], {"rows": ["bs"], "metric": "bw_mb_s"})["chart"]
    assert (chart["numeric_x"], chart["type"]) == (False, "bar")
    assert chart["log_y"] is log
    if log:  # a failed bar's mark sits at the lowest value, the log axis's floor
        assert chart["y_floor"] == min(bandwidths.values())


def test_a_numeric_line_keeps_a_linear_y_whatever_its_span(team):
    cells = [({"threads": t}, 1, {"tps": v}) for t, v in ((1, 10.0), (256, 5000.0))]
    chart = results.results([make_run(team, cells=cells)])["chart"]
    assert chart["type"] == "line" and chart["log_y"] is False
