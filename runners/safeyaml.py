"""The one YAML reader for plan documents: no aliases, bounded size and depth.

A YAML alias repeats a node by reference; nested aliases make a 400-byte
document expand to billions of nodes (an "alias bomb"). Plans never need
them, so the reader refuses any alias before anything is expanded, and
refuses documents past MAX_DOCUMENT_BYTES before parsing at all.

Nesting is bounded too (MAX_DEPTH): a plan is a few levels deep, and the
composer and every validator after it recurse once per level, so a
100,000-level `[[[...]]]` would end in a RecursionError instead of a message.

Reading time is linear in the text: a JSON object goes to the json module,
YAML to libyaml's C parser (PyYAML's CSafeLoader), which reads the events
once to check aliases and depth, then builds the data. The pure-Python parser takes ~70 µs per scalar (3 s for a 260 KB plan of 40,000
values); it remains the fallback where PyYAML was built without libyaml.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

MAX_DOCUMENT_BYTES = 1024 * 1024
MAX_DEPTH = 32
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class AliasRefused(yaml.YAMLError):
    def __init__(self, mark):
        super().__init__("YAML aliases (*name) are not allowed in plan documents")
        self.problem = "YAML aliases (*name) are not allowed in plan documents"
        self.problem_mark = mark


class DocumentTooLarge(yaml.YAMLError):
    def __init__(self, size: int):
        self.problem = f"the document is {size} bytes; the limit is {MAX_DOCUMENT_BYTES} bytes"
        self.problem_mark = None
        super().__init__(self.problem)


class DocumentTooDeep(yaml.YAMLError):
    def __init__(self, mark=None):
        self.problem = f"the document nests more than {MAX_DEPTH} levels deep"
        self.problem_mark = mark
        super().__init__(self.problem)


def check_size(size: int) -> None:
    """Raise DocumentTooLarge past MAX_DOCUMENT_BYTES."""
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentTooLarge(size)


def check_depth(data: Any) -> None:
    """Raise DocumentTooDeep when parsed data (dicts and lists) nests past MAX_DEPTH.

    Iterative, so the check itself cannot run out of stack."""
    stack = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, (list, tuple)):
            children = value
        else:
            continue
        if depth >= MAX_DEPTH:
            raise DocumentTooDeep()
        stack.extend((child, depth + 1) for child in children)


def _check_events(text: str | bytes) -> None:
    """One pass over the parser's events: no alias, no nesting past MAX_DEPTH."""
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        if isinstance(event, yaml.AliasEvent):
            raise AliasRefused(event.start_mark)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise DocumentTooDeep(event.start_mark)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load(text: str | bytes) -> Any:
    """yaml.safe_load without aliases, with a size and a depth cap (raises yaml.YAMLError)."""
    check_size(len(text.encode() if isinstance(text, str) else text))
    data = _json_object(text)
    if data is not None:
        check_depth(data)
        return data
    _check_events(text)
    return yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader, aliases refused above


def _not_json(name: str):
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: YAML reads them as text


def _json_object(text: str | bytes) -> dict | None:
    """A JSON object text (an API client's plan) read by the json module, ten times
    faster than building it through YAML; None for anything else (YAML reads it
    and reports its errors)."""
    if text.lstrip()[:1] not in ("{", b"{"):
        return None
    try:
        data = json.loads(text, parse_constant=_not_json)
    except RecursionError:
        raise DocumentTooDeep() from None
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
