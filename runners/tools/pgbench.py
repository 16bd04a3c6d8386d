"""pgbench: PostgreSQL benchmark. Phases "init" (pgbench -i) and "run".

One params dict serves both phases: build() takes from it the options of the
phase it builds (scale and the init flags for "init"; clients, time, scripts...
for "run") and ignores the others, so a plan's params can hold both.

The password never travels in argv or in PGPASSWORD: it goes into an
uploaded 0600 file `@WORKDIR@/pgpass` (libpq's pgpass format) and
PGPASSFILE points at it. An executor whose own environment carries
PGPASSWORD should drop it, since libpq prefers it over the file.
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
from runners.tools.pgbench_parse import parse  # noqa: F401 (the tool's parse)

NAME = "pgbench"
BINARY = "pgbench"
PACKAGE = "postgresql-client"
PHASES = ("init", "run")
SCRIPT_FILE = "custom.sql"
PGPASS_FILE = "pgpass"

BUILTINS = ("tpcb-like", "simple-update", "select-only")
# Param name -> the phase that uses it; `option` is pgbench's own option
# (short forms where pgbench has them: they work in every pgbench since 9.x).
PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param(
            "scale",
            "int",
            "scale factor: 100,000 pgbench_accounts rows each",
            option="-s",
            min=1,
            max=1_000_000,
            default=1,
        ),
        Param(
            "foreign_keys",
            "bool",
            "create foreign keys between the tables",
            option="--foreign-keys",
        ),
        Param("unlogged_tables", "bool", "create unlogged tables", option="--unlogged-tables"),
        Param("fillfactor", "int", "table fill factor", option="-F", min=10, max=100),
        Param("quiet", "bool", "log init progress every 5 s only", option="-q"),
        Param("client", "int", "concurrent clients (sessions)", option="-c", min=1, max=100_000),
        Param("jobs", "int", "pgbench threads", option="-j", min=1, max=10_000),
        Param("time", "int", "run for this many seconds", option="-T", min=1, max=7 * 86400),
        Param(
            "transactions",
            "int",
            "transactions per client (instead of time)",
            option="-t",
            min=1,
            max=1 << 31,
        ),
        Param("builtin", "choice", "built-in script", option="-b", choices=BUILTINS),
        Param("select_only", "bool", "built-in select-only script", option="-S"),
        Param("skip_some_updates", "bool", "built-in simple-update script", option="-N"),
        Param("script", "sql", "custom SQL script (sent as a file, run with -f)"),
        Param(
            "progress",
            "int",
            "progress line every N seconds (per-second series)",
            option="-P",
            min=1,
            max=3600,
        ),
        Param("report_per_command", "bool", "per-statement latencies", option="-r"),
        Param(
            "protocol",
            "choice",
            "query protocol",
            option="-M",
            choices=("simple", "extended", "prepared"),
        ),
        Param(
            "rate",
            "float",
            "target transactions per second (throttling)",
            option="-R",
            min=0.001,
            max=1e9,
        ),
        Param(
            "latency_limit",
            "float",
            "count transactions slower than this (ms)",
            option="-L",
            min=0.001,
            max=1e9,
        ),
        Param("connect", "bool", "a new connection for each transaction", option="-C"),
        Param("no_vacuum", "bool", "skip the vacuum before the run", option="-n"),
        Param(
            "max_tries",
            "int",
            "retries of serialization/deadlock failures (PostgreSQL 15+)",
            option="--max-tries",
            min=1,
            max=1000,
        ),
    )
}
INIT_PARAMS = ("scale", "foreign_keys", "unlogged_tables", "fillfactor", "quiet")
SCRIPT_CHOICE = ("builtin", "select_only", "skip_some_updates", "script")
ALIASES = {
    "clients": "client",
    "threads": "jobs",
    "scale_factor": "scale",
    "report_latencies": "report_per_command",
}


def validate(params: dict) -> dict:
    """Return typed params (scale defaulted) or raise ValidationError.

    Rules: time and transactions exclude each other; at most one of builtin,
    select_only, skip_some_updates, script.
    """
    clean = validate_params(NAME, PARAMS, params, ALIASES)
    clean.setdefault("scale", PARAMS["scale"].default)
    if "time" in clean and "transactions" in clean:
        raise ValidationError("transactions", "give time or transactions, not both")
    chosen = [name for name in SCRIPT_CHOICE if clean.get(name)]
    if len(chosen) > 1:
        raise ValidationError(chosen[1], f"choose one script: {', '.join(SCRIPT_CHOICE)}")
    return clean


# \shell and \setshell run a command on the client host; pgbench reads the
# meta-command after the backslash, so spacing and case variants count too.
_SHELL = re.compile(r"\\\s*(?:set)?\s*shell", re.IGNORECASE)


def check_scope(clean: dict, scope) -> None:
    """Refuse a custom script that runs shell commands where scope forbids code."""
    if _SHELL.search(clean.get("script") or ""):
        scope.refuse("script", "a pgbench script with \\shell or \\setshell")


def build(params: dict, endpoint: Endpoint, phase: str = "run") -> Command:
    """Return the pgbench Command for phase ("init" or "run") against endpoint.

    argv: pgbench [phase options] -h HOST -p PORT -U USER DATABASE. A password
    becomes the uploaded pgpass file; a custom script the uploaded custom.sql.
    """
    if phase not in PHASES:
        raise ValidationError("phase", f"pgbench phases: {', '.join(PHASES)}")
    clean = checked(params, validate)
    argv = [BINARY] + (_init_options(clean) if phase == "init" else _run_options(clean))
    command = Command(argv=argv, tool=NAME, package=PACKAGE)
    if phase == "run" and "script" in clean:
        command.uploads.append(Upload(SCRIPT_FILE, clean["script"].encode()))
        argv.extend(["-f", f"{WORKDIR}/{SCRIPT_FILE}"])
    argv.extend(_endpoint_options(endpoint))
    if endpoint.password:
        option_value(endpoint.password, "password")  # a line break would add a pgpass line
        pgpass = engines.get(TARGET_KIND).pgpass_line(endpoint, database=endpoint.database)
        command.uploads.append(Upload(PGPASS_FILE, pgpass))
        command.env["PGPASSFILE"] = f"{WORKDIR}/{PGPASS_FILE}"
        command.secrets.append(endpoint.password)
    if endpoint.database:
        argv.append(_checked("database", endpoint.database))
    return command


def _init_options(clean: dict) -> list[str]:
    options = ["-i"]
    for name in INIT_PARAMS:
        options.extend(_option(name, clean.get(name)))
    return options


def _run_options(clean: dict) -> list[str]:
    options: list[str] = []
    for name, spec in PARAMS.items():
        if name not in INIT_PARAMS and spec.option:
            options.extend(_option(name, clean.get(name)))
    return options


def _option(name: str, value) -> list[str]:
    """[option] for a true flag, [option, value] for a value, [] when absent/false."""
    if value is None or value is False:
        return []
    option = PARAMS[name].option
    if value is True:
        return [option]
    if option.startswith("--"):
        return [f"{option}={value:g}" if isinstance(value, float) else f"{option}={value}"]
    return [option, f"{value:g}" if isinstance(value, float) else str(value)]


def _endpoint_options(endpoint: Endpoint) -> list[str]:
    """-h/-p/-U from the endpoint, each value checked like a plan parameter."""
    if endpoint.kind != "postgres":
        raise ValidationError("endpoint", f"pgbench needs a postgres endpoint, not {endpoint.kind}")
    options: list[str] = []
    if endpoint.socket:  # libpq takes the socket's directory as the host
        options += ["-h", _checked("socket", endpoint.socket.rsplit("/.s.PGSQL.", 1)[0])]
    elif endpoint.host:
        options += ["-h", _checked("host", endpoint.host)]
    if endpoint.port is not None:
        port = PORT.convert(endpoint.port)
        options += ["-p", str(port)]
    if endpoint.user:
        options += ["-U", _checked("user", endpoint.user)]
    return options


PORT = Param("port", "int", min=1, max=65535)


def _checked(field: str, value: str) -> str:
    """value if it is plain text (no spaces, shell characters, leading '-'), else ValidationError."""
    if (
        not isinstance(value, str)
        or not SAFE_TEXT.fullmatch(value)
        or value.startswith("-")
        or WORKDIR in value
    ):
        raise ValidationError(field, "plain text without spaces or shell characters")
    return value


def version_command() -> list[str]:
    return [BINARY, "--version"]


def parse_version(text: str) -> str:
    """'pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)' -> '15.18'."""
    match = re.search(r"pgbench \((?:PostgreSQL\) )?(\d+(?:\.\d+)*)", text)
    if not match:
        raise ParseError("no pgbench version found")
    return match.group(1)


# ================================================================ registry
# Everything the rest of Benchboard knows about this tool (read through
# runners/tools/__init__.py; nothing outside this block lists it): target
# kinds, duration, metric catalog, default results view, per-second series.
# Its parameters are PARAMS above; its version command and pattern are
# version_command() and parse_version() above.
TARGET_KIND = "postgres"  # the kind of a target whose plan does not say
TARGET_KINDS = ("postgres",)  # the kinds it can run against
MEASURED = True  # a plan may choose it as its measured tool
CONNECTIONS_PARAM = "client"  # connections one cell opens (the pre-run check counts them)
# pgbench -i: rows per scale unit (pgbench's own constants).
PREPARED_ROWS = {"pgbench_branches": 1, "pgbench_tellers": 10, "pgbench_accounts": 100_000}
PREPARE_REPLACES = True  # pgbench -i drops and makes its own tables again


def prepared_tables(params: dict) -> dict[str, int]:
    """{table: rows} an init with these params makes (runners.prepared counts them)."""
    scale = params.get("scale", 1)
    return {table: rows * scale for table, rows in PREPARED_ROWS.items()}


DURATION_PARAM = "time"
# What counts against the worker's limits when this tool runs there (runners/limits.py).
LIMITS = (Use("client", "processes"), Use("jobs", "processes"), Use("time", "seconds"))
SERIES = ("tps", "latency_avg_ms", "latency_stddev_ms", "lag_ms", "skipped", "failed")
# Averages of several clients are weighted by this count (runners.combine).
LATENCY_WEIGHT = "transactions"
# What answers "how fast" for this tool, best first: the dashboard, the
# trend and the timeline open on the first a run has (runners.tools.main_metric):
# transactions per second.
MAIN_METRICS = ("tps",)
METRICS = {
    "tps": m.throughput("Transactions per second", "tps"),
    "tps_including_connections": m.throughput("Transactions per second incl. connecting", "tps"),
    "transactions": m.count("Transactions"),
    "failed": m.count("Failed transactions", direction=m.LOWER),
    "skipped": m.count("Skipped transactions", direction=m.LOWER),
    "late": m.count("Transactions over the latency limit", direction=m.LOWER),
    "latency_avg_ms": m.latency("Average latency"),
    "latency_stddev_ms": m.latency("Latency standard deviation"),
    "lag_ms": m.latency("Schedule lag"),
    "lag_avg_ms": m.latency("Average schedule lag"),
    "lag_max_ms": m.latency("Maximum schedule lag"),
    "retried": m.count("Transactions retried", direction=m.LOWER),
    "retries": m.count("Retries", direction=m.LOWER),
    "serialization_failures": m.count("Serialization failures", direction=m.LOWER),
    "deadlock_failures": m.count("Deadlock failures", direction=m.LOWER),
    "initial_connection_time_ms": m.latency("Initial connection time"),
    "init_time_s": m.duration("Initialisation time", direction=m.LOWER),
}


def default_view(axes: list[str]) -> dict:
    """TPS per client count, one column per target."""
    others = [a for a in axes if a != "target"]
    row = next((a for a in ("clients", "jobs", *others) if a in axes), None) or "target"
    return m.view([row], ["target" if "target" in axes and row != "target" else "repeat"], "tps")


def client_params(clean: dict, index: int) -> dict:
    """Client `index`'s params when several clients run one cell: the same.

    pgbench -i runs once, from client 1; the standard scripts update random
    rows of the shared pgbench_* tables, which concurrent sessions do anyway.
    """
    return clean
