"""A comparison's CPU profiles page: who may see it, the differential of two
profiled cells (stored from a real perf script capture), and a choice it
cannot draw answered in words, not a 500."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchapp.models import Cell, CellProfile, Comparison, Run
from benchapp.store import artifactstore
from runners.profiler import Profile
from runners.profiles import fold, folded_text

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "perf"


def _profiled(run, index: int, fixture: str) -> Cell:
    cell = Cell.objects.create(run=run, index=index, key=f"k{index}", status="succeeded", attempt=1)
    stacks = fold((FIXTURES / fixture).read_text())
    profile = Profile("tool", "localhost", "sysbench", [1], stacks)
    artifactstore.save_profile(cell, 1, profile, folded_text(stacks)).save()
    return cell


@pytest.fixture
def comparison(team):
    run = Run.objects.create(team=team, name="r", tool="sysbench", document={})
    cpu = _profiled(run, 1, "sysbench_cpu.txt")
    memory = _profiled(run, 2, "sysbench_memory.txt")
    comparison = Comparison.objects.create(team=team, name="c")
    comparison.runs.add(run)
    return comparison, cpu, memory


def test_profiles_page_draws_the_differential_of_two_cells(client, owner, comparison):
    comp, cpu, memory = comparison
    client.force_login(owner)
    response = client.get(
        f"/comparisons/{comp.pk}/profiles/", {"before": cpu.pk, "after": memory.pk}
    )
    assert response.status_code == 200
    diff = response.context["diff"]
    assert diff["samples"] == [42, 31]
    assert diff["changes"]["grew"][0]["function"] == "__vdso_clock_gettime"
    assert diff["changes"]["shrank"][0]["function"] == "[sysbench]"
    assert b'id="profile-diff-tree"' in response.content
    assert CellProfile.objects.get(cell=cpu).size < 1000  # gzip of the folded stacks


def test_profiles_page_refuses_a_cell_outside_the_comparison_in_words(
    client, owner, comparison, team
):
    comp, cpu, _ = comparison
    other = Run.objects.create(team=team, name="other", tool="sysbench", document={})
    stranger = _profiled(other, 1, "sysbench_cpu.txt")
    client.force_login(owner)
    response = client.get(
        f"/comparisons/{comp.pk}/profiles/", {"before": cpu.pk, "after": stranger.pk}
    )
    assert response.status_code == 200 and response.context["diff"] is None
    assert "after" in response.context["form"].errors


def test_profiles_page_is_the_teams_only(client, outsider, comparison):
    comp, _, _ = comparison
    client.force_login(outsider)
    assert client.get(f"/comparisons/{comp.pk}/profiles/").status_code == 404
