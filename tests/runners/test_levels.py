"""Levels of a series: the statistics behind confirming and resolving alerts."""

import pytest

from runners import levels

BEFORE = [100, 101, 99, 100, 100.5, 99.5]


def test_prediction_interval_widens_for_fewer_points_and_one_value():
    low1, high1 = levels.prediction_interval(BEFORE)
    low5, high5 = levels.prediction_interval(BEFORE, k=5)
    assert low1 < low5 < 100 < high5 < high1
    assert levels.prediction_interval([7.0]) == (7.0, 7.0)
    with pytest.raises(ValueError):
        levels.prediction_interval([])


def test_reproduces_and_recovered():
    assert levels.reproduces(BEFORE, 90, 90.5, rising=False)
    assert not levels.reproduces(BEFORE, 90, 99.8, rising=False)
    assert not levels.reproduces(BEFORE, 90, 110, rising=False)
    assert levels.recovered(BEFORE, 90, [100.2, 99.9, 100.1])
    assert not levels.recovered(BEFORE, 90, [91, 90, 90.5])
