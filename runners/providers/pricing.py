"""Cost of provisioned targets: the estimate before a run, the actual cost after.

Pure functions over a price table (a plain dict, so benchapp can store an
edited copy per team and pass it in). The DEFAULT_PRICES below are
ILLUSTRATIVE ONLY: round figures in USD of the order AWS charged for these
classes, not a quote for any region or date. Edit the table before trusting
a dollar figure.

Units: instances per hour; storage per GB-month; provisioned IOPS per
IOPS-month; EBS standard I/O per million requests. A month is 730 hours.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from runners.errors import ValidationError

HOURS_PER_MONTH = 730.0

# Shown beside every figure computed from DEFAULT_PRICES.
NOTE = "Illustrative prices (USD), not an AWS quote: edit the price table."

DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "rds_instance_hour": {"db.t1.micro": 0.025, "db.m1.small": 0.065, "db.m2.4xlarge": 1.82},
    "ec2_instance_hour": {"m3.2xlarge": 0.90, "c1.medium": 0.16, "c1.xlarge": 0.64},
    "rds_storage_gb_month": {"standard": 0.10, "gp2": 0.115, "io1": 0.125},
    "ebs_gb_month": {"standard": 0.05, "gp2": 0.10, "io1": 0.125},
    "rds_iops_month": {"io1": 0.10},
    "ebs_iops_month": {"io1": 0.065},
    "ebs_io_million": {"standard": 0.05},
}


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


def _price(prices: dict, table: str, key: str, param: str) -> float:
    try:
        return float(prices[table][key])
    except KeyError:
        raise ValidationError(
            param, f"no price for {key!r} in {table}; add it to the price table"
        ) from None


def _hourly(item, quantity, unit, price, hours, per_month=False) -> CostLine:
    """A line for quantity x price over hours (monthly prices prorated by 730 h)."""
    rate = price / HOURS_PER_MONTH if per_month else price
    return CostLine(item, quantity, unit, price, hours, quantity * rate * hours)


def rds_lines(spec: dict, hours: float, prices: dict) -> list[CostLine]:
    """Instance, storage and provisioned IOPS of an aws_rds spec over hours."""
    from runners.providers.aws_rds import storage_type

    klass = spec.get("instance_class", "")
    kind = storage_type(spec)
    lines = [
        _hourly(
            klass,
            1,
            "instance-hour",
            _price(prices, "rds_instance_hour", klass, "instance_class"),
            hours,
        ),
        _hourly(
            f"RDS {kind} storage",
            spec.get("allocated_storage", 20),
            "GB-month",
            _price(prices, "rds_storage_gb_month", kind, "storage_type"),
            hours,
            per_month=True,
        ),
    ]
    if spec.get("iops"):
        price = _price(prices, "rds_iops_month", kind, "iops")
        lines.append(
            _hourly(f"RDS {kind} IOPS", spec["iops"], "IOPS-month", price, hours, per_month=True)
        )
    return lines


def volume_lines(volumes: dict, hours: float, prices: dict) -> list[CostLine]:
    """Storage and provisioned IOPS of count EBS volumes ({count, size_gb, type, iops})."""
    count = volumes.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int):
        raise ValidationError("volumes.count", "must be a number (expand the axes first)")
    if count == 0:
        return []
    kind = volumes.get("type", "gp2")
    size = volumes.get("size_gb", 20)
    price = _price(prices, "ebs_gb_month", kind, "volumes.type")
    lines = [
        _hourly(
            f"EBS {kind} {size} GB x{count}", count * size, "GB-month", price, hours, per_month=True
        )
    ]
    if volumes.get("iops"):
        price = _price(prices, "ebs_iops_month", kind, "volumes.iops")
        lines.append(
            _hourly(
                f"EBS {kind} IOPS x{count}",
                count * volumes["iops"],
                "IOPS-month",
                price,
                hours,
                True,
            )
        )
    return lines


def ec2_lines(spec: dict, hours: float, prices: dict) -> list[CostLine]:
    """Instance and attached volumes of an aws_ec2 spec over hours."""
    kind = spec.get("instance_type", "")
    line = _hourly(
        kind, 1, "instance-hour", _price(prices, "ec2_instance_hour", kind, "instance_type"), hours
    )
    return [line] + volume_lines(spec.get("volumes") or {"count": 0}, hours, prices)


def spec_lines(spec: dict, hours: float, prices: dict) -> list[CostLine]:
    """The cost lines of one provision spec; static/local cost their price_per_hour (or nothing)."""
    provider = spec.get("provider")
    if provider == "aws_rds":
        return rds_lines(spec, hours, prices)
    if provider == "aws_ec2":
        return ec2_lines(spec, hours, prices)
    if spec.get("price_per_hour"):
        return [
            _hourly(
                spec.get("name", provider or "target"),
                1,
                "hour",
                float(spec["price_per_hour"]),
                hours,
            )
        ]
    return []


def estimate(plan_targets: list[dict], hours: float, prices: dict | None = None) -> Cost:
    """The cost of keeping every spec (targets and client) up for hours.

    plan_targets: provision specs with `provider`, axes already expanded.
    Raises ValidationError naming a class or type missing from the table.
    """
    prices = prices or DEFAULT_PRICES
    cost = Cost()
    for spec in plan_targets:
        for line in spec_lines(spec, hours, prices):
            cost.add(line)
    return cost


def lifetime_hours(started: datetime, ended: datetime | None, now: datetime | None = None) -> float:
    """Hours between started and ended (or now for a resource still up)."""
    end = ended or now or datetime.now(UTC)
    return max(0.0, (end - started).total_seconds() / 3600.0)


def actual(resources: list[dict], prices: dict | None = None, now: datetime | None = None) -> Cost:
    """The cost of resources from their lifetimes.

    resources: {"kind": rds_instance | ec2_instance | volume | ..., "spec": {...},
    "started": datetime, "ended": datetime | None, "io_requests": int (optional,
    EBS standard)}. An ec2_instance's spec is priced without volumes (those
    are their own "volume" rows, spec {size_gb, type, iops}); key pairs,
    groups and parameter groups cost nothing.
    """
    prices = prices or DEFAULT_PRICES
    cost = Cost()
    for resource in resources:
        hours = lifetime_hours(resource["started"], resource.get("ended"), now)
        spec = resource.get("spec") or {}
        kind = resource["kind"]
        if kind == "rds_instance":
            lines = rds_lines(spec, hours, prices)
        elif kind == "ec2_instance":
            lines = ec2_lines({**spec, "volumes": None}, hours, prices)
        elif kind == "volume":
            lines = volume_lines({**spec, "count": 1}, hours, prices) + _io_lines(
                spec, resource, prices
            )
        else:
            lines = []
        for line in lines:
            cost.add(line)
    return cost


def _io_lines(spec: dict, resource: dict, prices: dict) -> list[CostLine]:
    """EBS standard bills per I/O request (S3 notes it): millions x price."""
    requests = resource.get("io_requests")
    kind = spec.get("type", "gp2")
    if not requests or kind not in prices.get("ebs_io_million", {}):
        return []
    price = float(prices["ebs_io_million"][kind])
    return [
        CostLine(
            f"EBS {kind} I/O",
            requests / 1e6,
            "million requests",
            price,
            0.0,
            requests / 1e6 * price,
        )
    ]


def price_performance(value: float, dollars_per_hour: float) -> float | None:
    """A metric per dollar-hour (e.g. TPS per $/h); None when the price is 0 or unknown."""
    if not dollars_per_hour:
        return None
    return value / dollars_per_hour
