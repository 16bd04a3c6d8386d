"""What the AWS providers and the reaper share: sessions, tags, errors, waiting.

boto3 is imported inside functions (it is slow to import and Django's
start-up must not pay for it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from runners.errors import RunnerError
from runners.providers.base import Provider, ProvisionContext, resource_name  # noqa: F401 (providers use aws.resource_name)

logger = logging.getLogger(__name__)

# Error codes that will fail the same way on retry.
PERMANENT_CODES = {
    "AuthFailure",
    "UnauthorizedOperation",
    "AccessDenied",
    "AccessDeniedException",
    "InvalidClientTokenId",
    "SignatureDoesNotMatch",
    "UnrecognizedClientException",
    "OptInRequired",
    "InvalidParameterValue",
    "InvalidParameterCombination",
    "InvalidParameter",
    "MissingParameter",
    "ValidationError",
    "Unsupported",
    "StorageQuotaExceeded",
    "InstanceQuotaExceeded",
    "DBParameterGroupNotFound",
}
# Capacity and rate limits pass: retry later.
TRANSIENT_CODES = {
    "Throttling",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InsufficientInstanceCapacity",
    "InsufficientDBInstanceCapacity",
    "InsufficientVolumeCapacity",
    "ServiceUnavailable",
    "InternalError",
    "InternalFailure",
}
GONE_CODES = {
    "DBInstanceNotFound",
    "DBInstanceNotFoundFault",
    "DBParameterGroupNotFound",
    "InvalidInstanceID.NotFound",
    "InvalidVolume.NotFound",
    "InvalidKeyPair.NotFound",
    "InvalidGroup.NotFound",
}


NO_ACCOUNT = (
    "name an aws_credential (a team credential of kind AWS access key): a plan from the web, "
    "the API or a schedule never uses the worker's own AWS identity"
)


def session(ctx: ProvisionContext, region: str | None = None):
    """A boto3 Session signing with the context's keys and nothing else.

    With keys, boto3 can fall back to nothing: no profile, no config or
    credentials file, no environment keys, no instance role (an empty
    credential chain), so a call is signed by the team's key or not made.
    Only Account(ambient=True) (an operator's own plan file, when allowed)
    gets boto3's default chain. RunnerError (permanent) for Account()."""
    import boto3

    account = ctx.account
    if account.ambient and not account.key_id:
        return boto3.Session(region_name=region or ctx.region)
    if not (account.key_id and account.secret):
        raise RunnerError(NO_ACCOUNT, permanent=True)
    return boto3.Session(
        aws_access_key_id=account.key_id,
        aws_secret_access_key=account.secret,
        aws_session_token=account.session_token,
        region_name=region or ctx.region,
        botocore_session=_keys_only(),
    )


def _keys_only():
    """A botocore session that reads no profile or AWS config file and has an
    empty credential chain (explicit keys are its only credentials)."""
    import os

    import botocore.session
    from botocore.credentials import CredentialResolver

    core = botocore.session.Session(
        session_vars={
            "profile": (None, None, None, None),
            "config_file": (None, None, os.devnull, None),
            "credentials_file": (None, None, os.devnull, None),
        }
    )
    core.register_component("credential_provider", CredentialResolver(providers=[]))
    return core


def client(sess, service: str, endpoint_url: str | None = None):
    """A boto3 client; endpoint_url None lets boto3 read AWS_ENDPOINT_URL itself."""
    from botocore.config import Config

    # Retries are ours (the orchestration's policy): one quick retry for blips only.
    config = Config(retries={"max_attempts": 2, "mode": "standard"}, connect_timeout=10)
    kwargs = {"config": config}
    if endpoint_url:
        kwargs["endpoint_url"] = endpoint_url
    return sess.client(service, **kwargs)


def clients(ctx: ProvisionContext, region: str | None, *services: str) -> list:
    """Clients for services in region (default ctx.region)."""
    sess = session(ctx, region)
    return [client(sess, name, ctx.endpoint_url) for name in services]


# CloudWatch's finest standard resolution for RDS and EC2 basic monitoring.
CLOUDWATCH_PERIOD_S = 60
MB = 1_000_000


def cloudwatch_series(cw, namespace, dimensions, metrics, start, end) -> dict:
    """A columnar series (t: seconds since start) of CloudWatch metrics
    [(name, series name, statistic)] over [start, end], one row per period
    that any metric has a datapoint for; {} when none has any.

    The window is widened to whole periods (a 40 s cell falls inside one
    minute's datapoint). Bytes become MB (FreeableMemory)."""
    first = start.replace(second=0, microsecond=0)
    rows: dict = {}
    for name, column, statistic in metrics:
        found = call(
            f"read CloudWatch {name}",
            cw.get_metric_statistics,
            Namespace=namespace,
            MetricName=name,
            Dimensions=[{"Name": k, "Value": v} for k, v in dimensions.items()],
            StartTime=first,
            EndTime=end,
            Period=CLOUDWATCH_PERIOD_S,
            Statistics=[statistic],
        )
        for point in found.get("Datapoints", []):
            value = float(point[statistic])
            if point.get("Unit") == "Bytes":
                value /= MB
            when = round((point["Timestamp"] - start).total_seconds(), 1)
            rows.setdefault(when, {})[column] = round(value, 3)
    if not rows:
        return {}
    times = sorted(rows)
    columns = [column for _, column, _ in metrics if any(column in rows[t] for t in times)]
    return {"t": times, **{c: [rows[t].get(c) for t in times] for c in columns}}


def error_code(exc: BaseException) -> str:
    """The AWS error code of a botocore ClientError, else ''."""
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


def is_gone(exc: BaseException) -> bool:
    """Whether exc says the resource does not exist (fine for teardown)."""
    code = error_code(exc)
    return code in GONE_CODES or code.endswith((".NotFound", "NotFoundFault"))


def to_runner_error(exc: BaseException, doing: str) -> RunnerError:
    """A RunnerError for a boto3/botocore failure, with the permanent flag set.

    The AWS message is kept (it names the parameter); no request data is,
    so no secret can leak into it.
    """
    code = error_code(exc)
    if code:
        message = str(getattr(exc, "response", {}).get("Error", {}).get("Message", ""))
        permanent = code in PERMANENT_CODES or (
            code.startswith("Invalid") and code not in TRANSIENT_CODES
        )
        return RunnerError(f"{doing}: {code}: {message}", permanent=permanent)
    name = type(exc).__name__
    if name in ("NoCredentialsError", "PartialCredentialsError", "NoRegionError"):
        return RunnerError(f"{doing}: {exc}", permanent=True)
    # Connection errors, read timeouts, and anything unknown: try again later.
    return RunnerError(f"{doing}: {name}: {exc}", permanent=False)


def call(doing: str, fn: Callable, **kwargs) -> Any:
    """fn(**kwargs), with AWS errors turned into RunnerError."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return fn(**kwargs)
    except (ClientError, BotoCoreError) as exc:
        raise to_runner_error(exc, doing) from None


def ignore_gone(doing: str, fn: Callable, **kwargs) -> Any:
    """Like call, but a 'not found' answer returns None (teardown is idempotent)."""
    from botocore.exceptions import ClientError

    try:
        return fn(**kwargs)
    except ClientError as exc:
        if is_gone(exc):
            return None
        raise to_runner_error(exc, doing) from None


def best_effort(fn: Callable, *args) -> None:
    """Run a clean-up after a failed provision; failures are logged, not raised.

    The provision error is the one to report; whatever this misses, the
    reaper deletes. Only the exception type is logged (no request data).
    """
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001
        logger.warning("clean-up after failed provision failed: %s", type(exc).__name__)


def wait_until(check: Callable[[], bool], ctx: ProvisionContext, what: str) -> None:
    """Poll check() every ctx.poll_interval until it is true.

    Raises a transient RunnerError on ctx.wait_timeout or when ctx.cancel is
    set. Polling (not boto3 waiters) so that cancel is seen between polls.
    """
    deadline = time.monotonic() + ctx.wait_timeout
    while True:
        ctx.check_cancel(what)
        if check():
            return
        if time.monotonic() >= deadline:
            raise RunnerError(f"timed out after {ctx.wait_timeout:g} s {what}", permanent=False)
        ctx.cancel.wait(ctx.poll_interval)


def tag_list(tags: dict[str, str]) -> list[dict[str, str]]:
    """AWS's [{"Key", "Value"}] form of a dict."""
    return [{"Key": k, "Value": str(v)} for k, v in tags.items()]


def tag_dict(tags: list[dict] | None) -> dict[str, str]:
    """The dict form of an AWS tag list (None -> {})."""
    return {t["Key"]: t["Value"] for t in tags or []}


def tag_specs(resource_types: tuple[str, ...], tags: dict[str, str]) -> list[dict]:
    """TagSpecifications for EC2 create calls."""
    return [{"ResourceType": rt, "Tags": tag_list(tags)} for rt in resource_types]


def notify_create(ctx: ProvisionContext, kind: str, token: str) -> dict[str, str]:
    """Call ctx.on_create and return the tags to put in the create call."""
    tags = ctx.resource_tags(token)
    ctx.on_create(kind, token, tags)
    return tags


def ensure_run_security_group(ec2, ctx: ProvisionContext, db_ports: tuple[int, ...]) -> str:
    """The run's security group id, created if missing.

    Opens SSH (22) to the worker's address and the DB ports to members of the
    same group: clients and targets of one run share it, so "DB port from the
    client's group" holds without ordering between providers.
    """
    name = resource_name(ctx.run_id, "sg")
    tags = notify_create(ctx, "security_group", name)
    found = call(
        "describe security group",
        ec2.describe_security_groups,
        Filters=[
            {"Name": "group-name", "Values": [name]},
            {"Name": "tag:app", "Values": ["benchboard"]},
        ],
    )["SecurityGroups"]
    if found:
        group_id = found[0]["GroupId"]
    else:
        group_id = call(
            "create security group",
            ec2.create_security_group,
            GroupName=name,
            Description=f"benchboard run {ctx.run_id}",
            TagSpecifications=tag_specs(("security-group",), tags),
        )["GroupId"]
        _open_ports(ec2, group_id, ctx.worker_cidr, db_ports)
    ctx.on_created("security_group", name, group_id)
    return group_id


def _open_ports(ec2, group_id: str, worker_cidr: str, db_ports: tuple[int, ...]) -> None:
    """SSH from the worker, DB ports from the group itself."""
    rules = [
        {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": worker_cidr}]}
    ]
    for port in db_ports:
        rules.append(
            {
                "IpProtocol": "tcp",
                "FromPort": port,
                "ToPort": port,
                "UserIdGroupPairs": [{"GroupId": group_id}],
            }
        )
    call(
        "open security group ports",
        ec2.authorize_security_group_ingress,
        GroupId=group_id,
        IpPermissions=rules,
    )


def delete_security_group_if_unused(ec2, rds, group_id: str | None) -> bool:
    """Delete the run's group unless a live instance or DB still uses it.

    Returns True when it is gone. The last teardown of a run deletes it; the
    reaper catches the rest.
    """
    if not group_id:
        return True
    live = call(
        "describe instances of group",
        ec2.describe_instances,
        Filters=[
            {"Name": "instance.group-id", "Values": [group_id]},
            {
                "Name": "instance-state-name",
                "Values": ["pending", "running", "stopping", "stopped", "shutting-down"],
            },
        ],
    )["Reservations"]
    if live or group_id in _rds_group_ids(rds):
        return False
    from botocore.exceptions import ClientError

    try:
        ec2.delete_security_group(GroupId=group_id)
    except ClientError as exc:
        if is_gone(exc):
            return True
        if error_code(exc) == "DependencyViolation":
            return False
        raise to_runner_error(exc, "delete security group") from None
    return True


def _rds_group_ids(rds) -> set[str]:
    """Security group ids used by any DB instance of the region."""
    if rds is None:
        return set()
    groups = set()
    for page in rds.get_paginator("describe_db_instances").paginate():
        for db in page["DBInstances"]:
            groups.update(g["VpcSecurityGroupId"] for g in db.get("VpcSecurityGroups", []))
    return groups


# ------------------------------------------- what teardown and the reaper share

# EC2 instance states that still hold (or will hold) the instance.
LIVE_STATES = ["pending", "running", "stopping", "stopped"]


def describe_db_instance(rds, identifier: str) -> dict | None:
    """The DB instance description, or None if it does not exist."""
    found = ignore_gone(
        "describe DB instance", rds.describe_db_instances, DBInstanceIdentifier=identifier
    )
    return found["DBInstances"][0] if found and found["DBInstances"] else None


def delete_instance(rds, identifier: str) -> None:
    """Start deleting a DB instance: protection off, no final snapshot. Gone is fine."""
    db = describe_db_instance(rds, identifier)
    if db is None or db["DBInstanceStatus"] == "deleting":
        return
    if db.get("DeletionProtection"):
        call(
            "turn off deletion protection",
            rds.modify_db_instance,
            DBInstanceIdentifier=identifier,
            DeletionProtection=False,
            ApplyImmediately=True,
        )
    ignore_gone(
        "delete DB instance",
        rds.delete_db_instance,
        DBInstanceIdentifier=identifier,
        SkipFinalSnapshot=True,
        DeleteAutomatedBackups=True,
    )


def live_instances(ec2, filters: list[dict]) -> list[dict]:
    """Instances matching filters that are not terminated or shutting down."""
    filters = filters + [{"Name": "instance-state-name", "Values": LIVE_STATES}]
    reservations = call("describe instances", ec2.describe_instances, Filters=filters)[
        "Reservations"
    ]
    return [i for r in reservations for i in r["Instances"]]


def describe_volume(ec2, volume_id: str) -> dict:
    found = ignore_gone("describe volume", ec2.describe_volumes, VolumeIds=[volume_id])
    return found["Volumes"][0] if found and found["Volumes"] else {}


def volume_state(ec2, volume_id: str) -> str:
    return describe_volume(ec2, volume_id).get("State", "gone")


def delete_volume(ec2, ctx: ProvisionContext, volume_id: str) -> None:
    """Delete a volume once detached; gone (DeleteOnTermination) is fine."""
    wait_until(
        lambda: volume_state(ec2, volume_id) in ("available", "gone"), ctx, f"detaching {volume_id}"
    )
    ignore_gone("delete volume", ec2.delete_volume, VolumeId=volume_id)


def delete_key_pair_if_unused(ec2, key_name: str | None) -> bool:
    """Delete the run's key pair unless a live instance still uses it."""
    if not key_name:
        return True
    if live_instances(ec2, [{"Name": "key-name", "Values": [key_name]}]):
        return False
    ignore_gone("delete key pair", ec2.delete_key_pair, KeyName=key_name)
    return True
