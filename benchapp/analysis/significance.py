"""Comparison deltas: is a difference from the baseline run real?

Each cell of a comparison's pivot against the same cell of the baseline run:
the change of the mean with its 95 % confidence interval (Welch's t) and a
two-sided Mann–Whitney U test over the repeats (runners.stats). Better or
worse (by the metric's catalogued direction) only when the test says the
difference is significant; below the test's minimum of repeats it cannot
be, and the delta says "too few repeats".
"""

from __future__ import annotations

from runners import stats as significance
from runners.metrics import LOWER
from runners.tools import direction as catalog_direction

DIFFERENT = "significant difference"  # significant, but the metric has no better direction
METHOD = (
    "95 % confidence interval of the change by Welch's t; two-sided Mann–Whitney U "
    f"test over the repeats (exact for small samples), significant at p < "
    f"{significance.ALPHA:g}"
)


def minimum_repeats() -> str:
    """The fewest repeats per side with which the test can say anything."""
    n = next(n for n in range(2, 20) if significance.enough_repeats(n, n))
    return f"{n} repeats on each side"


def deltas(
    table: dict, baseline: str, tool: str, dimension: str = "run", units: dict | None = None
) -> list[list]:
    """Per pivot cell: None for the baseline itself (or no baseline cell),
    else {"delta", "change", "ci_low", "ci_high", "p_value", "verdict",
    "better", "n_baseline", "n"}, with better True/False only when significant.
    units: {metric: unit} of an import's metrics (runners.tools.direction)."""
    units = units or {}
    dims = table["column_dims"]
    if dimension not in dims:
        return [[None] * len(table["columns"]) for _ in table["rows"]]
    pos = dims.index(dimension)
    index = {tuple(c["key"]): i for i, c in enumerate(table["columns"])}
    out: list[list] = []
    wanted = []  # (row, column, baseline values, candidate values, direction)
    for r, line in enumerate(table["cells"]):
        out.append([None] * len(line))
        for c, (col, stats) in enumerate(zip(table["columns"], line)):
            key = list(col["key"])
            key[pos] = baseline
            base_i = index.get(tuple(key))
            base = line[base_i] if base_i is not None else None
            if key == col["key"] or not stats or not base or not stats.values or not base.values:
                continue
            name = cell_metric(table, r, c)
            wanted.append(
                (r, c, base.values, stats.values, catalog_direction(tool, name, units.get(name)))
            )
    found = significance.compare_many([(b, v, d != LOWER) for _, _, b, v, d in wanted])
    for (r, c, _, _, direction), delta in zip(wanted, found):
        out[r][c] = _described(delta, direction)
    return out


def cell_metric(table: dict, row: int, column: int) -> str:
    """The metric of a pivot cell: from its column's or its row's key when
    metric is a dimension there, else the table's one metric."""
    for lines, dims, i in (
        (table["columns"], table["column_dims"], column),
        (table["rows"], table["row_dims"], row),
    ):
        if "metric" in dims:
            return lines[i]["key"][dims.index("metric")]
    return table["metrics"][0]


def _described(found: significance.Delta, direction: str | None) -> dict:
    """One delta as deltas() gives it, better/worse by the metric's direction."""
    verdict, better = found.verdict, None
    if found.significant:
        if direction is None:
            verdict = DIFFERENT
        else:
            better = verdict == significance.BETTER
    return {
        "delta": found.candidate_mean - found.baseline_mean,
        "change": found.change,
        "ci_low": found.ci_low,
        "ci_high": found.ci_high,
        "p_value": found.p_value,
        "verdict": verdict,
        "better": better,
        "n_baseline": found.n_baseline,
        "n": found.n_candidate,
    }


def describe(delta: dict) -> str:
    """ "+19.3 % (95 % CI +10.1 % to +28.4 %) · better, p = 0.029"."""
    if delta["change"] is not None:
        text = f"{delta['change']:+.1%}"
        if delta["ci_low"] is not None:
            text += f" (95 % CI {delta['ci_low']:+.1%} to {delta['ci_high']:+.1%})"
    else:
        text = f"{delta['delta']:+.4g}"
    verdict = delta["verdict"]
    if verdict == significance.TOO_FEW:
        verdict += f" ({delta['n_baseline']} vs {delta['n']})"
    elif delta["p_value"] is not None:
        verdict += f", p = {delta['p_value']:.2g}"
    return f"{text} · {verdict}"
