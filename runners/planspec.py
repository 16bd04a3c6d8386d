"""The parts of a plan document: prepare, stress (targets and clients: runners.plantargets).

`Doc` reads one mapping strictly (typed getters, unknown keys refused with
the list of known ones) and names the key path in every error, so a plan
author reads "targets[1].port: expected an integer" and not a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from runners import engines
from runners.errors import ValidationError
from runners.params import unknown_message

NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
HOST = r"[A-Za-z0-9_.:\[\]][A-Za-z0-9_.:\[\]-]{0,252}"
ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]{0,127}"
HOST_KEY = r"[a-z0-9@.-]+ [A-Za-z0-9+/=]+"
ABS_PATH = r"/[A-Za-z0-9_./+@-]*"
PATTERN_HELP = {
    NAME: "a name of letters, digits, '.', '_' or '-' (up to 64)",
    HOST: "a host name or IP address",
    ENV_NAME: "an environment variable name (letters, digits, _)",
    HOST_KEY: "a public key line such as 'ssh-ed25519 AAAA...'",
    ABS_PATH: "an absolute path of plain characters",
}
CURRENCY = r"[A-Z]{3}"
CPU_LIST = r"[0-9][0-9,-]*"
PATTERN_HELP.update(
    {CURRENCY: "a currency code such as USD or JPY", CPU_LIST: "a CPU list such as 0-3 or 0,2"}
)
STRESS_AXES = ("stress.cpu", "stress.load", "stress.cpu_load")
# Directories a data-directory snapshot must never rsync --delete into.
FORBIDDEN_DIRS = {
    "/",
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/home",
    "/lib",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/tmp",
    "/usr",
    "/var",
    "/var/lib",
}
SECRET_HINT = (
    "secrets are never inline: use credential (the name of a stored credential) "
    "or password_env (the name of an environment variable)"
)


class Doc:
    """Strict reader of one mapping at `path` in the plan."""

    def __init__(self, data: Any, path: str):
        if not isinstance(data, dict):
            raise ValidationError(path, "expected a mapping of keys")
        self.data = data
        self.path = path
        self.known: list[str] = []

    def where(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def get(self, key: str, default: Any = None) -> Any:
        self.known.append(key)
        value = self.data.get(key)
        return default if value is None else value

    def _need(self, key: str, value: Any, required: bool) -> bool:
        """True when a value is there; raise if it is required and missing."""
        if value is None and required:
            raise ValidationError(self.where(key), "required")
        return value is not None

    def text(self, key: str, *, required=False, default=None, pattern=NAME, max_len=255):
        value = self.get(key)
        if not self._need(key, value, required):
            return default
        if isinstance(value, (int, float)) and not isinstance(value, bool) and pattern:
            value = str(value)
        if not isinstance(value, str) or not value.strip():
            raise ValidationError(self.where(key), "expected a text value")
        if len(value) > max_len or (pattern and not re.fullmatch(pattern, value)):
            expected = PATTERN_HELP.get(pattern, f"at most {max_len} characters")
            raise ValidationError(
                self.where(key), f"{value[:60]!r} is not allowed: expected {expected}"
            )
        return value

    def integer(self, key: str, *, required=False, default=None, lo=None, hi=None, path=None):
        value = self.get(key)
        if not self._need(key, value, required):
            return default
        where = path or self.where(key)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError(where, f"expected an integer, got {value!r}")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
            raise ValidationError(where, f"{value} is out of range: expected {bounds}")
        return value

    def number(self, key: str, *, lo=0):
        value = self.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < lo:
            raise ValidationError(self.where(key), f"expected a number >= {lo}, got {value!r}")
        return value

    def boolean(self, key: str, *, default=None):
        value = self.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ValidationError(self.where(key), f"expected true or false, got {value!r}")
        return value

    def choice(self, key: str, choices, *, required=False, default=None):
        value = self.get(key)
        if not self._need(key, value, required):
            return default
        if value not in choices:
            raise ValidationError(
                self.where(key), f"{value!r} is not allowed: expected one of " + ", ".join(choices)
            )
        return value

    def mapping(self, key: str, *, required=False, default=None) -> dict:
        value = self.get(key)
        if not self._need(key, value, required):
            return default
        if not isinstance(value, dict):
            raise ValidationError(self.where(key), "expected a mapping of keys")
        return value

    def text_list(self, key: str, *, pattern=HOST) -> tuple[str, ...]:
        value = self.get(key, [])
        if not isinstance(value, list):
            raise ValidationError(self.where(key), "expected a list")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not re.fullmatch(pattern, item):
                raise ValidationError(
                    f"{self.where(key)}[{i}]",
                    f"{item!r} is not allowed: expected {PATTERN_HELP.get(pattern, 'plain text')}",
                )
        return tuple(value)

    def done(self) -> None:
        """Refuse keys nobody read: typos must not be silently ignored."""
        for key in self.data:
            if key not in self.known:
                raise ValidationError(
                    self.where(str(key)), "unknown key; known: " + ", ".join(sorted(self.known))
                )


# ---------------------------------------------------------------- secrets


def _is_secret_key(key: str) -> bool:
    key = str(key).lower()
    return (
        key in ("password", "passwd", "pass", "pgpassword", "private_key", "token")
        or key.endswith(("_password", "_passwd", "_token"))
        or "secret" in key
    )


def check_no_inline_secrets(data: Any, path: str = "") -> None:
    """Raise for any key that would hold a secret in the plan itself."""
    if isinstance(data, dict):
        for key, value in data.items():
            where = f"{path}.{key}" if path else str(key)
            if _is_secret_key(key):
                raise ValidationError(where, SECRET_HINT)
            check_no_inline_secrets(value, where)
    elif isinstance(data, list):
        for i, item in enumerate(data):
            check_no_inline_secrets(item, f"{path}[{i}]")


# ---------------------------------------------------------------- params


def canonical(tool, name: str) -> str:
    """The tool's canonical parameter name for a (possibly short) name."""
    return tool.ALIASES.get(name, name)


def convert_param(tool, name: str, value: Any, path: str) -> tuple[str, Any]:
    """(canonical name, typed value) for one tool parameter; errors name `path`."""
    key = canonical(tool, name)
    spec = tool.PARAMS.get(key)
    if spec is None:
        raise ValidationError(
            path, unknown_message(tool.NAME, name, set(tool.PARAMS) | set(tool.ALIASES))
        )
    try:
        return key, spec.convert(value)
    except ValidationError as exc:
        raise ValidationError(path, exc.message) from None


# ---------------------------------------------------------------- phases


@dataclass(frozen=True)
class PrepareSpec:
    """prepare: phase settings.

    enabled: false skips the tool's prepare phase; once: prepare only before a
    target's first cell; snapshot_datadir: copy `datadir` aside after the
    prepare and restore it before every cell, with the server stopped by
    `service_manager` (systemctl | service | none) acting on `service`, or
    (command) running the argv lists `stop_command` and `start_command`.
    params: tool params used only for the prepare phase.
    """

    enabled: bool = True
    once: bool = False
    snapshot_datadir: bool = False
    datadir: str = engines.SNAPSHOT_DATADIR
    snapshot_dir: str | None = None
    service: str = engines.SNAPSHOT_SERVICE
    service_manager: str = "systemctl"
    params: dict[str, Any] = field(default_factory=dict)
    stop_command: tuple[str, ...] = ()
    start_command: tuple[str, ...] = ()

    @property
    def snapshot_path(self) -> str:
        return self.snapshot_dir or self.datadir.rstrip("/") + ".benchboard-snapshot"


def _safe_dir(doc: Doc, key: str, default: str | None) -> str | None:
    path = doc.text(key, pattern=ABS_PATH, default=default)
    if path is not None and (".." in path.split("/") or path.rstrip("/") in FORBIDDEN_DIRS | {""}):
        raise ValidationError(doc.where(key), f"{path!r} is not allowed for a data snapshot")
    return path


def _argv(doc: Doc, key: str) -> tuple[str, ...]:
    """A command as a list of arguments (never a shell line); () when absent."""
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(
        isinstance(a, str) and a and "\0" not in a and len(a) <= 1000 for a in value
    ):
        raise ValidationError(doc.where(key), "expected a list of arguments, e.g. [sh, stop.sh]")
    return tuple(value)


def read_prepare(doc: Doc, tool) -> PrepareSpec:
    """prepare: false | {once, snapshot_datadir, datadir, snapshot_dir, service, ...}."""
    raw = doc.get("prepare")
    if raw is None or raw is True:
        return PrepareSpec()
    if raw is False:
        return PrepareSpec(enabled=False)
    prep = Doc(raw, "prepare")
    params = prep.mapping("params", default={})
    spec = PrepareSpec(
        enabled=prep.boolean("enabled", default=True),
        once=prep.boolean("once", default=False),
        snapshot_datadir=prep.boolean("snapshot_datadir", default=False),
        datadir=_safe_dir(prep, "datadir", engines.SNAPSHOT_DATADIR),
        snapshot_dir=_safe_dir(prep, "snapshot_dir", None),
        service=prep.text("service", default=engines.SNAPSHOT_SERVICE),
        service_manager=prep.choice(
            "service_manager", ("systemctl", "service", "command", "none"), default="systemctl"
        ),
        params=dict(convert_param(tool, n, v, f"prepare.params.{n}") for n, v in params.items()),
        stop_command=_argv(prep, "stop_command"),
        start_command=_argv(prep, "start_command"),
    )
    prep.done()
    if (spec.service_manager == "command") != bool(spec.stop_command and spec.start_command):
        raise ValidationError(
            "prepare.service_manager",
            "service_manager: command goes with "
            "stop_command and start_command (argv lists), and only with it",
        )
    if spec.snapshot_path.rstrip("/") == spec.datadir.rstrip("/"):
        raise ValidationError("prepare.snapshot_dir", "must differ from datadir")
    return spec


def read_stress(doc: Doc) -> dict[str, Any] | None:
    """stress: {cpu, cpu_load, taskset} -> dict, or None when absent."""
    raw = doc.mapping("stress")
    if raw is None:
        return None
    stress = Doc(raw, "stress")
    spec = {
        "cpu": stress.integer("cpu", default=0, lo=0, hi=4096),
        "cpu_load": stress.integer("cpu_load", default=100, lo=0, hi=100),
    }
    taskset = stress.text("taskset", pattern=CPU_LIST)
    if taskset:
        spec["taskset"] = taskset
    stress.done()
    return spec
