"""aws_ec2: EC2 instances for client hosts and storage targets (S1 client, S3).

Spec (the `provision:` mapping):
  instance_type: c1.medium             ami: ami-... (else the SSM parameter below)
  ami_parameter: /aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64
  region, availability_zone             ssh_user: ec2-user
  volumes: {count, size_gb, type, iops, raid: 0, filesystem: xfs, mount: /data}
  dead_man_minutes: N (default: minutes left until the run's expiry)
  db_ports: [3306, 5432] (opened from the run's group)
  name, connect_via (see base.apply_connect_via)

The RAID0 assembly runs later on the instance over SSH: aws_ec2_setup's
raid0_script() gives its lines (pure, every element shlex-quoted).
"""

from __future__ import annotations

import re

from runners.command import Endpoint
from runners.errors import RunnerError, ValidationError
from runners.packages import host_packages
from runners.providers import aws_common as aws
from runners.providers.aws_account import AwsProvider
from runners.providers.aws_ec2_setup import dead_man_minutes, device_names, raid0_script, user_data
from runners.providers.base import Handle, PriceTable, ProvisionContext, apply_connect_via
from runners.providers.pricing import CostLine, hourly, unit_price

DEFAULT_AMI_PARAMETER = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
# What a provisioned host installs: every registered tool (runners.packages,
# read off the tool registry), plus this provider's own: mdadm and xfsprogs for
# striped volumes, and the database servers a host may play.
PACKAGES = (*host_packages(), "mdadm", "xfsprogs", "mariadb", "postgresql")
VOLUME_TYPES = ("standard", "gp2", "gp3", "io1", "io2", "st1", "sc1")
INSTANCE_TYPE = re.compile(r"^[a-z0-9]+\.[a-z0-9]+$")
MAX_VOLUMES = 16  # /dev/sdf .. /dev/sdu


def volume_spec(spec: dict) -> dict:
    """The validated volumes mapping (count 0 when absent)."""
    volumes = spec.get("volumes") or {}
    if not isinstance(volumes, dict):
        raise ValidationError("volumes", "must be a mapping with count, size_gb, type")
    count = volumes.get("count", 0)
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= MAX_VOLUMES:
        raise ValidationError(
            "volumes.count", f"must be an integer 0-{MAX_VOLUMES} (axes expand ${{volumes}} first)"
        )
    size = volumes.get("size_gb", 20)
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= 16384:
        raise ValidationError("volumes.size_gb", "must be an integer 1-16384")
    kind = volumes.get("type", "gp2")
    if kind not in VOLUME_TYPES:
        raise ValidationError("volumes.type", f"must be one of {', '.join(VOLUME_TYPES)}")
    iops = volumes.get("iops")
    if iops is not None and (isinstance(iops, bool) or not isinstance(iops, int) or iops < 100):
        raise ValidationError("volumes.iops", "must be an integer >= 100")
    return {**volumes, "count": count, "size_gb": size, "type": kind, "iops": iops}


def run_kwargs(spec: dict, token: str, ami: str, key_name: str, group_id: str, data: str) -> dict:
    """The run_instances arguments of a spec, minus tags. Pure."""
    kind = spec.get("instance_type")
    if not isinstance(kind, str) or not INSTANCE_TYPE.match(kind):
        raise ValidationError("instance_type", "must be an EC2 type such as c1.medium")
    kwargs = {
        "ImageId": ami,
        "InstanceType": kind,
        "MinCount": 1,
        "MaxCount": 1,
        "KeyName": key_name,
        "SecurityGroupIds": [group_id],
        "UserData": data,
        "InstanceInitiatedShutdownBehavior": "terminate",
        "ClientToken": token[:64],
    }
    if spec.get("availability_zone"):
        kwargs["Placement"] = {"AvailabilityZone": str(spec["availability_zone"])}
    return kwargs


def volume_lines(volumes: dict, hours: float, prices: dict) -> list[CostLine]:
    """Storage and provisioned IOPS of count EBS volumes ({count, size_gb, type, iops})."""
    count = volumes.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int):
        raise ValidationError("volumes.count", "must be a number (expand the axes first)")
    if count == 0:
        return []
    kind, size = volumes.get("type", "gp2"), volumes.get("size_gb", 20)
    price = unit_price(prices, "ebs_gb_month", kind, "volumes.type")
    item = f"EBS {kind} {size} GB x{count}"
    lines = [hourly(item, count * size, "GB-month", price, hours, per_month=True)]
    if volumes.get("iops"):
        price = unit_price(prices, "ebs_iops_month", kind, "volumes.iops")
        iops = count * volumes["iops"]
        lines.append(
            hourly(f"EBS {kind} IOPS x{count}", iops, "IOPS-month", price, hours, per_month=True)
        )
    return lines


def ec2_lines(spec: dict, hours: float, prices: dict) -> list[CostLine]:
    """Instance and attached volumes of an aws_ec2 spec over hours."""
    kind = spec.get("instance_type", "")
    price = unit_price(prices, "ec2_instance_hour", kind, "instance_type")
    line = hourly(kind, 1, "instance-hour", price, hours)
    return [line] + volume_lines(spec.get("volumes") or {"count": 0}, hours, prices)


def io_lines(resource: dict, prices: dict) -> list[CostLine]:
    """EBS standard bills per I/O request (S3 notes it): millions x price."""
    requests = resource.get("io_requests")
    kind = (resource.get("spec") or {}).get("type", "gp2")
    if not requests or kind not in prices.get("ebs_io_million", {}):
        return []
    price, millions = float(prices["ebs_io_million"][kind]), requests / 1e6
    return [CostLine(f"EBS {kind} I/O", millions, "million requests", price, 0.0, millions * price)]


class AwsEc2Provider(AwsProvider):
    """An instance, its key pair and group (per run), and N EBS volumes."""

    name = "aws_ec2"
    PRIMARY_KINDS = ("ec2_instance",)
    PRIMARY_ID = "instance"
    COUNTED_KINDS = ("ec2_instance", "volume")
    PRICED_KINDS = ("ec2_instance", "volume")
    # Round figures of the order AWS charged for these types (illustrative).
    PRICE_TABLES = {
        "ec2_instance_hour": PriceTable(
            "EC2 instance, per hour", {"m3.2xlarge": 0.90, "c1.medium": 0.16, "c1.xlarge": 0.64}
        ),
        "ebs_gb_month": PriceTable(
            "EBS storage, per GB-month", {"standard": 0.05, "gp2": 0.10, "io1": 0.125}
        ),
        "ebs_iops_month": PriceTable("EBS provisioned IOPS, per IOPS-month", {"io1": 0.065}),
        "ebs_io_million": PriceTable("EBS I/O, per million requests", {"standard": 0.05}),
    }

    def counted_resources(self, spec: dict) -> int:
        """The instance and its volumes (a count still holding ${axis} counts none)."""
        volumes = spec.get("volumes") or {}
        count = volumes.get("count", 0) if isinstance(volumes, dict) else 0
        return 1 + (count if isinstance(count, int) else 0)

    def target_kinds(self, spec: dict) -> tuple[str, ...]:
        """A host, or the database server its bootstrap installs (PACKAGES)."""
        return (spec["kind"],) if spec.get("kind") else ("host", "mysql", "postgres")

    def resource_spec(self, kind: str, spec: dict) -> dict:
        """A volume row keeps the volumes mapping; the instance row the whole spec."""
        return spec.get("volumes") if kind == "volume" else super().resource_spec(kind, spec)

    def price_lines(self, spec: dict, hours: float, prices: dict) -> list[CostLine]:
        return ec2_lines(spec, hours, prices)

    def resource_lines(self, resource: dict, hours: float, prices: dict) -> list[CostLine]:
        """An instance without its volumes (they are rows of their own), or
        one volume ({size_gb, type, iops}) with its I/O requests."""
        spec = resource.get("spec") or {}
        if resource["kind"] == "volume":
            return volume_lines({**spec, "count": 1}, hours, prices) + io_lines(resource, prices)
        return ec2_lines({**spec, "volumes": None}, hours, prices)

    def prepare_storage(self, handle: Handle, spec: dict, secret) -> tuple[str, str]:
        """Assemble the instance's EBS volumes as RAID0 + filesystem + mount, over SSH.

        A host reached through connect_via is not the cloud instance (in tests:
        this worker and a local directory), so the script is skipped and the
        skip noted.
        """
        from runners.command import Command
        from runners.executors import SSHExecutor

        volumes = spec.get("volumes") or {}
        if not volumes.get("count"):
            return "", ""
        if handle.extra.get("connect_via"):
            return "skipped: connect_via", (
                f"RAID0 assembly of {volumes['count']} volume(s) skipped "
                "(reached through connect_via; the tool runs against that address instead)."
            )
        lines = raid0_script(
            handle.extra["devices"], volumes.get("mount", "/data"), volumes.get("filesystem", "xfs")
        )
        key = secret(handle.ssh["credential"])
        with SSHExecutor(
            handle.ssh["host"], handle.ssh["port"], handle.ssh["user"], private_key=key
        ) as executor:
            done = executor.run(Command(argv=["sudo", "sh", "-c", " && ".join(lines)]), timeout=900)
        if done.exit_code != 0:
            raise RunnerError(
                f"RAID0 assembly failed (exit {done.exit_code}): {done.stderr.strip()[-300:]}",
                permanent=True,
            )
        return "raid0: " + "; ".join(lines), ""

    def provision(self, spec: dict, ctx: ProvisionContext) -> Handle:
        """Create (or reuse) the instance and its volumes; return its Handle.

        On failure, what was created is torn down before the error is raised.
        """
        volumes = volume_spec(spec)
        minutes = dead_man_minutes(spec, ctx.expires_at)
        region = spec.get("region") or ctx.region
        handle = Handle(provider=self.name, ids={"volumes": []}, extra={"region": region})
        ec2, ssm = aws.clients(ctx, region, "ec2", "ssm")
        try:
            return self._provision(spec, ctx, handle, ec2, ssm, volumes, minutes)
        except BaseException:
            aws.best_effort(self.teardown, handle, ctx)
            raise

    def _provision(self, spec, ctx, handle, ec2, ssm, volumes, minutes) -> Handle:
        token = aws.resource_name(ctx.run_id, ctx.cell_id, spec.get("name", "host"))
        group = aws.ensure_run_security_group(ec2, ctx, tuple(spec.get("db_ports", (3306, 5432))))
        handle.ids["security_group"] = group
        handle.ids["key_pair"] = key_name = self._ensure_key_pair(ec2, ctx)
        ami = spec.get("ami") or _ssm_ami(ssm, spec.get("ami_parameter", DEFAULT_AMI_PARAMETER))
        kwargs = run_kwargs(spec, token, ami, key_name, group, user_data(PACKAGES, minutes))
        instance = self._ensure_instance(ec2, ctx, token, kwargs)
        handle.ids["instance"] = instance["InstanceId"]
        instance = self._wait_running(ec2, ctx, instance["InstanceId"])
        zone = instance["Placement"]["AvailabilityZone"]
        for index, device in enumerate(device_names(volumes["count"])):
            volume_id = self._ensure_volume(ec2, ctx, f"{token}-v{index}", zone, volumes)
            handle.ids["volumes"].append(volume_id)
            self._attach(ec2, ctx, volume_id, instance["InstanceId"], device)
        handle.extra["devices"] = device_names(volumes["count"])
        handle.extra["volumes"] = {
            k: volumes.get(k) for k in ("raid", "filesystem", "mount") if volumes.get(k) is not None
        }
        address = instance.get("PublicIpAddress") or instance.get("PrivateIpAddress")
        handle.endpoint = Endpoint(kind="host", host=address)
        handle.ssh = {
            "host": address,
            "port": 22,
            "user": spec.get("ssh_user", "ec2-user"),
            "credential": f"{key_name}-private-key",
            "known_host_key": None,
        }
        return apply_connect_via(handle, spec)

    def _ensure_key_pair(self, ec2, ctx) -> str:
        """The run's key pair; the private key is made here and stored BEFORE import.

        Generating locally (instead of create_key_pair) means a crash after the
        cloud call can never leave a key pair whose private half was lost.
        """
        name = aws.resource_name(ctx.run_id, "key")
        tags = aws.notify_create(ctx, "key_pair", name)
        found = aws.ignore_gone("describe key pair", ec2.describe_key_pairs, KeyNames=[name])
        if found and found["KeyPairs"]:
            key_id = found["KeyPairs"][0].get("KeyPairId", name)
        else:
            private, public = _new_key()
            ctx.secret_sink(f"{name}-private-key", private)
            key_id = aws.call(
                "import key pair",
                ec2.import_key_pair,
                KeyName=name,
                PublicKeyMaterial=public,
                TagSpecifications=aws.tag_specs(("key-pair",), tags),
            ).get("KeyPairId", name)
        ctx.on_created("key_pair", name, key_id)
        return name

    def _ensure_instance(self, ec2, ctx, token, kwargs) -> dict:
        """Our live instance with that token, or a new one (tagged in the call)."""
        tags = aws.notify_create(ctx, "ec2_instance", token)
        live = aws.live_instances(ec2, [{"Name": "tag:token", "Values": [token]}])
        if live:
            instance = live[0]
        else:
            specs = aws.tag_specs(("instance", "volume"), tags)
            instance = aws.call(
                "run instance", ec2.run_instances, TagSpecifications=specs, **kwargs
            )["Instances"][0]
        ctx.on_created("ec2_instance", token, instance["InstanceId"])
        return instance

    def _wait_running(self, ec2, ctx, instance_id) -> dict:
        """The instance description once it is running."""
        seen = {}

        def running() -> bool:
            instance = _describe_instance(ec2, instance_id)
            state = instance["State"]["Name"] if instance else "gone"
            if state in ("shutting-down", "terminated", "gone"):
                raise RunnerError(
                    f"instance {instance_id} is {state} while starting", permanent=False
                )
            seen.update(instance)
            return state == "running"

        aws.wait_until(running, ctx, f"waiting for instance {instance_id}")
        return seen

    def _ensure_volume(self, ec2, ctx, token, zone, volumes) -> str:
        """Our volume with that token, or a new one in the instance's zone."""
        tags = aws.notify_create(ctx, "volume", token)
        found = aws.call(
            "describe volume",
            ec2.describe_volumes,
            Filters=[{"Name": "tag:token", "Values": [token]}],
        )["Volumes"]
        if found:
            volume_id = found[0]["VolumeId"]
        else:
            kwargs = {
                "AvailabilityZone": zone,
                "Size": volumes["size_gb"],
                "VolumeType": volumes["type"],
            }
            if volumes.get("iops"):
                kwargs["Iops"] = volumes["iops"]
            volume_id = aws.call(
                "create volume",
                ec2.create_volume,
                TagSpecifications=aws.tag_specs(("volume",), tags),
                ClientToken=token[:64],
                **kwargs,
            )["VolumeId"]
        ctx.on_created("volume", token, volume_id)
        return volume_id

    def _attach(self, ec2, ctx, volume_id, instance_id, device) -> None:
        """Attach (unless already attached here) and mark DeleteOnTermination.

        DeleteOnTermination makes the dead-man shutdown take the volumes too.
        """
        aws.wait_until(
            lambda: aws.volume_state(ec2, volume_id) in ("available", "in-use"),
            ctx,
            f"creating {volume_id}",
        )
        attachments = aws.describe_volume(ec2, volume_id).get("Attachments", [])
        if not any(a["InstanceId"] == instance_id for a in attachments):
            aws.call(
                "attach volume",
                ec2.attach_volume,
                VolumeId=volume_id,
                InstanceId=instance_id,
                Device=device,
            )
        aws.wait_until(
            lambda: _attached(ec2, volume_id, instance_id), ctx, f"attaching {volume_id}"
        )
        aws.call(
            "set DeleteOnTermination",
            ec2.modify_instance_attribute,
            InstanceId=instance_id,
            BlockDeviceMappings=[{"DeviceName": device, "Ebs": {"DeleteOnTermination": True}}],
        )

    def teardown(self, handle: Handle, ctx: ProvisionContext) -> None:
        """Terminate and wait; delete leftover volumes, then key pair and group if unused."""
        ctx = ctx.for_teardown()
        ec2, rds = aws.clients(ctx, handle.extra.get("region"), "ec2", "rds")
        instance_id = handle.ids.get("instance")
        if instance_id:
            aws.ignore_gone(
                "terminate instance", ec2.terminate_instances, InstanceIds=[instance_id]
            )
            aws.wait_until(lambda: _terminated(ec2, instance_id), ctx, f"terminating {instance_id}")
        for volume_id in handle.ids.get("volumes", []):
            aws.delete_volume(ec2, ctx, volume_id)
        aws.delete_key_pair_if_unused(ec2, handle.ids.get("key_pair"))
        aws.delete_security_group_if_unused(ec2, rds, handle.ids.get("security_group"))

    def exists(self, handle: Handle, ctx: ProvisionContext) -> bool:
        """Whether the instance is alive or one of its volumes remains."""
        (ec2,) = aws.clients(ctx, handle.extra.get("region"), "ec2")
        instance_id = handle.ids.get("instance")
        if instance_id and not _terminated(ec2, instance_id):
            return True
        return any(aws.describe_volume(ec2, v) for v in handle.ids.get("volumes", []))


def _new_key() -> tuple[str, str]:
    """A fresh ed25519 key: (OpenSSH private key text, OpenSSH public key line)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.OpenSSH,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
        .decode()
    )
    return private, public


def _ssm_ami(ssm, parameter: str) -> str:
    """The AMI id published under an SSM public parameter."""
    return aws.call("look up AMI", ssm.get_parameter, Name=parameter)["Parameter"]["Value"]


def _describe_instance(ec2, instance_id: str) -> dict | None:
    found = aws.ignore_gone("describe instance", ec2.describe_instances, InstanceIds=[instance_id])
    reservations = found["Reservations"] if found else []
    return reservations[0]["Instances"][0] if reservations else None


def _terminated(ec2, instance_id: str) -> bool:
    instance = _describe_instance(ec2, instance_id)
    return instance is None or instance["State"]["Name"] == "terminated"


def _attached(ec2, volume_id: str, instance_id: str) -> bool:
    attachments = aws.describe_volume(ec2, volume_id).get("Attachments", [])
    return any(a["InstanceId"] == instance_id and a["State"] == "attached" for a in attachments)


# END
