"""E-divisive change point detection: synthetic histories with known changes.

The generator below draws histories the way nightly benchmark series look:
flat segments with relative Gaussian noise of 0.5-3 %, 0 to 3 level shifts of
5-30 % (up or down), segments of at least 12 points. A detected change within
TOLERANCE points of a true one is a hit. Precision and recall over all cases
must both exceed the thresholds, so a detector that fires everywhere (low
precision) or nowhere (low recall) fails.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from runners.changepoint import Analysis, detect
from runners.changestats import energy_statistics

CASES = 240
TOLERANCE = 3
MIN_PRECISION = 0.95
MIN_RECALL = 0.90


def synthetic_history(rng: np.random.Generator) -> tuple[np.ndarray, list[int]]:
    """A history of 40-150 points and the indexes where its level changes."""
    n = int(rng.integers(40, 151))
    changes = int(rng.integers(0, 4))
    points: list[int] = []
    for _ in range(50):  # rejection sampling of well separated change points
        candidate = sorted(int(i) for i in rng.integers(12, n - 12, size=changes))
        gaps = np.diff([0] + candidate + [n])
        if (gaps >= 12).all():
            points = candidate
            break
    noise = float(rng.uniform(0.005, 0.03))
    level = float(rng.uniform(50, 5000))
    values = np.empty(n)
    bounds = [0] + points + [n]
    for j in range(len(bounds) - 1):
        values[bounds[j] : bounds[j + 1]] = level * (
            1 + rng.normal(0, noise, bounds[j + 1] - bounds[j])
        )
        shift = float(rng.uniform(0.05, 0.30)) * rng.choice([-1, 1])
        level *= 1 + shift
    return values, points


def score(detected: list[int], truth: list[int]) -> tuple[int, int, int]:
    """(true positives, false positives, false negatives), each truth matched once."""
    unmatched = list(truth)
    hits = 0
    for index in detected:
        near = [t for t in unmatched if abs(t - index) <= TOLERANCE]
        if near:
            unmatched.remove(min(near, key=lambda t: abs(t - index)))
            hits += 1
    return hits, len(detected) - hits, len(unmatched)


def run_cases(detector) -> tuple[float, float]:
    rng = np.random.default_rng(14)
    tp = fp = fn = 0
    for _ in range(CASES):
        values, truth = synthetic_history(rng)
        found = detector(values)
        a, b, c = score(found, truth)
        tp, fp, fn = tp + a, fp + b, fn + c
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return precision, recall


def test_precision_and_recall_on_synthetic_histories():
    precision, recall = run_cases(
        lambda v: [cp.index for cp in detect(v, min_magnitude=0.02).change_points]
    )
    print(f"precision={precision:.3f} recall={recall:.3f}")
    assert precision >= MIN_PRECISION
    assert recall >= MIN_RECALL


@pytest.mark.parametrize(
    "detector",
    [
        lambda v: list(range(5, len(v), 5)),  # fires everywhere
        lambda v: [],  # never fires
    ],
)
def test_the_thresholds_reject_trivial_detectors(detector):
    precision, recall = run_cases(detector)
    assert precision < MIN_PRECISION or recall < MIN_RECALL


def test_finds_a_single_shift_with_its_means():
    rng = np.random.default_rng(3)
    values = np.concatenate([rng.normal(1000, 10, 40), rng.normal(850, 10, 40)])
    (cp,) = detect(values).change_points
    assert cp.index == 40
    assert cp.before.ci_low < 1000 < cp.before.ci_high
    assert cp.after.ci_low < 850 < cp.after.ci_high
    assert cp.magnitude == pytest.approx(-0.15, abs=0.01)
    assert cp.pvalue <= 0.001


def test_min_magnitude_drops_small_significant_shifts():
    rng = np.random.default_rng(4)
    values = np.concatenate([rng.normal(1000, 1, 40), rng.normal(1010, 1, 40)])
    assert [cp.index for cp in detect(values).change_points] == [40]
    assert detect(values, min_magnitude=0.05).change_points == []


def test_is_deterministic():
    values, _ = synthetic_history(np.random.default_rng(7))
    assert detect(values) == detect(values)


@pytest.mark.parametrize("seed", range(10))
def test_incremental_update_equals_a_full_analysis(seed):
    values, _ = synthetic_history(np.random.default_rng(seed))
    analysis = detect(values[:30], window=20)
    for n in range(31, len(values) + 1):
        analysis = detect(values[:n], window=20, previous=analysis)
    assert analysis == detect(values, window=20)


def test_a_stored_state_resumes_like_the_analysis():
    values, _ = synthetic_history(np.random.default_rng(9))
    previous = detect(values[:60], window=20)
    stored = json.loads(json.dumps(previous.state()))
    assert detect(values, window=20, previous=stored) == detect(values, window=20)


def test_previous_with_other_settings_is_ignored():
    values, _ = synthetic_history(np.random.default_rng(8))
    previous = detect(values[:50], window=20)
    assert detect(values, window=30, previous=previous) == detect(values, window=30)


def test_energy_statistic_peaks_at_the_split():
    q = energy_statistics(np.array([1.0] * 10 + [5.0] * 10))
    assert int(np.argmax(q)) == 10
    assert np.isneginf(q[:3]).all()


@pytest.mark.parametrize(
    "values, kwargs, message",
    [
        ([1.0, float("nan"), 2.0], {}, "finite"),
        ([[1.0, 2.0]], {}, "flat"),
        ([1.0] * 10, {"window": 4}, "window"),
        ([1.0] * 10, {"max_pvalue": 0}, "max_pvalue"),
        ([1.0] * 10, {"min_magnitude": -1}, "min_magnitude"),
    ],
)
def test_bad_input_is_a_clear_error(values, kwargs, message):
    with pytest.raises(ValueError, match=message):
        detect(values, **kwargs)


def test_short_and_constant_histories_have_no_change():
    assert detect([1.0, 2.0]).change_points == []
    assert isinstance(detect([7.0] * 100), Analysis)
    assert detect([7.0] * 100).change_points == []


# ------------------------------------------------------- Welch's t-test, offsets


def test_ttest_significance_precision_and_recall():
    precision, recall = run_cases(
        lambda v: [
            cp.index for cp in detect(v, min_magnitude=0.02, significance="ttest").change_points
        ]
    )
    print(f"ttest precision={precision:.3f} recall={recall:.3f}")
    assert precision >= MIN_PRECISION
    assert recall >= MIN_RECALL


def test_ttest_finds_a_level_that_comes_back():
    rng = np.random.default_rng(5)
    values = np.concatenate(
        [rng.normal(1000, 10, 20), rng.normal(800, 10, 10), rng.normal(1000, 10, 10)]
    )
    found = detect(values, significance="ttest", min_magnitude=0.03).change_points
    assert [cp.index for cp in found] == [20, 30]


@pytest.mark.parametrize("seed", range(6))
def test_an_offset_analysis_equals_the_full_one(seed):
    values, _ = synthetic_history(np.random.default_rng(seed))
    values = np.concatenate([values, values * 0.8])
    settings = dict(window=20, significance="ttest", min_magnitude=0.02)
    previous = detect(values[:-15], **settings)
    offset = previous.resume_from - 20
    tail = detect(values[offset:], offset=offset, previous=previous.state(), **settings)
    full = detect(values, **settings)
    assert [(cp.index, cp.pvalue) for cp in tail.change_points] == [
        (cp.index, cp.pvalue) for cp in full.change_points
    ]
    new = [cp.index for cp in tail.change_points if cp.index > previous.resume_from]
    assert {cp.index: cp for cp in tail.change_points if cp.index in new} == {
        cp.index: cp for cp in full.change_points if cp.index in new
    }
    assert (tail.resume_from, tail.length) == (full.resume_from, full.length)


def test_an_offset_needs_a_previous_analysis_far_enough():
    values, _ = synthetic_history(np.random.default_rng(2))
    with pytest.raises(ValueError, match="offset needs a previous"):
        detect(values[10:], offset=10)
    previous = detect(values[:25], window=20)
    assert previous.resume_from - 20 < 10  # resumes before offset + window
    with pytest.raises(ValueError, match="offset needs a previous"):
        detect(values[10:], offset=10, window=20, previous=previous)
