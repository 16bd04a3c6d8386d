"""Keep benchmark targets away from the app's own services.

Pure logic, no Django: the caller passes the protected services (name, host,
port) and the operator's allow/deny networks. Hosts are resolved with
socket.getaddrinfo; every loopback or unspecified address, and every address
of this machine's interfaces (runners/localaddrs.py, re-read every few
seconds), counts as the same machine, so localhost, 127.0.0.2, ::1, 0.0.0.0
and eth0's address all match a service on 127.0.0.1 (a service listening on
all interfaces answers on each of them).
"""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from runners.localaddrs import local_addresses


class TargetRefused(ValueError):
    """A target address collides with an app service or the operator's network lists."""


@dataclass(frozen=True)
class Service:
    name: str  # what the message names: "the app's database"
    host: str
    port: int


def service_from_url(name: str, url: str, default_port: int) -> Service | None:
    """A Service from a URL such as redis://:secret@127.0.0.1:6379/0 (secrets dropped)."""
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    return Service(name, parts.hostname, parts.port or default_port)


def resolve(host: str) -> set[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """Every address a host name resolves to; TargetRefused if it does not resolve."""
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise TargetRefused(f"Target host {host!r} does not resolve: {exc.strerror}") from None
    return {_normalise(ipaddress.ip_address(info[4][0].split("%")[0])) for info in infos}


def _normalise(address):
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def _is_this_machine(address) -> bool:
    return address.is_loopback or address.is_unspecified or address in local_addresses()


def _same_host(a, b) -> bool:
    return a == b or (_is_this_machine(a) and _is_this_machine(b))


def _networks(cidrs) -> list:
    return [ipaddress.ip_network(cidr.strip(), strict=False) for cidr in cidrs if cidr.strip()]


def check_target(host: str, port: int, services, allow=(), deny=(), resolver=resolve) -> None:
    """Raise TargetRefused when host:port reaches a protected service or a denied network."""
    addresses = resolver(host)
    for service in services:
        if int(port) != int(service.port):
            continue
        service_addresses = resolver(service.host)
        if any(_same_host(a, s) for a in addresses for s in service_addresses):
            raise TargetRefused(
                f"Target {host}:{port} is {service.name}; a target may not point at the "
                "app's own services."
            )
    deny_networks, allow_networks = _networks(deny), _networks(allow)
    for address in addresses:
        if any(address in net for net in deny_networks):
            raise TargetRefused(f"Target {host} ({address}) is in a network the operator denied.")
        if allow_networks and not any(address in net for net in allow_networks):
            raise TargetRefused(
                f"Target {host} ({address}) is outside the networks the operator allowed."
            )


@dataclass(frozen=True)
class Guard:
    """The protected services and the operator's network lists, checked together.

    benchapp builds one from its settings and hands it to the runner, which
    calls check() right before a tool or an SSH connection reaches a host.
    """

    services: tuple[Service, ...] = ()
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()

    def check(self, host: str | None, port: int | None, resolver=resolve) -> None:
        """TargetRefused when host:port is an app service or outside the operator's lists.

        No host (a Unix socket, or the client library's default) is this
        machine: localhost at the same port.
        """
        check_target(
            host or "localhost",
            int(port or 0),
            self.services,
            self.allow,
            self.deny,
            resolver=resolver,
        )

    def allows_at_save(self, host: str, port: int | None) -> str:
        """ "" when host:port may be saved, else the refusal. A name that does
        not resolve yet passes: it is checked again when a cell connects."""
        try:
            self.check(host, port)
        except TargetRefused as exc:
            if "does not resolve" in str(exc):
                return ""
            return str(exc)
        return ""
