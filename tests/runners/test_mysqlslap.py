"""mysqlslap / mariadb-slap adapter: builders, parser over real outputs, real runs."""

from __future__ import annotations

import os
import pathlib
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from runners.command import WORKDIR, Endpoint
from runners.errors import ParseError, ValidationError
from runners.tools import get_tool, mysqlslap
from tests.support.dbtargets import mariadb_target, run_command  # noqa: F401

FIXTURES = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "mysqlslap"
DB = Endpoint(kind="mysql", host="db.internal", port=3306, user="scott", password="t1ger'pw")


def read(name: str) -> str:
    return (FIXTURES / f"{name}.out").read_text()


def block(avg, low, high, clients, per_client, qps, **labels):
    metrics = {
        "avg_s": avg,
        "min_s": low,
        "max_s": high,
        "clients": clients,
        "queries_per_client": per_client,
        "qps": qps,
    }
    return {"labels": {**labels, "concurrency": clients}, "metrics": metrics}


# ---------------------------------------------------------------- parser

GROUPS = {
    "mysqlslap_load_read": [block(0.048, 0.042, 0.062, 3, 100, 6250.0)],
    "mysqlslap_load_key": [block(0.020, 0.017, 0.022, 3, 100, 15000.0)],
    "mysqlslap_custom_query": [block(0.004, 0.002, 0.006, 2, 50, 25000.0)],
    "mysqlslap_multi_concurrency": [
        block(0.046, 0.037, 0.051, 1, 300, 6521.739),
        block(0.029, 0.027, 0.031, 4, 75, 10344.828),
    ],
    "mysqlslap_multi_engine": [
        block(0.035, 0.028, 0.048, 3, 100, 8571.429, engine="innodb"),
        block(0.017, 0.012, 0.021, 3, 100, 17647.059, engine="myisam"),
    ],
    "mysqlslap_multi_engine_multi_concurrency": [
        block(0.074, 0.054, 0.088, 1, 300, 4054.054, engine="innodb"),
        block(0.053, 0.048, 0.061, 4, 75, 5660.377, engine="innodb"),
        block(0.096, 0.071, 0.144, 1, 300, 3125.0, engine="myisam"),
        block(0.037, 0.033, 0.041, 4, 75, 8108.108, engine="myisam"),
    ],
    "mysqlslap_csv_stdout": [
        block(0.048, 0.047, 0.050, 1, 300, 6250.0),
        block(0.028, 0.027, 0.031, 4, 75, 10714.286),
    ],
    "mysqlslap_csv_append_twice": [
        block(0.021, 0.018, 0.026, 2, 150, 14285.714),
        block(0.019, 0.018, 0.021, 2, 150, 15789.474),
    ],
    "public_mysql56_multi_engine_concurrency_debuginfo": [
        block(0.015, 0.015, 0.015, 50, 4, 13333.333, engine="myisam"),
        block(0.014, 0.014, 0.014, 100, 2, 14285.714, engine="myisam"),
        block(0.024, 0.024, 0.024, 200, 1, 8333.333, engine="myisam"),
        block(0.070, 0.070, 0.070, 50, 4, 2857.143, engine="innodb"),
        block(0.018, 0.018, 0.018, 100, 2, 11111.111, engine="innodb"),
        block(0.045, 0.045, 0.045, 200, 1, 4444.444, engine="innodb"),
    ],
    "public_mysql8_greatsql_mixed": [block(0.260, 0.246, 0.294, 50, 0, 0.0)],
}


@pytest.mark.parametrize("name", sorted(GROUPS))
def test_parse_blocks_become_groups(name):
    result = mysqlslap.parse(read(name))
    assert result.groups == GROUPS[name]
    assert result.errors == []
    assert result.metrics == (GROUPS[name][0]["metrics"] if len(GROUPS[name]) == 1 else {})


def test_parse_csv_file_with_engine_column():
    result = mysqlslap.parse((FIXTURES / "mysqlslap_csv_file.csv").read_text())
    assert result.groups == [
        block(0.055, 0.027, 0.075, 3, 100, 5454.545, engine="innodb"),
        block(0.016, 0.015, 0.018, 3, 100, 18750.0, engine="myisam"),
    ]
    assert result.facts == {"load_type": "mixed"}


ERRORS = {
    "mysqlslap_wrong_password": "Error when connecting to server: Access denied for user "
    "'bench'@'localhost' (using password: YES)",
    "mariadbslap_wrong_password": "Error when connecting to server: Access denied for user "
    "'bench'@'localhost' (using password: YES)",
    "mysqlslap_connection_refused": "Error when connecting to server: Can't connect to server on "
    "'127.0.0.1' (115)",
    "mysqlslap_no_privileges": "Cannot drop database 'mysqlslap' ERROR : Access denied for user "
    "'lowpriv'@'localhost' to database 'mysqlslap'",
    "mysqlslap_key_without_primary_key": "Can't perform key test without a primary key!",
    "mysqlslap_bad_engine": "Cannot run query CREATE TABLE `t1` (id serial,intcol1 INT(32) ,intcol2 "
    "INT(32) ,intcol3 INT(32) ,intcol4 INT(32) ,intcol5 INT(32) ,charcol1 "
    "VARCHAR(128),charcol2 VARCHAR(128),charcol3 VARCHAR(128)) ERROR : "
    "Unknown storage engine 'nosuchengine'",
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_parse_tool_errors_go_to_errors(name):
    result = mysqlslap.parse(read(name))
    assert (result.errors, result.metrics, result.groups) == ([ERRORS[name]], {}, [])


def test_parse_errors_and_numbers_together_are_both_kept():
    result = mysqlslap.parse(read("public_mysql57_too_many_connections"))
    assert result.errors == ["Error when connecting to server: 1040 Too many connections"] * 4
    assert result.groups == [block(1.780, 1.696, 1.957, 500, 0, 0.0)]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "\n\n",
        "Benchmark\n",
        "Benchmark\n\tRunning for engine innodb\n",
        "mysqlslap: [Warning] Using a password on the command line\n",
        "some other tool's output\n",
    ],
)
def test_parse_empty_truncated_or_foreign_raises_parse_error(text):
    with pytest.raises(ParseError):
        mysqlslap.parse(text)


def test_parse_truncated_block_keeps_present_numbers_without_qps():
    text = "Benchmark\n\tAverage number of seconds to run all queries: 0.030 seconds\n"
    assert mysqlslap.parse(text).groups == [{"labels": {}, "metrics": {"avg_s": 0.03}}]


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_arbitrary_text_raises_only_parse_error(text):
    try:
        mysqlslap.parse(text)
    except ParseError:
        pass


def test_parse_version_mariadb_and_oracle():
    assert (
        mysqlslap.parse_version(
            "mysqlslap  Ver 1.0 Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64)\n"
        )
        == "10.11.19-MariaDB"
    )
    assert (
        mysqlslap.parse_version(
            "mysqlslap  Ver 8.0.36 for Linux on x86_64 (MySQL Community Server - GPL)"
        )
        == "8.0.36"
    )
    assert mysqlslap.version_command() == ["mysqlslap", "--version"]


# ---------------------------------------------------------------- builders


def test_build_scenario_s1_argv_and_option_file():
    params = {
        "engine": "innodb",
        "auto_generate_sql": True,
        "add_autoincrement": True,
        "number_char_cols": 3,
        "number_int_cols": 5,
        "number_of_queries": 10000,
        "concurrency": 3,
        "iterations": 10,
        "load_type": "key",
    }
    cmd = mysqlslap.build(params, DB)
    assert cmd.argv == [
        "mysqlslap",
        f"--defaults-extra-file={WORKDIR}/my.cnf",
        "--engine=innodb",
        "--auto-generate-sql",
        "--auto-generate-sql-add-autoincrement",
        "--number-char-cols=3",
        "--number-int-cols=5",
        "--number-of-queries=10000",
        "--concurrency=3",
        "--iterations=10",
        "--auto-generate-sql-load-type=key",
    ]
    assert [(u.name, u.mode) for u in cmd.uploads] == [("my.cnf", 0o600)]
    assert cmd.uploads[0].content == (
        b'[client]\nhost="db.internal"\nport="3306"\nuser="scott"\npassword="t1ger\'pw"\n'
    )
    assert cmd.secrets == ["t1ger'pw"] and cmd.package == "mariadb-client"


def test_build_scenario_s5_lists_and_execute_number():
    cmd = mysqlslap.build(
        {
            "engine": ["myisam", "innodb"],
            "add_autoincrement": True,
            "number_int_cols": 3,
            "number_char_cols": 8,
            "concurrency": [8, 16],
            "auto_generate_sql_execute_number": 10000,
            "load_type": "update",
            "auto_generate_sql_write_number": 1000000,
        },
        DB,
    )
    assert cmd.argv[2:] == [
        "--engine=myisam,innodb",
        "--auto-generate-sql-add-autoincrement",
        "--number-int-cols=3",
        "--number-char-cols=8",
        "--concurrency=8,16",
        "--auto-generate-sql-execute-number=10000",
        "--auto-generate-sql-load-type=update",
        "--auto-generate-sql-write-number=1000000",
        "--auto-generate-sql",
    ]


def test_build_custom_sql_travels_as_files():
    cmd = mysqlslap.build(
        {
            "create": "CREATE TABLE t (a INT); INSERT INTO t VALUES (1)",
            "query": "UPDATE t SET a = a + 1; SELECT a FROM t WHERE a > 0",
            "create_schema": "slaptest",
            "concurrency": 2,
        },
        DB,
    )
    assert cmd.argv[2:] == [
        f"--create={WORKDIR}/create.sql",
        f"--query={WORKDIR}/query.sql",
        "--create-schema=slaptest",
        "--concurrency=2",
        "--delimiter=;",
    ]
    assert {u.name: u.mode for u in cmd.uploads} == {
        "my.cnf": 0o600,
        "create.sql": 0o600,
        "query.sql": 0o600,
    }


@pytest.mark.parametrize(
    "params, culprit",
    [
        ({"load_type": "bogus"}, "auto_generate_sql_load_type"),
        ({"load_type": "key"}, "auto_generate_sql_load_type"),
        ({"engine": "innodb;drop"}, "engine"),
        ({"concurrency": [3, "x"]}, "concurrency"),
        ({"concurrency": 0}, "concurrency"),
        ({"create_schema": "a b"}, "create_schema"),
        ({"query": "SELECT 1", "auto_generate_sql": True}, "auto_generate_sql"),
        ({"query": "SELECT 1", "number_int_cols": 3}, "number_int_cols"),
        ({"auto_generate_sql": False}, "auto_generate_sql"),
        ({"password": "x"}, "password"),
        (
            {"load_type": "read", "auto_generate_sql_load_type": "read"},
            "auto_generate_sql_load_type",
        ),
    ],
)
def test_build_refuses_bad_params(params, culprit):
    with pytest.raises(ValidationError) as caught:
        mysqlslap.build(params, DB)
    assert caught.value.param == culprit


def test_build_refuses_newline_in_password_and_bad_host():
    with pytest.raises(ValidationError):
        mysqlslap.build({}, Endpoint(kind="mysql", host="h", user="u", password="a\nhost=evil"))
    with pytest.raises(ValidationError):
        mysqlslap.build({}, Endpoint(kind="mysql", host="h\nuser=root", user="u"))


_SHELL = set(" ;|&$`<>()'\"\\*?~!#\n\t")
_PARAMS = st.fixed_dictionaries(
    {},
    optional={
        "load_type": st.one_of(st.sampled_from(mysqlslap.LOAD_TYPES), st.text(max_size=6)),
        "add_autoincrement": st.one_of(st.booleans(), st.text(max_size=3)),
        "engine": st.one_of(st.text(max_size=10), st.lists(st.text(max_size=8), max_size=3)),
        "concurrency": st.one_of(st.integers(-1, 500), st.lists(st.integers(-1, 50), max_size=3)),
        "iterations": st.integers(-1, 20),
        "number_of_queries": st.integers(-1, 10**6),
        "create_schema": st.text(max_size=10),
        "query": st.text(max_size=30),
        "csv": st.booleans(),
    },
)


@settings(max_examples=400, deadline=None)
@given(_PARAMS, st.text(min_size=1, max_size=20))
def test_build_argv_holds_only_validated_values_and_never_the_password(params, password):
    endpoint = Endpoint(kind="mysql", host="127.0.0.1", port=3306, user="bench", password=password)
    try:
        cmd = mysqlslap.build(params, endpoint)
    except ValidationError:
        return
    assert cmd.argv[1] == f"--defaults-extra-file={WORKDIR}/my.cnf"
    for element in cmd.argv:
        # "--delimiter=;" is a constant of the builder, not a user value.
        assert element == "--delimiter=;" or not (_SHELL & set(element)), element
        assert not element.startswith(("--password", "-p")), element
    assert all(u.mode == 0o600 for u in cmd.uploads)


def test_registry_returns_this_module():
    assert get_tool("mysqlslap") is mysqlslap and mysqlslap.PHASES == ("run",)


# ---------------------------------------------------------------- real runs


def test_real_mysqlslap_password_user_via_option_file(mariadb_target, tmp_path):  # noqa: F811
    cmd = mysqlslap.build(
        {
            "load_type": "mixed",
            "add_autoincrement": True,
            "concurrency": [1, 2],
            "iterations": 2,
            "number_of_queries": 40,
            "engine": ["innodb", "myisam"],
            "create_schema": f"mysqlslap_{mariadb_target.database[-8:]}",
        },
        mariadb_target,
    )
    rc, out, argv = run_command(cmd, str(tmp_path))
    assert rc == 0, out
    assert not any(mariadb_target.password in element for element in argv)
    assert stat.S_IMODE(os.stat(tmp_path / "my.cnf").st_mode) == 0o600
    result = mysqlslap.parse(out)
    assert [g["labels"] for g in result.groups] == [
        {"engine": "innodb", "concurrency": 1},
        {"engine": "innodb", "concurrency": 2},
        {"engine": "myisam", "concurrency": 1},
        {"engine": "myisam", "concurrency": 2},
    ]
    assert [g["metrics"]["queries_per_client"] for g in result.groups] == [40, 20, 40, 20]


def test_real_mysqlslap_custom_query_files(mariadb_target, tmp_path):  # noqa: F811
    cmd = mysqlslap.build(
        {
            "create": "CREATE TABLE t (a INT); INSERT INTO t VALUES (1)",
            "query": "UPDATE t SET a = a + 1; SELECT a FROM t",
            "create_schema": f"mysqlslap_{mariadb_target.database[-8:]}",
            "concurrency": 2,
            "iterations": 1,
            "number_of_queries": 20,
        },
        mariadb_target,
    )
    rc, out, _ = run_command(cmd, str(tmp_path))
    assert rc == 0, out
    assert mysqlslap.parse(out).metrics["queries_per_client"] == 10


def test_real_mysqlslap_wrong_password_is_an_error(mariadb_target, tmp_path):  # noqa: F811
    wrong = Endpoint(
        kind="mysql", host="127.0.0.1", port=3306, user=mariadb_target.user, password="nope"
    )
    rc, out, _ = run_command(mysqlslap.build({"iterations": 1}, wrong), str(tmp_path))
    assert rc != 0
    assert "Access denied" in mysqlslap.parse(out).errors[0]
