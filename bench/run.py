#!/usr/bin/env python
"""`make bench`: figures a user can check, produced by the project itself.

Prints a table and writes bench/results.json with:
- the harness overhead study (bench/overhead.py): sysbench, mysqlslap, fio
  and pgbench, the very command Benchboard records run by hand, by hand over
  SSH and through Benchboard (and by hand in the sandbox with --arms), PAIRS
  interleaved pairs of --seconds jobs; each ratio with its 95 % interval and
  the pairs a +-1 % interval would take, the by-hand CV, a CPU profile;
- per-cell overhead (cell wall time minus the tool's own run time), local
  and over SSH (the study's cells), and the dispatch latency;
- scale: cells per minute with 1, 2 and 4 workers over 8 targets (cells
  that wait, not burn the CPU; bench/scale.py) and the time to start a
  2,000-cell plan (bench/lifecycle.py);
- the pool: local cells per minute with one and with two worker hosts
  (UTS namespaces of this machine) and how long a killed host's cell takes
  to run on the other (bench/pool.py);
- parser throughput (scripts/bench_parsers.py) and the results pages'
  server time (scripts/bench_results.py) when those scripts are present;
- harness cost per cell over SSH with the plan's own phases excluded;
- a generated year (scripts/bench_scale.py, `--only scale-data`, `make
  bench-scale`): 50 teams' runs of the five studies' plans in a database of
  their own (built once, then reused; --year-scale to build a share of it),
  its storage per table and the pages' server time, cold and warm, next
  to their budgets; with --year-chromium, then its pages in Chromium
  (bench/pages.py --year);
- the results and comparison pages in chromium (bench/pages.py): cold and
  warm load time and bytes on the wire, next to their goals.

BENCH_QUICK=1 runs two short pairs per tool and skips the 1 M row page bench and the year, so
the whole script can be smoke-tested in a few minutes; results.json then
says "quick": true and its figures are not results.

Runs against the PostgreSQL database and Redis of DATABASE_URL and
CELERY_BROKER_URL (the Makefile sets them); MariaDB on 127.0.0.1:3306.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402

from bench import overhead, pool, scale  # noqa: E402
from bench.cells import beyond_measure, beyond_phases, end_leftovers, wait_for  # noqa: E402
from bench.overhead_arms import ARMS, GOAL_ARMS  # noqa: E402
from bench.report import print_overhead, print_pool, print_scale, print_table, print_year, spread  # noqa: E402
from benchapp.models import Credential, Run, Team  # noqa: E402
from benchapp.runs import orchestration  # noqa: E402
from tests.support.sshd import start_sshd, stop_sshd  # noqa: E402
from tests.support.worker import Worker  # noqa: E402

RESULTS = ROOT / "bench" / "results.json"
FAST = {"BENCHBOARD_HEARTBEAT_SECONDS": "2", "BENCHBOARD_LEASE_SECONDS": "30"}
MARIADB = {
    "kind": "mysql",
    "host": "127.0.0.1",
    "port": 3306,
    "user": "root",
    "database": "benchboard_bench",
}


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ------------------------------------------------------------------ setup


def ensure_database() -> None:
    """Create the PostgreSQL database of DATABASE_URL if it does not exist yet."""
    import psycopg
    from django.conf import settings

    db = settings.DATABASES["default"]
    if not db["ENGINE"].endswith("postgresql"):
        return
    with psycopg.connect(
        host=db["HOST"],
        port=db["PORT"] or 5432,
        user=db["USER"],
        password=db["PASSWORD"] or None,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [db["NAME"]]
        ).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{db["NAME"]}"')


def prepare_environment(workdir: Path):
    """Migrate, make a team, an sshd with a stored key, and the bench database."""
    ensure_database()
    call_command("migrate", verbosity=0)
    team, _ = Team.objects.get_or_create(name="bench")
    if end_leftovers(team):
        log("cancelled the runs an interrupted bench left active")
    (workdir / "sshd").mkdir()
    server = start_sshd(workdir / "sshd")
    cred, _ = Credential.objects.get_or_create(
        team=team, name="bench-ssh", defaults={"kind": Credential.SSH_KEY}
    )
    cred.set_secret(server.client_key)
    cred.save()
    subprocess.run(
        [
            "mariadb",
            "-h127.0.0.1",
            "-uroot",
            "-e",
            "CREATE DATABASE IF NOT EXISTS benchboard_bench",
        ],
        check=True,
    )
    return team, server


def ssh_block(server) -> dict:
    return {
        "host": server.host,
        "port": server.port,
        "user": server.user,
        "credential": "bench-ssh",
        "known_host_key": server.host_key,
    }


def plan_for(tool: str, params: dict, server=None, targets=("t1",), axes=None) -> dict:
    """A one-tool plan; with server, the tool runs over SSH on it."""
    kind = "host" if tool == "fio" else "mysql"
    entries = []
    for name in targets:
        entry = {"name": name, "kind": kind}
        if kind == "mysql":
            entry.update(MARIADB)
        if server is not None:
            entry["ssh"] = ssh_block(server)
        entries.append(entry)
    plan = {"name": f"bench-{tool}", "tool": tool, "targets": entries, "params": params}
    if server is not None:
        plan["client"] = {"on": "target"}
    if axes:
        plan["axes"] = axes
    return plan


# ------------------------------------------------------------ measurements


def through_benchboard(team, plan: dict, timeout: float = 300) -> Run:
    return wait_for(orchestration.start_run(team, plan, origin="bench"), timeout)


def ssh_cell_overhead(team, server, workdir: Path, cells: int = 8) -> dict:
    """Harness cost per cell over SSH: fio cells of 1 s on one SSH host, in one run.

    The first cell pays the connection and the host facts; the others show
    what every further cell costs.
    """
    params = {
        "rw": "read",
        "bs": "4k",
        "size": "8M",
        "runtime": 1,
        "time_based": True,
        "filename": "bench.data",
    }  # relative: in the cell's work dir on the host
    run = through_benchboard(
        team, plan_for("fio", params, server, axes={"iodepth": list(range(1, cells + 1))})
    )
    if run.status != Run.SUCCEEDED:
        raise RuntimeError(f"fio over SSH: {run.status} {[c.error for c in run.cells.all()]}")
    first, *rest = [beyond_phases(c) for c in run.cells.order_by("started_at")]
    return {
        "first_cell_s": round(first, 3),
        "further_cells_s": spread(rest),
        "all_cells_s": spread([first, *rest]),
    }


def local_cell_overhead(team, workdir: Path, cells: int = 5) -> float:
    params = {
        "rw": "read",
        "bs": "4k",
        "size": "8M",
        "runtime": 1,
        "time_based": True,
        "filename": "bench.data",
    }  # in the cell's work dir
    run = through_benchboard(
        team, plan_for("fio", params, axes={"iodepth": list(range(1, cells + 1))})
    )
    return statistics.median(beyond_measure(cell) for cell in run.cells.all())


def scale_figures(team, workdir: Path, rounds: int) -> dict:
    """Cells per minute with 1, 2 and 4 workers over 8 targets (bench/scale.py),
    and the run lifecycle's cost up to 2,000 cells (bench/lifecycle.py: its
    own process and throwaway database)."""
    figures = {
        "cell_throughput": scale.cell_throughput(team, workdir, dict(os.environ), rounds, log),
        "lifecycle": script_figures("bench/lifecycle.py", "--json"),
    }
    log("pool: local cells per minute with 1 and 2 worker hosts; a lost host's cell:")
    figures["pool"] = pool.throughput(team, workdir, dict(os.environ), max(2, rounds), log)
    figures["pool"]["lost_host"] = pool.lost_host_requeue(team, workdir, dict(os.environ))
    return figures


def year_figures(scale: str) -> dict | None:
    """scripts/bench_scale.py: the generated year (its own database, built once) and
    the pages timed on it. Niced: it takes minutes and a machine's disk."""
    return script_figures("bench_scale.py", "--json", "--scale", scale, nice=True)


def script_figures(script: str, *args: str, nice: bool = False) -> dict | None:
    """Run a measuring script (in scripts/, or a path from the root) that prints JSON last."""
    path = ROOT / script if "/" in script else ROOT / "scripts" / script
    if not path.exists():
        return None
    command = [sys.executable, str(path), *args]
    proc = subprocess.run(
        ["nice", "-n", "10", *command] if nice else command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-2000:])
    for line in reversed(proc.stdout.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    return {"output": proc.stdout.strip().splitlines()[-12:], "exit_code": proc.returncode}


# ------------------------------------------------------------------- main


def main() -> int:
    # A bench stopped by SIGTERM (timeout, kill) ends as on Ctrl-C: its finally
    # blocks stop the worker, the sshd and the private servers it started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7, help="overhead study: pairs per tool")
    parser.add_argument(
        "--seconds",
        type=int,
        default=overhead.SECONDS,
        help="overhead study: how long each job runs",
    )
    parser.add_argument(
        "--quick",
        action="store_const",
        const=overhead.QUICK_SECONDS,
        dest="seconds",
        help="overhead study: %(const)s s jobs, to check the code (not results)",
    )
    parser.add_argument("--tools", nargs="+", help="overhead study: only these tools")
    parser.add_argument(
        "--arms",
        nargs="+",
        choices=ARMS,
        default=list(GOAL_ARMS),
        help="overhead study: these arms (default: %(default)s; sandbox: the same command "
        "in the sandbox a local cell runs in)",
    )
    parser.add_argument("--skip-pages", action="store_true", help="skip the 1 M row page bench")
    parser.add_argument(
        "--year-scale",
        default="1",
        help="scale-data: share of the generated year (1: 100 M measurements, about 37 GB)",
    )
    parser.add_argument("--skip-year", action="store_true", help="skip the generated year")
    parser.add_argument(
        "--year-chromium",
        action="store_true",
        help="scale-data: then the year's pages in Chromium (bench/pages.py --year)",
    )
    parser.add_argument(
        "--only",
        choices=["overhead", "ssh-overhead", "pages", "scale", "scale-data", "pool"],
        help="measure one thing and print it (nothing written)",
    )
    args = parser.parse_args()
    if args.only:
        return only(args)
    quick = os.environ.get("BENCH_QUICK") == "1"
    if quick:  # a smoke test of the whole bench in a few minutes: its figures are not results
        args.pairs, args.seconds, args.skip_pages = 2, overhead.QUICK_SECONDS, True
    results = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": quick,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
        },
    }
    with tempfile.TemporaryDirectory(prefix="benchboard-bench-") as tmp:
        workdir = Path(tmp)
        team, server = prepare_environment(workdir)
        env = {**os.environ, **FAST}
        worker = None
        try:
            log(f"harness overhead, arms {', '.join(args.arms)}:")
            # The study starts its own worker, with the heartbeat a user gets.
            results["overhead"] = overhead.study(
                team, server, workdir, args.pairs, args.seconds, args.tools, tuple(args.arms)
            )
            worker = Worker(workdir / "worker.log", env, "bench")
            results["cell_overhead_local_s"] = local_cell_overhead(team, workdir)
            log("harness cost per cell over SSH (fio, one host, one run):")
            results["ssh_harness_overhead"] = ssh_cell_overhead(team, server, workdir)
        finally:
            if worker is not None:
                worker.stop()
            stop_sshd(server)
        log("scale: cells per minute with 1, 2 and 4 workers over 8 targets; plan start:")
        results["scale"] = scale_figures(team, workdir, rounds=1 if quick else 3)
    log("parser throughput:")
    results["parsers"] = script_figures("bench_parsers.py")
    log("series storage per value, one row per value vs the series store:")
    results["series_storage"] = script_figures("bench_storage.py")
    log("telemetry sampling cost (the sampler alone; sysbench cpu with it on and off):")
    seconds = "20" if quick else "60"
    results["telemetry_cost"] = script_figures("bench_sampler.py", "--seconds", seconds)
    if not args.skip_pages:
        log("results pages at 20k/100k/1M measurements:")
        results["pages"] = {
            str(runs * 10000): script_figures("bench_results.py", "--json", "--runs", str(runs))
            for runs in (2, 10, 100)
        }
    if not (args.skip_year or quick):
        log(f"a generated year at scale {args.year_scale} (built once, then reused):")
        results["year"] = year_figures(args.year_scale)
    log("results pages in chromium (cold and warm load, bytes on the wire):")
    # A process of its own: it serves another database than this one's.
    results["browser_pages"] = script_figures("bench/pages.py", "--loads", "1" if quick else "5")
    RESULTS.write_text(json.dumps(results, indent=2, default=str))
    print_table(results, RESULTS.relative_to(ROOT))
    return 0


def only(args) -> int:
    """`--only overhead|ssh-overhead|pages|scale`: one measurement, printed (nothing written)."""
    if args.only == "pages":  # its own process, see main()
        return subprocess.call([sys.executable, str(ROOT / "bench" / "pages.py")])
    if args.only == "scale-data":
        figures = year_figures(args.year_scale)
        print(json.dumps(figures, indent=2))
        print_year(figures)
        if args.year_chromium:  # its own process: it serves the year's database
            pages = [sys.executable, str(ROOT / "bench" / "pages.py"), "--year"]
            return subprocess.call([*pages, "--year-scale", args.year_scale])
        return 0
    if args.only == "pool":
        ensure_database()
        call_command("migrate", verbosity=0)
        team, _ = Team.objects.get_or_create(name="bench")
        end_leftovers(team)
        with tempfile.TemporaryDirectory(prefix="benchboard-bench-") as tmp:
            figures = {"pool": pool.throughput(team, Path(tmp), dict(os.environ), 2, log)}
            figures["pool"]["lost_host"] = pool.lost_host_requeue(team, Path(tmp), dict(os.environ))
        print(json.dumps(figures, indent=2))
        print_pool(figures["pool"])
        return 0
    if args.only == "scale":
        ensure_database()
        call_command("migrate", verbosity=0)
        team, _ = Team.objects.get_or_create(name="bench")
        end_leftovers(team)
        with tempfile.TemporaryDirectory(prefix="benchboard-bench-") as tmp:
            figures = scale_figures(team, Path(tmp), rounds=3)
        print(json.dumps(figures, indent=2))
        print_scale(figures)
        return 0
    with tempfile.TemporaryDirectory(prefix="benchboard-bench-") as tmp:
        workdir = Path(tmp)
        team, server = prepare_environment(workdir)
        try:
            if args.only == "overhead":
                figures = overhead.study(
                    team, server, workdir, args.pairs, args.seconds, args.tools, tuple(args.arms)
                )
            else:
                worker = Worker(workdir / "worker.log", {**os.environ, **FAST}, "bench")
                try:
                    figures = ssh_cell_overhead(team, server, workdir)
                finally:
                    worker.stop()
        finally:
            stop_sshd(server)
    print(json.dumps(figures, indent=2))
    if args.only == "overhead":
        print_overhead(figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
