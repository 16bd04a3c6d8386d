"""Time the tool parsers on ~50 MB of output and print MB/s.

    .venv/bin/python scripts/bench_parsers.py [--mb 50]

sysbench: ~50 MB of 1.x --report-interval lines (numbers growing so column
spacing collapses, as in real long runs) followed by a real summary; the
target is under 1 s. Every other tool module present in runners/tools/ is
timed too: pgbench on 50 MB of -P progress lines, mysqlslap on 50 MB of
Benchmark blocks, and the rest (fio JSON, stress-ng) on their largest real
capture in tests/fixtures/<tool>/, parsed repeatedly until ~50 MB have
gone through. Every input is in the repository. Not a test: a measurement. The
generated cases also print CPU seconds, which stay meaningful when other
work shares the machine (wall time then mostly measures the queue).
"""

from __future__ import annotations

import argparse
import importlib
import pathlib
import pkgutil
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import runners.tools  # noqa: E402 (after the sys.path line above)

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


GENERATED = {"sysbench": sysbench_text, "pgbench": pgbench_text, "mysqlslap": mysqlslap_text}


def largest_capture(tool: str) -> str | None:
    """The biggest real capture in tests/fixtures/<tool>/ that parses for tool."""
    folder = FIXTURES / tool
    candidates = sorted(folder.glob("*.out")) if folder.is_dir() else []
    module = importlib.import_module(f"runners.tools.{tool}")
    for path in sorted(candidates, key=lambda p: p.stat().st_size, reverse=True):
        text = path.read_text()
        try:
            module.parse(text)
        except Exception:  # noqa: BLE001, S112 - a capture of an error; try the next one
            continue
        return text
    return None


def measure(tool: str, size: int) -> str:
    module = importlib.import_module(f"runners.tools.{tool}")
    if tool in GENERATED:
        text = GENERATED[tool](size)
        start, cpu = time.perf_counter(), time.process_time()
        result = module.parse(text)
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
        mb = len(text.encode()) / 1e6
        extra = f"{len(result.series.get('t', []))} series rows, {len(result.groups)} groups, {cpu:.3f} s CPU"
        return f"{tool:10s} {mb:7.1f} MB in {elapsed:6.3f} s = {mb / elapsed:8.1f} MB/s  ({extra})"
    text = largest_capture(tool)
    if text is None:
        return f"{tool:10s} no parseable capture found"
    rounds = max(1, size // max(1, len(text.encode())))
    start = time.perf_counter()
    for _ in range(rounds):
        module.parse(text)
    elapsed = time.perf_counter() - start
    mb = rounds * len(text.encode()) / 1e6
    return (
        f"{tool:10s} {mb:7.1f} MB in {elapsed:6.3f} s = {mb / elapsed:8.1f} MB/s  "
        f"({rounds} x a {len(text)}-byte real capture)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0)
    args = parser.parse_args()
    size = int(args.mb * 1e6)
    tools = [
        m.name
        for m in pkgutil.iter_modules(runners.tools.__path__)
        if m.name in runners.tools.TOOL_NAMES
    ]
    for tool in sorted(tools, key=lambda name: name != "sysbench"):
        try:
            print(measure(tool, size), flush=True)
        except Exception as exc:  # noqa: BLE001 - other people's modules may be unfinished
            print(f"{tool:10s} failed: {type(exc).__name__}: {exc}", flush=True)


if __name__ == "__main__":
    main()
