"""What host telemetry costs: the sampler's CPU per second, and a tool's
throughput with the sampler running and without.

    .venv/bin/python scripts/bench_sampler.py [--seconds 60] [--rounds 5] [--round-s 10]

1. The host sampler (runners.hostsampler.sampler_command, the shell loop a cell
   runs) alone for --seconds: its CPU time (user + system of the shell and
   every process it forked and reaped) divided by the wall time. Goal: at
   most 1 % of one core.
2. `sysbench cpu --threads=1` for --round-s seconds, alternately with and
   without the sampler, --rounds times each (alternating, so a neighbour's
   load drifting over the minutes lands on both arms): events per second,
   mean and spread of each arm. The sampler "costs nothing measurable" when
   the difference of the means is within the rounds' spread.

Not a test: a measurement. The last line is the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import time

from runners import hostsampler


def start_sampler() -> subprocess.Popen:
    argv = hostsampler.sampler_command().argv
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    os.killpg(process.pid, signal.SIGTERM)
    process.wait()


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def sampler_cpu_per_second(seconds: float) -> float:
    """CPU seconds per wall second of the sampler alone."""
    before, started = children_cpu(), time.monotonic()
    process = start_sampler()
    time.sleep(seconds)
    stop(process)
    return (children_cpu() - before) / (time.monotonic() - started)


def sysbench_eps(seconds: int) -> float:
    out = subprocess.run(
        ["sysbench", "cpu", "--threads=1", f"--time={seconds}", "run"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(re.search(r"events per second:\s*([\d.]+)", out).group(1))


def throughput(rounds: int, round_s: int) -> dict[str, list[float]]:
    arms: dict[str, list[float]] = {"on": [], "off": []}
    for _ in range(rounds):
        for arm in ("on", "off"):
            process = start_sampler() if arm == "on" else None
            arms[arm].append(sysbench_eps(round_s))
            if process:
                stop(process)
    return arms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--round-s", type=int, default=10)
    args = parser.parse_args()
    cpu = sampler_cpu_per_second(args.seconds)
    print(f"sampler alone: {100 * cpu:.2f} % of one core over {args.seconds:g} s (goal <= 1 %)")
    arms = throughput(args.rounds, args.round_s)
    figures = {"sampler_core_pct": round(100 * cpu, 3)}
    for arm, values in arms.items():
        mean, sd = statistics.mean(values), statistics.stdev(values)
        print(
            f"sysbench cpu, sampler {arm}: {mean:.1f} events/s, sd {sd:.1f} "
            f"({100 * sd / mean:.1f} %), rounds {', '.join(f'{v:.0f}' for v in values)}"
        )
        figures[f"eps_{arm}"] = values
    on, off = statistics.mean(arms["on"]), statistics.mean(arms["off"])
    print(f"on/off: {on / off:.4f}")
    figures["on_over_off"] = round(on / off, 4)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
