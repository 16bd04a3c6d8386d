"""Where a team's stored credentials may be sent (docs/trust-model.md, "Credentials
belong to targets").

A binding is (client machine, endpoint): the machine that connects and the
address it connects to (runners/endpoint.py). A stored credential is bound
- through a stored target of the team naming it as its credential (that
  target's address, from the machine its clients run on: its SSH host when it
  has one, else the worker) or as its SSH credential (its SSH host and port,
  from the worker, which opens every SSH login);
- through a stored target a team admin bound it to (Credential.bound_targets:
  both of the above);
- by one of its host patterns (Credential.host_patterns: "host", "host:port",
  a CIDR subnet, or "unix:/socket/path"; wildcards within one label).

An endpoint relative to its client (loopback, `localhost`, a socket, a name
without a dot) holds only from the machine it was bound for: the worker's
127.0.0.1 is not an SSH client's. A plan from the pages, the API or a schedule
may send a stored credential only where it is bound: check_plan refuses the
plan when it is validated, for every client machine of its cells, and the
worker asks SecretBook.check_use again before each client connects; both
apply runners.endpoint.holds. Hosts are compared as written (IP literals
parsed), never resolved: a binding names the machine the admin meant,
whatever a DNS answer says later.
"""

from __future__ import annotations

from django.db.models import Q

from benchapp.models import Credential, Target
from runners import endpoint as ep
from runners.endpoint import WORKER, Binding, check_pattern, key, shown  # noqa: F401
from runners.engines import DEFAULT_PORTS
from runners.errors import ValidationError
from runners.plan import Plan as PlanSpec
from runners.plantargets import CELL_TARGET, SSHSpec, TargetSpec
from runners.providers import PROVIDERS
from runners.providers.endpoints import ssh_of, target_spec

RULE = (
    "a plan may send a stored credential only to a stored target it is bound to "
    "(use the stored target by name, or ask a team admin to bind the credential)"
)
# A client host provisioning makes: no binding names it before it exists.
PROVISIONED = "a provisioned client host"


# ------------------------------------------------------------------ bindings


def target_endpoint(spec: TargetSpec) -> tuple[str, int | None]:
    """Where a plan target's database secret goes (runners.endpoint.address)."""
    return ep.address(spec).key


def ssh_endpoint(ssh: SSHSpec) -> tuple[str, int | None]:
    return key(ssh.host, ssh.port)


def _stored_db(target: Target) -> Binding:
    """A stored target's database address, from the machine its clients run on."""
    port = (target.port or DEFAULT_PORTS.get(target.kind)) if target.kind != "host" else None
    client = ep.ssh_machine(target.ssh_host, target.ssh_port) if target.ssh_host else WORKER
    return Binding(client, key(target.host, port))


def _stored_ssh(target: Target) -> Binding | None:
    if not target.ssh_host:
        return None
    return Binding(WORKER, key(target.ssh_host, target.ssh_port or 22))


def bindings(cred: Credential) -> set[Binding]:
    """Every (client machine, endpoint) the credential is bound to through stored targets."""
    explicit = set(cred.bound_targets.values_list("pk", flat=True)) if cred.pk else set()
    rows = Target.objects.filter(team_id=cred.team_id).filter(
        Q(credential=cred) | Q(ssh_credential=cred) | Q(pk__in=explicit)
    )
    return _bindings_of(cred.pk, explicit, rows)


def _bindings_of(cred_id, explicit: set, targets) -> set[Binding]:
    """The bindings of targets that bind credential cred_id (explicit: pks bound by hand)."""
    found: set[Binding] = set()
    for target in targets:
        chosen = target.pk in explicit
        if (target.credential_id == cred_id or chosen) and target.host:
            found.add(_stored_db(target))
        ssh = _stored_ssh(target)
        if ssh and (target.ssh_credential_id == cred_id or chosen):
            found.add(ssh)
    return found


def is_bound(cred: Credential, endpoint: tuple[str, int | None], client: str = WORKER) -> bool:
    """True when cred may be sent to endpoint (a key()) by the client machine
    `client` (runners.endpoint.machine): runners.endpoint.holds."""
    return ep.holds(client, key(*endpoint), bindings(cred), cred.host_patterns or [])


def refusal(name: str, endpoint: tuple[str, int | None], client: str) -> str:
    """Why credential `name` may not go to endpoint from client: the first
    part of the save-time and the worker's message."""
    return f"credential {name!r} is not bound to {shown(key(*endpoint))} when {client} connects"


def reason(endpoint: tuple[str, int | None], client: str) -> str:
    """The rule that refused it: RULE, or the relative-endpoint rule."""
    if ep.is_relative(key(*endpoint)) and client != WORKER:
        return (
            "loopback, localhost, a socket or a name without a dot is another server on "
            "each machine, so a binding for the worker holds only on the worker"
        )
    return RULE


# ------------------------------------------------------------------ plans


def credential_uses(spec: PlanSpec):
    """(where in the plan, credential name, endpoint, client machine) for every
    stored secret the plan sends, once per client machine of the cells."""
    for index, target in enumerate(spec.targets):
        path = f"targets[{index}]"
        if target.provision:
            yield from _provision_uses(spec, target, path)
            continue
        if target.credential:
            for client in client_machines(spec, target):
                yield f"{path}.credential", target.credential, target_endpoint(target), client
        if target.ssh is not None and target.ssh.credential:
            yield f"{path}.ssh.credential", target.ssh.credential, ssh_endpoint(target.ssh), WORKER
    for path, client in spec.client_paths():
        if client.ssh is not None and client.ssh.credential:
            yield f"{path}.ssh.credential", client.ssh.credential, ssh_endpoint(client.ssh), WORKER
        if client.provision:
            yield from _provision_ssh_uses(client.provision, f"{path}.provision", "host")


def client_machines(spec: PlanSpec, target: TargetSpec) -> list[str]:
    """The client machines of the cells on target (runners.context.client_ssh_for's
    answer, read from the plan alone; PROVISIONED where only provisioning tells)."""
    found = []
    for client in spec.clients:
        if client.kind == "local":
            found.append(WORKER)
        elif client.kind == "ssh":
            found.append(ep.machine(client.ssh))
        elif client.kind == "on":
            host = target if client.target == CELL_TARGET else spec.target(client.target)
            found.append(_host_machine(host))
        else:
            found.append(_described_machine(client.provision, "host"))
    return list(dict.fromkeys(found))


def _host_machine(target: TargetSpec) -> str:
    if target.provision:
        return _described_machine(target.provision, target.kind)
    return ep.machine(target.ssh)


def _described(provision: dict, kind: str, target: TargetSpec | None = None):
    """(handle dict, runtime TargetSpec) of a provision spec known before it runs
    (static, static_cluster), else None."""
    provider = PROVIDERS.get(provision.get("provider"))
    try:
        handle = provider.describe({"kind": kind, **provision}) if provider else None
    except ValidationError:
        return None  # provisioning names the problem when the run starts
    if handle is None:
        return None
    stored = {**handle.to_dict(), "slot": {"spec": provision}}
    made = target_spec(target, stored) if target is not None else None
    return stored, made


def _described_machine(provision: dict, kind: str) -> str:
    described = _described(provision or {}, kind)
    if described is None:
        return PROVISIONED
    return ep.machine(ssh_of(described[0]))


def _provision_uses(spec: PlanSpec, target: TargetSpec, path: str):
    """Credentials a provisioned target sends: where a static or static_cluster
    spec connects and logs in (the provider's own describe), else the
    addresses the spec writes itself (connect_via, ssh)."""
    described = _described(target.provision, target.kind, target)
    clients = client_machines(spec, target)
    if described is None:
        yield from _provision_ssh_uses(target.provision, f"{path}.provision", target.kind, clients)
        return
    handle, made = described
    named = target.provision.get("credential")
    if named and handle.get("endpoint"):
        front = handle["endpoint"]
        for client in clients:
            yield f"{path}.provision.credential", named, key(front["host"], front["port"]), client
    if made.credential:
        for client in clients:
            yield (
                f"{path}.provision.connect_via.credential",
                made.credential,
                ep.address(made).key,
                client,
            )
    if made.ssh is not None and made.ssh.credential:
        where = "connect_via.ssh" if "ssh" in (target.provision.get("connect_via") or {}) else "ssh"
        yield (
            f"{path}.provision.{where}.credential",
            made.ssh.credential,
            ssh_endpoint(made.ssh),
            WORKER,
        )


def _provision_ssh_uses(provision: dict, path: str, kind: str, clients=(PROVISIONED,)):
    """Credentials a cloud provision spec sends to an address it writes itself
    (clients: the machines its database clients run on)."""
    described = _described(provision, kind)
    if described is not None:
        ssh = ssh_of(described[0])
        if ssh is not None and ssh.credential:
            yield f"{path}.ssh.credential", ssh.credential, ssh_endpoint(ssh), WORKER
        return
    via = provision.get("connect_via")
    if isinstance(via, dict):
        if via.get("credential") and via.get("host"):
            port = via.get("port", DEFAULT_PORTS.get(kind))
            for client in clients:
                yield (
                    f"{path}.connect_via.credential",
                    via["credential"],
                    key(via["host"], port),
                    client,
                )
        yield from _ssh_use(via.get("ssh"), f"{path}.connect_via.ssh")
    yield from _ssh_use(provision.get("ssh"), f"{path}.ssh")


def _ssh_use(ssh, path: str):
    if isinstance(ssh, dict) and ssh.get("credential") and ssh.get("host"):
        yield f"{path}.credential", ssh["credential"], key(ssh["host"], ssh.get("port", 22)), WORKER


def check_plan(spec: PlanSpec, team) -> None:
    """ValidationError when the plan sends a stored credential where it is not
    bound, from any client machine of its cells.

    AWS keys are not checked here: they go to the cloud's API, never to a host a
    plan names. A name that is no stored credential brings no secret (the worker
    says so when the cell runs).
    """
    creds = {c.name: c for c in Credential.objects.filter(team=team)}
    for path, name, endpoint, client in credential_uses(spec):
        cred = creds.get(name)
        if cred is None:
            continue
        if cred.kind in Credential.ACCOUNT_KINDS or not is_bound(cred, endpoint, client):
            raise ValidationError(
                path, f"{refusal(name, endpoint, client)}: {reason(endpoint, client)}"
            )


def summaries(creds) -> dict[int, str]:
    """credential pk -> where it may be sent ("db1:3306, *.lab:22"), for the
    credentials of one team (fetched with prefetch_related("bound_targets"))."""
    creds = list(creds)
    if not creds:
        return {}
    targets = list(Target.objects.filter(team_id=creds[0].team_id))
    shown_by_pk = {}
    for cred in creds:
        explicit = {t.pk for t in cred.bound_targets.all()}
        ends = sorted(_shown_binding(b) for b in _bindings_of(cred.pk, explicit, targets))
        shown_by_pk[cred.pk] = ", ".join(ends + list(cred.host_patterns or []))
    return shown_by_pk


def _shown_binding(binding: Binding) -> str:
    """ "db1:3306", or "127.0.0.1:3306 from SSH host db1:22" when only that machine may."""
    where = shown(binding.endpoint)
    if ep.is_relative(binding.endpoint):
        return f"{where} from {binding.machine}"
    return where
