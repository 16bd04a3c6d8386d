"""Where a team's stored credentials may be sent (docs/trust-model.md, "Credentials
belong to targets").

A stored credential is *bound* to an endpoint (host, port) when
- a stored target of the team names it as its credential (that target's host and
  port) or as its SSH credential (its SSH host and port);
- a team admin bound it to a stored target explicitly (Credential.bound_targets:
  that target's host:port and SSH host:port);
- one of its host patterns matches (Credential.host_patterns: "host", "host:port"
  or "unix:/socket/path", shell wildcards allowed in the host).

A plan from the pages, the API or a schedule may send a stored credential only to
an endpoint it is bound to: check_plan refuses the plan when it is validated, and
the worker asks SecretBook.check_use again before each secret is resolved. Hosts
are compared as written (case-insensitive), never resolved: a binding names the
machine the admin meant, whatever a DNS answer says later.
"""

from __future__ import annotations

import fnmatch
import re

from django.db.models import Q

from benchapp.models import Credential, Target
from runners.errors import ValidationError
from runners.plan import Plan as PlanSpec
from runners.planspec import SSHSpec, TargetSpec
from runners.tools import DEFAULT_PORTS

RULE = (
    "a plan may send a stored credential only to a stored target it is bound to "
    "(use the stored target by name, or ask a team admin to bind the credential)"
)
PATTERN = re.compile(r"(unix:/[A-Za-z0-9_./-]+|\[?[A-Za-z0-9*?._:-]+\]?(:[0-9]{1,5})?)")


# ------------------------------------------------------------------ endpoints


def key(host: str | None, port: int | None) -> tuple[str, int | None]:
    return ((host or "").strip().lower(), port)


def target_endpoint(spec: TargetSpec) -> tuple[str, int | None]:
    """Where a plan target's database secret goes: the socket, else connect_via or host."""
    if spec.socket:
        return key(f"unix:{spec.socket}", None)
    port = spec.port if spec.kind != "host" else None
    return key(spec.connect_via or spec.host, port)


def ssh_endpoint(ssh: SSHSpec) -> tuple[str, int | None]:
    return key(ssh.host, ssh.port)


def shown(endpoint: tuple[str, int | None]) -> str:
    host, port = endpoint
    return host if port is None else f"{host}:{port}"


def _stored_db(target: Target) -> tuple[str, int | None]:
    port = (target.port or DEFAULT_PORTS.get(target.kind)) if target.kind != "host" else None
    return key(target.host, port)


def _stored_ssh(target: Target) -> tuple[str, int | None] | None:
    return key(target.ssh_host, target.ssh_port or 22) if target.ssh_host else None


def bound_endpoints(cred: Credential) -> set[tuple[str, int | None]]:
    """Every (host, port) the credential is bound to through stored targets."""
    explicit = set(cred.bound_targets.values_list("pk", flat=True)) if cred.pk else set()
    rows = Target.objects.filter(team_id=cred.team_id).filter(
        Q(credential=cred) | Q(ssh_credential=cred) | Q(pk__in=explicit)
    )
    return _endpoints_of(cred.pk, explicit, rows)


def _endpoints_of(cred_id, explicit: set, targets) -> set[tuple[str, int | None]]:
    """The endpoints of targets that bind credential cred_id (explicit: pks bound by hand)."""
    ends: set[tuple[str, int | None]] = set()
    for target in targets:
        chosen = target.pk in explicit
        if (target.credential_id == cred_id or chosen) and target.host:
            ends.add(_stored_db(target))
        ssh = _stored_ssh(target)
        if ssh and (target.ssh_credential_id == cred_id or chosen):
            ends.add(ssh)
    return ends


def _pattern_matches(pattern: str, endpoint: tuple[str, int | None]) -> bool:
    host, port = endpoint
    pattern = pattern.strip().lower()
    if pattern.startswith("unix:"):
        return fnmatch.fnmatchcase(host, pattern)
    head, sep, tail = pattern.rpartition(":")
    if sep and tail.isdigit() and not head.endswith(":"):  # host:port (not a bare IPv6)
        return port == int(tail) and fnmatch.fnmatchcase(host, head.strip("[]"))
    return fnmatch.fnmatchcase(host, pattern.strip("[]"))


def is_bound(cred: Credential, endpoint: tuple[str, int | None]) -> bool:
    """True when cred may be sent to endpoint ((host, port) from target_endpoint/ssh_endpoint)."""
    if not endpoint[0]:
        return False
    if endpoint in bound_endpoints(cred):
        return True
    return any(_pattern_matches(p, endpoint) for p in cred.host_patterns or [])


def check_pattern(pattern: str) -> str:
    """A host pattern as stored, or ValueError naming what is wrong."""
    pattern = pattern.strip()
    if not PATTERN.fullmatch(pattern):
        raise ValueError(
            f"{pattern!r} is not a host pattern: use host, host:port (wildcards * and ? in the "
            "host) or unix:/path/to/socket"
        )
    return pattern


# ------------------------------------------------------------------ plans


def credential_uses(spec: PlanSpec):
    """(where in the plan, credential name, endpoint) for every stored secret the plan sends."""
    for index, target in enumerate(spec.targets):
        path = f"targets[{index}]"
        if target.credential and target.provision is None:
            yield f"{path}.credential", target.credential, target_endpoint(target)
        if target.ssh is not None and target.ssh.credential:
            yield f"{path}.ssh.credential", target.ssh.credential, ssh_endpoint(target.ssh)
        if target.provision:
            yield from _provision_uses(target.provision, f"{path}.provision", target.kind)
    for path, client in spec.client_paths():
        if client.ssh is not None and client.ssh.credential:
            yield f"{path}.ssh.credential", client.ssh.credential, ssh_endpoint(client.ssh)
        if client.provision:
            yield from _provision_uses(client.provision, f"{path}.provision", "host")


def _provision_uses(provision: dict, path: str, kind: str):
    """Credentials a provision spec sends to an address it writes itself (connect_via, ssh)."""
    via = provision.get("connect_via")
    if isinstance(via, dict):
        if via.get("credential") and via.get("host"):
            port = via.get("port", DEFAULT_PORTS.get(kind))
            yield f"{path}.connect_via.credential", via["credential"], key(via["host"], port)
        yield from _ssh_use(via.get("ssh"), f"{path}.connect_via.ssh")
    yield from _ssh_use(provision.get("ssh"), f"{path}.ssh")
    if provision.get("credential") and provision.get("host"):  # the static provider
        port = provision.get("port", DEFAULT_PORTS.get(kind))
        yield f"{path}.credential", provision["credential"], key(provision["host"], port)


def _ssh_use(ssh, path: str):
    if isinstance(ssh, dict) and ssh.get("credential") and ssh.get("host"):
        yield f"{path}.credential", ssh["credential"], key(ssh["host"], ssh.get("port", 22))


def check_plan(spec: PlanSpec, team) -> None:
    """ValidationError when the plan sends a stored credential where it is not bound.

    AWS keys are not checked here: they go to the cloud's API, never to a host a
    plan names. A name that is no stored credential brings no secret (the worker
    says so when the cell runs).
    """
    creds = {c.name: c for c in Credential.objects.filter(team=team)}
    for path, name, endpoint in credential_uses(spec):
        cred = creds.get(name)
        if cred is None or cred.kind in Credential.ACCOUNT_KINDS or is_bound(cred, endpoint):
            continue
        raise ValidationError(
            path, f"credential {name!r} is not bound to {shown(endpoint)}: {RULE}"
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
        ends = sorted(shown(e) for e in _endpoints_of(cred.pk, explicit, targets))
        shown_by_pk[cred.pk] = ", ".join(ends + list(cred.host_patterns or []))
    return shown_by_pk
