"""Frozen cells: everything one cell needs, as JSON, so executing a cell
never reloads or re-expands its plan.

`freeze(plan, cell)` keeps the cell's resolved parameters (after overrides)
and the plan's per-cell parts: phases (prepare, warmup, cleanup, timeout,
stress), the adaptive repeat rule, the cell's target, the client and the
target the client runs on.
`thaw(data)` gives back a (Plan, CellSpec) pair that runners.cell.run_cell
accepts; its Plan has only the cell's own axis values and targets.

Stored, a frozen cell is split (`split`): every part of PART_MIN bytes or
more (a SQL script, the plan's params, a target, a list of clients) becomes
a reference {"$part": key} to one entry of a run-level table of parts keyed
by the part's hash. Two thousand cells of one plan then store its script
once, not two thousand times (the cells' big parts all come from the one
document, so a run stores about its document plus a few hundred bytes per
cell). `resolve(stored, parts)` gives the whole frozen cell back; a split
cell (version SPLIT_VERSION) thaws only resolved.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any

from runners.combine import MIN_OVERLAP
from runners.plan import START_TOLERANCE_S, CellSpec, Plan
from runners.planspec import PrepareSpec
from runners.plantargets import ClientSpec, SSHSpec, TargetSpec
from runners.repeats import RepeatRule

VERSION = 1
SPLIT_VERSION = 2  # a cell whose large parts are references (split); resolve it first

# A part this big (compact JSON bytes) or bigger is stored once per run. Below
# it a reference (~80 bytes) would save nothing worth a row.
PART_MIN = 128
PART_KEY = "$part"
# Kept in the cell row whatever their size (their large children are parts):
# the row itself, and the parts that readers of many cells at once read
# without resolving (the ETA reads cell.params in SQL).
_KEPT = {(), ("cell",), ("cell", "params"), ("plan",)}


def freeze(plan: Plan, cell: CellSpec) -> dict[str, Any]:
    """The JSON form of one cell of a validated plan."""
    wanted = {cell.target}
    clients = plan.clients[: cell.clients]  # the ones this cell loads its target from
    wanted |= {c.target for c in clients if c.target and c.target != "target"}
    return {
        "version": VERSION,
        "cell": asdict(cell),
        "plan": {
            "name": plan.name,
            "tool": plan.tool,
            "params": plan.params,
            "seed": plan.seed,
            "warmup": plan.warmup,
            "stress": plan.stress,
            "cleanup": plan.cleanup,
            "timeout": plan.timeout,
            "telemetry": plan.telemetry,
            "profile": plan.profile,
            "prepare": asdict(plan.prepare),
            "client": asdict(plan.client),
            # The cell's other clients: "client" stays client 1, as before clients.
            "more_clients": [asdict(c) for c in clients[1:]],
            "start_tolerance": plan.start_tolerance,
            "min_overlap": plan.min_overlap,
            "repeat_rule": plan.repeat_rule.to_dict() if plan.repeat_rule else None,
            "targets": [asdict(t) for t in plan.targets if t.name in wanted],
        },
    }


def _ssh(data: dict | None) -> SSHSpec | None:
    return SSHSpec(**data) if data else None


def _target(data: dict) -> TargetSpec:
    return TargetSpec(
        **{
            **data,
            "ssh": _ssh(data.get("ssh")),
            "nodes": tuple(data.get("nodes") or ()),
            "data_dirs": tuple(data.get("data_dirs") or ()),
        }
    )


def _prepare(data: dict) -> PrepareSpec:
    return PrepareSpec(
        **{
            **data,
            "stop_command": tuple(data.get("stop_command") or ()),
            "start_command": tuple(data.get("start_command") or ()),
        }
    )


def thaw(data: dict[str, Any]) -> tuple[Plan, CellSpec]:
    """(Plan, CellSpec) of a frozen cell; ValueError for an unknown version."""
    if data.get("version") != VERSION:
        raise ValueError(f"frozen cell of version {data.get('version')!r}; expected {VERSION}")
    cell = CellSpec(**data["cell"])
    doc = data["plan"]
    client = doc["client"]
    clients = tuple(
        ClientSpec(**{**c, "ssh": _ssh(c.get("ssh"))})
        for c in [client, *doc.get("more_clients", [])]
    )
    plan = Plan(
        name=doc["name"],
        tool=doc["tool"],
        targets=tuple(_target(t) for t in doc["targets"]),
        client=clients[0],
        clients=clients,
        start_tolerance=doc.get("start_tolerance", START_TOLERANCE_S),
        min_overlap=doc.get("min_overlap", MIN_OVERLAP),
        params=doc["params"],
        axes={k: [v] for k, v in cell.axes.items()},
        overrides=(),
        seed=doc["seed"],
        prepare=_prepare(doc["prepare"]),
        warmup=doc["warmup"],
        stress=doc["stress"],
        cleanup=doc["cleanup"],
        timeout=doc["timeout"],
        telemetry=doc.get("telemetry", True),
        profile=doc.get("profile", False),
        document={},
        repeat_rule=RepeatRule(**rule) if (rule := doc.get("repeat_rule")) else None,
    )
    return plan, cell


# ------------------------------------------------------------ stored parts


class Parts(dict):
    """A run's table of parts, {key: part}, filled by split. It remembers the
    strings it has hashed (by identity: every cell of a plan shares its
    params' strings), so 2,000 cells hash a 256 KiB script once, not 2,000 times."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._strings: dict[int, tuple[str, Any, int]] = {}

    def string(self, value: str, path: tuple) -> tuple[Any, int]:
        seen = self._strings.get(id(value))
        if seen is None or seen[0] is not value:
            seen = self._strings[id(value)] = (value, *_part(value, self, path))
        return seen[1], seen[2]


def split(frozen: dict[str, Any], parts: Parts) -> dict[str, Any]:
    """The stored form of a frozen cell: each subtree of PART_MIN bytes or more
    replaced by {"$part": key}, parts[key] set to that subtree (whose own large
    subtrees are references too). parts is shared by all cells of a run, so
    equal subtrees are stored once. Dict keys starting with "$" are escaped
    with one more "$" (a plan's provision spec may use any key)."""
    return _split(frozen, parts, ())[0]


def _split(value: Any, parts: Parts, path: tuple) -> tuple[Any, int]:
    """(stored form, its JSON size in bytes) of value at path."""
    if isinstance(value, str):
        if len(value) < PART_MIN // 6:  # too short to reach PART_MIN, even escaped
            return value, len(value) + 2
        return parts.string(value, path)
    if isinstance(value, dict):
        stored, size = {}, 2
        for key, item in value.items():
            key = "$" + key if key.startswith("$") else key
            stored[key], item_size = _split(item, parts, (*path, key))
            size += len(key) + 4 + item_size
        return _part(stored, parts, path, size)
    if isinstance(value, (list, tuple)):
        items = [_split(item, parts, (*path, i)) for i, item in enumerate(value)]
        return _part([s for s, _ in items], parts, path, 2 + sum(n + 1 for _, n in items))
    return value, len(json.dumps(value))


def _part(value: Any, parts: dict, path: tuple, size: int | None = None) -> tuple[Any, int]:
    """(value, its size) when small or kept in the row, else (its reference,
    the reference's size) with parts[key] = value. size: the JSON size if known."""
    if path in _KEPT or (size is not None and size < PART_MIN):
        return value, size or 0
    text = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    if len(text) < PART_MIN:
        return value, len(text)
    key = hashlib.sha256(text).hexdigest()
    parts.setdefault(key, value)
    return {PART_KEY: key}, len(key) + 12


def references(stored: Any) -> set[str]:
    """The part keys stored refers to directly (not those of its parts)."""
    found: set[str] = set()
    _walk_refs(stored, found)
    return found


def _walk_refs(value: Any, found: set[str]) -> None:
    if isinstance(value, dict):
        if _is_ref(value):
            found.add(value[PART_KEY])
            return
        for item in value.values():
            _walk_refs(item, found)
    elif isinstance(value, list):
        for item in value:
            _walk_refs(item, found)


def closure(keys: set[str], parts: dict[str, Any]) -> set[str]:
    """keys and every key their parts refer to, transitively."""
    seen: set[str] = set()
    todo = list(keys)
    while todo:
        key = todo.pop()
        if key not in seen and key in parts:
            seen.add(key)
            todo.extend(references(parts[key]) - seen)
    return seen


def resolve(stored: dict[str, Any], parts: dict[str, Any]) -> dict[str, Any]:
    """The whole frozen cell (version VERSION) of a stored one: references
    replaced by their parts, escaped keys restored. A cell stored whole
    (version VERSION, before cells were split) is returned as it is.
    ValueError naming a part the table lacks."""
    if stored.get("version") != SPLIT_VERSION:
        return stored
    whole = _resolve(stored, parts)
    whole["version"] = VERSION
    return whole


def _resolve(value: Any, parts: dict[str, Any]) -> Any:
    if isinstance(value, dict):
        if _is_ref(value):
            key = value[PART_KEY]
            if key not in parts:
                raise ValueError(f"frozen cell refers to part {key[:12]}, which the run lacks")
            return _resolve(parts[key], parts)
        return {(k[1:] if k.startswith("$") else k): _resolve(v, parts) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(item, parts) for item in value]
    return value


def _is_ref(value: dict) -> bool:
    # Escaped user keys start with "$$": a one-key {"$part": ...} is always ours.
    return len(value) == 1 and PART_KEY in value and isinstance(value[PART_KEY], str)


def split_freeze(plan: Plan, cell: CellSpec, parts: Parts) -> dict[str, Any]:
    """freeze then split: the cell row start_run stores, its parts added to parts."""
    stored = split(freeze(plan, cell), parts)
    stored["version"] = SPLIT_VERSION
    return stored
