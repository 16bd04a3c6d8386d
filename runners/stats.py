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


def welch_interval(a: Sequence[float], b: Sequence[float], level: float = 0.95):
    """Confidence interval of mean(b) - mean(a) by Welch's t; None below 2 values each."""
    from scipy import stats

    n1, n2 = len(a), len(b)
    if n1 < 2 or n2 < 2:
        return None
    m1, m2 = sum(a) / n1, sum(b) / n2
    v1 = sum((x - m1) ** 2 for x in a) / (n1 - 1)
    v2 = sum((x - m2) ** 2 for x in b) / (n2 - 1)
    se2 = v1 / n1 + v2 / n2
    diff = m2 - m1
    if se2 == 0:
        return diff, diff
    df = se2**2 / ((v1 / n1) ** 2 / (n1 - 1) + (v2 / n2) ** 2 / (n2 - 1))
    half = stats.t.ppf(0.5 + level / 2, df) * math.sqrt(se2)
    return diff - half, diff + half


def compare(
    baseline: Sequence[float],
    candidate: Sequence[float],
    higher_is_better: bool,
    alpha: float = ALPHA,
) -> Delta:
    """Compare two sets of repeats of one metric; see the module docstring."""
    from scipy import stats

    base, cand = [float(x) for x in baseline], [float(x) for x in candidate]
    if not base or not cand:
        raise ValueError("compare needs at least one value on each side")
    m1, m2 = sum(base) / len(base), sum(cand) / len(cand)
    change = (m2 - m1) / abs(m1) if m1 else None
    interval = welch_interval(base, cand)
    ci_low = ci_high = None
    if interval is not None and m1:
        ci_low, ci_high = interval[0] / abs(m1), interval[1] / abs(m1)
    p_value = None
    if not enough_repeats(len(base), len(cand), alpha):
        verdict = TOO_FEW
    elif len(set(base + cand)) == 1:
        p_value, verdict = 1.0, NOT_SIGNIFICANT
    else:
        p_value = float(stats.mannwhitneyu(base, cand, alternative="two-sided").pvalue)
        if p_value >= alpha:
            verdict = NOT_SIGNIFICANT
        else:
            verdict = BETTER if (m2 > m1) == higher_is_better else WORSE
    return Delta(m1, m2, len(base), len(cand), change, ci_low, ci_high, p_value, verdict)
