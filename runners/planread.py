"""A plan document read into typed values: the text parsed (YAML or JSON,
under safeyaml's caps), its params, warmup, axes and overrides typed as the
tool's parameters, each error naming its key path. runners.plan.load_plan
puts them together into a Plan and checks the whole.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from runners import safeyaml
from runners.errors import ValidationError
from runners.planspec import STRESS_AXES, Doc
from runners.planspec import convert_param as _convert_param
from runners.plantargets import MAX_CLIENTS
from runners.tools import PLAN_KEYS, get_tool

# `client_hosts`, not `clients`: pgbench (alias) and redis-benchmark already
# call their concurrent connections `clients`.
CLIENTS_AXIS = "client_hosts"


def parse_text(text: str | bytes) -> Any:
    """YAML is a superset of JSON, so one loader reads both."""
    try:
        return safeyaml.load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "not valid YAML"
        raise ValidationError("", f"cannot read the plan{where}: {problem}") from None


def bounded(data: Any) -> Any:
    """Parsed data (the API's JSON) under the caps YAML text has: depth, then size as JSON."""
    try:
        safeyaml.check_depth(data)
        safeyaml.check_size(len(json.dumps(data, default=str).encode()))
    except yaml.YAMLError as exc:
        raise ValidationError("", f"cannot read the plan: {exc.problem}") from None
    return data


def raw_cell_count(data: Any) -> int:
    """The product of the lengths of a document's axis lists, before any checking.

    Cheap (no value is typed), and never above the count of the plan load_plan
    would accept, so a caller can refuse a plan over its cell limit before the
    work of validating every value."""
    axes = data.get("axes") if isinstance(data, dict) else None
    count = 1
    for values in axes.values() if isinstance(axes, dict) else ():
        count *= len(values) if isinstance(values, list) and values else 1
    repeat = data.get("repeat") if isinstance(data, dict) else None
    repeat = repeat.get("max") if isinstance(repeat, dict) else repeat
    if isinstance(repeat, int) and not isinstance(repeat, bool) and repeat > 1:
        count *= repeat  # a run holds `max` cells per combination (count_cells)
    return count


def plain(data: Any) -> Any:
    """A deep copy with tuples as lists and text keys, so a YAML round trip is equal.

    YAML 1.1 reads the key `on` (as in `client: {on: target}`) as the boolean
    true: such keys are turned back into "on"/"off".
    """
    if isinstance(data, dict):
        return {_key(k): plain(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [plain(v) for v in data]
    if data is None or type(data) in (str, int, float, bool):
        return data  # already plain: the JSON round trip below costs 3 µs a value
    return json.loads(json.dumps(data, default=str))


def _key(key: Any) -> str:
    if isinstance(key, bool):
        return "on" if key else "off"
    return str(key)


def _read_plan_keys(doc: Doc, tool_name: str) -> dict[str, Any]:
    """The top-level keys the tool lets a plan set for every cell (its
    PLAN_KEYS, e.g. a command syntax version), typed as the tool's param of
    that name; a key another tool declares is refused with its owner's name."""
    found = {}
    for key, owner in PLAN_KEYS.items():
        value = doc.get(key)
        if value is None:
            continue
        if owner != tool_name:
            raise ValidationError(key, f"only allowed with tool: {owner}")
        # YAML reads `1` as a number; the param's choices are the text "1".
        text = (
            str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
        )
        found[key] = _convert_param(get_tool(tool_name), key, text, key)[1]
    return found


def read_params(doc: Doc, tool_name: str) -> dict[str, Any]:
    """Base params, each typed by its spec (cross-field rules: per combination);
    a plan key (above) is the default of its param."""
    tool = get_tool(tool_name)
    raw = doc.mapping("params", default={})
    typed: dict[str, Any] = {}
    for name, value in raw.items():
        key, typed_value = _convert_param(tool, name, value, f"params.{name}")
        if key in typed:
            raise ValidationError(f"params.{name}", f"given twice (also as {key})")
        typed[key] = typed_value
    for key, value in _read_plan_keys(doc, tool_name).items():
        typed.setdefault(key, value)
    return typed


def read_param_block(doc: Doc, key: str, tool) -> dict[str, Any] | None:
    """warmup: a mapping of params that replace the cell's for that phase."""
    raw = doc.get(key)
    if raw in (None, False):
        return None
    if not isinstance(raw, dict):
        raise ValidationError(key, "expected a mapping of parameters (e.g. {threads: 16})")
    return dict(_convert_param(tool, n, v, f"{key}.{n}") for n, v in raw.items())


def read_axes(doc: Doc, tool, target_names: list[str]) -> dict[str, list[Any]]:
    """axes: name -> non-empty list of distinct, typed values."""
    raw = doc.mapping("axes", default={})
    known = dict.fromkeys(target_names)  # ordered, and membership in constant time
    axes: dict[str, list[Any]] = {}
    for name, values in raw.items():
        path = f"axes.{name}"
        if not isinstance(values, list) or not values:
            raise ValidationError(path, "expected a non-empty list of values")
        typed = [_axis_value(tool, name, v, f"{path}[{i}]", known) for i, v in enumerate(values)]
        seen: set = set()
        for i, value in enumerate(typed):
            if identity(value) in seen:  # a set: a list search here was quadratic
                raise ValidationError(f"{path}[{i}]", f"{values[i]!r} is listed twice")
            seen.add(identity(value))
        axes[name] = typed
    return axes


def identity(value: Any) -> Any:
    """A hashable stand-in that is equal exactly when the values are (==)."""
    try:
        hash(value)
    except TypeError:
        return ("unhashable", json.dumps(value, sort_keys=True, default=str))
    return value


def _axis_value(tool, name: str, value: Any, path: str, target_names) -> Any:
    """One axis value typed like the thing it varies (target_names: a list or dict)."""
    if name == "target":
        if not isinstance(value, str) or value not in target_names:
            raise ValidationError(
                path, f"{value!r} is not a target; targets: {', '.join(target_names)}"
            )
        return value
    if name in STRESS_AXES:
        hi = 100 if name != "stress.cpu" else 4096
        return Doc({name: value}, "").integer(name, lo=0, hi=hi, path=path)
    if name == "volumes":
        return Doc({name: value}, "").integer(name, lo=1, hi=128, path=path)
    if name == CLIENTS_AXIS:
        return Doc({name: value}, "").integer(name, lo=1, hi=MAX_CLIENTS, path=path)
    if name.startswith("stress."):
        raise ValidationError(
            path.split("[")[0], f"unknown axis; known stress axes: {', '.join(STRESS_AXES)}"
        )
    if isinstance(value, (list, dict)):
        raise ValidationError(path, "an axis value must be a single value")
    return _convert_param(tool, name, value, path)[1]


def read_overrides(doc: Doc, tool, axes: dict[str, list[Any]], target_names: list[str]):
    """overrides: [{when: {axis: value}, set: {param: value}}] -> tuple of pairs."""
    raw = doc.get("overrides") or []
    if not isinstance(raw, list):
        raise ValidationError("overrides", "expected a list of {when: {...}, set: {...}}")
    pairs = []
    known = dict.fromkeys(target_names)
    values = {axis: {identity(v) for v in typed} for axis, typed in axes.items()}
    for i, item in enumerate(raw):
        entry = Doc(item, f"overrides[{i}]")
        when = entry.mapping("when", required=True)
        sets = entry.mapping("set", required=True)
        entry.done()
        typed_when = {}
        for axis, value in when.items():
            path = f"overrides[{i}].when.{axis}"
            if axis not in axes:
                raise ValidationError(path, f"not an axis; axes: {', '.join(axes) or 'none'}")
            typed = _axis_value(tool, axis, value, path, known)
            if identity(typed) not in values[axis]:
                raise ValidationError(path, f"{value!r} is not one of the axis values")
            typed_when[axis] = typed
        typed_set = dict(
            _convert_param(tool, n, v, f"overrides[{i}].set.{n}") for n, v in sets.items()
        )
        pairs.append((typed_when, typed_set))
    return tuple(pairs)
