"""runners.stats against values computed by hand."""

import math
import warnings

import pytest

from runners import stats


def test_compare_clear_shift_is_significant_with_hand_computed_interval():
    # Means 11.5 and 15.5; both sample variances 5/3; Welch df = 6,
    # t(0.975, 6) = 2.446912; half width = 2.446912 * sqrt(5/6) = 2.233713.
    # Exact two-sided U test, all four above all four: p = 2 / C(8, 4) = 2/70.
    delta = stats.compare([10, 11, 12, 13], [14, 15, 16, 17], higher_is_better=True)
    assert delta.change == pytest.approx(4 / 11.5)
    assert delta.ci_low == pytest.approx((4 - 2.233713) / 11.5, rel=1e-5)
    assert delta.ci_high == pytest.approx((4 + 2.233713) / 11.5, rel=1e-5)
    assert delta.p_value == pytest.approx(2 / 70)
    assert delta.verdict == stats.BETTER


def test_compare_direction_lower_is_better_makes_a_rise_worse():
    delta = stats.compare([10, 11, 12, 13], [14, 15, 16, 17], higher_is_better=False)
    assert delta.verdict == stats.WORSE
    assert delta.significant


def test_compare_means_differ_but_no_significant_difference():
    # Means 25 and 30 (+20 %), but the repeats interleave: 10 15 20 25 30 35 40 45.
    # U = 6 of 16; exact two-sided p = 0.6857.
    delta = stats.compare([10, 20, 30, 40], [15, 25, 35, 45], higher_is_better=True)
    assert delta.change == pytest.approx(0.2)
    assert delta.p_value == pytest.approx(48 / 70)
    assert delta.verdict == stats.NOT_SIGNIFICANT
    assert not delta.significant
    assert delta.ci_low < 0 < delta.ci_high


def test_compare_three_against_three_is_too_few_repeats():
    delta = stats.compare([10, 11, 12], [20, 21, 22], higher_is_better=True)
    assert delta.verdict == stats.TOO_FEW
    assert delta.p_value is None
    assert delta.change == pytest.approx(10 / 11)


@pytest.mark.parametrize(
    ("n1", "n2", "enough"),
    [
        (3, 3, False),
        (3, 4, False),
        (4, 4, True),
        (3, 5, True),
        (2, 7, False),
        (2, 8, True),
        (1, 50, False),
    ],
)
def test_enough_repeats_matches_the_exact_test_floor(n1, n2, enough):
    assert stats.enough_repeats(n1, n2) is enough
    assert stats.smallest_p(n1, n2) == pytest.approx(min(1, 2 / math.comb(n1 + n2, n1)))


def test_compare_identical_repeats_are_not_significant():
    delta = stats.compare([5, 5, 5, 5], [5, 5, 5, 5], higher_is_better=True)
    assert delta.verdict == stats.NOT_SIGNIFICANT
    assert delta.change == 0
    assert (delta.ci_low, delta.ci_high) == (0, 0)


def test_compare_zero_baseline_has_no_relative_change():
    delta = stats.compare([0, 0, 0, 0], [1, 2, 3, 4], higher_is_better=True)
    assert delta.change is None and delta.ci_low is None
    assert delta.verdict == stats.BETTER


def _reference(base, cand):
    """The U test's p-value and Welch's interval as scipy gives them for the
    pair alone (its own "auto" method): None where compare() runs no test."""
    from scipy import stats as scipy_stats

    p = None
    if stats.enough_repeats(len(base), len(cand)) and len(set(base + cand)) > 1:
        p = float(scipy_stats.mannwhitneyu(base, cand, alternative="two-sided").pvalue)
    with warnings.catch_warnings():  # scipy warns on repeats that do not vary
        warnings.simplefilter("ignore", RuntimeWarning)
        welch = scipy_stats.ttest_ind(cand, base, equal_var=False).confidence_interval(0.95)
    return p, (float(welch.low), float(welch.high))


def test_compare_many_gives_each_pair_what_scipy_gives_it_alone():
    # Pairs of the same sizes, some with tied values and some without, in one
    # batch: the exact test for the untied small ones, the normal approximation
    # for the tied or large ones, as scipy's "auto" picks per pair.
    import random

    rng = random.Random(7)
    pairs = []
    for _ in range(300):
        n1, n2 = rng.choice([(4, 4), (5, 5), (3, 9), (10, 10), (9, 12), (2, 2)])
        if rng.random() < 0.5:  # ties: a handful of integer values
            base = [float(rng.randint(1, 6)) for _ in range(n1)]
            cand = [float(rng.randint(2, 7)) for _ in range(n2)]
        else:
            base = [rng.gauss(100, 5) for _ in range(n1)]
            cand = [rng.gauss(104, 5) for _ in range(n2)]
        pairs.append((base, cand, rng.random() < 0.5))
    deltas = stats.compare_many(pairs)
    assert len(deltas) == len(pairs)
    methods = set()
    for (base, cand, higher), delta in zip(pairs, deltas):
        p, (low, high) = _reference(base, cand)
        if p is None:  # too few repeats: no test; every value the same: p = 1
            assert delta.p_value == (1.0 if stats.enough_repeats(len(base), len(cand)) else None)
        else:
            assert delta.p_value == pytest.approx(p, rel=1e-12, abs=1e-15)
            methods.add(len(set(base + cand)) < len(base) + len(cand))
        m1 = sum(base) / len(base)
        if low != low:  # NaN: scipy gives no interval (the repeats do not vary)
            assert delta.ci_low == delta.ci_high == (sum(cand) / len(cand) - m1) / abs(m1)
        else:
            assert delta.ci_low == pytest.approx(low / abs(m1), rel=1e-9)
            assert delta.ci_high == pytest.approx(high / abs(m1), rel=1e-9)
        assert delta == stats.compare(base, cand, higher)
    assert methods == {True, False}  # tied and untied pairs were both tested
    assert {d.verdict for d in deltas} >= {stats.BETTER, stats.NOT_SIGNIFICANT, stats.TOO_FEW}


def test_compare_many_refuses_an_empty_side():
    with pytest.raises(ValueError, match="at least one value"):
        stats.compare_many([([1.0, 2.0], [3.0, 4.0], True), ([], [1.0], True)])
