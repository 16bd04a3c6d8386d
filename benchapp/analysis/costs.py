"""What a run cost and what its main metric gives per dollar-hour, for the
results and comparison pages (the arithmetic is benchapp.cloud.pricing's).

Only runs with a known price get a line: provisioned targets (priced from
the price table) or static ones with price_per_hour / price_per_month in
USD. The total is pricing.estimate_plan's, the formula the builder's
preview and the budget check use, over the run's own billed hours (whole
hours, at least one) instead of the expected ones; an unfinished run has
no total yet.
"""

from __future__ import annotations

import math

from benchapp.cloud import pricing
from benchapp.models import Run
from runners.errors import ValidationError
from runners.metrics import HIGHER
from runners.tools import direction as catalog_direction
from runners.tools import metric as catalog_metric


def has_price(run: Run) -> bool:
    """Whether the plan names anything with a price (no query)."""
    try:
        plan = run.spec
    except ValidationError:
        return False  # a stored document this version cannot read: no figure
    return any(c.provision for c in plan.clients) or any(
        t.provision or t.price_per_hour or t.price_per_month for t in plan.targets
    )


def billed_hours(run: Run) -> float | None:
    if not run.started_at or not run.finished_at:
        return None
    return float(max(1, math.ceil((run.finished_at - run.started_at).total_seconds() / 3600)))


def value_metric(tool: str, shown: list[str], available: list[str]) -> str | None:
    """The metric to put per dollar-hour: the one shown if it is a
    higher-is-better throughput, else the first such metric the run stored."""

    def throughput(name):
        row = catalog_metric(tool, name)
        return row.kind == "throughput" and catalog_direction(tool, name) == HIGHER

    return next(
        (
            m
            for m in [*shown, *pricing.throughput_metrics(tool)]
            if m in available and throughput(m)
        ),
        None,
    )


def run_costs(run: Run, shown: list[str], available: list[str]) -> dict | None:
    """{"run", "total", "currency", "hours", "metric", "metric_title", "targets":
    [{"target", "dollars_per_hour", "per_dollar_hour"}], "note"} or None."""
    if not has_price(run):
        return None
    hours = billed_hours(run)
    try:
        economics = pricing.run_economics(run)
        plan = run.spec
        total = pricing.estimate_plan(plan, hours=hours)["total"] if hours else None
    except (ValidationError, KeyError, TypeError, ValueError):
        return None  # a stored document this version cannot read: no figure beats a wrong one
    metric = value_metric(run.tool, shown, available)
    targets = [
        {
            "target": label,
            "dollars_per_hour": figures["dollars_per_hour"],
            "per_dollar_hour": figures.get(f"{metric}_per_dollar_hour"),
        }
        for label, figures in economics["price_performance"].items()
    ]
    return {
        "run": run,
        "total": total,
        "currency": pricing.CURRENCY,
        "hours": hours,
        "metric": metric,
        "metric_title": catalog_metric(run.tool, metric).title() if metric else "",
        "targets": [t for t in targets if t["per_dollar_hour"] is not None],
        "note": economics["actual"]["note"],
    }


def costs(runs: list[Run], shown: list[str], available: list[str]) -> list[dict]:
    return [c for run in runs if (c := run_costs(run, shown, available))]
