"""Share pages show no host names, addresses, ports or user names: not in
cell errors, parameters, host facts, labels or chart data."""

import pytest

from benchapp.accounts.redact import redact_text
from benchapp.histories import comparisons
from benchapp.models import Cell, Target
from tests.benchapp.results_data import add_series, make_run

MYSQL_DOWN = "Can't connect to MySQL server on '10.1.2.3:3306' (111)"
DENIED = "Access denied for user 'bench'@'db.internal' (using password: YES)"
PG_FAILED = (
    'connection to server at "pg.corp.example.com" (10.9.9.9), port 5433 failed: '
    'FATAL:  password authentication failed for user "reporter"'
)
SSH_FAILED = "ssh: connect to host bastion.example.com port 2222: Connection refused"
REDIS_DOWN = "Could not connect to Redis at 10.0.0.5:6379: Connection refused"
LEAKS = [
    "10.1.2.3",
    "3306",
    "db.internal",
    "'bench'",
    "pg.corp.example.com",
    "10.9.9.9",
    "5433",
    "reporter",
    "bastion.example.com",
    "2222",
    "10.0.0.5",
    "6379",
    "mysql-primary",
    "ops-admin",
    "fe80::1",
]


@pytest.mark.parametrize(
    "message",
    [
        MYSQL_DOWN,
        DENIED,
        PG_FAILED,
        SSH_FAILED,
        REDIS_DOWN,
        "postgresql://bench:pw@db.internal:5432/app",
        "host=db1.internal port=5432 user=bench dbname=x",
        "ping fe80::1%eth0 from ubuntu@10.1.2.3",
    ],
)
def test_error_texts_lose_hosts_ports_and_users(message):
    text = redact_text(message)
    for leak in LEAKS + ["5432", "db1.internal", "ubuntu", "bench@"]:
        assert leak not in text, (leak, text)
    assert "[host]" in text or "[address]" in text or "[user]" in text


def test_ordinary_labels_are_kept():
    text = "stress.cpu=4 user_cpu tps hosts=2 latency.p95 sysbench 1.0.20 at 10:20:30"
    assert redact_text(text) == text


@pytest.fixture
def shared_run(team):
    Target.objects.create(
        team=team,
        name="primary",
        host="mysql-primary",
        port=3306,
        user="ops-admin",
        ssh_host="bastion.example.com",
    )
    run = make_run(
        team,
        name="nightly on mysql-primary",
        cells=[({"threads": 1}, 1, {"tps": 101.5}), ({"threads": 2}, 1, {"tps": 203.25})],
    )
    run.document = {
        **run.document,
        "targets": [{"name": "primary", "host": "db.internal"}],
        "params": {
            "time": 10,
            "host": "db.internal",
            "port": 3306,
            "user": "bench",
            "note": "ops-admin ran it",
        },
    }
    run.save()
    cells = list(run.cells.order_by("index"))
    cells[0].facts = {"hostname": "ip-10-1-2-3", "kernel": "6.1.0", "uname": "mysql-primary"}
    cells[0].save()
    Cell.objects.filter(pk=cells[1].pk).update(
        status=Cell.FAILED,
        target_name="mysql-primary",
        error=" / ".join([MYSQL_DOWN, DENIED, PG_FAILED, SSH_FAILED, REDIS_DOWN]),
    )
    add_series(cells[0], "tps", [100.0, 101.0, 102.0])
    comparison = comparisons.save_comparison(team, "mysql-primary before/after", [run])
    return comparison


def test_share_page_and_its_json_show_nothing_identifying(client, shared_run):
    token = shared_run.share()
    answers = [
        client.get(f"/share/{token}/"),
        client.get(f"/share/{token}/results.json"),
        client.get(f"/share/{token}/series.json?metric=tps"),
    ]
    for response in answers:
        assert response.status_code == 200
        body = response.content.decode()
        for leak in LEAKS:
            assert leak not in body, (leak, response.request["PATH_INFO"])
    page = answers[0].content.decode()
    assert "Can&#x27;t connect to MySQL server on &#x27;[host]&#x27;" in page
    assert "Access denied for user &#x27;[user]&#x27;@&#x27;[host]&#x27;" in page
    assert "[redacted]" in page  # params.host / port / user and the hostname fact
    assert "101.5" in page or "101.50" in page  # the measurements are still there


def test_team_pages_are_not_redacted(owner_client, shared_run):
    page = owner_client.get(f"/comparisons/{shared_run.pk}/").content.decode()
    assert "10.1.2.3:3306" in page
