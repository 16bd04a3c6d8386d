"""What runs on a new EC2 instance (runners/providers/aws_ec2.py): its
cloud-config user data, the dead man's timer armed first; and, over SSH once
it runs, the RAID0 assembly, filesystem and mount of its volumes and the
read of their I/O scheduler. Pure: every element shlex-quoted.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from datetime import UTC, datetime

from runners.errors import ValidationError


def device_names(count: int) -> list[str]:
    """The attachment device names of count volumes: /dev/sdf, /dev/sdg, ..."""
    return [f"/dev/sd{chr(ord('f') + i)}" for i in range(count)]


FILESYSTEMS = {
    # S3's settings: 4 KiB blocks, 512-byte inodes; logbufs=8 is XFS-only.
    "xfs": (["mkfs.xfs", "-f", "-b", "size=4096", "-i", "size=512"], "noatime,logbufs=8"),
    "ext4": (["mkfs.ext4", "-F"], "noatime"),
}


def raid0_script(devices: list[str], mount: str, filesystem: str = "xfs") -> list[str]:
    """Shell lines that stripe devices as RAID0, make the filesystem and mount it.

    One device is formatted directly (mdadm refuses a 1-device array without
    --force, and there is nothing to stripe). Run as root over SSH; every element is shlex-quoted.
    """
    if filesystem not in FILESYSTEMS:
        raise ValidationError("volumes.filesystem", f"must be one of {', '.join(FILESYSTEMS)}")
    if not devices or not all(re.match(r"^/dev/[a-z0-9]+$", d) for d in devices):
        raise ValidationError("volumes", "devices must be names like /dev/sdf")
    if not isinstance(mount, str) or not re.match(r"^/[A-Za-z0-9_./-]*$", mount) or ".." in mount:
        raise ValidationError("volumes.mount", "must be an absolute path")
    mkfs, options = FILESYSTEMS[filesystem]
    target = devices[0] if len(devices) == 1 else "/dev/md0"
    lines = []
    if len(devices) > 1:
        create = [
            "mdadm",
            "--create",
            target,
            "--run",
            "--level=0",
            f"--raid-devices={len(devices)}",
        ]
        lines.append(shlex.join(create + list(devices)))
    lines += [
        shlex.join(mkfs + [target]),
        shlex.join(["mkdir", "-p", mount]),
        shlex.join(["mount", "-o", options, target, mount]),
    ]
    return lines


def scheduler_command(device: str) -> list[str]:
    """argv that prints a device's I/O scheduler (S3 notes it beside the results)."""
    return ["cat", f"/sys/block/{device.rsplit('/', 1)[-1]}/queue/scheduler"]


def dead_man_minutes(spec: dict, expires_at: datetime, now: datetime | None = None) -> int:
    """Minutes after boot when the instance powers itself off (and so terminates)."""
    if spec.get("dead_man_minutes") is not None:
        minutes = spec["dead_man_minutes"]
        if isinstance(minutes, bool) or not isinstance(minutes, int) or minutes < 5:
            raise ValidationError("dead_man_minutes", "must be an integer >= 5")
        return minutes
    now = now or datetime.now(UTC)
    if expires_at.tzinfo is None:
        expires_at = expires_at.replace(tzinfo=UTC)
    return max(10, math.ceil((expires_at - now).total_seconds() / 60))


def user_data(packages: tuple[str, ...], shutdown_minutes: int) -> str:
    """cloud-config user data: dead-man timer first (bootcmd), then the tools.

    The timer is armed before any package install so that a broken mirror
    cannot keep an instance alive; with InstanceInitiatedShutdownBehavior=
    terminate the power-off terminates it. JSON is valid YAML.
    """
    doc = {
        "bootcmd": [["shutdown", "-h", f"+{int(shutdown_minutes)}"]],
        "package_update": True,
        "packages": list(packages),
    }
    return "#cloud-config\n" + json.dumps(doc, indent=1) + "\n"
