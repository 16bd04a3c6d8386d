"""pgbench adapter: argv/pgpass building, parsing of real and public outputs,
and real init + run against the tests' private PostgreSQL (trust auth)."""

import json
import os
import secrets
import stat
import subprocess
from pathlib import Path

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import sql

from runners.command import WORKDIR, Command, Endpoint
from runners.errors import ParseError, ValidationError
from runners.results import rows_to_series
from runners.tools import pgbench

FIXTURES = Path(__file__).parent.parent / "fixtures" / "pgbench"
EXPECTED = sorted(p.name.removesuffix(".expected.json") for p in FIXTURES.glob("*.expected.json"))
ENDPOINT = Endpoint(kind="postgres", host="db.internal", port=5432, user="bench", database="bb")


def read(name: str) -> str:
    return (FIXTURES / f"{name}.out").read_text()


@pytest.mark.parametrize("name", EXPECTED)
def test_pgbench_parse_matches_expected(name):
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text())
    assert pgbench.parse(read(name)).to_dict() == expected


def test_pgbench_parse_summary_and_progress_series():
    result = pgbench.parse(read("pgbench_run_c2_j2_T5_progress1_latency"))
    assert result.metrics == {
        "tps": 646.259731,
        "transactions": 3204.0,
        "failed": 0.0,
        "latency_avg_ms": 3.09,
        "latency_stddev_ms": 3.462,
        "initial_connection_time_ms": 47.792,
    }
    assert result.groups == [{"labels": {}, "metrics": result.metrics}]
    assert {name: column[0] for name, column in result.series.items()} == {
        "t": 1.0, "tps": 613.9, "latency_avg_ms": 3.059, "latency_stddev_ms": 4.053, "failed": 0.0,
    }  # fmt: skip
    assert result.series["t"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert result.facts["version"] == "15.18"


SUMMARY = read("pgbench_run_c2_j2_T5_progress1_latency").split("transaction type:")[0]
SUMMARY = read("pgbench_run_c2_j2_T5_progress1_latency")[len(SUMMARY) :]
ABORTED = "pgbench: error: client 1 aborted in command 4 (SQL) of script 0; ERROR:  deadlock"
progress_numbers = st.lists(st.tuples(*[st.integers(0, 10**7)] * 7), min_size=1, max_size=40)


def _progress_line(numbers: tuple, lag: bool, skipped: bool, failed: bool) -> tuple[str, dict]:
    """A progress line as pgbench prints it and the row it stands for."""
    t, tps, lat, stddev, lag_ms, skip, fail = numbers
    fields = {"t": f"{t / 10:.1f}", "tps": f"{tps / 10:.1f}", "latency_avg_ms": f"{lat / 1000:.3f}",
              "latency_stddev_ms": f"{stddev / 1000:.3f}"}  # fmt: skip
    line = "progress: {t} s, {tps} tps, lat {latency_avg_ms} ms stddev {latency_stddev_ms}"
    if lag:
        fields["lag_ms"] = f"{lag_ms / 1000:.3f}"
        line += ", lag {lag_ms} ms"
    for name, value, wanted in (("skipped", skip, skipped), ("failed", fail, failed)):
        if wanted:
            fields[name] = str(value)
            line += f", {{{name}}} {name}"
    return line.format(**fields), {name: float(value) for name, value in fields.items()}


@settings(max_examples=150, deadline=None)
@given(
    numbers=progress_numbers,
    shape=st.tuples(st.booleans(), st.booleans(), st.booleans()),
    odd=st.sampled_from(["", "aborted", "nan", "indented", "crlf", "malformed"]),
    where=st.integers(0, 40),
)
def test_pgbench_progress_series_equals_the_lines_read_one_by_one(numbers, shape, odd, where):
    """A run's progress lines are read in one pass (all of one shape) or line by
    line (anything odd among them): the series is the same either way."""
    lines, rows = map(list, zip(*[_progress_line(n, *shape) for n in numbers]))
    where = min(where, len(lines) - 1)
    if odd == "aborted":
        lines.insert(where, ABORTED)
    elif odd == "nan":
        lines[where] = lines[where].replace(
            f"stddev {rows[where].pop('latency_stddev_ms'):.3f}", "stddev NaN"
        )
    elif odd == "indented":
        lines[where] = "  " + lines[where]
    elif odd == "malformed":  # not JSON, still a number: the per-line reader takes it
        lines[where] = lines[where].replace("progress: ", "progress: 0", 1)
    ending = "\r\n" if odd == "crlf" else "\n"
    result = pgbench.parse("starting vacuum...end.\n" + ending.join(lines) + ending + SUMMARY)
    assert result.series == rows_to_series(rows)
    assert (ABORTED in result.errors) == (odd == "aborted")
    assert result.metrics["tps"] == 646.259731


@pytest.mark.parametrize(
    "name, metrics",
    [
        (
            "public_pgbench_pg13_including_connections",
            {"tps": 248.316242, "tps_including_connections": 243.40584,
             "transactions": 14614.0, "latency_avg_ms": 41.084},
        ),
        (
            "public_pgbench_pg9_transactions_per_client",
            {"tps": 85.296346, "tps_including_connections": 85.184871, "transactions": 10000.0},
        ),
    ],
)  # fmt: skip
def test_pgbench_parse_older_versions(name, metrics):
    """Before PostgreSQL 14 `tps` is the '(excluding connections establishing)' line."""
    assert pgbench.parse(read(name)).metrics == metrics


def test_pgbench_parse_wrong_password_goes_to_errors():
    result = pgbench.parse(read("pgbench_wrong_password"))
    assert result.metrics == {}
    assert any('password authentication failed for user "bb_bench"' in e for e in result.errors)
    assert result.errors[-1] == "pgbench: error: could not create connection for setup"


def test_pgbench_parse_not_initialized_goes_to_errors():
    result = pgbench.parse(read("pgbench_not_initialized"))
    assert result.errors[0].endswith('relation "pgbench_branches" does not exist')
    assert "Perhaps you need to do initialization" in result.errors[1]


def test_pgbench_parse_init_output():
    assert pgbench.parse(read("pgbench_init_s1")).metrics == {"init_time_s": 0.3}


@pytest.mark.parametrize(
    "text, reason",
    [
        ("", "empty pgbench output"),
        ("lorem ipsum\n", "not pgbench output"),
        (read("pgbench_run_c2_j2_T5_progress1_latency")[:400], "no summary"),
        (read("pgbench_version"), "no summary"),
    ],
)
def test_pgbench_parse_refuses_unreadable_text(text, reason):
    with pytest.raises(ParseError, match=reason):
        pgbench.parse(text)


def test_pgbench_parse_version():
    assert pgbench.parse_version(read("pgbench_version")) == "15.18"


def test_pgbench_build_init_and_run_from_one_params_dict():
    params = {"scale": 10, "foreign_keys": True, "clients": 8, "threads": 2, "time": 60,
              "progress": 1, "select_only": True, "protocol": "prepared"}  # fmt: skip
    init = pgbench.build(params, ENDPOINT, phase="init")
    run = pgbench.build(params, ENDPOINT, phase="run")
    tail = ["-h", "db.internal", "-p", "5432", "-U", "bench", "bb"]
    assert init.argv == ["pgbench", "-i", "-s", "10", "--foreign-keys", *tail]
    assert run.argv == [
        "pgbench", "-c", "8", "-j", "2", "-T", "60", "-S", "-P", "1", "-M", "prepared", *tail,
    ]  # fmt: skip
    assert (run.env, run.uploads, run.secrets, run.package) == ({}, [], [], "postgresql-client")


def test_pgbench_build_password_goes_to_pgpass_file_only():
    endpoint = Endpoint(kind="postgres", host="127.0.0.1", port=5432, user="u",
                        database="d", password="s3:cr\\et $x")  # fmt: skip
    command = pgbench.build({"client": 2, "time": 5}, endpoint)
    assert all("s3" not in a for a in command.argv)
    assert command.env == {"PGPASSFILE": f"{WORKDIR}/pgpass"}
    assert command.secrets == ["s3:cr\\et $x"]
    [upload] = command.uploads
    assert (upload.name, upload.mode) == ("pgpass", 0o600)
    assert upload.content == b"127.0.0.1:5432:d:u:s3\\:cr\\\\et $x\n"


def test_pgbench_build_custom_script_is_uploaded():
    command = pgbench.build({"script": "SELECT 1;\n", "transactions": 10, "rate": 50.0}, ENDPOINT)
    assert command.argv[:7] == ["pgbench", "-t", "10", "-R", "50", "-f", f"{WORKDIR}/custom.sql"]
    assert [(u.name, u.content, u.mode) for u in command.uploads] == [
        ("custom.sql", b"SELECT 1;\n", 0o600)
    ]


@pytest.mark.parametrize(
    "params, endpoint, param",
    [
        ({"time": 5, "transactions": 5}, ENDPOINT, "transactions"),
        ({"select_only": True, "builtin": "tpcb-like"}, ENDPOINT, "select_only"),
        ({"builtin": "tpcc"}, ENDPOINT, "builtin"),
        ({"client": 0}, ENDPOINT, "client"),
        ({"clients": "8; drop"}, ENDPOINT, "client"),
        ({"vacuum_all": True}, ENDPOINT, "vacuum_all"),
        ({}, Endpoint(kind="mysql", host="h"), "endpoint"),
        ({}, Endpoint(kind="postgres", host="h h"), "host"),
        ({}, Endpoint(kind="postgres", host="h", database="-c"), "database"),
        ({}, Endpoint(kind="postgres", host="h", user="a;b"), "user"),
        ({}, Endpoint(kind="postgres", host="h", port=70000), "port"),
        ({}, Endpoint(kind="postgres", host="h", password="a\nb"), "password"),
    ],
)
def test_pgbench_build_refuses_bad_input(params, endpoint, param):
    with pytest.raises(ValidationError) as info:
        pgbench.build(params, endpoint)
    assert info.value.param == param
    assert "a\nb" not in str(info.value)


# ------------------------------------------------------------ real PostgreSQL


def _admin(port: int):
    return psycopg.connect(
        f"host=127.0.0.1 port={port} user=postgres dbname=postgres", autocommit=True
    )


@pytest.fixture
def pg_port(private_postgres_server):
    """The tests' private PostgreSQL (never the app's own server)."""
    return private_postgres_server.port


@pytest.fixture
def pg_database(pg_port):
    """A fresh database owned by a fresh role with a password; dropped afterwards.

    Yields (database, role, password)."""
    suffix = secrets.token_hex(4)
    database, role, password = f"bb_pgb_{suffix}", f"bb_pgb_{suffix}", f"pw:{suffix}\\x"
    with _admin(pg_port) as conn:
        conn.execute(
            sql.SQL("CREATE ROLE {} LOGIN PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(password)
            )
        )
        conn.execute(f"CREATE DATABASE {database} OWNER {role}")
    try:
        yield database, role, password
    finally:
        with _admin(pg_port) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            conn.execute(f"DROP ROLE IF EXISTS {role}")


def run_local(command: Command, workdir: Path) -> str:
    """Run command as an executor would: uploads written with their mode into
    workdir, WORKDIR resolved, PGPASSWORD not inherited. Returns stdout+stderr."""
    for upload in command.uploads:
        path = workdir / upload.name
        path.write_bytes(upload.content)
        path.chmod(upload.mode)
    resolved = command.resolved(str(workdir))
    env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"} | resolved.env
    proc = subprocess.run(
        resolved.argv, check=False, capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, command.mask(proc.stdout + proc.stderr)
    return proc.stdout + proc.stderr


def test_pgbench_real_init_and_run(pg_database, pg_port, tmp_path):
    database, _, _ = pg_database
    endpoint = Endpoint(kind="postgres", host="127.0.0.1", port=pg_port, user="postgres",
                        database=database)  # fmt: skip
    # 3 s with -P 1: progress at 1 s and 2 s for sure (the one at 3 s races the end).
    params = {"scale": 1, "client": 2, "jobs": 2, "time": 3, "progress": 1}
    init = pgbench.parse(run_local(pgbench.build(params, endpoint, "init"), tmp_path))
    assert init.metrics["init_time_s"] > 0
    result = pgbench.parse(run_local(pgbench.build(params, endpoint, "run"), tmp_path))
    assert result.errors == []
    assert result.metrics["tps"] > 0 and result.metrics["failed"] == 0
    assert result.metrics["transactions"] > 0 and result.metrics["latency_avg_ms"] > 0
    assert result.series["t"][:2] == [1.0, 2.0]
    assert result.facts["clients"] == 2


def test_pgbench_real_run_with_password_role_and_custom_script(pg_database, pg_port, tmp_path):
    """Connects as a role that has a password, the password only in the 0600
    pgpass file. (pg_hba here is trust for 127.0.0.1, so a wrong password cannot
    be refused live: that case is covered by the pgbench_wrong_password capture.)"""
    database, role, password = pg_database
    endpoint = Endpoint(kind="postgres", host="127.0.0.1", port=pg_port, user=role,
                        database=database, password=password)  # fmt: skip
    command = pgbench.build(
        {"script": "SELECT current_user;\n", "transactions": 20, "client": 2, "no_vacuum": True},
        endpoint,
    )
    assert password not in " ".join(command.argv) and "PGPASSWORD" not in command.env
    result = pgbench.parse(run_local(command, tmp_path))
    assert result.metrics["transactions"] == 40.0
    assert result.facts["transaction_type"] == f"{tmp_path}/custom.sql"
    assert stat.S_IMODE((tmp_path / "pgpass").stat().st_mode) == 0o600
