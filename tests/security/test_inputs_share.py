"""Share pages redact host names and addresses in error texts whether or not
the target is stored: a plan that wrote its own target (a bare host name with
no domain suffix, unquoted) leaks neither its name nor its address."""

import pytest

from benchapp.accounts.redact import redact_text
from benchapp.histories import comparisons
from benchapp.models import Cell
from tests.benchapp.results_data import make_run

PLAN_HOST, PLAN_SSH, PLAN_USER = "benchdb7", "jumpbox3", "loadgen"
ERRORS = [
    f"could not connect to {PLAN_HOST} port 5432 (10.20.30.40): Connection refused",
    f'could not translate host name "{PLAN_HOST}" to address: Name or service not known',
    f"ssh {PLAN_USER}@{PLAN_SSH}: connect to {PLAN_SSH}: timed out",
    f"{PLAN_HOST}: Temporary failure in name resolution; tried [fd00::2]:5432 and 10.20.30.41",
]
LEAKS = [PLAN_HOST, PLAN_SSH, PLAN_USER, "10.20.30.40", "10.20.30.41", "fd00::2"]


@pytest.fixture
def shared(team):
    run = make_run(
        team,
        name="plan-written targets",
        tool="pgbench",
        cells=[({"clients": 1}, 1, {"tps": 10.0}), ({"clients": 2}, 1, {"tps": 20.0})],
        document={
            "targets": [
                {
                    "name": "pg",
                    "kind": "postgres",
                    "host": PLAN_HOST,
                    "ssh": {"host": PLAN_SSH, "user": PLAN_USER},
                }
            ]
        },
    )
    failed = run.cells.order_by("index").last()
    Cell.objects.filter(pk=failed.pk).update(status=Cell.FAILED, error=" / ".join(ERRORS))
    assert not team.targets.exists()  # nothing stored: the plan wrote its target
    return comparisons.save_comparison(team, "shared", [run])


def test_share_page_shows_neither_the_plan_written_host_nor_addresses(client, shared):
    token = shared.share()
    for suffix in ("", "results.json", "series.json?metric=tps"):
        response = client.get(f"/share/{token}/{suffix}")
        assert response.status_code == 200
        body = response.content.decode()
        for leak in LEAKS:
            assert leak not in body, (leak, suffix)
    page = client.get(f"/share/{token}/").content.decode()
    assert "could not connect to [host] port [port] ([address])" in page
    assert "Connection refused" in page  # the error is still there, redacted


def test_team_page_still_shows_them(owner_client, shared):
    page = owner_client.get(f"/comparisons/{shared.pk}/").content.decode()
    assert PLAN_HOST in page


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'could not translate host name "pgdb9" to address: Name or service not known',
            'could not translate host name "[host]" to address: Name or service not known',
        ),
        (
            "could not translate host name pgdb9 to address: Name or service not known",
            "could not translate host name [host] to address: Name or service not known",
        ),
        ("pgdb9: Name or service not known", "[host]: Name or service not known"),
        ("getaddrinfo 'pgdb9': No address associated with hostname", None),
    ],
)
def test_resolver_errors_lose_the_name_without_knowing_it(text, expected):
    redacted = redact_text(text)
    assert "pgdb9" not in redacted
    if expected is not None:
        assert redacted == expected
