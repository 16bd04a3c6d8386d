"""Fair share between teams (issue 25), through real worker processes: a team
at its cap of running cells holds no worker slot, another team's run starts
within seconds; a cell past its runtime cap is stopped and says why; a
schedule that fires while its last run is active starts nothing; a team at
its cap of runs is refused with the limit named."""

from __future__ import annotations

import subprocess
import time

import pytest
from django.test import Client

from benchapp.celery import app
from benchapp.histories import scheduling
from benchapp.models import Cell, CellLock, Membership, Run, SkippedTick, Team
from benchapp.plans import planning
from benchapp.runs import orchestration
from benchapp.runs.fairshare import TooManyRuns, wait_reasons
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def slow_fio(directory, name, targets, runtime=60, isolation="target") -> dict:
    """Near-idle long cells: fio at 1 IOPS for `runtime` seconds, one per target."""
    return {
        "name": name,
        "tool": "fio",
        "targets": [{"name": t, "kind": "host"} for t in targets],
        "params": {
            "filename": f"{directory}/{name}.data",
            "size": "1M",
            "bs": "4k",
            "rw": "read",
            "rate_iops": 1,
            "runtime": runtime,
            "time_based": True,
        },
        "axes": {"target": list(targets)},
        "isolation": isolation,
    }


def fio_running(marker: str) -> bool:
    out = subprocess.run(["pgrep", "-af", f"fio.*{marker}"], capture_output=True, text=True)
    return any("pgrep" not in line for line in out.stdout.splitlines())


def sent_or_running(run) -> int:
    return (
        run.cells.filter(status=Cell.RUNNING).count()
        + CellLock.objects.filter(holder__run=run, holder__status=Cell.QUEUED)
        .values("holder")
        .distinct()
        .count()
    )


def test_a_team_at_its_cap_leaves_the_worker_to_another_team(team, tmp_path, start_worker):
    """Team A's four near-idle cells on a 3-slot worker: A runs two (its cap)
    and its other two wait unsent, so a worker slot is free for team B; B's
    local cell then waits only for A's two running cells (A's `isolation:
    target` shares the worker host with A's own cells, never with B's), and
    runs before A's third."""
    start_worker("fair", concurrency=3, **FAST_LEASES)
    team.max_running_cells = 2
    team.save()
    other = Team.objects.create(name="beta")
    hog = orchestration.start_run(
        team, slow_fio(tmp_path, "hog", ["d1", "d2", "d3", "d4"], runtime=8)
    )
    wait_for(lambda: hog.cells.filter(status=Cell.RUNNING, phase="measure").count() == 2)
    time.sleep(2)  # a third cell would have been sent by now
    assert sent_or_running(hog) == 2
    assert hog.cells.filter(status=Cell.QUEUED).count() == 2
    assert "team at its limit of 2 running cells" in wait_reasons(hog)
    quick = orchestration.start_run(other, slow_fio(tmp_path, "quick", ["e1"], runtime=1))
    wait_for(lambda: finished(quick) and finished(hog), timeout=120)
    assert (quick.status, hog.status) == (Run.SUCCEEDED, Run.SUCCEEDED)
    b = quick.cells.get()
    a_spans = sorted(hog.cells.values_list("started_at", "finished_at"))
    assert max(end for _, end in a_spans[:2]) <= b.started_at < a_spans[2][0]
    assert all(not (s < b.finished_at and b.started_at < e) for s, e in a_spans)


def test_a_freed_machine_goes_to_the_team_with_fewer_running_cells(team, tmp_path, start_worker):
    """Cells sharing the worker host take turns between teams: team B's cell,
    queued behind team A's first, runs before A's second and third."""
    start_worker("turns", concurrency=2, **FAST_LEASES)
    other = Team.objects.create(name="beta")
    first = orchestration.start_run(
        team, {**slow_fio(tmp_path, "a", ["a"], runtime=3, isolation="machine"), "repeat": 3}
    )
    wait_for(lambda: first.cells.filter(status=Cell.RUNNING).exists())
    second = orchestration.start_run(
        other, slow_fio(tmp_path, "b", ["b"], runtime=1, isolation="machine")
    )
    wait_for(lambda: finished(first) and finished(second), timeout=60)
    b_start = second.cells.get().started_at
    a_starts = sorted(first.cells.values_list("started_at", flat=True))
    assert a_starts[0] < b_start < a_starts[1]


def test_a_cell_past_the_operator_cap_is_stopped_and_says_why(team, tmp_path, start_worker):
    start_worker("cap", BENCHBOARD_CELL_MAX_SECONDS=3, **FAST_LEASES)
    run = orchestration.start_run(team, slow_fio(tmp_path, "capped", ["d1"], runtime=60))
    wait_for(lambda: finished(run), timeout=30)
    cell = run.cells.get()
    assert cell.status == Cell.FAILED
    assert cell.error == "stopped: ran past its limit of 3 s (BENCHBOARD_CELL_MAX_SECONDS)"
    assert cell.duration < 15
    assert not fio_running("capped.data")


def test_a_measure_past_its_estimate_is_stopped_and_says_why(team, tmp_path, start_worker):
    """fio's runtime 20 s is the estimate (23 s with the harness's 3); a
    margin of 0.3 stops the measure at 6.9 s."""
    start_worker("estimate", BENCHBOARD_CELL_ESTIMATE_MARGIN=0.3, **FAST_LEASES)
    run = orchestration.start_run(team, slow_fio(tmp_path, "late", ["d1"], runtime=20))
    wait_for(lambda: finished(run), timeout=40)
    cell = run.cells.get()
    assert cell.status == Cell.FAILED
    assert cell.error == "stopped: measure ran past its limit of 6.9 s (estimate 23 s × 0.3)"
    assert cell.duration < 15
    assert not fio_running("late.data")


def test_a_schedule_firing_while_its_run_is_active_starts_nothing(
    team, owner_client, tmp_path, start_worker
):
    start_worker("beat", concurrency=2, **FAST_LEASES)
    plan = planning.save_plan(team, slow_fio(tmp_path, "nightly", ["d1"], runtime=60))
    scheduling.schedule_cron(plan, scheduling.parse_cron("0 3 * * *"))
    app.send_task("benchapp.start_plan", args=[plan.pk], kwargs={"origin": "schedule"})
    wait_for(lambda: plan.runs.filter(status=Run.RUNNING).exists())
    app.send_task("benchapp.start_plan", args=[plan.pk], kwargs={"origin": "schedule"})
    tick = wait_for(lambda: SkippedTick.objects.filter(plan=plan).first(), timeout=30)
    run = plan.runs.get()
    assert tick.active_run == run
    assert tick.reason == f"the previous scheduled run #{run.pk} was still running"
    assert "skipped: the previous scheduled run" in owner_client.get("/schedules/").content.decode()
    page = owner_client.get(f"/plans/{plan.pk}/").content.decode()
    assert f"the previous scheduled run #{run.pk} was still running" in page
    orchestration.cancel_run(run)
    wait_for(lambda: finished(run), timeout=30)


def test_a_team_at_its_cap_of_runs_is_refused_with_the_limit(team, member, tmp_path):
    team.max_active_runs = 1
    team.save()
    plan = planning.save_plan(team, slow_fio(tmp_path, "one", ["d1"]))
    orchestration.start_run(team, plan.document)
    with pytest.raises(TooManyRuns, match="already has 1 queued or running runs"):
        orchestration.start_run(team, plan.document)
    browser = Client()
    browser.force_login(member)
    assert Membership.objects.filter(team=team, user=member).exists()
    page = browser.post(f"/plans/{plan.pk}/run/", follow=True).content.decode()
    assert "This plan cannot start: runs: your team already has 1 queued or running runs" in page
    assert team.runs.count() == 1


def test_a_cron_more_frequent_than_the_site_allows_is_refused(owner_client, team, tmp_path):
    plan = planning.save_plan(team, slow_fio(tmp_path, "often", ["d1"]))
    page = owner_client.post(
        f"/plans/{plan.pk}/schedule/", {"kind": "cron", "cron": "*/5 * * * *"}, follow=True
    ).content.decode()
    assert "starts a run every 5 min at times; this site allows one every 15 min" in page
    assert "BENCHBOARD_SCHEDULE_MIN_INTERVAL_SECONDS" in page


@pytest.mark.parametrize(
    "cron,seconds",
    [
        ("*/5 * * * *", 300),
        ("0 * * * *", 3600),
        ("0 3 * * 1", 86400),
        ("0,50 1,2 * * *", 600),
        ("0 1,23 * * *", 7200),
    ],
)
def test_the_shortest_interval_of_a_cron(cron, seconds):
    assert scheduling.shortest_interval(scheduling.parse_cron(cron)) == seconds
