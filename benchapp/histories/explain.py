"""What else changed at a change point: the alert's explanation.

A change point says that a series moved between two runs. The cells of that
series carry their environment (benchapp.store.envstore) and their verdict;
this module lists every setting and verdict that changed within a window
around the change, ranked by how far from the change point it changed: a
variable that changed exactly between the last run before and the first run
after comes first, one that changed three runs earlier after it. Plan edits
are named by planedits.straddled_edit; tool versions are in the environment's
"tools" group.
"""

from __future__ import annotations

from benchapp.models import Cell
from benchapp.store import envstore
from runners import environment

# Runs looked at on each side of the change point.
WINDOW = 4
# At one distance, a setting before a version before the verdict it explains.
GROUP_RANK = {"database": 0, "host": 1, "cloud": 2, "tools": 3, "verdict": 4}
# Entries kept per alert (the page, the email and the webhook show them all).
KEEP = 12


def _states(cell_key: str, run_ids: list[int]) -> dict[int, dict]:
    """{run id: flat {"group.key": value}} of the series' cell in each run
    (its first repeat), with the verdict as "verdict.limit"."""
    rows = (
        Cell.objects.filter(run_id__in=run_ids, key=cell_key)
        .order_by("run_id", "repeat")
        .values_list("run_id", "environment_id", "facts__verdict__limit")
    )
    first: dict[int, tuple] = {}
    for run_id, digest, limit in rows:
        first.setdefault(run_id, (digest, limit))
    contents = envstore.contents(d for d, _ in first.values())
    states = {}
    for run_id, (digest, limit) in first.items():
        flat = {}
        for group in ("database", "host", "cloud", "tools"):
            section = (contents.get(digest) or {}).get(group) or {}
            flat.update({f"{group}.{k}": v for k, v in environment.flatten(section).items()})
        if limit:
            flat["verdict.limit"] = limit
        states[run_id] = flat
    return states


def changes(cell_key: str, run_ids: list[int], position: int) -> list[dict]:
    """The settings that changed around run_ids[position] (the first run after
    the change point), nearest first: [{"group", "key", "before", "after",
    "run": the run from which the new value holds, "distance": 0 when it
    changed exactly at the change point, N when N runs away, "text": one line}]."""
    low, high = max(0, position - WINDOW), min(len(run_ids), position + WINDOW)
    window = run_ids[low:high]
    states = _states(cell_key, window)
    found: dict[str, dict] = {}
    for i in range(1, len(window)):
        before, after = states.get(window[i - 1]), states.get(window[i])
        if before is None or after is None:
            continue  # a run without this cell's environment says nothing
        distance = abs(low + i - position)
        for key in sorted(set(before) | set(after)):
            if before.get(key) == after.get(key):
                continue
            if key in found and found[key]["distance"] <= distance:
                continue
            group, _, name = key.partition(".")
            found[key] = {
                "group": group,
                "key": name,
                "before": before.get(key),
                "after": after.get(key),
                "run": window[i],
                "distance": distance,
            }
    ranked = sorted(found.values(), key=lambda c: (c["distance"], GROUP_RANK[c["group"]], c["key"]))
    return [{**change, "text": text(change)} for change in ranked[:KEEP]]


def text(change: dict) -> str:
    """One line: "innodb_buffer_pool_size 134217728 → 268435456 from run #41"."""
    name = change["key"].removeprefix("variables.")
    if change["group"] == "verdict":
        line = f"verdict changed from {change['before'] or 'none'} to {change['after'] or 'none'}"
    else:
        line = f"{name} {_shown(change['before'])} → {_shown(change['after'])}"
    when = "" if change["distance"] == 0 else f", {change['distance']} run(s) from the change"
    return f"{line} from run #{change['run']}{when}"


def _shown(value) -> str:
    return "(none)" if value in (None, "") else str(value)
