"""Slot planning: what a plan needs provisioned (pure; no Django).

A slot is one thing to provision: a target (one per variant when its spec
uses ${axis} placeholders, e.g. S3's volumes count) or the client.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from runners.plan import Plan, expand, substitute
from runners.providers import get_provider

CLIENT = "@client"  # target_name of the client's rows (not a valid target name)
PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class Slot:
    """variant: "" or "volumes=2" (the axis values substituted); spec: the
    provider's spec after substitution, with name and region filled in."""

    target: str
    variant: str
    spec: dict = field(hash=False, compare=False)

    @property
    def role(self) -> str:
        return "client" if self.target == CLIENT else "target"

    @property
    def region(self) -> str:
        return self.spec["region"]

    @property
    def label(self) -> str:
        """The target name, with the variant when there are several."""
        return f"{self.target} {self.variant}".strip()

    def to_dict(self) -> dict:
        return {"target": self.target, "variant": self.variant, "spec": self.spec}


def needs_provisioning(plan: Plan) -> bool:
    """True when a target or the client of the plan must be provisioned first."""
    return any(t.provision for t in plan.targets) or plan.provisioned_client is not None


def cloud_specs(plan: Plan) -> list[tuple[str, dict]]:
    """(key path, spec) of every spec of the plan that talks to a cloud
    account: targets' provision and cloud_instance, the client's provision."""
    found = []
    for i, target in enumerate(plan.targets):
        for key in ("provision", "cloud_instance"):
            spec = getattr(target, key)
            if spec:
                found.append((f"targets[{i}].{key}", spec))
    for path, client in plan.client_paths():
        if client.provision:
            found.append((f"{path}.provision", client.provision))
    return found


def unnamed_accounts(plan: Plan) -> list[tuple[str, str]]:
    """(key path, credential field) of each cloud spec that names no credential
    of its provider's account (e.g. no aws_credential): with none, the only
    identity left is the worker's own."""
    missing = []
    for path, spec in cloud_specs(plan):
        field_name = get_provider(spec["provider"]).CREDENTIAL_FIELD
        if field_name and not spec.get(field_name):
            missing.append((path, field_name))
    return missing


def region_of(spec: dict, default_region: str) -> str:
    """The spec's region, else its availability zone's, else default_region."""
    zone = str(spec.get("availability_zone") or "")
    return spec.get("region") or (zone[:-1] if zone[-1:].isalpha() else "") or default_region


def variant_of(provision: dict, axes: dict) -> str:
    """ "volumes=2" for a spec using ${volumes} in a cell with volumes 2; "" if none."""
    names = sorted(set(PLACEHOLDER.findall(json.dumps(provision))))
    return ",".join(f"{name}={axes.get(name)}" for name in names)


def _slot_spec(provision: dict, name: str) -> dict:
    """The spec with the slot's name and its region (else the provider's default)."""
    spec = {**provision, "name": name}
    spec["region"] = region_of(spec, get_provider(spec["provider"]).default_region())
    return spec


def planned_slots(plan: Plan, cells: list | None = None) -> list[Slot]:
    """Every slot the plan needs, targets in plan order then the client
    (cells: the plan's expansion, when the caller has it)."""
    slots: dict[tuple[str, str], Slot] = {}
    provisioned = [t for t in plan.targets if t.provision]
    if not provisioned:
        cells = []
    elif cells is None:
        cells = expand(plan)
    for target in provisioned:
        for cell in (c for c in cells if c.target == target.name):
            variant = variant_of(target.provision, cell.axes)
            if (target.name, variant) not in slots:
                name = f"{target.name}-{variant.replace('=', '')}" if variant else target.name
                spec = _slot_spec(substitute(target.provision, cell), name)
                slots[target.name, variant] = Slot(target.name, variant, spec)
    if (client := plan.provisioned_client) is not None:
        slots[CLIENT, ""] = Slot(CLIENT, "", _slot_spec(client.provision, "client"))
    return list(slots.values())


def counted_resources(slot: Slot) -> int:
    """The resources the slot's provider creates that the team's quota counts."""
    return get_provider(slot.spec["provider"]).counted_resources(slot.spec)
