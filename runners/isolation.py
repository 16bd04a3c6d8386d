"""Which machines a cell loads, so that cells sharing one never overlap.

A figure changes with the load of every machine it passes through: the
database server behind the target, the host of a host/filesystem target, and
the client host the tool runs on. `cell_machines` names them, from a frozen
cell's plan part (runners.frozen), as (key, label) pairs; two cells whose
keys meet must not run at the same moment (benchapp.runs.machines takes the
locks). The identity of a machine:

- a database server: its resolved address and port ("server 10.0.0.5:3306");
  several targets (databases, users) on one server share it. A Unix socket
  is a server on the worker host ("server HOST:/path/to.sock").
- a host reached over SSH (a host target, an SSH client, `client: {on: T}`):
  its resolved address and SSH port ("host 10.0.0.7:22"); the port keeps
  apart hosts published on one address (containers, port forwards).
- the worker host (local tools, a local host target): its host name
  ("host bench-worker-1").
- a machine a provider names rather than makes (`static`, `static_cluster`,
  `local`) is the machine it is: each listed host, its balancer (`via`) and
  its SSH host lock exactly as a target naming them would ("server
  10.0.0.5:3306"), so a lab cluster host that is another team's server waits
  for that server's lock;
- a machine a cloud provider makes for a run exists only for that run
  ("provisioned run 12 db").

Loopback names (localhost, ::1, 127.x) are one address, 127.0.0.1: on the
worker host they are the same server. Nothing here imports Django.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable

from runners.engines import DEFAULT_PORTS, ENGINES
from runners.providers import PROVIDERS

ISOLATIONS = ("machine", "run", "target")
CELL_TARGET = "target"
LOCAL = "local"  # the provider whose machine is the worker host itself  # client: {on: target}: each cell's own target

Machine = tuple[str, str]  # (key, label)

_RESOLVED: dict[str, tuple[float, str]] = {}
RESOLVE_TTL_S = 60.0


def resolve(host: str) -> str:
    """The address a host name resolves to (IPv4 first; cached a minute);
    the lower-cased name when it does not resolve, so a name that fails
    still locks itself."""
    name = host.strip().lower().strip("[]")
    cached = _RESOLVED.get(name)
    if cached and time.monotonic() - cached[0] < RESOLVE_TTL_S:
        return cached[1]
    try:
        infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
        addresses = sorted({info[4][0] for info in infos}, key=lambda a: (":" in a, a))
        address = addresses[0] if addresses else name
    except (OSError, UnicodeError):
        address = name
    address = _canonical(address)
    _RESOLVED[name] = (time.monotonic(), address)
    return address


def _canonical(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    return "127.0.0.1" if ip.is_loopback or ip.is_unspecified else str(ip)


def cell_machines(
    plan: dict,
    target_name: str,
    *,
    run_id: int,
    worker_host: str,
    resolver: Callable[[str], str] = resolve,
) -> list[Machine]:
    """The machines one cell of a frozen plan loads, without repeats, in a
    stable order (server, target host, client)."""
    targets = {t["name"]: t for t in plan["targets"]}
    target = targets[target_name]
    found = [*_target_machines(target, run_id, worker_host, resolver)]
    for client in [plan["client"], *plan.get("more_clients", [])]:
        found += _client_machines(client, target, targets, run_id, worker_host, resolver)
    unique: dict[str, str] = {}
    for key, label in found:
        unique.setdefault(key, label)
    return list(unique.items())


def _target_machines(target: dict, run_id, worker_host, resolver) -> list[Machine]:
    if target.get("provision"):
        return _provisioned(target, target["provision"], run_id, worker_host, resolver)
    if target["kind"] in ENGINES:  # a database server
        # The SSH host of a database target is its server's machine too
        # (a host target's fio on it, host facts, snapshots).
        host = [_ssh_host(target["ssh"], resolver)] if target.get("ssh") else []
        if target.get("host"):
            address = f"{resolver(target['host'])}:{target.get('port') or ''}"
            return [(f"server {address}", f"machine {address}"), *host]
        where = f"{worker_host}:{target.get('socket') or ''}"
        return [(f"server {where}", f"machine {where}"), *host]
    return [_host_of(target, worker_host, resolver)]


def _provisioned(target: dict, spec: dict, run_id, worker_host, resolver) -> list[Machine]:
    """The machines of a provisioned target or client: those a named
    provider lists, each as a plain target naming it would lock; a cloud
    machine is its run's own."""
    if not _names_machines(spec):
        key = f"provisioned run {run_id} {target['name']}"
        return [(key, f"machine {target['name']} provisioned for run {run_id}")]
    kind = spec.get("kind") or target.get("kind") or "host"
    ssh = spec.get("ssh") if isinstance(spec.get("ssh"), dict) else None
    if spec.get("provider") == LOCAL:
        hosts = [{"host": "127.0.0.1", "port": spec.get("port"), "socket": spec.get("socket")}]
    else:
        hosts = [spec, *(spec.get("nodes") or []), *(spec.get("hosts") or [])]
        if isinstance(spec.get("via"), dict):
            hosts.append(spec["via"])
    found: list[Machine] = []
    for node in hosts:
        if not isinstance(node, dict) or not (node.get("host") or node.get("socket")):
            continue
        one = {
            "name": target["name"],
            "kind": kind,
            "host": node.get("host"),
            "port": node.get("port") or DEFAULT_PORTS.get(kind),
            "socket": node.get("socket"),
            # One login for every host of a cluster: each host on the SSH port.
            "ssh": {**ssh, "host": ssh.get("host") or node.get("host")} if ssh else None,
        }
        found += _target_machines(one, run_id, worker_host, resolver)
    return found


def _names_machines(spec: dict) -> bool:
    provider = PROVIDERS.get(spec.get("provider"))
    return provider is not None and provider.NAMES_MACHINES


def _host_of(target: dict, worker_host: str, resolver) -> Machine:
    """The machine of a host target: its SSH host, or the worker host."""
    ssh = target.get("ssh")
    if ssh:
        return _ssh_host(ssh, resolver)
    host = target.get("host")
    if host and resolver(host) != "127.0.0.1":
        address = resolver(host)
        return (f"host {address}", f"machine {address}")
    return _worker(worker_host)


def _ssh_host(ssh: dict, resolver) -> Machine:
    address = f"{resolver(ssh['host'])}:{ssh.get('port') or 22}"
    return (f"host {address}", f"machine {address}")


def _worker(worker_host: str) -> Machine:
    return (f"host {worker_host}", f"worker host {worker_host}")


def _client_machines(client: dict, target: dict, targets, run_id, worker_host, resolver):
    kind = client.get("kind", "local")
    if kind == "ssh" and client.get("ssh"):
        return [_ssh_host(client["ssh"], resolver)]
    if kind == "on":
        on = target if client.get("target") == CELL_TARGET else targets[client["target"]]
        if on.get("provision"):
            return _target_machines(on, run_id, worker_host, resolver)
        return [_host_of(on, worker_host, resolver)]
    if kind == "provision":
        spec = client.get("provision") or {}
        if _names_machines(spec):
            named = {"name": "client", "kind": "host"}
            return _provisioned(named, spec, run_id, worker_host, resolver)
        return [(f"provisioned run {run_id} client", f"client provisioned for run {run_id}")]
    return [_worker(worker_host)]
