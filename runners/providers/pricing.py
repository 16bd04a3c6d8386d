"""Cost of provisioned targets: the estimate before a run, the actual cost after.

The arithmetic every provider prices with: lines of quantity x unit price
x hours, read from a price table ({table: {key: price}}, a plain dict, so
benchapp can store an edited copy and pass it in). Each provider declares
its tables (Provider.PRICE_TABLES, whose defaults are ILLUSTRATIVE ONLY:
round USD figures, not a quote for any region or date) and prices its own
specs and resources; billing.py sums them over the registry.

Units: instances per hour; storage per GB-month; provisioned IOPS per
IOPS-month; EBS standard I/O per million requests. A month is 730 hours.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from runners.errors import ValidationError

HOURS_PER_MONTH = 730.0

# Shown beside every figure computed from the providers' default prices.
NOTE = "Illustrative prices (USD), not a cloud's quote: edit the price table."


@dataclass(frozen=True)
class CostLine:
    """One priced item: what, how much of it, at what unit price, for how long."""

    item: str
    quantity: float
    unit: str
    unit_price: float
    hours: float
    cost: float


@dataclass
class Cost:
    """A total in USD and the lines it sums."""

    total: float = 0.0
    lines: list[CostLine] = field(default_factory=list)

    def add(self, line: CostLine) -> None:
        self.lines.append(line)
        self.total += line.cost

    def to_dict(self) -> dict:
        return {"total": self.total, "lines": [asdict(line) for line in self.lines]}


def unit_price(prices: dict, table: str, key: str, param: str) -> float:
    """prices[table][key], or ValidationError naming param and the missing row."""
    try:
        return float(prices[table][key])
    except KeyError:
        raise ValidationError(
            param, f"no price for {key!r} in {table}; add it to the price table"
        ) from None


def hourly(item, quantity, unit, price, hours, per_month=False) -> CostLine:
    """A line for quantity x price over hours (monthly prices prorated by 730 h)."""
    rate = price / HOURS_PER_MONTH if per_month else price
    return CostLine(item, quantity, unit, price, hours, quantity * rate * hours)


def flat_lines(spec: dict, hours: float) -> list[CostLine]:
    """The spec's own price_per_hour over hours (a static target), or nothing."""
    if not spec.get("price_per_hour"):
        return []
    name = spec.get("name", spec.get("provider") or "target")
    return [hourly(name, 1, "hour", float(spec["price_per_hour"]), hours)]


def lifetime_hours(started: datetime, ended: datetime | None, now: datetime | None = None) -> float:
    """Hours between started and ended (or now for a resource still up)."""
    end = ended or now or datetime.now(UTC)
    return max(0.0, (end - started).total_seconds() / 3600.0)


def price_performance(value: float, dollars_per_hour: float) -> float | None:
    """A metric per dollar-hour (e.g. TPS per $/h); None when the price is 0 or unknown."""
    if not dollars_per_hour:
        return None
    return value / dollars_per_hour
