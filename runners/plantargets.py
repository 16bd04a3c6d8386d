"""The machines of a plan document: its targets (the systems under test,
secrets by name only) and its clients (where the tool runs), read with
runners.planspec.Doc so every error names its key path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runners import engines, tools
from runners.endpoint import address
from runners.errors import ValidationError
from runners.planspec import ABS_PATH, CURRENCY, ENV_NAME, FORBIDDEN_DIRS, HOST, HOST_KEY, Doc
from runners.providers import PROVIDERS

# Target kinds and their ports: the engines' registry's (runners/engines/__init__.py);
# which tool runs against which: the tool registry's. Never listed here.
TARGET_KINDS = engines.TARGET_KINDS
DEFAULT_PORTS = engines.DEFAULT_PORTS
LOCAL_HOSTS = (None, "127.0.0.1", "localhost", "::1")


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
