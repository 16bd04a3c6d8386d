"""Plan documents: validation, stored targets, saving (below the run lifecycle)."""

from __future__ import annotations

import yaml
from django.conf import settings

from benchapp.models import Plan, Team
from benchapp.models_history import PlanRevision
from benchapp.targetguard import check_plan
from runners import safeyaml
from runners.errors import ValidationError
from runners.plan import Plan as PlanSpec
from runners.plan import count_cells, load_plan


class PlanRefused(ValidationError):
    """A plan that is valid but may not run (cell limit, quota, budget)."""


def validate_document(document: dict | str, team: Team | None = None) -> PlanSpec:
    """Parse and check a plan document; refuse plans over the cell limit.

    Targets written as a bare name ({name: X} or "X") are filled in from the
    team's stored Target of that name, so the web form and API can refer to
    stored targets. Raises ValidationError with a message naming the key.
    """
    if team is not None:
        # Resolve before validating: a bare {name: X} is not a valid target on its own.
        document = resolve_stored_targets(_parsed(document), team)
    spec = load_plan(document)
    check_plan(spec)  # never the app's own services (docs/trust-model.md)
    cells = count_cells(spec)
    limit = settings.BENCHBOARD_CELL_LIMIT
    if cells > limit:
        raise PlanRefused(
            "axes",
            f"this plan has {cells} cells; the limit is {limit} "
            "(BENCHBOARD_CELL_LIMIT). Remove axis values or split the plan.",
        )
    return spec


def _parsed(document):
    """A YAML/JSON text as data (left as is when unparseable: load_plan reports it)."""
    if not isinstance(document, (str, bytes)):
        return document
    try:
        return safeyaml.load(document)
    except yaml.YAMLError:
        return document


def resolve_stored_targets(document: dict, team: Team) -> dict:
    """Replace target entries that name a stored Target by its plan form."""
    if not isinstance(document, dict) or not isinstance(document.get("targets"), list):
        return document
    stored = {t.name: t for t in team.targets.select_related("credential", "ssh_credential")}
    targets = []
    for entry in document.get("targets") or []:
        if not isinstance(entry, (str, dict)):
            targets.append(entry)  # load_plan names the problem
            continue
        name = entry if isinstance(entry, str) else entry.get("name")
        bare = isinstance(entry, str) or set(entry) == {"name"}
        if bare and name in stored:
            targets.append(target_document(stored[name]))
        else:
            targets.append(entry)
    return {**document, "targets": targets}


def target_document(target) -> dict:
    """A stored Target as a plan `targets` entry (secrets by credential name only)."""
    doc = {"name": target.name, "kind": target.kind}
    for field in ("host", "port", "user", "database", "via"):
        value = getattr(target, field)
        if value:
            doc[field] = value
    if target.credential:
        doc["credential"] = target.credential.name
    if target.nodes:
        doc["nodes"] = target.nodes
    if target.ssh_host:
        ssh = {"host": target.ssh_host, "port": target.ssh_port, "user": target.ssh_user or "root"}
        if target.ssh_credential:
            ssh["credential"] = target.ssh_credential.name
        if target.known_host_key:
            ssh["known_host_key"] = target.known_host_key
        doc["ssh"] = ssh
    if target.provision:
        doc["provision"] = target.provision
    if target.price_per_hour is not None:
        doc["price_per_hour"] = float(target.price_per_hour)
    return doc


def save_plan(team: Team, document: dict | str, user=None, plan: Plan | None = None) -> Plan:
    """Validate and store a plan document (new, or replacing `plan`'s)."""
    spec = validate_document(document, team)
    plan = plan or Plan(team=team, created_by=user)
    changed = plan.pk is None or plan.document != spec.document
    plan.name, plan.tool, plan.document = spec.name, spec.tool, spec.document
    plan.save()
    if changed:  # who edited the plan and when: the trend's plan-edit markers
        PlanRevision.objects.create(plan=plan, document=spec.document, created_by=user)
    return plan
