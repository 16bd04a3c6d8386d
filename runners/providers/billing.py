"""What provisioned targets cost, summed over the providers' own price lines.

The estimate before a run (estimate: every spec up for the run's hours) and
the actual cost after (actual: every resource over its lifetime). Each spec
is priced by its provider (Provider.price_lines), each resource by the
provider of its kind (Provider.resource_lines); a spec without a provider
(a static target) costs its price_per_hour. Pure: no Django, no cloud call.
"""

from __future__ import annotations

from datetime import datetime

from runners.providers import default_prices, get_provider, pricer_of
from runners.providers.pricing import Cost, CostLine, flat_lines, lifetime_hours


def spec_lines(spec: dict, hours: float, prices: dict) -> list[CostLine]:
    """The cost lines of one provision spec over hours, by its provider."""
    provider = spec.get("provider")
    if provider:
        return get_provider(provider).price_lines(spec, hours, prices)
    return flat_lines(spec, hours)


def estimate(plan_targets: list[dict], hours: float, prices: dict | None = None) -> Cost:
    """The cost of keeping every spec (targets and client) up for hours.

    plan_targets: provision specs with `provider`, axes already expanded.
    Raises ValidationError naming a class or type missing from the table.
    """
    prices = prices or default_prices()
    cost = Cost()
    for spec in plan_targets:
        for line in spec_lines(spec, hours, prices):
            cost.add(line)
    return cost


def actual(resources: list[dict], prices: dict | None = None, now: datetime | None = None) -> Cost:
    """The cost of resources from their lifetimes.

    resources: {"kind": a provider's PRICED kind (others cost nothing),
    "spec": {...}, "started": datetime, "ended": datetime | None, and what
    the kind's provider reads besides (e.g. "io_requests")}.
    """
    prices = prices or default_prices()
    cost = Cost()
    for resource in resources:
        provider = pricer_of(resource["kind"])
        if provider is None:
            continue
        hours = lifetime_hours(resource["started"], resource.get("ended"), now)
        for line in provider.resource_lines(resource, hours, prices):
            cost.add(line)
    return cost
