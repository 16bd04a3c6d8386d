"""The five reference scenarios as plan templates that bind to your targets.

Each YAML file here is the scenario's plan (the first comment line is its
title) plus a `template:` block that is not part of the plan:

    template:
      roles: {TARGET NAME: what it plays}   # the plan's targets a user chooses
      presets:
        quick: {...}   # a minute-long trial on small data
        study: {...}   # the scenario's real sizes

A preset is merged over the plan: `params` and `axes` key by key, any other
key replaced; a null removes the key. bind() turns a template, a preset and
one choice per role (a stored Target, or the scenario's own provisioning
spec) into a plan document the builder opens with, no YAML typed.
"""

from __future__ import annotations

import copy
from pathlib import Path

from runners import safeyaml
from runners.plan import load_plan
from runners.tools import TOOLS

FOLDER = Path(__file__).resolve().parent
PRESETS = {
    "quick": "Quick trial: small tables, seconds per cell, about a minute in all",
    "study": "The study: the scenario's real sizes and times",
}
PROVISION = "provision"  # the role choice "the scenario's provisioning spec"
MERGED_KEYS = ("params", "axes")


def plan_templates() -> list[dict]:
    """[{"slug", "title", "document", "roles", "presets"}] sorted by file name (S1..S5)."""
    return [_read(path) for path in sorted(FOLDER.glob("*.yaml"))]


def get_template(slug: str) -> dict | None:
    path = FOLDER / f"{slug}.yaml"
    if not slug.replace("-", "").isalnum() or not path.is_file():
        return None
    return _read(path)


def _read(path: Path) -> dict:
    text = path.read_text()
    title = text.splitlines()[0].lstrip("# ").strip()
    data = safeyaml.load(text)
    block = data.pop("template", None) or {}
    # load_plan's plain document: YAML 1.1 reads `on:` as True, load_plan as "on".
    spec = load_plan(data)
    entries = {t["name"]: t for t in spec.document["targets"]}
    roles = [
        {
            "name": t.name,
            "kind": t.kind,
            "label": block.get("roles", {}).get(t.name, t.name),
            "provision": entries[t.name].get("provision"),
        }
        for t in spec.targets
    ]
    return {
        "slug": path.stem,
        "title": title,
        "document": spec.document,
        "roles": roles,
        "presets": block.get("presets") or {"study": {}},
    }


def bind(template: dict, preset: str, choices: dict) -> dict:
    """The template's plan with `preset` applied and each role played by
    choices[role]: a stored Target, or PROVISION for the scenario's own spec.

    A stored target keeps its name (the plan refers to it, resolved at run
    time); a target chosen for a second role becomes an inline copy named
    after that role, since a plan's targets need distinct names.
    """
    from benchapp.plans.planning import target_document

    doc = _with_preset(template["document"], template["presets"].get(preset, {}))
    names, entries, stored = {}, [], {}
    original = {t["name"]: t for t in doc["targets"]}
    for role in template["roles"]:
        choice = choices[role["name"]]
        if choice == PROVISION:
            names[role["name"]] = role["name"]
            entries.append(original[role["name"]])
            continue
        name = choice.name if choice.name not in names.values() else role["name"]
        names[role["name"]] = name
        entries.append(
            {"name": name} if name == choice.name else {**target_document(choice), "name": name}
        )
        stored[name] = choice
    doc["targets"] = entries
    _rename_targets(doc, names)
    if len(stored) == len(entries):
        _drop_cloud_only_keys(doc)
    apply_target_directories(doc, stored, replace=True)
    doc["name"] = f"{doc['name']}-{preset}"
    return doc


def _with_preset(document: dict, preset: dict) -> dict:
    doc = copy.deepcopy(document)
    for key, value in copy.deepcopy(preset).items():
        if key in MERGED_KEYS and isinstance(value, dict):
            merged = {**doc.get(key, {}), **value}
            doc[key] = {k: v for k, v in merged.items() if v is not None}
        elif value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    return doc


def _rename_targets(doc: dict, names: dict) -> None:
    """Role names -> bound target names in the target axis and overrides."""
    axes = doc.get("axes") or {}
    if "target" in axes:
        axes["target"] = [names.get(v, v) for v in axes["target"]]
    for override in doc.get("overrides") or []:
        when = override.get("when") or {}
        if "target" in when:
            when["target"] = names.get(when["target"], when["target"])


def _drop_cloud_only_keys(doc: dict) -> None:
    """With no provisioned target, what only a cloud run means goes: the
    provisioned client (the tool runs on the worker), the `volumes` axis."""
    if isinstance(doc.get("client"), dict) and "provision" in doc["client"]:
        del doc["client"]
    (doc.get("axes") or {}).pop("volumes", None)
    doc["overrides"] = [
        o for o in doc.get("overrides") or [] if "volumes" not in (o.get("when") or {})
    ]
    if not doc["overrides"]:
        del doc["overrides"]


def apply_target_directories(doc: dict, stored: dict, replace: bool = False) -> None:
    """A tool that works in a directory (its WORKDIR_PARAM) works, on stored
    host targets, in each target's directory (Target.directory).

    stored: {plan target name: Target}. Applied when the plan names no
    file or directory of its own (params or axes), or with replace=True
    when every target is a stored host target with a directory (a
    template's cloud path, /data/testfio, means nothing on your host).
    One directory goes into params; several into one override per target.
    """
    tool = TOOLS.get(str(doc.get("tool")))
    workdir = getattr(tool, "WORKDIR_PARAM", None)
    if workdir is None:
        return
    dirs = {name: t.directory for name, t in stored.items() if t.kind == "host" and t.directory}
    if not dirs:
        return
    params = doc.setdefault("params", {})
    own = {workdir, *tool.WORKDIR_ALTERNATIVES}
    named = own & (set(params) | set(doc.get("axes") or {}))
    everyone = len(dirs) == len(doc.get("targets") or [])
    if named and not (replace and everyone):
        return
    for name in tool.WORKDIR_ALTERNATIVES:
        params.pop(name, None)
    if len(set(dirs.values())) == 1 and everyone:
        params[workdir] = next(iter(dirs.values()))
        return
    doc["overrides"] = [
        *(doc.get("overrides") or []),
        *({"when": {"target": n}, "set": {workdir: d}} for n, d in dirs.items()),
    ]
