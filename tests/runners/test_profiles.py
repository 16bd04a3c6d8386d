"""Folding perf script output (runners.profiles) over real captured outputs
(tests/fixtures/perf), the flame graph's tree and the difference of two profiles."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from runners.profiles import (
    changes,
    diff_tree,
    fold,
    folded_text,
    frame_name,
    read_folded,
    top_frames,
    tree,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "perf"


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


@pytest.mark.parametrize(
    ("name", "samples", "process", "top"),
    [
        ("sysbench_cpu.txt", 42, "sysbench", "[sysbench]"),
        ("sysbench_memory.txt", 31, "sysbench", "__vdso_clock_gettime"),
        ("mariadbd_md5.txt", 97, "mariadbd", "[libcrypto.so.3]"),
    ],
)
def test_fold_counts_every_sample_of_a_real_output(name, samples, process, top):
    stacks = fold(_fixture(name))
    assert sum(stacks.values()) == samples
    assert {stack.split(";", 1)[0] for stack in stacks} == {process}
    assert top_frames(stacks, 1)[0][0] == top


def test_fold_puts_the_root_first_and_drops_offsets():
    stacks = fold(_fixture("mariadbd_md5.txt"))
    md5 = [s for s in stacks if s.endswith(";my_md5")]
    assert md5, "the server's md5 frames"
    frames = md5[0].split(";")
    assert frames[:2] == ["mariadbd", "start_thread"]
    assert "Item_func_md5::val_str_ascii" in frames
    assert not any("+0x" in f for f in frames)


@pytest.mark.parametrize(
    ("sym", "dso", "name"),
    [
        ("my_md5+0x33", "/usr/sbin/mariadbd", "my_md5"),
        ("[unknown]", "/usr/bin/sysbench", "[sysbench]"),
        ("[unknown]", "[unknown]", "[unknown]"),
        ("[unknown]", "[vdso]", "[vdso]"),
        ("clock_gettime@@GLIBC_2.17+0x19", "/usr/lib/x86_64-linux-gnu/libc.so.6", "clock_gettime"),
        ("handle_softirqs+0x72", "[kernel.kallsyms]", "handle_softirqs"),
        ("std::map<int;int>::find+0x1", "/usr/bin/x", "std::map<int:int>::find"),
    ],
)
def test_frame_name_follows_the_rules_table(sym, dso, name):
    assert frame_name(sym, dso) == name


def test_fold_skips_what_is_not_a_sample():
    text = "Warning:\nKernel address maps were restricted\n\nsysbench 1/2\n\t 1b794 [unknown] (/usr/bin/sysbench)\n"
    assert fold(text) == Counter({"sysbench;[sysbench]": 1})


def test_folded_text_reads_back_the_same_stacks():
    stacks = fold(_fixture("sysbench_memory.txt"))
    assert read_folded(folded_text(stacks)) == stacks


def test_tree_values_add_up_to_the_samples():
    stacks = Counter({"a;f;g": 3, "a;f;h": 1, "a;k": 2})
    root = tree(stacks, "all")
    assert root["value"] == 6
    (a,) = root["children"]
    assert [(c["name"], c["value"]) for c in a["children"]] == [("f", 4), ("k", 2)]
    assert [(c["name"], c["value"]) for c in a["children"][0]["children"]] == [("g", 3), ("h", 1)]


def test_changes_name_the_function_that_grew_and_the_one_that_shrank():
    before = Counter({"p;main;work": 50, "p;main;clock": 50})
    after = Counter({"p;main;work": 90, "p;main;clock": 10})
    found = changes(before, after)
    assert found["grew"] == [{"function": "work", "before": 50.0, "after": 90.0, "change": 40.0}]
    assert found["shrank"] == [
        {"function": "clock", "before": 50.0, "after": 10.0, "change": -40.0}
    ]


def test_diff_tree_carries_each_frames_own_change():
    before = Counter({"p;main;work": 50, "p;main;clock": 50})
    after = Counter({"p;main;work": 90, "p;main;clock": 10})
    root = diff_tree(before, after)
    main = root["children"][0]["children"][0]
    assert root["value"] == pytest.approx(100.0)
    assert {c["name"]: c["delta"] for c in main["children"]} == {"clock": -40.0, "work": 40.0}
    assert main["delta"] == 0.0  # no sample had main itself as its leaf
