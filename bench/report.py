"""Printing `make bench`'s figures (bench/run.py) as a table."""

from __future__ import annotations

import json


def print_table(results: dict, written_to) -> None:
    """The figures of bench/run.py's results, a line each, next to their goals."""
    print(f"\nBenchboard bench — {results['date']} — {results['machine']['cpus']} CPUs")
    print(
        f"{'tool':<10} {'metric':<10} {'overhead_ratio':>14} {'cell overhead ssh s':>20} "
        f"{'harness s':>10} {'dispatch s':>10}"
    )
    for tool, row in results["overhead"].items():
        print(
            f"{tool:<10} {row['metric']:<10} {row['overhead_ratio']:>14.3f} "
            f"{row['cell_overhead_ssh_s']:>20.2f} "
            f"{row['harness_overhead_ssh_s']['median']:>10.2f} "
            f"{row['dispatch_latency_s']:>10.2f}"
        )
    print(
        "(cell overhead: cell time minus the measured run; harness: minus every phase of "
        "the plan, prepare and cleanup included)"
    )
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
