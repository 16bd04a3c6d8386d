"""A plan's isolation relaxes only its own team's guarantees (issue 38,
benchapp/runs/machines.py, docs/trust-model.md), through real worker processes
and the cells' recorded start and end times:

- `isolation: run` yields the worker host at a cell's end when another team
  waits: the other team's local cell starts after one cell of the run;
- `isolation: target` never runs beside another team's measured cell;
- a static_cluster host that is another team's server waits for its lock;
- a run whose cells overlapped says so on its run page and cell page."""

from __future__ import annotations

import pytest
from django.test import Client

from benchapp.models import Cell, Run, Team
from benchapp.runs import machines, orchestration
from tests.security.test_fair_share import slow_fio
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def spans(run: Run) -> list[tuple]:
    return list(run.cells.order_by("started_at").values_list("started_at", "finished_at"))


def test_isolation_run_yields_the_worker_host_after_one_cell(team, tmp_path, start_worker):
    """Team A's `isolation: run` run of four local cells; team B's local cell,
    started while A's first runs, starts before A's second."""
    start_worker("yield", concurrency=2, **FAST_LEASES)
    team.max_running_cells = 4
    team.save()
    hog = orchestration.start_run(
        team, {**slow_fio(tmp_path, "runlong", ["a"], runtime=3, isolation="run"), "repeat": 4}
    )
    wait_for(lambda: hog.cells.filter(status=Cell.RUNNING).exists(), timeout=60)
    quick = orchestration.start_run(
        Team.objects.create(name="beta"),
        slow_fio(tmp_path, "quick", ["b"], runtime=1, isolation="machine"),
    )
    wait_for(lambda: finished(hog) and finished(quick), timeout=120)
    assert (hog.status, quick.status) == (Run.SUCCEEDED, Run.SUCCEEDED)
    b_start, b_end = quick.cells.get().started_at, quick.cells.get().finished_at
    a_spans = spans(hog)
    before = [a for a in a_spans if a[0] < b_start]
    assert len(before) == 1, f"team B waited for {len(before)} cells of team A's run"
    assert all(not (a[0] < b_end and b_start < a[1]) for a in a_spans), "B overlapped A"


def test_isolation_target_never_runs_beside_another_teams_cell(team, tmp_path, start_worker):
    """Team A's `isolation: target` cells may overlap each other, never team
    B's measured cell on the same worker host."""
    start_worker("share", concurrency=3, **FAST_LEASES)
    team.max_running_cells = 4
    team.save()
    mine = orchestration.start_run(
        team, {**slow_fio(tmp_path, "tgt", ["a1", "a2"], runtime=3), "repeat": 2}
    )
    wait_for(lambda: mine.cells.filter(status=Cell.RUNNING).exists(), timeout=60)
    theirs = orchestration.start_run(
        Team.objects.create(name="beta"),
        slow_fio(tmp_path, "measured", ["b"], runtime=2, isolation="machine"),
    )
    wait_for(lambda: finished(mine) and finished(theirs), timeout=180)
    assert (mine.status, theirs.status) == (Run.SUCCEEDED, Run.SUCCEEDED)
    b = theirs.cells.get()
    overlapped = [a for a in spans(mine) if a[0] < b.finished_at and b.started_at < a[1]]
    assert overlapped == [], "team A's isolation: target cell ran beside team B's"
    # Team A's own two targets did share the machine, and its pages say so.
    assert machines.overlaps(mine), "the two targets of the target run never ran together"
    assert machines.overlaps(theirs) == []


def test_a_run_whose_cells_overlapped_says_so_on_its_run_and_cell_pages(
    team, owner, tmp_path, start_worker
):
    start_worker("pages", concurrency=2, **FAST_LEASES)
    team.max_running_cells = 4
    team.save()
    run = orchestration.start_run(team, slow_fio(tmp_path, "both", ["a1", "a2"], runtime=3))
    wait_for(lambda: finished(run), timeout=120)
    assert run.status == Run.SUCCEEDED
    browser = Client()
    browser.force_login(owner)
    page = browser.get(f"/runs/{run.pk}/").content.decode()
    assert "Cells on shared machines overlapped" in page and "worker host" in page
    cell = run.cells.order_by("index").first()
    page = browser.get(f"/runs/{run.pk}/cells/{cell.pk}/artifacts/").content.decode()
    assert "measured under another cell's load on a shared machine" in page
    assert "cell target=a1 and cell target=a2 on worker host" in page


def static_cluster_plan(port: int) -> dict:
    return {
        "name": "lab",
        "tool": "sysbench",
        "targets": [
            {
                "name": "lab",
                "provision": {
                    "provider": "static_cluster",
                    "kind": "mysql",
                    "hosts": [{"host": "127.0.0.1", "port": port}],
                    "price_per_hour": 0,
                },
            }
        ],
        "params": {"test": "oltp_read_only", "time": 5},
        "prepare": False,
    }


def test_a_static_cluster_host_that_is_another_teams_server_waits_for_its_lock(team):
    beta = Team.objects.create(name="beta")
    served = orchestration.start_run(
        beta,
        {
            "name": "served",
            "tool": "sysbench",
            "targets": [{"name": "db", "kind": "mysql", "host": "127.0.0.1", "port": 3319}],
            "params": {"test": "oltp_read_only", "time": 5},
            "prepare": False,
        },
        origin="cli",
    )
    (sent,) = orchestration.dispatch(served.pk)
    lab = orchestration.start_run(team, static_cluster_plan(3319), origin="cli")
    cell = lab.cells.get()
    found = machines.machines_of(lab, cell)
    assert ("server 127.0.0.1:3319", "machine 127.0.0.1:3319") in found
    assert not machines.take_wanted(lab, cell, found)
    holder = Cell.objects.get(pk=sent)
    assert machines.blockers(lab, cell)[0] == (
        f"waiting for machine 127.0.0.1:3319, held by run {served.pk} cell {holder.key}"
    )
    machines.drop(holder)
    assert machines.take_wanted(lab, cell, found)
