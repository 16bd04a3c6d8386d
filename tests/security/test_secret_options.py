"""A stored secret cannot carry client options (docs/trust-model.md): a secret with
a line break, NUL or another control character is refused by the credential form
and the API, and every writer of a client option file ([client] files, pgpass)
refuses such a value again, writing nothing. The crafted option is real: written
into a [client] file by hand, `tee=` makes the mysql client create a canary file;
through the project's writers the canary never appears."""

from __future__ import annotations

import subprocess

import pytest
from rest_framework.test import APIClient

from benchapp.models import Credential
from runners.command import Endpoint
from runners.engines.mysql import option_file as mysql_option_file
from runners.engines.postgres import pgpass_line
from runners.errors import RunnerError
from runners.executors import LocalExecutor
from runners.facts import db_facts
from runners.tools import mysqlslap, pgbench, sysbench

pytestmark = pytest.mark.django_db


def crafted(canary) -> str:
    return f"pw\ntee={canary}\n#"


SECRETS = {
    "newline [client] section": "pw\n[client]\nplugin-dir=/tmp/evil",
    "NUL": "pw\x00plugin-dir=/tmp/evil",
    "carriage return": "pw\rinit-command=DROP DATABASE x",
    "tab": "pw\tx",
}


@pytest.mark.parametrize("label", SECRETS)
def test_the_credential_form_refuses_a_secret_with_control_characters(
    team_admin_client, team, label
):
    response = team_admin_client.post(
        "/credentials/new/",
        {"name": "evil", "kind": "password", "username": "", "secret": SECRETS[label]},
    )
    assert response.status_code in (200, 400)  # the form again, or NUL refused outright
    if response.status_code == 200:
        assert "contains a control character" in response.content.decode()
    assert not Credential.objects.filter(team=team, name="evil").exists()


@pytest.mark.parametrize("label", SECRETS)
def test_the_api_refuses_a_secret_with_control_characters(team_admin, team, label):
    client = APIClient()
    client.force_authenticate(team_admin)
    response = client.post(
        "/api/credentials/",
        {"name": "evil", "kind": "password", "secret": SECRETS[label]},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert not Credential.objects.filter(team=team, name="evil").exists()


def test_an_ssh_key_keeps_its_line_breaks_and_a_password_does_not(team_admin, team):
    client = APIClient()
    client.force_authenticate(team_admin)
    key = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk=\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    ok = client.post(
        "/api/credentials/", {"name": "k", "kind": "ssh_key", "secret": key}, format="json"
    )
    assert ok.status_code == 201, ok.content
    refused = client.post(
        "/api/credentials/", {"name": "p", "kind": "password", "secret": key}, format="json"
    )
    assert refused.status_code == 400
    assert "contains a control character (a line break)" in str(refused.json())


def test_the_crafted_option_is_real(tmp_path):
    """The control: a [client] file written without the check creates the canary."""
    canary = tmp_path / "canary"
    path = tmp_path / "my.cnf"
    path.write_text(f'[client]\nhost="127.0.0.1"\nuser="nobody_x"\npassword="{crafted(canary)}"\n')
    subprocess.run(
        ["mysql", f"--defaults-extra-file={path}", "-e", "SELECT 1"],
        capture_output=True,
        timeout=30,
    )
    assert canary.exists()


def test_every_option_file_writer_refuses_a_crafted_value(tmp_path):
    canary = tmp_path / "canary"
    mysql = Endpoint(kind="mysql", host="127.0.0.1", port=3306, user="root")
    postgres = Endpoint(kind="postgres", host="127.0.0.1", port=5432, user="u", database="d")
    secret = crafted(canary)
    writers = {
        "[client] file": lambda: mysql_option_file(_with(mysql, secret)),
        "pgpass": lambda: pgpass_line(_with(postgres, secret)),
        "mysqlslap": lambda: mysqlslap.build(
            {"auto_generate_sql": True}, _with(mysql, secret), "run"
        ),
        "pgbench": lambda: pgbench.build({"time": 1}, _with(postgres, secret), "run"),
        "sysbench pgsql": lambda: sysbench.build(
            {"test": "oltp_read_only", "time": 1}, _with(postgres, secret), "run"
        ),
        "sysbench mysql (NUL in MYSQL_PWD)": lambda: sysbench.build(
            {"test": "oltp_read_only", "time": 1}, _with(mysql, "pw\x00x"), "run"
        ),
    }
    for name, write in writers.items():
        with pytest.raises(RunnerError) as caught:
            write()
        assert caught.value.permanent, name
        assert "control character" in caught.value.message, name
    # And end to end: the facts query a run takes refuses before writing its file.
    executor = LocalExecutor()
    try:
        with pytest.raises(RunnerError, match="control character"):
            db_facts(executor, _with(mysql, secret))
    finally:
        executor.close()
    assert not canary.exists()


def _with(endpoint: Endpoint, password: str) -> Endpoint:
    from dataclasses import replace

    return replace(endpoint, password=password)
