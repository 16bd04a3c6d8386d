"""Allow-listed, typed tool parameters.

Each tool module declares `PARAMS`, a dict name -> Param. `validate` turns the
user's plan values into typed values or raises ValidationError naming the
parameter and what is allowed. Forms in benchapp are generated from the same
specs, so this is the one list of what a tool accepts.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from runners.errors import ValidationError

# Plain tokens: no whitespace, quotes, $, `, ;, |, &, <, >, (, ), \, *, ?, ~, !, #.
# Use fullmatch: with re.match, "$" also matches before a trailing newline.
SAFE_TEXT = re.compile(r"^[A-Za-z0-9_.,:/@+=%-]+$")
SIZE = re.compile(r"^[0-9]+(?:[kKmMgGtTpP]i?[bB]?)?$")
# The largest SQL text or script one parameter may hold (UTF-8 bytes). A
# benchmark's script is a few KiB; a plan (at most 1 MiB) holding several
# scripts of this size is the most any run stores of them (each once).
MAX_SQL_BYTES = 256 * 1024


class Checked(dict):
    """Params as a tool's validate returned them, for one check that builds
    them right away (runners.plan: load_plan builds every command of every
    combination): a tool's build then need not validate them again. Never
    kept or stored: a cell's params are plain dicts, validated again by
    build on the worker."""


def checked(params: dict, validate) -> dict:
    """params when they are Checked, else validate(params)."""
    return params if isinstance(params, Checked) else validate(params)


@dataclass(frozen=True)
class Param:
    """One allowed parameter.

    kind: int | float | bool | choice | size | text | sql
          ("sql" is free text that only ever travels in an uploaded file,
          never in argv).
    many: the value may be a list (joined with `sep` on the command line).
    option: the tool's own option, for builders that map names generically.
    """

    name: str
    kind: str
    help: str = ""
    option: str | None = None
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    default: Any = None
    many: bool = False
    sep: str = ","

    def describe(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind in ("int", "float"):
            lo = "" if self.min is None else f" >= {self.min:g}"
            hi = "" if self.max is None else f" <= {self.max:g}"
            return f"{'an integer' if self.kind == 'int' else 'a number'}{lo}{hi}".replace(
                " >", " >", 1
            )
        return {
            "bool": "true or false",
            "size": "a size such as 4k, 32m, 5G",
            "text": "plain text without spaces or shell characters",
            "sql": f"SQL text (at most {MAX_SQL_BYTES} bytes)",
        }.get(self.kind, self.kind)

    def convert(self, value: Any) -> Any:
        """Return the typed value, or raise ValidationError."""
        if self.many and isinstance(value, (list, tuple)):
            if not value:
                raise ValidationError(self.name, "an empty list is not allowed")
            return [self._one(v) for v in value]
        return self._one(value)

    def _one(self, value: Any) -> Any:
        converter = getattr(self, f"_to_{self.kind}")
        return converter(value)

    def _fail(self, value: Any) -> ValidationError:
        shown = repr(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return ValidationError(self.name, f"{shown} is not allowed: expected {self.describe()}")

    def _to_int(self, value: Any) -> int:
        if isinstance(value, bool):
            raise self._fail(value)
        if isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value.strip()):
            value = int(value)
        if not isinstance(value, int):
            raise self._fail(value)
        self._check_range(value)
        return value

    def _to_float(self, value: Any) -> float:
        if isinstance(value, bool):
            raise self._fail(value)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise self._fail(value) from None
        if number != number or number in (float("inf"), float("-inf")):
            raise self._fail(value)
        self._check_range(number)
        return number

    def _check_range(self, number: float) -> None:
        if (self.min is not None and number < self.min) or (
            self.max is not None and number > self.max
        ):
            raise self._fail(number)

    def _to_bool(self, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        if value in (0, 1) and not isinstance(value, float):
            return bool(value)
        if isinstance(value, str) and value.lower() in ("true", "false", "on", "off", "yes", "no"):
            return value.lower() in ("true", "on", "yes")
        raise self._fail(value)

    def _to_choice(self, value: Any) -> str:
        text = str(value).lower() if isinstance(value, str) else value
        if text not in self.choices:
            raise self._fail(value)
        return text

    def _to_size(self, value: Any) -> str:
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if not isinstance(text, str) or not SIZE.fullmatch(text):
            raise self._fail(value)
        return text

    def _to_text(self, value: Any) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise self._fail(value)
        text = str(value)
        if not SAFE_TEXT.fullmatch(text) or text.startswith("-"):
            raise self._fail(value)
        return text

    def _to_sql(self, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self._fail(value)
        size = len(value.encode("utf-8", "surrogatepass"))
        if size > MAX_SQL_BYTES:
            raise ValidationError(
                self.name, f"the script is {size} bytes; the limit is {MAX_SQL_BYTES} bytes"
            )
        return value


def validate(
    tool: str, spec: dict[str, Param], params: dict[str, Any], aliases: dict[str, str] | None = None
) -> dict[str, Any]:
    """Check params against spec; return {canonical name: typed value}.

    Unknown names raise ValidationError suggesting the closest known ones. `aliases`
    maps contract short names (e.g. mysqlslap load_type) to canonical names.
    """
    aliases = aliases or {}
    clean: dict[str, Any] = {}
    for name, value in params.items():
        canonical = aliases.get(name, name)
        if canonical not in spec:
            raise ValidationError(name, unknown_message(tool, name, set(spec) | set(aliases)))
        if canonical in clean:
            raise ValidationError(name, f"given twice (also as {canonical})")
        clean[canonical] = spec[canonical].convert(value)
    return clean


def unknown_message(tool: str, name: str, known: set[str]) -> str:
    """'unknown fio parameter; did you mean iodepth?' — the closest names first,
    never the whole list (a tool has 24 to 60 of them)."""
    close = difflib.get_close_matches(str(name), sorted(known), n=3, cutoff=0.6)
    if not close:
        # Underscores and dashes mixed up, or a word of a longer name ("queries").
        words = str(name).lower().replace("-", "_")
        close = sorted(k for k in known if words in k or k in words)[:3]
    if close:
        return f"unknown {tool} parameter; did you mean {' or '.join(close)}?"
    return (
        f"unknown {tool} parameter and none of its {len(known)} parameters is close; "
        "see the plan reference for the list"
    )
