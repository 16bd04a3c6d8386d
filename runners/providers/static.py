"""static: endpoints and hosts that already exist (S2's db8, a balancer with nodes).

Spec: kind (mysql|postgres|host), host, port, user, database, credential or
password_env, ssh: {host, port, user, credential}, nodes: [{host, port}],
via: {host, port} (the balancer in front of the nodes; the tool talks to it).
provision only checks the spec; reachability is the caller's check, with an
executor, because only the caller knows where the tool will run from.
"""

from __future__ import annotations

from runners.command import Endpoint
from runners.errors import ValidationError
from runners.providers.base import (
    DEFAULT_PORTS,
    Handle,
    Provider,
    ProvisionContext,
    apply_connect_via,
    check_host,
    check_port,
    check_ssh,
    spec_kind,
)


def check_nodes(nodes, default_port: int | None) -> list[dict]:
    """The validated node list [{host, port}] (may be empty)."""
    if nodes is None:
        return []
    if not isinstance(nodes, list):
        raise ValidationError("nodes", "must be a list of {host, port}")
    checked = []
    for index, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise ValidationError(f"nodes[{index}]", "must be a mapping with host and port")
        port = node.get("port", default_port)
        checked.append(
            {
                "host": check_host(node.get("host"), f"nodes[{index}].host"),
                "port": check_port(port, f"nodes[{index}].port") if port is not None else None,
            }
        )
    return checked


class StaticProvider(Provider):
    """Nothing to create or delete: the handle describes what is there."""

    name = "static"
    NAMES_MACHINES = True

    def provision(self, spec: dict, ctx: ProvisionContext | None = None) -> Handle:
        """A Handle for the described endpoint; ValidationError for a bad spec."""
        kind = spec_kind(spec)
        default_port = DEFAULT_PORTS.get(kind)
        nodes = check_nodes(spec.get("nodes"), default_port)
        via = spec.get("via")
        if via is not None and not isinstance(via, dict):
            raise ValidationError("via", "must be a mapping with host and port")
        front = via or spec
        if front.get("host") is None and nodes and not via:
            front = nodes[0]  # no balancer: talk to the first node
        host = check_host(front.get("host"), "via.host" if via else "host")
        port = front.get("port", default_port)
        endpoint = Endpoint(
            kind=kind,
            host=host,
            port=check_port(port, "via.port" if via else "port") if port is not None else None,
            user=spec.get("user"),
            database=spec.get("database"),
        )
        ssh = check_ssh(spec["ssh"]) if spec.get("ssh") else None
        extra = {"nodes": nodes}
        for key in ("credential", "password_env"):
            if spec.get(key):
                extra[key] = spec[key]
        return apply_connect_via(
            Handle(provider=self.name, endpoint=endpoint, ssh=ssh, extra=extra), spec
        )

    def describe(self, spec: dict) -> Handle:
        """What provision gives: nothing is made, the spec says it all."""
        return self.provision(spec)

    def teardown(self, handle: Handle, ctx: ProvisionContext | None = None) -> None:
        """Nothing to delete: we never own static systems."""

    def exists(self, handle: Handle, ctx: ProvisionContext | None = None) -> bool:
        """Static systems exist as far as the provider knows (reachability is the caller's)."""
        return True
