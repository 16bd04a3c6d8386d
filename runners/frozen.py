"""Frozen cells: everything one cell needs, as JSON, so executing a cell
never reloads or re-expands its plan.

`freeze(plan, cell)` keeps the cell's resolved parameters (after overrides)
and the plan's per-cell parts: phases (prepare, warmup, cleanup, timeout,
stress), the adaptive repeat rule, the cell's target, the client and the
target the client runs on.
`thaw(data)` gives back a (Plan, CellSpec) pair that runners.cell.run_cell
accepts; its Plan has only the cell's own axis values and targets.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from runners.combine import MIN_OVERLAP
from runners.plan import START_TOLERANCE_S, CellSpec, Plan
from runners.planspec import ClientSpec, PrepareSpec, SSHSpec, TargetSpec
from runners.repeats import RepeatRule

VERSION = 1


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
