"""CPU profiles: `perf script` text folded into stacks, the tree a flame
graph draws, and the difference between two profiles.

`perf script -F comm,pid,tid,ip,sym,symoff,dso` prints one block per
sample, a header line then the stack, leaf first, and a blank line:

    mariadbd  3787/6376
              c69db3 my_md5+0x33 (/usr/sbin/mariadbd)
              b17e31 Item_func_md5::val_str_ascii+0x51 (/usr/sbin/mariadbd)
               891f5 start_thread+0x305 (/usr/lib/x86_64-linux-gnu/libc.so.6)

    sysbench 19604/19606
                c7ab [unknown] (/usr/bin/sysbench)

`fold` turns that into Brendan Gregg's folded form, root first, one line
per distinct stack with its sample count ("mariadbd;start_thread;...;my_md5 12"),
which is what is stored. A frame is named by `FRAME_RULES` (a table, in
order): the offset goes, a symbol-less frame of a stripped binary becomes
its module in brackets ("[sysbench]"), as stackcollapse-perf.pl names it.
"""

from __future__ import annotations

import re
from collections import Counter

HEADER = re.compile(r"^(?P<comm>\S.*?)\s+\d+(?:/\d+)?(?:\s|$)")
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")
# (pattern on "sym (dso)", replacement): the first that matches names the frame.
FRAME_RULES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"^\[unknown\] \(\[unknown\]\)$"), "[unknown]"),
    (re.compile(r"^\[unknown\] \((?:.*/)?\[?(?P<mod>[^/\[\]]+)\]?\)$"), r"[\g<mod>]"),
    (re.compile(r"^(?P<fn>.+?)\+0x[0-9a-f]+ \(.*\)$"), r"\g<fn>"),
    (re.compile(r"^(?P<fn>.+?) \(.*\)$"), r"\g<fn>"),
)
# A symbol's version tag (clock_gettime@@GLIBC_2.17) says nothing about the function.
VERSION_TAG = re.compile(r"@@?[A-Z_]+[0-9.]*$")
# Folded lines use ";" between frames and " " before the count.
_UNSAFE = str.maketrans({";": ":", "\n": " "})


def frame_name(sym: str, dso: str) -> str:
    """A frame's name in a folded stack (see FRAME_RULES)."""
    text = f"{sym} ({dso})"
    for pattern, replacement in FRAME_RULES:
        if pattern.match(text):
            name = pattern.sub(replacement, text)
            return VERSION_TAG.sub("", name).translate(_UNSAFE)
    return sym.translate(_UNSAFE)


def fold(text: str) -> Counter:
    """{"comm;root;...;leaf": samples} of perf script text; lines that are
    neither a header nor a frame (perf's warnings) are skipped."""
    stacks: Counter = Counter()
    comm, frames = None, []
    for line in [*text.splitlines(), ""]:
        if not line.strip():
            if comm is not None:
                stacks[";".join([comm, *reversed(frames)])] += 1
            comm, frames = None, []
            continue
        frame = FRAME.match(line)
        if frame and comm is not None:
            frames.append(frame_name(frame["sym"], frame["dso"]))
            continue
        header = HEADER.match(line)
        if header:
            comm, frames = header["comm"].strip().translate(_UNSAFE), []
    return stacks


def folded_text(stacks: Counter) -> str:
    """The stored form: one "stack count" line per stack, busiest first."""
    return "".join(f"{stack} {n}\n" for stack, n in stacks.most_common())


def read_folded(text: str) -> Counter:
    """The stacks of a stored folded text (lines that do not end in a count are skipped)."""
    stacks: Counter = Counter()
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks[stack] += int(count)
    return stacks


def tree(stacks: Counter, name: str = "all") -> dict:
    """The nested {"name", "value", "children"} a flame graph draws (value:
    samples of the frame and everything above it)."""
    root = {"name": name, "value": 0, "children": {}}
    for stack, count in stacks.items():
        node = root
        node["value"] += count
        for frame in stack.split(";"):
            node = node["children"].setdefault(frame, {"name": frame, "value": 0, "children": {}})
            node["value"] += count
    return _listed(root)


def _listed(node: dict) -> dict:
    children = sorted(node["children"].values(), key=lambda c: c["name"])
    return {**node, "children": [_listed(c) for c in children]}


def shares(stacks: Counter, self_only: bool = False) -> dict[str, float]:
    """Each function's share of the samples (0..1): of those whose stack
    holds it anywhere (inclusive), or whose leaf it is (self_only)."""
    total = sum(stacks.values())
    out: Counter = Counter()
    for stack, count in stacks.items():
        frames = stack.split(";")[1:] or stack.split(";")
        for frame in [frames[-1]] if self_only else set(frames):
            out[frame] += count
    return {frame: n / total for frame, n in out.items()} if total else {}


def top_frames(stacks: Counter, n: int = 5) -> list[tuple[str, float]]:
    """The n functions with the largest self share, largest first."""
    ranked = sorted(shares(stacks, self_only=True).items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked[:n]


def changes(before: Counter, after: Counter, n: int = 10) -> dict[str, list[dict]]:
    """The functions whose inclusive share grew most and shrank most from
    before to after: {"grew": [...], "shrank": [...]}, each entry
    {"function", "before", "after", "change"} in percentage points."""
    a, b = shares(before), shares(after)
    rows = [
        {
            "function": fn,
            "before": round(100 * a.get(fn, 0.0), 2),
            "after": round(100 * b.get(fn, 0.0), 2),
            "change": round(100 * (b.get(fn, 0.0) - a.get(fn, 0.0)), 2),
        }
        for fn in set(a) | set(b)
    ]
    grew = sorted((r for r in rows if r["change"] > 0), key=lambda r: (-r["change"], r["function"]))
    shrank = sorted(
        (r for r in rows if r["change"] < 0), key=lambda r: (r["change"], r["function"])
    )
    return {"grew": grew[:n], "shrank": shrank[:n]}


def diff_tree(before: Counter, after: Counter) -> dict:
    """The differential flame graph's tree: after's stacks as percentages of
    its samples, each node's "delta" its own (self) change in points from
    before (positive: more time there now). Stacks only before has are
    absent from the drawing; `changes` lists them."""
    total_a, total_b = sum(before.values()) or 1, sum(after.values()) or 1
    scaled = Counter({s: 100.0 * n / total_b for s, n in after.items()})
    root = tree(scaled, "all")
    _set_delta(root, [], before, after, total_a, total_b)
    return root


def _set_delta(node, path, before, after, total_a, total_b) -> None:
    key = ";".join(path)
    node["delta"] = round(100.0 * (after[key] / total_b - before[key] / total_a), 3) if path else 0
    for child in node["children"]:
        _set_delta(child, [*path, child["name"]], before, after, total_a, total_b)
