"""Time the tool parsers on ~50 MB outputs and print MB/s (goal: 50 MB/s each).

    .venv/bin/python scripts/bench_parsers.py [--mb 50]

Each tool's output is read as a worker reads it (runners.tools.read_output:
the tool's parse() with the cycle collector paused), one ~50 MB output built
from its real captures in tests/fixtures/<tool>/ (every input is in the
repository):

- sysbench: 1.x --report-interval lines (numbers growing so column spacing
  collapses, as in real long runs), then a real summary;
- pgbench: -P progress lines around a real capture's summary;
- mysqlslap: a real capture's Benchmark blocks repeated (many engines and
  concurrencies);
- fio: one JSON document whose "jobs" list repeats the largest capture's jobs
  (as numjobs without group_reporting prints them);
- redis_benchmark: the largest capture's tests repeated (as --loop prints them).

stress-ng's output under Benchboard is one short table (about 1 KB): no
50 MB output of it exists, so it is timed on its largest real capture parsed
again and again until ~50 MB have gone through, which measures the cost per
output. fio and redis-benchmark are timed that way too ("small" lines).

Every line gives wall time and CPU time: CPU seconds stay meaningful when
other work shares the machine (wall time then mostly measures the queue).
These figures scale with the CPU's single-thread speed, so the script also
times one fixed piece of pure Python (`sum(range(10**6))`, best of 5) as a
yardstick: parsers on two machines compare once divided by it. The last
line is the same figures as JSON. Not a test: a measurement.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import pathlib
import sys
import time
import timeit

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from runners.tools import TOOL_NAMES, read_output  # noqa: E402 (after the sys.path line above)

GOAL_MB_S = 50.0
FIXTURES = ROOT / "tests" / "fixtures"
SYSBENCH_SUMMARY = (
    ROOT / "tests/fixtures/sysbench/sysbench_oltp_read_write_run_p99.out"
).read_text()
SYSBENCH_SUMMARY = SYSBENCH_SUMMARY[SYSBENCH_SUMMARY.index("SQL statistics:") :]


def sysbench_text(size: int) -> str:
    """1.x interval lines up to `size` bytes, then a real summary."""
    lines, total, t = [], 0, 0
    while total < size:
        t += 1
        tps = 500 + (t % 977) * 131.17  # grows past the column widths now and then
        line = (
            f"[ {t}s ] thds: 64 tps: {tps:.2f} qps: {tps * 20:.2f} "
            f"(r/w/o: {tps * 14:.2f}/{tps * 4:.2f}/{tps * 2:.2f}) lat (ms,95%): {3 + t % 50 / 7:.2f} "
            f"err/s: {t % 3:.2f} reconn/s: 0.00\n"
        )
        lines.append(line)
        total += len(line)
    return (
        "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\nThreads started!\n\n"
        + "".join(lines)
        + SYSBENCH_SUMMARY
    )


def pgbench_text(size: int) -> str:
    """pgbench -P progress lines up to `size` bytes around a real capture's summary."""
    real = (FIXTURES / "pgbench" / "pgbench_run_c2_j2_T5_progress1_latency.out").read_text()
    head, _, _ = real.partition("progress:")
    summary = real[real.index("transaction type:") :] if "transaction type:" in real else ""
    lines, total, t = [], 0, 0
    while total < size:
        t += 1
        line = f"progress: {t}.0 s, {600 + t % 333:.1f} tps, lat {3 + t % 40 / 9:.3f} ms stddev 4.053, 0 failed\n"
        lines.append(line)
        total += len(line)
    return head + "".join(lines) + summary


def mysqlslap_text(size: int) -> str:
    block = (ROOT / "tests/fixtures/mysqlslap/mysqlslap_multi_engine.out").read_text()
    return block * (size // len(block) + 1)


def fio_text(size: int) -> str:
    """The largest capture's JSON with its "jobs" entries repeated up to `size` bytes."""
    real = largest_capture("fio")
    start = real.index('"jobs" : [') + len('"jobs" : [')
    end = real.index("\n  ],", start)
    jobs = real[start:end]
    return real[:start] + ",".join([jobs] * (size // len(jobs) + 1)) + real[end:]


def redis_benchmark_text(size: int) -> str:
    real = largest_capture("redis_benchmark")
    return real * (size // len(real) + 1)


GENERATED = {
    "sysbench": sysbench_text,
    "pgbench": pgbench_text,
    "mysqlslap": mysqlslap_text,
    "fio": fio_text,
    "redis_benchmark": redis_benchmark_text,
}
SMALL = ("fio", "redis_benchmark", "stress_ng")  # timed per real capture as well


def largest_capture(tool: str) -> str | None:
    """The biggest real capture in tests/fixtures/<tool>/ that parses for tool."""
    folder = FIXTURES / tool
    candidates = sorted(folder.glob("*.out")) if folder.is_dir() else []
    for path in sorted(candidates, key=lambda p: p.stat().st_size, reverse=True):
        text = path.read_text()
        try:
            read_output(tool, text)
        except Exception:  # noqa: BLE001, S112 - a capture of an error; try the next one
            continue
        return text
    return None


def timed(parse, text: str, rounds: int = 1) -> dict:
    """Parse text `rounds` times: MB, wall and CPU seconds, MB/s of each."""
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(rounds):
        result = parse(text)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    mb = rounds * len(text.encode()) / 1e6
    return {
        "mb": round(mb, 1),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "mb_s": round(mb / wall, 1),
        "cpu_mb_s": round(mb / cpu, 1) if cpu else None,
        "result": result,
    }


def measure(tool: str, size: int) -> dict[str, dict]:
    """{label: figures} for one tool: its 50 MB output and, for SMALL, per capture."""
    parse = functools.partial(read_output, tool)
    out = {}
    if tool in GENERATED:
        figures = timed(parse, GENERATED[tool](size))
        result = figures.pop("result")
        rows = len(result.series.get("t", []))
        figures["input"] = f"one output: {len(result.groups)} groups" + (
            f", {rows} series rows" if rows else ""
        )
        out[tool] = figures
    if tool in SMALL:
        text = largest_capture(tool)
        rounds = max(1, size // len(text.encode()))
        figures = timed(parse, text, rounds)
        figures.pop("result")
        figures["input"] = f"{rounds} x a {len(text)}-byte real capture"
        out[tool if tool not in GENERATED else f"{tool} small"] = figures
    return out


def yardstick_ms() -> float:
    """Milliseconds this CPU takes for sum(range(10**6)), best of 5: how fast
    it runs plain Python, to compare parser figures across machines."""
    return round(min(timeit.repeat("sum(range(10**6))", number=1, repeat=5)) * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0)
    args = parser.parse_args()
    size = int(args.mb * 1e6)
    figures: dict[str, dict] = {}
    for tool in sorted(TOOL_NAMES, key=lambda name: name != "sysbench"):
        try:
            found = measure(tool, size)
        except Exception as exc:  # noqa: BLE001 - report the tool, time the others
            print(f"{tool:21s} failed: {type(exc).__name__}: {exc}", flush=True)
            continue
        for label, f in found.items():
            print(
                f"{label:21s} {f['mb']:5.1f} MB in {f['wall_s']:6.3f} s = {f['mb_s']:6.1f} MB/s, "
                f"{f['cpu_s']:6.3f} s CPU = {f['cpu_mb_s']:6.1f} MB/s  ({f['input']})",
                flush=True,
            )
        figures.update(found)
    load = os.getloadavg()[0]
    yardstick = yardstick_ms()
    print(
        f"goal {GOAL_MB_S:.0f} MB/s per tool; load average {load:.2f}; "
        f"this CPU runs sum(range(10**6)) in {yardstick:.1f} ms"
    )
    summary = {"goal_mb_s": GOAL_MB_S, "load_average": round(load, 2), "yardstick_ms": yardstick}
    print(json.dumps({**summary, "tools": figures}))


if __name__ == "__main__":
    main()
