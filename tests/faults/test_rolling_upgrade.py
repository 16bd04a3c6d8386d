"""A rolling upgrade with an active run (docs/operations.md, "Upgrades").

On a private PostgreSQL cluster (never the machine's shared one), the
installation runs on the schema one migration back; a run starts on the old
worker. While a cell measures, the upgrade follows the documented recipe:
beat stops, the old worker gets SIGTERM (it finishes its cell), the latest
migration is applied while that cell still measures, then a new worker and
beat start and take the rest. The old worker and the run's start are the
code of the version before that migration (its tree, from git), as in a real
upgrade: each version runs on the schema it was written for. Every cell ends terminal exactly once: succeeded on its first
attempt, measured once.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.appdb import CELLS, app_database, manage, measuring, poll, rows  # noqa: F401
from tests.support.worker import FAST_LEASES, ROOT, Worker, worker_env

MIGRATIONS = sorted(p.stem for p in (ROOT / "benchapp" / "migrations").glob("0*.py"))
PREVIOUS, LATEST = MIGRATIONS[-2], MIGRATIONS[-1]


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def old_code(tmp_path) -> Path:
    """The tree of the newest commit (on the first-parent line) without the
    latest migration: the version this upgrade replaces."""
    path = f"benchapp/migrations/{LATEST}.py"
    for rev in git("rev-list", "--first-parent", "--max-count=500", "HEAD").split():
        if subprocess.run(["git", "cat-file", "-e", f"{rev}:{path}"], cwd=ROOT).returncode:
            break
    else:
        pytest.fail(f"no commit before {LATEST} in the last 500")
    tree = tmp_path / "old-code"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    return tree


def start_beat(env: dict, directory, cwd=ROOT) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "benchapp", "beat"]
        + ["--schedule", str(directory / "beat-schedule")],
        cwd=cwd,
        env=env,
        stdout=open(directory / "beat.log", "a"),
        stderr=subprocess.STDOUT,
    )


def test_rolling_upgrade_with_a_migration_during_a_run(app_database, tmp_path, old_code):  # noqa: F811
    url = f"{app_database.url}/benchboard"
    env = worker_env(DATABASE_URL=url, BENCHBOARD_REAP_SECONDS=2, **FAST_LEASES)
    manage(env, "migrate", "--noinput", "benchapp", PREVIOUS)
    plan = {
        "name": "faults-rolling-upgrade",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {
            "filename": f"{tmp_path}/fio.data",
            "size": "4M",
            "bs": "4k",
            "runtime": 6,
            "time_based": True,
        },
        "axes": {"rw": ["read", "write", "randread", "randwrite", "readwrite"]},
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    from benchapp.celery import app

    app.control.purge()
    old = Worker(tmp_path / "old.log", env, "old", cwd=old_code)
    beat = start_beat(env, tmp_path, cwd=old_code)
    new = None
    try:
        manage(env, "runplan", str(tmp_path / "plan.json"), cwd=old_code)
        poll(url, CELLS, measuring(2))
        # The recipe: beat stops, the old worker shuts down warm, migrate.
        beat.terminate()
        beat.wait(timeout=30)
        old.proc.send_signal(signal.SIGTERM)
        manage(env, "migrate", "--noinput")
        old.proc.wait(timeout=120)
        old.log.close()
        upgraded = time.monotonic()
        new = Worker(tmp_path / "new.log", env, "new")
        beat = start_beat(env, tmp_path)
        cells = poll(
            url, CELLS, lambda found: all(c[1] not in ("queued", "running") for c in found)
        )
        took = time.monotonic() - upgraded
    finally:
        beat.terminate()
        beat.wait(timeout=30)
        old.stop()
        if new is not None:
            new.stop()
    print(f"rolling upgrade: the new worker finished the run {took:.0f} s after it started")
    assert [(c[1], c[2]) for c in cells] == [("succeeded", 1)] * 5, cells
    assert rows(url, "SELECT status FROM benchapp_run") == [("succeeded",)]
    assert "s: 'succeeded'" in old.output()  # the old worker finished cell 2
    assert "s: 'succeeded'" in new.output()  # the new one took the rest
    assert rows(url, f"SELECT name FROM django_migrations WHERE name = '{LATEST}'")
    measured = rows(url, "SELECT cell_id, attempt FROM benchapp_cellmeasurements")
    assert len(measured) == 5 and {attempt for _, attempt in measured} == {1}
