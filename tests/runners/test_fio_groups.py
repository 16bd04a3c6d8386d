"""fio outputs that used to lose or invent figures: fio 2.x JSON without
total_ios (latencies were dropped) and several stonewalled reporting groups
(jobs that ran one after the other were added up as if side by side)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from runners.tools import fio

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "fio"


def read(name: str) -> str:
    return (FIXTURES / f"{name}.out").read_text()


def test_fio_21_without_total_ios_keeps_latencies():
    text = read("public_fio_2111_randread_json")
    assert '"total_ios"' not in text
    result = fio.parse(text)
    first = result.groups[0]["metrics"]
    # fio 2.x latencies are in usec: lat.mean 255.56, clat percentiles 95: 370, 99: 506.
    assert (first["read_lat_mean_us"], first["read_clat_p95_us"], first["read_clat_p99_us"]) == (
        255.56,
        370.0,
        506.0,
    )
    second = result.groups[1]["metrics"]
    assert (second["read_lat_mean_us"], second["read_clat_p95_us"]) == (254.87, 374.0)
    # Both jobs ran side by side in group 0: throughput adds up, latency is weighted
    # by each job's I/O count (iops x runtime when fio gives no total_ios).
    assert result.metrics["read_iops"] == 10.0
    ios = [5 * 2127.550, 5 * 2119.748]
    weighted = (255.56 * round(ios[0]) + 254.87 * round(ios[1])) / (round(ios[0]) + round(ios[1]))
    assert round(result.metrics["read_lat_mean_us"], 6) == round(weighted, 6)
    assert result.errors == []


def test_fio_stonewalled_groups_are_not_added_up():
    result = fio.parse(read("fio_stonewall_two_groups_json"))
    doc = json.loads(read("fio_stonewall_two_groups_json"))
    by_group = {}
    for job in doc["jobs"]:
        by_group.setdefault(job["groupid"], []).append(job)
    assert sorted(by_group) == [0, 1]
    assert result.metrics["group0_write_iops"] == round(
        sum(j["write"]["iops"] for j in by_group[0]), 9
    )
    assert result.metrics["group1_read_iops"] == round(
        sum(j["read"]["iops"] for j in by_group[1]), 9
    )
    # No figure over both groups: they ran one after the other.
    assert not [name for name in result.metrics if not name.startswith("group")]
    assert [g["labels"]["groupid"] for g in result.groups] == [0, 0, 1, 1]


def test_fio_one_group_has_no_groupid_label_or_prefix():
    result = fio.parse(read("fio_no_group_reporting_json"))
    assert all("groupid" not in g["labels"] for g in result.groups)
    assert "read_iops" in result.metrics or "write_iops" in result.metrics


def test_fio_real_run_with_two_stonewalled_jobs(tmp_path):
    argv = [
        "fio",
        "--output-format=json",
        "--bs=4k",
        "--size=1M",
        f"--directory={tmp_path}",
        "--name=writer",
        "--rw=write",
        "--name=reader",
        "--stonewall",
        "--rw=read",
    ]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    result = fio.parse(proc.stdout)
    doc = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert [job["groupid"] for job in doc["jobs"]] == [0, 1]
    assert result.metrics["group0_write_iops"] == doc["jobs"][0]["write"]["iops"]
    assert result.metrics["group1_read_iops"] == doc["jobs"][1]["read"]["iops"]
    assert "write_iops" not in result.metrics and "read_iops" not in result.metrics
    assert result.metrics["group1_read_lat_mean_us"] > 0
    assert [g["labels"] for g in result.groups] == [
        {"job": "writer", "jobnum": 0, "groupid": 0},
        {"job": "reader", "jobnum": 1, "groupid": 1},
    ]
