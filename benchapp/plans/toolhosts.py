"""Which tools a plan or a frozen cell runs on the worker host, and whether a
registered worker host has them (benchapp.runs.workerpool places cells by
it; planning refuses a plan no host can run)."""

from __future__ import annotations

from dataclasses import asdict

from benchapp.models import WorkerHost

LOCAL_CLIENTS = ("local",)


def needed_tools(spec: dict) -> set[str]:
    """The tools a frozen cell (runners.frozen) runs on the worker host: its
    tool, when one of its clients is the worker itself (local, or on a
    target without SSH). Over SSH or on a provisioned client, none."""
    plan = spec.get("plan") or {}
    targets = {t["name"]: t for t in plan.get("targets", [])}
    own = (spec.get("cell") or {}).get("target", "")
    clients = [plan.get("client") or {}, *plan.get("more_clients", [])]
    return {plan["tool"]} if any(_on_worker(c, targets, own) for c in clients) else set()


def plan_needs_local(spec) -> bool:
    """Whether any cell of a validated plan (runners.plan.Plan) runs its tool
    on the worker host (any of its targets may be a cell's own)."""
    targets = {t.name: asdict(t) for t in spec.targets}
    clients = [asdict(c) for c in spec.clients]
    return any(_on_worker(c, targets, own) for own in targets for c in clients)


def _on_worker(client: dict, targets: dict, own: str) -> bool:
    kind = client.get("kind", "local")
    if kind in LOCAL_CLIENTS:
        return True
    if kind != "on":
        return False
    name = own if client.get("target") in (None, "", "target") else client["target"]
    on = targets.get(name) or {}
    return not on.get("ssh") and not on.get("provision")


def refusal(spec) -> str | None:
    """Why no registered worker host can run plan `spec` (None: one can, its
    tool does not run on the worker, or no host is registered yet)."""
    if not plan_needs_local(spec):
        return None
    hosts = list(WorkerHost.objects.values_list("hostname", "tools"))
    if not hosts or any(spec.tool in tools for _, tools in hosts):
        return None
    names = ", ".join(sorted(name for name, _ in hosts))
    return f"no worker host has {spec.tool} (hosts: {names}); install it on one, or run it over SSH"
