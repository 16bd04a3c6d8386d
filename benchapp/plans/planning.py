"""Plan documents: validation, stored targets, saving (below the run lifecycle)."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import yaml
from django.conf import settings

from benchapp.accounts import credbinding
from benchapp.accounts.targetguard import check_plan
from benchapp.models import Plan, Team
from benchapp.models_history import PlanRevision
from benchapp.plans import toolhosts
from benchapp.plans.estimates import Duration, plan_duration
from runners import safeyaml
from runners.errors import ValidationError
from runners.limits import Limits
from runners.plan import CellSpec, count_cells, expand, load_plan
from runners.plan import Plan as PlanSpec
from runners.planlimits import check_plan_limits
from runners.planread import raw_cell_count
from runners.providers.slots import unnamed_accounts


class PlanRefused(ValidationError):
    """A plan that is valid but may not run (cell limit, quota, budget)."""


@dataclass
class CheckedPlan:
    """A plan document read, every combination expanded and validated once
    (`check`), and what its consumers read off it: the form, the live
    preview, save, the four ways to start a run and the budget check take
    this object and never read the document again.

    findings: the pre-run checks' (benchapp.plans.prerun), none of them a
    refusal; cost: benchapp.cloud.pricing.plan_cost's, worked out once when
    first asked for (pricing sits above this floor)."""

    spec: PlanSpec
    cells: list[CellSpec]
    findings: list = field(default_factory=list)
    cost: dict | None = None

    @property
    def document(self) -> dict:
        return self.spec.document

    @property
    def warnings(self) -> list[str]:
        """The findings as the builder and the API show them."""
        return [str(f) for f in self.findings]

    @cached_property
    def duration(self) -> Duration:
        """The one duration estimate (benchapp.plans.estimates) of these cells."""
        return plan_duration(self.spec, self.cells)


def check(
    document: dict | str,
    team: Team | None = None,
    *,
    trusted: bool = False,
    prerun: bool | None = None,
) -> CheckedPlan:
    """The one check of a plan document: read it (stored targets resolved
    for team), validate and expand every combination once, refuse a plan
    over the cell limit, the sandbox's limits or the trust rules, then run
    the pre-run checks (benchapp.plans.prerun) of a plan from the web, the
    API or a schedule: a refusal among them raises PlanRefused with its
    message, the rest are carried as findings.

    trusted: an operator's plan file (manage.py runplan), whose targets may
    use the team's credentials anywhere, as the operator may, and which the
    pre-run checks do not apply to. prerun: False to skip them (reading a
    plan, not saving or starting it); by default they apply to every
    untrusted plan of a team. Raises ValidationError naming the key.
    """
    spec = _validated(document, team, trusted)
    cells = expand(spec)
    # Tools on the worker host within the operator's limits (docs/sandbox.md).
    check_plan_limits(spec, sandbox_limits(), cells)
    _check_some_host_runs(spec)
    if prerun is None:
        prerun = team is not None and not trusted
    found = _prerun_findings(spec, team, cells) if prerun else []
    return CheckedPlan(spec, cells, found)


def _prerun_findings(spec: PlanSpec, team: Team, cells: list[CellSpec]) -> list:
    from benchapp.plans import prerun

    found = prerun.findings(spec, team, stored_targets(spec, team), cells)
    for finding in found:
        if finding.refuse:
            raise PlanRefused(finding.path, finding.message)
    return found


def validate_document(
    document: dict | str, team: Team | None = None, *, trusted: bool = False
) -> PlanSpec:
    """`check` without the pre-run checks, for callers that read a plan
    (a template, a target's rules): its spec."""
    return check(document, team, trusted=trusted, prerun=False).spec


def _validated(document: dict | str, team: Team | None, trusted: bool) -> PlanSpec:
    """Parse and check a plan document; refuse plans over the cell limit.

    Targets written as a bare name ({name: X} or "X") are filled in from the
    team's stored Target of that name, so the web form and API can refer to
    stored targets.
    """
    document = _parsed(document)
    if team is not None:
        # Resolve before validating: a bare {name: X} is not a valid target on its own.
        document = resolve_stored_targets(document, team)
    # Counted on the raw axes first: a plan of 40,000 values is refused before
    # each value is typed and checked.
    _check_cell_limit(raw_cell_count(document))
    spec = load_plan(document)
    check_plan(spec)  # never the app's own services (docs/trust-model.md)
    if team is not None and not trusted:
        credbinding.check_plan(spec, team)  # stored secrets only where they are bound
    check_cloud_identity(spec, trusted=trusted)
    _check_cell_limit(count_cells(spec))
    return spec


def check_cloud_identity(spec: PlanSpec, *, trusted: bool) -> None:
    """Refuse a plan whose provisioning or cloud_instance names no team
    credential of its cloud (aws_credential): the worker's own identity
    (environment, config files, instance role) never serves a plan from the
    web, the API or a schedule; an operator's plan file (trusted) may use it
    when BENCHBOARD_CLI_CLOUD_IDENTITY is on (docs/trust-model.md)."""
    if trusted and settings.BENCHBOARD_CLI_CLOUD_IDENTITY:
        return
    for path, field_name in unnamed_accounts(spec)[:1]:
        where = (
            "an operator's plan file may use the worker's own only with "
            "BENCHBOARD_CLI_CLOUD_IDENTITY=true"
            if trusted
            else "a plan from the web, the API or a schedule never uses the worker's own"
        )
        raise PlanRefused(
            path, f"name an {field_name} (a team credential of this cloud's account): {where}"
        )


def _check_some_host_runs(spec: PlanSpec) -> None:
    """A plan whose tool runs on the worker host needs a registered host
    that has it (once any host is registered: docs/operations.md)."""
    reason = toolhosts.refusal(spec)
    if reason:
        raise PlanRefused("tool", reason)


def _check_cell_limit(cells: int) -> None:
    limit = settings.BENCHBOARD_CELL_LIMIT
    if cells > limit:
        raise PlanRefused(
            "axes",
            f"this plan has {cells} cells; the limit is {limit} "
            "(BENCHBOARD_CELL_LIMIT). Remove axis values or split the plan.",
        )


def sandbox_limits() -> Limits:
    """The operator's limits for one cell's local processes on the worker
    (BENCHBOARD_SANDBOX_*), and the host's bound on such cells at once."""
    return Limits(
        cpus=settings.BENCHBOARD_SANDBOX_CPUS,
        memory_mb=settings.BENCHBOARD_SANDBOX_MEMORY_MB,
        pids=settings.BENCHBOARD_SANDBOX_PIDS,
        scratch_mb=settings.BENCHBOARD_SANDBOX_SCRATCH_MB,
        seconds=settings.BENCHBOARD_SANDBOX_SECONDS,
        host_cells=settings.BENCHBOARD_SANDBOX_MAX_CELLS,
        slots_dir=str(settings.VAR_DIR / "sandbox-slots"),
    )


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
    for key in ("host", "port", "user", "database", "via"):
        value = getattr(target, key)
        if value:
            doc[key] = value
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
    if not target.telemetry:
        doc["telemetry"] = False
    if target.link_mbit:
        doc["link_mbit"] = target.link_mbit
    if target.cloud_instance:
        doc["cloud_instance"] = target.cloud_instance
    return doc


def check_untrusted(document: dict | str, team: Team) -> tuple[PlanSpec, list[str]]:
    """`check` of a plan from the web or the API: (spec, warnings)."""
    checked = check(document, team)
    return checked.spec, checked.warnings


def stored_targets(spec: PlanSpec, team: Team) -> dict:
    """The team's stored Targets that are the plan's targets of that name
    (runners.endpoint.same_target, as on the worker): a plan cannot borrow a
    name's grants or facts."""
    from runners.endpoint import same_target
    from runners.plantargets import read_target

    rows = team.targets.filter(name__in=[t.name for t in spec.targets])
    mine = {}
    for target in rows.select_related("credential", "ssh_credential"):
        same = read_target(target_document(target), "target", spec.tool)
        if same_target(spec.target(target.name), same):
            mine[target.name] = target
    return mine


def save_plan(
    team: Team, document: dict | str | CheckedPlan, user=None, plan: Plan | None = None
) -> Plan:
    """Store a plan document (new, or replacing `plan`'s), checked by `check`
    unless given as its CheckedPlan (a form that checked it). The returned
    plan's `warnings` lists what the checks found likely to fail (not stored)."""
    checked = document if isinstance(document, CheckedPlan) else check(document, team)
    spec = checked.spec
    plan = plan or Plan(team=team, created_by=user)
    changed = plan.pk is None or plan.document != spec.document
    plan.name, plan.tool, plan.document = spec.name, spec.tool, spec.document
    plan.save()
    if changed:  # who edited the plan and when: the trend's plan-edit markers
        PlanRevision.objects.create(plan=plan, document=spec.document, created_by=user)
    plan.warnings = checked.warnings
    return plan
