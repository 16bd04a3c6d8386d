"""Providers against a real moto_server (HTTP on loopback), plus the pure parts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from runners.command import Endpoint
from runners.errors import RunnerError, ValidationError
from runners.providers import PROVIDERS, Account, Handle, ProvisionContext, get_provider
from runners.providers.aws_common import resource_name, to_runner_error
from runners.providers.aws_ec2_setup import raid0_script, user_data
from runners.providers.aws_reaper import reap
from tests.support.moto import moto_endpoint, moto_server  # noqa: F401

REGION = "ap-northeast-1"
NOW = datetime.now(UTC)
# moto's keys, as a team's credential gives them (Account() signs nothing).
MOTO_KEYS = Account(key_id="testing", secret="testing")
S1_IOPS = {
    "provider": "aws_rds",
    "name": "m2-4xlarge-iops",
    "engine": "mysql",
    "instance_class": "db.m2.4xlarge",
    "allocated_storage": 1000,
    "iops": 10000,
    "region": REGION,
    "availability_zone": "ap-northeast-1c",
    "parameters": {"max_connections": 500, "innodb_flush_log_at_trx_commit": 2},
}
S1_CLIENT = {
    "provider": "aws_ec2",
    "name": "client",
    "instance_type": "m3.2xlarge",
    "availability_zone": "ap-northeast-1c",
}
S3_HOST = {
    "provider": "aws_ec2",
    "name": "c1-medium",
    "instance_type": "c1.medium",
    "region": REGION,
    "volumes": {
        "count": 4,
        "size_gb": 20,
        "type": "standard",
        "raid": 0,
        "filesystem": "xfs",
        "mount": "/data",
    },
}


class Recorder:
    """Callbacks that record (event, kind, token, extra) and the stored secrets."""

    def __init__(self):
        self.events = []
        self.secrets = {}

    def on_create(self, kind, token, tags):
        self.events.append(("create", kind, token, tags))

    def on_created(self, kind, token, cloud_id):
        self.events.append(("created", kind, token, cloud_id))

    def secret_sink(self, name, value):
        self.secrets[name] = value


def make_ctx(
    rec: Recorder | None = None, run_id="r1", expires=timedelta(hours=2), **kw
) -> ProvisionContext:
    rec = rec or Recorder()
    fields = {
        "run_id": run_id,
        "cell_id": None,
        "team": "perf",
        "owner": "alice",
        "expires_at": NOW + expires,
        "region": REGION,
        "on_create": rec.on_create,
        "on_created": rec.on_created,
        "secret_sink": rec.secret_sink,
        "wait_timeout": 20,
        "poll_interval": 0.05,
        "account": MOTO_KEYS,
    }
    fields.update(kw)
    return ProvisionContext(**fields)


def aws_client(service):
    # No endpoint given: boto3 reads AWS_ENDPOINT_URL set by the fixture.
    return boto3.Session(region_name=REGION).client(service)


def leftovers() -> dict[str, int]:
    """Counts of live resources in moto, per kind."""
    ec2, rds = aws_client("ec2"), aws_client("rds")
    live = ec2.describe_instances(
        Filters=[{"Name": "instance-state-name", "Values": ["pending", "running"]}]
    )
    return {
        "db_instances": len(rds.describe_db_instances()["DBInstances"]),
        "instances": sum(len(r["Instances"]) for r in live["Reservations"]),
        "volumes": len(ec2.describe_volumes()["Volumes"]),
        "key_pairs": len(ec2.describe_key_pairs()["KeyPairs"]),
        "groups": len(
            ec2.describe_security_groups(Filters=[{"Name": "tag:app", "Values": ["benchboard"]}])[
                "SecurityGroups"
            ]
        ),
        "parameter_groups": sum(
            g["DBParameterGroupName"].startswith("bb-")
            for g in rds.describe_db_parameter_groups()["DBParameterGroups"]
        ),
    }


NOTHING = {
    "db_instances": 0,
    "instances": 0,
    "volumes": 0,
    "key_pairs": 0,
    "groups": 0,
    "parameter_groups": 0,
}


@pytest.mark.usefixtures("moto_endpoint")
def test_rds_provision_s1_instance_tagged_and_torn_down():
    rec = Recorder()
    ctx = make_ctx(rec, cell_id="c7")
    provider = get_provider("aws_rds")
    handle = provider.provision(S1_IOPS, ctx)

    db = aws_client("rds").describe_db_instances(DBInstanceIdentifier=handle.ids["db_instance"])[
        "DBInstances"
    ][0]
    tags = {t["Key"]: t["Value"] for t in db["TagList"]}
    got = (
        db["DBInstanceClass"],
        db["Iops"],
        db["AllocatedStorage"],
        db["StorageType"],
        db["AvailabilityZone"],
    )
    assert got == ("db.m2.4xlarge", 10000, 1000, "io1", "ap-northeast-1c")
    assert db["PubliclyAccessible"] is False
    assert tags == {
        "app": "benchboard",
        "run": "r1",
        "cell": "c7",
        "team": "perf",
        "owner": "alice",
        "expires-at": (NOW + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "token": "bb-r1-c7-m2-4xlarge-iops",
    }
    assert handle.ids["db_instance"] == "bb-r1-c7-m2-4xlarge-iops"
    assert handle.endpoint == Endpoint(
        kind="mysql", host=db["Endpoint"]["Address"], port=3306, user="benchboard"
    )
    password = rec.secrets["bb-r1-c7-m2-4xlarge-iops-master-password"]
    assert len(password) == 32
    assert password not in repr(handle) + json.dumps(handle.to_dict()) + repr(rec.events)
    assert Handle.from_dict(json.loads(json.dumps(handle.to_dict()))) == handle
    assert provider.exists(handle, ctx) is True

    provider.teardown(Handle.from_dict(handle.to_dict()), ctx)
    assert leftovers() == NOTHING
    assert provider.exists(handle, ctx) is False
    provider.teardown(handle, ctx)  # already gone is fine


@pytest.mark.usefixtures("moto_endpoint")
def test_rds_provision_twice_returns_same_instance():
    rec = Recorder()
    ctx = make_ctx(rec)
    first = PROVIDERS["aws_rds"].provision(S1_IOPS, ctx)
    second = PROVIDERS["aws_rds"].provision(S1_IOPS, ctx)
    assert (second.ids, second.endpoint) == (first.ids, first.endpoint)
    assert len(aws_client("rds").describe_db_instances()["DBInstances"]) == 1
    assert len(rec.secrets) == 1  # the password is not regenerated on reuse
    PROVIDERS["aws_rds"].teardown(second, ctx)
    assert leftovers() == NOTHING


@pytest.mark.usefixtures("moto_endpoint")
def test_rds_on_create_runs_before_the_create_call():
    rds = aws_client("rds")
    seen = []

    def on_create(kind, token, tags):
        if kind == "rds_instance":
            seen.append(len(rds.describe_db_instances()["DBInstances"]))

    def on_created(kind, token, cloud_id):
        if kind == "rds_instance":
            seen.append(len(rds.describe_db_instances()["DBInstances"]))

    ctx = make_ctx(on_create=on_create, on_created=on_created)
    handle = PROVIDERS["aws_rds"].provision(S1_IOPS, ctx)
    assert seen == [0, 1]
    PROVIDERS["aws_rds"].teardown(handle, ctx)


@pytest.mark.usefixtures("moto_endpoint")
def test_rds_on_create_raising_creates_nothing():
    def on_create(kind, token, tags):
        if kind == "rds_instance":
            raise RuntimeError("database down")

    with pytest.raises(RuntimeError):
        PROVIDERS["aws_rds"].provision(S1_IOPS, make_ctx(on_create=on_create))
    assert leftovers() == NOTHING


@pytest.mark.usefixtures("moto_endpoint")
def test_rds_connect_via_overrides_moto_address():
    spec = dict(S1_IOPS, connect_via={"host": "127.0.0.1", "port": 3306, "user": "root"})
    ctx = make_ctx()
    handle = PROVIDERS["aws_rds"].provision(spec, ctx)
    assert handle.endpoint == Endpoint(kind="mysql", host="127.0.0.1", port=3306, user="root")
    assert handle.extra["cloud_endpoint"]["host"].endswith(".rds.amazonaws.com")
    # The overridden endpoint is a real server: local MariaDB answers on it.
    out = subprocess.run(
        [
            "mariadb",
            "-h",
            handle.endpoint.host,
            "-P",
            str(handle.endpoint.port),
            "-u",
            "root",
            "-N",
            "-e",
            "SELECT 1",
        ],
        capture_output=True,
        text=True,
        timeout=10,
        check=False,
    )
    assert out.stdout.strip() == "1"
    PROVIDERS["aws_rds"].teardown(handle, ctx)


@pytest.mark.usefixtures("moto_endpoint")
def test_ec2_host_with_four_volumes_provisioned_and_torn_down():
    rec = Recorder()
    ctx = make_ctx(rec)
    handle = PROVIDERS["aws_ec2"].provision(S3_HOST, ctx)
    ec2 = aws_client("ec2")
    instance = ec2.describe_instances(InstanceIds=[handle.ids["instance"]])["Reservations"][0][
        "Instances"
    ][0]
    attached = {
        v["Attachments"][0]["Device"]: v["Size"]
        for v in ec2.describe_volumes(VolumeIds=handle.ids["volumes"])["Volumes"]
    }
    behaviour = ec2.describe_instance_attribute(
        InstanceId=instance["InstanceId"], Attribute="instanceInitiatedShutdownBehavior"
    )
    assert (instance["InstanceType"], instance["KeyName"]) == ("c1.medium", "bb-r1-key")
    assert attached == {"/dev/sdf": 20, "/dev/sdg": 20, "/dev/sdh": 20, "/dev/sdi": 20}
    assert behaviour["InstanceInitiatedShutdownBehavior"]["Value"] == "terminate"
    assert {t["Key"]: t["Value"] for t in instance["Tags"]}["token"] == "bb-r1-c1-medium"
    assert rec.secrets["bb-r1-key-private-key"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert handle.ssh == {
        "host": instance["PublicIpAddress"],
        "port": 22,
        "user": "ec2-user",
        "credential": "bb-r1-key-private-key",
        "known_host_key": None,
    }
    kinds = [(event, kind) for event, kind, *_ in rec.events]
    assert (
        kinds
        == [
            ("create", "security_group"),
            ("created", "security_group"),
            ("create", "key_pair"),
            ("created", "key_pair"),
            ("create", "ec2_instance"),
            ("created", "ec2_instance"),
        ]
        + [("create", "volume"), ("created", "volume")] * 4
    )

    PROVIDERS["aws_ec2"].teardown(Handle.from_dict(handle.to_dict()), ctx)
    assert leftovers() == NOTHING
    assert PROVIDERS["aws_ec2"].exists(handle, ctx) is False


@pytest.mark.usefixtures("moto_endpoint")
def test_ec2_provision_twice_returns_same_ids():
    ctx = make_ctx()
    first = PROVIDERS["aws_ec2"].provision(S3_HOST, ctx)
    second = PROVIDERS["aws_ec2"].provision(S3_HOST, ctx)
    assert second.ids == first.ids
    assert leftovers() == dict(
        NOTHING, instances=1, volumes=5, key_pairs=1, groups=1
    )  # + root volume
    PROVIDERS["aws_ec2"].teardown(second, ctx)
    assert leftovers() == NOTHING


@pytest.mark.usefixtures("moto_endpoint")
def test_ec2_failure_mid_provision_leaves_nothing():
    def on_create(kind, token, tags):
        if token.endswith("-v2"):
            raise RuntimeError("row insert failed")

    with pytest.raises(RuntimeError):
        PROVIDERS["aws_ec2"].provision(S3_HOST, make_ctx(on_create=on_create))
    assert leftovers() == NOTHING


@pytest.mark.usefixtures("moto_endpoint")
def test_ec2_cancel_during_provisioning_leaves_nothing():
    ctx = make_ctx()

    def on_created(kind, token, cloud_id):
        if kind == "ec2_instance":
            ctx.cancel.set()  # the user pressed cancel while the instance starts

    ctx.on_created = on_created
    with pytest.raises(RunnerError) as caught:
        PROVIDERS["aws_ec2"].provision(S3_HOST, ctx)
    assert (caught.value.message, caught.value.permanent) == (
        f"cancelled while waiting for instance {caught.value.message.split()[-1]}",
        False,
    )
    ctx.cancel.clear()
    assert leftovers() == NOTHING


@pytest.mark.usefixtures("moto_endpoint")
def test_ec2_invalid_zone_is_permanent_error():
    with pytest.raises(RunnerError) as caught:
        PROVIDERS["aws_ec2"].provision(
            dict(S1_CLIENT, availability_zone="ap-northeast-1z"), make_ctx()
        )
    assert (caught.value.message, caught.value.permanent) == (
        "run instance: InvalidParameterValue: Invalid Availability Zone (ap-northeast-1z)",
        True,
    )
    assert leftovers() == NOTHING


@pytest.mark.usefixtures("moto_endpoint")
def test_connect_via_ssh_bastion_overrides_host():
    spec = dict(
        S1_CLIENT,
        connect_via={
            "ssh": {"host": "127.0.0.1", "port": 2222, "user": "bench", "credential": "k"}
        },
    )
    ctx = make_ctx()
    handle = PROVIDERS["aws_ec2"].provision(spec, ctx)
    assert handle.ssh == {
        "host": "127.0.0.1",
        "port": 2222,
        "user": "bench",
        "credential": "k",
        "known_host_key": None,
    }
    PROVIDERS["aws_ec2"].teardown(handle, ctx)
    assert leftovers() == NOTHING


@pytest.mark.usefixtures("moto_endpoint")
def test_reaper_deletes_expired_and_leaves_unexpired_and_untagged():
    old = make_ctx(run_id="old", expires=timedelta(hours=-1))
    new = make_ctx(run_id="new")
    PROVIDERS["aws_rds"].provision(S1_IOPS, old)
    PROVIDERS["aws_ec2"].provision(dict(S3_HOST, volumes={"count": 2, "size_gb": 20}), old)
    kept_db = PROVIDERS["aws_rds"].provision(S1_IOPS, new)
    kept_host = PROVIDERS["aws_ec2"].provision(S1_CLIENT, new)
    ec2 = aws_client("ec2")
    foreign = ec2.create_volume(AvailabilityZone="ap-northeast-1a", Size=1)["VolumeId"]

    reaped = reap(boto3.Session(region_name=REGION), poll_interval=0.05, wait_timeout=20)

    assert sorted((r.kind, r.run) for r in reaped) == sorted(
        [
            ("rds_instance", "old"),
            ("db_parameter_group", "old"),
            ("ec2_instance", "old"),
            ("key_pair", "old"),
            ("security_group", "old"),
        ]
    )  # the volumes went with their instance (DeleteOnTermination)
    assert PROVIDERS["aws_rds"].exists(kept_db, new) and PROVIDERS["aws_ec2"].exists(kept_host, new)
    assert ec2.describe_volumes(VolumeIds=[foreign])["Volumes"][0]["State"] == "available"
    assert leftovers() == dict(
        NOTHING, db_instances=1, parameter_groups=1, instances=1, volumes=2, key_pairs=1, groups=1
    )


CRASH = """
import os, signal, sys
from datetime import datetime, timedelta, timezone
from runners.providers import PROVIDERS, Account, ProvisionContext
def on_created(kind, token, cloud_id):
    if kind == sys.argv[2]:
        os.kill(os.getpid(), signal.SIGKILL)  # the worker dies right after the create call
ctx = ProvisionContext(run_id="crash", team="t", owner="o", region="ap-northeast-1",
    account=Account(key_id="testing", secret="testing"),
    expires_at=datetime.now(timezone.utc) + timedelta(hours=1), on_created=on_created, poll_interval=0.05)
PROVIDERS[sys.argv[1]].provision({"provider": sys.argv[1], "name": "x", "instance_class": "db.t1.micro",
    "instance_type": "c1.medium", "volumes": {"count": 2, "size_gb": 20}}, ctx)
"""


@pytest.mark.parametrize("provider, kind", [("aws_rds", "rds_instance"), ("aws_ec2", "volume")])
@pytest.mark.usefixtures("moto_endpoint")
def test_reaper_cleans_up_after_worker_killed_after_create(provider, kind):
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", CRASH, provider, kind],
        cwd=root,
        env=dict(os.environ),
        timeout=60,
        check=False,
    )
    assert proc.returncode == -9
    assert leftovers() != NOTHING
    later = NOW + timedelta(hours=3)
    reap(boto3.Session(region_name=REGION), now=later, poll_interval=0.05, wait_timeout=20)
    assert leftovers() == NOTHING


@pytest.mark.usefixtures("moto_endpoint")
def test_reaper_known_orphan_runs_are_deleted_before_expiry():
    PROVIDERS["aws_ec2"].provision(S1_CLIENT, make_ctx(run_id="gone"))
    reaped = reap(
        boto3.Session(region_name=REGION), runs={"gone"}, poll_interval=0.05, wait_timeout=20
    )
    assert sorted(r.kind for r in reaped) == ["ec2_instance", "key_pair", "security_group"]
    assert leftovers() == NOTHING


def test_static_provider_balancer_with_nodes():
    spec = {
        "kind": "mysql",
        "user": "sbuser",
        "credential": "sb-password",
        "nodes": [{"host": "10.0.0.1"}, {"host": "10.0.0.2", "port": 3307}],
        "via": {"host": "lb.internal", "port": 3306},
        "ssh": {"host": "db8.internal", "user": "ops", "credential": "ops-key"},
    }
    handle = get_provider("static").provision(spec, None)
    assert handle.endpoint == Endpoint(kind="mysql", host="lb.internal", port=3306, user="sbuser")
    assert handle.extra == {
        "nodes": [{"host": "10.0.0.1", "port": 3306}, {"host": "10.0.0.2", "port": 3307}],
        "credential": "sb-password",
    }
    assert handle.ssh == {
        "host": "db8.internal",
        "port": 22,
        "user": "ops",
        "credential": "ops-key",
        "known_host_key": None,
    }


@pytest.mark.parametrize(
    "spec, param",
    [
        ({"kind": "mysql", "host": "db; rm -rf /"}, "host"),
        ({"kind": "mysql", "host": "db", "port": 70000}, "port"),
        ({"kind": "oracle", "host": "db"}, "kind"),
        ({"kind": "mysql", "nodes": [{"host": "a b"}]}, "nodes[0].host"),
    ],
)
def test_static_provider_refuses_bad_spec(spec, param):
    with pytest.raises(ValidationError) as caught:
        get_provider("static").provision(spec, None)
    assert caught.value.param == param


def test_local_provider_points_at_loopback():
    handle = get_provider("local").provision({"kind": "postgres", "user": "postgres"}, None)
    assert handle.endpoint == Endpoint(
        kind="postgres", host="127.0.0.1", port=5432, user="postgres"
    )


def test_get_provider_unknown_lists_known():
    with pytest.raises(KeyError, match="known: static, local, aws_rds, aws_ec2"):
        get_provider("gcp")


@pytest.mark.parametrize(
    "spec, param",
    [
        (dict(S1_IOPS, parameters={"sql_mode": "x"}), "parameters.sql_mode"),
        (
            dict(S1_IOPS, parameters={"innodb_io_capacity": "1; drop"}),
            "parameters.innodb_io_capacity",
        ),
        (dict(S1_IOPS, instance_class="m2.4xlarge"), "instance_class"),
        (dict(S1_IOPS, iops=10), "iops"),
        (dict(S1_IOPS, engine="oracle-ee"), "engine"),
    ],
)
def test_rds_refuses_bad_spec_before_any_call(spec, param):
    rec = Recorder()
    with pytest.raises(ValidationError) as caught:
        PROVIDERS["aws_rds"].provision(spec, make_ctx(rec, endpoint_url="http://127.0.0.1:9"))
    assert (caught.value.param, rec.events) == (param, [])


def test_raid0_script_for_four_volumes():
    assert raid0_script(["/dev/sdf", "/dev/sdg", "/dev/sdh", "/dev/sdi"], "/data", "xfs") == [
        "mdadm --create /dev/md0 --run --level=0 --raid-devices=4 /dev/sdf /dev/sdg /dev/sdh /dev/sdi",
        "mkfs.xfs -f -b size=4096 -i size=512 /dev/md0",
        "mkdir -p /data",
        "mount -o noatime,logbufs=8 /dev/md0 /data",
    ]


def test_raid0_script_single_volume_needs_no_array():
    assert raid0_script(["/dev/sdf"], "/data", "xfs") == [
        "mkfs.xfs -f -b size=4096 -i size=512 /dev/sdf",
        "mkdir -p /data",
        "mount -o noatime,logbufs=8 /dev/sdf /data",
    ]


@pytest.mark.parametrize(
    "devices, mount",
    [(["/dev/sdf;reboot"], "/data"), (["/dev/sdf"], "/data x"), (["/dev/sdf"], "rel")],
)
def test_raid0_script_refuses_unsafe_names(devices, mount):
    with pytest.raises(ValidationError):
        raid0_script(devices, mount)


def test_user_data_arms_dead_man_before_packages():
    text = user_data(("fio", "mdadm"), 130)
    assert text.startswith("#cloud-config\n")
    assert json.loads(text.split("\n", 1)[1]) == {
        "bootcmd": [["shutdown", "-h", "+130"]],
        "package_update": True,
        "packages": ["fio", "mdadm"],
    }


@pytest.mark.parametrize(
    "parts, name",
    [
        (("r1", None, "micro"), "bb-r1-micro"),
        (("Run_42", "cell 7", "M2--4XL"), "bb-run-42-cell-7-m2-4xl"),
        (("r" * 80,), "bb-" + "r" * 49 + "-" + "11318ee9b3"),
    ],
)
def test_resource_name_is_deterministic_and_rds_safe(parts, name):
    assert resource_name(*parts) == name
    assert len(name) <= 63


@pytest.mark.parametrize(
    "code, permanent",
    [
        ("AuthFailure", True),
        ("InvalidParameterValue", True),
        ("InvalidAMIID.NotFound", True),
        ("UnauthorizedOperation", True),
        ("Throttling", False),
        ("RequestLimitExceeded", False),
        ("InsufficientInstanceCapacity", False),
        ("InsufficientDBInstanceCapacity", False),
    ],
)
def test_aws_error_codes_map_to_permanent_flag(code, permanent):
    exc = ClientError({"Error": {"Code": code, "Message": "m"}}, "RunInstances")
    err = to_runner_error(exc, "run instance")
    assert (err.message, err.permanent) == (f"run instance: {code}: m", permanent)
