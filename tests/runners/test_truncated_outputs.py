"""No silent bad data: every real output with figures, cut short at many
offsets, either parses to exactly the figures of the whole output (the cut
came after the summary) or says so (ParseError, or an entry in errors).

A run killed mid-summary, a lost ssh connection or a full disk leave such
outputs; a parser that reads what is there as a clean result would put a
wrong number in a table.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from runners.errors import ParseError
from runners.tools import TOOLS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _complete_outputs() -> list[tuple[str, str]]:
    """(tool, fixture) for every capture that parses cleanly with figures."""
    found = []
    for tool, module in TOOLS.items():
        for path in sorted((FIXTURES / tool).glob("*.out")):
            try:
                result = module.parse(path.read_text())
            except ParseError:
                continue
            if result.errors or not (result.metrics or result.groups):
                continue
            found.append((tool, path.name.removesuffix(".out")))
    return found


COMPLETE = _complete_outputs()


def _offsets(text: str) -> list[int]:
    """Where to cut: each line's end (with and without its newline) and middle
    in the last 80 lines (where summaries are), ~60 evenly spread offsets
    before them, and a few characters off the very end."""
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    tail_from = starts[max(0, len(starts) - 80)]
    cuts = set(range(1, tail_from, max(1, tail_from // 60)))
    for start, end in zip(starts, starts[1:] + [len(text)]):
        if start >= tail_from:
            cuts.update({start, max(start, end - 1), (start + end) // 2, start + 1})
    cuts.update(len(text) - n for n in (1, 2, 3, 5, 8))
    return sorted(c for c in cuts if 0 < c < len(text))


def _figures(result) -> tuple:
    return (
        result.metrics,
        [(g.get("labels"), g.get("metrics")) for g in result.groups],
        result.series,
    )


def _whole_blocks_missing(result, whole: tuple) -> bool:
    """A cut between two whole blocks of a multi-block output (mysqlslap
    engines/concurrencies, redis-benchmark tests): the blocks that are there
    are exactly the first ones of the whole output. Nothing in the text says
    more were due; the cell compares the count with what the plan asked for
    (expected_groups, tests/runners/test_cut_blocks.py)."""
    metrics, groups, series = whole
    got = [(g.get("labels"), g.get("metrics")) for g in result.groups]
    return 0 < len(got) < len(groups) and got == groups[: len(got)] and result.series == series


def test_every_tool_has_complete_outputs_to_cut():
    assert {tool for tool, _ in COMPLETE} == set(TOOLS)


@pytest.mark.parametrize(("tool", "name"), COMPLETE, ids=[f"{t}-{n}" for t, n in COMPLETE])
def test_cut_output_gives_the_same_figures_or_says_so(tool, name):
    module = TOOLS[tool]
    text = (FIXTURES / tool / f"{name}.out").read_text()
    whole = _figures(module.parse(text))
    silent = []
    for cut in _offsets(text):
        try:
            result = module.parse(text[:cut])
        except ParseError:
            continue
        if result.errors:
            continue
        if _figures(result) != whole and not _whole_blocks_missing(result, whole):
            silent.append(cut)
    assert not silent, (
        f"{len(silent)} cuts parse cleanly to other figures, e.g. at {silent[:5]}: "
        f"...{text[max(0, silent[0] - 60) : silent[0]]!r}"
    )


def _cut_at(tool: str, name: str, marker: str, keep: int = 0) -> str:
    """The fixture's text up to `keep` characters past the last `marker`."""
    text = (FIXTURES / tool / f"{name}.out").read_text()
    return text[: text.rindex(marker) + keep]


@pytest.mark.parametrize(
    ("tool", "text", "error"),
    [
        (
            "mysqlslap",
            _cut_at("mysqlslap", "mysqlslap_load_mixed", "\tMaximum"),
            "Benchmark block 1 is cut short: no max_s, clients, queries_per_client",
        ),
        (
            "mysqlslap",
            _cut_at("mysqlslap", "mysqlslap_load_mixed", "client: ", 9),
            "output ends in the middle of a number (cut short?): Average number of queries per client: 1",
        ),
        (
            "pgbench",
            _cut_at("pgbench", "pgbench_run_c2_j2_T5", "tps ="),
            "pgbench summary cut short: no 'tps = ...' line (run interrupted or output cut)",
        ),
        (
            "pgbench",
            _cut_at("pgbench", "public_pgbench_pg13_including_connections", "tps =", 0),
            "pgbench summary cut short: no 'tps = ...' line (run interrupted or output cut)",
        ),
        (
            "sysbench",
            _cut_at("sysbench", "sysbench_oltp_read_write_run_p99", "General statistics"),
            "sysbench summary cut short: it stops before 'Threads fairness' (run killed or output cut)",
        ),
        (
            "sysbench",
            _cut_at("sysbench", "sysbench_oltp_read_write_run_interval_histogram", "SQL stat"),
            "sysbench output has interval lines but no summary (run interrupted or output cut)",
        ),
        (
            "stress_ng",
            _cut_at("stress_ng", "stressng_cpu1_l50_t3_metrics", "stress-ng: info:"),
            "stress-ng output cut short: no 'run completed' line after its metrics",
        ),
        (
            "redis_benchmark",
            _cut_at("redis_benchmark", "csv_set_get_incr", '"INCR"', 12),
            'output ends mid-line (cut off?): "INCR","7692',
        ),
    ],
)
def test_named_cuts_say_why(tool, text, error):
    assert error in TOOLS[tool].parse(text).errors


def test_fio_json_cut_is_a_parse_error():
    text = (FIXTURES / "fio" / "fio_randrw_4k_direct1_libaio_json.out").read_text()
    with pytest.raises(ParseError, match="truncated or malformed fio JSON"):
        TOOLS["fio"].parse(text[: text.index('"write"')])
