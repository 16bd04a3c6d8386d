"""Every phase bounded, through a real worker: a target whose port speaks
another protocol (a private Redis where the plan says mysql) hangs sysbench's
prepare and cleanup; with `timeout: 20` each stops at its limit, the cell
fails naming the phase, the limit and the tool's last output, the run goes
on and finishes, and another team's local cell is not held for ten minutes.
A cancel mid-measure keeps the error and the output printed so far."""

from __future__ import annotations

import pytest

from benchapp.models import Cell, Run, Team
from benchapp.runs import orchestration
from benchapp.store.artifactstore import text
from tests.support.private_services import private_redis  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT = 20


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def _wrong_protocol_plan(port: int) -> dict:
    """S4-like: sysbench OLTP against a "mysql" target that is really Redis."""
    return {
        "name": "wrong-protocol",
        "tool": "sysbench",
        "targets": [
            {"name": "db", "kind": "mysql", "host": "127.0.0.1", "port": port, "user": "root"}
        ],
        "params": {"test": "oltp_read_only", "tables": 1, "table_size": 1000, "time": 5},
        "axes": {"threads": [1, 2]},
        "timeout": TIMEOUT,
    }


def _local_plan(directory) -> dict:
    return {
        "name": "other-team-local",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {
            "filename": f"{directory}/fio.data",
            "size": "1M",
            "runtime": 1,
            "time_based": True,
        },
    }


def test_phase_limits_bound_every_cell_against_a_port_speaking_another_protocol(
    team, tmp_path, start_worker, private_redis
):
    start_worker("a", **FAST_LEASES)
    run = orchestration.start_run(team, _wrong_protocol_plan(private_redis.port))
    wait_for(lambda: run.cells.filter(status=Cell.RUNNING, phase="prepare").exists())
    other = orchestration.start_run(Team.objects.create(name="beta"), _local_plan(tmp_path))
    wait_for(lambda: finished(run) and finished(other), timeout=300, step=1)

    cells = list(run.cells.order_by("index"))
    assert run.status == Run.FAILED
    for cell in cells:
        assert cell.status == Cell.FAILED
        assert cell.error.startswith("prepare timed out after ")
        assert f"(the plan's timeout of {TIMEOUT} s)" in cell.error
        assert "cleanup timed out too" in cell.error
        # What sysbench printed before it hung (its banner, "Initializing worker threads...").
        assert "; last output: " in cell.error
        # prepare (at most the timeout) and cleanup (its own timeout), not 600 s
        wall = (cell.finished_at - cell.started_at).total_seconds()
        print(f"cell {cell.index}: {wall:.1f} s: {cell.error}")
        assert wall < 3 * TIMEOUT
        phases = {a.phase: a for a in cell.artifacts.all()}
        assert {"prepare", "cleanup"} <= set(phases)
        assert "sysbench" in text(phases["prepare"], "stdout")

    (local,) = other.cells.all()
    assert local.status == Cell.SUCCEEDED
    # The other team's cell waited for one bounded cell at most.
    waited = (local.started_at - other.created_at).total_seconds()
    print(f"the other team's local cell started after {waited:.1f} s")
    assert waited < 60


def test_phase_limits_cancel_mid_measure_keeps_error_and_output(team, start_worker):
    start_worker("a", **FAST_LEASES)
    plan = {
        "name": "cancel-keeps",
        "tool": "sysbench",
        "targets": [{"name": "box", "kind": "host"}],
        "params": {"test": "cpu", "time": 60, "threads": 1, "report_interval": 1},
    }
    run = orchestration.start_run(team, plan)
    wait_for(lambda: run.cells.filter(status=Cell.RUNNING, phase="measure").exists())
    cell = run.cells.get()
    wait_for(lambda: "[ 2s ]" in Cell.objects.get(pk=cell.pk).output_tail, timeout=30)
    orchestration.cancel_run(run)
    wait_for(lambda: finished(run), timeout=60)
    cell.refresh_from_db()
    assert cell.status == Cell.CANCELLED
    assert cell.error.startswith("measure cancelled after ")
    assert "last output: " in cell.error
    measure = cell.artifacts.get(phase="measure")
    assert "[ 1s ] thds: 1 eps: " in text(measure, "stdout")
