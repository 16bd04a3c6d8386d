"""redis-benchmark: builder, parser over captured outputs, and a real run
through a real worker against a private redis-server (never the broker's)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from runners.command import Endpoint
from runners.errors import ParseError, ValidationError
from runners.plan import load_plan
from runners.tools import redis_benchmark as rb
from tests.support.private_services import private_redis, redis_server  # noqa: F401
from tests.support.waiting import finished, wait_for

FIXTURES = Path(__file__).parent.parent / "fixtures" / "redis_benchmark"


def read(name: str) -> str:
    return (FIXTURES / f"{name}.out").read_text()


def test_build_maps_typed_params_to_options():
    command = rb.build(
        {
            "clients": 10,
            "requests": "2000",
            "data_size": 64,
            "pipeline": 8,
            "tests": ["set", "get"],
            "threads": 2,
            "keyspace": 1000,
            "csv": True,
        },
        Endpoint(kind="redis", host="10.0.0.5", port=6380),
    )
    assert command.argv == [
        "redis-benchmark",
        "-h",
        "10.0.0.5",
        "-p",
        "6380",
        "-c",
        "10",
        "-n",
        "2000",
        "-d",
        "64",
        "-P",
        "8",
        "-t",
        "set,get",
        "--threads",
        "2",
        "-r",
        "1000",
        "--csv",
    ]


def test_build_refuses_a_password_rather_than_put_it_in_argv():
    with pytest.raises(ValidationError) as refused:
        rb.build({"tests": "set"}, Endpoint(kind="redis", host="h", password="s3-cr'et"))
    assert refused.value.param == "password"
    assert "takes it only on its command line (-a)" in refused.value.message
    assert "s3-cr" not in str(refused.value)


@pytest.mark.parametrize("key, value", [("credential", "cache-pw"), ("password_env", "REDIS_PW")])
def test_a_redis_target_with_a_password_is_refused_when_the_plan_is_read(key, value):
    with pytest.raises(ValidationError) as refused:
        load_plan(
            {
                "name": "r",
                "tool": "redis_benchmark",
                "targets": [{"name": "cache", "kind": "redis", "host": "10.0.0.9", key: value}],
            }
        )
    assert refused.value.param == f"targets[0].{key}"
    assert refused.value.message.startswith("a Redis target cannot have a password")


def test_the_installed_redis_benchmark_ignores_rediscli_auth(tmp_path):
    """Why a password is refused: against a real redis-server with requirepass,
    redis-benchmark 7.0 given the password in REDISCLI_AUTH is not let in."""
    password = "s3cret-" + os.urandom(4).hex()
    server = redis_server(tmp_path, "--requirepass", password)
    try:
        proc = subprocess.run(
            [
                "redis-benchmark",
                "-h",
                "127.0.0.1",
                "-p",
                str(server.port),
                "-t",
                "set",
                "-n",
                "100",
                "--csv",
            ],
            env={**os.environ, "REDISCLI_AUTH": password},
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.stop()
    result = rb.parse(proc.stdout + proc.stderr)
    assert "NOAUTH Authentication required." in result.errors
    assert any("the server wants a password" in e for e in result.errors)


@pytest.mark.parametrize(
    "params, field",
    [
        ({"clients": 0}, "clients"),
        ({"tests": ["set", "flushall"]}, "tests"),
        ({"requests": "10; rm"}, "requests"),
        ({"auth": "x"}, "auth"),
    ],
)
def test_build_refuses_what_is_not_allowed(params, field):
    with pytest.raises(ValidationError) as err:
        rb.build(params, Endpoint(kind="redis", host="h"))
    assert err.value.param == field


@pytest.mark.parametrize(
    "name, expected",
    [
        ("plain_set_get", {"SET": (47619.05, 0.087, 0.311), "GET": (83333.34, 0.071, 0.167)}),
        ("plain_pipeline_threads", {"SET": (19920.32, 0.375, 0.983)}),
        (
            "csv_set_get_incr",
            {
                "SET": (76923.08, 0.071, 0.231),
                "GET": (76923.08, 0.071, 0.199),
                "INCR": (76923.08, 0.071, 0.199),
            },
        ),
        (
            "csv_quiet_ping",
            {"PING_INLINE": (76923.08, 0.327, 0.647), "PING_MBULK": (74074.07, 0.343, 0.711)},
        ),
        (
            "quiet_set_get_lpush",
            {
                "SET": (74074.07, 0.071, None),
                "GET": (68965.52, 0.079, None),
                "LPUSH": (74074.07, 0.071, None),
            },
        ),
        ("quiet_pipeline", {"SET": (834666.69, 0.663, None), "GET": (1252000.0, 0.495, None)}),
    ],
)
def test_parse_reads_requests_and_percentiles_per_test(name, expected):
    result = rb.parse(read(name))
    assert result.errors == []
    got = {
        g["labels"]["test"]: (
            g["metrics"]["rps"],
            g["metrics"]["latency_p50_ms"],
            g["metrics"].get("latency_p99_ms"),
        )
        for g in result.groups
    }
    assert got == expected
    if len(expected) == 1:
        assert result.metrics == result.groups[0]["metrics"]
    else:  # prefixed per test, never summed (the tests run one after another)
        assert "rps" not in result.metrics
        first = next(iter(expected))
        assert result.metrics[f"{first.lower()}_rps"] == expected[first][0]


@pytest.mark.parametrize(
    "name, error",
    [
        ("error_noauth", "NOAUTH Authentication required."),
        ("error_refused", "Could not connect to Redis at 127.0.0.1:1: Connection refused"),
    ],
)
def test_parse_reports_the_tools_errors(name, error):
    result = rb.parse(read(name))
    assert error in result.errors
    assert result.metrics == {}


@pytest.mark.parametrize(
    "name", ["plain_set_get", "csv_set_get_incr", "quiet_set_get_lpush", "plain_pipeline_threads"]
)
def test_parse_truncated_output_is_never_a_clean_result(name):
    text = read(name)
    for cut in range(1, len(text) - 1, max(1, len(text) // 97)):
        part = text[:cut]
        try:
            result = rb.parse(part)
        except ParseError:
            continue
        clean = rb.parse(text)
        # a clean parse of a prefix must be a prefix of whole tests with all their figures
        if not result.errors:
            assert result.groups == clean.groups[: len(result.groups)], cut


def test_parse_plain_cut_between_throughput_and_latency_is_an_error():
    text = read("plain_set_get")
    cut = text.index("latency summary (msec):", text.index("====== GET"))
    result = rb.parse(text[:cut])
    assert [g["labels"]["test"] for g in result.groups] == ["SET"]
    assert result.errors == ["GET: output ends before its summary (cut off?)"]


def test_parse_version():
    assert rb.parse_version(read("version")) == "7.0.15"


@pytest.mark.django_db(transaction=True)
def test_redis_benchmark_runs_through_a_real_worker(
    team,
    owner_client,
    private_redis,  # noqa: F811
    start_worker,
):
    from benchapp.models import Run
    from benchapp.runs import orchestration
    from tests.support.measures import stored

    start_worker("redis")
    plan = {
        "name": "redis-proof",
        "tool": "redis_benchmark",
        "targets": [
            {"name": "cache", "kind": "redis", "host": "127.0.0.1", "port": private_redis.port}
        ],
        "params": {"requests": 2000, "clients": 5, "csv": True},
        "axes": {"tests": ["set", "get"]},
    }
    run = orchestration.start_run(team, plan)
    wait_for(lambda: finished(run))
    assert run.status == Run.SUCCEEDED, [c.error for c in run.cells.all()]
    for cell in run.cells.all():
        metrics = {m.metric for m in stored(cells=[cell.pk], group="")}
        assert {"rps", "latency_p50_ms", "latency_p99_ms"} <= metrics
        assert cell.command.startswith(f"redis-benchmark -h 127.0.0.1 -p {private_redis.port} ")
        assert cell.tool_version == rb.parse_version(read("version"))
    from benchapp.analysis import results

    data = results.results([run])
    assert (data["view"]["rows"], data["view"]["metric"]) == (["tests"], "rps")
    assert [r["label"] for r in data["table"]["rows"]] == ["set", "get"]  # the plan's order
    assert data["chart"]["metric_info"]["title"] == "Requests per second (req/s)"
    page = owner_client.get(f"/runs/{run.pk}/results/").content.decode()
    assert "Requests per second (req/s)" in page


def test_builder_page_lists_redis_benchmark(owner_client):
    html = owner_client.get("/plans/new/").content.decode()
    assert '<option value="redis_benchmark"' in html
    for name in rb.PARAMS:
        assert f'name="param-redis_benchmark-{name}"' in html
