"""Is a new value still at the old level of a series? The statistics behind
the confirmation and resolution of alerts (docs/history.md). Pure Python +
scipy; no Django.

A level is given by its points (the series before a change). A new mean of k
points is "at that level" when it lies within the 95 % prediction interval
of such a mean: level ± t(0.975, n-1) · sd · sqrt(1/k + 1/n).
"""

from __future__ import annotations

import math
import statistics

import numpy as np
from scipy import special


def prediction_interval(level_points: list[float], k: int = 1) -> tuple[float, float]:
    """95 % interval for the mean of k new points of the level of `level_points`."""
    n = len(level_points)
    if n == 0:
        raise ValueError("no points")
    points = np.asarray(level_points, dtype=float)
    mean = float(points.mean())
    spread = float(points.std(ddof=1)) if n > 1 else 0.0
    half = float(special.stdtrit(max(n - 1, 1), 0.975)) * spread * math.sqrt(1 / k + 1 / n)
    return mean - half, mean + half


def reproduces(before: list[float], after_level: float, value: float, rising: bool) -> bool:
    """A new point `value` confirms a change from `before` to `after_level`
    (upwards when `rising`): outside the before interval on the change's side
    and nearer the new level than the old one."""
    low, high = prediction_interval(before)
    level = statistics.fmean(before)
    outside = value > high if rising else value < low
    return outside and abs(value - after_level) < abs(value - level)


def recovered(before: list[float], after_level: float, recent: list[float]) -> bool:
    """The recent points are back at the before level: their mean lies within
    the before interval and nearer the old level than the changed one."""
    low, high = prediction_interval(before, len(recent))
    value, level = statistics.fmean(recent), statistics.fmean(before)
    return low <= value <= high and abs(value - level) < abs(value - after_level)
