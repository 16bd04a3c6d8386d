"""No member spends the operator's cloud identity (docs/trust-model.md, "Cloud
identity"): a plan from the web, the API or a schedule that provisions or
reads a cloud instance names a team credential (aws_credential), and the
worker signs every AWS call with that key alone, never with its own
environment's or instance role's.

A recording AWS endpoint on 127.0.0.1 logs the access key id of every
request's Authorization header (and answers each with an error, so nothing
is ever created). The worker's environment holds its own AWS keys and points
boto3 at the recorder: a request signed by the worker's key would be seen."""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import transaction
from rest_framework.test import APIClient

from benchapp.models import Credential, Plan, Run
from benchapp.plans import planning
from benchapp.runs import orchestration
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES

pytestmark = pytest.mark.django_db(transaction=True)

WORKER_KEY = "AKIDWORKERAMBIENT01"
TEAM_KEY = "AKIDTEAMNAMED000001"
REGION = "ap-northeast-1"
SIGNED_BY = re.compile(r"Credential=([A-Z0-9]+)/")


class AwsRecorder:
    """An HTTP server that keeps the access key id of every request and refuses it."""

    def __init__(self):
        self.keys: list[str] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _refuse(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                found = SIGNED_BY.search(self.headers.get("Authorization", ""))
                recorder.keys.append(found.group(1) if found else "(unsigned)")
                body = (
                    b"<ErrorResponse><Error><Type>Sender</Type><Code>AccessDenied</Code>"
                    b"<Message>recorded</Message></Error></ErrorResponse>"
                )
                self.send_response(403)
                self.send_header("Content-Type", "text/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _refuse

            def log_message(self, *args):
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def aws_recorder():
    recorder = AwsRecorder()
    yield recorder
    recorder.close()


@pytest.fixture
def worker_env(aws_recorder, monkeypatch):
    """The worker's own AWS identity (and this process's), aimed at the recorder."""
    env = {
        "AWS_ENDPOINT_URL": aws_recorder.url,
        "AWS_ACCESS_KEY_ID": WORKER_KEY,
        "AWS_SECRET_ACCESS_KEY": "worker-secret",
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return env


@pytest.fixture
def team_aws(team):
    key = Credential(team=team, name="team-aws", kind="aws", username=TEAM_KEY)
    key.set_secret("team-secret")
    key.save()
    return key


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def rds_plan(**provision) -> dict:
    return {
        "name": "rds",
        "tool": "mysqlslap",
        "targets": [
            {
                "name": "rds",
                "kind": "mysql",
                "provision": {
                    "provider": "aws_rds",
                    "engine": "mysql",
                    "instance_class": "db.t1.micro",
                    "allocated_storage": 5,
                    "region": REGION,
                    **provision,
                },
            }
        ],
        "params": {"auto_generate_sql": True, "number_of_queries": 10},
    }


def watched_plan(**cloud) -> dict:
    """A run on the local MariaDB that says it is an existing RDS instance."""
    return {
        "name": "watched",
        "tool": "mysqlslap",
        "targets": [
            {
                "name": "shop",
                "kind": "mysql",
                "host": "127.0.0.1",
                "port": 3306,
                "user": "root",
                "cloud_instance": {
                    "provider": "aws_rds",
                    "db_instance": "shop-db-1",
                    "region": REGION,
                    **cloud,
                },
            }
        ],
        "params": {
            "auto_generate_sql": True,
            "number_of_queries": 20,
            "concurrency": 1,
            "iterations": 1,
        },
    }


def client_plan() -> dict:
    plan = watched_plan()
    del plan["targets"][0]["cloud_instance"]
    plan["client"] = {"provision": {"provider": "aws_ec2", "instance_type": "c1.medium"}}
    return plan


@pytest.mark.parametrize(
    "document, path",
    [
        (rds_plan(), "targets[0].provision"),
        (watched_plan(), "targets[0].cloud_instance"),
        (client_plan(), "client.provision"),
    ],
    ids=["provision", "cloud_instance", "client"],
)
def test_cloud_identity_a_team_plan_without_a_credential_is_refused_at_save(
    member, team, aws_recorder, worker_env, document, path
):
    client = _api(member)
    for url in ("/api/plans/", "/api/runs/"):
        response = client.post(url, {"document": document}, format="json")
        assert response.status_code == 400, response.content
        text = str(response.json())
        assert f"{path}: name an aws_credential" in text
        assert "never uses the worker's own" in text
    for origin in ("schedule", "manual"):
        with pytest.raises(planning.PlanRefused, match="name an aws_credential"):
            orchestration.start_run(team, document, origin=origin)
    assert not Plan.objects.filter(team=team).exists()
    assert not Run.objects.filter(team=team).exists()
    assert aws_recorder.keys == []


def test_cloud_identity_an_operator_plan_file_needs_the_setting(team, settings, worker_env):
    with pytest.raises(planning.PlanRefused, match="BENCHBOARD_CLI_CLOUD_IDENTITY=true"):
        orchestration.start_run(team, rds_plan(), origin="cli")
    settings.BENCHBOARD_CLI_CLOUD_IDENTITY = True
    with transaction.atomic():  # nothing is sent: no worker here
        run = orchestration.start_run(team, rds_plan(), origin="cli")
        assert run.origin == "cli"
        transaction.set_rollback(True)
    with pytest.raises(planning.PlanRefused, match="name an aws_credential"):
        orchestration.start_run(team, rds_plan(), origin="api")


def _forged(team, document: dict, stripped: dict, origin: str) -> Run:
    """A run saved through validation, whose stored document then loses its
    credential (validation bypassed in the database) before the worker reads it."""
    with transaction.atomic():  # provisioning is sent on commit, after the rewrite
        run = orchestration.start_run(team, document, origin=origin)
        Run.objects.filter(pk=run.pk).update(document=stripped)
    return run


def test_cloud_identity_the_worker_signs_with_the_named_credential_only(
    team, team_aws, aws_recorder, worker_env, start_worker, settings
):
    # The worker allows an operator's plan file its own identity: the control
    # that shows the recorder sees the worker's key when it is used.
    start_worker("cloud", **FAST_LEASES, **worker_env, BENCHBOARD_CLI_CLOUD_IDENTITY="true")

    forged = _forged(team, rds_plan(aws_credential="team-aws"), rds_plan(), "api")
    wait_for(lambda: finished(forged), timeout=120)
    assert forged.status == Run.FAILED
    assert "name an aws_credential" in forged.error
    assert aws_recorder.keys == []  # refused before any call: nothing signed at all

    named = orchestration.start_run(team, rds_plan(aws_credential="team-aws"), origin="api")
    wait_for(lambda: finished(named), timeout=120)
    assert named.status == Run.FAILED  # the recorder refuses every call
    assert aws_recorder.keys and set(aws_recorder.keys) == {TEAM_KEY}

    # (The named run's teardown may still be retrying with the team's key.)
    settings.BENCHBOARD_CLI_CLOUD_IDENTITY = True  # as the worker's
    operator = orchestration.start_run(team, rds_plan(), origin="cli")
    wait_for(lambda: finished(operator), timeout=120)
    assert WORKER_KEY in aws_recorder.keys
    assert set(aws_recorder.keys) == {TEAM_KEY, WORKER_KEY}


def test_cloud_identity_cloudwatch_is_read_with_the_named_credential_only(
    team, team_aws, aws_recorder, worker_env, start_worker
):
    start_worker("watch", **FAST_LEASES, **worker_env)
    forged = _forged(team, watched_plan(aws_credential="team-aws"), watched_plan(), "api")
    wait_for(lambda: finished(forged), timeout=180)
    assert forged.status == Run.SUCCEEDED, [c.error for c in forged.cells.all()]
    assert aws_recorder.keys == []  # its monitoring was not read with the worker's key

    named = orchestration.start_run(team, watched_plan(aws_credential="team-aws"), origin="api")
    wait_for(lambda: finished(named), timeout=180)
    assert named.status == Run.SUCCEEDED, [c.error for c in named.cells.all()]
    wait_for(lambda: aws_recorder.keys, timeout=60)
    assert set(aws_recorder.keys) == {TEAM_KEY}


def test_cloud_identity_a_session_has_the_named_keys_or_none(tmp_path, monkeypatch, worker_env):
    """Keys given: no profile, file, environment key or instance role can
    replace them; no keys (Account()): no session at all."""
    from datetime import UTC, datetime

    from runners.errors import RunnerError
    from runners.providers import Account, ProvisionContext
    from runners.providers.aws_common import session

    files = tmp_path / "credentials"
    files.write_text("[default]\naws_access_key_id = AKIDFROMFILE\naws_secret_access_key = x\n")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(files))
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")

    def context(account):
        return ProvisionContext(
            run_id="r", team="t", owner="o", expires_at=datetime.now(UTC), account=account
        )

    named = session(context(Account(key_id=TEAM_KEY, secret="s")), REGION)
    assert named.get_credentials().access_key == TEAM_KEY
    assert named.client("rds")._request_signer._credentials.access_key == TEAM_KEY
    with pytest.raises(RunnerError, match="name an aws_credential") as refused:
        session(context(Account()), REGION)
    assert refused.value.permanent
