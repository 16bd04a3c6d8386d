"""Where a cell's clients connect, and whether a stored credential may go there.

Pure, no Django. Every place that sends a database secret or checks where one
goes asks this module, so the address a binding is checked against is the
address the client connects to:

- address(target): the one address every client of a cell connects to (a TCP
  host and port, or a Unix socket); a target naming both a socket and a host
  is refused (MySQL clients take TCP for any host but `localhost`, libpq a
  host before a socket: the socket would be checked and the host reached).
- machine(ssh): the client machine that connects (the worker, or an SSH
  login's host and port).
- holds(machine, key, bindings, patterns): the binding rule, used by the
  save-time check and by the worker alike. A binding is (client machine,
  endpoint). An endpoint relative to its client (loopback, `localhost`, a
  Unix socket, a name without a dot) means another server on every machine,
  so it holds only from the machine it was bound for; an absolute endpoint
  (a qualified name, a routable address) holds from any client.
- Host patterns: "host", "host:port" or "unix:/path"; CIDR subnets compared as
  parsed addresses; `*` and `?` match within one DNS label (or one path
  segment), never across a dot; an IP-shaped pattern matches IP literals only.
- same_target(planned, stored): whether a plan target is that stored target.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import re
import socket as _socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from runners import engines
from runners.errors import ValidationError

# Targets and SSH logins are runners.plantargets' TargetSpec and SSHSpec, read by
# attribute: planspec checks its targets with address(), so it sits above this.
TargetSpec = Any
SSHSpec = Any

WORKER = "the worker"
Key = tuple[str, int | None]  # ("db1.example.com", 5432) or ("unix:/run/x.sock", None)

SOCKET_AND_HOST = (
    "give socket or host, not both: a client takes one of them and the other would be "
    "checked instead (for a socket on a host reached over SSH, name the machine in ssh.host "
    "and leave host out)"
)
IP_LABEL = re.compile(r"[0-9*?]{1,3}")


@dataclass(frozen=True)
class Address:
    """Where a client connects: socket (a Unix socket file) or host and port."""

    host: str | None = None
    port: int | None = None
    socket: str | None = None

    @property
    def key(self) -> Key:
        """The address as bindings compare it (see key())."""
        if self.socket:
            return (f"unix:{self.socket}", None)
        return key(self.host, self.port)


@dataclass(frozen=True)
class Binding:
    """A stored credential may go to endpoint when machine is the client."""

    machine: str
    endpoint: Key


# ------------------------------------------------------------ addresses


def address(target: TargetSpec) -> Address:
    """The one address every client of a cell on target connects to.

    connect_via replaces host; a PostgreSQL socket is its file, named by the
    directory and port as libpq does. ValidationError("socket") for a target
    naming a socket beside a host (or connect_via).
    """
    if target.socket and (target.host or target.connect_via):
        raise ValidationError("socket", SOCKET_AND_HOST)
    if target.kind == "host":
        return Address(host=target.connect_via or target.host)
    if target.socket:
        return _socket_address(target)
    return Address(host=target.connect_via or target.host, port=target.port)


def _socket_address(target: TargetSpec) -> Address:
    """A socket as its engine names the file (socket_address: a directory
    holding the file of the port), else the socket as given."""
    engine = engines.find(target.kind)
    if not hasattr(engine, "socket_address"):
        return Address(port=target.port, socket=target.socket)
    port, path = engine.socket_address(target.socket, target.port)
    return Address(port=port, socket=path)


def literal(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The IP address a host string is, as a C resolver reads it (127.1 and
    0x7f.1 are 127.0.0.1), or None for a name. Never asks DNS."""
    text = host.strip().strip("[]").split("%")[0]
    if not text or any(ch.isspace() for ch in text):
        return None
    try:
        found = ipaddress.ip_address(text)
    except ValueError:
        try:
            found = ipaddress.IPv4Address(_socket.inet_aton(text))
        except OSError:
            return None
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped:
        return found.ipv4_mapped
    return found


def key(host: str | None, port: int | None) -> Key:
    """(host, port) as compared: lower case, no trailing dot, IP literals canonical."""
    text = (host or "").strip().lower().rstrip(".")
    if text.startswith("unix:"):
        return (text, None)
    found = literal(text) if text else None
    return (str(found) if found is not None else text, port)


def shown(endpoint: Key) -> str:
    host, port = endpoint
    if port is None:
        return host
    return f"[{host}]:{port}" if ":" in host and not host.startswith("unix:") else f"{host}:{port}"


def is_relative(endpoint: Key) -> bool:
    """True when endpoint names a different server on every client machine:
    a Unix socket, loopback, the unspecified address, `localhost`, a name
    without a dot (resolved by each machine's own search list), or nothing."""
    host = endpoint[0]
    if not host or host.startswith("unix:"):
        return True
    found = literal(host)
    if found is not None:
        return found.is_loopback or found.is_unspecified or found.is_link_local
    return host == "localhost" or host.endswith(".localhost") or "." not in host


# ------------------------------------------------------------ machines


def machine(ssh: SSHSpec | None) -> str:
    """The client machine: WORKER for None, else "SSH host <host>:<port>"."""
    if ssh is None:
        return WORKER
    return ssh_machine(ssh.host, ssh.port)


def ssh_machine(host: str, port: int | None) -> str:
    """The machine an SSH login to host:port reaches."""
    return f"SSH host {shown(key(host, port or 22))}"


# ------------------------------------------------------------ the rule


def holds(client: str, endpoint: Key, bindings: Iterable[Binding], patterns: Iterable[str]) -> bool:
    """True when a credential with these bindings and host patterns may be
    sent to endpoint by the client machine `client` (machine()).

    A relative endpoint holds only through a binding made for that same
    machine; host patterns name no machine, so they hold for a relative
    endpoint only on the worker. Used at save and by the worker: one rule.
    """
    if not endpoint[0]:
        return False
    relative = is_relative(endpoint)
    for binding in bindings:
        if binding.endpoint == endpoint and (not relative or binding.machine == client):
            return True
    if relative and client != WORKER:
        return False
    return any(pattern_matches(p, endpoint) for p in patterns)


def pattern_matches(pattern: str, endpoint: Key) -> bool:
    """Whether a host pattern ("host", "host:port", "unix:/path") matches endpoint."""
    host, port = endpoint
    pattern = pattern.strip().lower()
    if pattern.startswith("unix:"):
        return host.startswith("unix:") and _segments_match(pattern[5:], host[5:], "/")
    if host.startswith("unix:"):
        return False
    head, wanted = split_port(pattern)
    if wanted is not None and port != wanted:
        return False
    return host_matches(head, host)


def split_port(pattern: str) -> tuple[str, int | None]:
    """(host part, port or None) of "host", "host:port", "[v6]:port" or a bare IPv6."""
    if pattern.startswith("["):
        inside, _, rest = pattern[1:].partition("]")
        return inside, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else None
    head, sep, tail = pattern.rpartition(":")
    if sep and tail.isdigit() and ":" not in head:
        return head, int(tail)
    return pattern, None


def host_matches(pattern: str, host: str) -> bool:
    """A host part of a pattern against a compared host (key()'s form)."""
    if "/" in pattern:  # a CIDR subnet: addresses in it, never names
        found = literal(host)
        try:
            network = ipaddress.ip_network(pattern, strict=False)
        except ValueError:
            return False  # a pattern stored before subnets were checked
        return found is not None and found.version == network.version and found in network
    if ip_shaped(pattern):
        found = literal(host)
        if found is None or ("." in pattern) != (found.version == 4):
            return False
        if "*" in pattern or "?" in pattern:
            return _segments_match(pattern, str(found), ".")
        return found == literal(pattern)
    if literal(host) is not None:
        return False  # a name pattern never matches an address
    return _segments_match(pattern, host, ".")


def ip_shaped(pattern: str) -> bool:
    """An IPv4 pattern (four labels of digits and wildcards) or an IPv6 literal."""
    labels = pattern.split(".")
    if len(labels) == 4 and all(IP_LABEL.fullmatch(label) for label in labels):
        return True
    return ":" in pattern


def _segments_match(pattern: str, text: str, separator: str) -> bool:
    """fnmatch per segment: the same number of segments, each matching its own."""
    wanted, given = pattern.split(separator), text.split(separator)
    return len(wanted) == len(given) and all(
        fnmatch.fnmatchcase(g, w) for w, g in zip(wanted, given, strict=True)
    )


def check_pattern(pattern: str) -> str:
    """A host pattern as stored, or ValueError naming what is wrong."""
    text = pattern.strip()
    problem = _pattern_problem(text.lower())
    if problem:
        raise ValueError(f"{text!r} is not a host pattern: {problem}")
    return text


PATTERN_HELP = (
    "use host, host:port (wildcards * and ? match within one label of a name), "
    "a subnet such as 10.0.0.0/24 or 10.0.0.0/24:5432, or unix:/path/to/socket"
)
PATTERN_TEXT = re.compile(r"(unix:/[a-z0-9_./+@*?-]+|\[?[a-z0-9*?._:/-]+\]?(:[0-9]{1,5})?)")


def _pattern_problem(text: str) -> str:
    if not PATTERN_TEXT.fullmatch(text):
        return PATTERN_HELP
    if text.startswith("unix:"):
        return "a socket path may not contain '..'" if ".." in text.split("/") else ""
    head, port = split_port(text)
    if port is not None and not 1 <= port <= 65535:
        return "the port must be 1-65535"
    if "/" in head:
        try:
            ipaddress.ip_network(head, strict=False)
        except ValueError:
            return "a subnet is an address and a prefix length, such as 10.0.0.0/24"
        return ""
    if ":" in head and ("*" in head or "?" in head):
        return "an IPv6 pattern takes no wildcard: write a subnet such as fd00::/64"
    if ":" in head and literal(head) is None:
        return PATTERN_HELP
    labels = head.split(".")
    if any(label == "" for label in labels):
        return PATTERN_HELP
    if all(set(label) <= {"*", "?"} for label in labels):
        return "a pattern of wildcards alone binds any host: name the domain (*.db.example.com)"
    if all(IP_LABEL.fullmatch(label) for label in labels) and len(labels) != 4:
        return (
            "an address pattern has four labels (10.20.*.*) or is a subnet (10.20.0.0/16); "
            "a wildcard matches within one label"
        )
    return ""


# ------------------------------------------------------------ identity


def same_target(planned: TargetSpec, stored: TargetSpec) -> bool:
    """True when a plan target is the stored target of its name: the same
    address (host, port or socket, connect_via included) and the same SSH
    login. A plan cannot borrow a stored name's grants, facts or bindings."""
    try:
        return (address(planned).key, planned.ssh) == (address(stored).key, stored.ssh)
    except ValidationError:
        return False
