"""Host and database telemetry: the sampler's real output read as iostat and
mpstat would, the same figures as /proc read directly, and verdicts from real
load (stress-ng on every core, row lock contention, a table larger than the
buffer pool)."""

from __future__ import annotations

import shutil
import time
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from benchapp.plans.templates_plans import PROVISION, bind, get_template
from runners import dbstatus, hostsampler, telemetry, verdict
from runners.cellwatch import CellWatch
from runners.command import Endpoint
from runners.executors.local import LocalExecutor
from runners.limits import Limits
from runners.plantargets import TargetSpec
from tests.support.cells import cpu_cell, run_plan
from tests.support.private_services import (  # noqa: F401
    mariadb_server,
    private_mariadb,
    private_redis,
    redis_server,
)
from tests.support.sshd import host_target, sshd  # noqa: F401

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "telemetry"


def _raw_samples(text: str) -> list[dict]:
    """The complete samples of a sampler output, read plainly: uptime, ctxt,
    the aggregate cpu line, and each device's diskstats fields."""
    samples, current = [], None
    for line in text.splitlines():
        fields = line.split()
        if line == "@@ end":
            samples.append(current)
        elif line.startswith("@@ "):
            current = {"uptime": float(fields[1]), "disk": {}}
        elif fields and fields[0] == "ctxt":
            current["ctxt"] = int(fields[1])
        elif fields and fields[0] == "cpu":
            current["cpu"] = [int(v) for v in fields[1:9]]
        elif fields and fields[0] == "disk":
            current["disk"][fields[3]] = [int(v) for v in fields[4:15]]
    return samples


def test_host_sampler_output_read_as_the_counters_say():
    text = (FIXTURES / "host-2cpu-debian12.txt").read_text()
    series = telemetry.parse_samples(text)
    raw = _raw_samples(text)
    assert len(series["t"]) == len(raw) - 1 >= 3
    for i, (a, b) in enumerate(zip(raw, raw[1:])):
        dt = b["uptime"] - a["uptime"]
        assert series["ctxt_per_s"][i] == pytest.approx((b["ctxt"] - a["ctxt"]) / dt)
        deltas = [y - x for x, y in zip(a["cpu"], b["cpu"])]
        idle = 100 * (deltas[3] + deltas[4]) / sum(deltas)
        assert series["cpu_busy_pct"][i] == pytest.approx(100 - idle)
        assert series["cpu_steal_pct"][i] == pytest.approx(100 * deltas[7] / sum(deltas))
        for disk in ("vda",):
            if f"disk_{disk}_iops" in series:
                ios = (b["disk"][disk][0] - a["disk"][disk][0]) + (
                    b["disk"][disk][4] - a["disk"][disk][4]
                )
                assert series[f"disk_{disk}_iops"][i] == pytest.approx(ios / dt)
    # Loop devices and partitions are left out; per-core CPU is kept.
    assert not any(name.startswith("disk_loop") for name in series)
    assert "cpu0_busy_pct" in series and "cpu1_busy_pct" in series


def test_a_sample_cut_by_the_stop_is_dropped_not_misread():
    text = (FIXTURES / "host-2cpu-debian12.txt").read_text()
    whole = telemetry.parse_samples(text)
    cut = text[: text.rindex("@@ end")] + "disk 253 0 vda 1"  # the last sample half written
    assert telemetry.parse_samples(cut)["t"] == whole["t"][:-1]


@pytest.mark.parametrize(
    "kind, name", [("mysql", "mariadb-10.11-status.txt"), ("postgres", "postgres-15-stat.txt")]
)
def test_database_counters_become_rates_and_a_hit_ratio(kind, name):
    text = (FIXTURES / name).read_text()
    series, errors = dbstatus.parse_samples(kind, text)
    assert errors == []
    assert len(series["t"]) >= 2
    assert all(0 <= v <= 100 for v in series["hit_ratio_pct"])
    assert all(v >= 0 for v in series["commits_per_s"])
    gauge = "threads_connected" if kind == "mysql" else "active_backends"
    assert all(v >= 1 for v in series[gauge])


def test_database_client_errors_are_reported_once():
    text = "".join(
        f"@@ {clock} 0\nERROR 1045 (28000): Access denied\n@@ end\n" for clock in (1.0, 2.0, 3.0)
    )
    series, errors = dbstatus.parse_samples("mysql", text)
    assert errors == ["ERROR 1045 (28000): Access denied"]
    assert series == {"t": [1.0, 2.0]}  # the seconds are there, with no figure


def _net_samples(speeds: dict[str, int], received_mb: dict[str, list[float]]) -> str:
    """Sampler text of cumulative /proc/net/dev counters: received_mb[if][i]
    MB arrive in second i; nothing else moves."""
    seconds = len(next(iter(received_mb.values())))
    total = dict.fromkeys(received_mb, 0)
    out = []
    for i in range(seconds + 1):
        out.append(f"@@ {100 + i}.00 50.00")
        out += [f"speed {net} {speed}" for net, speed in speeds.items()]
        for net in received_mb:
            out.append(f"net {net} {total[net]} 10 0 0 0 0 0 0 0 5 0 0 0 0 0 0")
            if i < seconds:
                total[net] += int(received_mb[net][i] * 1_000_000)
        out.append("@@ end")
    return "\n".join(out) + "\n"


def test_an_interface_at_its_line_rate_half_the_seconds_is_network_bound():
    # 1000 Mb/s = 125 MB/s: 120 MB/s is 96 %; lo has no speed (-1).
    text = _net_samples(
        {"eth0": 1000, "lo": -1}, {"eth0": [120, 120, 10, 120] * 2, "lo": [900] * 8}
    )
    summary = telemetry.summarize(telemetry.parse_samples(text))
    assert summary["net_eth0_line_pct"]["max"] == pytest.approx(96.0)
    assert summary["net_eth0_line_pct"]["high_share"] == 0.75
    assert "net_lo_line_pct" not in summary  # unknown speed: no share of it
    assert ("net_line_pct", "interface eth0's share of its link speed") in [
        (figure, label) for figure, label, _ in telemetry.figure_rows("client", summary)
    ]
    assert telemetry.summary_metrics({"client": summary})[
        "telemetry.client.net_line_pct.mean"
    ] == pytest.approx(summary["net_eth0_line_pct"]["mean"])
    found = verdict.judge({"client": summary}, None)
    assert found["limit"] == "network"
    assert "eth0 at or above 90 % of its link speed for 75 % of the seconds" in found["text"]


def test_an_interface_under_its_line_rate_most_seconds_is_not_network_bound():
    text = _net_samples({"eth0": 1000}, {"eth0": [120, 100, 100, 10] * 2})  # 1 second in 4
    summary = telemetry.summarize(telemetry.parse_samples(text))
    assert summary["net_eth0_line_pct"]["high_share"] == 0.25
    assert verdict.judge({"client": summary}, None)["limit"] == "none"


def test_a_declared_link_speed_is_the_target_hosts_not_the_clients():
    # A veth's nominal 10000 Mb/s: 6 MB/s is 0.5 % of it, but 96 % of a declared 50 Mb/s.
    text = _net_samples({"veth0": 10000, "lo": -1}, {"veth0": [6.0] * 8, "lo": [900] * 8})
    watch = CellWatch(
        None, TargetSpec(name="t", kind="redis", host="10.0.0.1", link_mbit=50), None, None, None
    )
    for role in ("target", "host", "client"):
        watch._read(role, text)
    lines = {role: watch.series[role].get("net_veth0_line_pct") for role in watch.series}
    assert lines["target"] == lines["host"] == [pytest.approx(96.0)] * 8
    assert lines["client"] == [pytest.approx(0.48)] * 8  # the client keeps its driver's speed
    assert "net_lo_line_pct" not in watch.series["target"]  # lo is never judged
    findings = watch.facts(measure_s=8)["verdict"]["findings"]  # the eight samples
    # The host and target roles both found it; the client's 0.5 % did not.
    assert [(f["code"], f["text"].split(":")[0]) for f in findings] == [
        ("network", "network-bound on the host"),
        ("network", "network-bound on the target"),
    ]


def test_the_host_sampler_prints_each_interfaces_link_speed():
    executor = LocalExecutor()
    try:
        background = executor.start(hostsampler.sampler_command())
        time.sleep(1.5)
        text = executor.stop(background, grace=1.0).stdout
    finally:
        executor.close()
    (_, lines), *_ = telemetry.samples(text)
    # lo has no link speed: reading it fails, and the sampler says -1.
    assert "speed lo -1" in lines


def test_no_limit_found_when_nothing_is_saturated():
    calm = telemetry.summarize(
        {
            "t": [1.0, 2.0, 3.0, 4.0, 5.0],
            "cpu_busy_pct": [20.0, 25.0, 22.0, 21.0, 22.0],
            "cpu_steal_pct": [0.0] * 5,
        }
    )
    found = verdict.judge({"client": calm, "target": calm}, None)
    assert found["limit"] == "none"
    assert found["text"].startswith("no limit found in the telemetry")
    assert found["checked"] == ["client host", "target host"]


def test_client_cpu_comes_before_target_cpu():
    busy = telemetry.summarize(
        {"t": [1.0, 2.0, 3.0, 4.0, 5.0], "cpu_busy_pct": [99.0, 97.0] * 2 + [98.0]}
    )
    found = verdict.judge({"client": busy, "target": busy}, None)
    assert [f["code"] for f in found["findings"]] == ["client_cpu", "target_cpu"]
    assert "98 % busy" in found["text"] and "100 % of the measured seconds" in found["text"]


# ----------------------------------------------------------------- real load


def _mysql_target(port: int, database: str = "test") -> dict:
    return {
        "name": "db",
        "kind": "mysql",
        "host": "127.0.0.1",
        "port": port,
        "user": "root",
        "database": database,
    }


def test_telemetry_over_ssh_matches_proc_read_directly(sshd, tmp_path):  # noqa: F811
    """client: {on: target} over SSH: the host's telemetry (sampled each
    second) and the client CPU figure (two reads of /proc/stat around the
    measure) describe one machine over one window."""
    target = host_target(sshd)
    keys = {"box-key": sshd.client_key}
    (outcome,) = run_plan(
        {
            "tool": "stress_ng" if False else "fio",
            "targets": [target],
            "client": {"on": "target"},
            "params": {"directory": str(tmp_path), "size": "4M", "runtime": 7, "time_based": True},
            "stress": {"cpu": 2, "cpu_load": 100},
        },
        resolve_secret=keys.__getitem__,
    )
    assert outcome.status == "succeeded", outcome.error
    assert list(outcome.telemetry) == ["host"]
    sampled = outcome.facts["telemetry"]["host"]["cpu_busy_pct"]["mean"]
    direct = outcome.facts["client_cpu_busy_pct"]
    assert sampled == pytest.approx(direct, abs=12)
    # The stress-ng the cell started over SSH is the cell's own CPU (a child
    # of the connection's sshd), not "other processes": two workers at 100 %
    # get a share of the two cores even beside ten busy processes of other
    # tests (2 in 12: 16 %); counted as others', the cell would have ~1 %.
    host = outcome.facts["telemetry"]["host"]
    print("over SSH:", outcome.facts["verdict"]["text"], host["cpu_cell_pct"])
    assert host["cpu_cell_pct"]["mean"] >= 8, host
    codes = [f["code"] for f in outcome.facts["verdict"]["findings"]]
    if host["cpu_other_pct"]["mean"] < verdict.DISTURBED_PCT:
        assert codes[0] == "host_cpu", outcome.facts["verdict"]
    else:  # others' tests kept the machine busy too: said first
        assert codes[0] == "disturbed", outcome.facts["verdict"]


@pytest.fixture
def tiny_pool_mariadb(tmp_path):
    """A private mariadbd whose InnoDB buffer pool is 6 MB (resizable online)."""
    server = mariadb_server(
        tmp_path, "--innodb-buffer-pool-size=6M", "--innodb-buffer-pool-chunk-size=1M"
    )
    yield server
    server.stop()
    shutil.rmtree(tmp_path / "mariadb", ignore_errors=True)


def _sql(port: int, statement: str) -> None:
    import subprocess

    subprocess.run(
        ["mariadb", "-h127.0.0.1", f"-P{port}", "-uroot", "-e", statement],
        check=True,
        capture_output=True,
        timeout=120,
    )


@pytest.mark.slow
def test_a_table_larger_than_the_buffer_pool_is_data_not_in_memory(tiny_pool_mariadb):
    port = tiny_pool_mariadb.port
    _sql(port, "CREATE DATABASE sb")
    read = {
        "tool": "sysbench",
        "targets": [_mysql_target(port, "sb")],
        "params": {
            "test": "oltp_point_select",
            "tables": 1,
            "table_size": 200000,
            "threads": 2,
            "time": 7,
        },
    }
    (small,) = run_plan({**read, "prepare": {"once": True}})
    assert small.status == "succeeded", small.error
    codes = [f["code"] for f in small.facts["verdict"]["findings"]]
    assert "not_in_memory" in codes, small.facts["telemetry"]["db"]
    assert small.facts["telemetry"]["db"]["hit_ratio_pct"]["mean"] < 99
    # The same table in a pool that holds it, read once to warm it.
    _sql(port, "SET GLOBAL innodb_buffer_pool_size = 256*1024*1024")
    time.sleep(2)
    _sql(port, "SELECT COUNT(*), SUM(LENGTH(c)) FROM sb.sbtest1")
    (large,) = run_plan({**read, "prepare": False})
    assert large.status == "succeeded", large.error
    assert "not_in_memory" not in [f["code"] for f in large.facts["verdict"]["findings"]]
    assert large.facts["telemetry"]["db"]["hit_ratio_pct"]["mean"] >= 99


@pytest.mark.slow
def test_many_threads_updating_the_same_rows_is_lock_contention(tiny_pool_mariadb):
    port = tiny_pool_mariadb.port
    _sql(port, "CREATE DATABASE sb")
    (outcome,) = run_plan(
        {
            "tool": "sysbench",
            "targets": [_mysql_target(port, "sb")],
            "params": {
                "test": "oltp_update_non_index",
                "tables": 1,
                "table_size": 4,
                "threads": 16,
                "time": 7,
            },
            "prepare": {"once": True},
        }
    )
    assert outcome.status == "succeeded", outcome.error
    codes = [f["code"] for f in outcome.facts["verdict"]["findings"]]
    assert "locks" in codes, outcome.facts["telemetry"]["db"]
    assert outcome.facts["telemetry"]["db"]["row_lock_waits_per_s"]["mean"] >= 1


@pytest.fixture
def tiny_key_cache_mariadb(tmp_path):
    """A private mariadbd whose MyISAM key cache is 64 KB (resizable online)."""
    server = mariadb_server(tmp_path, "--key-buffer-size=64K")
    yield server
    server.stop()
    shutil.rmtree(tmp_path / "mariadb", ignore_errors=True)


@pytest.mark.slow
def test_a_myisam_index_larger_than_the_key_cache_is_data_not_in_memory(tiny_key_cache_mariadb):
    port = tiny_key_cache_mariadb.port
    # 300 000 rows: a 6 MB index on k, a hundred times the key cache.
    _sql(
        port,
        "CREATE DATABASE kc; CREATE TABLE kc.t (id INT PRIMARY KEY, k INT, KEY (k)) "
        "ENGINE=MyISAM; INSERT INTO kc.t SELECT seq, seq * 7919 % 1000003 FROM kc.seq_1_to_300000",
    )
    # Range scans of 3 % of the index (~200 KB each): about 1.5 s per 1000
    # queries here, so 6000 measure for more than the 5 s a verdict needs.
    scan = {
        "tool": "mysqlslap",
        "targets": [_mysql_target(port, "kc")],
        "params": {
            "auto_generate_sql": False,
            # Without create statements mysqlslap only runs in the schema.
            "create_schema": "kc",
            "no_drop": True,
            "query": "SELECT COUNT(*) FROM kc.t WHERE k BETWEEN 1000 AND 30000",
            "concurrency": 2,
            "number_of_queries": 6000,
        },
    }
    (small,) = run_plan(scan)
    assert small.status == "succeeded", small.error
    db = small.facts["telemetry"]["db"]
    (finding,) = [f for f in small.facts["verdict"]["findings"] if f["code"] == "not_in_memory"]
    assert "MyISAM key cache hit ratio" in finding["text"], finding
    assert (
        finding["evidence"]["db.key_cache_hit_ratio_pct.mean"]
        == db["key_cache_hit_ratio_pct"]["mean"]
    )
    assert db["key_cache_hit_ratio_pct"]["mean"] < 99
    assert db["key_reads_per_s"]["mean"] >= 50
    # The same scans with a key cache that holds the index, loaded first.
    _sql(port, "SET GLOBAL key_buffer_size = 64*1024*1024; LOAD INDEX INTO CACHE kc.t")
    (large,) = run_plan(scan)
    assert large.status == "succeeded", large.error
    assert "not_in_memory" not in [f["code"] for f in large.facts["verdict"]["findings"]]
    assert large.facts["telemetry"]["db"]["key_cache_hit_ratio_pct"]["mean"] >= 99


@pytest.mark.slow
def test_the_s5_quick_preset_measures_long_enough_for_a_verdict(private_mariadb):
    """S5's quick cells once measured under 2 s: no sample, no verdict."""
    template = get_template("s5-myisam-update")
    document = bind(template, "quick", {"m2-4xlarge": PROVISION})
    document["targets"] = [{**_mysql_target(private_mariadb.port), "name": "m2-4xlarge"}]
    document["repeat"] = 1  # one cell per write number is enough here
    outcomes = run_plan(document)
    assert len(outcomes) == 2
    for outcome in outcomes:
        assert outcome.status == "succeeded", outcome.error
        assert outcome.facts["telemetry"]["db"]["seconds"] >= 4, outcome.facts["telemetry"]
        assert outcome.facts["verdict"]["seconds"] >= verdict.MIN_SECONDS
        assert outcome.facts["verdict"]["limit"] not in ("no_telemetry", "too_short")
        # "Is it in memory?" for MyISAM: its key cache was read.
        assert "key_cache_hit_ratio_pct" in outcome.facts["telemetry"]["db"]
        print(outcome.facts["verdict"]["text"])  # shown with -s: what S5 quick finds here


@pytest.mark.slow
def test_the_s1_quick_preset_measures_long_enough_for_a_verdict(private_mariadb):
    """S1's quick cells once measured 1-2 s: one or two samples. Each of its
    ten cells (both roles on one MariaDB, the client the worker) now has
    several measured seconds of host and database telemetry."""
    template = get_template("s1-rds-classes-mysqlslap")
    roles = {"micro": PROVISION, "m2-4xlarge-iops": PROVISION}
    document = bind(template, "quick", roles)
    document["targets"] = [{**_mysql_target(private_mariadb.port), "name": name} for name in roles]
    document.pop("client")  # the provisioned client: here the worker itself
    document["repeat"] = 1
    outcomes = run_plan(document)
    assert len(outcomes) == 10
    seconds = []
    for outcome in outcomes:
        assert outcome.status == "succeeded", outcome.error
        summaries = outcome.facts["telemetry"]
        assert min(summaries[source]["seconds"] for source in ("host", "db")) >= 3
        seconds.append(outcome.facts["verdict"]["seconds"])
        assert outcome.facts["verdict"]["limit"] not in ("no_telemetry", "too_short")
    print("measured seconds per S1 quick cell:", seconds)  # shown with -s
    # mysqlslap runs a number of queries, not a time: the seconds follow the
    # machine's speed. 8000 queries × 2 iterations gave [2, 3, 4, 3, 2, 2, 3, 3,
    # 3, 2] on an idle machine and 1 s cells on a faster one; 16000 × 4 gives
    # [3, 8, 5, 8, 5, 3, 8, 5, 8, 5] on that faster one, idle, more when busy.
    # Every verdict rests on 5 measured seconds or more.
    assert min(seconds) >= verdict.MIN_SECONDS, seconds


def _sample_redis(endpoint: Endpoint, load) -> tuple[dict, list[str]]:
    """The Redis sampler run locally while load() runs, read by parse_samples."""
    executor = LocalExecutor()
    try:
        background = executor.start(dbstatus.sampler_command(endpoint))
        time.sleep(1.2)
        load()
        time.sleep(1.2)
        return dbstatus.parse_samples("redis", executor.stop(background, grace=1.0).stdout)
    finally:
        executor.close()


def test_redis_info_is_sampled_with_the_password_out_of_argv(tmp_path):
    password = "tele-metry-pw-7"
    # 4 MB at most, least recently used keys evicted: writing 8 MB evicts.
    server = redis_server(
        tmp_path,
        "--requirepass",
        password,
        "--maxmemory",
        "4mb",
        "--maxmemory-policy",
        "allkeys-lru",
    )
    client = redis.Redis(port=server.port, password=password)
    endpoint = Endpoint(kind="redis", host="127.0.0.1", port=server.port, password=password)
    command = dbstatus.sampler_command(endpoint)
    assert not any(password in arg for arg in command.argv)
    assert not any(password in value for value in command.env.values())

    def load():
        for i in range(8000):
            client.set(f"k{i}", b"x" * 1024)
            client.get(f"k{i}")  # a hit
            client.get(f"absent{i}")  # a miss

    try:
        series, errors = _sample_redis(endpoint, load)
        assert errors == []
        assert max(series["ops_per_s"]) > 1000  # 24 000 commands in a few seconds
        ratios = [r for r in series["keyspace_hit_ratio_pct"] if r is not None]
        assert ratios and all(40 <= r <= 60 for r in ratios if r)  # one miss per hit
        assert sum(series["evicted_keys_per_s"]) > 0
        assert 1 < max(series["used_memory_mb"]) <= 5
        assert min(series["connected_clients"]) >= 1
        # Without the password, the server's refusal is the sampler's error.
        _, refused = _sample_redis(replace(endpoint, password=None), lambda: None)
        assert refused and "NOAUTH" in refused[0]
    finally:
        client.close()
        server.stop()


def test_a_redis_benchmark_cell_keeps_the_servers_info_figures(private_redis):
    (outcome,) = run_plan(
        {
            "tool": "redis_benchmark",
            "targets": [
                {"name": "cache", "kind": "redis", "host": "127.0.0.1", "port": private_redis.port}
            ],
            # About 3 s of SET and GET here (2 cores): two complete samples at least.
            "params": {"tests": ["set", "get"], "requests": 100000, "clients": 4},
        }
    )
    assert outcome.status == "succeeded", outcome.error
    db = outcome.facts["telemetry"]["db"]
    assert db["ops_per_s"]["mean"] > 1000, db
    assert db["connected_clients"]["max"] >= 4
    assert "telemetry.db.ops_per_s.mean" in telemetry.summary_metrics({"db": db})


def test_telemetry_false_samples_nothing(tmp_path):
    (outcome,) = run_plan(
        {
            "tool": "fio",
            "telemetry": False,
            "targets": [{"name": "box", "kind": "host", "data_dirs": [str(tmp_path)]}],
            "params": {"directory": str(tmp_path), "size": "1M", "runtime": 1},
        }
    )
    assert outcome.telemetry == {} and "verdict" not in outcome.facts


def test_a_client_held_to_a_fraction_of_a_core_is_client_bound():
    """Four sysbench CPU threads under a tenth-of-a-core quota, nothing else to
    wait for (the target is the idle host itself): the quota stopped them in
    most periods, and the verdict says the client was the limit. (Four threads
    and a tenth of a core, so that the quota is reached within each period
    even when other work shares the machine's two cores: on cgroup v1 the
    tool's group weighs like one process against them, and beside ten busy
    processes got less than the quarter core this test once gave it.) One thread with two cores of quota is
    hardly ever stopped."""
    held = cpu_cell(threads=4, limits=Limits(cpus=0.1))
    assert held.facts["client_cpu_throttled"] >= verdict.THROTTLED_SHARE
    # After "disturbed" only, when other tests kept the machine busy meanwhile.
    findings = [f for f in held.facts["verdict"]["findings"] if f["code"] != "disturbed"]
    assert findings[0]["code"] == "client_cpu"
    assert "CPU quota stopped it in" in findings[0]["text"]

    free = cpu_cell(threads=1, limits=Limits(cpus=2.0))
    throttled = (held.facts["client_cpu_throttled"], free.facts["client_cpu_throttled"])
    print(f"share of CPU periods throttled: 0.1-core quota {throttled[0]}, 2 cores {throttled[1]}")
    assert free.facts["client_cpu_throttled"] < verdict.THROTTLED_SHARE
    assert not any(
        "client.cpu_throttled_share" in f["evidence"] for f in free.facts["verdict"]["findings"]
    )


def test_no_sample_is_no_verdict_not_no_limit():
    """A measure shorter than two samples (the S5 quick preset's cells last
    under a second): nothing was looked at, so nothing is ruled out."""
    found = verdict.judge({"host": telemetry.summarize({"t": []})}, None)
    assert found["limit"] == "no_telemetry" and found["checked"] == []
    assert found["text"].startswith("no verdict: no complete telemetry sample")


def test_summaries_of_several_clients_are_metrics_named_per_client():
    busy = {"cpu_busy_pct": {"mean": 95.0, "max": 99.0}, "seconds": 5}
    names = telemetry.summary_metrics({"client": busy, "client2": busy, "odd": busy})
    assert "telemetry.client2.cpu_busy_pct.mean" in names
    assert not any(".odd." in name for name in names)  # an unknown source is not stored
    assert (
        telemetry.metric("telemetry.client2.cpu_busy_pct.mean").label == "client 2 CPU busy, mean"
    )
