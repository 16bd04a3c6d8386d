"""Is a difference between two sets of repeats real?

A comparison puts a candidate run's repeats of one cell and metric beside the
baseline's. `compare` answers with a Delta:

- the relative change of the mean, (candidate - baseline) / baseline;
- its 95 % confidence interval, from Welch's t interval on the difference of
  the means (no equal-variance assumption), divided by the baseline mean;
- a two-sided Mann–Whitney U test over the repeats (exact when the samples are
  small and have no ties, as scipy chooses): rank-based, so one outlier repeat
  cannot make a difference "significant" on its own;
- a verdict: "better" / "worse" (by the metric's direction) only when p < alpha,
  "no significant difference" otherwise, and "too few repeats" when even the
  most extreme ordering of the repeats could not reach alpha (three against
  three repeats can never give p < 0.05: 2 / C(6, 3) = 0.1).

Pure functions, no Django: tables, exports and the history pages share them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

ALPHA = 0.05
BETTER, WORSE = "better", "worse"
NOT_SIGNIFICANT = "no significant difference"
TOO_FEW = "too few repeats"


@dataclass(frozen=True)
class Delta:
    """How a candidate's repeats differ from the baseline's (see module doc)."""

    baseline_mean: float
    candidate_mean: float
    n_baseline: int
    n_candidate: int
    change: float | None  # relative, e.g. -0.12 for 12 % lower; None if baseline mean is 0
    ci_low: float | None  # relative, 95 %
    ci_high: float | None
    p_value: float | None  # None when the test cannot run
    verdict: str

    @property
    def significant(self) -> bool:
        return self.verdict in (BETTER, WORSE)


def smallest_p(n1: int, n2: int) -> float:
    """The smallest two-sided p-value the exact Mann–Whitney U test can give
    for samples of these sizes (all of one sample above all of the other)."""
    if n1 < 1 or n2 < 1:
        return 1.0
    return min(1.0, 2 / math.comb(n1 + n2, n1))


def enough_repeats(n1: int, n2: int, alpha: float = ALPHA) -> bool:
    """True when the test could reach alpha at all with these sample sizes."""
    return n1 >= 2 and n2 >= 2 and smallest_p(n1, n2) < alpha


def welch_intervals(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], level: float):
    """Per (a, b) pair, the confidence interval of mean(b) - mean(a) by Welch's
    t (None below 2 values on a side), with one t quantile call for them all."""
    from scipy import stats

    out: list = [None] * len(pairs)
    wanted = []  # (index, diff, standard error, degrees of freedom)
    for i, (a, b) in enumerate(pairs):
        n1, n2 = len(a), len(b)
        if n1 < 2 or n2 < 2:
            continue
        m1, m2 = sum(a) / n1, sum(b) / n2
        v1 = sum((x - m1) ** 2 for x in a) / (n1 - 1)
        v2 = sum((x - m2) ** 2 for x in b) / (n2 - 1)
        se2 = v1 / n1 + v2 / n2
        diff = m2 - m1
        if se2 == 0:
            out[i] = (diff, diff)
            continue
        df = se2**2 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1))
        wanted.append((i, diff, math.sqrt(se2), df))
    if wanted:
        quantiles = stats.t.ppf(0.5 + level / 2, [df for *_, df in wanted])
        for (i, diff, se, _), q in zip(wanted, quantiles):
            half = float(q) * se
            out[i] = (diff - half, diff + half)
    return out


def compare(
    baseline: Sequence[float],
    candidate: Sequence[float],
    higher_is_better: bool,
    alpha: float = ALPHA,
) -> Delta:
    """Compare two sets of repeats of one metric; see the module docstring."""
    return compare_many([(baseline, candidate, higher_is_better)], alpha)[0]


def compare_many(
    pairs: Sequence[tuple[Sequence[float], Sequence[float], bool]], alpha: float = ALPHA
) -> list[Delta]:
    """compare() of each (baseline, candidate, higher_is_better), the same
    Deltas, with one scipy call per kind of test instead of one per pair: a
    comparison page judges hundreds of cells, and scipy's cost is per call
    (~1 ms of checks and broadcasting, the test itself a few µs)."""
    sides = []
    for baseline, candidate, _ in pairs:
        base, cand = [float(x) for x in baseline], [float(x) for x in candidate]
        if not base or not cand:
            raise ValueError("compare needs at least one value on each side")
        sides.append((base, cand))
    intervals = welch_intervals(sides, 0.95)
    p_values = _mann_whitney_p_values(
        [(i, base, cand) for i, (base, cand) in enumerate(sides) if _testable(base, cand, alpha)]
    )
    deltas = []
    for i, ((base, cand), (_, _, higher_is_better)) in enumerate(zip(sides, pairs)):
        m1, m2 = sum(base) / len(base), sum(cand) / len(cand)
        change = (m2 - m1) / abs(m1) if m1 else None
        ci_low = ci_high = None
        if intervals[i] is not None and m1:
            ci_low, ci_high = intervals[i][0] / abs(m1), intervals[i][1] / abs(m1)
        p_value = None
        if not enough_repeats(len(base), len(cand), alpha):
            verdict = TOO_FEW
        elif i not in p_values:  # every repeat the same value
            p_value, verdict = 1.0, NOT_SIGNIFICANT
        else:
            p_value = p_values[i]
            if p_value >= alpha:
                verdict = NOT_SIGNIFICANT
            else:
                verdict = BETTER if (m2 > m1) == higher_is_better else WORSE
        deltas.append(
            Delta(m1, m2, len(base), len(cand), change, ci_low, ci_high, p_value, verdict)
        )
    return deltas


def _testable(base: list[float], cand: list[float], alpha: float) -> bool:
    """The U test runs with enough repeats and at least two distinct values."""
    return enough_repeats(len(base), len(cand), alpha) and len(set(base + cand)) > 1


def _mann_whitney_p_values(samples: list[tuple[int, list[float], list[float]]]) -> dict:
    """{index: two-sided Mann–Whitney U p-value} for each (index, base, cand).

    Pairs of the same sizes and method go to scipy as the rows of one call.
    The method is the one scipy's "auto" picks for the pair alone (exact when
    either side has 8 repeats or fewer and no value repeats, else the normal
    approximation with the tie correction): batched, "auto" would look for
    ties across all the rows at once.
    """
    from scipy import stats

    groups: dict[tuple, list] = {}
    for index, base, cand in samples:
        n1, n2 = len(base), len(cand)
        ties = len(set(base + cand)) < n1 + n2
        method = "asymptotic" if (n1 > 8 and n2 > 8) or ties else "exact"
        groups.setdefault((n1, n2, method), []).append((index, base, cand))
    p_values = {}
    for (_, _, method), rows in groups.items():
        found = stats.mannwhitneyu(
            [base for _, base, _ in rows],
            [cand for _, _, cand in rows],
            alternative="two-sided",
            axis=1,
            method=method,
        )
        for (index, _, _), p in zip(rows, found.pvalue.reshape(-1)):
            p_values[index] = float(p)
    return p_values
