"""Pricing: estimates and actual costs against hand-computed sums."""

from datetime import UTC, datetime, timedelta

import pytest

from runners.errors import ValidationError
from runners.providers import default_prices
from runners.providers.billing import actual, estimate
from runners.providers.pricing import NOTE, lifetime_hours, price_performance

S1_TARGETS = [
    {
        "provider": "aws_rds",
        "engine": "mysql",
        "instance_class": "db.t1.micro",
        "allocated_storage": 5,
    },
    {
        "provider": "aws_rds",
        "engine": "mysql",
        "instance_class": "db.m2.4xlarge",
        "allocated_storage": 1000,
        "iops": 10000,
    },
]
S1_CLIENT = {"provider": "aws_ec2", "instance_type": "m3.2xlarge"}
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def test_estimate_s1_two_targets_and_client_for_one_hour():
    cost = estimate(S1_TARGETS + [S1_CLIENT], hours=1)
    # micro 0.025 + 5 GB gp2 at 0.115/730; m2.4xlarge 1.82 + 1000 GB io1 at 0.125/730
    # + 10000 IOPS at 0.10/730; m3.2xlarge 0.90.
    hand = 0.025 + 5 * 0.115 / 730 + 1.82 + 1000 * 0.125 / 730 + 10000 * 0.10 / 730 + 0.90
    assert cost.total == pytest.approx(hand, rel=1e-12)
    assert [(line.item, line.quantity, line.unit) for line in cost.lines] == [
        ("db.t1.micro", 1, "instance-hour"),
        ("RDS gp2 storage", 5, "GB-month"),
        ("db.m2.4xlarge", 1, "instance-hour"),
        ("RDS io1 storage", 1000, "GB-month"),
        ("RDS io1 IOPS", 10000, "IOPS-month"),
        ("m3.2xlarge", 1, "instance-hour"),
    ]


@pytest.mark.parametrize(
    "instance_type, count, hand",
    [
        ("c1.medium", 1, 0.16 + 20 * 0.05 / 730),
        ("c1.medium", 16, 0.16 + 16 * 20 * 0.05 / 730),
        ("c1.xlarge", 4, 0.64 + 4 * 20 * 0.05 / 730),
    ],
)
def test_estimate_s3_host_with_striped_volumes(instance_type, count, hand):
    spec = {
        "provider": "aws_ec2",
        "instance_type": instance_type,
        "volumes": {"count": count, "size_gb": 20, "type": "standard"},
    }
    assert estimate([spec], hours=1).total == pytest.approx(hand, rel=1e-12)


def test_estimate_scales_with_hours_and_counts_static_price():
    static = {"provider": "static", "name": "db8", "price_per_hour": 0.5}
    assert estimate([S1_CLIENT, static, {"provider": "local"}], hours=2.5).total == pytest.approx(
        2.5 * 1.4
    )


@pytest.mark.parametrize(
    "spec, param",
    [
        ({"provider": "aws_rds", "instance_class": "db.x9.huge"}, "instance_class"),
        ({"provider": "aws_ec2", "instance_type": "z9.big"}, "instance_type"),
        (
            {
                "provider": "aws_ec2",
                "instance_type": "c1.medium",
                "volumes": {"count": "${volumes}"},
            },
            "volumes.count",
        ),
    ],
)
def test_estimate_unknown_class_names_it(spec, param):
    with pytest.raises(ValidationError) as caught:
        estimate([spec], hours=1)
    assert caught.value.param == param


def test_actual_from_lifetimes():
    resources = [
        {
            "kind": "rds_instance",
            "spec": S1_TARGETS[0],
            "started": T0,
            "ended": T0 + timedelta(minutes=90),
        },
        {
            "kind": "ec2_instance",
            "spec": {"instance_type": "c1.medium", "volumes": {"count": 4}},
            "started": T0,
            "ended": T0 + timedelta(hours=2),
        },
        {
            "kind": "volume",
            "spec": {"size_gb": 20, "type": "standard"},
            "started": T0,
            "ended": T0 + timedelta(hours=2),
            "io_requests": 3_000_000,
        },
        {"kind": "key_pair", "spec": {}, "started": T0, "ended": None},
    ]
    hand = 1.5 * (0.025 + 5 * 0.115 / 730) + 2 * 0.16 + 2 * 20 * 0.05 / 730 + 3 * 0.05
    assert actual(resources, now=T0 + timedelta(hours=5)).total == pytest.approx(hand, rel=1e-12)


def test_lifetime_of_running_resource_counts_until_now():
    assert lifetime_hours(T0, None, now=T0 + timedelta(minutes=45)) == 0.75


@pytest.mark.parametrize(
    "value, price, expected", [(600.0, 1.5, 400.0), (600.0, 0, None), (1.0, None, None)]
)
def test_price_performance_per_dollar_hour(value, price, expected):
    assert price_performance(value, price) == expected


def test_default_prices_cover_the_scenarios_and_say_illustrative():
    assert set(default_prices()["rds_instance_hour"]) == {
        "db.t1.micro",
        "db.m1.small",
        "db.m2.4xlarge",
    }
    assert set(default_prices()["ec2_instance_hour"]) == {"m3.2xlarge", "c1.medium", "c1.xlarge"}
    assert "Illustrative" in NOTE
