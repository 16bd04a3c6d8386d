"""CPU profiles through a real worker (BENCHBOARD_PROFILE_LOCAL on): sysbench
cells with `profile: true` on this machine, recorded with their folded
stacks in the artifact store; the comparison's differential of a light and
a CPU-heavy cell names the frames that grew and shrank."""

from __future__ import annotations

import pytest

from benchapp.analysis import profiles
from benchapp.models import CellProfile
from benchapp.runs import orchestration
from benchapp.store import artifactstore
from runners.profiles import read_folded, top_frames
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def _plan(name: str, axes: dict, **params) -> dict:
    return {
        "name": name,
        "tool": "sysbench",
        "profile": True,
        "telemetry": False,
        "targets": [{"name": "box", "kind": "host"}],
        "prepare": False,
        "params": {"test": "cpu", "threads": 1, "time": 4, **params},
        "axes": axes,
    }


def _cells(team, plan):
    run = orchestration.start_run(team, plan)
    wait_for(lambda: finished(run), timeout=300)
    cells = list(run.cells.order_by("index"))
    for cell in cells:
        assert cell.status == "succeeded", cell.error
    return cells


def _stacks(cell):
    (profile,) = CellProfile.objects.filter(cell=cell, role="tool")
    return read_folded(artifactstore.read_profile(profile))


def test_profiles_of_real_cells_are_stored_compressed_and_differ(team, start_worker):
    start_worker("p", BENCHBOARD_PROFILE_LOCAL=1, **FAST_LEASES)
    cpu, memory = _cells(team, _plan("profiled", {"test": ["cpu", "memory"]}))

    for cell in (cpu, memory):
        (profile,) = cell.profiles.all()
        assert (profile.role, profile.process) == ("tool", "sysbench")
        assert profile.samples >= 10 and 0 < profile.size < 10_000  # gzip of a few stacks
        assert cell.facts["profiles"] == [
            {"role": "tool", "host": "localhost", "process": "sysbench", "samples": profile.samples}
        ]
        assert not [w for w in cell.facts.get("warnings", []) if w.startswith("profile")]
    cpu_top = [name for name, _ in top_frames(_stacks(cpu), 3)]
    memory_top = [name for name, _ in top_frames(_stacks(memory), 3)]
    assert cpu_top[0] == "[sysbench]" and cpu_top != memory_top

    light, heavy = _cells(team, _plan("primes", {"cpu_max_prime": [3, 50000]}))
    diff = profiles.differential(light, heavy, "tool")
    grew = [row["function"] for row in diff["changes"]["grew"]]
    shrank = [row["function"] for row in diff["changes"]["shrank"]]
    # The heavy cell spends its time in the prime loop (sysbench is stripped:
    # "[sysbench]"); the light one in timing each tiny event.
    assert grew[0] == "[sysbench]"
    assert {"__vdso_clock_gettime", "clock_gettime", "sb_histogram_update"} & set(shrank[:4])
    assert diff["tree"]["value"] == pytest.approx(100.0)
