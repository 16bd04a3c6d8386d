"""Change point detection over a benchmark history: E-divisive means.

The method is the one MongoDB's signal-processing service and Apache Otava
(formerly Hunter) use, after Matteson & James (2014) and Daly et al.,
"Change Point Detection in Software Performance Testing" (ICPE 2020):

1.  For a segment x[a:b], every split tau gives an energy statistic

        q(tau) = m*k/(m+k) * ( 2/(m*k) * sum |x_i - y_j|
                               - 1/C(m,2) * sum |x_i - x_i'|
                               - 1/C(k,2) * sum |y_j - y_j'| )

    with x = x[a:tau] (m points) and y = x[tau:b] (k points). It is large when
    the two sides differ in distribution (here: mostly in mean). The best
    split is argmax q; all splits are computed at once from prefix sums of the
    distance matrix's row sums, O(n^2) per segment.
2.  Significance by a permutation test: the segment is shuffled, max q is
    recomputed, and p = (1 + #{perm max q >= observed}) / (1 + permutations).
    The test stops early once p can no longer reach the threshold, so quiet
    segments cost a few dozen permutations, not a thousand. Permutations are
    seeded from (seed, segment start, segment length): the same data always
    give the same answer, and an incremental update gives the full one.
3.  A significant split is kept only if the relative change of the mean,
    |after - before| / |before|, is at least `min_magnitude`, then both sides
    are searched again (binary segmentation).

A long history is analysed in windows, left to right. From a start index s,
the window x[s:s+window] is searched; if it holds change points, the earliest
becomes a change point and the next window starts there; if not, the next
window starts half a window later. A window that was complete (window points
available) can never change with new data, so its start is a resume point:
`detect(values, previous=analysis)` keeps the change points before
`analysis.resume_from` and only re-analyses from there.

Significance can instead be a t-test (`significance="ttest"`, what
benchapp.histories.history uses): no permutations, so a long history is analysed in
milliseconds. Done naively (Welch's test of the best split, as this module
did and Apache Otava does) the p-value means little: the split was chosen
*because* it looks most different, so at "p 0.001" 44 % of flat histories
of 300 points with 3 % noise raised a false alert; and one outlier beside a
real step inflated Welch's variance enough to hide it. The t-test mode:

-   picks a candidate with the E-divisive statistic over both the start tau
    and the end kappa of a change, q(tau, kappa) between x[a:tau] and
    x[tau:kappa] (Otava's form): a level that moves for a few runs and comes
    back is as visible as a step (`pair_statistics`);
-   tests it with a trimmed t-test (`trimmed_pvalue`: Yuen's 20 % trimmed
    means and winsorized variances), which one outlier cannot sway;
-   corrects the p-value for the choice (`sidak`): 1 - (1 - p)^pairs over
    every (tau, kappa) pair the segment offered;
-   scans with a threshold SCAN_FACTOR times looser, which proposes
    candidates, then re-tests each candidate between its neighbouring
    candidates, at most half a window each side (Otava's merge step, in one
    pass), Sidak-corrected over the splits of that span times the places
    where a neighbour could have cut it. A candidate is kept when this test
    passes `max_pvalue` and the magnitude; its p-value is this one. Longer
    sides than the scan's pair recover small steps, the scan's looser
    threshold recovers short excursions.

Measured on the seeded corpus of tests/runners/changepoint_corpus.py (see
docs/history.md and bench/changepoint.py). A candidate's verdict reads the
points and candidates within half a window of it, so it is final half a
window before the resume point: the state keeps the candidates and the
kept change points, and an incremental analysis equals the full one.

Pure Python + numpy + scipy; no Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from runners.changestats import (
    DEFAULT_MIN_SIZE,
    energy_statistics,
    pair_statistics,
    sidak,
    trimmed_pvalue,
)

DEFAULT_WINDOW = 50
DEFAULT_MAX_PVALUE = 0.001
DEFAULT_MIN_MAGNITUDE = 0.0
DEFAULT_SEED = 20200420
PERMUTATION_BATCH = 10
SCAN_FACTOR = 10  # the scan proposes at 10 x max_pvalue; the merge step decides
VERSION = 2  # in the settings of a state: states of the earlier method are not resumed


@dataclass(frozen=True)
class Segment:
    """Summary of the points between two change points."""

    start: int
    end: int  # exclusive
    mean: float
    ci_low: float  # 95 % confidence interval of the mean
    ci_high: float


@dataclass(frozen=True)
class ChangePoint:
    """The history changes at `index`: values[index] is the first point after."""

    index: int
    pvalue: float
    before: Segment
    after: Segment

    @property
    def magnitude(self) -> float:
        """Relative change of the mean, signed: (after - before) / |before|."""
        return relative_change(self.before.mean, self.after.mean)


@dataclass(frozen=True)
class Analysis:
    """Result of `detect`; pass it back as `previous` when points are added."""

    change_points: list[ChangePoint]
    resume_from: int  # analysis restarts here when new points arrive
    length: int  # how many values were analysed
    settings: tuple = field(default=())
    # (index, scan p-value) of every candidate the scan proposed; the t-test
    # mode's merge step kept those in change_points
    candidates: list[tuple[int, float]] = field(default_factory=list)

    def state(self) -> dict:
        """What `detect(previous=...)` needs, as JSON-able data (to store in a database)."""
        return {
            "resume_from": self.resume_from,
            "length": self.length,
            "settings": [list(item) for item in self.settings],
            "change_points": [[cp.index, cp.pvalue] for cp in self.change_points],
            "candidates": [[index, p] for index, p in self.candidates],
        }


def relative_change(before: float, after: float) -> float:
    if before == 0:
        return math.inf if after != before else 0.0
    return (after - before) / abs(before)


def _permutation_pvalue(
    segment: np.ndarray, observed: float, max_pvalue: float, rng: np.random.Generator, min_size: int
) -> float:
    """p-value of `observed` (max q) against shuffled copies of `segment`.

    Enough permutations are drawn for `max_pvalue` to be reachable; drawing
    stops as soon as the exceedances already rule it out.
    """
    permutations = max(PERMUTATION_BATCH, math.ceil(1 / max_pvalue) - 1)
    allowed = math.floor(max_pvalue * (permutations + 1)) - 1  # exceedances still significant
    exceed = 0
    drawn = 0
    batch = PERMUTATION_BATCH
    while drawn < permutations:
        batch = min(batch, permutations - drawn)
        shuffled = rng.permuted(np.tile(segment, (batch, 1)), axis=1)
        best = energy_statistics(shuffled, min_size).max(axis=1)
        exceed += int((best >= observed - 1e-12 * abs(observed)).sum())
        drawn += batch
        if exceed > allowed:
            break
        batch *= 4  # quiet segments stop in the first small batch; changes need all
    return (1 + exceed) / (1 + drawn)


def _pair_test(segment: np.ndarray, min_size: int) -> tuple[int, int, float]:
    """(tau, kappa, Sidak-corrected p-value) of the pair of largest q(tau, kappa)."""
    q = pair_statistics(segment, min_size)
    pairs = int(np.isfinite(q).sum())
    if not pairs:
        return 0, 0, 1.0
    tau, kappa = (int(i) for i in np.unravel_index(np.argmax(q), q.shape))
    return tau, kappa, sidak(trimmed_pvalue(segment[:tau], segment[tau:kappa]), pairs)


def _choices(low: int, high: int, candidates: list, j: int, half: int, min_size: int) -> int:
    """How many tests the data chose this one among: the splits of the span,
    times the places a neighbouring candidate could have cut it."""
    splits = max(1, high - low - 2 * min_size + 1)
    if j and low == candidates[j - 1][0]:
        splits *= max(1, half - min_size + 1)
    if j + 1 < len(candidates) and high == candidates[j + 1][0]:
        splits *= max(1, half - min_size + 1)
    return splits


def _merge(x, offset: int, n: int, candidates: list, held: dict, settings: dict) -> list:
    """The candidates kept, as (index, p-value): each is re-tested between its
    neighbouring candidates, at most half a window each side, Sidak-corrected
    for the choices behind that test (`_choices`). `held` maps the candidates whose verdict is
    final (from the previous analysis) to their p-value, or None if dropped."""
    half = settings["window"] // 2
    min_size = settings["min_size"]
    kept = []
    for j, (index, _) in enumerate(candidates):
        if index in held:
            if held[index] is not None:
                kept.append((index, held[index]))
            continue
        low = max(candidates[j - 1][0] if j else 0, index - half, offset)
        high = min(candidates[j + 1][0] if j + 1 < len(candidates) else n, index + half, n)
        left, right = x[low - offset : index - offset], x[index - offset : high - offset]
        if min(len(left), len(right)) < 2:
            continue
        p = sidak(trimmed_pvalue(left, right), _choices(low, high, candidates, j, half, min_size))
        magnitude = relative_change(left.mean(), right.mean())
        if p <= settings["max_pvalue"] and abs(magnitude) >= settings["min_magnitude"]:
            kept.append((index, p))
    return kept


def _split_points(x: np.ndarray, start: int, settings: dict) -> list[tuple[int, float]]:
    """Binary segmentation of x (a window starting at absolute `start`)."""
    found: list[tuple[int, float]] = []
    todo = [(0, len(x))]
    while todo:
        a, b = todo.pop()
        segment = x[a:b]
        if settings["significance"] == "ttest":
            tau, kappa, p = _pair_test(segment, settings["min_size"])
            threshold = min(1.0, SCAN_FACTOR * settings["max_pvalue"])
        else:
            q = energy_statistics(segment, settings["min_size"])
            if not np.isfinite(q).any():
                continue
            tau, kappa = int(np.argmax(q)), b - a
            rng = np.random.default_rng((settings["seed"], start + a, b - a))
            p = _permutation_pvalue(
                segment, float(q[tau]), settings["max_pvalue"], rng, settings["min_size"]
            )
            threshold = settings["max_pvalue"]
        if p > threshold:
            continue
        magnitude = relative_change(segment[:tau].mean(), segment[tau:kappa].mean())
        if abs(magnitude) < settings["min_magnitude"]:
            continue
        found.append((start + a + tau, p))
        todo += [(a, a + tau), (a + tau, b)]
    return sorted(found)


def _t95(df: int) -> float:
    """Two-sided 95 % Student t quantile (table to 30, then the normal value)."""
    table = [
        12.706,
        4.303,
        3.182,
        2.776,
        2.571,
        2.447,
        2.365,
        2.306,
        2.262,
        2.228,
        2.201,
        2.179,
        2.160,
        2.145,
        2.131,
        2.120,
        2.110,
        2.101,
        2.093,
        2.086,
        2.080,
        2.074,
        2.069,
        2.064,
        2.060,
        2.056,
        2.052,
        2.048,
        2.045,
        2.042,
    ]
    if df < 1:
        return math.inf
    return table[df - 1] if df <= len(table) else 1.96


def summarize(values, start: int, end: int) -> Segment:
    """Mean and 95 % confidence interval of values[start:end]."""
    part = np.asarray(values[start:end], dtype=float)
    if len(part) == 0:
        return Segment(start, end, math.nan, -math.inf, math.inf)
    mean = float(part.mean())
    if len(part) < 2:
        return Segment(start, end, mean, -math.inf, math.inf)
    half = _t95(len(part) - 1) * float(part.std(ddof=1)) / math.sqrt(len(part))
    return Segment(start, end, mean, mean - half, mean + half)


def detect(
    values,
    *,
    window: int = DEFAULT_WINDOW,
    max_pvalue: float = DEFAULT_MAX_PVALUE,
    min_magnitude: float = DEFAULT_MIN_MAGNITUDE,
    min_size: int = DEFAULT_MIN_SIZE,
    seed: int = DEFAULT_SEED,
    significance: str = "permutation",
    previous: Analysis | dict | None = None,
    offset: int = 0,
) -> Analysis:
    """Change points of `values` (a sequence of floats, oldest first).

    window:        points analysed together (>= 2 * min_size); bounds the cost.
                   The segments summarized around a change point (its before
                   and after levels) are at most a window long too.
    max_pvalue:    significance threshold of the test of a split.
    min_magnitude: smallest relative change of the mean kept (0.05 = 5 %).
    significance:  "permutation" (the permutation test above) or "ttest"
                   (the corrected, outlier-robust t-test and merge step above:
                   far cheaper).
    previous:      the Analysis of an earlier prefix of the same values, with the
                   same settings (or its `state()`); only the part after its
                   resume point is redone.
    offset:        `values` are the history from index `offset` on (indexes in
                   the result stay absolute); needs a `previous` whose resume
                   point is at least a window after `offset`, else ValueError.
                   Change points before offset + window are summarized over the
                   given values only.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise ValueError("values must be a flat sequence of numbers")
    if not np.isfinite(x).all():
        raise ValueError("values must be finite numbers (no NaN or infinity)")
    if window < 2 * min_size:
        raise ValueError(f"window must be at least {2 * min_size} (2 * min_size)")
    if not 0 < max_pvalue < 1:
        raise ValueError("max_pvalue must be between 0 and 1")
    if min_magnitude < 0:
        raise ValueError("min_magnitude must not be negative")
    if significance not in ("permutation", "ttest"):
        raise ValueError("significance must be 'permutation' or 'ttest'")
    settings = {
        "window": window,
        "max_pvalue": max_pvalue,
        "min_magnitude": min_magnitude,
        "min_size": min_size,
        "seed": seed,
        "significance": significance,
        "version": VERSION,
    }
    key = tuple(sorted(settings.items()))
    n = offset + len(x)
    indexes: list[tuple[int, float]] = []
    held: dict[int, float | None] = {}
    s = resume = offset
    if isinstance(previous, Analysis):
        previous = previous.state()
    if (
        previous
        and [tuple(item) for item in previous["settings"]] == list(key)
        and previous["length"] <= n
        and (not offset or previous["resume_from"] - window >= offset)
    ):
        s = resume = previous["resume_from"]
        indexes = [(i, p) for i, p in previous["candidates"] if i <= s]
        # A verdict reads the points and candidates within half a window: final
        # when that much lies before the resume point.
        kept = dict(map(tuple, previous["change_points"]))
        held = {i: kept.get(i) for i, _ in indexes if i + window // 2 <= s}
    elif offset:
        raise ValueError("an offset needs a previous analysis resuming a window after it")
    while n - s >= 2 * min_size:
        end = min(s + window, n)
        found = _split_points(x[s - offset : end - offset], s, settings)
        if end - s == window:
            resume = s  # a full window: the same answer whatever comes later
        if found:
            indexes.append(found[0])
            s = found[0][0]
        elif end == n:
            break
        else:
            s += window // 2
    candidates = indexes
    if significance == "ttest":
        indexes = _merge(x, offset, n, candidates, held, settings)
    bounds = [0] + [i for i, _ in indexes] + [n]

    def part(start: int, end: int) -> Segment:
        start = max(start, offset)
        segment = summarize(x, start - offset, end - offset)
        return Segment(start, end, segment.mean, segment.ci_low, segment.ci_high)

    change_points = [
        ChangePoint(
            index,
            p,
            part(max(bounds[j], index - window), index),
            part(index, min(bounds[j + 2], index + window)),
        )
        for j, (index, p) in enumerate(indexes)
    ]
    return Analysis(change_points, resume, n, key, candidates)
