"""The one registry of providers: how targets and client hosts come to exist.

    handle = get_provider(spec["provider"]).provision(spec, ctx)
    ...
    get_provider(handle.provider).teardown(handle, ctx)

Each provider declares, besides provision/teardown, what benchapp needs to
know of it (base.Provider): its resource kinds, credential kind, price
tables and price lines, region setting and sweep. Everything below is
derived from those declarations; nothing outside a provider's module names
it. See base.py for the contract, pricing.py for the cost arithmetic.

Adding a provider: a module with a Provider subclass and one row below
(plus a migration when it brings a credential kind or price tables, which
are model choices).
"""

from runners.providers.aws_ec2 import AwsEc2Provider
from runners.providers.aws_rds import AwsRdsProvider
from runners.providers.base import Account, Handle, Provider, ProvisionContext
from runners.providers.local import LocalProvider
from runners.providers.static import StaticProvider
from runners.providers.static_cluster import StaticClusterProvider

PROVIDERS: dict[str, Provider] = {
    "static": StaticProvider(),
    "local": LocalProvider(),
    "aws_rds": AwsRdsProvider(),
    "aws_ec2": AwsEc2Provider(),
    "static_cluster": StaticClusterProvider(),
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
    "credential_kinds",
    "default_prices",
    "price_tables",
    "pricer_of",
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
    chosen = [p for p in sweepers() if group in (None, p.SWEEP_GROUP)]
    return [item for provider in chosen for item in provider.sweep(ctx, runs)]


def primary_kinds() -> tuple[str, ...]:
    """Every provider's kinds of CloudResource that carry a slot's handle."""
    return tuple(kind for p in PROVIDERS.values() for kind in p.PRIMARY_KINDS)


def counted_kinds() -> tuple[str, ...]:
    """Every provider's kinds of CloudResource counted against a team's quota."""
    return tuple(dict.fromkeys(kind for p in PROVIDERS.values() for kind in p.COUNTED_KINDS))


def credential_kinds() -> list[tuple[str, str]]:
    """(kind, label) of every provider's account credential, once each, in registry order."""
    kinds = {p.CREDENTIAL_KIND: p.CREDENTIAL_LABEL for p in PROVIDERS.values() if p.CREDENTIAL_KIND}
    return list(kinds.items())


def price_tables() -> list[tuple[str, str]]:
    """(table, label) of every provider's price tables, in registry order."""
    return [(name, t.label) for p in PROVIDERS.values() for name, t in p.PRICE_TABLES.items()]


def default_prices() -> dict[str, dict[str, float]]:
    """{table: {key: price}}: every provider's illustrative default prices (a fresh copy)."""
    return {
        name: dict(table.defaults)
        for p in PROVIDERS.values()
        for name, table in p.PRICE_TABLES.items()
    }


def pricer_of(kind: str) -> Provider | None:
    """The provider that prices CloudResources of kind, or None (they cost nothing)."""
    return next((p for p in PROVIDERS.values() if kind in p.PRICED_KINDS), None)


def get_provider(name: str) -> Provider:
    """The provider registered as name, or KeyError listing the known ones."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise KeyError(f"unknown provider {name!r}; known: {', '.join(PROVIDERS)}") from None
