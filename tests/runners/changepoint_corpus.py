"""A seeded corpus of benchmark histories with known changes, by class, and
the scores of a detector on it (used by tests/runners/test_changepoint_corpus.py
and bench/changepoint.py).

Every history is a level times (1 + relative Gaussian noise); the noise is
drawn log-uniformly from 0.5 % to 10 % per history. A change of the mean is
drawn as a multiple of that noise (2 to 6 standard deviations) and never
below 2 %: with 0.5 % noise a 2 % step, with 10 % noise a 20-60 % one, so
each change is one a nightly series of that noise could show. Classes:

- flat:       200-400 points, no change (false alarms only).
- steps:      100-300 points, 1-3 level shifts, at least 20 points apart.
- outliers:   like steps, plus 1-3 one-point outliers of 6-15 standard
              deviations, one of them right next to the first step.
- variance:   150-300 points whose spread grows or shrinks 2.5-4x at 1-2
              points while the mean stays: not a change of the mean, so any
              alert is a false one.
- excursions: 100-250 points in which the level moves for 5-9 runs and comes
              back, once or twice: both edges are changes.

A detected change matches a true one within TOLERANCE points (each true
change matched at most once, nearest first). False alarms are counted per
100 points of change-free history (the flat and variance classes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

TOLERANCE = 3
CLASSES = ("flat", "steps", "outliers", "variance", "excursions")
CHANGE_FREE = ("flat", "variance")


@dataclass(frozen=True)
class Case:
    kind: str
    values: np.ndarray
    changes: list[int]


def _noise(rng: np.random.Generator) -> float:
    return float(np.exp(rng.uniform(np.log(0.005), np.log(0.10))))


def _shift(rng: np.random.Generator, noise: float) -> float:
    """A signed relative change of the mean: 2-6 noise deviations, at least 2 %."""
    return max(0.02, noise * float(rng.uniform(2.0, 6.0))) * float(rng.choice([-1, 1]))


def _points(rng: np.random.Generator, n: int, count: int, gap: int) -> list[int]:
    """`count` sorted change indexes at least `gap` apart and from both ends."""
    for _ in range(200):
        points = sorted(int(i) for i in rng.integers(gap, n - gap, size=count))
        if (np.diff([0] + points + [n]) >= gap).all():
            return points
    return []


def _levels(rng: np.random.Generator, n: int, points: list[int], noise: float) -> np.ndarray:
    level = np.empty(n)
    bounds = [0] + points + [n]
    current = float(rng.uniform(50, 5000))
    for a, b in zip(bounds, bounds[1:]):
        level[a:b] = current
        current *= 1 + _shift(rng, noise)
    return level


def _flat(rng: np.random.Generator) -> Case:
    n, noise = int(rng.integers(200, 401)), _noise(rng)
    values = float(rng.uniform(50, 5000)) * (1 + rng.normal(0, noise, n))
    return Case("flat", values, [])


def _steps(rng: np.random.Generator, kind: str = "steps") -> Case:
    n, noise = int(rng.integers(100, 301)), _noise(rng)
    points = _points(rng, n, int(rng.integers(1, 4)), 20)
    level = _levels(rng, n, points, noise)
    values = level * (1 + rng.normal(0, noise, n))
    if kind == "outliers":
        spots = [int(i) for i in rng.integers(0, n, size=int(rng.integers(0, 3)))]
        if points:  # the run just before or just after the first step
            spots.append(points[0] - 1 + int(rng.integers(0, 2)))
        for i in spots:
            values[i] = level[i] * (1 + float(rng.choice([-1, 1])) * noise * rng.uniform(6, 15))
    return Case(kind, values, points)


def _variance(rng: np.random.Generator) -> Case:
    n, noise = int(rng.integers(150, 301)), _noise(rng) / 2
    points = _points(rng, n, int(rng.integers(1, 3)), 30)
    spread = np.empty(n)
    bounds = [0] + points + [n]
    for j, (a, b) in enumerate(zip(bounds, bounds[1:])):
        spread[a:b] = noise * (float(rng.uniform(2.5, 4.0)) if j % 2 else 1.0)
    values = float(rng.uniform(50, 5000)) * (1 + rng.normal(0, 1, n) * spread)
    return Case("variance", values, [])


def _excursions(rng: np.random.Generator) -> Case:
    n, noise = int(rng.integers(100, 251)), _noise(rng)
    starts = _points(rng, n - 10, int(rng.integers(1, 3)), 30)
    level = np.full(n, float(rng.uniform(50, 5000)))
    changes = []
    for start in starts:
        end = start + int(rng.integers(5, 10))
        level[start:end] *= 1 + _shift(rng, noise)
        changes += [start, end]
    return Case("excursions", level * (1 + rng.normal(0, noise, n)), changes)


MAKERS: dict[str, Callable[[np.random.Generator], Case]] = {
    "flat": _flat,
    "steps": _steps,
    "outliers": lambda rng: _steps(rng, "outliers"),
    "variance": _variance,
    "excursions": _excursions,
}


def corpus(per_class: int, seed: int = 31) -> list[Case]:
    """`per_class` histories of every class, the same for the same seed."""
    cases = []
    for j, kind in enumerate(CLASSES):
        rng = np.random.default_rng((seed, j))
        cases += [MAKERS[kind](rng) for _ in range(per_class)]
    return cases


def match(detected: list[int], truth: list[int]) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives), each truth matched once."""
    unmatched = list(truth)
    hits = 0
    for index in sorted(detected):
        near = [t for t in unmatched if abs(t - index) <= TOLERANCE]
        if near:
            unmatched.remove(min(near, key=lambda t: (abs(t - index), t)))
            hits += 1
    return hits, len(detected) - hits, len(unmatched)


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    points: int = 0

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def false_alarms_per_100(self) -> float:
        return 100 * self.fp / self.points if self.points else 0.0

    def add(self, other: Score) -> None:
        self.tp, self.fp = self.tp + other.tp, self.fp + other.fp
        self.fn, self.points = self.fn + other.fn, self.points + other.points


def evaluate(detector: Callable[[np.ndarray], list[int]], cases: list[Case]) -> dict[str, Score]:
    """Scores by class, plus "all" (every class) and "change-free" (flat + variance)."""
    scores = {kind: Score() for kind in (*CLASSES, "all", "change-free")}
    for case in cases:
        tp, fp, fn = match(detector(case.values), case.changes)
        one = Score(tp, fp, fn, len(case.values))
        scores[case.kind].add(one)
        scores["all"].add(one)
        if case.kind in CHANGE_FREE:
            scores["change-free"].add(one)
    return scores
