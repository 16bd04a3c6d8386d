"""fio adapter: argv building, validation, and parsing of real fio output.

The *.expected.json beside each fixture is the parser's Result, reviewed
against the raw JSON and, where captured, fio's normal output of the run;
test_fio_parse_key_figures pins figures checked by hand.
"""

import json
import subprocess
from pathlib import Path

import pytest

from runners.command import WORKDIR, Endpoint
from runners.errors import ParseError, ValidationError
from runners.tools import fio, get_tool

FIXTURES = Path(__file__).parent.parent / "fixtures" / "fio"
EXPECTED = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))


def read(name: str) -> str:
    return (FIXTURES / f"{name}.out").read_text()


@pytest.mark.parametrize("name", EXPECTED)
def test_fio_parse_matches_expected(name):
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    assert fio.parse(read(name)).to_dict() == expected


@pytest.mark.parametrize(
    "name, metric, value",
    [
        # "iops" : 315076.923077, clat_ns percentile 95 = 1208 ns
        ("fio_json_with_iodepth_note", "read_iops", 315076.923077),
        ("fio_json_with_iodepth_note", "read_clat_p95_us", 1.208),
        # normal output of the same run: read IOPS=6571 + 6513, lat avg=143.97 us (job 0)
        ("fio_json_normal_randrw_nogroup", "read_bw_kib_s", 26285.0 + 26055.0),
        ("fio_json_normal_randrw_nogroup", "runtime_s", 0.218),
        ("fio_randrw_4k_direct1_libaio_json", "write_iops", 21753.846154),
        ("fio_randrw_4k_direct1_libaio_json", "read_lat_mean_us", 430.861142064),
        # fio 2.2.10: latencies already in us, "runtime" : 600008 ms
        ("public_fio_2210_write_libaio_json", "write_clat_p99_us", 8640.0),
        ("public_fio_2210_write_libaio_json", "write_lat_mean_us", 8182.26),
        ("public_fio_2210_write_libaio_json", "runtime_s", 600.008),
    ],
)
def test_fio_parse_key_figures(name, metric, value):
    assert fio.parse(read(name)).metrics[metric] == value


def test_fio_parse_one_group_per_job_without_group_reporting():
    result = fio.parse(read("fio_no_group_reporting_json"))
    assert [g["labels"] for g in result.groups] == [
        {"job": "read4k", "jobnum": 0},
        {"job": "read4k", "jobnum": 1},
    ]
    iops = [g["metrics"]["read_iops"] for g in result.groups]
    assert result.metrics["read_iops"] == round(sum(iops), 9)


def test_fio_parse_weights_latency_by_io_count():
    """Two jobs' lat_mean_us combine into the mean over all their I/Os."""
    doc = json.loads(read("fio_no_group_reporting_json"))
    lats = [(j["read"]["lat_ns"]["mean"], j["read"]["lat_ns"]["N"]) for j in doc["jobs"]]
    expected = sum(m * n for m, n in lats) / sum(n for _, n in lats) / 1000
    assert fio.parse(read("fio_no_group_reporting_json")).metrics["read_lat_mean_us"] == round(
        expected, 9
    )


def test_fio_parse_single_group_equals_metrics():
    result = fio.parse(read("fio_randread_4k_json"))
    assert [g["metrics"] for g in result.groups] == [result.metrics]


def test_fio_parse_job_error_and_fio_lines_go_to_errors():
    result = fio.parse(read("fio_io_error_enospc_json"))
    assert result.errors[-1] == "job fullwrite #0: error 28 (No space left on device)"
    assert result.errors[1].startswith("fio: pid=13163, err=28/")
    assert result.metrics == {"runtime_s": 0.0, "write_bw_kib_s": 0.0, "write_iops": 0.0}


def test_fio_parse_note_is_not_an_error():
    result = fio.parse(read("fio_json_with_iodepth_note"))
    assert result.errors == []
    assert result.facts["notes"][0].startswith("note: both iodepth >= 1")


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty fio output"),
        ("   \n", "empty fio output"),
        # normal output cut before its first job block: only the header
        (read("fio_read_4k_normal").split("\n\n")[0], "no fio output found"),
        # terse v3 is positional: a line cut short would shift every figure
        (read("fio_read_4k_terse")[:700], "has 82 fields, not 121 plus 9 per disk"),
        (read("fio_read_4k_terse").replace("3;fio-3.33", "2;fio-3.33"), "terse version 2"),
        (read("fio_randread_4k_json")[:3000], "truncated or malformed fio JSON"),
        ('{"hello": "world"}', "not fio output"),
        ("[1, 2]", "no fio output found"),
    ],
)
def test_fio_parse_refuses_unreadable_text(text, reason):
    with pytest.raises(ParseError, match=reason):
        fio.parse(text)


def test_fio_parse_version():
    assert fio.parse_version(read("fio_version")) == "3.33"
    assert fio.version_command() == ["fio", "--version"]


S3_PARAMS = {
    "filename": "/data/testfio",
    "direct": 1,
    "bs": "4k",
    "size": "5G",
    "numjobs": 64,
    "runtime": 16,
    "group_reporting": True,
    "rw": "randread",
}


def test_fio_build_scenario_s3():
    command = fio.build(S3_PARAMS, Endpoint())
    assert command.argv == [
        "fio",
        "--name=benchboard",
        "--rw=randread",
        "--bs=4k",
        "--size=5G",
        "--numjobs=64",
        "--runtime=16",
        "--direct=1",
        "--filename=/data/testfio",
        "--group_reporting",
        "--output-format=json",
    ]
    assert (command.tool, command.package, command.uploads, command.secrets) == (
        "fio",
        "fio",
        [],
        [],
    )


def test_fio_build_flags_and_aliases():
    argv = fio.build(
        {
            "directory": "/mnt/x",
            "readwrite": "randrw",
            "blocksize": "32m",
            "rwmixread": 70,
            "time_based": True,
            "runtime": 5,
            "direct": False,
            "ioengine": "libaio",
            "iodepth": 16,
            "output_format": "json+",
            "group_reporting": False,
        },
        Endpoint(),
    ).argv
    assert argv == [
        "fio", "--name=benchboard", "--rw=randrw", "--bs=32m", "--runtime=5", "--time_based",
        "--direct=0", "--ioengine=libaio", "--iodepth=16", "--directory=/mnt/x",
        "--rwmixread=70", "--output-format=json+",
    ]  # fmt: skip


@pytest.mark.parametrize(
    "params, param",
    [
        ({"directory": "/x", "rw": "sideways"}, "rw"),
        ({"directory": "/x", "colour": "red"}, "colour"),
        ({"directory": "/x", "ioengine": "windowsaio"}, "ioengine"),
        ({"directory": "/x", "bs": "4k; rm -rf /"}, "bs"),
        ({"filename": "/tmp/a b"}, "filename"),
        ({"filename": "/tmp/$(id)"}, "filename"),
        ({"filename": "-data/file"}, "filename"),
        ({"filename": f"/x{WORKDIR}"}, "filename"),
        ({"directory": "/x", "name": "--help"}, "name"),
        ({"size": "1G"}, "filename"),
        ({"directory": "/x", "rwmixread": 70}, "rwmixread"),
        ({"directory": "/x", "time_based": True}, "time_based"),
        ({"directory": "/x", "numjobs": 0}, "numjobs"),
        ({"directory": "/x", "iodepth": "16x"}, "iodepth"),
    ],
)
def test_fio_build_refuses_bad_params(params, param):
    with pytest.raises(ValidationError) as info:
        fio.build(params, Endpoint())
    assert info.value.param == param


def test_fio_build_refuses_unknown_phase():
    with pytest.raises(ValidationError):
        fio.build({"directory": "/x"}, Endpoint(), phase="prepare")


def test_fio_registry_returns_module():
    assert get_tool("fio") is fio


def test_fio_real_run_parses(tmp_path):
    """fio itself on a tmp directory, through the argv the builder makes."""
    params = {"directory": str(tmp_path), "size": "8M", "runtime": 1, "time_based": True,
              "rw": "randrw", "rwmixread": 60, "numjobs": 2, "name": "real"}  # fmt: skip
    command = fio.build(params, Endpoint()).resolved(str(tmp_path))
    proc = subprocess.run(command.argv, check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = fio.parse(proc.stdout + proc.stderr)
    assert result.errors == []
    assert [g["labels"] for g in result.groups] == [
        {"job": "real", "jobnum": 0},
        {"job": "real", "jobnum": 1},
    ]
    assert result.metrics["read_iops"] > 0 and result.metrics["write_iops"] > 0
    assert 0.9 <= result.metrics["runtime_s"] <= 2.0
    assert result.facts["version"] == fio.parse_version(
        subprocess.run(fio.version_command(), check=True, capture_output=True, text=True).stdout
    )


def test_fio_relative_paths_are_inside_the_scratch_directory():
    assert fio.validate({"directory": "data"})["directory"] == "data"
    command = fio.build({"filename": "data/file", "size": "4M"})
    assert "--filename=data/file" in command.argv
