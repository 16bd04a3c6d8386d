"""Providers own their cloud: resource kinds, the reaper's sweep, storage preparation."""

import pytest

from runners.errors import RunnerError
from runners.providers import PROVIDERS, Handle, counted_kinds, primary_kinds, sweepers


def test_cloud_kinds_come_from_the_providers():
    assert primary_kinds() == ("rds_instance", "ec2_instance", "cluster_host")
    assert counted_kinds() == ("rds_instance", "ec2_instance", "volume", "cluster_host")
    assert PROVIDERS["static"].PRIMARY_KINDS == () and PROVIDERS["local"].COUNTED_KINDS == ()


def test_providers_sharing_an_account_sweep_once():
    assert [p.SWEEP_GROUP for p in sweepers()] == ["aws"]


def test_storage_preparation_is_the_providers():
    no_secret = {}.__getitem__
    assert PROVIDERS["static"].prepare_storage(Handle("static"), {}, no_secret) == ("", "")
    ec2 = PROVIDERS["aws_ec2"]
    assert ec2.prepare_storage(Handle("aws_ec2"), {"volumes": {}}, no_secret) == ("", "")
    via = Handle("aws_ec2", extra={"connect_via": {"host": "127.0.0.1"}, "devices": ["/dev/sdf"]})
    done, note = ec2.prepare_storage(via, {"volumes": {"count": 2}}, no_secret)
    assert done == "skipped: connect_via" and "RAID0 assembly of 2 volume(s) skipped" in note


def test_raid0_logs_in_with_the_resolved_credential():
    handle = Handle(
        "aws_ec2",
        ssh={"host": "127.0.0.1", "port": 1, "user": "ec2-user", "credential": "key"},
        extra={"devices": ["/dev/sdf"]},
    )
    asked = []
    with pytest.raises(RunnerError, match="private key could not be read"):
        PROVIDERS["aws_ec2"].prepare_storage(
            handle, {"volumes": {"count": 1}}, lambda name: asked.append(name) or "not a key"
        )
    assert asked == ["key"]
