"""sysbench adapter: builders, parser over real outputs, real runs."""

from __future__ import annotations

import pathlib
import shlex

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from runners.command import WORKDIR, Endpoint
from runners.errors import ParseError, ValidationError
from runners.tools import get_tool, sysbench
from tests.support.dbtargets import mariadb_target, postgres_target, run_command  # noqa: F401
from tests.support.series import series_to_rows

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "sysbench"
MYSQL = Endpoint(
    kind="mysql", host="127.0.0.1", port=3306, user="bench", database="sbtest", password="s3cret-pw"
)


def read(name: str) -> str:
    return (FIXTURES / f"{name}.out").read_text()


# ---------------------------------------------------------------- parser

PARSED = {
    "sysbench_oltp_read_write_run_p99": {
        "reads": 24290,
        "writes": 6940,
        "other": 3470,
        "transactions": 1735,
        "tps": 577.6,
        "queries": 34700,
        "qps": 11551.91,
        "errors": 0,
        "reconnects": 0,
        "total_time_s": 3.0022,
        "events": 1735,
        "latency_min_ms": 1.41,
        "latency_avg_ms": 3.46,
        "latency_max_ms": 61.98,
        "latency_p99_ms": 8.43,
    },
    "sysbench_oltp_read_write_run_with_ignored_errors": {
        "reads": 60326,
        "writes": 17186,
        "other": 8600,
        "transactions": 4291,
        "tps": 1071.73,
        "queries": 86112,
        "qps": 21507.44,
        "errors": 18,
        "reconnects": 0,
        "total_time_s": 4.0024,
        "events": 4291,
        "latency_min_ms": 0.95,
        "latency_avg_ms": 1.86,
        "latency_max_ms": 7.97,
        "latency_p95_ms": 2.91,
    },
    "sysbench_cpu_run": {
        "events_per_s": 1834.8,
        "total_time_s": 3.0025,
        "events": 5512,
        "latency_min_ms": 0.97,
        "latency_avg_ms": 1.09,
        "latency_max_ms": 13.04,
        "latency_p95_ms": 1.18,
    },
    "public_sysbench_0412_oltp_simple_ro": {
        "reads": 1020984,
        "writes": 0,
        "other": 1020984,
        "transactions": 1020984,
        "tps": 17016.33,
        "deadlocks": 0,
        "total_time_s": 60.0002,
        "events": 1020984,
        "latency_min_ms": 0.12,
        "latency_avg_ms": 0.23,
        "latency_max_ms": 0.97,
        "latency_p95_ms": 0.3,
        "queries": 2041968,
        "qps": 34032.66,
    },
    "public_sysbench_0412_oltp_complex": {
        "reads": 9310,
        "writes": 3325,
        "other": 1330,
        "transactions": 665,
        "tps": 10.94,
        "deadlocks": 0,
        "total_time_s": 60.8074,
        "events": 665,
        "latency_min_ms": 876.31,
        "latency_avg_ms": 1816.63,
        "latency_max_ms": 3792.73,
        "latency_p95_ms": 2886.19,
        "queries": 13965,
        "qps": 229.66,
    },
    "public_sysbench_041210_complex_interval_deadlocks": {
        "reads": 440076,
        "writes": 157170,
        "other": 62812,
        "transactions": 31378,
        "tps": 522.91,
        "deadlocks": 56,
        "total_time_s": 60.0065,
        "events": 31378,
        "latency_min_ms": 3.77,
        "latency_avg_ms": 15.29,
        "latency_max_ms": 180.78,
        "latency_p99_ms": 58.12,
        "queries": 660058,
        "qps": 10999.77,
    },
    "public_sysbench_05_oltp_lua_interval": {
        "reads": 14945588,
        "writes": 4270168,
        "other": 2135084,
        "transactions": 1067542,
        "tps": 1779.23,
        "deadlocks": 0,
        "total_time_s": 600.0024,
        "events": 1067542,
        "latency_min_ms": 1.67,
        "latency_avg_ms": 2.25,
        "latency_max_ms": 95.98,
        "latency_p99_ms": 2.58,
        "queries": 21350840,
        "qps": 35584.59,
    },
}


@pytest.mark.parametrize("name", sorted(PARSED))
def test_parse_summary_metrics(name):
    result = sysbench.parse(read(name))
    assert result.metrics == PARSED[name]
    assert result.groups == [{"labels": {}, "metrics": PARSED[name]}]


SERIES = {
    "sysbench_oltp_read_write_run_interval_histogram": (
        5,
        {
            "t": 1,
            "threads": 2,
            "tps": 638.58,
            "qps": 12800.61,
            "reads": 8965.11,
            "writes": 2556.33,
            "other": 1279.16,
            "latency_p95_ms": 4.57,
            "err_s": 0.0,
            "reconn_s": 0.0,
        },
    ),
    "sysbench_pgsql_oltp_read_write_run": (
        5,
        {
            "t": 1,
            "threads": 2,
            "tps": 703.53,
            "qps": 14092.61,
            "reads": 9869.42,
            "writes": 2814.13,
            "other": 1409.06,
            "latency_p95_ms": 4.33,
            "err_s": 0.0,
            "reconn_s": 0.0,
        },
    ),
    "public_sysbench_05_oltp_lua_interval": (
        60,
        {
            "t": 10,
            "threads": 4,
            "latency_p99_ms": 2.4,
            "tps": 1810.86,
            "reads": 25355.94,
            "writes": 7244.24,
        },
    ),
    "public_sysbench_041210_complex_interval_deadlocks": (
        6,
        {
            "t": 10,
            "threads": 8,
            "latency_p99_ms": 48.261058,
            "tps": 582.994023,
            "reads": 8233.315586,
            "writes": 2940.469852,
        },
    ),
}


@pytest.mark.parametrize("name", sorted(SERIES))
def test_parse_interval_lines_become_series(name):
    count, first = SERIES[name]
    rows = series_to_rows(sysbench.parse(read(name)).series)
    assert (len(rows), rows[0]) == (count, first)


def test_parse_collapsed_spacing_still_matches():
    line = (
        "[ 1234s ] thds: 256 tps: 123456.78 qps: 2469135.60 (r/w/o: 1728395.00/493827.00/246913.60) "
        "lat (ms,95%): 1234.56 err/s: 10.00 reconn/s: 0.00\n"
    )
    collapsed = line.replace(": ", ":").replace("  ", " ")
    assert sysbench.parse(collapsed).series == sysbench.parse(line).series
    assert sysbench.parse(line).series["latency_p95_ms"] == [1234.56]


def test_parse_odd_lines_among_canonical_ones_keep_every_row():
    """Canonical 1.x lines (block reader) mixed with odd ones (per-line reader)."""
    lines = [
        line
        for line in read("sysbench_oltp_read_write_run_interval_histogram").splitlines()
        if line.startswith("[")
    ]
    odd = lines[2].replace(": ", ":  ")  # extra spaces: not the canonical shape
    mixed = "\n".join([lines[0], lines[1], "FATAL: something in between", odd, *lines[3:]]) + "\n"
    one_by_one = [series_to_rows(sysbench.parse(line).series)[0] for line in lines]
    assert series_to_rows(sysbench.parse(mixed).series) == one_by_one
    assert series_to_rows(sysbench.parse("\n".join(lines)).series) == one_by_one
    assert list(sysbench.parse(mixed).series) == list(one_by_one[0])


@pytest.mark.parametrize("number", ["00.5", "1."])
def test_parse_malformed_number_in_canonical_shape_is_not_misread(number):
    line = (
        f"[ 1s ] thds: 2 tps: {number} qps: 1.00 (r/w/o: 1.00/0.00/0.00) lat (ms,95%): 1.00 "
        "err/s: 0.00 reconn/s: 0.00\n"
    )
    assert sysbench.parse(line).series == {
        "t": [1],
        "threads": [2],
        "tps": [float(number)],
        "qps": [1.0],
        "reads": [1.0],
        "writes": [0.0],
        "other": [0.0],
        "latency_p95_ms": [1.0],
        "err_s": [0.0],
        "reconn_s": [0.0],
    }


def test_parse_histogram_goes_to_facts():
    facts = sysbench.parse(read("sysbench_oltp_read_write_run_interval_histogram")).facts
    assert facts["histogram"][:2] == [[1.469, 6], [1.523, 5]]
    assert sum(count for _, count in facts["histogram"]) == 2782
    assert (facts["version"], facts["threads"], facts["percentile"]) == ("1.0.20", 2, "95")


ERRORS = {
    "sysbench_oltp_read_write_wrong_password": [
        "FATAL: unable to connect to MySQL server on host '127.0.0.1', port 3306, aborting...",
        "FATAL: error 1045: Access denied for user 'bench'@'localhost' (using password: YES)",
        (
            "FATAL: `thread_init' function failed: /usr/share/sysbench/oltp_common.lua:349: "
            "connection creation failed"
        ),
        "FATAL: Thread initialization failed!",
    ],
    "sysbench_oltp_read_write_missing_table": [
        "FATAL: mysql_stmt_prepare() failed",
        "FATAL: MySQL error: 1146 \"Table 'sbtest.sbtest3' doesn't exist\"",
        "FATAL: `thread_init' function failed: /usr/share/sysbench/oltp_common.lua:284: SQL API error",
        "FATAL: Thread initialization failed!",
    ],
    "sysbench_bad_testname": [
        "FATAL: Cannot find benchmark 'oltp_nosuchtest': no such built-in test, file or module"
    ],
    # 0.4 retries a deadlocked transaction: a count among the metrics, not an error.
    "public_sysbench_041210_complex_interval_deadlocks": [],
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_parse_tool_errors_go_to_errors(name):
    assert sysbench.parse(read(name)).errors == ERRORS[name]


def test_parse_prepare_fatal_with_exit_0_keeps_every_thread_error():
    # Every preparing thread met an existing table; sysbench still exited 0.
    errors = sysbench.parse(read("sysbench_oltp_read_write_prepare_threads4_tables_exist")).errors
    assert len(errors) == 8 and all("1050" in e and "already exists" in e for e in errors)
    assert errors[0] == (
        "FATAL: mysql_drv_query() returned error 1050 (Table 'sbtest2' already "
        "exists) for query 'CREATE TABLE sbtest2("
    )


def test_parse_server_shutdown_midrun_keeps_intervals_and_errors():
    result = sysbench.parse(read("sysbench_oltp_read_write_server_shutdown_midrun"))
    assert result.metrics == {}
    assert result.series["tps"] == [513.83, 714.37]
    assert len(result.errors) == 3 and all("2013" in e for e in result.errors)


def test_parse_alert_err1317_lines_are_errors_and_numbers_kept():
    # 0.4 reports failed queries as ALERT lines amid the run (scenario S4).
    text = read("public_sysbench_0412_oltp_complex").replace(
        "Threads started!\n",
        "Threads started!\nALERT: failed to execute mysql_stmt_execute(): "
        "Err1317 Query execution was interrupted\n",
        1,
    )
    result = sysbench.parse(text)
    assert result.errors == [
        ("ALERT: failed to execute mysql_stmt_execute(): Err1317 Query execution was interrupted")
    ]
    assert result.metrics == PARSED["public_sysbench_0412_oltp_complex"]


@pytest.mark.parametrize(
    "name, facts",
    [
        (
            "sysbench_oltp_read_write_prepare",
            {"version": "1.0.20", "tables_created": 2, "rows_inserted": 20000},
        ),
        ("sysbench_pgsql_oltp_read_write_cleanup", {"version": "1.0.20", "tables_dropped": 2}),
    ],
)
def test_parse_prepare_and_cleanup_progress(name, facts):
    result = sysbench.parse(read(name))
    assert (result.metrics, result.errors, result.facts) == ({}, [], facts)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   \n",
        "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)\n\nThreads started!\n",
        "hello world\nthis is not sysbench\n",
    ],
)
def test_parse_empty_truncated_or_foreign_raises_parse_error(text):
    with pytest.raises(ParseError):
        sysbench.parse(text)


def test_parse_help_text_raises_parse_error():
    with pytest.raises(ParseError):
        sysbench.parse(read("sysbench_oltp_read_write_help"))


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_arbitrary_text_raises_only_parse_error(text):
    try:
        sysbench.parse(text)
    except ParseError:
        pass


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            read("sysbench_oltp_read_write_run_interval_histogram").splitlines()
            + read("public_sysbench_05_oltp_lua_interval").splitlines()
        )
    )
)
def test_parse_shuffled_real_lines_raises_only_parse_error(lines):
    try:
        sysbench.parse("\n".join(lines))
    except ParseError:
        pass


def test_parse_version_reads_the_banner():
    assert sysbench.parse_version("sysbench 1.0.20\n") == "1.0.20"
    assert (
        sysbench.parse_version("sysbench 0.4.12:  multi-threaded system evaluation benchmark")
        == "0.4.12"
    )
    assert sysbench.version_command() == ["sysbench", "--version"]


# ---------------------------------------------------------------- builders


def test_build_oltp_read_write_argv():
    cmd = sysbench.build(
        {
            "test": "oltp_read_write",
            "tables": 30,
            "table_size": 1000000,
            "threads": 30,
            "time": 600,
            "report_interval": 1,
        },
        MYSQL,
    )
    assert cmd.argv == [
        "sysbench",
        "--db-driver=mysql",
        "--mysql-host=127.0.0.1",
        "--mysql-port=3306",
        "--mysql-user=bench",
        "--mysql-db=sbtest",
        "--tables=30",
        "--table-size=1000000",
        "--threads=30",
        "--time=600",
        "--report-interval=1",
        "--forced-shutdown=30",
        "oltp_read_write",
        "run",
    ]
    assert cmd.secrets == ["s3cret-pw"] and cmd.package == "sysbench"
    assert cmd.env == {"MYSQL_PWD": "s3cret-pw"}


def test_build_password_is_never_in_the_command_line():
    cmd = sysbench.build({"test": "oltp_read_only"}, MYSQL, "prepare")
    assert "s3cret-pw" not in " ".join(cmd.argv) and cmd.env == {"MYSQL_PWD": "s3cret-pw"}


def test_build_pgsql_password_goes_into_a_pgpass_file():
    endpoint = Endpoint(
        kind="postgres", host="127.0.0.1", port=5432, user="bench", database="sb", password="pg:pw"
    )
    cmd = sysbench.build({"test": "oltp_read_only"}, endpoint, "prepare")
    assert "pg:pw" not in " ".join(cmd.argv)
    assert cmd.env == {"PGPASSFILE": "@WORKDIR@/pgpass"}
    assert [(u.name, u.content, u.mode) for u in cmd.uploads] == [
        ("pgpass", b"127.0.0.1:5432:*:bench:pg\\:pw\n", 0o600)
    ]


def test_build_legacy_04_syntax_for_scenario_s4():
    cmd = sysbench.build(
        {
            "sysbench_version": "0.4",
            "test": "oltp",
            "oltp_test_mode": "complex",
            "oltp_table_size": 1000000,
            "max_time": 120,
            "threads": 64,
            "read_only": False,
            "max_requests": 0,
        },
        MYSQL,
    )
    assert cmd.argv[6:] == [
        "--oltp-table-size=1000000",
        "--num-threads=64",
        "--max-time=120",
        "--max-requests=0",
        "--oltp-test-mode=complex",
        "--oltp-read-only=off",
        "--forced-shutdown=10",
        "--test=oltp",
        "run",
    ]


@pytest.mark.parametrize(
    "params, test",
    [
        ({"read_only": True}, "oltp_read_only"),
        ({"read_only": False}, "oltp_read_write"),
        ({"test": "oltp_read_write", "read_only": True}, "oltp_read_only"),
    ],
)
def test_build_read_only_picks_the_oltp_test(params, test):
    assert sysbench.build(params, MYSQL).argv[-2] == test


def test_build_postgres_endpoint_uses_pgsql_driver():
    cmd = sysbench.build(
        {"test": "oltp_point_select", "time": 5},
        Endpoint(kind="postgres", host="127.0.0.1", port=5432, user="postgres", database="bench"),
    )
    assert cmd.argv[:6] == [
        "sysbench",
        "--db-driver=pgsql",
        "--pgsql-host=127.0.0.1",
        "--pgsql-port=5432",
        "--pgsql-user=postgres",
        "--pgsql-db=bench",
    ]
    assert cmd.secrets == []


def test_build_custom_lua_script_is_uploaded():
    cmd = sysbench.build({"script": "function event() end\n", "threads": 2}, MYSQL)
    assert cmd.argv[-2:] == [f"{WORKDIR}/custom.lua", "run"]
    assert [(u.name, u.content, u.mode) for u in cmd.uploads] == [
        ("custom.lua", b"function event() end\n", 0o600)
    ]


def test_build_cpu_has_no_database_options():
    assert sysbench.build({"test": "cpu", "time": 3}, MYSQL).argv == [
        "sysbench",
        "--time=3",
        "--forced-shutdown=10",
        "cpu",
        "run",
    ]


@pytest.mark.parametrize(
    "params, phase, culprit",
    [
        ({"test": "oltp_nosuch"}, "run", "test"),
        ({"test": "oltp_read_only", "read_only": False}, "run", "read_only"),
        ({"test": "oltp_read_write", "threads": 0}, "run", "threads"),
        ({"test": "oltp_read_write", "threads": "4; rm -rf /"}, "run", "threads"),
        (
            {"test": "oltp_read_write", "mysql_storage_engine": "innodb;drop"},
            "run",
            "mysql_storage_engine",
        ),
        (
            {"test": "oltp_read_write", "mysql_ignore_errors": ["1213", "x"]},
            "run",
            "mysql_ignore_errors",
        ),
        ({"test": "oltp_read_write", "bogus": 1}, "run", "bogus"),
        ({"test": "oltp_read_write", "oltp_test_mode": "complex"}, "run", "oltp_test_mode"),
        ({"sysbench_version": "0.4", "test": "oltp_read_write"}, "run", "test"),
        ({"sysbench_version": "0.4", "test": "oltp", "warmup_time": 5}, "run", "warmup_time"),
        ({"test": "cpu"}, "prepare", "phase"),
        ({"test": "oltp_read_write"}, "warmup", "phase"),
        ({"test": "oltp_read_write", "threads": 4, "num_threads": 8}, "run", "num_threads"),
    ],
)
def test_build_refuses_bad_params(params, phase, culprit):
    with pytest.raises(ValidationError) as caught:
        sysbench.build(params, MYSQL, phase)
    assert caught.value.param == culprit


def test_build_refuses_endpoint_text_with_shell_characters():
    with pytest.raises(ValidationError) as caught:
        sysbench.build(
            {"test": "oltp_read_write"}, Endpoint(kind="mysql", host="db;reboot", user="u")
        )
    assert caught.value.param == "endpoint.host"


_SHELL = set(" ;|&$`<>()'\"\\*?~!#\n\t")
_PARAM_VALUES = st.fixed_dictionaries(
    {},
    optional={
        "tables": st.integers(-5, 200),
        "table_size": st.integers(-5, 10**7),
        "threads": st.one_of(st.integers(-2, 300), st.text(max_size=8)),
        "time": st.integers(-1, 10**5),
        "report_interval": st.integers(-1, 100),
        "percentile": st.one_of(st.floats(allow_nan=True), st.integers(-1, 101)),
        "histogram": st.one_of(st.booleans(), st.text(max_size=5)),
        "mysql_storage_engine": st.text(max_size=12),
        "mysql_ignore_errors": st.lists(st.text(max_size=6)),
        "read_only": st.booleans(),
        "rand_type": st.text(max_size=8),
        "test": st.sampled_from(
            ["oltp_read_write", "oltp_read_only", "cpu", "oltp", "x y", "/a/b.lua"]
        ),
        "sysbench_version": st.sampled_from(["1", "0.4", "2"]),
    },
)


@settings(max_examples=400, deadline=None)
@given(_PARAM_VALUES, st.text(min_size=1, max_size=20))
@example({"sysbench_version": "0.4", "test": "cpu"}, "0")  # found by a CI run
def test_build_argv_holds_only_validated_values(params, password):
    endpoint = Endpoint(
        kind="mysql", host="127.0.0.1", port=3306, user="bench", database="sb", password=password
    )
    try:
        cmd = sysbench.build(params, endpoint)
    except ValidationError:
        return
    for element in cmd.argv:
        assert not (_SHELL & set(element)), element
    if cmd.env:
        assert cmd.secrets == [password] and cmd.env == {"MYSQL_PWD": password}
    else:
        # a host test: `cpu run` in 1.x, `--test=cpu run` in 0.4
        assert cmd.secrets == [] and cmd.argv[-2].removeprefix("--test=") in sysbench.HOST_TESTS


def test_registry_returns_this_module():
    assert get_tool("sysbench") is sysbench
    assert set(sysbench.PHASES) == {"prepare", "run", "cleanup"}


# ---------------------------------------------------------------- real runs


def _phases(params, endpoint, tmp_path):
    outputs = {}
    for phase in ("prepare", "run", "cleanup"):
        cmd = sysbench.build(params, endpoint, phase)
        rc, out, argv = run_command(cmd, str(tmp_path), timeout=60)
        assert rc == 0, f"{shlex.join(cmd.mask(a) for a in argv)}\n{cmd.mask(out)}"
        outputs[phase] = sysbench.parse(out)
    return outputs


def test_real_sysbench_mysql_read_only_prepare_run_cleanup(mariadb_target, tmp_path):  # noqa: F811
    params = {
        "test": "oltp_read_only",
        "tables": 1,
        "table_size": 1000,
        "time": 2,
        "threads": 2,
        "report_interval": 1,
    }
    outputs = _phases(params, mariadb_target, tmp_path)
    assert outputs["prepare"].facts["rows_inserted"] == 1000
    run = outputs["run"]
    assert run.errors == [] and run.metrics["writes"] == 0 and run.metrics["tps"] > 0
    assert 1.9 < run.metrics["total_time_s"] < 3.5 and len(run.series["t"]) >= 1
    assert outputs["cleanup"].facts["tables_dropped"] == 1


def test_real_sysbench_pgsql_read_write_prepare_run_cleanup(postgres_target, tmp_path):  # noqa: F811
    params = {"test": "oltp_read_write", "tables": 1, "table_size": 500, "time": 2, "threads": 2}
    outputs = _phases(params, postgres_target, tmp_path)
    assert outputs["run"].metrics["transactions"] > 0 and outputs["run"].metrics["writes"] > 0


def test_real_sysbench_wrong_password_reports_errors(mariadb_target, tmp_path):  # noqa: F811
    wrong = Endpoint(
        kind="mysql",
        host="127.0.0.1",
        port=3306,
        user=mariadb_target.user,
        database=mariadb_target.database,
        password="not-the-password",
    )
    rc, out, _ = run_command(
        sysbench.build({"test": "oltp_read_only", "time": 1}, wrong), str(tmp_path)
    )
    assert rc != 0
    assert any("1045" in line for line in sysbench.parse(out).errors)
