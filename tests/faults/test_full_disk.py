"""The worker's var/ (and the artifact store in it) fills up, then turns
read-only, while a run records its cells (docs/operations.md, "What each fault costs").

var/ is a 20 MB ext4 filesystem on a loop device of the test's own. The
documented fallback: an output the store does not take is kept in the
artifact's database column (benchapp.store.artifactstore.create_artifacts)
and `manage.py move_artifacts` moves it later. Every cell is recorded whole
(its measurements and every phase's output) or not at all; none is lost.
"""

from __future__ import annotations

import subprocess

import pytest

from benchapp.models import Artifact, Cell, OutputBlob, Run
from benchapp.runs import orchestration
from tests.support.measures import stored
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=60)


@pytest.fixture
def small_var(tmp_path):
    image, mount = tmp_path / "var.img", tmp_path / "var"
    mount.mkdir()
    sh("truncate", "-s", "20M", str(image))
    sh("mkfs.ext4", "-q", "-F", str(image))
    sh("mount", "-o", "loop", str(image), str(mount))
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(directory) -> None:
    """Write until the filesystem refuses (ENOSPC)."""
    with open(directory / "filler", "wb") as file:
        try:
            while True:
                file.write(b"\0" * (1 << 20))
                file.flush()
        except OSError:
            pass


def recorded_whole(cell: Cell) -> bool:
    """Measurements and every phase's output of the cell's attempt, kept somewhere."""
    artifacts = list(Artifact.objects.filter(cell=cell, attempt=cell.attempt))
    has_output = all(
        a.stdout or OutputBlob.objects.filter(artifact=a).exists()
        for a in artifacts
        if a.phase == "measure"
    )
    return bool(stored(cells=[cell.pk])) and bool(artifacts) and has_output


def test_full_then_read_only_var_keeps_every_cell_whole(team, tmp_path, small_var, start_worker):
    plan = {
        "name": "faults-full-disk",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {
            "filename": f"{tmp_path}/fio.data",
            "size": "4M",
            "bs": "4k",
            "runtime": 2,
            "time_based": True,
        },
        "axes": {"rw": ["read", "write", "randread", "randwrite", "readwrite", "randrw"]},
    }
    worker = start_worker("disk", BENCHBOARD_VAR_DIR=small_var, **FAST_LEASES)
    run = orchestration.start_run(team, plan)
    cells = list(run.cells.order_by("index"))
    wait_for(lambda: Cell.objects.get(pk=cells[0].pk).status == Cell.SUCCEEDED)
    fill(small_var)
    wait_for(lambda: Cell.objects.get(pk=cells[2].pk).status == Cell.SUCCEEDED)
    sh("mount", "-o", "remount,ro", str(small_var))
    wait_for(lambda: finished(run), reap=True, timeout=180, step=1)
    assert run.status == Run.SUCCEEDED, [c.error for c in run.cells.all()]
    cells = list(run.cells.order_by("index"))
    assert all(c.attempt == 1 and recorded_whole(c) for c in cells)
    # The first cell's outputs went to the store; the last ones' (full, then
    # read-only) to the database, as documented.
    assert OutputBlob.objects.filter(artifact__cell=cells[0]).exists()
    last = Artifact.objects.filter(cell=cells[-1], phase="measure").get()
    assert last.stdout and not OutputBlob.objects.filter(artifact=last).exists()
    assert "output kept in the database" in worker.output()
