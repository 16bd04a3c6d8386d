"""Several client hosts loading one target together, for real.

Three sshd instances (tests/support/sshd.py, distinct ports) are the client
hosts; a private MariaDB and the tests' private PostgreSQL are the targets.
What the clients report, combined, is checked against what the server
counted itself over the same window.
"""

from __future__ import annotations

import shutil
import threading
import time

import pytest

from runners.cell import run_cell
from runners.context import CellContext
from runners.errors import ValidationError
from runners.plan import expand, load_plan
from tests.support.dbtargets import postgres_target  # noqa: F401
from tests.support.private_services import mariadb_server, private_postgres_server, private_redis  # noqa: F401
from tests.support.sshd import _children, _comm, start_sshd, stop_sshd


@pytest.fixture(scope="module")
def client_hosts(tmp_path_factory):
    """Three real sshd instances: three client hosts."""
    servers = [start_sshd(tmp_path_factory.mktemp(f"client{i}")) for i in range(3)]
    yield servers
    for server in servers:
        stop_sshd(server)


@pytest.fixture(scope="module")
def mariadb(tmp_path_factory):
    """A private mariadbd (root without password) with a database `bench`: its
    global status counts only what these tests send."""
    directory = tmp_path_factory.mktemp("mariadb")
    server = mariadb_server(directory)
    _sql(server.port, "CREATE DATABASE bench")
    yield server
    server.stop()
    shutil.rmtree(directory / "mariadb", ignore_errors=True)


def _sql(port: int, statement: str) -> str:
    import subprocess

    return subprocess.run(
        ["mariadb", "--no-defaults", "-h127.0.0.1", f"-P{port}", "-uroot", "-N", "-e", statement],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout


def _status(port: int, name: str) -> int:
    return int(_sql(port, f"SHOW GLOBAL STATUS LIKE '{name}'").split()[1])


def _clients(servers) -> list[dict]:
    """The plan's clients: each sshd with its own key, credential client-key<i>."""
    return [
        {
            "ssh": {
                "host": s.host,
                "port": s.port,
                "user": s.user,
                "credential": f"client-key{i}",
                "known_host_key": s.host_key,
            }
        }
        for i, s in enumerate(servers)
    ]


def _context(plan, servers) -> CellContext:
    # Each sshd accepts only its own key: client-key<i> is servers[i]'s.
    return CellContext(plan, resolve_secret=lambda name: servers[int(name[-1])].client_key)


def _plan_doc(tool: str, target: dict, params: dict, servers, **extra) -> dict:
    return {
        "name": "multi",
        "tool": tool,
        "targets": [target],
        "client": _clients(servers),
        "params": params,
        "timeout": 120,
        **extra,
    }


def _mysql_target(server) -> dict:
    return {
        "name": "db",
        "kind": "mysql",
        "host": "127.0.0.1",
        "port": server.port,
        "user": "root",
        "database": "bench",
        "telemetry": False,
    }


# ---------------------------------------------------------------- sysbench


def test_sysbench_one_two_three_clients_sum_to_what_the_server_counted(client_hosts, mariadb):
    plan = load_plan(
        _plan_doc(
            "sysbench",
            _mysql_target(mariadb),
            {
                "test": "oltp_read_write",
                "tables": 2,
                "table_size": 2000,
                "threads": 2,
                "time": 6,
                "histogram": True,
                "report_interval": 1,
            },
            client_hosts,
            axes={"client_hosts": [1, 2, 3]},
            prepare={"once": True},
            cleanup=False,
            # The clients' own clocks: on a busy test machine their SSH
            # sessions really start up to a second apart (not the tool's doing).
            min_overlap=0.6,
        )
    )
    cells = expand(plan)
    assert [c.clients for c in cells] == [1, 2, 3]
    with _context(plan, client_hosts) as ctx:
        for cell in cells:
            before = _status(mariadb.port, "Com_commit")
            outcome = run_cell(plan, cell, ctx)
            commits = _status(mariadb.port, "Com_commit") - before
            assert (outcome.status, outcome.error) == ("succeeded", ""), cell.clients
            metrics = outcome.result.metrics
            # The server committed what the clients together say they ran
            # (sysbench's own transactions; the prepare ran in cell 1 only,
            # and its commits are in cell 1's count: at most a few).
            assert metrics["transactions"] == pytest.approx(commits, rel=0.02, abs=10)
            if cell.clients == 1:
                continue
            facts = outcome.facts
            assert facts["clients"] == cell.clients
            assert 0 <= facts["start_spread_s"] < plan.start_tolerance
            assert facts["overlap_share"] >= plan.min_overlap
            _assert_client_clocks(outcome)
            per_client = [g for g in outcome.result.groups if "client" in g["labels"]]
            assert [g["labels"]["client"] for g in per_client] == list(range(1, cell.clients + 1))
            assert metrics["tps"] == pytest.approx(sum(g["metrics"]["tps"] for g in per_client))
            # Each window is the time sysbench measured, not its SSH session's
            # exit (up to 1.3 s later on a busy machine: CI's 86 % overlaps).
            lengths = [end - start for start, end in facts["client_windows"]]
            assert lengths == pytest.approx([g["metrics"]["total_time_s"] for g in per_client])
            # Throughput summed: the server's commits over the 6 s every
            # client measured (not the clients' wall-clock span, which also
            # holds each SSH session's exit, over a second on a busy machine).
            assert metrics["tps"] == pytest.approx(commits / 6, rel=0.1)
            # Percentiles come from the merged histogram, not an average.
            assert "latency_p95_ms" not in " ".join(outcome.warnings)
            assert len(outcome.result.facts["clients"]) == cell.clients
            assert sorted(r.phase for r in outcome.phases if r.phase.startswith("measure")) == [
                f"measure:client={i}" for i in range(1, cell.clients + 1)
            ]
            assert len(facts["clients_cpu_busy_pct"]) == cell.clients
            assert len(facts["client_hosts"]) == cell.clients
            # client-bound when any client was: the busiest client decides
            assert facts["client_cpu_busy_pct"] == max(facts["clients_cpu_busy_pct"])
            assert facts["client_bound"] is bool(facts["clients_bound"])


def _assert_client_clocks(outcome) -> None:
    """Each client's window was timed by its own clock: it starts after the
    worker launched it (the worker's stamp), within the seconds an SSH
    session takes to start on a busy machine."""
    facts = outcome.facts
    assert facts["client_windows_clock"] == ["client"] * facts["clients"]
    launched = {r.phase: r.started for r in outcome.phases}
    for i, (start, _) in enumerate(facts["client_windows"], 1):
        assert launched[f"measure:client={i}"] - 0.05 < start < launched[f"measure:client={i}"] + 5


def _sysbench_pids(server) -> list[int]:
    """sysbench processes running under one sshd (its sessions' descendants)."""
    found, todo = [], [server.process.pid]
    while todo:
        for child in _children(todo.pop()):
            todo.append(child)
            if _comm(child) == "sysbench":
                found.append(child)
    return found


def test_a_client_killed_mid_run_fails_the_cell_and_stops_the_others(client_hosts, tmp_path):
    import os
    import signal

    server = mariadb_server(tmp_path)
    try:
        _sql(server.port, "CREATE DATABASE bench")
        plan = load_plan(
            _plan_doc(
                "sysbench",
                _mysql_target(server),
                {"test": "oltp_read_only", "tables": 1, "table_size": 500, "time": 30},
                client_hosts,
            )
        )
        (cell,) = expand(plan)
        killed = []

        def kill_client_two():
            # Once all three run, kill client 2's sysbench.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not all(map(_sysbench_pids, client_hosts)):
                time.sleep(0.1)
            time.sleep(1)
            for pid in _sysbench_pids(client_hosts[1]):
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)

        killer = threading.Thread(target=kill_client_two)
        killer.start()
        started = time.monotonic()
        with _context(plan, client_hosts) as ctx:
            outcome = run_cell(plan, cell, ctx)
        elapsed = time.monotonic() - started
        killer.join()
        assert killed
        assert outcome.status == "failed"
        assert "client 2" in outcome.error
        assert elapsed < 25  # the others were stopped, not left to run their 30 s
        time.sleep(1)  # the remote process groups' last members are reaped
        assert _sysbench_pids(client_hosts[0]) == []
        assert _sysbench_pids(client_hosts[2]) == []
    finally:
        server.stop()


# ---------------------------------------------------------------- client clocks


@pytest.fixture(scope="module")
def slow_login_host(tmp_path_factory):
    """A fourth client host whose every SSH session waits 1 s before its command."""
    server = start_sshd(tmp_path_factory.mktemp("slowlogin"), login_delay=1)
    yield server
    stop_sshd(server)


def test_client_start_times_come_from_the_clients_and_a_slow_login_is_refused(
    client_hosts, slow_login_host, mariadb
):
    """The worker launches all three at one moment, but client 3's login
    sleeps 1 s: by the clients' own clocks (less their offset to the worker)
    it started about a second late, so start_tolerance refuses the cell and
    names that host."""
    hosts = [client_hosts[0], client_hosts[1], slow_login_host]
    plan = load_plan(
        _plan_doc(
            "sysbench",
            _mysql_target(mariadb),
            {"test": "oltp_point_select", "tables": 1, "table_size": 200, "time": 4},
            hosts,
            prepare=False,
            # Well below the 1 s login, above what a busy machine adds to
            # the other two clients' session starts.
            start_tolerance=0.3,
            min_overlap=0,
        )
    )
    (cell,) = expand(plan)
    _sql(
        mariadb.port,
        "CREATE TABLE IF NOT EXISTS bench.sbtest1 (id INT PRIMARY KEY, k INT, "
        "c CHAR(120), pad CHAR(60), KEY k_1 (k))",
    )
    _sql(mariadb.port, "INSERT IGNORE INTO bench.sbtest1 VALUES (1, 1, 'c', 'p')")
    with _context(plan, hosts) as ctx:
        outcome = run_cell(plan, cell, ctx)
    facts = outcome.facts
    assert outcome.status == "failed", outcome.error
    assert facts["client_windows_clock"] == ["client"] * 3
    # Same machine, same clock: each offset is the measuring's noise.
    assert all(abs(offset) < 0.2 for offset in facts["client_clock_offsets_s"])
    # The worker launched all three at once; client 3's own clock says its
    # tool started after the login's second.
    launched = {r.phase: r.started for r in outcome.phases}
    starts = [start for start, _ in facts["client_windows"]]
    assert abs(launched["measure:client=3"] - launched["measure:client=1"]) < 1.0
    assert 1.0 <= starts[2] - launched["measure:client=3"] < 5
    assert facts["start_spread_s"] > plan.start_tolerance
    slow = f"{slow_login_host.host}:{slow_login_host.port}"
    assert outcome.error.startswith("clients started ")
    assert f"client 3 ({slow}) started" in outcome.error
    # The tool's own output has no trace of the clock marker.
    records = [r for r in outcome.phases if r.phase.startswith("measure:client=")]
    assert len(records) == 3
    assert all("@@benchboard" not in r.stderr + r.stdout for r in records)
    assert all("transactions:" in r.stdout for r in records)


# ---------------------------------------------------------------- collisions


def test_mysqlslap_clients_each_work_in_their_own_schema(client_hosts, mariadb):
    plan = load_plan(
        _plan_doc(
            "mysqlslap",
            _mysql_target(mariadb),
            # Reads: mixed load's inserts each wait for a disk flush, minutes
            # on a busy test machine.
            {
                "auto_generate_sql": True,
                "auto_generate_sql_load_type": "read",
                "concurrency": 4,
                "number_of_queries": 20000,
            },
            client_hosts[:2],
            # A fixed amount of work ends apart on a loaded machine (89 % once):
            # this test checks that the clients do not collide.
            min_overlap=0.5,
        )
    )
    (cell,) = expand(plan)
    with _context(plan, client_hosts) as ctx:
        outcome = run_cell(plan, cell, ctx)
    assert (outcome.status, outcome.error) == ("succeeded", ""), _windows(outcome)
    commands = [r.command for r in outcome.phases if r.phase.startswith("measure:")]
    assert "--create-schema=mysqlslap_c1" in commands[0]
    assert "--create-schema=mysqlslap_c2" in commands[1]
    per_client = [g["metrics"]["qps"] for g in outcome.result.groups if "client" in g["labels"]]
    assert outcome.result.metrics["qps"] == pytest.approx(sum(per_client))
    # Each client dropped its own schema, and only its own.
    assert "mysqlslap_c" not in _sql(mariadb.port, "SHOW DATABASES")


def test_mysqlslap_custom_query_on_a_shared_schema_is_refused(client_hosts, mariadb):
    # Refused when the plan is saved (load_plan builds every client's
    # command), before any cell exists.
    with pytest.raises(ValidationError) as caught:
        load_plan(
            _plan_doc(
                "mysqlslap",
                _mysql_target(mariadb),
                {"query": "SELECT 1", "create_schema": "bench"},
                client_hosts[:2],
            )
        )
    assert caught.value.param == "params.query"
    assert caught.value.message.startswith("several clients would each drop the shared schema")


def test_redis_benchmark_clients_share_the_keyspace(client_hosts, private_redis):  # noqa: F811
    target = {"name": "cache", "kind": "redis", "host": "127.0.0.1", "port": private_redis.port}
    plan = load_plan(
        _plan_doc(
            "redis_benchmark",
            {**target, "telemetry": False},
            {"requests": 300000, "clients": 8, "tests": "set", "keyspace": 1000, "csv": True},
            client_hosts,
            # A fixed number of requests: on a loaded test machine three clients
            # ended 23-30 s into one run (78 % overlap). What this test checks is
            # that they do not collide, so it accepts less overlap, as a plan may.
            min_overlap=0.5,
        )
    )
    (cell,) = expand(plan)
    with _context(plan, client_hosts) as ctx:
        outcome = run_cell(plan, cell, ctx)
    assert (outcome.status, outcome.error) == ("succeeded", ""), _windows(outcome)
    per_client = [g["metrics"]["rps"] for g in outcome.result.groups if "client" in g["labels"]]
    assert len(per_client) == 3
    assert outcome.result.metrics["rps"] == pytest.approx(sum(per_client))


# ---------------------------------------------------------------- pgbench


def test_pgbench_one_two_three_clients_sum_to_what_the_server_counted(
    client_hosts,
    postgres_target,  # noqa: F811
    private_postgres_server,  # noqa: F811
):
    target = {
        "name": "db",
        "kind": "postgres",
        "host": postgres_target.host,
        "port": postgres_target.port,
        "user": "postgres",
        "database": postgres_target.database,
        "telemetry": False,
    }
    plan = load_plan(
        _plan_doc(
            "pgbench",
            target,
            {"scale": 1, "client": 2, "time": 6, "builtin": "select-only", "no_vacuum": True},
            client_hosts,
            axes={"client_hosts": [1, 2, 3]},
            prepare={"once": True},
            min_overlap=0.6,  # the clients' own clocks: see the sysbench test
        )
    )
    query = f"SELECT xact_commit FROM pg_stat_database WHERE datname = '{postgres_target.database}'"
    with _context(plan, client_hosts) as ctx:
        for cell in expand(plan):
            before = int(private_postgres_server.psql(query).strip())
            outcome = run_cell(plan, cell, ctx)
            time.sleep(1)  # backends report their counts when they end
            commits = int(private_postgres_server.psql(query).strip()) - before
            assert (outcome.status, outcome.error) == ("succeeded", ""), _windows(outcome)
            transactions = outcome.result.metrics["transactions"]
            # Each pgbench session adds a few statements of its own
            # (connection setup), and cell 1 holds pgbench -i's.
            assert transactions <= commits <= transactions * 1.02 + 200
            if cell.clients > 1:
                assert outcome.facts["start_spread_s"] < plan.start_tolerance
                _assert_client_clocks(outcome)


def _windows(outcome) -> str:
    """What a failed assertion shows: the error and the clients' windows."""
    facts = outcome.facts
    return f"{outcome.error} {facts.get('client_windows')} {facts.get('start_spread_s')}"


# ---------------------------------------------------------------- through the app


@pytest.mark.django_db(transaction=True)
def test_a_client_hosts_axis_runs_through_a_real_worker_to_the_results_page(
    team,
    owner_client,
    postgres_target,  # noqa: F811
    start_worker,
):
    from benchapp.analysis import results
    from benchapp.models import Run
    from benchapp.runs import orchestration
    from tests.support.measures import stored
    from tests.support.waiting import finished, wait_for

    start_worker("multi")
    plan = {
        "name": "two-clients",
        "tool": "pgbench",
        "targets": [
            {
                "name": "db",
                "kind": "postgres",
                "host": postgres_target.host,
                "port": postgres_target.port,
                "user": "postgres",
                "database": postgres_target.database,
            }
        ],
        # Two sandboxed clients on the worker itself: a web plan's local tools.
        "client": [{"local": True, "count": 2}],
        # A timed tool: clients of a fixed amount of work end apart on a busy
        # machine, and windows overlapping less than 90 % are not counted.
        "params": {"scale": 1, "client": 2, "time": 6, "builtin": "select-only"},
        "axes": {"client_hosts": [1, 2]},
        "prepare": {"once": True},
    }
    run = orchestration.start_run(team, plan)
    wait_for(lambda: finished(run), timeout=180)
    cells = list(run.cells.order_by("index"))
    assert run.status == Run.SUCCEEDED, [(c.error, c.facts.get("client_windows")) for c in cells]
    one, two = cells
    assert "clients" not in one.facts and two.facts["clients"] == 2
    assert two.facts["start_spread_s"] < 2
    # Telemetry on every client host: the second client's as source client2.
    assert {"host", "client2"} <= set(two.facts["telemetry"])
    assert two.facts["verdict"]["checked"][:1] == ["client host"]

    def tps(cell, group):
        (value,) = stored(cells=[cell.pk], group=group, metrics=["tps"])
        return value.value

    assert tps(two, "") == pytest.approx(tps(two, "client=1") + tps(two, "client=2"))
    data = results.results([run])
    assert any(line.startswith("Several clients: 1 cells") for line in data["client_load"])
    page = owner_client.get(f"/runs/{run.pk}/results/").content.decode()
    assert "Several clients: 1 cells loaded their target from 2 client hosts" in page
