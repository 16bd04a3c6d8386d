#!/usr/bin/env python
"""Change detection figures (issue 31): precision, recall, F1 and false
alarms per 100 points of the t-test mode of runners.changepoint on the seeded
corpus of tests/runners/changepoint_corpus.py, per class, and the time of
analysing a 365-point and a 2,000-point history (full, and incremental after
one more point; median of 7, with the history's 3 % minimum magnitude).

    python bench/changepoint.py [--per-class 400] [--seed 31] [--json]

The detector runs with benchapp.histories.history's settings (window 50, p 0.001, the
t-test mode) but no minimum magnitude, so every figure is the test's own.
No database needed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runners import changepoint  # noqa: E402
from tests.runners.changepoint_corpus import TOLERANCE, corpus, evaluate  # noqa: E402

SETTINGS = {"window": 50, "max_pvalue": 0.001, "min_magnitude": 0.0, "significance": "ttest"}


def detector(values) -> list[int]:
    return [cp.index for cp in changepoint.detect(values, **SETTINGS).change_points]


def timings(repeats: int = 7) -> dict:
    """Median times with the history's own settings (3 % minimum magnitude)."""
    settings = dict(SETTINGS, min_magnitude=0.03)
    rng = np.random.default_rng(365)
    out = {}
    for n in (365, 2000):
        values = 1000 * (1 + rng.normal(0, 0.03, n))
        values[n // 2 :] *= 1.1
        full, step = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            previous = changepoint.detect(values[:-1], **settings)
            full.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            changepoint.detect(values, previous=previous, **settings)
            step.append(time.perf_counter() - t0)
        out[n] = {
            "full_ms": 1000 * statistics.median(full),
            "one_more_ms": 1000 * statistics.median(step),
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-class", type=int, default=400)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    scores = evaluate(detector, corpus(args.per_class, args.seed))
    figures = {
        kind: {
            "precision": s.precision,
            "recall": s.recall,
            "f1": s.f1,
            "false_alarms_per_100": s.false_alarms_per_100,
            "true": s.tp + s.fn,
            "found": s.tp + s.fp,
            "points": s.points,
        }
        for kind, s in scores.items()
    }
    result = {"tolerance": TOLERANCE, "per_class": args.per_class, "scores": figures}
    result["timing"] = timings()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"corpus: {args.per_class} histories per class, seed {args.seed}, tolerance ±{TOLERANCE}")
    print(
        f"{'class':12} {'precision':>9} {'recall':>7} {'F1':>6} {'FA/100':>7} {'true':>5} {'found':>6}"
    )
    for kind, f in figures.items():
        if f["true"]:
            scores = f"{f['precision']:9.3f} {f['recall']:7.3f} {f['f1']:6.3f}"
        else:  # no true change: only false alarms count
            scores = f"{'-':>9} {'-':>7} {'-':>6}"
        print(f"{kind:12} {scores} {f['false_alarms_per_100']:7.3f} {f['true']:5d} {f['found']:6d}")
    for n, t in result["timing"].items():
        print(f"{n} points: full {t['full_ms']:.1f} ms, one more point {t['one_more_ms']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
