"""mysqlslap (Oracle MySQL) and mariadb-slap (MariaDB): build and parse.

Build: auto-generated SQL (load types read/write/key/update/mixed) or custom
--create/--query SQL. Custom SQL is never put in argv: it travels as an
uploaded file ("@WORKDIR@/create.sql", "@WORKDIR@/query.sql"), which mysqlslap
reads because --create/--query accept a file name. The password never reaches
argv either: user/password/host/port/socket go into a 0600 option file,
uploaded as "@WORKDIR@/my.cnf" and passed as the FIRST option
(`--defaults-extra-file` is only honoured in first position).

Parse: the normal "Benchmark" blocks of MySQL 5.x/8.x and MariaDB, and the
--csv lines (engine,load_type,avg,min,max,clients,queries_per_client).
Metrics: avg_s, min_s, max_s, clients, queries_per_client, qps
(clients x queries_per_client / avg_s). One group per block, labelled with
engine (when the output names one) and concurrency.

Decisions worth knowing:
- An unknown load type is accepted silently by the tool (exit 0, numbers for
  the default load), so validate() refuses anything but the five real ones.
- load type `key` without add_autoincrement / guid_primary fails in the tool
  ("Can't perform key test without a primary key!"): refused up front.
- With neither `query` nor `auto_generate_sql`, auto_generate_sql is implied
  (mysqlslap needs one of them, and every auto_generate_sql_* option needs it).
- Endpoint.database is NOT used as --create-schema: with auto-generated SQL
  mysqlslap drops that schema before the run (its tables with it) and after;
  with no_drop it refuses an existing schema ("Cannot create schema x:
  database exists", MariaDB 10.11's mariadb-slap), and a second iteration
  fails the same way. So it cannot run inside a database that holds data:
  `create_schema` names a scratch schema of its own (default "mysqlslap"),
  and benchapp.plans.prerun refuses one that is the target's database.
- Several blocks (engines x concurrencies) give several groups and an empty
  `metrics`; one block gives metrics equal to its group.
"""

from __future__ import annotations

import re

from runners import engines
from runners import metrics as m
from runners.command import WORKDIR, Command, Endpoint, Upload, option_value
from runners.errors import ParseError, ValidationError
from runners.limits import Use
from runners.params import SAFE_TEXT, Param, checked
from runners.params import validate as validate_params
from runners.tools.mysqlslap_parse import parse  # noqa: F401 (the tool's parse)

NAME = "mysqlslap"
BINARY = "mysqlslap"
PACKAGE = "mariadb-client"
PHASES = ("run",)
LOAD_TYPES = ("read", "write", "key", "update", "mixed")
OPTION_FILE = "my.cnf"

_COUNT = {"min": 1, "max": 100_000_000}
PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("auto_generate_sql", "bool", "Generate SQL automatically (-a)", default=True),
        Param(
            "auto_generate_sql_load_type",
            "choice",
            "Load type of the generated SQL",
            choices=LOAD_TYPES,
            default="mixed",
        ),
        Param(
            "auto_generate_sql_add_autoincrement",
            "bool",
            "Add an AUTO_INCREMENT primary key column to the generated table",
        ),
        Param("auto_generate_sql_guid_primary", "bool", "Add a GUID primary key column"),
        Param("auto_generate_sql_execute_number", "int", "Queries each client runs", **_COUNT),
        Param(
            "auto_generate_sql_unique_query_number", "int", "Distinct generated queries", **_COUNT
        ),
        Param(
            "auto_generate_sql_unique_write_number", "int", "Distinct generated inserts", **_COUNT
        ),
        Param("auto_generate_sql_write_number", "int", "Rows inserted before the run", **_COUNT),
        Param(
            "auto_generate_sql_secondary_indexes",
            "int",
            "Secondary indexes on the table",
            min=0,
            max=64,
        ),
        Param("number_char_cols", "int", "VARCHAR columns in the generated table", min=1, max=1000),
        Param("number_int_cols", "int", "INT columns in the generated table", min=1, max=1000),
        Param(
            "number_of_queries", "int", "Total queries, shared by the clients", min=0, max=10**10
        ),
        Param(
            "concurrency",
            "int",
            "Clients; a list runs one block per value",
            min=1,
            max=100_000,
            many=True,
        ),
        Param(
            "iterations",
            "int",
            "Times the test is run (min/avg/max over them)",
            min=1,
            max=100_000,
            default=1,
        ),
        Param("engine", "text", "Storage engine; a list runs one block per engine", many=True),
        Param("create", "sql", "Custom SQL creating the test data (sent as a file)"),
        Param("query", "sql", "Custom SQL to run (sent as a file; ';' separates statements)"),
        Param(
            "create_schema",
            "text",
            "Scratch schema mysqlslap creates and drops (before and after the run; "
            "default mysqlslap): never a database that holds data",
        ),
        Param("commit", "int", "Commit every N statements", min=0, max=10**9),
        Param("detach", "int", "Reconnect every N statements", min=0, max=10**9),
        Param("no_drop", "bool", "Do not drop the schema after the run"),
        Param("csv", "bool", "Print comma-separated results on stdout"),
    )
}
ALIASES = {
    "load_type": "auto_generate_sql_load_type",
    "add_autoincrement": "auto_generate_sql_add_autoincrement",
}
_ENGINE = re.compile(r"^[A-Za-z0-9_]+$")
# Flags written bare when true; every other param becomes --name=value.
_FLAGS = {
    "auto_generate_sql",
    "auto_generate_sql_add_autoincrement",
    "auto_generate_sql_guid_primary",
    "no_drop",
    "csv",
}
_AUTO_ONLY = {name for name in PARAMS if name.startswith("auto_generate_sql_")} | {
    "number_char_cols",
    "number_int_cols",
}


def validate(params: dict) -> dict:
    """Return typed canonical params or raise ValidationError (also cross-field rules)."""
    clean = validate_params(NAME, PARAMS, params, ALIASES)
    if "engine" in clean:
        # "innodb,myisam" and ["innodb", "myisam"] mean the same.
        clean["engine"] = [e for item in _as_list(clean["engine"]) for e in item.split(",")]
    for engine in clean.get("engine", []):
        if not _ENGINE.match(engine):
            raise ValidationError(
                "engine",
                f"{engine!r} is not allowed: expected engine names "
                "such as innodb, myisam (letters, digits, _)",
            )
    custom = "query" in clean or "create" in clean
    if custom and clean.get("auto_generate_sql"):
        raise ValidationError(
            "auto_generate_sql", "cannot be combined with custom create/query SQL"
        )
    if custom:
        for name in sorted(_AUTO_ONLY & set(clean)):
            raise ValidationError(
                name, "only applies to auto-generated SQL, not custom query/create"
            )
    else:
        clean.setdefault("auto_generate_sql", True)
    if clean.get("auto_generate_sql") is False and not custom:
        raise ValidationError("auto_generate_sql", "false needs custom `query` SQL instead")
    _check_key_load(clean)
    return clean


def _check_key_load(clean: dict) -> None:
    """The key load reads by primary key, so the table must have one."""
    if clean.get("auto_generate_sql_load_type") == "key" and not (
        clean.get("auto_generate_sql_add_autoincrement")
        or clean.get("auto_generate_sql_guid_primary")
    ):
        raise ValidationError(
            "auto_generate_sql_load_type",
            "key needs add_autoincrement: true (or auto_generate_sql_guid_primary)",
        )


def _as_list(value) -> list:
    return value if isinstance(value, list) else [value]


# LOAD DATA LOCAL / LOAD XML LOCAL make the client send a file of its host.
_LOAD_LOCAL = re.compile(r"\bLOAD\b.*\bLOCAL\b", re.IGNORECASE | re.DOTALL)


def check_scope(clean: dict, scope) -> None:
    """Refuse SQL that reads a client-side file where scope forbids it.

    mysqlslap takes no file path from a plan (custom SQL travels as uploads)
    and local-infile is always off in its option file; this names the cause.
    """
    for name in ("create", "query"):
        if _LOAD_LOCAL.search(clean.get(name) or ""):
            scope.refuse(name, "LOAD DATA/XML LOCAL (reads a file of the client host)")


def build(params: dict, endpoint: Endpoint, phase: str = "run") -> Command:
    """Validate params and return the mysqlslap Command for endpoint.

    argv[1] is always --defaults-extra-file=@WORKDIR@/my.cnf; the option file
    (mode 0600) carries the connection and the password. Custom SQL becomes
    uploads create.sql/query.sql.
    """
    if phase not in PHASES:
        raise ValidationError("phase", f"{phase!r} is not allowed: mysqlslap has only 'run'")
    clean = checked(params, validate)
    uploads = [Upload(OPTION_FILE, _option_file(endpoint), 0o600)]
    argv = [BINARY, f"--defaults-extra-file={WORKDIR}/{OPTION_FILE}"]
    for name, value in clean.items():
        if PARAMS[name].kind == "sql":
            uploads.append(Upload(f"{name}.sql", value.encode(), 0o600))
            argv.append(f"--{_option(name)}={WORKDIR}/{name}.sql")
        elif name in _FLAGS:
            if value:
                argv.append(f"--{_option(name)}")
        else:
            argv.append(f"--{_option(name)}={_render(value)}")
    if "query" in clean or "create" in clean:
        # Without a delimiter the whole file is one statement.
        argv.append("--delimiter=;")
    secrets = [endpoint.password] if endpoint.password else []
    return Command(argv=argv, uploads=uploads, secrets=secrets, tool=NAME, package=PACKAGE)


def _option(name: str) -> str:
    return name.replace("_", "-")


def _render(value) -> str:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    return str(value)


def _option_file(endpoint: Endpoint) -> bytes:
    """The [client] section for endpoint, as bytes for a 0600 upload (the
    engine's one writer, runners.engines.mysql.option_file).

    Host, port, user and socket are also checked like plan parameters
    (plain text only): they come from the plan.
    """
    if endpoint.kind not in (TARGET_KIND, "host"):
        raise ValidationError(
            "endpoint", f"mysqlslap needs a {TARGET_KIND} endpoint, not {endpoint.kind!r}"
        )
    for key in ("host", "port", "user", "socket"):
        value = getattr(endpoint, key)
        if value is None or value == "":
            continue
        text = option_value(value, key)
        if not SAFE_TEXT.match(text):
            raise ValidationError(f"endpoint.{key}", f"{text!r} is not allowed: plain text only")
    return engines.get(TARGET_KIND).option_file(endpoint)


def expected_groups(params: dict) -> int:
    """Result blocks a run with these params prints: one per engine per
    concurrency (a cut between two whole blocks leaves no other trace)."""
    clean = validate(params)
    return len(clean.get("engine") or [None]) * len(_as_list(clean.get("concurrency") or [None]))


def version_command() -> list[str]:
    return [BINARY, "--version"]


def parse_version(text: str) -> str:
    """'mysqlslap  Ver 1.0 Distrib 10.11.19-MariaDB, ...' -> '10.11.19-MariaDB'.

    Oracle's 8.0 prints 'mysqlslap  Ver 8.0.36 for Linux on x86_64 (MySQL
    Community Server - GPL)' -> '8.0.36'. Raises ParseError otherwise.
    """
    match = re.search(r"Distrib\s+([^\s,]+)", text) or re.search(r"Ver\s+([0-9][^\s,]*)", text)
    if not match:
        raise ParseError("no mysqlslap version found")
    return match.group(1)


# ================================================================ registry
# Everything the rest of Benchboard knows about this tool (read through
# runners/tools/__init__.py; nothing outside this block lists it): target
# kinds, duration, metric catalog, default results view, per-second series.
# Its parameters are PARAMS above; its version command and pattern are
# version_command() and parse_version() above.
TARGET_KIND = "mysql"  # the kind of a target whose plan does not say
TARGET_KINDS = ("mysql",)  # the kinds it can run against
MEASURED = True  # a plan may choose it as its measured tool
CONNECTIONS_PARAM = "concurrency"  # connections one cell opens (the pre-run check counts them)
# The scratch schema its generated SQL creates and drops before and after the
# run (benchapp.plans.prerun refuses a target's own database there): the parameter,
# its default, and the grants it needs there (checked with the real tool:
# without INSERT it stops at "INSERT command denied").
SCHEMA_PARAM, SCHEMA_DEFAULT = "create_schema", "mysqlslap"
# With no_drop the schema is neither dropped before nor after the run.
SCHEMA_KEPT_BY = "no_drop"
SCHEMA_PRIVILEGES = ("CREATE", "DROP", "INSERT", "SELECT", "UPDATE")
DURATION_PARAM = None  # runs a number of queries, not for a time
# What counts against the worker's limits when this tool runs there (runners/limits.py).
LIMITS = (Use("concurrency", "processes"),)  # a thread per client
SERIES: tuple[str, ...] = ()  # no per-second output
# What answers "how fast" for this tool, best first: the dashboard, the
# trend and the timeline open on the first a run has (runners.tools.main_metric):
# queries per second; the average time when an output lacks its figures.
MAIN_METRICS = ("qps", "avg_s")
METRICS = {
    "avg_s": m.latency("Average time to run all queries", "s"),
    "min_s": m.latency("Minimum time to run all queries", "s"),
    "max_s": m.latency("Maximum time to run all queries", "s"),
    "qps": m.throughput("Queries per second", "q/s"),
    "clients": m.parameter("Concurrent clients"),  # the --concurrency it ran with
    "queries_per_client": m.parameter("Queries per client"),  # from --number-of-queries
}


def default_view(axes: list[str]) -> dict:
    """S1: rows target, columns load_type, average seconds; S5: q/s per write_number."""
    if "auto_generate_sql_write_number" in axes:  # S5: spread of repeats visible
        return m.view(["auto_generate_sql_write_number"], ["repeat"], "qps")
    others = [a for a in axes if a != "target"]
    col = next((a for a in ("load_type", "concurrency", *others) if a in axes), None)
    row = "target" if "target" in axes or not others else (others[1:] or ["repeat"])[0]
    return m.view([row], [col] if col and col != row else ["repeat"], "avg_s")


def client_params(clean: dict, index: int) -> dict:
    """Client `index`'s params when several clients load one server together.

    mysqlslap creates its schema, runs, then DROPS it: clients sharing one
    schema would drop it under each other. Each client gets its own
    (`<create_schema or mysqlslap>_c<index>`). A custom `query` without a
    `create` reads tables that already exist in one schema: refused.
    """
    if "query" in clean and "create" not in clean:
        raise ValidationError(
            "query",
            "several clients would each drop the shared schema: give `create` too "
            "(each client then works in its own schema) or use one client",
        )
    return {**clean, "create_schema": f"{clean.get('create_schema', 'mysqlslap')}_c{index}"}
