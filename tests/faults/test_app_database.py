"""The app's own PostgreSQL goes away while cells run (docs/operations.md,
"What each fault costs").

The worker, beat and the run live on a private PostgreSQL cluster of this
test (never the machine's shared one), which the test restarts once and then
stops for 60 s while a cell measures. Every cell must end succeeded on its
first attempt (measured once, recorded once, never re-run), the next cell be
sent without the reaper's help, and the time from the database's return to
the cell's record stay within a few retry waits.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from tests.support.appdb import CELLS, app_database, manage, measuring, poll, recorded, rows  # noqa: F401
from tests.support.worker import FAST_LEASES, ROOT, Worker, worker_env

OUTAGE_SECONDS = 60
# The worker retries every 5 s at most (benchapp.dbretry); a busy machine adds more.
RECOVERY_BOUND = 30


def test_app_database_restarted_and_stopped_mid_run(app_database, tmp_path):  # noqa: F811
    url = f"{app_database.url}/benchboard"
    env = worker_env(DATABASE_URL=url, BENCHBOARD_REAP_SECONDS=2, **FAST_LEASES)
    manage(env, "migrate", "--noinput")
    plan = {
        "name": "faults-app-database",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {
            "filename": f"{tmp_path}/fio.data",
            "size": "4M",
            "bs": "4k",
            "runtime": 4,
            "time_based": True,
        },
        "axes": {"rw": ["read", "write", "randread", "randwrite"]},
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    from benchapp.celery import app

    app.control.purge()
    worker = Worker(tmp_path / "worker.log", env, "appdb")
    beat = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "benchapp", "beat"]
        + ["--schedule", str(tmp_path / "beat-schedule")],
        cwd=ROOT,
        env=env,
        stdout=open(tmp_path / "beat.log", "w"),
        stderr=subprocess.STDOUT,
    )
    try:
        manage(env, "runplan", str(tmp_path / "plan.json"))
        began = time.monotonic()

        # 1. A restart while cell 1 measures: its connections die at once.
        poll(url, CELLS, measuring(1))
        app_database.pg_ctl("restart", "-m", "fast")
        back = time.monotonic()
        poll(url, CELLS, recorded(1))
        restart_recovery = time.monotonic() - back

        # 2. Stopped for 60 s while cell 3 measures: its 4 s measurement
        # ends while the database is away and waits to be recorded.
        poll(url, CELLS, measuring(3))
        app_database.pg_ctl("stop", "-m", "fast")
        time.sleep(OUTAGE_SECONDS)
        app_database.pg_ctl("start")
        back = time.monotonic()
        poll(url, CELLS, recorded(3))
        stop_recovery = time.monotonic() - back

        cells = poll(
            url, CELLS, lambda cells: all(c[1] != "running" and c[1] != "queued" for c in cells)
        )
        took = time.monotonic() - began
    finally:
        beat.terminate()
        beat.wait(timeout=30)
        worker.stop()
    print(
        f"app database restart: recorded {restart_recovery:.1f} s after it was back; "
        f"stopped {OUTAGE_SECONDS} s: recorded {stop_recovery:.1f} s after; run took {took:.0f} s"
    )
    assert [(c[1], c[2]) for c in cells] == [("succeeded", 1)] * 4, cells
    measured = rows(url, "SELECT cell_id, attempt, count FROM benchapp_cellmeasurements")
    assert len(measured) == 4 and all(attempt == 1 and count > 0 for _, attempt, count in measured)
    assert rows(url, "SELECT status FROM benchapp_run") == [("succeeded",)]
    assert rows(url, "SELECT count(*) FROM benchapp_celllock WHERE holder_id IS NOT NULL") == [(0,)]
    assert restart_recovery < RECOVERY_BOUND and stop_recovery < RECOVERY_BOUND
    # The run took its cells' time plus the outage, not a lease's re-run per fault.
    assert took < OUTAGE_SECONDS + 120
