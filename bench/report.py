"""Printing `make bench`'s figures (bench/run.py) as a table."""

from __future__ import annotations

import json
import statistics


def spread(values: list[float], digits: int = 3) -> dict:
    """The median and range every figure of the bench is reported with."""
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "n": len(values),
    }


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
        f"harness overhead: {study['pairs']} interleaved pairs per tool of "
        f"{study.get('seconds', '?')} s jobs, arms "
        f"{', '.join(study['arms'])}; sandbox: {study['sandbox']}; load average "
        f"{study['load_average_start'][0]} -> {study['load_average_end'][0]}"
        + (" (quick: short jobs, not results)" if study.get("quick") else "")
    )
    print(
        f"{'tool':<10} {'metric':<10} {'CV hand':>8} {'CV board':>9} "
        f"{'board/hand [95 % CI]':>24} {'goal':>8} {'pairs for +-1 %':>16} {'ssh/hand':>24} "
        f"{'board/ssh':>24} {'sandbox/hand':>24}"
    )
    for tool, row in study["tools"].items():
        ratios = row["ratios"]
        print(
            f"{tool:<10} {row['metric']:<10} {percent(row['cv']['hand']):>8} "
            f"{percent(row['cv'].get('board')):>9} "
            f"{ratio_text(ratios.get('board/hand')):>24} "
            f"{within_goal(ratios.get('board/hand')):>8} "
            f"{(ratios.get('board/hand') or {}).get('pairs_for_1pct') or '-':>16} "
            f"{ratio_text(ratios.get('ssh/hand')):>24} "
            f"{ratio_text(ratios.get('board/ssh')):>24} "
            f"{ratio_text(ratios.get('sandbox/hand')):>24}"
        )
    print(
        "(goal: board/hand in [0.99, 1.01] over the whole interval; by-hand CV <= 2 %; "
        "pairs for +-1 %: how many pairs a 95 % interval of +-1 % needs at the spread seen)"
    )
    for tool, row in study["tools"].items():
        quiet = row["ratios"].get("board/board_quiet")
        if quiet:
            print(
                f"{tool:<10} telemetry on/off (board/board_quiet): {ratio_text(quiet)}  "
                "goal: the interval contains 1.0 (no change beyond the noise)"
            )
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
    if results.get("scale"):
        print_scale(results["scale"])
    if results.get("parsers"):
        print_parsers(results["parsers"])
    if results.get("series_storage"):
        print_series_storage(results["series_storage"])
    if results.get("telemetry_cost"):
        print_telemetry_cost(results["telemetry_cost"])
    if results.get("pages"):
        print_server_pages(results["pages"])
    if results.get("year"):
        print_year(results["year"])
    if results.get("browser_pages", {}).get("pages"):
        print_browser_pages(results["browser_pages"])
    print(f"written to {written_to}")


def print_telemetry_cost(figures: dict) -> None:
    """The host sampler's CPU and the tool's throughput with it on and off (with spread)."""
    on, off = figures["eps_on"], figures["eps_off"]
    spread = max(
        statistics.stdev(on) / statistics.mean(on), statistics.stdev(off) / statistics.mean(off)
    )
    print(
        f"telemetry sampler: {figures['sampler_core_pct']:.2f} % of one core  goal <= 1 %; "
        f"sysbench cpu with it on/off {figures['on_over_off']:.3f} (rounds' spread up to "
        f"{100 * spread:.0f} %: a difference smaller than that is not shown)"
    )


def print_series_storage(figures: dict) -> None:
    """Bytes per per-second value, one row per value (before) vs the series store."""
    if "cell_series" not in figures:
        print(f"series storage: not measured ({figures})")
        return
    before, after = figures["row_per_value"], figures["cell_series"]
    print(
        f"series storage per value ({figures['values_per_run']:,} values, a 600 s run with "
        f"telemetry): one row per value {before['bytes_per_value']} B ({before['mb_per_run']} MB "
        f"per run), series store {after['bytes_per_value']} B ({after['mb_per_run']} MB per run)"
    )
    m = figures.get("measurements")
    if m:
        print(
            f"measurement storage per value ({m['values']:,} values): one row per value "
            f"{m['row_per_value_bytes']} B, packed store {m['packed_bytes']} B  goal <= 60 B"
        )


def print_year(figures: dict) -> None:
    """The generated year (scripts/bench_scale.py): its size, storage per table, page budgets."""
    if "pages" not in figures:
        print(f"generated year: not measured ({json.dumps(figures)[:300]})")
        return
    storage = figures["storage"]
    print(
        f"generated year at scale {figures['scale']:g}: {figures['runs']:,} runs, "
        f"{figures['measurements']:,} measurements, {figures['series_values']:,} series values; "
        f"{storage['bytes_per_measurement']} B per measurement (goal <= 60), "
        f"{storage['bytes_per_series_value']} B per series value"
    )
    for table, size in storage.items():
        if isinstance(size, dict):
            print(f"  {table:<28} {size['bytes'] / 1e9:7.2f} GB  {size['per_run']:>8,} B/run")
    for row in figures["pages"]:
        print(
            f"  {row['page']:<24} cold {row['cold_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms  "
            f"goal {row['goal_ms']} ms  {row['queries']:2d} queries  "
            f"{'met' if row['met'] else 'NOT met'}"
        )


def print_scale(scale: dict) -> None:
    """Cells per minute per worker count and the 2,000-cell start, next to their goals."""
    tp = scale["cell_throughput"]
    print(
        f"scale: {tp['cells']} fio cells of {tp['cell_runtime_s']} s that wait on a rate limit, "
        f"{tp['targets']} targets, {tp['rounds']} interleaved rounds (median, min-max):"
    )
    print(
        f"{'workers':>8} {'cells/min':>22} {'speedup':>20} {'goal':>8} {'cell s':>7} "
        f"{'idle s/cell':>11} {'load':>5}"
    )
    for workers, row in tp["workers"].items():
        per_min, rounds = row["cells_per_min"], row["speedup_per_round"]
        goal = row["goal_speedup"] if workers != "1" else None
        verdict = "" if goal is None else ("met" if row["speedup"] >= goal else "NOT met")
        print(
            f"{workers:>8} {per_min['median']:>8.1f} ({per_min['min']:.1f}-{per_min['max']:.1f}) "
            f"{row['speedup']:>6.2f} ({rounds['min']:.2f}-{rounds['max']:.2f}) "
            f"{'' if goal is None else f'>= {goal:.1f}':>8} {row['cell_s']['median']:>7.2f} "
            f"{row['idle_s_per_cell']['median']:>11.3f} {row['load_avg']['median']:>5.1f} {verdict}"
        )
    print_pool(scale.get("pool"))
    start = (scale.get("lifecycle") or {}).get("2000")
    if start:
        s, goal = start["start_run_s"], start["goal_start_s"]
        print(
            f"starting a 2,000-cell plan: {s['median']:.2f} s ({s['min']:.2f}-{s['max']:.2f}, "
            f"n={s['n']})  goal <= {goal:.1f} s {'met' if s['median'] <= goal else 'NOT met'}; "
            f"dispatch per cell {start['dispatch_per_cell_ms']:.1f} ms"
        )
    else:
        print("starting a 2,000-cell plan: not measured (bench/lifecycle.py failed)")


def print_pool(pool: dict | None) -> None:
    """Local cells per minute with 1 and 2 worker hosts, and a lost host's cell."""
    if not pool:
        return
    one, two, rounds = pool["one_host"], pool["two_hosts"], pool["speedup_per_round"]
    goal = pool["goal_speedup"]
    print(
        f"pool: {pool['cells']} local fio cells of {pool['cell_runtime_s']} s, "
        f"{pool['rounds']} interleaved rounds (median, min-max): "
        f"1 host {one['median']:.1f} ({one['min']:.1f}-{one['max']:.1f}) cells/min, "
        f"2 hosts {two['median']:.1f} ({two['min']:.1f}-{two['max']:.1f}); "
        f"speedup {pool['speedup']:.2f} ({rounds['min']:.2f}-{rounds['max']:.2f}) "
        f"goal >= {goal:.1f} {'met' if pool['speedup'] >= goal else 'NOT met'}"
    )
    lost = pool.get("lost_host")
    if lost:
        print(
            f"a killed host's cell ran on the other host {lost['seconds']:.1f} s after the kill "
            f"(lease {lost['lease_s']} s, reap every 1 s)"
        )


def print_parsers(parsers: dict) -> None:
    """MB/s per tool (wall and CPU) next to the 50 MB/s goal."""
    if "tools" not in parsers:  # the script failed: show what it printed
        print("parsers:", json.dumps(parsers))
        return
    goal = parsers["goal_mb_s"]
    yardstick = parsers.get("yardstick_ms")
    speed = f", this CPU runs sum(range(10**6)) in {yardstick} ms" if yardstick else ""
    print(f"parsers on ~50 MB outputs, load average {parsers['load_average']}{speed}:")
    for tool, row in parsers["tools"].items():
        verdict = "met" if row["cpu_mb_s"] >= goal else "NOT met"
        print(
            f"  {tool:<22} {row['mb_s']:>7.1f} MB/s wall {row['cpu_mb_s']:>7.1f} MB/s CPU  "
            f"goal >= {goal:.0f} (CPU) {verdict}  [{row['input']}]"
        )


def print_server_pages(pages: dict) -> None:
    """Server time of the results pages per database size, the comparison page's budget."""
    print("results pages, server time (Django test client):")
    for size, figures in pages.items():
        if not figures or "pages" not in figures:
            print(f"  {size} measurements: not measured {json.dumps(figures)[:200]}")
            continue
        for row in figures["pages"]:
            goal = ""
            if row["page"] == "comparison page":
                ok = row["p95_ms"] <= 200 and row["queries"] <= 10
                goal = f"  goal p95 <= 200 ms, <= 10 queries {'met' if ok else 'NOT met'}"
            print(
                f"  {figures['measurements']:>9,} {row['page']:<24} p50 {row['p50_ms']:>6.1f} ms "
                f"p95 {row['p95_ms']:>6.1f} ms {row['queries']:>2} queries{goal}"
            )


def print_browser_pages(figures: dict) -> None:
    """The browser pages' figures (bench/pages.py) against their goals."""
    goals = figures["goals"]
    for name, row in figures["pages"].items():
        print(f"{name}:")
        for key, unit in (("cold_s", "s"), ("warm_s", "s"), ("first_load_bytes", "B")):
            s = row[key]
            met = "met" if s["median"] <= goals[key] else "NOT met"
            print(
                f"  {key:<17} median {s['median']:>10,} {unit} (min {s['min']:,}, "
                f"max {s['max']:,}, n={s['n']})  goal <= {goals[key]:,} {unit}: {met}"
            )
        for key in ("cold_timeline_ms", "warm_timeline_ms"):
            if key in row:
                steps = ", ".join(f"{k[:-3]} {v}" for k, v in row[key].items())
                print(f"  {key:<17} {steps} (ms, medians)")
