"""The cloud's monitoring of an RDS target (CloudWatch) in a cell's
telemetry and verdict: boto3 over real HTTP to moto_server, with the metric
data the test puts there, and the cells in the real PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import boto3
import pytest

from benchapp.cloud import cloudtelemetry, provisioning
from benchapp.models import Artifact, Cell, CellSeries, CloudResource, Credential, Target
from benchapp.plans.planning import resolve_stored_targets
from runners import verdict
from runners.providers import Account, Handle, ProvisionContext, get_provider
from tests.benchapp.results_data import make_run
from tests.support.measures import stored
from tests.support.moto import moto_endpoint, moto_server  # noqa: F401

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("moto_endpoint")]

REGION = "ap-northeast-1"
DB = "bb-cloudwatch-test-micro"


def put_minutes(start: datetime, name: str, values: list[float], unit: str = "None") -> None:
    """One datapoint per minute from start, as RDS publishes them."""
    cloudwatch = boto3.Session(region_name=REGION).client("cloudwatch")
    cloudwatch.put_metric_data(
        Namespace="AWS/RDS",
        MetricData=[
            {
                "MetricName": name,
                "Dimensions": [{"Name": "DBInstanceIdentifier", "Value": DB}],
                "Timestamp": start + timedelta(minutes=i),
                "Value": value,
                "Unit": unit,
            }
            for i, value in enumerate(values)
        ],
    )


def context() -> ProvisionContext:
    return ProvisionContext(
        run_id="cw",
        team="t",
        owner="o",
        account=Account(key_id="testing", secret="testing"),
        region=REGION,
        expires_at=datetime.now(UTC) + timedelta(hours=1),
    )


def handle() -> Handle:
    return Handle(provider="aws_rds", ids={"db_instance": DB}, extra={"region": REGION})


def window() -> tuple[datetime, datetime]:
    start = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=10)
    return start, start + timedelta(minutes=5, seconds=30)


def test_rds_metrics_are_read_per_minute_over_the_window():
    start, end = window()
    put_minutes(start - timedelta(minutes=3), "CPUUtilization", [5.0] * 3)  # before: left out
    put_minutes(start, "CPUUtilization", [40.0, 99.0, 99.5, 98.0, 99.0, 97.0])
    put_minutes(start, "CPUCreditBalance", [30.0, 20.0, 9.0, 2.0, 0.4, 0.0])
    put_minutes(start, "FreeableMemory", [512e6] * 6, unit="Bytes")

    series = get_provider("aws_rds").metrics(handle(), start, end, context())

    assert series["t"] == [0.0, 60.0, 120.0, 180.0, 240.0, 300.0]
    assert series["cpu_pct"] == [40.0, 99.0, 99.5, 98.0, 99.0, 97.0]
    assert series["cpu_credit_balance"][-1] == 0.0
    assert series["freeable_memory_mb"] == [512.0] * 6  # bytes read as MB
    assert "burst_balance_pct" not in series  # no data: no column


def test_a_target_without_data_gives_no_series():
    start, end = window()
    assert get_provider("aws_rds").metrics(handle(), start, end, context()) == {}


def rds_cell(team, start, end) -> Cell:
    """A cell of a run whose provisioned RDS instance was made with the team's credential."""
    cred = Credential(team=team, name="team-aws", kind="aws", username="AKIDTEAMKEY")
    cred.set_secret("team-secret")
    cred.save()
    run = make_run(team, tool="mysqlslap", cells=[({"target": "micro"}, 1, {"qps": 900.0})])
    cell = run.cells.get()
    cell.facts = {"telemetry": {"client": {"seconds": 300}}, "verdict": {"limit": "none"}}
    cell.save()
    Artifact.objects.create(
        cell=cell, attempt=1, phase="measure", started_at=start, finished_at=end
    )
    CloudResource.objects.create(
        team=team,
        run=run,
        target_name="micro",
        provider="aws_rds",
        kind="rds_instance",
        token=DB,
        cloud_id=DB,
        region=REGION,
        state="live",
        handle={
            **handle().to_dict(),
            "slot": {"target": "micro", "variant": ""},
            "credential": "team-aws",
        },
    )
    return cell


def test_credits_running_out_during_the_cell_give_the_burst_verdict(team):
    start, end = window()
    put_minutes(start, "CPUUtilization", [99.0] * 6)
    put_minutes(start, "CPUCreditBalance", [30.0, 20.0, 9.0, 2.0, 0.4, 0.0])
    cell = rds_cell(team, start, end)

    # Teardown reads the monitoring first (the instance is already gone in moto: fine).
    provisioning.teardown_run(cell.run_id)

    cell.refresh_from_db()
    cloud = cell.facts["telemetry"]["cloudwatch"]
    assert cloud["cpu_credit_balance"]["min"] == 0.0
    assert cloud["cpu_credit_balance"]["first"] == 30.0
    assert cell.facts["verdict"]["limit"] == "burst_credits"
    assert "fell from 30 to 0" in cell.facts["verdict"]["text"]
    # The CPU was busy too, and says so as the second finding.
    assert [f["code"] for f in cell.facts["verdict"]["findings"]] == ["burst_credits", "target_cpu"]
    series = CellSeries.objects.filter(cell=cell, source="cloudwatch")
    assert sorted(series.values_list("metric", flat=True)) == ["cpu_credit_balance", "cpu_pct"]
    # The summaries are measurements too (a results-page column), the tool's kept.
    figures = {v.metric: v.value for v in stored(cells=[cell.pk])}
    assert figures["telemetry.cloudwatch.cpu_credit_balance.min"] == 0.0
    assert figures["telemetry.cloudwatch.cpu_pct.mean"] == 99.0
    assert figures["qps"] == 900.0


def test_credits_left_give_no_burst_verdict(team):
    start, end = window()
    put_minutes(start, "CPUUtilization", [35.0] * 6)
    put_minutes(start, "CPUCreditBalance", [30.0, 29.5, 29.0, 28.0, 27.9, 27.0])
    cell = rds_cell(team, start, end)

    assert cloudtelemetry.collect(cell.run_id, ("rds_instance",), lambda row: context()) == 1

    cell.refresh_from_db()
    assert cell.facts["verdict"]["limit"] == "none"
    assert "cloud monitoring" in cell.facts["verdict"]["checked"]


def test_cells_with_telemetry_off_are_left_alone(team):
    start, end = window()
    put_minutes(start, "CPUCreditBalance", [0.0] * 6)
    cell = rds_cell(team, start, end)
    Cell.objects.filter(pk=cell.pk).update(facts={})

    assert cloudtelemetry.collect(cell.run_id, ("rds_instance",), lambda row: context()) == 0
    assert not CellSeries.objects.filter(cell=cell).exists()


def test_storage_burst_balance_rule():
    storage = {"burst_balance_pct": {"mean": 40.0, "max": 100.0, "min": 3.0, "first": 100.0}}
    finding = verdict.judge({}, None, {**storage, "seconds": 5})
    assert finding["limit"] == "burst_credits"
    assert "storage burst balance" in finding["text"]
    kept = {"burst_balance_pct": {"mean": 90.0, "max": 100.0, "min": 80.0, "first": 100.0}}
    assert verdict.judge({}, None, {**kept, "seconds": 5})["limit"] == "none"


def stored_rds_cell(team, start, end, **cloud) -> Cell:
    """A cell of a run on a stored target that names an existing RDS instance
    (its plan entry as the plan builder resolves it), measured over start-end."""
    cred = Credential(team=team, name="team-aws", kind="aws", username="AKIDTEAMKEY")
    cred.set_secret("team-secret")
    cred.save()
    spec = {"provider": "aws_rds", "db_instance": DB, "region": REGION, **cloud}
    Target.objects.create(
        team=team, name="shop", kind="mysql", host="shop.example", cloud_instance=spec
    )
    plan = {"params": {"concurrency": 4}, "axes": {"target": ["shop"]}, "targets": ["shop"]}
    document = resolve_stored_targets(plan, team)
    run = make_run(
        team, tool="mysqlslap", cells=[({"target": "shop"}, 1, {"qps": 700.0})], document=document
    )
    cell = run.cells.get()
    cell.facts = {"telemetry": {"client": {"seconds": 300}}, "verdict": {"limit": "none"}}
    cell.save()
    Artifact.objects.create(
        cell=cell, attempt=1, phase="measure", started_at=start, finished_at=end
    )
    return cell


def test_a_stored_target_naming_its_rds_instance_gets_its_cloudwatch_verdict(team):
    start, end = window()
    put_minutes(start, "CPUUtilization", [98.0] * 6)
    put_minutes(start, "CPUCreditBalance", [12.0, 6.0, 2.5, 0.9, 0.2, 0.0])
    put_minutes(start, "BurstBalance", [100.0, 99.0, 98.0, 97.0, 96.0, 95.0], unit="Percent")
    cell = stored_rds_cell(team, start, end, aws_credential="team-aws")

    # Nothing was provisioned: the run's end (teardown) still reads the instance's monitoring.
    assert not CloudResource.objects.filter(run=cell.run).exists()
    provisioning.teardown_run(cell.run_id)

    cell.refresh_from_db()
    cloud = cell.facts["telemetry"]["cloudwatch"]
    assert cloud["cpu_credit_balance"]["first"] == 12.0
    assert cloud["burst_balance_pct"]["min"] == 95.0
    assert cell.facts["verdict"]["limit"] == "burst_credits"
    assert "fell from 12 to 0" in cell.facts["verdict"]["text"]
    assert [f["code"] for f in cell.facts["verdict"]["findings"]] == ["burst_credits", "target_cpu"]
    figures = {v.metric: v.value for v in stored(cells=[cell.pk])}
    assert figures["telemetry.cloudwatch.cpu_pct.mean"] == 98.0
    assert figures["qps"] == 700.0


def test_a_stored_targets_instance_is_read_with_the_teams_credential(team):
    start, end = window()
    put_minutes(start, "CPUCreditBalance", [0.0] * 6)
    cell = stored_rds_cell(team, start, end, aws_credential="no-such-credential")

    # An unknown credential: nothing read, the run's end goes on (telemetry is context).
    provisioning.teardown_run(cell.run_id)

    cell.refresh_from_db()
    assert "cloudwatch" not in cell.facts["telemetry"]
    assert cell.facts["verdict"]["limit"] == "none"
    assert not CellSeries.objects.filter(cell=cell, source="cloudwatch").exists()
