"""The parts of a plan document: targets, client, prepare, stress.

`Doc` reads one mapping strictly (typed getters, unknown keys refused with
the list of known ones) and names the key path in every error, so a plan
author reads "targets[1].port: expected an integer" and not a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from runners import engines, tools
from runners.endpoint import address
from runners.errors import ValidationError
from runners.params import unknown_message
from runners.providers import PROVIDERS

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
# Target kinds and their ports: the engines' registry's (runners/engines/__init__.py);
# which tool runs against which: the tool registry's. Never listed here.
TARGET_KINDS = engines.TARGET_KINDS
DEFAULT_PORTS = engines.DEFAULT_PORTS
LOCAL_HOSTS = (None, "127.0.0.1", "localhost", "::1")
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


# ---------------------------------------------------------------- targets


@dataclass(frozen=True)
class SSHSpec:
    """How to log in to a machine: credential names a stored key or password."""

    host: str
    port: int = 22
    user: str = "root"
    credential: str | None = None
    password_env: str | None = None
    known_host_key: str | None = None


@dataclass(frozen=True)
class TargetSpec:
    """A system under test as the plan describes it (secrets by name only).

    connect_via: the address the client uses instead of `host` (e.g.
    127.0.0.1 when the client runs on the database host itself).
    """

    name: str
    kind: str
    host: str | None = None
    port: int | None = None
    user: str | None = None
    database: str | None = None
    credential: str | None = None
    password_env: str | None = None
    socket: str | None = None
    ssh: SSHSpec | None = None
    nodes: tuple[str, ...] = ()
    via: str | None = None
    provision: dict[str, Any] | None = None
    connect_via: str | None = None
    price_per_hour: float | None = None
    price_per_month: float | None = None
    currency: str = "USD"
    # Directories a sandboxed local tool may write (operator plan files only;
    # for web/API plans the stored Target's data_dirs count, see runners/sandbox.py).
    data_dirs: tuple[str, ...] = ()
    telemetry: bool = True  # sample this target's host and database during the measure
    profile: bool = False  # CPU profiles of this target's cells (the plan's profile: too)
    # The link speed of the target's host in Mb/s, declared: the network rule
    # reads it instead of what the interfaces' drivers report (docs/telemetry.md).
    link_mbit: int | None = None
    # An existing cloud resource the target is (an RDS instance by its
    # identifier): its monitoring joins each cell's telemetry after the run.
    cloud_instance: dict[str, Any] | None = None

    @property
    def is_local(self) -> bool:
        """True when the target is this machine (no SSH, loopback or no host)."""
        return self.ssh is None and self.provision is None and self.host in LOCAL_HOSTS


def read_cloud_instance(doc: Doc, provision: dict | None) -> dict | None:
    """An optional cloud_instance: {provider, its resource's id, region,
    the provider's credential field}, checked by the provider (watched)."""
    spec = doc.mapping("cloud_instance")
    if spec is None:
        return None
    where = doc.where("cloud_instance")
    if provision is not None:
        raise ValidationError(where, "a provisioned target's own resource is monitored already")
    provider = PROVIDERS.get(spec.get("provider"))
    if provider is None:
        raise ValidationError(f"{where}.provider", f"required: one of {', '.join(PROVIDERS)}")
    try:
        provider.watched(spec)
    except ValidationError as exc:
        raise ValidationError(f"{where}.{exc.param}", exc.message) from None
    fields = Doc(spec, where)
    for key in ("provider", provider.PRIMARY_ID):
        fields.get(key)
    fields.text("region")
    if provider.CREDENTIAL_FIELD:
        fields.text(provider.CREDENTIAL_FIELD)
    unknown = [key for key in spec if key not in fields.known]
    if unknown:
        expected = ", ".join(fields.known)
        raise ValidationError(f"{where}.{unknown[0]}", f"unknown key: expected {expected}")
    return spec


def read_ssh(doc: Doc, key: str = "ssh", default_host: str | None = None) -> SSHSpec | None:
    """An optional ssh: {host, port, user, credential | password_env, known_host_key}."""
    raw = doc.mapping(key)
    if raw is None:
        return None
    ssh = Doc(raw, doc.where(key))
    spec = SSHSpec(
        host=ssh.text("host", pattern=HOST, required=default_host is None) or default_host,
        port=ssh.integer("port", default=22, lo=1, hi=65535),
        user=ssh.text("user", default="root"),
        credential=ssh.text("credential"),
        password_env=ssh.text("password_env", pattern=ENV_NAME),
        known_host_key=ssh.text("known_host_key", pattern=HOST_KEY, max_len=2000),
    )
    ssh.done()
    return spec


def _default_kind(tool: str, provision: dict | None) -> str:
    """A target's kind when the plan does not say: the first kind its
    provider can make that the tool runs against; else what the provider
    makes (read_target then refuses it, naming the tool's kinds); without a
    provider, the tool's own TARGET_KIND."""
    provider = PROVIDERS.get((provision or {}).get("provider"))
    made = provider.target_kinds(provision) if provider else ()
    runs_on = tools.get_tool(tool).TARGET_KINDS
    return next(
        (k for k in made if k in runs_on), made[0] if made else tools.get_tool(tool).TARGET_KIND
    )


def read_target(item: Any, path: str, tool: str) -> TargetSpec:
    """One entry of `targets`."""
    doc = Doc(item, path)
    name = doc.text("name", required=True)
    provision = doc.mapping("provision")
    if provision is not None and not isinstance(provision.get("provider"), str):
        raise ValidationError(
            f"{path}.provision.provider", f"required: one of {', '.join(PROVIDERS)}"
        )
    kind = doc.choice("kind", TARGET_KINDS, default=_default_kind(tool, provision))
    allowed = tools.get_tool(tool).TARGET_KINDS
    if kind not in allowed:
        raise ValidationError(f"{path}.kind", f"{tool} needs a {' or '.join(allowed)} target")
    host = doc.text("host", pattern=HOST)
    if kind != "host" and host is None and provision is None and doc.data.get("socket") is None:
        raise ValidationError(f"{path}.host", "required for a database target (or provision:)")
    target = TargetSpec(
        name=name,
        kind=kind,
        host=host,
        port=doc.integer("port", default=DEFAULT_PORTS.get(kind), lo=1, hi=65535),
        user=doc.text("user"),
        database=doc.text("database"),
        credential=doc.text("credential"),
        password_env=doc.text("password_env", pattern=ENV_NAME),
        socket=doc.text("socket", pattern=ABS_PATH),
        ssh=read_ssh(doc, default_host=host),
        nodes=doc.text_list("nodes"),
        via=doc.text("via"),
        provision=provision,
        connect_via=doc.text("connect_via", pattern=HOST),
        price_per_hour=doc.number("price_per_hour"),
        price_per_month=doc.number("price_per_month"),
        currency=doc.text("currency", default="USD", pattern=CURRENCY),
        data_dirs=doc.text_list("data_dirs", pattern=ABS_PATH),
        telemetry=doc.boolean("telemetry", default=True),
        profile=doc.boolean("profile", default=False),
        link_mbit=doc.integer("link_mbit", lo=1, hi=10_000_000),
        cloud_instance=read_cloud_instance(doc, provision),
    )
    if any(
        ".." in d.split("/") or d.rstrip("/") in FORBIDDEN_DIRS | {""} for d in target.data_dirs
    ):
        raise ValidationError(
            f"{path}.data_dirs", "expected directories of benchmark data, not a system directory"
        )
    if target.credential and target.password_env:
        raise ValidationError(f"{path}.password_env", "give credential or password_env, not both")
    try:  # the one address every client connects to (runners/endpoint.py)
        address(target)
    except ValidationError as exc:
        raise ValidationError(f"{path}.{exc.param}", exc.message) from None
    check = getattr(tools.get_tool(tool), "check_target", None)  # a tool's own limits
    if check is not None:
        check(target, path)
    doc.done()
    return target


def read_targets(doc: Doc, tool: str) -> tuple[TargetSpec, ...]:
    """targets: a non-empty list with unique names."""
    raw = doc.get("targets")
    if not isinstance(raw, list) or not raw:
        raise ValidationError("targets", "expected a non-empty list of targets")
    targets = tuple(read_target(item, f"targets[{i}]", tool) for i, item in enumerate(raw))
    seen: set[str] = set()
    for i, target in enumerate(targets):
        if target.name in seen:
            raise ValidationError(f"targets[{i}].name", f"{target.name!r} is used twice")
        seen.add(target.name)
    return targets


# ---------------------------------------------------------------- client


# `client: {on: target}` means the host of each cell's own target.
CELL_TARGET = "target"


@dataclass(frozen=True)
class ClientSpec:
    """Where the tool runs: kind local | on (a target's host) | ssh | provision.

    target: a target name, or "target" for the target of each cell.
    """

    kind: str = "local"
    target: str | None = None
    ssh: SSHSpec | None = None
    provision: dict[str, Any] | None = None


# More client hosts than this in one cell is a typo, not a plan (each is a
# thread and a connection held for the whole measure).
MAX_CLIENTS = 64


def read_client(doc: Doc, target_names: list[str]) -> ClientSpec:
    """client: local (default), {on: target}, {ssh: {...}} or {provision: {...}}.

    The first of the plan's clients (read_clients), for code that knows one.
    """
    return read_clients(doc, target_names)[0]


def read_clients(doc: Doc, target_names: list[str]) -> tuple[ClientSpec, ...]:
    """client: one client spec, or a list of them, each with an optional `count: N`.

    `[{ssh: {...}}, {local: true}, {provision: {...}, count: 2}]` is four
    clients; a cell loads its target from the first `clients` of them.
    """
    raw = doc.get("client")
    if not isinstance(raw, list):
        return (_read_one_client(raw, "client", target_names, allow_count=False)[0],)
    if not raw:
        raise ValidationError("client", "expected at least one client")
    clients: list[ClientSpec] = []
    for i, item in enumerate(raw):
        clients += _read_one_client(item, f"client[{i}]", target_names, allow_count=True)
    if len(clients) > MAX_CLIENTS:
        raise ValidationError("client", f"{len(clients)} clients; at most {MAX_CLIENTS}")
    if sum(c.kind == "provision" for c in clients) > 1:
        # Provisioning makes one client host per run (runners/providers/slots.py).
        raise ValidationError(
            "client", "at most one provisioned client; list existing hosts with ssh for the others"
        )
    return tuple(clients)


def _read_one_client(
    raw: Any, path: str, target_names: list[str], *, allow_count: bool
) -> list[ClientSpec]:
    """One client spec (repeated `count` times in a list of clients)."""
    if raw in (None, "local"):
        return [ClientSpec()]
    if isinstance(raw, dict) and raw.get("local") is True and (allow_count or "count" not in raw):
        local = Doc(raw, path)
        local.boolean("local")
        count = local.integer("count", default=1, lo=1, hi=MAX_CLIENTS)
        local.done()
        return [ClientSpec()] * count
    client = Doc(raw, path) if isinstance(raw, dict) else None
    keys = [k for k in (raw or {}) if k != "count"] if client else []
    if client is None or len(keys) != 1 or ("count" in raw and not allow_count):
        raise ValidationError(
            path, "expected local, {on: TARGET}, {ssh: {...}} or {provision: {...}}"
        )
    count = client.integer("count", default=1, lo=1, hi=MAX_CLIENTS)
    on = client.text("on")
    if on is not None and on != CELL_TARGET and on not in target_names:
        raise ValidationError(
            f"{path}.on",
            f"{on!r} is not a target; expected `target` "
            f"(each cell's own) or one of: {', '.join(target_names)}",
        )
    spec = ClientSpec(
        kind=keys[0], target=on, ssh=read_ssh(client), provision=client.mapping("provision")
    )
    client.done()
    return [spec] * count


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
