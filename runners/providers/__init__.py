"""The one registry of providers: how targets and client hosts come to exist.

    handle = get_provider(spec["provider"]).provision(spec, ctx)
    ...
    get_provider(handle.provider).teardown(handle, ctx)

See base.py for Handle, ProvisionContext and the on_create/on_created
contract; reaper.py for the periodic clean-up; pricing.py for costs.
"""

from runners.providers.aws_ec2 import AwsEc2Provider
from runners.providers.aws_rds import AwsRdsProvider
from runners.providers.base import Handle, Provider, ProvisionContext
from runners.providers.local import LocalProvider
from runners.providers.static import StaticProvider

PROVIDERS: dict[str, Provider] = {
    "static": StaticProvider(),
    "local": LocalProvider(),
    "aws_rds": AwsRdsProvider(),
    "aws_ec2": AwsEc2Provider(),
}

__all__ = ["PROVIDERS", "Handle", "Provider", "ProvisionContext", "get_provider"]


def get_provider(name: str) -> Provider:
    """The provider registered as name, or KeyError listing the known ones."""
    try:
        return PROVIDERS[name]
    except KeyError:
        raise KeyError(f"unknown provider {name!r}; known: {', '.join(PROVIDERS)}") from None
