"""Isolation by machine (issue 31): cells that share a database server or a
client host never overlap, across runs and teams; cells on disjoint machines
are dispatched together; `isolation: target` overlaps and the results page
says so. Through real worker processes and a private MariaDB."""

from __future__ import annotations

import pytest

from benchapp.models import Artifact, Cell, CellLock, Run
from benchapp.runs import orchestration
from benchapp.runs.fairshare import wait_reasons
from benchapp.runs.hostid import host_id
from runners.errors import ValidationError
from runners.isolation import cell_machines
from runners.plan import load_plan
from tests.support.private_services import private_mariadb  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases


def plan_part(targets, client=None) -> dict:
    return {"targets": targets, "client": client or {"kind": "local"}}


def machines(targets, name, client=None, resolver=lambda h: {"localhost": "127.0.0.1"}.get(h, h)):
    found = cell_machines(
        plan_part(targets, client), name, run_id=7, worker_host="w1", resolver=resolver
    )
    return [key for key, _ in found]


DB1 = {"name": "db1", "kind": "mysql", "host": "localhost", "port": 3306}
DB2 = {"name": "db2", "kind": "mysql", "host": "127.0.0.1", "port": 3306}


@pytest.mark.parametrize(
    "targets,name,client,expected",
    [
        ([DB1, DB2], "db1", None, ["server 127.0.0.1:3306", "host w1"]),
        ([DB1, DB2], "db2", None, ["server 127.0.0.1:3306", "host w1"]),
        (
            [DB1],
            "db1",
            {"kind": "ssh", "ssh": {"host": "10.0.0.9", "port": 2222}},
            ["server 127.0.0.1:3306", "host 10.0.0.9:2222"],
        ),
        ([{"name": "disk", "kind": "host", "host": None}], "disk", None, ["host w1"]),
        (
            [{"name": "disk", "kind": "host", "ssh": {"host": "h2", "port": 22}}],
            "disk",
            {"kind": "on", "target": "target"},
            ["host h2:22"],
        ),
        (
            [{"name": "rds", "kind": "mysql", "provision": {"provider": "aws_rds"}}],
            "rds",
            None,
            ["provisioned run 7 rds", "host w1"],
        ),
    ],
)
def test_the_machines_a_cell_loads(targets, name, client, expected):
    assert machines(targets, name, client) == expected


def test_loopback_names_resolve_to_one_address():
    from runners.isolation import resolve

    assert resolve("localhost") == resolve("127.0.0.1") == resolve("::1") == "127.0.0.1"


@pytest.mark.parametrize("value", ["machine", "run", "target"])
def test_isolation_is_read_from_the_plan(value):
    plan = load_plan(
        {
            "name": "p",
            "tool": "fio",
            "targets": [{"name": "d", "kind": "host"}],
            "params": {"filename": "/tmp/f"},
            "isolation": value,
        }
    )
    assert plan.isolation == value


def test_an_unknown_isolation_is_refused():
    with pytest.raises(ValidationError, match="isolation"):
        load_plan(
            {
                "name": "p",
                "tool": "fio",
                "targets": [{"name": "d", "kind": "host"}],
                "isolation": "x",
            }
        )


# ------------------------------------------------------------ dispatch


def slap(targets, client=None, isolation="machine", queries=2000) -> dict:
    plan = {
        "name": "shared-server",
        "tool": "mysqlslap",
        "targets": targets,
        "params": {
            "auto_generate_sql": True,
            "number_of_queries": queries,
            "concurrency": 4,
            "iterations": 1,
            "load_type": "key",
            "add_autoincrement": True,
        },
        "axes": {"target": [t["name"] for t in targets]},
        # A schema each: mysqlslap drops its schema at the end, and two
        # targets on one server must not drop each other's.
        "overrides": [
            {"when": {"target": t["name"]}, "set": {"create_schema": f"slap_{t['name']}"}}
            for t in targets
        ],
        "repeat": 2,
        "isolation": isolation,
    }
    if client:
        plan["client"] = client
    return plan


def db(name, port, ssh_port=None) -> dict:
    target = {"name": name, "kind": "mysql", "host": "127.0.0.1", "port": port, "user": "root"}
    if ssh_port:
        target["ssh"] = {"host": "127.0.0.1", "port": ssh_port, "user": "bench"}
    return target


@pytest.mark.django_db
def test_cells_on_disjoint_machines_are_dispatched_together(
    team, django_capture_on_commit_callbacks
):
    """Two servers, each target's client on its own host (SSH on two ports):
    nothing is shared, both first cells are sent at once; two targets on one
    server with the worker as client: one cell, and the run page says why the
    other waits."""
    team.max_running_cells = 10
    team.save()
    apart = orchestration.start_run(
        team, slap([db("a", 3307, 2201), db("b", 3308, 2202)], client={"on": "target"})
    )
    with django_capture_on_commit_callbacks(execute=True):
        assert len(orchestration.dispatch(apart.pk)) == 2
    together = orchestration.start_run(team, slap([db("c", 3309), db("d", 3309)]))
    with django_capture_on_commit_callbacks(execute=True):
        (sent,) = orchestration.dispatch(together.pk)
    from benchapp.runs.fairshare import wait_reasons

    holder = Cell.objects.get(pk=sent)
    assert wait_reasons(together) == [
        f"cell target=d: waiting for machine 127.0.0.1:3309, held by run {together.pk} "
        f"cell {holder.key}",
        f"cell target=d: waiting for worker host {host_id()}, held by run "
        f"{together.pk} cell {holder.key}",
    ]
    assert CellLock.objects.filter(holder_id=sent).count() == 3  # target, server, worker


# ------------------------------------------------------------ workers


def measure_spans(run: Run) -> list[tuple]:
    rows = Artifact.objects.filter(cell__run=run, phase="measure").order_by("started_at")
    return [(a.started_at, a.finished_at, a.cell.target_name) for a in rows]


def overlapping(spans) -> list[tuple]:
    return [
        (x, y)
        for i, x in enumerate(spans)
        for y in spans[i + 1 :]
        if x[0] < y[1] and y[0] < x[1] and x[2] != y[2]
    ]


@pytest.mark.django_db(transaction=True)
def test_two_targets_on_one_server_never_overlap(
    team,
    settings,
    start_worker,
    private_mariadb,  # noqa: F811
):
    match_leases(settings, FAST_LEASES)
    team.max_running_cells = 10
    team.save()
    start_worker("m1", **FAST_LEASES)
    start_worker("m2", **FAST_LEASES)
    port = private_mariadb.port
    run = orchestration.start_run(team, slap([db("one", port), db("two", port)]))
    wait_for(lambda: finished(run), timeout=120)
    assert run.status == Run.SUCCEEDED
    spans = measure_spans(run)
    assert len(spans) == 4
    assert overlapping(spans) == []
    assert "overlapped" not in _results_page(team, run)


@pytest.mark.django_db(transaction=True)
def test_isolation_target_overlaps_and_the_results_page_says_so(
    team,
    settings,
    start_worker,
    private_mariadb,  # noqa: F811
):
    match_leases(settings, FAST_LEASES)
    team.max_running_cells = 10
    team.save()
    start_worker("t1", **FAST_LEASES)
    start_worker("t2", **FAST_LEASES)
    port = private_mariadb.port
    run = orchestration.start_run(
        team, slap([db("one", port), db("two", port)], isolation="target", queries=20000)
    )
    wait_for(lambda: finished(run), timeout=120)
    assert run.status == Run.SUCCEEDED
    assert overlapping(measure_spans(run)), "the two targets never ran together"
    page = _results_page(team, run)
    assert "Cells on shared machines overlapped" in page
    assert f"machine 127.0.0.1:{port}" in page


def _results_page(team, run) -> str:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from benchapp.models import Membership

    user = get_user_model().objects.create_user(f"viewer{run.pk}", "v@example.test", "pw")
    Membership.objects.create(team=team, user=user, role=Membership.VIEWER)
    browser = Client()
    browser.force_login(user)
    return browser.get(f"/runs/{run.pk}/results/").content.decode()


def _run_mode_then_another(team, other_team, capture):
    """Team's `isolation: run` run on two servers, and other_team's run on
    one of them (from an SSH client): the first cell of the run ends while
    the other run waits. Returns (mine, theirs, mine's second cell id)."""
    team.max_running_cells = 10
    team.save()
    mine = orchestration.start_run(
        team, {**slap([db("a", 3311), db("b", 3312)], isolation="run"), "repeat": 1}
    )
    theirs = orchestration.start_run(
        other_team,
        {
            **slap(
                [db("c", 3312)], client={"ssh": {"host": "127.0.0.1", "port": 2299, "user": "x"}}
            ),
            "repeat": 1,
        },
    )
    with capture(execute=True):
        (first,) = orchestration.dispatch(mine.pk)
        assert orchestration.dispatch(theirs.pk) == []
    cell = orchestration.claim(first)
    with capture(execute=True):
        orchestration._finish_cell(cell, Cell.SUCCEEDED)  # dispatches both runs, in turn
    (second,) = mine.cells.exclude(pk=first).values_list("pk", flat=True)
    return mine, theirs, second


@pytest.mark.django_db
def test_isolation_run_keeps_its_machines_from_its_own_teams_other_runs(
    team, django_capture_on_commit_callbacks
):
    """Between two cells of an `isolation: run` run, a run of its own team
    on one of its servers does not get in."""
    mine, theirs, second = _run_mode_then_another(team, team, django_capture_on_commit_callbacks)
    assert CellLock.objects.filter(holder_id=second).count() == 4  # target, 2 servers, worker
    assert not CellLock.objects.filter(holder__run=theirs).exists()


@pytest.mark.django_db
def test_isolation_run_yields_its_machines_to_another_team_at_a_cells_end(
    team, django_capture_on_commit_callbacks
):
    """Another team's cell waiting for one of the run's servers gets it when
    the run's running cell ends: it waits for one cell, not for the run."""
    from benchapp.models import Team

    beta = Team.objects.create(name="beta")
    mine, theirs, second = _run_mode_then_another(team, beta, django_capture_on_commit_callbacks)
    assert CellLock.objects.filter(holder__run=theirs).count() == 3  # target, server, SSH host
    assert not CellLock.objects.filter(holder_id=second).exists()
    reasons = wait_reasons(mine)
    assert any("waiting for machine 127.0.0.1:3312, held by run " in r for r in reasons), reasons
