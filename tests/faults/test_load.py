"""Many teams start runs at once through the API while workers are killed
(docs/operations.md, "Load and faults"; figures in BENCHMARKS.md).

Each team has its own target, a private redis-server on loopback, and starts
LOAD_PLANS plans of LOAD_CELLS redis-benchmark cells, each LOAD_STARTS times,
through POST /api/runs/ (a real HTTP server), all within LOAD_STORM_SECONDS,
on four worker processes (each its own worker host when run as root). Faults
from a seeded schedule (LOAD_SEED) hit meanwhile: kill -9 of a worker (its
cell is re-run by the reaper) or SIGTERM, each replaced; with
LOAD_SERVICE_FAULTS=1 also the broker's messages lost and the app database's
connections cut (KINDS). The short version (5 teams x 2 plans) runs in
`make test`; `make faults-load` is the full one (500 runs).

It prints runs and cells started, finished, failed by reason, lost, measured
twice and stuck; per team the longest wait for a slot against the
fair-share bound; the API's p95 latency during the storm; the database's
peak connection count against max_connections; the recovery time after each
fault (until the next cell is recorded).
"""

from __future__ import annotations

import math
import os
import random
import signal
import statistics
import threading
import time
from collections import Counter

import pytest
import redis
import requests
from django.conf import settings
from django.db import DatabaseError, connection
from rest_framework.authtoken.models import Token

from benchapp.models import Cell, CellMeasurements, Membership, Run, Team
from benchapp.runs import reaper
from tests.support.private_services import redis_server
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)

TEAMS = int(os.environ.get("LOAD_TEAMS", 5))
PLANS = int(os.environ.get("LOAD_PLANS", 2))
STARTS = int(os.environ.get("LOAD_STARTS", 1))  # runs of each plan
CELLS = int(os.environ.get("LOAD_CELLS", 2))  # cells of each run (1 or 2)
SEED = int(os.environ.get("LOAD_SEED", 41))
STORM_SECONDS = float(os.environ.get("LOAD_STORM_SECONDS", 10 if TEAMS <= 5 else 180))
WORKERS = 4
FAULTS = max(2, TEAMS // 10)
# Worker faults, and (LOAD_SERVICE_FAULTS=1, `make faults-load`) the broker's
# queued messages lost as a Redis restarted without persistence loses them
# (FLUSHDB of this run's own Redis database: the machine's Redis serves others
# too) and every connection to the app database cut as its restart cuts them
# (pg_terminate_backend of this test database's other sessions).
KINDS = ["kill -9", "SIGTERM"]
if os.environ.get("LOAD_SERVICE_FAULTS") == "1":
    KINDS += ["Redis messages lost", "app database connections cut"]
# Four worker hosts (each worker in its own UTS namespace, root only): local
# tools load their worker host, which one team's cells hold at a time.
OWN_HOSTS = os.geteuid() == 0 and os.environ.get("LOAD_OWN_HOSTS", "1") == "1"
CELL_SECONDS_FLOOR = 5  # a cell's turn, for the fair-share bound, on a busy machine


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def plan(team: int, number: int, port: int) -> dict:
    return {
        "name": f"load-{team}-{number}",
        "tool": "redis_benchmark",
        # Every team's server is on this one machine: the default isolation
        # (machine) would run one cell at a time across all teams, by design.
        "isolation": "target",
        "targets": [{"name": "cache", "kind": "redis", "host": "127.0.0.1", "port": port}],
        "params": {"requests": 2000, "clients": 2, "tests": "set"},
        "axes": {"pipeline": [1, 4][:CELLS]},
    }


class Sampler(threading.Thread):
    """Polls a figure every `every` s until stopped; keeps the peak."""

    def __init__(self, read, every=0.5):
        super().__init__(daemon=True)
        self.read, self.every, self.peak = read, every, 0
        self.done = threading.Event()

    def run(self):
        try:
            while not self.done.wait(self.every):
                try:
                    self.peak = max(self.peak, self.read())
                except DatabaseError:  # its connection cut by a fault: a new one next time
                    connection.close()
        finally:
            connection.close()


def db_connections() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        return cursor.fetchone()[0]


class Reaper(threading.Thread):
    """Beat's reaper, every 5 s."""

    def __init__(self):
        super().__init__(daemon=True)
        self.done = threading.Event()

    def run(self):
        try:
            while not self.done.wait(5):
                try:
                    reaper.reap()
                except DatabaseError:  # beat's next tick reaps: a new connection
                    connection.close()
        finally:
            connection.close()


def active() -> bool:
    try:
        return Run.objects.filter(status__in=Run.ACTIVE).exists()
    except DatabaseError:  # this thread's connection cut by a fault
        connection.close()
        return True


def storm(url: str, starts: list[tuple[str, dict]], seconds: float) -> tuple[list, list]:
    """POST every plan within `seconds` (8 clients), and GET run lists between;
    returns (responses' status codes, latencies in s)."""
    codes, latencies, lock = [], [], threading.Lock()
    began = time.monotonic()
    gap = seconds / max(len(starts), 1)

    def client(share):
        session = requests.Session()
        for index, (token, document) in share:
            time.sleep(max(0.0, began + index * gap - time.monotonic()))
            headers = {"Authorization": f"Token {token}"}
            for method, path, body in (
                ("post", "/api/runs/", {"document": document}),
                ("get", "/api/runs/", None),
            ):
                sent = time.monotonic()
                try:
                    response = session.request(method, url + path, json=body, headers=headers)
                except requests.RequestException as exc:  # counted, not the end of the storm
                    response = type("Failed", (), {"status_code": type(exc).__name__})()
                with lock:
                    latencies.append(time.monotonic() - sent)
                    if method == "post":
                        codes.append(response.status_code)

    numbered = list(enumerate(starts))
    threads = [threading.Thread(target=client, args=(numbered[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return codes, latencies


def slot_waits(runs, cells) -> dict[int, float]:
    """Per team, the longest time one of its cells was ready but not started:
    from its run's start, or from the end of the team's previous cell (a
    team's cells take turns on its one redis-server: that wait is its own
    machine's lock, not a slot), to its own start."""
    created = {run.pk: run.created_at for run in runs}
    waits: dict[int, float] = {}
    by_team: dict[int, list] = {}
    for cell in cells:
        if cell.started_at and cell.finished_at:
            by_team.setdefault(cell.run.team_id, []).append(cell)
    for team, mine in by_team.items():
        mine.sort(key=lambda c: c.started_at)
        previous = None
        for cell in mine:
            ready = created[cell.run_id]
            if previous is not None and previous > ready:
                ready = previous
            wait = (cell.started_at - ready).total_seconds()
            waits[team] = max(waits.get(team, 0.0), wait)
            previous = cell.finished_at
    return waits


def recovery(wall, running: list[int]) -> float:
    """Seconds from a fault until every cell running at that moment was
    recorded (a killed worker's cell: re-run by the reaper after its lease)."""
    ends = Cell.objects.filter(pk__in=running).values_list("finished_at", flat=True)
    return max([(end - wall).total_seconds() for end in ends if end] or [0.0])


def test_load_many_teams_with_worker_faults(live_server, tmp_path, start_worker, django_user_model):
    from django.utils import timezone

    rng = random.Random(SEED)
    servers, starts = [], []
    for t in range(TEAMS):
        directory = tmp_path / f"redis-{t}"
        directory.mkdir()
        servers.append(redis_server(directory))
        team = Team.objects.create(name=f"load-{t}")
        user = django_user_model.objects.create_user(f"load{t}")  # the API uses its token
        Membership.objects.create(team=team, user=user, role=Membership.MEMBER)
        token = Token.objects.create(user=user).key
        starts += [(token, plan(t, n, servers[-1].port)) for n in range(PLANS)] * STARTS
    rng.shuffle(starts)

    def worker(i: int, name: str):
        host = f"load-host-{i}" if OWN_HOSTS else None
        return start_worker(name, host=host, **FAST_LEASES)

    workers = [worker(i, f"load{i}") for i in range(WORKERS)]
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_connections")
        max_connections = int(cursor.fetchone()[0])
    sampler, reaper = Sampler(db_connections), Reaper()
    sampler.start()
    reaper.start()
    fault_times = sorted(rng.uniform(0.2, 1.0) * STORM_SECONDS for _ in range(FAULTS))
    fault_kinds = [KINDS[i % len(KINDS)] for i in range(FAULTS)]
    rng.shuffle(fault_kinds)
    hits: list[tuple[str, object, list[int]]] = []
    began = time.monotonic()
    result: dict = {}

    def faults():
        for at, kind in zip(fault_times, fault_kinds):
            time.sleep(max(0.0, began + at - time.monotonic()))
            index = rng.randrange(len(workers))
            victim = workers[index]
            running = list(Cell.objects.filter(status=Cell.RUNNING).values_list("pk", flat=True))
            wall = timezone.now()
            if kind == "Redis messages lost":
                redis.Redis.from_url(settings.CELERY_BROKER_URL).flushdb()
                hits.append((kind, wall, running))
                continue
            if kind == "app database connections cut":
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                    )
                hits.append((kind, wall, running))
                continue
            if kind == "kill -9":
                victim.kill(signal.SIGKILL)
            else:
                victim.kill(signal.SIGTERM)  # warm: waits for its cell
            hits.append((kind, wall, running))
            workers[index] = worker(index, f"load{len(hits)}r")
        connection.close()

    injector = threading.Thread(target=faults, daemon=True)
    injector.start()
    try:
        codes, latencies = storm(live_server.url, starts, STORM_SECONDS)
        injector.join(timeout=STORM_SECONDS + 600)
        deadline = time.monotonic() + 300 + 30 * TEAMS * PLANS
        while active():
            assert time.monotonic() < deadline, "runs still active"
            time.sleep(1)
        took = time.monotonic() - began
    finally:
        sampler.done.set()
        reaper.done.set()
        sampler.join(timeout=10)
        reaper.join(timeout=30)
        for server in servers:
            server.stop()

    runs = list(Run.objects.all())
    cells = list(Cell.objects.select_related("run"))
    statuses = Counter(c.status for c in cells)
    reasons = Counter(c.error.split(":")[0][:60] for c in cells if c.status == Cell.FAILED)
    measured = Counter(CellMeasurements.objects.values_list("cell_id", flat=True))
    twice = sum(1 for count in measured.values() if count > 1)
    lost = (
        codes.count(201)
        - len(runs)
        + sum(1 for c in cells if c.status == Cell.SUCCEEDED and c.pk not in measured)
    )
    stuck = sum(1 for c in cells if c.status not in Cell.TERMINAL)
    durations = [
        (c.finished_at - c.started_at).total_seconds()
        for c in cells
        if c.started_at and c.finished_at and c.status == Cell.SUCCEEDED
    ]
    turn = max(CELL_SECONDS_FLOOR, max(durations, default=0))
    bound = math.ceil(TEAMS / WORKERS) * turn
    waits = slot_waits(runs, cells)
    p95 = statistics.quantiles(latencies, n=20)[-1] if len(latencies) >= 20 else max(latencies)
    result.update(
        seed=SEED,
        teams=TEAMS,
        plans=PLANS,
        runs_started=codes.count(201),
        refused=len(codes) - codes.count(201),
        cells=len(cells),
        succeeded=statuses[Cell.SUCCEEDED],
        failed=statuses[Cell.FAILED],
        lost=lost,
        measured_twice=twice,
        stuck=stuck,
    )
    print(
        f"\nload: seed {SEED}, {TEAMS} teams x {PLANS} plans x {STARTS} starts, {CELLS} "
        f"cells a run, {WORKERS} workers{' on their own hosts' if OWN_HOSTS else ''}, {took:.0f} s"
    )
    print(
        f"runs started {codes.count(201)} (refused {dict(Counter(c for c in codes if c != 201))}), "
        f"cells {len(cells)}: succeeded {statuses[Cell.SUCCEEDED]}, failed "
        f"{statuses[Cell.FAILED]} {dict(reasons)}, lost {lost}, measured twice {twice}, "
        f"stuck {stuck}"
    )
    over = {t: w for t, w in waits.items() if w > bound}
    print(
        f"longest wait for a slot: {max(waits.values()):.1f} s (median team "
        f"{statistics.median(waits.values()):.1f} s); fair-share bound "
        f"ceil({TEAMS}/{WORKERS}) x {turn:.1f} s = {bound:.1f} s; teams over it: {len(over)}"
    )
    print(
        f"API p95 {p95 * 1000:.0f} ms over {len(latencies)} requests; "
        f"database connections at peak {sampler.peak} of max_connections {max_connections}"
    )
    if os.environ.get("LOAD_TIMELINE"):
        for c in sorted(cells, key=lambda c: c.started_at or c.run.created_at):
            t0 = c.run.created_at
            print(
                f"team {c.run.team_id} run {c.run_id} cell {c.pk} created {t0:%H:%M:%S.%f} "
                f"start +{(c.started_at - t0).total_seconds():.1f} "
                f"end +{(c.finished_at - t0).total_seconds():.1f} attempt {c.attempt}"
            )
    for kind, wall, running in hits:
        print(
            f"fault {kind} at {wall:%H:%M:%S}: the {len(running)} cells running then were "
            f"all recorded {recovery(wall, running):.1f} s later"
        )
    # A start whose database connection a fault cut is a 500 (nothing stored:
    # its transaction rolled back); every other start is accepted.
    cut = codes.count(500) if "app database connections cut" in KINDS else 0
    assert codes.count(201) + cut == len(starts), Counter(codes)
    assert (lost, twice, stuck) == (0, 0, 0)
    assert not [r for r in runs if r.status in Run.ACTIVE]
    assert statuses[Cell.SUCCEEDED] + statuses[Cell.FAILED] == len(cells)
    assert sampler.peak < max_connections
