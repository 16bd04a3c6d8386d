"""Whose cloud account a provisioning call uses (docs/trust-model.md): the team
Credential a provision spec names (its provider's CREDENTIAL_FIELD), checked
again before any cloud call; the worker's own identity only for an operator's
plan file with BENCHBOARD_CLI_CLOUD_IDENTITY on, or to delete what that
identity made. Provisioning, teardown, the reaper and cloud telemetry build
their ProvisionContext here.
"""

from __future__ import annotations

from django.conf import settings
from django.utils import timezone

from benchapp.models import Credential, Run
from runners.errors import RunnerError
from runners.providers import Account, ProvisionContext, get_provider


def credential_named(spec: dict) -> str | None:
    """The name of the team Credential a provision spec asks for (the
    provider's CREDENTIAL_FIELD, e.g. aws_credential), or None."""
    field = get_provider(spec["provider"]).CREDENTIAL_FIELD
    return spec.get(field) if field else None


def ambient_allowed(run: Run | None) -> bool:
    """Whether run may use the worker's own cloud identity: an operator's plan
    file (origin cli) with BENCHBOARD_CLI_CLOUD_IDENTITY on, nothing else."""
    return bool(run and run.origin == "cli" and settings.BENCHBOARD_CLI_CLOUD_IDENTITY)


def team_account(team_id: int, provider: str, credential: str | None, ambient: bool) -> Account:
    """The team's keys for provider's cloud from the named Credential. With
    none named: the worker's own identity when ambient (an allowed operator
    plan, or deleting what that identity made), else RunnerError (permanent):
    the save-time check is made again here, before any cloud call."""
    meta = get_provider(provider)
    if not credential:
        if not meta.CREDENTIAL_FIELD:
            return Account()  # a provider without an account (static hosts)
        if ambient:
            return Account(ambient=True)
        raise RunnerError(
            f"name an {meta.CREDENTIAL_FIELD} (a team credential of this cloud's account): "
            "a plan from the web, the API or a schedule never uses the worker's own",
            permanent=True,
        )
    cred = Credential.objects.filter(
        team_id=team_id, name=credential, kind=meta.CREDENTIAL_KIND
    ).first()
    if cred is None:
        raise RunnerError(
            f"{meta.CREDENTIAL_FIELD} {credential!r}: no "
            f"{meta.CREDENTIAL_KIND.upper()} credential of that name in this team",
            permanent=True,
        )
    return Account(key_id=cred.username, secret=cred.secret())


def provision_context(
    team_id: int,
    tag: str,
    region: str,
    provider: str,
    credential: str | None,
    *,
    ambient: bool = False,
    **kw,
):
    """A ProvisionContext with the team's account for provider (team_account) and
    the configured waits."""
    fields = {
        "run_id": tag,
        "team": "",
        "owner": "",
        "expires_at": timezone.now(),
        "region": region,
        "account": team_account(team_id, provider, credential, ambient),
        "worker_cidr": settings.BENCHBOARD_WORKER_CIDR,
        "wait_timeout": settings.BENCHBOARD_CLOUD_WAIT_SECONDS,
        "poll_interval": settings.BENCHBOARD_CLOUD_POLL_SECONDS,
    }
    fields.update(kw)
    return ProvisionContext(**fields)


def stored_credential(handle: dict) -> str | None:
    """The credential name a stored handle was made with ("aws_credential": rows
    written before providers declared their credential field)."""
    return handle.get("credential", handle.get("aws_credential"))
