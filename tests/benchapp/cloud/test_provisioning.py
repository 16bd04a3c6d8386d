"""Provisioned runs through a real worker, Redis, PostgreSQL and moto_server.

S1 and S3 run as plan files (examples/*-moto.yaml): the AWS lifecycle
happens in moto_server over real HTTP, the tool cells go through
connect_via to the local MariaDB and a local fio file. Faults moto never
produces by itself (a slow boot, a failing delete) come from `AwsFaults`, a
loopback HTTP proxy in front of moto that the worker talks to.
"""

from __future__ import annotations

import http.client
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest
import yaml

from benchapp.cloud import cloudreaper, pricing, provisioning
from benchapp.models import Cell, CloudResource, Credential, Run
from benchapp.plans import planning
from benchapp.runs import orchestration, recording
from tests.support.measures import stored
from tests.support.moto import moto_endpoint, moto_server  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[3]
REGION = "ap-northeast-1"
# Redis DB 11 is this file's own (the orchestration tests use 15); overridable
# so that two sessions running this file at once do not take each other's tasks.
# Developers running several test sessions at once may give this file its own
# Redis DB; by default it shares the suite's broker (CELERY_BROKER_URL).
BROKER = os.environ.get("BENCHBOARD_TEST_AWS_BROKER")
NOTHING = {"db_instances": 0, "instances": 0, "volumes": 0, "key_pairs": 0, "groups": 0}


# Team plans name the team's AWS credential (docs/trust-model.md): the
# examples' provision specs get this one, moto's keys stored as a team's.
TEAM_AWS = "moto-aws"


def example(name: str) -> dict:
    """An example plan whose provision specs name TEAM_AWS (unless they name one)."""
    plan = yaml.safe_load((ROOT / "examples" / name).read_text())
    clients = plan.get("client") if isinstance(plan.get("client"), list) else [plan.get("client")]
    for holder in [*plan["targets"], *clients]:
        if isinstance(holder, dict) and isinstance(holder.get("provision"), dict):
            holder["provision"].setdefault("aws_credential", TEAM_AWS)
    return plan


@pytest.fixture(autouse=True)
def team_aws(team):
    key = Credential(team=team, name=TEAM_AWS, kind="aws", username="testing")
    key.set_secret("testing")
    key.save()
    return key


def leftovers() -> dict[str, int]:
    """Live resources in moto (asked directly, not through the proxy)."""
    session = boto3.Session(region_name=REGION)
    ec2, rds = session.client("ec2"), session.client("rds")
    live = ec2.describe_instances(
        Filters=[{"Name": "instance-state-name", "Values": ["pending", "running", "stopped"]}]
    )
    groups = ec2.describe_security_groups(Filters=[{"Name": "tag:app", "Values": ["benchboard"]}])
    return {
        "db_instances": len(rds.describe_db_instances()["DBInstances"]),
        "instances": sum(len(r["Instances"]) for r in live["Reservations"]),
        "volumes": len(ec2.describe_volumes()["Volumes"]),
        "key_pairs": len(ec2.describe_key_pairs()["KeyPairs"]),
        "groups": len(groups["SecurityGroups"]),
    }


def wait_for(predicate, timeout=90, step=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError(f"condition not met within {timeout} s")


def finished(run):
    run.refresh_from_db()
    return not run.is_active


def all_deleted(run):
    rows = CloudResource.objects.filter(run=run)
    return rows.exists() and not rows.exclude(state="deleted").exists()


class AwsFaults:
    """A loopback HTTP proxy in front of moto_server that injects what moto
    never does: instances that stay `pending` (a slow boot) and actions that
    fail (an AWS error answer). Everything else is forwarded unchanged."""

    def __init__(self, upstream: str):
        self.upstream = urlsplit(upstream)
        self.hold_pending = threading.Event()
        self.fail: dict[str, int] = {}
        self.injected: list[str] = []
        faults = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                faults.forward(self)

            do_GET = do_PUT = do_DELETE = do_POST

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def forward(self, request) -> None:
        body = request.rfile.read(int(request.headers.get("Content-Length") or 0))
        action = (parse_qs(body.decode(errors="replace")).get("Action") or [""])[0]
        if self.fail.get(action, 0) > 0:
            self.fail[action] -= 1
            self.injected.append(action)
            error = (
                b"<ErrorResponse><Error><Type>Sender</Type><Code>InjectedFault</Code>"
                b"<Message>injected by the test</Message></Error>"
                b"<RequestId>1</RequestId></ErrorResponse>"
            )
            return self._reply(request, 400, {"Content-Type": "text/xml"}, error)
        upstream = http.client.HTTPConnection(
            self.upstream.hostname, self.upstream.port, timeout=30
        )
        headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
        upstream.request(request.command, request.path, body=body, headers=headers)
        response = upstream.getresponse()
        data = response.read()
        if action == "DescribeInstances" and self.hold_pending.is_set():
            data = data.replace(b"<name>running</name>", b"<name>pending</name>")
            data = data.replace(b"<code>16</code>", b"<code>0</code>")
        keep = {
            k: v
            for k, v in response.getheaders()
            if k.lower() not in ("content-length", "transfer-encoding", "connection")
        }
        self._reply(request, response.status, keep, data)
        upstream.close()

    @staticmethod
    def _reply(request, status, headers, data) -> None:
        request.send_response(status)
        for name, value in headers.items():
            request.send_header(name, value)
        request.send_header("Content-Length", str(len(data)))
        request.end_headers()
        request.wfile.write(data)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def broker():
    """Our own Redis DB for the test process's messages (the worker gets it by env)."""
    from benchapp.celery import app

    old = app.conf.broker_url
    if BROKER is None:
        yield old
        return
    app.conf.broker_url = BROKER
    app._pool = None
    app.amqp._producer_pool = None
    yield BROKER
    app.conf.broker_url = old
    app._pool = None
    app.amqp._producer_pool = None


@pytest.fixture
def faults(moto_endpoint):  # noqa: F811
    proxy = AwsFaults(moto_endpoint)
    yield proxy
    proxy.close()


@pytest.fixture
def cloud_settings(settings):
    settings.BENCHBOARD_HEARTBEAT_SECONDS = 1
    settings.BENCHBOARD_LEASE_SECONDS = 4
    settings.BENCHBOARD_CLOUD_POLL_SECONDS = 0.2
    settings.BENCHBOARD_CLOUD_WAIT_SECONDS = 30
    return settings


@pytest.fixture
def aws_worker(broker, moto_endpoint, faults, start_worker, cloud_settings):  # noqa: F811
    """start(**env): a worker whose AWS endpoint is the fault proxy in front of moto."""

    def start(**extra):
        env = {
            "CELERY_BROKER_URL": broker,
            "AWS_ENDPOINT_URL": faults.url,
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "AWS_EC2_METADATA_DISABLED": "true",
            "NO_PROXY": "127.0.0.1,localhost",
            "BENCHBOARD_HEARTBEAT_SECONDS": 1,
            "BENCHBOARD_LEASE_SECONDS": 4,
            "BENCHBOARD_CLOUD_POLL_SECONDS": 0.2,
            "BENCHBOARD_CLOUD_WAIT_SECONDS": 30,
            **extra,
        }
        return start_worker("aws", **env)

    return start


# ------------------------------------------------------------- scenarios


def test_s1_plan_provisions_runs_on_local_mariadb_and_tears_down(team, aws_worker):
    aws_worker()
    run = orchestration.start_run(team, example("s1-rds-classes-moto.yaml"))
    wait_for(lambda: finished(run), timeout=180)
    assert (run.status, run.error) == (Run.SUCCEEDED, ""), list(run.cells.values("key", "error"))
    cells = list(run.cells.all())
    assert sorted((c.target_name, c.axes["load_type"], c.status) for c in cells) == [
        ("m2-4xlarge-iops", "key", "succeeded"),
        ("m2-4xlarge-iops", "read", "succeeded"),
        ("micro", "key", "succeeded"),
        ("micro", "read", "succeeded"),
    ]
    # The host is in the uploaded my.cnf; moto's invented address does not resolve,
    # so success means the cells reached the local MariaDB through connect_via.
    assert not any("amazonaws" in c.command + str(c.facts) for c in cells)
    assert len(stored(runs=[run.pk], metrics=["avg_s"], group="")) == 4

    wait_for(lambda: all_deleted(run), timeout=60)
    rows = CloudResource.objects.filter(run=run)
    assert sorted((r.kind, r.target_name) for r in rows) == [
        ("ec2_instance", "@client"),
        ("key_pair", "@client"),
        ("rds_instance", "m2-4xlarge-iops"),
        ("rds_instance", "micro"),
        ("security_group", "micro"),
    ]
    assert all(r.cloud_id and r.deleted_at >= r.created_at for r in rows)
    micro = rows.get(kind="rds_instance", target_name="micro")
    assert micro.handle["endpoint"]["host"] == "127.0.0.1"
    assert micro.handle["extra"]["cloud_endpoint"]["host"].endswith(".rds.amazonaws.com")
    assert micro.price_per_hour is not None
    assert leftovers() == NOTHING
    # Generated master passwords and the run's private key went with their resources.
    assert not Credential.objects.filter(team=team, name__startswith="bb-").exists()
    assert pricing.actual_cost(run)["total"] > 0
    ratios = pricing.price_performance(run)
    assert set(ratios) == {"micro", "m2-4xlarge-iops"}
    assert ratios["micro"]["qps_per_dollar_hour"] > ratios["m2-4xlarge-iops"]["qps_per_dollar_hour"]


def test_s3_plan_one_instance_per_volume_count_raid_skipped(team, aws_worker):
    aws_worker()
    run = orchestration.start_run(team, example("s3-ebs-raid0-fio-moto.yaml"))
    wait_for(lambda: finished(run), timeout=180)
    assert (run.status, run.error) == (Run.SUCCEEDED, "")
    rows = stored(runs=[run.pk], metrics=["read_iops", "write_iops"], group="")
    assert len([m for m in rows if m.value > 0]) == 4
    assert "RAID0 assembly of 1 volume(s) skipped" in run.notes
    assert "RAID0 assembly of 2 volume(s) skipped" in run.notes

    wait_for(lambda: all_deleted(run), timeout=60)
    rows = CloudResource.objects.filter(run=run)
    instances = {r.handle["slot"]["variant"]: r for r in rows.filter(kind="ec2_instance")}
    assert set(instances) == {"volumes=1", "volumes=2"}
    assert [len(instances[v].handle["ids"]["volumes"]) for v in ("volumes=1", "volumes=2")] == [
        1,
        2,
    ]
    assert rows.filter(kind="volume").count() == 3
    assert instances["volumes=2"].handle["slot"]["storage"] == "skipped: connect_via"
    assert leftovers() == NOTHING
    assert set(pricing.price_performance(run)) == {"c1-medium volumes=1", "c1-medium volumes=2"}


# ---------------------------------------------------------------- refusals


def test_quota_exceeded_refused_before_any_create_call(team, moto_endpoint):  # noqa: F811
    team.max_cloud_resources = 2  # S1 needs 3: two DB instances and a client
    team.save()
    with pytest.raises(planning.PlanRefused) as refused:
        orchestration.start_run(team, example("s1-rds-classes-moto.yaml"))
    assert "needs 3 cloud resources" in str(refused.value)
    assert "quota is 2" in str(refused.value)
    assert (Run.objects.count(), CloudResource.objects.count()) == (0, 0)
    assert leftovers() == NOTHING


def test_budget_exceeded_refused_before_any_create_call(team, moto_endpoint):  # noqa: F811
    team.max_run_cost = 1
    team.save()
    with pytest.raises(planning.PlanRefused) as refused:
        orchestration.start_run(team, example("s1-rds-classes-moto.yaml"))
    assert "over the team's per-run budget of 1.00 USD" in str(refused.value)
    assert (Run.objects.count(), CloudResource.objects.count()) == (0, 0)
    assert leftovers() == NOTHING


def test_quota_counts_the_live_resources_of_other_runs(team):
    other = Run.objects.create(team=team, name="other", tool="fio", document={})
    for i in range(18):
        CloudResource.objects.create(
            team=team, run=other, provider="aws_ec2", kind="volume", token=f"t{i}", state="live"
        )
    with pytest.raises(planning.PlanRefused) as refused:
        orchestration.start_run(team, example("s1-rds-classes-moto.yaml"))
    assert "the team has 18 live" in str(refused.value)


# ------------------------------------------------------------------ faults


def provisioning_with_instance(run):
    """True once the run waits for its (held pending) EC2 instance."""
    run.refresh_from_db()
    return (
        run.status == Run.PROVISIONING
        and CloudResource.objects.filter(run=run, kind="ec2_instance").exclude(cloud_id="").exists()
    )


def test_worker_killed_after_create_call_reaper_leaves_nothing(
    team, aws_worker, faults, cloud_settings
):
    faults.hold_pending.set()
    worker = aws_worker()
    run = orchestration.start_run(team, example("s1-rds-classes-moto.yaml"))
    wait_for(lambda: provisioning_with_instance(run), timeout=60)
    worker.kill()
    assert leftovers()["instances"] == 1

    cloud_settings.BENCHBOARD_PROVISION_TIMEOUT = 0  # beat would wait 2 h
    counts = cloudreaper.reap_cloud()
    run.refresh_from_db()
    assert (counts["lost_runs"], run.status) == (1, Run.FAILED)
    assert run.error.startswith("provisioning failed: no progress for 0 s")
    assert set(run.cells.values_list("status", flat=True)) == {Cell.FAILED}
    assert leftovers() == NOTHING
    assert all_deleted(run)


def test_failure_while_waiting_fails_run_and_tears_down(team, aws_worker, faults):
    faults.hold_pending.set()
    aws_worker(BENCHBOARD_CLOUD_WAIT_SECONDS=2)
    run = orchestration.start_run(team, example("s1-rds-classes-moto.yaml"))
    wait_for(lambda: finished(run), timeout=60)
    assert run.status == Run.FAILED
    assert run.error.startswith("provisioning failed: timed out after 2 s waiting for instance")
    errors = set(run.cells.values_list("status", "error"))
    assert errors == {(Cell.FAILED, run.error)}
    wait_for(lambda: all_deleted(run), timeout=60)
    assert leftovers() == NOTHING


def test_cancel_during_provisioning_tears_down(team, aws_worker, faults):
    faults.hold_pending.set()
    aws_worker()
    run = orchestration.start_run(team, example("s1-rds-classes-moto.yaml"))
    wait_for(lambda: provisioning_with_instance(run), timeout=60)
    orchestration.cancel_run(run)
    wait_for(lambda: all_deleted(run), timeout=60)
    run.refresh_from_db()
    assert run.status == Run.CANCELLED
    assert set(run.cells.values_list("status", flat=True)) == {Cell.CANCELLED}
    assert leftovers() == NOTHING


def test_teardown_error_is_retried_by_the_task(team, aws_worker, faults):
    # Both DB instances' provider deletes fail, then the sweep's first delete:
    # the teardown task fails and Celery retries it.
    faults.fail["DeleteDBInstance"] = 3
    worker = aws_worker()
    run = orchestration.start_run(team, example("s1-rds-classes-moto.yaml"))
    wait_for(lambda: finished(run), timeout=180)
    assert run.status == Run.SUCCEEDED, list(run.cells.values_list("key", "error"))
    wait_for(lambda: all_deleted(run), timeout=90)
    assert faults.injected == ["DeleteDBInstance"] * 3
    log = worker.output()
    assert "Retry in" in log, [line for line in log.splitlines() if "teardown" in line]
    assert leftovers() == NOTHING


# ------------------------------------------------- in-process (no worker)


def test_cancel_after_provisioning_is_torn_down_by_reap_cloud(
    team,
    broker,
    moto_endpoint,  # noqa: F811
    cloud_settings,
):
    run = orchestration.start_run(team, example("s3-ebs-raid0-fio-moto.yaml"))
    provisioning.provision_run(run.pk)  # what the provision_run task does
    run.refresh_from_db()
    assert run.status == Run.RUNNING
    # 3 data volumes and the 2 instances' root volumes
    assert leftovers() == dict(NOTHING, instances=2, volumes=5, key_pairs=1, groups=1)
    plan, cell = recording.frozen_cell(run.cells.get(index=4))
    targets, client = provisioning.runtime_overrides(run, plan, cell)
    assert (targets["c1-medium"].host, targets["c1-medium"].ssh, client) == (
        "127.0.0.1",
        None,
        None,
    )
    assert targets["c1-medium"].provision is None

    orchestration.cancel_run(run)  # no running cell: the run ends at once, nothing tears down
    assert leftovers()["instances"] == 2
    counts = cloudreaper.reap_cloud()
    assert (counts["torn_down"], counts["errors"]) == (1, 0)
    assert leftovers() == NOTHING
    assert all_deleted(run)


def test_team_aws_credential_is_used_and_recorded(
    team,
    broker,
    moto_endpoint,  # noqa: F811
    cloud_settings,
):
    key = Credential(team=team, name="team-aws", kind="aws", username="AKIDTEAM")
    key.set_secret("team-secret-key")
    key.save()
    plan = example("s1-rds-classes-moto.yaml")
    for target in plan["targets"]:
        target["provision"]["aws_credential"] = "team-aws"
    plan["client"]["provision"]["aws_credential"] = "team-aws"
    run = orchestration.start_run(team, plan)
    provisioning.provision_run(run.pk)
    run.refresh_from_db()
    assert run.status == Run.RUNNING
    rows = CloudResource.objects.filter(run=run)
    assert {r.handle["credential"] for r in rows} == {"team-aws"}
    assert "team-secret-key" not in str(list(rows.values()))
    orchestration.cancel_run(run)
    assert provisioning.teardown_run(run.pk) == 5
    assert provisioning.teardown_run(run.pk) == 0  # idempotent
    assert leftovers() == NOTHING


def test_missing_aws_credential_fails_the_run_clearly(
    team,
    broker,
    moto_endpoint,  # noqa: F811
    cloud_settings,
):
    plan = example("s1-rds-classes-moto.yaml")
    plan["targets"][0]["provision"]["aws_credential"] = "nope"
    run = orchestration.start_run(team, plan)
    provisioning.provision_run(run.pk)
    run.refresh_from_db()
    message = (
        "provisioning failed: aws_credential 'nope': no AWS credential of that name in this team"
    )
    assert (run.status, run.error) == (Run.FAILED, message)
    assert set(run.cells.values_list("status", "error")) == {(Cell.FAILED, message)}
    assert leftovers() == NOTHING


def test_reap_cloud_deletes_expired_tagged_orphans(team, moto_endpoint, cloud_settings):  # noqa: F811
    ec2 = boto3.Session(region_name=REGION).client("ec2")
    tags = [
        {"Key": "app", "Value": "benchboard"},
        {"Key": "run", "Value": "9-old"},
        {"Key": "expires-at", "Value": "2020-01-01T00:00:00Z"},
    ]
    volume = ec2.create_volume(
        AvailabilityZone=REGION + "a",
        Size=20,
        TagSpecifications=[{"ResourceType": "volume", "Tags": tags}],
    )["VolumeId"]
    mine = ec2.create_volume(AvailabilityZone=REGION + "a", Size=20)["VolumeId"]  # untagged
    CloudResource.objects.create(
        team=team,
        provider="aws_ec2",
        kind="volume",
        token="v",
        cloud_id=volume,
        region=REGION,
        state="live",
    )
    cloudreaper.reap_cloud()
    assert [v["VolumeId"] for v in ec2.describe_volumes()["Volumes"]] == [mine]
    assert CloudResource.objects.get(token="v").state == "deleted"
