"""Printing `make bench`'s figures (bench/run.py) as a table."""

from __future__ import annotations

import json

# The harness overhead goal: through Benchboard / by hand within 1 %.
OVERHEAD_GOAL = (0.99, 1.01)


def ratio_text(row: dict | None) -> str:
    """ "0.996 [0.990, 1.002]": a ratio's mean and 95 % interval."""
    if row is None:
        return "-"
    ci = row.get("ci95")
    shown = f"{row['mean']:.3f}"
    return f"{shown} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else shown


def within_goal(row: dict | None) -> str:
    """met when the whole interval lies within the goal, else not met."""
    if row is None or not row.get("ci95"):
        return "?"
    low, high = row["ci95"]
    return "met" if OVERHEAD_GOAL[0] <= low and high <= OVERHEAD_GOAL[1] else "not met"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def print_overhead(study: dict) -> None:
    """The overhead study: per tool the CVs, the ratios with their 95 % intervals, the profile."""
    print(
        f"harness overhead: {study['pairs']} interleaved pairs per tool, arms "
        f"{', '.join(study['arms'])}; sandbox: {study['sandbox']}; load average "
        f"{study['load_average_start'][0]} -> {study['load_average_end'][0]}"
        + (" (quick: short jobs, not results)" if study.get("quick") else "")
    )
    print(
        f"{'tool':<10} {'metric':<10} {'CV hand':>8} {'CV board':>9} "
        f"{'board/hand [95 % CI]':>24} {'goal':>8} {'ssh/hand':>24} {'board/ssh':>24} "
        f"{'sandbox/hand':>24}"
    )
    for tool, row in study["tools"].items():
        ratios = row["ratios"]
        print(
            f"{tool:<10} {row['metric']:<10} {percent(row['cv']['hand']):>8} "
            f"{percent(row['cv'].get('board')):>9} "
            f"{ratio_text(ratios.get('board/hand')):>24} "
            f"{within_goal(ratios.get('board/hand')):>8} "
            f"{ratio_text(ratios.get('ssh/hand')):>24} "
            f"{ratio_text(ratios.get('board/ssh')):>24} "
            f"{ratio_text(ratios.get('sandbox/hand')):>24}"
        )
    print("(goal: board/hand in [0.99, 1.01] over the whole interval; by-hand CV <= 2 %)")
    print(
        f"{'tool':<10} {'harness CPU during the run, % of one core':>42} "
        f"{'cell beyond measure s':>22} {'dispatch s':>10}"
    )
    for tool, row in study["tools"].items():
        board, ssh = row["profile"]["board"], row["profile"]["ssh"]
        cpu = f"through Benchboard {board['harness_core_pct']}, over ssh {ssh['harness_core_pct']}"
        print(
            f"{tool:<10} {cpu:>42} {row['cell_beyond_measure_s']:>22} "
            f"{row['dispatch_latency_s']:>10}"
        )


def print_table(results: dict, written_to) -> None:
    """The figures of bench/run.py's results, a line each, next to their goals."""
    print(f"\nBenchboard bench — {results['date']} — {results['machine']['cpus']} CPUs")
    print_overhead(results["overhead"])
    print(f"per-cell overhead, local: {results['cell_overhead_local_s']:.2f} s")
    ssh = results.get("ssh_harness_overhead")
    if ssh:
        rest = ssh["further_cells_s"]
        print(
            f"harness cost per cell over SSH, plan's phases excluded: first cell "
            f"{ssh['first_cell_s']:.2f} s, further cells median {rest['median']:.2f} s "
            f"(min {rest['min']:.2f}, max {rest['max']:.2f}, n={rest['n']})  goal <= 0.50 s"
        )
    for name, row in results["cell_throughput"].items():
        print(
            f"cell throughput, {name.replace('_', ' ')}: {row['cells_per_min']} cells/min "
            f"({row['cells']} cells in {row['seconds']} s)"
        )
    if results.get("parsers"):
        print("parsers:", json.dumps(results["parsers"]))
    if results.get("pages"):
        print("pages:", json.dumps(results["pages"]))
    if results.get("browser_pages", {}).get("pages"):
        from bench.pages import print_figures

        print_figures(results["browser_pages"])
    print(f"written to {written_to}")
