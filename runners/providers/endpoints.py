"""From a stored provisioning handle to where the tool connects (pure; no Django).

A handle (Handle.to_dict() plus the slot it was made for) says what the
cloud made; the slot's connect_via may point the tool elsewhere (a tunnel,
a private address, this worker in tests). Nothing ever connects to an
address moto invents.
"""

from __future__ import annotations

from dataclasses import replace

from runners.plantargets import LOCAL_HOSTS, SSHSpec, TargetSpec


def pick(handles: list[dict], target: str, variant: str | None) -> dict | None:
    """The handle made for target (and variant; None: any)."""
    for handle in handles:
        slot = handle.get("slot") or {}
        if slot.get("target") == target and variant in (None, slot.get("variant")):
            return handle
    return None


def via_of(handle: dict) -> dict:
    """The slot's connect_via ({} without one)."""
    return (handle.get("slot") or {}).get("spec", {}).get("connect_via") or {}


def on_worker(handle: dict) -> bool:
    """A host reached through connect_via {host: loopback} (no ssh): this worker."""
    via = via_of(handle)
    return bool(via) and "ssh" not in via and via.get("host") in LOCAL_HOSTS


def ssh_of(handle: dict) -> SSHSpec | None:
    """Where to log in to the handle's host; None for this worker.

    connect_via {host} without ssh: the cloud's own SSH address is not used
    (private, or invented by moto); the via address is, unless it is loopback.
    """
    ssh, via = handle.get("ssh"), via_of(handle)
    if not ssh or on_worker(handle):
        return None
    host = via["host"] if via and "ssh" not in via and "host" in via else ssh["host"]
    return SSHSpec(
        host=host,
        port=ssh.get("port") or 22,
        user=ssh.get("user") or "root",
        credential=ssh.get("credential"),
        known_host_key=ssh.get("known_host_key"),
    )


def target_spec(target: TargetSpec, handle: dict) -> TargetSpec:
    """The plan's target with the provisioned address, login and credential."""
    endpoint = handle.get("endpoint") or {}
    via = via_of(handle)
    credential = (
        via.get("credential")
        if "host" in via
        else (handle.get("extra") or {}).get("password_secret")
    )
    return replace(
        target,
        host=endpoint.get("host"),
        port=endpoint.get("port") if target.kind != "host" else None,
        user=endpoint.get("user") or target.user,
        database=endpoint.get("database") or target.database,
        credential=credential,
        password_env=None,
        ssh=ssh_of(handle),
        provision=None,
        connect_via=None,
    )
