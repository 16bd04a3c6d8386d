"""The provider interface: Handle, ProvisionContext, Provider.

A provider turns a target's `provision:` spec into a Handle (cloud ids, the
endpoint a tool talks to, the SSH host a tool runs on) and tears it down
again. benchapp stores Handle.to_dict() in the database so that another
process (the teardown task, the reaper) can tear it down later.

Every cloud create call is bracketed by two callbacks of the context:
  on_create(kind, token, tags)      BEFORE the call; the caller writes its
                                    CloudResource row (if it raises, nothing
                                    is created);
  on_created(kind, token, cloud_id) AFTER the call, with the cloud id.
`token` is deterministic (run, cell, target), so a retried provision calls
on_create again with the same token and the caller can get_or_create.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from runners.command import Endpoint
from runners.engines import DEFAULT_PORTS, TARGET_KINDS  # noqa: F401  (providers import both)
from runners.errors import RunnerError, ValidationError
from runners.providers.pricing import CostLine, flat_lines

KINDS = TARGET_KINDS  # the engines' registry's (runners/engines/__init__.py)
APP_TAG = "benchboard"


def _noop(*args: Any) -> None:
    return None


@dataclass(frozen=True)
class Account:
    """The keys of a cloud account, from a team Credential of the provider's
    CREDENTIAL_KIND (key id: its username; secret: its secret).

    ambient=True (and no keys) means the worker's own identity (its
    environment, config files, instance role): only for an operator's own
    plan file behind BENCHBOARD_CLI_CLOUD_IDENTITY (docs/trust-model.md).
    Account() has neither: a provider refuses to make any call with it."""

    key_id: str | None = None
    secret: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    ambient: bool = False


@dataclass
class ProvisionContext:
    """Everything a provider needs besides the spec.

    account: whose cloud account (Account() is none: no call is made;
    Account(ambient=True) is the worker's own).
    endpoint_url None means: the cloud itself, or the provider's own
    environment variable (AWS_ENDPOINT_URL: moto in tests).
    secret_sink(name, value) stores a generated secret (master password,
    private key) as a Credential; the value never appears in a Handle.
    """

    run_id: str
    team: str
    owner: str
    expires_at: datetime
    cell_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    account: Account = field(default_factory=Account)
    region: str | None = None
    endpoint_url: str | None = None
    worker_cidr: str = "127.0.0.1/32"
    on_create: Callable[[str, str, dict[str, str]], None] = _noop
    on_created: Callable[[str, str, str], None] = _noop
    secret_sink: Callable[[str, str], None] = _noop
    cancel: threading.Event = field(default_factory=threading.Event)
    wait_timeout: float = 1800.0
    poll_interval: float = 15.0

    def check_cancel(self, what: str) -> None:
        """Raise a transient RunnerError if the run was cancelled."""
        if self.cancel.is_set():
            raise RunnerError(f"cancelled while {what}", permanent=False)

    def for_teardown(self) -> ProvisionContext:
        """A copy whose waits ignore cancel: a cancelled run must still be torn down."""
        return replace(self, cancel=threading.Event())

    def resource_tags(self, token: str) -> dict[str, str]:
        """The tags every cloud resource gets in its create call."""
        tags = dict(self.tags)
        tags.update(
            {
                "app": APP_TAG,
                "run": str(self.run_id),
                "cell": str(self.cell_id or ""),
                "team": str(self.team),
                "owner": str(self.owner),
                "expires-at": format_expiry(self.expires_at),
                "token": token,
            }
        )
        return tags


def format_expiry(moment: datetime) -> str:
    """ISO 8601 UTC with a Z, as stored in the expires-at tag."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_expiry(text: str) -> datetime | None:
    """The datetime of an expires-at tag, or None if it cannot be read."""
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except (TypeError, ValueError):
        return None


def endpoint_to_dict(endpoint: Endpoint | None) -> dict | None:
    """A JSON-safe Endpoint without its password."""
    if endpoint is None:
        return None
    data = asdict(endpoint)
    data.pop("password", None)
    return data


@dataclass
class Handle:
    """What provision returns and teardown takes.

    ids: cloud ids by role ({"db_instance": ..., "instance": ..., "volumes": [...]}).
    ssh: {"host", "port", "user", "credential", "known_host_key"}; credential
    names the stored secret (never the key itself).
    extra: region, the cloud's own address (for the record, never connected
    to when connect_via is set), nodes, names of generated secrets.
    """

    provider: str
    ids: dict[str, Any] = field(default_factory=dict)
    endpoint: Endpoint | None = None
    ssh: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """JSON-safe form, for the database."""
        return {
            "provider": self.provider,
            "ids": self.ids,
            "endpoint": endpoint_to_dict(self.endpoint),
            "ssh": self.ssh,
            "extra": self.extra,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Handle:
        """The inverse of to_dict."""
        endpoint = data.get("endpoint")
        return cls(
            provider=data["provider"],
            ids=dict(data.get("ids") or {}),
            endpoint=Endpoint(**endpoint) if endpoint else None,
            ssh=data.get("ssh"),
            extra=dict(data.get("extra") or {}),
        )


@dataclass(frozen=True)
class PriceTable:
    """One table of unit prices a provider's price lines read: what it prices
    (shown beside the editable rows) and its illustrative default prices."""

    label: str
    defaults: dict[str, float]


class Provider:
    """One way of obtaining targets and hosts. Subclasses override provision,
    teardown and exists; a cloud provider also declares its resource kinds,
    its credential, its price tables and sweep and, if its hosts need it,
    prepares their storage. benchapp reads only these declarations."""

    name = ""
    # CloudResource kinds: PRIMARY ones carry the stored handle of a slot
    # (the one whose cloud id is handle.ids[PRIMARY_ID]); COUNTED ones count
    # against a team's quota of live cloud resources; PRICED ones cost money
    # while they live (resource_lines prices them).
    PRIMARY_KINDS: tuple[str, ...] = ()
    PRIMARY_ID = ""
    COUNTED_KINDS: tuple[str, ...] = ()
    PRICED_KINDS: tuple[str, ...] = ()

    # Providers that share one account share a sweep group, swept once per
    # account and region (by the first provider of the group's sweep).
    SWEEP_GROUP = ""

    # The cloud's own monitoring that metrics() reads: MONITORING_SOURCE is
    # the telemetry source its series, summary and measurements are stored
    # under ("telemetry.<source>.<figure>.<stat>"), starting with
    # runners.telemetry.CLOUD_PREFIX (how telemetry and verdicts tell a
    # cloud's monitoring from the machines a cell samples); MONITORING_NAME
    # is the service as findings name it. "" when metrics() reads nothing.
    MONITORING_SOURCE = ""
    MONITORING_NAME = ""

    # True when the spec names machines that already exist (its host, nodes,
    # hosts, via, ssh) rather than making new ones: a cell on them locks those
    # machines as a target naming them would (runners.isolation).
    NAMES_MACHINES = False

    # The spec field naming a team Credential with the account's keys (e.g.
    # "aws_credential"), the Credential kind it must be and that kind's label;
    # "" when the provider needs no account.
    CREDENTIAL_FIELD = ""
    CREDENTIAL_KIND = ""
    CREDENTIAL_LABEL = ""

    # {table name: PriceTable} this provider's price lines read.
    PRICE_TABLES: dict[str, PriceTable] = {}

    def target_kinds(self, spec: dict) -> tuple[str, ...]:
        """The kinds of target spec can make, preferred first: a plan's target
        that does not say its kind gets the first its tool runs against
        (runners.plantargets). By default the spec's `kind` (spec_kind's default)."""
        return (spec.get("kind", "host"),)

    def default_region(self) -> str:
        """The region of a spec that names none ("" for providers without regions)."""
        return ""

    def describe(self, spec: dict) -> Handle | None:
        """The Handle provisioning spec will give, known without provisioning
        (existing hosts the spec names), or None when only provisioning tells
        (a cloud's new address). The save-time credential check reads it."""
        return None

    def counted_resources(self, spec: dict) -> int:
        """How many rows of COUNTED_KINDS provisioning spec creates (the quota's count)."""
        return 0

    def resource_spec(self, kind: str, spec: dict) -> dict:
        """What a CloudResource row of kind keeps of the slot's spec (what
        resource_lines prices it by); nothing for kinds the quota ignores."""
        return spec if kind in self.COUNTED_KINDS else {}

    def price_lines(self, spec: dict, hours: float, prices: dict) -> list[CostLine]:
        """The cost of keeping spec's resources up for hours, by the price
        tables prices; by default the spec's own price_per_hour (or nothing)."""
        return flat_lines(spec, hours)

    def resource_lines(self, resource: dict, hours: float, prices: dict) -> list[CostLine]:
        """The cost of one CloudResource of a PRICED kind that lived for hours:
        resource is {"kind", "spec", ...} (runners.providers.pricing.actual)."""
        return []

    def sweep(self, ctx: ProvisionContext, runs: set[str]) -> list:
        """Delete what this provider's group made in ctx's account and region
        that is tagged with one of runs, or expired; return what was deleted."""
        return []

    def prepare_storage(self, handle: Handle, spec: dict, secret) -> tuple[str, str]:
        """Make the provisioned host's storage ready (e.g. assemble volumes).

        secret(name) resolves a credential. Returns (what was done, a note for
        the run's record), both "" when there is nothing to do.
        """
        return "", ""

    def provision(self, spec: dict, ctx: ProvisionContext) -> Handle:
        """Create (or find) what spec describes and return its Handle."""
        raise NotImplementedError

    def teardown(self, handle: Handle, ctx: ProvisionContext) -> None:
        """Delete what handle names; already gone is fine."""
        raise NotImplementedError

    def exists(self, handle: Handle, ctx: ProvisionContext) -> bool:
        """Whether anything handle names still exists."""
        raise NotImplementedError

    def watched(self, spec: dict) -> Handle:
        """The handle of an existing resource a stored target names for its
        monitoring (the target's `cloud_instance`: {provider, the resource's
        id, region, credential}), which metrics() then reads; ValidationError
        for a spec naming none, or a provider with no monitoring to read."""
        raise ValidationError("provider", f"{self.name} has no monitoring to read")

    def metrics(self, handle: Handle, start: datetime, end: datetime, ctx) -> dict:
        """The cloud's own monitoring of what handle names between start and
        end, as a columnar series (t: seconds since start; one column per
        figure), {} when the provider has none. Telemetry: it is read after
        the cells ran (a cloud publishes its figures minutes late)."""
        return {}


def resource_name(*parts: Any, limit: int = 63) -> str:
    """A deterministic cloud-safe name from parts: 'bb-<parts>', letters/digits/hyphens.

    Starts with a letter, no double or trailing hyphen (RDS rules, the
    strictest); if too long, the tail is replaced by a hash so it stays unique.
    """
    raw = "-".join(str(p) for p in parts if p not in (None, ""))
    text = re.sub(r"[^a-z0-9]+", "-", raw.lower()).strip("-")
    name = re.sub(r"-+", "-", f"bb-{text}")
    if len(name) > limit:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:10]
        name = name[: limit - 11].rstrip("-") + "-" + digest
    return name


def spec_kind(spec: dict, default: str = "host") -> str:
    """The endpoint kind of a spec (mysql, postgres, host), validated."""
    kind = spec.get("kind", default)
    if kind not in KINDS:
        raise ValidationError("kind", f"must be one of {', '.join(KINDS)}, not {kind!r}")
    return kind


def check_port(value: Any, param: str = "port") -> int:
    """A TCP port as int, or ValidationError."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValidationError(param, "must be an integer 1-65535")
    try:
        port = int(value)
    except ValueError:
        raise ValidationError(param, "must be an integer 1-65535") from None
    if not 1 <= port <= 65535:
        raise ValidationError(param, "must be an integer 1-65535")
    return port


HOST = re.compile(r"^[A-Za-z0-9_.:-]+$")


def check_host(value: Any, param: str = "host") -> str:
    """A host name or address (no spaces or shell characters), or ValidationError."""
    if not isinstance(value, str) or not HOST.match(value):
        raise ValidationError(param, "must be a host name or IP address")
    return value


def check_ssh(ssh: Any, param: str = "ssh") -> dict:
    """A validated ssh dict: host, port (22), user, credential, known_host_key."""
    if not isinstance(ssh, dict):
        raise ValidationError(param, "must be a mapping with host, port, user, credential")
    return {
        "host": check_host(ssh.get("host"), f"{param}.host"),
        "port": check_port(ssh.get("port", 22), f"{param}.port"),
        "user": ssh.get("user"),
        "credential": ssh.get("credential"),
        "known_host_key": ssh.get("known_host_key"),
    }


def apply_connect_via(handle: Handle, spec: dict) -> Handle:
    """Point handle at spec["connect_via"] instead of the cloud's own address.

    connect_via is {"host", "port"} (a tunnel, a private address, local
    MariaDB in tests) and/or {"ssh": {...}} (a bastion). The cloud address is
    kept in extra["cloud_endpoint"] for the record only; nothing should ever
    connect to it once connect_via is set (moto invents addresses).
    """
    via = spec.get("connect_via")
    if not via:
        return handle
    if not isinstance(via, dict):
        raise ValidationError("connect_via", "must be a mapping with host/port or ssh")
    if "host" in via:
        cloud = handle.endpoint or Endpoint()
        handle.extra["cloud_endpoint"] = endpoint_to_dict(cloud)
        handle.endpoint = Endpoint(
            kind=cloud.kind,
            host=check_host(via["host"], "connect_via.host"),
            port=check_port(via.get("port", cloud.port or 22), "connect_via.port"),
            user=via.get("user", cloud.user),
            database=via.get("database", cloud.database),
        )
    if "ssh" in via:
        handle.extra["cloud_ssh"] = handle.ssh
        handle.ssh = check_ssh(via["ssh"], "connect_via.ssh")
    handle.extra["connect_via"] = True
    return handle
