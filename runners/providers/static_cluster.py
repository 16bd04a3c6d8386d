"""static_cluster: a named set of existing hosts leased for a run, at a price per host-hour.

Spec (a target's or the client's `provision:`):

    provider: static_cluster
    kind: host                      # or a database kind the hosts serve
    hosts: [{host: 10.0.0.5}, {host: 10.0.0.6, port: 3307}]
    price_per_hour: 0.12            # USD per host and hour (the cluster's owner says)
    ssh: {port: 22, user: bench, credential: lab-key}   # one login for every host
    user, database, credential / password_env           # a database kind's login
    via: {host, port}               # the balancer in front, if the tool talks to one

Nothing is created: the hosts are there. Each host is one leased resource of
the run (a `cluster_host` row: counted against the team's quota, priced per
hour while the run holds it, released at teardown), so the budget check, the
quota and the actual cost treat a lab cluster like a cloud. The tool talks
to `via`, else to the first host; every host is listed in the handle's nodes.
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
from runners.providers.pricing import CostLine, hourly
from runners.providers.static import check_nodes

HOST = "cluster_host"
# A lab cluster, not a datacentre: more hosts than this is a typo in the plan.
MAX_HOSTS = 64


def check_price(value) -> float:
    """price_per_hour as a float >= 0, or ValidationError (a wrong price is worse than none)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValidationError("price_per_hour", "required: USD per host and hour, a number >= 0")
    return float(value)


def check_hosts(spec: dict) -> list[dict]:
    """The validated hosts [{host, port}], 1 to MAX_HOSTS of them."""
    hosts = check_nodes(spec.get("hosts"), DEFAULT_PORTS.get(spec_kind(spec)))
    if not 1 <= len(hosts) <= MAX_HOSTS:
        raise ValidationError("hosts", f"must list 1-{MAX_HOSTS} hosts as {{host, port}}")
    return hosts


class StaticClusterProvider(Provider):
    """Existing hosts leased per run: nothing to create, a price per host-hour."""

    name = "static_cluster"
    NAMES_MACHINES = True
    PRIMARY_KINDS = (HOST,)
    PRIMARY_ID = "cluster"
    COUNTED_KINDS = (HOST,)
    PRICED_KINDS = (HOST,)

    def counted_resources(self, spec: dict) -> int:
        hosts = spec.get("hosts")
        return len(hosts) if isinstance(hosts, list) else 0

    def price_lines(self, spec: dict, hours: float, prices: dict) -> list[CostLine]:
        """Every host of the cluster at its price over hours."""
        count, price = len(check_hosts(spec)), check_price(spec.get("price_per_hour"))
        return [
            hourly(
                f"{spec.get('name', self.name)} x{count} hosts", count, "host-hour", price, hours
            )
        ]

    def resource_lines(self, resource: dict, hours: float, prices: dict) -> list[CostLine]:
        """One leased host over the hours the run held it."""
        spec = resource.get("spec") or {}
        price = check_price(spec.get("price_per_hour"))
        return [hourly(f"{spec.get('name', self.name)} host", 1, "host-hour", price, hours)]

    def provision(self, spec: dict, ctx: ProvisionContext) -> Handle:
        """Lease every host (one row each through ctx's callbacks) and return
        the cluster's Handle; ValidationError for a bad spec, before any row."""
        handle = self.describe(spec)
        ids = []
        for index, node in enumerate(handle.extra["nodes"]):
            # Deterministic per run, slot and position: a retried provision finds its rows.
            token = f"{ctx.run_id}/{spec.get('name', '')}/{index}"
            ctx.on_create(HOST, token, ctx.resource_tags(token))
            ids.append(f"{spec.get('name', '')}/{index}/{node['host']}")
            ctx.on_created(HOST, token, ids[-1])
        handle.ids = {"cluster": ids[0], "hosts": ids}
        return handle

    def describe(self, spec: dict) -> Handle:
        """The cluster's Handle without its lease rows (ids come with provision):
        where the tool connects and logs in, known from the spec alone."""
        kind, hosts = spec_kind(spec), check_hosts(spec)
        check_price(spec.get("price_per_hour"))
        ssh = check_ssh({**spec["ssh"], "host": hosts[0]["host"]}) if spec.get("ssh") else None
        front = self._front(spec, hosts[0])
        endpoint = Endpoint(
            kind=kind,
            host=front["host"],
            port=front["port"] if kind != "host" else None,
            user=spec.get("user"),
            database=spec.get("database"),
        )
        extra = {"nodes": hosts}
        for key in ("credential", "password_env"):
            if spec.get(key):
                extra[key] = spec[key]
        handle = Handle(self.name, endpoint=endpoint, ssh=ssh, extra=extra)
        return apply_connect_via(handle, spec)

    @staticmethod
    def _front(spec: dict, first: dict) -> dict:
        """Where the tool connects: the balancer (`via`) if given, else the first host."""
        via = spec.get("via")
        if via is None:
            return first
        if not isinstance(via, dict):
            raise ValidationError("via", "must be a mapping with host and port")
        port = via.get("port", first["port"])
        return {
            "host": check_host(via.get("host"), "via.host"),
            "port": check_port(port, "via.port") if port is not None else None,
        }

    def teardown(self, handle: Handle, ctx: ProvisionContext | None = None) -> None:
        """Nothing to delete: the hosts are released when their rows are marked deleted."""

    def exists(self, handle: Handle, ctx: ProvisionContext | None = None) -> bool:
        """The hosts exist as far as the provider knows (reachability is the caller's)."""
        return True
