"""aws_rds: one RDS DB instance per target (S1, S4).

Spec (the target's `provision:` mapping):
  engine: mysql | mariadb | postgres      engine_version: "8.0.35" (optional)
  instance_class: db.m2.4xlarge           allocated_storage: GB
  storage_type: standard | gp2 | gp3 | io1 (io1 when iops is given)
  iops: provisioned IOPS                  availability_zone, region
  publicly_accessible: false              parameters: {max_connections: 500, innodb_*: ...}
  master_username: benchboard             database: name of the initial DB
  name: the target's name (part of the identifier)
  connect_via: {host, port} | {ssh: {...}}  (see base.apply_connect_via)
"""

from __future__ import annotations

import re
import secrets
from typing import Any

from runners.command import Endpoint
from runners.errors import RunnerError, ValidationError
from runners.providers import aws_common as aws
from runners.providers.aws_account import AwsProvider
from runners.providers.base import (
    DEFAULT_PORTS,
    Handle,
    PriceTable,
    ProvisionContext,
    apply_connect_via,
)
from runners.providers.pricing import CostLine, hourly, unit_price

ENGINES = {"mysql": "mysql", "mariadb": "mysql", "postgres": "postgres"}
DEFAULT_FAMILY = {"mysql": "mysql8.0", "mariadb": "mariadb10.11", "postgres": "postgres16"}
STORAGE_TYPES = ("standard", "gp2", "gp3", "io1", "io2")
# Parameter-group overrides a plan may set; anything else is refused.
ALLOWED_PARAMETER = re.compile(r"^(max_connections|innodb_[a-z0-9_]+)$")
PARAMETER_VALUE = re.compile(r"^[A-Za-z0-9_.{}*/+-]+$")
INSTANCE_CLASS = re.compile(r"^db\.[a-z0-9]+\.[a-z0-9]+$")
# RDS's rule for a DB instance identifier (case-insensitive).
DB_INSTANCE_ID = r"[A-Za-z](?:-?[A-Za-z0-9]){0,62}"


def storage_type(spec: dict) -> str:
    """The storage type of an RDS spec: given, else io1 with iops, else gp2."""
    return spec.get("storage_type") or ("io1" if spec.get("iops") else "gp2")


def parameter_family(engine: str, version: str | None) -> str:
    """The DB parameter group family: mysql 8.0.35 -> mysql8.0, postgres 16.2 -> postgres16."""
    if not version:
        return DEFAULT_FAMILY[engine]
    parts = str(version).split(".")
    if engine == "postgres":
        return f"postgres{parts[0]}"
    return f"{engine}{'.'.join(parts[:2])}"


def check_parameters(parameters: Any) -> dict[str, str]:
    """Allow-listed parameter overrides as strings, or ValidationError."""
    if not parameters:
        return {}
    if not isinstance(parameters, dict):
        raise ValidationError("parameters", "must be a mapping of name to value")
    checked = {}
    for name, value in parameters.items():
        if not ALLOWED_PARAMETER.match(str(name)):
            raise ValidationError(
                f"parameters.{name}", "only max_connections and innodb_* may be set"
            )
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if not PARAMETER_VALUE.match(text):
            raise ValidationError(f"parameters.{name}", "must be a number or a plain word")
        checked[str(name)] = text
    return checked


def _int(spec: dict, key: str, low: int, high: int) -> int | None:
    value = spec.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(key, f"must be an integer {low}-{high}")
    return value


def create_kwargs(spec: dict, identifier: str, username: str) -> dict:
    """The create_db_instance arguments of a spec, minus password, tags and groups.

    Pure: validates every field and raises ValidationError naming it.
    """
    engine = spec.get("engine", "mysql")
    if engine not in ENGINES:
        raise ValidationError("engine", f"must be one of {', '.join(ENGINES)}")
    klass = spec.get("instance_class")
    if not isinstance(klass, str) or not INSTANCE_CLASS.match(klass):
        raise ValidationError("instance_class", "must be an RDS class such as db.m2.4xlarge")
    kind = storage_type(spec)
    if kind not in STORAGE_TYPES:
        raise ValidationError("storage_type", f"must be one of {', '.join(STORAGE_TYPES)}")
    kwargs = {
        "DBInstanceIdentifier": identifier,
        "Engine": engine,
        "DBInstanceClass": klass,
        "AllocatedStorage": _int(spec, "allocated_storage", 5, 65536) or 20,
        "StorageType": kind,
        "MasterUsername": username,
        "PubliclyAccessible": bool(spec.get("publicly_accessible", False)),
        "Port": _int(spec, "port", 1150, 65535) or DEFAULT_PORTS[ENGINES[engine]],
        "DeletionProtection": False,
        "BackupRetentionPeriod": 0,  # benchmarks need no backups; deletes go faster
    }
    iops = _int(spec, "iops", 1000, 256000)
    if iops:
        kwargs["Iops"] = iops
    optional = {
        "engine_version": "EngineVersion",
        "availability_zone": "AvailabilityZone",
        "database": "DBName",
    }
    for key, name in optional.items():
        if spec.get(key):
            kwargs[name] = str(spec[key])
    return kwargs


def rds_lines(spec: dict, hours: float, prices: dict) -> list[CostLine]:
    """Instance, storage and provisioned IOPS of an aws_rds spec over hours."""
    klass = spec.get("instance_class", "")
    kind = storage_type(spec)
    instance = unit_price(prices, "rds_instance_hour", klass, "instance_class")
    storage = unit_price(prices, "rds_storage_gb_month", kind, "storage_type")
    size = spec.get("allocated_storage", 20)
    lines = [
        hourly(klass, 1, "instance-hour", instance, hours),
        hourly(f"RDS {kind} storage", size, "GB-month", storage, hours, per_month=True),
    ]
    if spec.get("iops"):
        price = unit_price(prices, "rds_iops_month", kind, "iops")
        lines.append(
            hourly(f"RDS {kind} IOPS", spec["iops"], "IOPS-month", price, hours, per_month=True)
        )
    return lines


class AwsRdsProvider(AwsProvider):
    """RDS instances, tagged, idempotent, always deletable."""

    name = "aws_rds"
    PRIMARY_KINDS = ("rds_instance",)
    PRIMARY_ID = "db_instance"
    COUNTED_KINDS = ("rds_instance",)
    PRICED_KINDS = ("rds_instance",)
    # Its monitoring: CloudWatch (metrics()); the source name of the series
    # stored since the first reading, kept so that they stay readable.
    MONITORING_SOURCE = "cloudwatch"
    MONITORING_NAME = "CloudWatch"
    # Round figures of the order AWS charged for these classes (illustrative).
    PRICE_TABLES = {
        "rds_instance_hour": PriceTable(
            "RDS instance, per hour",
            {"db.t1.micro": 0.025, "db.m1.small": 0.065, "db.m2.4xlarge": 1.82},
        ),
        "rds_storage_gb_month": PriceTable(
            "RDS storage, per GB-month", {"standard": 0.10, "gp2": 0.115, "io1": 0.125}
        ),
        "rds_iops_month": PriceTable("RDS provisioned IOPS, per IOPS-month", {"io1": 0.10}),
    }

    def counted_resources(self, spec: dict) -> int:
        return 1

    def target_kinds(self, spec: dict) -> tuple[str, ...]:
        """The engine decides: a PostgreSQL instance, else a MySQL-protocol one."""
        return ("postgres",) if "postgres" in str(spec.get("engine", "")) else ("mysql",)

    def price_lines(self, spec: dict, hours: float, prices: dict) -> list[CostLine]:
        return rds_lines(spec, hours, prices)

    def resource_lines(self, resource: dict, hours: float, prices: dict) -> list[CostLine]:
        return rds_lines(resource.get("spec") or {}, hours, prices)

    def provision(self, spec: dict, ctx: ProvisionContext) -> Handle:
        """Create (or reuse) the DB instance, wait until available, return its Handle.

        On any failure after a create call, what was created is torn down
        before the error is raised (the reaper catches what that misses).
        """
        region = spec.get("region") or ctx.region
        identifier = aws.resource_name(ctx.run_id, ctx.cell_id, spec.get("name", "db"))
        username = spec.get("master_username", "benchboard")
        kwargs = create_kwargs(spec, identifier, username)
        parameters = check_parameters(spec.get("parameters"))
        handle = Handle(
            provider=self.name, ids={}, extra={"region": region, "engine": kwargs["Engine"]}
        )
        rds, ec2 = aws.clients(ctx, region, "rds", "ec2")
        try:
            return self._provision(spec, ctx, handle, rds, ec2, kwargs, parameters)
        except BaseException:
            aws.best_effort(self.teardown, handle, ctx)
            raise

    def _provision(self, spec, ctx, handle, rds, ec2, kwargs, parameters) -> Handle:
        identifier = kwargs["DBInstanceIdentifier"]
        if spec.get("security_group", True):
            group = aws.ensure_run_security_group(ec2, ctx, (kwargs["Port"],))
            handle.ids["security_group"] = group
            kwargs["VpcSecurityGroupIds"] = [group]
        if parameters:
            family = parameter_family(kwargs["Engine"], kwargs.get("EngineVersion"))
            handle.ids["parameter_group"] = self._ensure_parameter_group(
                rds, ctx, identifier, family, parameters
            )
            kwargs["DBParameterGroupName"] = handle.ids["parameter_group"]
        handle.ids["db_instance"] = identifier
        self._ensure_instance(rds, ctx, kwargs, handle)
        db = self._wait_available(rds, ctx, identifier)
        address = db.get("Endpoint") or {}
        handle.endpoint = Endpoint(
            kind=ENGINES[kwargs["Engine"]],
            host=address.get("Address"),
            port=address.get("Port", kwargs["Port"]),
            user=kwargs["MasterUsername"],
            database=kwargs.get("DBName"),
        )
        return apply_connect_via(handle, spec)

    def _ensure_parameter_group(self, rds, ctx, identifier, family, parameters) -> str:
        """The instance's own parameter group with the overrides applied."""
        name = f"{identifier}-params"
        tags = aws.notify_create(ctx, "db_parameter_group", name)
        found = aws.ignore_gone(
            "describe parameter group", rds.describe_db_parameter_groups, DBParameterGroupName=name
        )
        if not (found and found["DBParameterGroups"]):
            aws.call(
                "create parameter group",
                rds.create_db_parameter_group,
                DBParameterGroupName=name,
                DBParameterGroupFamily=family,
                Description=f"benchboard run {ctx.run_id}",
                Tags=aws.tag_list(tags),
            )
        changes = [
            {"ParameterName": k, "ParameterValue": v, "ApplyMethod": "pending-reboot"}
            for k, v in parameters.items()
        ]
        aws.call(
            "set parameters",
            rds.modify_db_parameter_group,
            DBParameterGroupName=name,
            Parameters=changes,
        )
        ctx.on_created("db_parameter_group", name, name)
        return name

    def _ensure_instance(self, rds, ctx, kwargs, handle) -> None:
        """Reuse our instance of that identifier, or create it with a fresh password."""
        identifier = kwargs["DBInstanceIdentifier"]
        tags = aws.notify_create(ctx, "rds_instance", identifier)
        existing = aws.describe_db_instance(rds, identifier)
        secret_name = f"{identifier}-master-password"
        handle.extra["password_secret"] = secret_name
        if existing:
            _check_ours(existing, ctx)
            handle.extra["reused"] = True
        else:
            password = secrets.token_urlsafe(24)
            # Stored before the create call: a crash in between leaves a
            # password without an instance, never an instance without one.
            ctx.secret_sink(secret_name, password)
            existing = aws.call(
                "create DB instance",
                rds.create_db_instance,
                MasterUserPassword=password,
                Tags=aws.tag_list(tags),
                **kwargs,
            )["DBInstance"]
        handle.ids["db_instance_arn"] = existing.get("DBInstanceArn")
        ctx.on_created("rds_instance", identifier, identifier)

    def _wait_available(self, rds, ctx, identifier) -> dict:
        """The instance description once its status is 'available'."""
        seen = {}

        def ready() -> bool:
            db = aws.describe_db_instance(rds, identifier)
            if db is None:
                raise RunnerError(
                    f"DB instance {identifier} vanished while waiting", permanent=False
                )
            if db["DBInstanceStatus"] in ("failed", "incompatible-parameters", "storage-full"):
                raise RunnerError(
                    f"DB instance {identifier} is {db['DBInstanceStatus']}", permanent=True
                )
            seen.update(db)
            return db["DBInstanceStatus"] == "available"

        aws.wait_until(ready, ctx, f"waiting for DB instance {identifier}")
        return seen

    def teardown(self, handle: Handle, ctx: ProvisionContext) -> None:
        """Delete the instance (no final snapshot), wait until gone, then its groups."""
        ctx = ctx.for_teardown()
        rds, ec2 = aws.clients(ctx, handle.extra.get("region"), "rds", "ec2")
        identifier = handle.ids.get("db_instance")
        if identifier:
            aws.delete_instance(rds, identifier)
            aws.wait_until(
                lambda: aws.describe_db_instance(rds, identifier) is None,
                ctx,
                f"deleting DB instance {identifier}",
            )
        group = handle.ids.get("parameter_group")
        if group:
            aws.ignore_gone(
                "delete parameter group", rds.delete_db_parameter_group, DBParameterGroupName=group
            )
        aws.delete_security_group_if_unused(ec2, rds, handle.ids.get("security_group"))

    def exists(self, handle: Handle, ctx: ProvisionContext) -> bool:
        """Whether the DB instance is still there (in any state)."""
        identifier = handle.ids.get("db_instance")
        if not identifier:
            return False
        (rds,) = aws.clients(ctx, handle.extra.get("region"), "rds")
        return aws.describe_db_instance(rds, identifier) is not None

    def watched(self, spec: dict) -> Handle:
        """An existing DB instance by its identifier (db_instance), never
        provisioned nor torn down by a run: only its CloudWatch figures are read."""
        identifier = spec.get(self.PRIMARY_ID)
        if not isinstance(identifier, str) or not re.fullmatch(DB_INSTANCE_ID, identifier):
            raise ValidationError(
                self.PRIMARY_ID,
                "required: the DB instance identifier (a letter, then up to 62 letters, "
                "digits or single hyphens)",
            )
        region = spec.get("region") or self.default_region()
        return Handle(
            provider=self.name, ids={self.PRIMARY_ID: identifier}, extra={"region": region}
        )

    def metrics(self, handle: Handle, start, end, ctx: ProvisionContext) -> dict:
        """The DB instance's CloudWatch figures over [start, end] (see CLOUDWATCH)."""
        identifier = handle.ids.get("db_instance")
        if not identifier:
            return {}
        (cloudwatch,) = aws.clients(ctx, handle.extra.get("region"), "cloudwatch")
        return aws.cloudwatch_series(
            cloudwatch, "AWS/RDS", {"DBInstanceIdentifier": identifier}, CLOUDWATCH, start, end
        )


# What CloudWatch says about an RDS instance, read for each cell's window:
# (CloudWatch metric, series name, statistic). Credits and burst balance are
# the minimum of each minute: running out for one minute is what throttles.
CLOUDWATCH = (
    ("CPUUtilization", "cpu_pct", "Average"),
    ("CPUCreditBalance", "cpu_credit_balance", "Minimum"),
    ("CPUCreditUsage", "cpu_credit_usage", "Sum"),
    ("ReadIOPS", "read_iops", "Average"),
    ("WriteIOPS", "write_iops", "Average"),
    ("DiskQueueDepth", "disk_queue_depth", "Average"),
    ("FreeableMemory", "freeable_memory_mb", "Minimum"),
    ("BurstBalance", "burst_balance_pct", "Minimum"),
)


def _check_ours(db: dict, ctx: ProvisionContext) -> None:
    """Refuse to adopt an instance of that name that another run (or a human) made."""
    tags = aws.tag_dict(db.get("TagList"))
    if tags.get("app") != "benchboard" or tags.get("run") != str(ctx.run_id):
        raise RunnerError(
            f"DB instance {db['DBInstanceIdentifier']} exists and is not this run's", permanent=True
        )


# END
