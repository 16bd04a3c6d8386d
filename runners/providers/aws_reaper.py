"""The AWS sweep: delete expired benchboard resources, whatever happened to their run.

Runs periodically (a beat task in benchapp) once per team account and region.
A resource is reaped when it is tagged app=benchboard and either its
expires-at tag is in the past or its run is in `runs` (runs benchapp knows
are over: known orphans). Untagged resources are never touched, and neither
are tagged ones whose expiry cannot be read (a human must look).

Order matters: DB instances and EC2 instances first (and wait for them),
then what they were using (volumes, key pairs, groups, parameter groups),
which AWS refuses to delete while in use.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from runners.providers import aws_common as aws
from runners.providers.base import ProvisionContext, parse_expiry

APP_FILTER = [{"Name": "tag:app", "Values": ["benchboard"]}]


@dataclass(frozen=True)
class Reaped:
    """One deleted resource: kind, cloud id, and its run/expiry tags."""

    kind: str
    id: str
    run: str
    expires_at: str

    def to_dict(self) -> dict:
        return asdict(self)


def is_due(tags: dict[str, str], now: datetime, runs: set[str]) -> bool:
    """Whether tags mark a resource of ours whose time is up. Pure."""
    if tags.get("app") != "benchboard":
        return False
    if tags.get("run") in runs:
        return True
    expiry = parse_expiry(tags.get("expires-at", ""))
    return expiry is not None and expiry <= now


def reap(
    session,
    now: datetime | None = None,
    runs: set[str] | frozenset[str] = frozenset(),
    endpoint_url: str | None = None,
    wait_timeout: float = 900.0,
    poll_interval: float = 10.0,
) -> list[Reaped]:
    """Delete due resources in the session's region; return what was deleted.

    session: a boto3 Session (team keys or the worker's role) with a region.
    Raises RunnerError if a delete fails (the next pass retries).
    """
    now = now or datetime.now(UTC)
    runs = {str(r) for r in runs}
    ec2, rds = (aws.client(session, name, endpoint_url) for name in ("ec2", "rds"))
    waiter = ProvisionContext(
        run_id="reaper",
        team="",
        owner="",
        expires_at=now,
        wait_timeout=wait_timeout,
        poll_interval=poll_interval,
    )
    reaped = _reap_db_instances(rds, waiter, now, runs)
    reaped += _reap_instances(ec2, waiter, now, runs)
    reaped += _reap_volumes(ec2, waiter, now, runs)
    reaped += _reap_key_pairs(ec2, now, runs)
    reaped += _reap_groups(ec2, rds, now, runs)
    reaped += _reap_parameter_groups(rds, now, runs)
    return reaped


def _record(kind: str, ident: str, tags: dict[str, str]) -> Reaped:
    return Reaped(kind, ident, tags.get("run", ""), tags.get("expires-at", ""))


def _reap_db_instances(rds, waiter, now, runs) -> list[Reaped]:
    due = []
    for page in rds.get_paginator("describe_db_instances").paginate():
        for db in page["DBInstances"]:
            tags = aws.tag_dict(db.get("TagList"))
            if is_due(tags, now, runs):
                aws.delete_instance(rds, db["DBInstanceIdentifier"])
                due.append(_record("rds_instance", db["DBInstanceIdentifier"], tags))
    for item in due:
        aws.wait_until(
            lambda i=item.id: _db_gone(rds, i), waiter, f"deleting DB instance {item.id}"
        )
    return due


def _db_gone(rds, identifier: str) -> bool:
    found = aws.ignore_gone(
        "describe DB instance", rds.describe_db_instances, DBInstanceIdentifier=identifier
    )
    return not (found and found["DBInstances"])


def _reap_instances(ec2, waiter, now, runs) -> list[Reaped]:
    filters = APP_FILTER + [
        {"Name": "instance-state-name", "Values": aws.LIVE_STATES + ["shutting-down"]}
    ]
    reservations = aws.call("describe instances", ec2.describe_instances, Filters=filters)[
        "Reservations"
    ]
    due = []
    for instance in (i for r in reservations for i in r["Instances"]):
        tags = aws.tag_dict(instance.get("Tags"))
        if is_due(tags, now, runs):
            due.append(_record("ec2_instance", instance["InstanceId"], tags))
    if due:
        ids = [item.id for item in due]
        aws.ignore_gone("terminate instances", ec2.terminate_instances, InstanceIds=ids)
        aws.wait_until(lambda: _all_terminated(ec2, ids), waiter, "terminating expired instances")
    return due


def _all_terminated(ec2, ids: list[str]) -> bool:
    found = aws.ignore_gone("describe instances", ec2.describe_instances, InstanceIds=ids)
    states = [
        i["State"]["Name"] for r in (found or {}).get("Reservations", []) for i in r["Instances"]
    ]
    return all(state == "terminated" for state in states)


def _reap_volumes(ec2, waiter, now, runs) -> list[Reaped]:
    volumes = aws.call("describe volumes", ec2.describe_volumes, Filters=APP_FILTER)["Volumes"]
    due = []
    for volume in volumes:
        tags = aws.tag_dict(volume.get("Tags"))
        attached_live = any(
            a.get("State") in ("attaching", "attached") for a in volume.get("Attachments", [])
        )
        # A volume still attached to a live instance belongs to an unexpired
        # host (expired ones were terminated above); leave it to that host.
        if is_due(tags, now, runs) and not attached_live:
            aws.delete_volume(ec2, waiter, volume["VolumeId"])
            due.append(_record("volume", volume["VolumeId"], tags))
    return due


def _reap_key_pairs(ec2, now, runs) -> list[Reaped]:
    pairs = aws.call("describe key pairs", ec2.describe_key_pairs, Filters=APP_FILTER)["KeyPairs"]
    due = []
    for pair in pairs:
        tags = aws.tag_dict(pair.get("Tags"))
        if is_due(tags, now, runs) and aws.delete_key_pair_if_unused(ec2, pair["KeyName"]):
            due.append(_record("key_pair", pair["KeyName"], tags))
    return due


def _reap_groups(ec2, rds, now, runs) -> list[Reaped]:
    groups = aws.call("describe security groups", ec2.describe_security_groups, Filters=APP_FILTER)[
        "SecurityGroups"
    ]
    due = []
    for group in groups:
        tags = aws.tag_dict(group.get("Tags"))
        if is_due(tags, now, runs) and aws.delete_security_group_if_unused(
            ec2, rds, group["GroupId"]
        ):
            due.append(_record("security_group", group["GroupId"], tags))
    return due


def _reap_parameter_groups(rds, now, runs) -> list[Reaped]:
    due = []
    for page in rds.get_paginator("describe_db_parameter_groups").paginate():
        for group in page["DBParameterGroups"]:
            if not group["DBParameterGroupName"].startswith("bb-"):
                continue  # ours are all named bb-...; skip the tag look-up for the rest
            listed = aws.call(
                "list tags", rds.list_tags_for_resource, ResourceName=group["DBParameterGroupArn"]
            )
            tags = aws.tag_dict(listed.get("TagList"))
            if is_due(tags, now, runs):
                name = group["DBParameterGroupName"]
                aws.ignore_gone(
                    "delete parameter group",
                    rds.delete_db_parameter_group,
                    DBParameterGroupName=name,
                )
                due.append(_record("db_parameter_group", name, tags))
    return due


def sweep(ctx: ProvisionContext, runs: set[str]) -> list[Reaped]:
    """The "aws" sweep group: reap over ctx's account and region (EC2 and RDS at once)."""
    session = aws.session(ctx, ctx.region)
    return reap(
        session,
        runs=runs,
        endpoint_url=ctx.endpoint_url,
        wait_timeout=ctx.wait_timeout,
        poll_interval=ctx.poll_interval,
    )
