"""Plan files: validation into a `Plan`, and expansion into cells.

A plan is the YAML/JSON document of DESIGN.md ("Plan files"). `load_plan`
checks it and names the key path of the first problem
("targets[1].port: expected an integer"); `expand` turns it into the ordered
list of `CellSpec`s a run executes; `dump_plan` writes it back as YAML.
Everything here is pure: no I/O besides parsing the text it is given.
"""

from __future__ import annotations

import copy
import itertools
import json
import random
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from runners.combine import MIN_OVERLAP
from runners.errors import ValidationError
from runners.metrics import Metric
from runners.params import Checked
from runners.phases import placeholder_endpoint, tool_steps
from runners.planread import (
    CLIENTS_AXIS,
    bounded,
    identity,
    parse_text,
    plain,
    read_axes,
    read_overrides,
    read_param_block,
    read_params,
)
from runners.planspec import (
    STRESS_AXES,
    Doc,
    PrepareSpec,
    canonical,
    check_no_inline_secrets,
    read_prepare,
    read_stress,
)
from runners.plantargets import ClientSpec, TargetSpec, read_clients, read_targets
from runners.repeats import RepeatRule, read_repeat
from runners.tools import MEASURED_TOOLS, get_tool, metric

ORDERS = ("sequential", "interleaved", "shuffled")
ISOLATIONS = ("machine", "run", "target")
SPECIAL_AXES = ("target", "volumes", CLIENTS_AXIS, *STRESS_AXES)
# Clients whose measured phases start further apart than this (seconds) do
# not load the target together: the cell is not counted (plan key start_tolerance).
START_TOLERANCE_S = 2.0
# Above this many axis combinations load_plan checks each value on its own
# instead of every combination (expand still validates every cell).
FULL_CHECK_LIMIT = 5000


@dataclass(frozen=True)
class Plan:
    """A validated plan. `document` is the plain dict it was read from."""

    name: str
    tool: str
    targets: tuple[TargetSpec, ...]
    client: ClientSpec  # the first of `clients`
    params: dict[str, Any]
    axes: dict[str, list[Any]]
    overrides: tuple[tuple[dict[str, Any], dict[str, Any]], ...]
    repeat: int = 1  # cells per combination (an adaptive rule's max)
    repeat_rule: RepeatRule | None = None  # `repeat: {min, max, until_cv, metric}`
    order: str = "sequential"
    seed: int | None = None
    prepare: PrepareSpec = field(default_factory=PrepareSpec)
    warmup: dict[str, Any] | None = None
    stress: dict[str, Any] | None = None
    cleanup: bool | None = None
    timeout: int | None = None
    telemetry: bool = True  # host and database telemetry during the measure
    profile: bool = False  # CPU profiles (perf) of the server and the tool during the measure
    # Which cells may overlap (runners.isolation): none sharing a machine
    # ("machine"), nothing else on the run's machines ("run"), or only cells of
    # one target are kept apart ("target").
    isolation: str = "machine"
    # Every listed client; a cell uses the first `CellSpec.clients` of them.
    clients: tuple[ClientSpec, ...] = (ClientSpec(),)
    start_tolerance: float = START_TOLERANCE_S
    min_overlap: float = MIN_OVERLAP  # share of the span every client ran (runners.combine)
    document: dict[str, Any] = field(default_factory=dict, compare=False)
    # What load_plan's check of every combination made of each one's params
    # (validated, in _combinations order), kept so `expand` does not
    # validate them again: (params, axes, overrides) they were made from, params.
    checked: tuple | None = field(default=None, compare=False, repr=False)

    @property
    def provisioned_client(self) -> ClientSpec | None:
        """The client to provision for the run (at most one: read_clients), or None."""
        return next((c for c in self.clients if c.provision is not None), None)

    def client_paths(self) -> list[tuple[str, ClientSpec]]:
        """(key path, client) of every distinct client: "client", or "client[i]"
        (the i-th client after `count` repeats) when the plan lists several."""
        if len(self.clients) == 1:
            return [("client", self.clients[0])]
        unique = dict.fromkeys(self.clients)
        return [(f"client[{self.clients.index(c)}]", c) for c in unique]

    def target(self, name: str) -> TargetSpec:
        """The target called name (names were checked at load time)."""
        return next(t for t in self.targets if t.name == name)


@dataclass(frozen=True)
class CellSpec:
    """One combination of axis values and one repetition.

    index: 1-based position in run order; key: the combination as sorted
    "axis=value" pairs (equal for every repeat of it); params: the tool's
    typed canonical parameters after overrides; stress: {"cpu", "cpu_load",
    ["taskset"]} or None; volumes: the `volumes` axis value or None.
    """

    index: int
    key: str
    axes: dict[str, Any]
    repeat: int
    target: str
    params: dict[str, Any]
    stress: dict[str, Any] | None = None
    volumes: int | None = None
    clients: int = 1  # how many of the plan's clients load the target together (client_hosts)


# ---------------------------------------------------------------- loading


def load_plan(source: str | bytes | dict) -> Plan:
    """Read a plan from YAML/JSON text or a parsed dict; ValidationError if wrong."""
    data = parse_text(source) if isinstance(source, (str, bytes)) else bounded(source)
    if not isinstance(data, dict):
        raise ValidationError("", "a plan must be a mapping of keys (name, tool, targets, ...)")
    document = plain(data)
    check_no_inline_secrets(document)
    doc = Doc(document, "")
    tool_name = doc.choice("tool", MEASURED_TOOLS, required=True)
    tool = get_tool(tool_name)
    targets = read_targets(doc, tool_name)
    names = [t.name for t in targets]
    clients = read_clients(doc, names)
    tolerance = doc.number("start_tolerance", lo=0)
    overlap = doc.number("min_overlap", lo=0)
    if overlap is not None and overlap > 1:
        raise ValidationError("min_overlap", f"a share between 0 and 1, got {overlap!r}")
    plan = Plan(
        name=doc.text("name", required=True, pattern=None, max_len=200),
        tool=tool_name,
        targets=targets,
        client=clients[0],
        clients=clients,
        start_tolerance=START_TOLERANCE_S if tolerance is None else float(tolerance),
        min_overlap=MIN_OVERLAP if overlap is None else float(overlap),
        params=read_params(doc, tool_name),
        axes=read_axes(doc, tool, names),
        overrides=(),
        order=doc.choice("order", ORDERS, default="sequential"),
        seed=doc.integer("seed", lo=0),
        prepare=read_prepare(doc, tool),
        warmup=read_param_block(doc, "warmup", tool),
        stress=read_stress(doc),
        cleanup=doc.boolean("cleanup"),
        timeout=doc.integer("timeout", lo=1),
        telemetry=doc.boolean("telemetry", default=True),
        profile=doc.boolean("profile", default=False),
        isolation=doc.choice("isolation", ISOLATIONS, default="machine"),
        document=document,
    )
    repeat, rule = read_repeat(doc, lambda name: _measures(tool_name, name))
    plan = replace(
        plan, overrides=read_overrides(doc, tool, plan.axes, names), repeat=repeat, repeat_rule=rule
    )
    doc.done()
    _check_clients_axis(plan)
    if len(targets) > 1 and "target" not in plan.axes:
        raise ValidationError(
            "axes", "several targets: add a `target` axis listing the ones to run"
        )
    return replace(plan, checked=_check_combinations(plan, tool))


def _check_clients_axis(plan: Plan) -> None:
    """A `client_hosts` axis value must name a count of listed clients."""
    for i, count in enumerate(plan.axes.get(CLIENTS_AXIS, ())):
        if count > len(plan.clients):
            raise ValidationError(
                f"axes.{CLIENTS_AXIS}[{i}]",
                f"{count} clients, but the plan lists {len(plan.clients)} under `client`",
            )


def _measures(tool_name: str, name: str) -> bool:
    """Whether the tool's metric catalog (runners.tools.metric) knows name."""
    return name in get_tool(tool_name).METRICS or metric(tool_name, name) != Metric(name)


def _check_combinations(plan: Plan, tool) -> tuple | None:
    """Run the tool's cross-field rules over every distinct parameter set,
    and build every command its cells would run (runners.phases.tool_steps),
    so a plan that loads never fails a cell on what the tool cannot do.
    Returns Plan.checked: each combination's params, validated once here
    (None above FULL_CHECK_LIMIT, where expand validates them)."""
    if count_cells(plan) // plan.repeat > FULL_CHECK_LIMIT:
        return None
    matching = _override_lookup(plan)
    built: set[tuple] = set()
    made = []
    for combo in _combinations(plan):
        params = _cell_params(plan, tool, combo, matching)
        # Checked: the tool's build takes them as validated (runners.params.Checked).
        _check_steps(plan, tool, combo, Checked(params), built)
        made.append(params)
    return (plan.params, plan.axes, plan.overrides), tuple(made)


def _combination_params(plan: Plan, tool, combos: list[dict[str, Any]]) -> list[dict]:
    """Each combination's validated params: load_plan's (Plan.checked) when
    the plan is still the one it checked, else validated now."""
    if plan.checked is not None:
        (params, axes, overrides), made = plan.checked
        if params is plan.params and axes is plan.axes and overrides is plan.overrides:
            return list(made)
    matching = _override_lookup(plan)
    return [_cell_params(plan, tool, combo, matching) for combo in combos]


def _check_steps(plan: Plan, tool, combo: dict[str, Any], params: dict, built: set) -> None:
    """Build each tool command of combo's cells against its target (no
    password needed); a refusal names the phase, the cell and the reason.
    built: (target, clients, params) already checked, so equal cells build once."""
    target = plan.target(combo.get("target", plan.targets[0].name))
    clients = combo.get(CLIENTS_AXIS, len(plan.clients))
    key = (target.name, clients, json.dumps(params, sort_keys=True, default=str))
    if key in built:
        return
    built.add(key)
    where = f" (cell {combination_key(combo)})" if combo else ""
    try:
        steps = tool_steps(
            tool,
            params,
            prepare=plan.prepare,
            warmup=plan.warmup,
            cleanup=plan.cleanup,
            clients=clients,
        )
    except ValidationError as exc:
        path = "client" if exc.param == "client" else _param_path(plan, tool, exc.param, combo)
        raise ValidationError(path, exc.message + where) from None
    endpoint = placeholder_endpoint(target)
    for step in steps:
        try:
            tool.build(step.params, endpoint, step.tool_phase)
        except ValidationError as exc:
            raise ValidationError(
                _step_path(plan, tool, exc.param, combo, target),
                f"{plan.tool} cannot run its {step.phase} phase against target "
                f"{target.name} ({target.kind}): {exc.message}{where}",
            ) from None


def _step_path(plan: Plan, tool, param: str, combo: dict[str, Any], target: TargetSpec) -> str:
    """Where a refused command came from: the target (its endpoint), the
    prepare settings (a phase), else the parameter's own place."""
    if param.startswith("endpoint"):
        return f"targets[{plan.targets.index(target)}]"
    if param == "phase":
        return "prepare"
    return _param_path(plan, tool, param, combo)


# ---------------------------------------------------------------- expansion


def count_cells(plan: Plan) -> int:
    """Number of cells `expand` would return, without building them."""
    count = plan.repeat
    for values in plan.axes.values():
        count *= len(values)
    return count


def _combinations(plan: Plan) -> list[dict[str, Any]]:
    """Every axis combination, first axis varying slowest (file order)."""
    names = list(plan.axes)
    return [dict(zip(names, values)) for values in itertools.product(*plan.axes.values())]


def combination_key(axes: dict[str, Any]) -> str:
    """The one cell key: "load_type=read,target=micro" (names sorted), for
    plans, archive imports and PKB imports alike.

    Booleans are true/false (YAML's spelling, not Python's True); other
    values are str(): a float keeps its point (2.0 stays "2.0", 0.5 is
    "0.5"), so a key made from JSON and one made from YAML agree."""
    return ",".join(f"{name}={_show(axes[name])}" for name in sorted(axes))


def _show(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _override_lookup(plan: Plan):
    """combo -> the `set` mappings of the overrides whose `when` it matches, in file order.

    Comparing every override with every combination is cells x overrides (a
    plan of 2,000 cells and 20,000 overrides fits in the size cap). Instead the
    overrides are grouped by the axes their `when` names, each group a dict from
    those axes' values to override positions, so a combination makes one lookup
    per group. A single-valued axis always matches (load_plan checked the value
    is the axis's), so it is left out of the grouping: there are at most as many
    groups as subsets of the multi-valued axes, which the cell limit keeps small.
    """
    groups: dict[tuple, dict[tuple, list[int]]] = {}
    for i, (when, _) in enumerate(plan.overrides):
        names = tuple(sorted(a for a in when if len(plan.axes.get(a, ())) != 1))
        values = tuple(identity(when[a]) for a in names)
        groups.setdefault(names, {}).setdefault(values, []).append(i)

    def matching(combo: dict[str, Any]) -> list[dict[str, Any]]:
        hits: list[int] = []
        for names, table in groups.items():
            if all(a in combo for a in names):
                hits += table.get(tuple(identity(combo[a]) for a in names), ())
        return [plan.overrides[i][1] for i in sorted(hits)]

    return matching


def _cell_params(plan: Plan, tool, combo: dict[str, Any], matching=None) -> dict[str, Any]:
    """Base params + param axes + matching overrides, through tool.validate.

    matching: _override_lookup(plan), built once by callers that go over many cells."""
    merged = dict(plan.params)
    for name, value in combo.items():
        if name not in SPECIAL_AXES:
            merged[canonical(tool, name)] = value
    for sets in (matching or _override_lookup(plan))(combo):
        merged.update(sets)
    try:
        return tool.validate(merged)
    except ValidationError as exc:
        where = f" (cell {combination_key(combo)})" if combo else ""
        raise ValidationError(
            _param_path(plan, tool, exc.param, combo), exc.message + where
        ) from None


def _param_path(plan: Plan, tool, param: str, combo: dict[str, Any]) -> str:
    """Where a refused parameter came from: an axis, an override or params."""
    for name, value in combo.items():
        if name not in SPECIAL_AXES and param in (name, canonical(tool, name)):
            return f"axes.{name}[{plan.axes[name].index(value)}]"
    for i, (_, sets) in enumerate(plan.overrides):
        if param in sets:
            return f"overrides[{i}].set.{param}"
    return f"params.{param}" if param else "params"


def _cell_stress(plan: Plan, combo: dict[str, Any]) -> dict[str, Any] | None:
    """The stress setting of one combination, or None when the plan has none."""
    if plan.stress is None and not any(a in combo for a in STRESS_AXES):
        return None
    stress = {"cpu": 0, "cpu_load": 100, **(plan.stress or {})}
    if "stress.cpu" in combo:
        stress["cpu"] = combo["stress.cpu"]
    for name in ("stress.load", "stress.cpu_load"):
        if name in combo:
            stress["cpu_load"] = combo[name]
    return stress


def expand(plan: Plan, seed: int | None = None) -> list[CellSpec]:
    """The cells of a plan in run order.

    sequential: all repeats of a combination together; interleaved: repeat 1
    of every combination, then repeat 2...; shuffled: all cells shuffled by
    random.Random(seed) (seed argument, else plan.seed, else 0): reproducible.
    """
    tool = get_tool(plan.tool)
    combos = _combinations(plan)
    params = _combination_params(plan, tool, combos)
    if plan.order == "sequential":
        slots = [(c, r) for c in range(len(combos)) for r in range(1, plan.repeat + 1)]
    else:
        slots = [(c, r) for r in range(1, plan.repeat + 1) for c in range(len(combos))]
    if plan.order == "shuffled":
        chosen = seed if seed is not None else plan.seed
        random.Random(chosen if chosen is not None else 0).shuffle(slots)
    default_target = plan.targets[0].name
    return [
        CellSpec(
            index=index,
            key=combination_key(combos[c]),
            axes=dict(combos[c]),
            repeat=repeat,
            target=combos[c].get("target", default_target),
            params=copy.deepcopy(params[c]),
            stress=_cell_stress(plan, combos[c]),
            volumes=combos[c].get("volumes"),
            clients=combos[c].get(CLIENTS_AXIS, len(plan.clients)),
        )
        for index, (c, repeat) in enumerate(slots, start=1)
    ]


def substitute(value: Any, cell: CellSpec) -> Any:
    """Replace "${axis}" in strings (e.g. provision volumes.count) by the cell's value.

    A string that is exactly one placeholder takes the value's type.
    """
    if isinstance(value, dict):
        return {k: substitute(v, cell) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, cell) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    for name, axis_value in cell.axes.items():
        if value == "${" + name + "}":
            return axis_value
        value = value.replace("${" + name + "}", _show(axis_value))
    return value


# ---------------------------------------------------------------- writing


def dump_plan(plan: Plan) -> str:
    """The plan as YAML; load_plan(dump_plan(p)) == p."""
    return yaml.safe_dump(plan.document, sort_keys=False, allow_unicode=True)


def with_seed(plan: Plan, seed: int) -> Plan:
    """The same plan with `seed` set (kept in its document, so runs record it)."""
    return load_plan({**plan.document, "seed": seed})
