"""local: the worker machine itself (local MariaDB/PostgreSQL, fio on a local directory).

Spec: kind (mysql|postgres|host), port (default by kind), user, database,
socket. The endpoint host is always 127.0.0.1.
"""

from __future__ import annotations

from runners.command import Endpoint
from runners.providers.base import (
    DEFAULT_PORTS,
    Handle,
    Provider,
    ProvisionContext,
    check_port,
    spec_kind,
)


class LocalProvider(Provider):
    """The machine the worker runs on; nothing is created."""

    name = "local"
    NAMES_MACHINES = True

    def provision(self, spec: dict, ctx: ProvisionContext | None = None) -> Handle:
        """A Handle pointing at 127.0.0.1 with the kind's default port."""
        kind = spec_kind(spec)
        port = spec.get("port", DEFAULT_PORTS.get(kind))
        endpoint = Endpoint(
            kind=kind,
            host="127.0.0.1",
            port=check_port(port) if port is not None else None,
            user=spec.get("user"),
            database=spec.get("database"),
            socket=spec.get("socket"),
        )
        return Handle(provider=self.name, endpoint=endpoint, extra={"local": True})

    def teardown(self, handle: Handle, ctx: ProvisionContext | None = None) -> None:
        """Nothing to delete."""

    def exists(self, handle: Handle, ctx: ProvisionContext | None = None) -> bool:
        """The local machine is always there."""
        return True
