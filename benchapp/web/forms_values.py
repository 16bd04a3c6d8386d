"""A form's text as the values a plan file holds, and back: the plan builder's
fields (benchapp.web.forms) are text, its parameters, axes and overrides
typed (YAML's reading of one scalar, name=value pairs, comma lists).
"""

from __future__ import annotations

import yaml

from runners import safeyaml
from runners.errors import ValidationError


def split_commas(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def scalar(text: str):
    """'4' -> 4, 'true' -> True, 'read' -> 'read' (YAML's reading of one scalar)."""
    try:
        value = safeyaml.load(text)
    except yaml.YAMLError:
        return text
    return value if isinstance(value, (str, int, float, bool)) else text


def typed_value(raw: str, param):
    """A form string as the value a plan file would hold for this parameter."""
    if param.kind in ("sql",):
        return raw
    if param.many and "," in raw:
        return [scalar(v) if param.kind in ("int", "float") else v for v in split_commas(raw)]
    if param.kind in ("text", "size", "choice"):
        return raw.strip()
    return scalar(raw.strip())


def named_pairs(text: str, field: str) -> dict:
    """'load_type=key, number_of_queries=100000' -> dict; a piece without '='
    continues the previous value ('engine=innodb,myisam')."""
    pairs: dict = {}
    last = None
    for piece in text.split(","):
        if "=" in piece:
            key, _, value = piece.partition("=")
            last = key.strip()
            pairs[last] = value.strip()
        elif last and piece.strip():
            pairs[last] += "," + piece.strip()
    if not pairs:
        raise ValidationError(field, "write name=value pairs, separated by commas")
    return {k: scalar(v) if "," not in v else v for k, v in pairs.items()}


def bool_or_raw(param, value):
    try:
        return param.convert(value)
    except ValidationError:
        return value


def shown(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ", ".join(shown(v) for v in value)
    return str(value)


def shown_pairs(mapping: dict) -> str:
    return ", ".join(f"{k}={shown(v)}" for k, v in mapping.items())
