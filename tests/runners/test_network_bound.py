"""The network-bound verdict from a real link held to a known rate.

Two network namespaces joined by a veth pair shaped to 50 Mb/s each way
(tc tbf); a private redis-server in one, redis-benchmark writing 100 kB
values from the other; the host sampler (runners.telemetry) runs inside the
server's namespace, where /proc/net/dev and /sys/class/net are that
namespace's. The traffic never leaves the two namespaces.

A veth reports 10000 Mb/s whatever tc holds it to, so the link's rate is
the target's declared link_mbit (docs/telemetry.md, "Network-bound").
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest

from runners import hostsampler, telemetry
from runners.cellwatch import CellWatch
from runners.plantargets import TargetSpec

pytestmark = pytest.mark.slow

RATE_MBIT = 50
LINE_MB_S = RATE_MBIT * 1_000_000 / 8 / telemetry.MB  # 6.25 MB/s
SERVER_IP, CLIENT_IP = "10.231.0.1", "10.231.0.2"
MEASURE_S = 8


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@pytest.fixture
def shaped_link():
    """(server namespace, client namespace, the server side's interface): a
    veth pair between two fresh namespaces, each end shaped to RATE_MBIT."""
    tag = f"bb{os.getpid() % 100000}"
    server, client = f"{tag}srv", f"{tag}cli"
    server_if, client_if = f"{tag}s", f"{tag}c"
    made = []
    try:
        for ns in (server, client):
            ip("netns", "add", ns)
            made.append(ns)
        veth = ("type", "veth", "peer", "name", client_if, "netns", client)
        ip("link", "add", server_if, "netns", server, *veth)
        for ns, dev, addr in ((server, server_if, SERVER_IP), (client, client_if, CLIENT_IP)):
            ip("-n", ns, "addr", "add", f"{addr}/30", "dev", dev)
            ip("-n", ns, "link", "set", dev, "up")
            ip("-n", ns, "link", "set", "lo", "up")
            # A token bucket at the rate; a 64 kB burst is 10 ms of it.
            tbf = ["root", "tbf", "rate", f"{RATE_MBIT}mbit", "burst", "64kb", "latency", "50ms"]
            ip("netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, *tbf)
        yield server, client, server_if
    finally:
        for ns in made:  # the veth pair goes with its namespaces
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def in_ns(ns: str, *argv: str, **kw) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *argv], start_new_session=True, **kw)


def stop(proc: subprocess.Popen) -> str:
    os.killpg(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=10)
    return out or ""


def wait_for_redis(ns: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        ping = subprocess.run(
            ["ip", "netns", "exec", ns, "redis-cli", "-h", SERVER_IP, "ping"],
            capture_output=True,
            text=True,
        )
        if ping.stdout.strip() == "PONG":
            return
        time.sleep(0.1)
    raise RuntimeError("redis-server did not answer within 10 s")


def _received_bytes(ns: str, dev: str) -> int:
    out = subprocess.run(
        ["ip", "netns", "exec", ns, "cat", f"/sys/class/net/{dev}/statistics/rx_bytes"],
        capture_output=True,
        text=True,
        timeout=10,
    ).stdout
    return int(out.strip() or 0)


def wait_for_traffic(ns: str, dev: str) -> None:
    """Until dev receives at least half the line rate over half a second."""
    deadline = time.monotonic() + 20
    before = _received_bytes(ns, dev)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        after = _received_bytes(ns, dev)
        if (after - before) / 0.5 >= LINE_MB_S * telemetry.MB / 2:
            return
        before = after
    raise RuntimeError("redis-benchmark did not fill the link within 20 s")


@pytest.fixture
def loaded_link_samples(shaped_link, tmp_path):
    """(interface, the host sampler's output in the server's namespace while
    redis-benchmark filled the link from the client's)."""
    server_ns, client_ns, server_if = shaped_link
    server = in_ns(
        server_ns,
        *("redis-server", "--bind", SERVER_IP, "--port", "6379", "--save", ""),
        *("--appendonly", "no", "--protected-mode", "no", "--dir", str(tmp_path)),
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_for_redis(client_ns)
        # SETs of 100 kB values from 4 connections, in a loop: the client's
        # end sends as fast as the shaped link lets it.
        load = in_ns(
            client_ns,
            *("redis-benchmark", "-h", SERVER_IP, "-t", "set", "-d", "100000", "-c", "4"),
            *("-n", "1000000", "-q"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        # The sampler starts once the link is full and stops before the load
        # does, so every sample is of the load however slowly a busy machine
        # starts the processes.
        wait_for_traffic(server_ns, server_if)
        sampler = in_ns(
            server_ns, *hostsampler.sampler_command().argv, stdout=subprocess.PIPE, text=True
        )
        time.sleep(MEASURE_S)
        text = stop(sampler)
        stop(load)
    finally:
        stop(server)
    return server_if, text


def test_a_link_full_at_its_declared_speed_is_network_bound(loaded_link_samples):
    net, text = loaded_link_samples
    target = TargetSpec(name="shaped", kind="redis", host=SERVER_IP, link_mbit=RATE_MBIT)
    # The target's sampler output read as a cell's watch reads it.
    watch = CellWatch(None, target, None, None, None)
    watch._read("target", text)
    facts = watch.facts(measure_s=MEASURE_S + 1)  # every sample was of the load

    summary = facts["telemetry"]["target"]
    line = summary[f"net_{net}_line_pct"]
    received = summary[f"net_{net}_rx_mb_s"]
    # tbf lets 50 Mb/s through: 6.25 MB/s counted by the kernel with frame
    # headers, as /proc/net/dev counts; 10 % either side.
    assert LINE_MB_S * 0.9 <= received["mean"] <= LINE_MB_S * 1.1, received
    assert summary["busiest_net"] == net
    found = {f["code"]: f for f in facts["verdict"]["findings"]}
    assert "network" in found, (line, facts["verdict"])
    network = found["network"]
    assert (
        f"network-bound on the target: {net} at or above 90 % of its link speed"
        in (network["text"])
    )
    assert network["evidence"]["share"] >= 0.5
    assert network["evidence"][f"target.net_{net}_line_pct.mean"] >= 85.0
    assert "lo" not in [name[4:-9] for name in summary if name.endswith("_line_pct")]


def test_the_same_link_without_a_declared_speed_reads_the_veths_10000(loaded_link_samples):
    net, text = loaded_link_samples
    assert f"speed {net} 10000" in text  # what the driver says, whatever tc holds it to

    summary = telemetry.summarize(telemetry.parse_samples(text))

    # 6.25 MB/s of a nominal 1250 MB/s: half a percent, far from saturated.
    assert summary[f"net_{net}_line_pct"]["mean"] < 1.0
    watch = CellWatch(
        None, TargetSpec(name="shaped", kind="redis", host=SERVER_IP), None, None, None
    )
    watch._read("target", text)
    codes = [f["code"] for f in watch.facts(measure_s=MEASURE_S + 1)["verdict"]["findings"]]
    assert "network" not in codes
