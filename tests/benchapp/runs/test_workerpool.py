"""The pool of worker hosts (issue 43), through two worker hosts made here:
two real `celery worker` processes, each in its own UTS namespace with its
own host name and var dir, sharing this test's PostgreSQL database and
Redis. Local fio cells of two teams spread over both hosts and never overlap
on one; a drained host is sent nothing; a killed host's cell is re-queued on
the other; a host whose PATH has no fio is never sent a fio cell."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest
from django.utils import timezone

from benchapp.models import Cell, CellPlacement, Run, Team, WorkerHost
from benchapp.plans import planning
from benchapp.runs import orchestration, workerpool
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)

A, B = "bench-host-a", "bench-host-b"


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def fio_plan(directory, targets, runtime=1, rws=("read", "write"), file="fio") -> dict:
    return {
        "name": "pool",
        "tool": "fio",
        "targets": [{"name": name, "kind": "host"} for name in targets],
        "params": {
            "filename": f"{directory}/{file}.data",
            "size": "2M",
            "bs": "4k",
            "runtime": runtime,
            "time_based": True,
        },
        "axes": {"target": list(targets), "rw": list(rws)},
    }


def two_hosts(start_worker, concurrency=2, a_env=None):
    a = start_worker("a", concurrency=concurrency, host=A, **FAST_LEASES, **(a_env or {}))
    b = start_worker("b", concurrency=concurrency, host=B, **FAST_LEASES)
    return a, b


def host_of(cell: Cell) -> str:
    return cell.worker


def spans_by_host(cells) -> dict[str, list]:
    spans: dict[str, list] = {}
    for cell in cells:
        spans.setdefault(host_of(cell), []).append((cell.started_at, cell.finished_at, cell))
    return spans


def test_two_worker_hosts_register_with_their_own_ids_queues_and_tools(start_worker):
    two_hosts(start_worker)
    hosts = {h.hostname: h for h in WorkerHost.objects.all()}
    assert set(hosts) == {A, B}
    assert hosts[A].host_id != hosts[B].host_id
    assert hosts[A].host_id.startswith(A + ".")
    assert hosts[A].queue.endswith(".host." + hosts[A].host_id)
    assert "fio" in hosts[A].tools and hosts[A].tools["fio"]
    assert hosts[A].sandbox["limits"]["cpus"] > 0
    views = {v.hostname: v for v in workerpool.overview()}
    assert views[A].state == workerpool.UP and views[A].slots == 2 and views[A].free == 2


def test_local_cells_of_two_teams_spread_over_both_hosts_and_never_overlap_on_one(
    team, tmp_path, start_worker
):
    two_hosts(start_worker)
    other = Team.objects.create(name="beta")
    runs = [
        orchestration.start_run(t, fio_plan(tmp_path, ("d1", "d2"), file=t.name))
        for t in (team, other)
    ]
    for run in runs:
        wait_for(lambda run=run: finished(run), timeout=240)
        assert run.status == Run.SUCCEEDED
    cells = list(Cell.objects.filter(run__in=runs))
    spans = spans_by_host(cells)
    assert set(spans) == {A, B}, "the cells were not spread over both hosts"
    hosts = {h.hostname: h.host_id for h in WorkerHost.objects.all()}
    for name, intervals in spans.items():
        intervals.sort(key=lambda span: span[0])
        for (_, end, first), (start, _, second) in zip(intervals, intervals[1:]):
            assert start >= end, f"cells {first.pk} and {second.pk} overlapped on {name}"
        for _, _, cell in intervals:  # its machine lock was the host it ran on
            assert f"host {hosts[name]}" in [key for key, _ in cell.machines]
            assert cell.placement.host.hostname == name
    assert {cell.run.team_id for cell in cells} == {team.pk, other.pk}


def test_draining_a_host_sends_everything_to_the_other(team, tmp_path, start_worker):
    two_hosts(start_worker)
    workerpool.drain(WorkerHost.objects.get(hostname=A))
    assert {v.hostname: v.state for v in workerpool.overview()}[A] == workerpool.DRAINING
    run = orchestration.start_run(team, fio_plan(tmp_path, ("d1", "d2")))
    wait_for(lambda: finished(run), timeout=240)
    assert run.status == Run.SUCCEEDED
    assert {c.worker for c in run.cells.all()} == {B}

    workerpool.resume(WorkerHost.objects.get(hostname=A))
    again = orchestration.start_run(team, fio_plan(tmp_path, ("d1", "d2")))
    wait_for(lambda: finished(again), timeout=240)
    assert {c.worker for c in again.cells.all()} == {A, B}


def test_draining_lets_the_running_cell_finish_there(team, tmp_path, start_worker):
    two_hosts(start_worker, concurrency=1)
    run = orchestration.start_run(team, fio_plan(tmp_path, ("d1",), runtime=3, rws=("read",)))
    cell = wait_for(lambda: Cell.objects.filter(run=run, status=Cell.RUNNING).first())
    host = WorkerHost.objects.get(hostname=cell.worker)
    workerpool.drain(host)
    wait_for(lambda: finished(run), timeout=240)
    cell.refresh_from_db()
    assert cell.status == Cell.SUCCEEDED and cell.worker == host.hostname and cell.attempt == 1


def test_a_killed_host_has_its_running_cell_requeued_on_the_other(
    team, owner_client, tmp_path, start_worker
):
    a, b = two_hosts(start_worker, concurrency=1)
    workerpool.drain(WorkerHost.objects.get(hostname=B))  # the first cell starts on A
    run = orchestration.start_run(team, fio_plan(tmp_path, ("d1",), runtime=4, rws=("read",)))
    cell = wait_for(
        lambda: Cell.objects.filter(run=run, status=Cell.RUNNING, phase="measure").first()
    )
    assert cell.worker == A
    workerpool.resume(WorkerHost.objects.get(hostname=B))
    a.kill(signal.SIGKILL)
    killed = time.monotonic()
    moved = wait_for(
        lambda: Cell.objects.filter(pk=cell.pk, status=Cell.RUNNING, worker=B).first(),
        timeout=120,
        reap=True,
    )
    elapsed = time.monotonic() - killed
    print(f"\nlost host's cell running on the other host {elapsed:.1f} s after the kill")
    wait_for(lambda: finished(run), timeout=120, reap=True)
    cell.refresh_from_db()
    assert cell.status == Cell.SUCCEEDED and cell.worker == B and cell.attempt == 2
    notes = CellPlacement.objects.get(cell=cell).notes
    assert any(f"host {A} lost" in note for note in notes)
    page = owner_client.get(f"/runs/{run.pk}/cells/{cell.pk}/artifacts/").content.decode()
    assert f"host {A} lost (no heartbeat since" in page and "re-queued on another host" in page
    assert moved.attempt == 2
    assert {v.hostname: v.state for v in workerpool.overview()}[A] == workerpool.LOST
    # A lease (4 s here) plus a reap and a claim: well under a minute even when busy.
    assert elapsed < 60


def path_without(tool: str, folder: Path) -> str:
    """A PATH that has everything of /usr/bin but `tool` (a host without it)."""
    folder.mkdir()
    for entry in Path("/usr/bin").iterdir():
        if entry.name != tool:
            (folder / entry.name).symlink_to(entry)
    return os.pathsep.join([str(Path(sys.executable).parent), str(folder), "/usr/sbin", "/sbin"])


def test_a_host_without_the_tool_is_never_sent_its_cells(team, tmp_path, start_worker):
    assert shutil.which("fio")
    two_hosts(start_worker, a_env={"PATH": path_without("fio", tmp_path / "bin")})
    hosts = {h.hostname: h for h in WorkerHost.objects.all()}
    assert "fio" not in hosts[A].tools and "fio" in hosts[B].tools
    assert "sysbench" in hosts[A].tools
    run = orchestration.start_run(team, fio_plan(tmp_path, ("d1", "d2")))
    wait_for(lambda: finished(run), timeout=240)
    assert run.status == Run.SUCCEEDED
    assert {c.worker for c in run.cells.all()} == {B}


# ------------------------------------------------------- refusal at save


def registered(name: str, tools: dict) -> WorkerHost:
    now = timezone.now()
    return WorkerHost.objects.create(
        host_id=f"{name}.0000",
        hostname=name,
        queue=f"q.host.{name}",
        tools=tools,
        registered_at=now,
        last_seen_at=now,
    )


def test_a_plan_no_registered_host_can_run_is_refused_at_save(team, tmp_path):
    registered("h1", {"sysbench": "1.0"})
    registered("h2", {"sysbench": "1.0"})
    with pytest.raises(planning.PlanRefused, match="no worker host has fio.*h1, h2"):
        planning.save_plan(team, fio_plan(tmp_path, ("d1",)))
    over_ssh = fio_plan(tmp_path, ("d1",))
    over_ssh["client"] = {"ssh": {"host": "127.0.0.1", "port": 2222, "user": "bench"}}
    planning.validate_document(over_ssh, team)  # the tool runs on the SSH host: accepted


def test_with_no_registered_host_a_plan_is_accepted(team, tmp_path):
    assert not WorkerHost.objects.exists()
    planning.save_plan(team, fio_plan(tmp_path, ("d1",)))


def test_a_cell_no_host_may_take_says_why_on_its_run_page(team, tmp_path):
    from datetime import timedelta

    from benchapp.runs.fairshare import wait_reasons

    registered("h1", {"sysbench": "1.0"})
    lost = registered("h2", {"fio": "3.33"})
    WorkerHost.objects.filter(pk=lost.pk).update(last_seen_at=timezone.now() - timedelta(minutes=5))
    run = orchestration.start_run(team, fio_plan(tmp_path, ("d1",), rws=("read",)))
    assert orchestration.dispatch(run.pk) == []  # nobody may take it
    [reason] = wait_reasons(run)
    assert reason == "cell rw=read,target=d1: no worker host may take it: h1 without fio, h2 lost"


def test_version_skew_marks_the_hosts_that_differ(db):
    for name, fio in (("h1", "3.33"), ("h2", "3.33"), ("h3", "3.28")):
        registered(name, {"fio": fio})
    WorkerHost.objects.update(version="0.1.0")
    WorkerHost.objects.filter(hostname="h2").update(version="0.2.0")
    skew = {v.hostname: v.version_skew for v in workerpool.overview()}
    assert skew == {"h1": False, "h2": True, "h3": True}
