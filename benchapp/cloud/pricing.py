"""Cost: the estimate shown before a run, the actual cost after, price-performance.

The arithmetic is runners.providers.pricing's (pure functions over a price
table; each provider prices its own specs and resources); this module
supplies the table (PriceEntry rows over the providers' illustrative
default prices, so a deleted row falls back to its default),
the run's expected length, and the run's resources and figures.

Billing is approximated the way the scenarios' studies were billed: every
provisioned item is up for the whole run, rounded up to whole hours.
"""

from __future__ import annotations

import math
from collections import defaultdict
from decimal import Decimal
from statistics import mean

from benchapp.models import Cell, CloudResource, PriceEntry, Run, Team
from benchapp.plans.estimates import plan_duration
from benchapp.plans.planning import CheckedPlan, check
from benchapp.store import measurestore
from runners.metrics import HIGHER
from runners.plan import Plan as PlanSpec
from runners.providers import billing, default_prices, pricer_of, primary_kinds
from runners.providers import pricing as cost
from runners.providers.slots import CLIENT, Slot, counted_resources, planned_slots, variant_of
from runners.tools import TOOLS, direction

CURRENCY = "USD"


def throughput_metrics(tool: str) -> list[str]:
    """Figures that grow with the money's worth (the metric catalog's
    higher-is-better throughputs): divided by the target's $/h."""
    module = TOOLS.get(tool.replace("-", "_"))
    catalog = getattr(module, "METRICS", {}) if module else {}
    return [
        name
        for name, m in catalog.items()
        if m.kind == "throughput" and direction(tool, name) == HIGHER
    ]


NOTE = cost.NOTE + " Every provisioned item is counted for the whole run, in whole hours."


def price_table() -> dict[str, dict[str, float]]:
    """The providers' default prices with the edited PriceEntry rows on top."""
    table = default_prices()
    for entry in PriceEntry.objects.all():
        table.setdefault(entry.table, {})[entry.key] = float(entry.price)
    return table


def run_seconds(plan: PlanSpec, cells=None) -> float:
    """Billed length of a run (benchapp.plans.estimates): its cells one after the
    other, plus provisioning — an upper bound, so budgets are not overrun."""
    return plan_duration(plan, cells).serial_s


def run_hours(plan: PlanSpec, cells=None) -> float:
    """Billed hours: the expected length rounded up to whole hours (at least 1)."""
    return float(max(1, math.ceil(run_seconds(plan, cells) / 3600)))


def static_spec(target) -> dict | None:
    """A priced static target as a spec runners' pricing understands, or None."""
    hourly = target.price_per_hour
    if hourly is None and target.price_per_month is not None:
        hourly = target.price_per_month / cost.HOURS_PER_MONTH
    if not hourly or target.currency != CURRENCY:
        return None
    return {"name": target.name, "price_per_hour": hourly}


def estimate_plan(
    plan: PlanSpec, prices: dict | None = None, hours: float | None = None, cells=None
) -> dict:
    """The cost of a validated plan: dict(total, currency, lines, note, hours, resources).

    The one cost formula of the builder's preview, the budget check and the
    results page: every priced item (each provisioned slot, each static
    target with a USD price) for `hours` billed hours; None: the plan's
    expected run_hours (before a run), a finished run passes its own.
    cells: the plan's expansion, when the caller has it (planning.check's).
    Raises runners ValidationError naming a class or type missing from the table.
    """
    prices = prices or price_table()
    hours = run_hours(plan, cells) if hours is None else hours
    slots = planned_slots(plan, cells)
    labelled = [(slot.label, slot.spec) for slot in slots]
    labelled += [
        (t.name, spec) for t in plan.targets if not t.provision for spec in [static_spec(t)] if spec
    ]
    total = billing.estimate([spec for _, spec in labelled], hours, prices).total
    lines = [
        dict(vars(line), target=label)
        for label, spec in labelled
        for line in billing.spec_lines(spec, hours, prices)
    ]
    return {
        "total": total,
        "currency": CURRENCY,
        "lines": lines,
        "note": NOTE,
        "hours": hours,
        "resources": sum(counted_resources(s) for s in slots),
    }


def estimate_run(team: Team, document: dict | str) -> dict:
    """The cost shown before a run starts: dict(total, currency, lines, note, hours, resources).

    document: a plan document (stored targets resolved for team). Raises
    runners ValidationError for a bad plan or an unpriced class.
    """
    checked = check(document, team, prerun=False)
    return plan_cost(checked)


def plan_cost(checked: CheckedPlan) -> dict:
    """estimate_plan of a checked plan, worked out once and carried on it
    (CheckedPlan.cost): the builder's preview and the budget check read the same."""
    if checked.cost is None:
        checked.cost = estimate_plan(checked.spec, cells=checked.cells)
    return checked.cost


def hourly_price(kind: str, spec: dict | None) -> Decimal | None:
    """$/h of one CloudResource (an instance, a volume, a leased host), or None."""
    if pricer_of(kind) is None or not spec:
        return None
    resource = {"kind": kind, "spec": spec, "started": _EPOCH, "ended": _EPOCH_PLUS_HOUR}
    try:
        total = billing.actual([resource], price_table()).total
    except Exception:  # noqa: BLE001 - an unpriced item has no hourly price
        return None
    return Decimal(str(round(total, 4)))


def _epochs():
    from datetime import UTC, datetime, timedelta

    start = datetime(2000, 1, 1, tzinfo=UTC)
    return start, start + timedelta(hours=1)


_EPOCH, _EPOCH_PLUS_HOUR = _epochs()


def actual_cost(run: Run) -> dict:
    """What the run's resources cost from their lifetimes (still-live ones up to now):
    dict(total, currency, lines, note)."""
    rows = CloudResource.objects.filter(run=run)
    resources = [
        {
            "kind": row.kind,
            "spec": row.handle.get("spec") or {},
            "started": row.created_at,
            "ended": row.deleted_at,
        }
        for row in rows
    ]
    result = billing.actual([r for r in resources if r["spec"]], price_table()).to_dict()
    return {**result, "currency": CURRENCY, "note": cost.NOTE}


def target_prices(run: Run) -> dict[str, float]:
    """$/h of each target of the run (label -> price): provisioned slots from the
    price table, static targets from their price_per_hour / price_per_month."""
    prices = price_table()
    result = {}
    for row in CloudResource.objects.filter(run=run, kind__in=primary_kinds()):
        slot = row.handle.get("slot")
        if slot and slot["target"] != CLIENT:
            label = Slot(slot["target"], slot["variant"], slot["spec"]).label
            result[label] = billing.estimate([slot["spec"]], 1.0, prices).total
    for target in run.spec.targets:
        spec = None if target.provision else static_spec(target)
        if spec:
            result[target.name] = float(spec["price_per_hour"])
    return result


def price_performance(run: Run) -> dict[str, dict[str, float]]:
    """Throughput per dollar-hour of each target: {label: {"tps_per_dollar_hour": ...,
    "dollars_per_hour": ...}}. The mean over the target's succeeded cells is
    divided by the target's own $/h (the client is not counted: it is the
    same for every target). Targets provisioned per `${volumes}` value are
    labelled "c1-medium volumes=2"."""
    prices = target_prices(run)
    provision = {t.name: t.provision for t in run.spec.targets}
    values = defaultdict(list)
    succeeded = run.cells.filter(status=Cell.SUCCEEDED).values_list("pk", "target_name", "axes")
    cells = {pk: (target, axes) for pk, target, axes in succeeded}
    rows = measurestore.read(runs=[run.pk], metrics=throughput_metrics(run.tool), group="")
    for m in rows:
        if m.cell_id not in cells:
            continue
        (target, axes), metric, value = cells[m.cell_id], m.metric, m.value
        variant = variant_of(provision[target], axes) if provision.get(target) else ""
        values[f"{target} {variant}".strip(), metric].append(value)
    result: dict[str, dict[str, float]] = {}
    for (label, metric), samples in sorted(values.items()):
        per_hour = prices.get(label)
        figure = cost.price_performance(mean(samples), per_hour or 0)
        if figure is not None:
            result.setdefault(label, {"dollars_per_hour": per_hour})
            result[label][f"{metric}_per_dollar_hour"] = figure
    return result


def run_economics(run: Run) -> dict:
    """What the results page shows about money: the actual cost of what the
    run provisioned and each target's throughput per dollar-hour.
    {"actual": actual_cost(run), "price_performance": price_performance(run)}."""
    return {"actual": actual_cost(run), "price_performance": price_performance(run)}
