"""stress-ng adapter: argv building, validation, parsing of real --metrics-brief output,
and the way Benchboard stops it (SIGTERM leaves partial metrics)."""

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from runners.command import Endpoint
from runners.errors import ParseError, ValidationError
from runners.tools import get_tool, stress_ng

FIXTURES = Path(__file__).parent.parent / "fixtures" / "stress_ng"
EXPECTED = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))


def read(name: str) -> str:
    return (FIXTURES / f"{name}.out").read_text()


@pytest.mark.parametrize("name", EXPECTED)
def test_stress_ng_parse_matches_expected(name):
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    assert stress_ng.parse(read(name)).to_dict() == expected


def test_stress_ng_parse_brief_table():
    result = stress_ng.parse(read("stressng_cpu1_l50_t3_metrics_brief"))
    expected = {
        "bogo_ops": 1528.0,
        "real_time_s": 3.03,
        "usr_time_s": 1.51,
        "sys_time_s": 0.0,
        "bogo_ops_per_s": 503.48,
        "bogo_ops_per_s_usr_sys": 1012.22,
    }
    assert result.metrics == expected
    assert result.groups == [{"labels": {"stressor": "cpu"}, "metrics": expected}]
    assert result.facts == {"timeout_s": 3.0, "run_s": 3.04, "stressors": "1 cpu"}


def test_stress_ng_parse_several_stressors_prefix_metrics():
    result = stress_ng.parse(read("stressng_cpu_vm_multi_stressor_metrics_brief"))
    assert [g["labels"]["stressor"] for g in result.groups] == ["cpu", "vm"]
    assert result.metrics["cpu_bogo_ops_per_s"] == 437.0
    assert result.metrics["vm_bogo_ops"] == 70900.0
    assert "bogo_ops" not in result.metrics


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_stress_ng_parse_stopped_by_signal_keeps_partial_metrics(signame):
    result = stress_ng.parse(read(f"stressng_killed_{signame}"))
    assert result.errors == []
    assert result.facts["run_s"] < result.facts["timeout_s"] == 30.0
    assert result.metrics["bogo_ops"] > 0


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty stress-ng output"),
        (read("stressng_killed_SIGKILL"), r"no metrics \(killed with SIGKILL"),
        (read("stressng_version"), "not stress-ng output"),
        ("hello\nworld\n", "not stress-ng output"),
    ],
)
def test_stress_ng_parse_refuses_text_without_metrics(text, reason):
    with pytest.raises(ParseError, match=reason):
        stress_ng.parse(text)


def test_stress_ng_parse_bad_option_is_an_error():
    result = stress_ng.parse(read("stressng_bad_option"))
    assert result.errors == ["stress-ng: unrecognized option '--cpuu'"]
    assert result.metrics == {}


def test_stress_ng_parse_version():
    assert stress_ng.parse_version(read("stressng_version")) == "0.15.06"


def test_stress_ng_build_scenario_s2():
    command = stress_ng.build({"cpu": 4, "cpu_load": 90, "timeout": 700}, Endpoint())
    assert command.argv == [
        "stress-ng", "--cpu", "4", "--cpu-load", "90", "--timeout", "700", "--metrics-brief",
    ]  # fmt: skip
    assert (command.tool, command.package) == ("stress_ng", "stress-ng")


def test_stress_ng_build_defaults_timeout_and_accepts_load_alias():
    argv = stress_ng.build({"cpu": 8, "load": 20, "taskset": "0-7"}).argv
    assert argv == [
        "stress-ng", "--cpu", "8", "--cpu-load", "20", "--taskset", "0-7",
        "--timeout", "86400", "--metrics-brief",
    ]  # fmt: skip


def test_stress_ng_build_memory_and_io_stressors():
    argv = stress_ng.build(
        {"vm": 1, "vm_bytes": "64M", "hdd": 1, "hdd_bytes": "1g", "temp_path": "/data", "io": 2}
    ).argv
    assert argv[:13] == [
        "stress-ng", "--vm", "1", "--vm-bytes", "64M", "--io", "2", "--hdd", "1",
        "--hdd-bytes", "1g", "--temp-path", "/data",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "params, param",
    [
        ({"cpu": 0}, "cpu"),  # stress-ng would read 0 as "all CPUs"
        ({}, "cpu"),
        ({"cpu_load": 50}, "cpu_load"),
        ({"cpu": 2, "cpu_load": 101}, "cpu_load"),
        ({"cpu": 2, "l": 90}, "l"),
        ({"cpu": 2, "taskset": "0-3;reboot"}, "taskset"),
        ({"cpu": 2, "taskset": "all"}, "taskset"),
        ({"vm": 1, "vm_bytes": "lots"}, "vm_bytes"),
        ({"hdd": 1, "temp_path": "tmp"}, "temp_path"),
        ({"cpu": 1, "timeout": 0}, "timeout"),
        ({"cpu": 1, "cpu_method": "bogus"}, "cpu_method"),
    ],
)
def test_stress_ng_build_refuses_bad_params(params, param):
    with pytest.raises(ValidationError) as info:
        stress_ng.build(params)
    assert info.value.param == param


def test_stress_ng_registry_accepts_dashed_name():
    assert get_tool("stress-ng") is stress_ng


def test_stress_ng_real_run_parses():
    command = stress_ng.build({"cpu": 1, "timeout": 2})
    proc = subprocess.run(command.argv, check=False, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    result = stress_ng.parse(proc.stdout + proc.stderr)
    assert result.errors == []
    assert result.groups[0]["labels"] == {"stressor": "cpu"}
    assert result.metrics["bogo_ops"] > 0
    assert result.facts["timeout_s"] == 2.0


def test_stress_ng_real_sigterm_stops_cleanly_with_metrics():
    """How Benchboard stops background load: SIGTERM, exit 0, partial metrics."""
    command = stress_ng.build({"cpu": 1, "cpu_load": 50, "timeout": 30})
    proc = subprocess.Popen(command.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0
    result = stress_ng.parse(out + err)
    assert result.metrics["bogo_ops"] > 0
    assert result.facts["run_s"] < 5.0 < result.facts["timeout_s"]
