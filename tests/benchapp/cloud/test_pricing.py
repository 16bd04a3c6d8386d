"""Cost before and after a run, and price-performance (benchapp.cloud.pricing)."""

from __future__ import annotations

from datetime import timedelta
from importlib import import_module
from pathlib import Path

import pytest
import yaml
from django.apps import apps as django_apps
from django.utils import timezone

from benchapp.cloud import pricing
from benchapp.models import Cell, CloudResource, PriceEntry, Run
from runners.errors import ValidationError
from runners.providers import billing, default_prices
from tests.support.measures import measure

ROOT = Path(__file__).resolve().parents[3]


def team_example(name: str) -> dict:
    """An example whose provision specs name a team's AWS credential, as a
    team's plan must (docs/trust-model.md, "Cloud identity")."""
    plan = yaml.safe_load((ROOT / "examples" / name).read_text())
    for holder in [*plan["targets"], plan.get("client") or {}]:
        if isinstance(holder, dict) and isinstance(holder.get("provision"), dict):
            holder["provision"]["aws_credential"] = "team-aws"
    return plan


S1 = team_example("s1-rds-classes-moto.yaml")
S3 = team_example("s3-ebs-raid0-fio-moto.yaml")


@pytest.fixture
def seeded(db):
    """The price table as the data migration leaves it (transactional tests flush it)."""
    PriceEntry.objects.all().delete()
    import_module("benchapp.migrations.0003_priceentry").seed_prices(django_apps, None)


def s1_specs() -> list[dict]:
    return [t["provision"] for t in S1["targets"]] + [S1["client"]["provision"]]


def test_seeded_price_table_is_runners_default(seeded):
    assert pricing.price_table() == default_prices()
    assert PriceEntry.objects.count() == sum(len(t) for t in default_prices().values())


def test_estimate_s1_equals_runners_figure(team, seeded):
    estimate = pricing.estimate_run(team, S1)
    expected = billing.estimate(s1_specs(), 1.0, default_prices())
    assert estimate["total"] == expected.total
    # db.t1.micro + 5 GB gp2; db.m2.4xlarge + 1000 GB io1 + 10,000 IOPS; m3.2xlarge; 1 h.
    by_hand = (0.025 + 5 * 0.115 / 730) + (1.82 + 1000 * 0.125 / 730 + 10000 * 0.10 / 730) + 0.90
    assert estimate["total"] == pytest.approx(by_hand)
    assert (estimate["currency"], estimate["hours"], estimate["resources"]) == ("USD", 1.0, 3)
    assert [(line["target"], line["item"]) for line in estimate["lines"]] == [
        ("micro", "db.t1.micro"),
        ("micro", "RDS gp2 storage"),
        ("m2-4xlarge-iops", "db.m2.4xlarge"),
        ("m2-4xlarge-iops", "RDS io1 storage"),
        ("m2-4xlarge-iops", "RDS io1 IOPS"),
        ("@client", "m3.2xlarge"),
    ]
    assert sum(line["cost"] for line in estimate["lines"]) == pytest.approx(estimate["total"])
    assert "Illustrative" in estimate["note"]


def test_estimate_uses_the_edited_price_table(team, seeded):
    before = pricing.estimate_run(team, S1)["total"]
    PriceEntry.objects.filter(table="rds_instance_hour", key="db.t1.micro").update(price="1.025")
    assert pricing.estimate_run(team, S1)["total"] == pytest.approx(before + 1.0)


def test_estimate_s3_prices_one_instance_per_volume_count(team, seeded):
    estimate = pricing.estimate_run(team, S3)
    assert estimate["resources"] == 2 + 3  # two c1.medium, 1 + 2 volumes
    assert [line["item"] for line in estimate["lines"]] == [
        "c1.medium",
        "EBS standard 20 GB x1",
        "c1.medium",
        "EBS standard 20 GB x2",
    ]
    assert estimate["total"] == pytest.approx(2 * 0.16 + 3 * 20 * 0.05 / 730)


def test_estimate_refuses_an_unpriced_class(team, seeded):
    plan = yaml.safe_load(yaml.safe_dump(S1))
    plan["targets"][0]["provision"]["instance_class"] = "db.x9.huge"
    with pytest.raises(ValidationError, match="no price for 'db.x9.huge'"):
        pricing.estimate_run(team, plan)


def test_estimate_of_static_targets_uses_their_prices(team, seeded):
    plan = {
        "name": "s4",
        "tool": "sysbench",
        "sysbench_version": "0.4",
        "targets": [
            {"name": "rds-mysql", "host": "db.internal", "price_per_month": 187.18},
            {"name": "galera", "host": "h.internal", "price_per_month": 31200, "currency": "JPY"},
        ],
        "params": {"test": "oltp"},
        "axes": {"target": ["rds-mysql", "galera"]},
    }
    estimate = pricing.estimate_run(team, plan)
    assert [line["target"] for line in estimate["lines"]] == ["rds-mysql"]  # JPY not summed
    assert estimate["total"] == pytest.approx(187.18 / 730)


def test_run_hours_rounds_the_expected_length_up():
    from runners.plan import load_plan

    plan = load_plan(S3)  # 4 cells x (1 s + 3 s overhead) + 900 s provisioning
    assert pricing.run_seconds(plan) == 4 * 4 + 900
    assert pricing.run_hours(plan) == 1.0


def _resource(run, kind, spec, hours, target="micro", **extra):
    row = CloudResource.objects.create(
        team=run.team,
        run=run,
        provider="aws_rds",
        kind=kind,
        token=f"{kind}-{target}-{hours}",
        state="deleted",
        target_name=target,
        handle={"spec": spec, **extra},
    )
    start = timezone.now() - timedelta(hours=3)
    CloudResource.objects.filter(pk=row.pk).update(
        created_at=start, deleted_at=start + timedelta(hours=hours)
    )
    return row


def test_actual_cost_from_resource_lifetimes(team, seeded):
    run = Run.objects.create(team=team, name="r", tool="mysqlslap", document=S1)
    micro = S1["targets"][0]["provision"]
    _resource(run, "rds_instance", micro, 2)
    _resource(run, "volume", {"size_gb": 20, "type": "standard"}, 1, target="disk")
    _resource(run, "security_group", {}, 2, target="sg")
    cost = pricing.actual_cost(run)
    assert cost["total"] == pytest.approx(2 * (0.025 + 5 * 0.115 / 730) + 20 * 0.05 / 730, rel=1e-3)
    assert [line["item"] for line in cost["lines"]] == [
        "db.t1.micro",
        "RDS gp2 storage",
        "EBS standard 20 GB x1",
    ]


def test_hourly_price_of_resources(seeded):
    assert float(pricing.hourly_price("ec2_instance", {"instance_type": "c1.medium"})) == 0.16
    assert pricing.hourly_price("key_pair", {}) is None
    assert pricing.hourly_price("ec2_instance", {"instance_type": "zz.nope"}) is None


def test_price_performance_per_target(team, seeded):
    run = Run.objects.create(team=team, name="r", tool="mysqlslap", document=S1)
    for name in ("micro", "m2-4xlarge-iops"):
        spec = next(t["provision"] for t in S1["targets"] if t["name"] == name)
        _resource(
            run,
            "rds_instance",
            spec,
            1,
            target=name,
            slot={"target": name, "variant": "", "spec": spec},
        )
    for index, (target, qps) in enumerate(
        [("micro", 100.0), ("micro", 300.0), ("m2-4xlarge-iops", 900.0)]
    ):
        cell = Cell.objects.create(
            run=run,
            index=index,
            key=f"k{index}",
            target_name=target,
            status=Cell.SUCCEEDED,
            axes={"target": target},
        )
        measure(cell, "qps", qps)
        measure(cell, "avg_s", 1.0)
    micro_price = 0.025 + 5 * 0.115 / 730
    big_price = 1.82 + 1000 * 0.125 / 730 + 10000 * 0.10 / 730
    assert pricing.price_performance(run) == {
        "micro": {
            "dollars_per_hour": pytest.approx(micro_price),
            "qps_per_dollar_hour": pytest.approx(200.0 / micro_price),
        },
        "m2-4xlarge-iops": {
            "dollars_per_hour": pytest.approx(big_price),
            "qps_per_dollar_hour": pytest.approx(900.0 / big_price),
        },
    }
