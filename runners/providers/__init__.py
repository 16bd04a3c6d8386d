"""The one registry of providers: how targets and client hosts come to exist.

    handle = get_provider(spec["provider"]).provision(spec, ctx)
    ...
    get_provider(handle.provider).teardown(handle, ctx)

See base.py for Handle, ProvisionContext and the on_create/on_created
contract; reaper.py for the periodic clean-up; pricing.py for costs.
"""

from runners.providers import reaper
from runners.providers.aws_ec2 import AwsEc2Provider
from runners.providers.aws_rds import AwsRdsProvider
from runners.providers.base import Account, Handle, Provider, ProvisionContext
from runners.providers.local import LocalProvider
from runners.providers.static import StaticProvider

# Each sweep group's sweep(ctx, runs): what the reaper runs per account and region.
SWEEPS = {"aws": reaper.sweep}

PROVIDERS: dict[str, Provider] = {
    "static": StaticProvider(),
    "local": LocalProvider(),
    "aws_rds": AwsRdsProvider(),
    "aws_ec2": AwsEc2Provider(),
}

__all__ = [
    "PROVIDERS",
    "Account",
    "Handle",
    "Provider",
    "ProvisionContext",
    "get_provider",
    "primary_kinds",
    "counted_kinds",
    "sweepers",
    "sweep",
]


def sweepers() -> list[Provider]:
    """One provider per sweep group: what the reaper runs in each account and region."""
    groups: dict[str, Provider] = {}
    for provider in PROVIDERS.values():
        if provider.SWEEP_GROUP:
            groups.setdefault(provider.SWEEP_GROUP, provider)
    return list(groups.values())


def sweep(ctx: ProvisionContext, runs: set[str], group: str | None = None) -> list:
    """The sweep of one group (None: every group) in ctx's account and region:
    deletes what is tagged with one of runs, or expired; returns what was deleted."""
    groups = [group] if group else [p.SWEEP_GROUP for p in sweepers()]
    return [item for name in groups for item in SWEEPS[name](ctx, runs)]


def primary_kinds() -> tuple[str, ...]:
    """Every provider's kinds of CloudResource that carry a slot's handle."""
    return tuple(kind for p in PROVIDERS.values() for kind in p.PRIMARY_KINDS)


def counted_kinds() -> tuple[str, ...]:
    """Every provider's kinds of CloudResource counted against a team's quota."""
    return tuple(dict.fromkeys(kind for p in PROVIDERS.values() for kind in p.COUNTED_KINDS))


def get_provider(name: str) -> Provider:
    """The provider registered as name, or KeyError listing the known ones."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise KeyError(f"unknown provider {name!r}; known: {', '.join(PROVIDERS)}") from None
