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
- Endpoint.database is NOT used as --create-schema: mysqlslap drops that schema
  at the end of the run. Use `create_schema` deliberately.
- Several blocks (engines x concurrencies) give several groups and an empty
  `metrics`; one block gives metrics equal to its group.
"""

from __future__ import annotations

import re

from runners import metrics as m
from runners.command import WORKDIR, Command, Endpoint, Upload
from runners.cutshort import ends_mid_number
from runners.errors import ParseError, ValidationError
from runners.params import SAFE_TEXT, Param
from runners.params import validate as validate_params
from runners.results import Result

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
        Param("auto_generate_sql_load_type", "choice", "Load type of the generated SQL",
              choices=LOAD_TYPES, default="mixed"),
        Param("auto_generate_sql_add_autoincrement", "bool",
              "Add an AUTO_INCREMENT primary key column to the generated table"),
        Param("auto_generate_sql_guid_primary", "bool", "Add a GUID primary key column"),
        Param("auto_generate_sql_execute_number", "int", "Queries each client runs", **_COUNT),
        Param("auto_generate_sql_unique_query_number", "int", "Distinct generated queries", **_COUNT),
        Param("auto_generate_sql_unique_write_number", "int", "Distinct generated inserts", **_COUNT),
        Param("auto_generate_sql_write_number", "int", "Rows inserted before the run", **_COUNT),
        Param("auto_generate_sql_secondary_indexes", "int", "Secondary indexes on the table",
              min=0, max=64),
        Param("number_char_cols", "int", "VARCHAR columns in the generated table", min=1, max=1000),
        Param("number_int_cols", "int", "INT columns in the generated table", min=1, max=1000),
        Param("number_of_queries", "int", "Total queries, shared by the clients", min=0, max=10**10),
        Param("concurrency", "int", "Clients; a list runs one block per value", min=1,
              max=100_000, many=True),
        Param("iterations", "int", "Times the test is run (min/avg/max over them)", min=1,
              max=100_000, default=1),
        Param("engine", "text", "Storage engine; a list runs one block per engine", many=True),
        Param("create", "sql", "Custom SQL creating the test data (sent as a file)"),
        Param("query", "sql", "Custom SQL to run (sent as a file; ';' separates statements)"),
        Param("create_schema", "text", "Schema to run in (mysqlslap drops it afterwards "
              "unless no_drop)"),
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
_FLAGS = {"auto_generate_sql", "auto_generate_sql_add_autoincrement",
          "auto_generate_sql_guid_primary", "no_drop", "csv"}
_AUTO_ONLY = {name for name in PARAMS if name.startswith("auto_generate_sql_")} | {
    "number_char_cols", "number_int_cols"}


def validate(params: dict) -> dict:
    """Return typed canonical params or raise ValidationError (also cross-field rules)."""
    clean = validate_params(NAME, PARAMS, params, ALIASES)
    if "engine" in clean:
        # "innodb,myisam" and ["innodb", "myisam"] mean the same.
        clean["engine"] = [e for item in _as_list(clean["engine"]) for e in item.split(",")]
    for engine in clean.get("engine", []):
        if not _ENGINE.match(engine):
            raise ValidationError("engine", f"{engine!r} is not allowed: expected engine names "
                                  "such as innodb, myisam (letters, digits, _)")
    custom = "query" in clean or "create" in clean
    if custom and clean.get("auto_generate_sql"):
        raise ValidationError("auto_generate_sql", "cannot be combined with custom create/query SQL")
    if custom:
        for name in sorted(_AUTO_ONLY & set(clean)):
            raise ValidationError(name, "only applies to auto-generated SQL, not custom query/create")
    else:
        clean.setdefault("auto_generate_sql", True)
    if clean.get("auto_generate_sql") is False and not custom:
        raise ValidationError("auto_generate_sql", "false needs custom `query` SQL instead")
    _check_key_load(clean)
    return clean


def _check_key_load(clean: dict) -> None:
    """The key load reads by primary key, so the table must have one."""
    if clean.get("auto_generate_sql_load_type") == "key" and not (
        clean.get("auto_generate_sql_add_autoincrement") or clean.get("auto_generate_sql_guid_primary")
    ):
        raise ValidationError("auto_generate_sql_load_type",
                              "key needs add_autoincrement: true (or auto_generate_sql_guid_primary)")


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
    clean = validate(params)
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
    """The [client] section for endpoint, as bytes for a 0600 upload.

    Values are double-quoted; backslash and double quote are escaped, which is
    how the MySQL/MariaDB option-file reader unquotes them. Control characters
    are refused: a newline would start a new option.
    """
    if endpoint.kind not in ("mysql", "host"):
        raise ValidationError("endpoint", f"mysqlslap needs a mysql endpoint, not {endpoint.kind!r}")
    lines = ["[client]"]
    for key in ("host", "port", "user", "socket"):
        value = getattr(endpoint, key)
        if value is None or value == "":
            continue
        text = str(value)
        if not SAFE_TEXT.match(text):
            raise ValidationError(f"endpoint.{key}", f"{text!r} is not allowed: plain text only")
        lines.append(f"{key}={text}")
    if endpoint.password:
        lines.append(f"password={_quote_option(endpoint.password)}")
    return ("\n".join(lines) + "\n").encode()


def _quote_option(value: str) -> str:
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise ValidationError("endpoint.password", "control characters (newline, tab...) are not allowed")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ---------------------------------------------------------------- parsing

_BLOCK_LINE = re.compile(
    r"^\s*(?:(Running for engine)\s+(\S+)"
    r"|(Average|Minimum|Maximum) number of seconds to run all queries:\s*([0-9.]+)\s*seconds"
    r"|Number of clients running queries:\s*([0-9]+)"
    r"|Average number of queries per client:\s*([0-9]+))"
)
_CSV_LINE = re.compile(
    r"^([A-Za-z0-9_]*),([A-Za-z0-9_]*),([0-9.]+),([0-9.]+),([0-9.]+),([0-9]+),([0-9]+)\s*$"
)
# "mysqlslap: Error when connecting...", "mariadb-slap: Cannot run query ..."
_ERROR_LINE = re.compile(r"^(?:[\w./-]*(?:mysqlslap|mariadb-slap)):\s+(?!\[Warning\])(.+)$")
_STAT = {"Average": "avg_s", "Minimum": "min_s", "Maximum": "max_s"}


def parse(text: str) -> Result:
    """Read mysqlslap/mariadb-slap output into a Result.

    Reads blocks such as (MariaDB 10.11, MySQL 5.6/8.0 alike)::

        Benchmark
        \tRunning for engine innodb
        \tAverage number of seconds to run all queries: 0.035 seconds
        \tMinimum number of seconds to run all queries: 0.028 seconds
        \tMaximum number of seconds to run all queries: 0.048 seconds
        \tNumber of clients running queries: 3
        \tAverage number of queries per client: 100

    and --csv lines ``innodb,mixed,0.055,0.027,0.075,3,100``. Lines such as
    ``mysqlslap: Error when connecting to server: Access denied ...`` go to
    errors. A block without all five figures, or an output that stops inside
    a number, is an error (cut short), its figures kept. Raises ParseError
    when there is neither a number nor an error.
    """
    if not text or text.isspace():
        raise ParseError("empty output")
    blocks: list[dict] = []
    errors: list[str] = []
    facts: dict = {}
    groups = _whole_blocks(text)
    if groups is None:
        for line in text.splitlines():
            _read_line(line, blocks, errors, facts)
        groups = [_group(block) for block in blocks if block["metrics"]]
    else:
        blocks = []  # whole by construction: only the last line is checked
    if not groups and not errors:
        raise ParseError("no mysqlslap Benchmark block, CSV line or error found")
    errors += _cut_short(text, blocks, groups)
    metrics = dict(groups[0]["metrics"]) if len(groups) == 1 else {}
    return Result(metrics=metrics, groups=groups, errors=errors, facts=facts)


_BLOCK_FIGURES = ("avg_s", "min_s", "max_s", "clients", "queries_per_client")
_GAP = r"[ \t]*"
_SECONDS = rf"number of seconds to run all queries:{_GAP}([0-9]+(?:\.[0-9]+)?){_GAP}seconds{_GAP}\n"
_WHOLE_BLOCK = re.compile(
    rf"^{_GAP}Benchmark{_GAP}\n"
    rf"(?:{_GAP}Running for engine{_GAP}([A-Za-z0-9_]+){_GAP}\n)?"
    rf"{_GAP}Average {_SECONDS}{_GAP}Minimum {_SECONDS}{_GAP}Maximum {_SECONDS}"
    rf"{_GAP}Number of clients running queries:{_GAP}([0-9]+){_GAP}\n"
    rf"{_GAP}Average number of queries per client:{_GAP}([0-9]+){_GAP}\n",
    re.MULTILINE,
)


def _whole_blocks(text: str) -> list[dict] | None:
    """Groups for a text made only of whole Benchmark blocks and blank lines,
    else None (then it is read line by line).

    The 50 MB case: one findall; the blocks cover every non-blank line when
    the count of those equals the blocks' lines (a line left over, or a
    blank line of spaces, makes the counts differ: then per line).
    """
    if "," in text or "slap" in text:  # CSV or error lines
        return None
    found = _WHOLE_BLOCK.findall(text)
    if not found:
        return None
    lines = text.count("\n") + (not text.endswith("\n"))
    blank = text.count("\n\n") + text.startswith("\n")
    engines = sum(1 for row in found if row[0])
    if lines - blank != 6 * len(found) + engines:
        return None
    # Columns converted by map() in C; one comprehension builds the groups.
    engines, avgs, lows, highs, clients, per_client = zip(*found)
    rows = zip(engines, map(float, avgs), map(float, lows), map(float, highs), map(int, clients),
               map(int, per_client))
    return [{"labels": {"engine": e, "concurrency": c} if e else {"concurrency": c},
             "metrics": {"avg_s": avg, "min_s": low, "max_s": high, "clients": c,
                         "queries_per_client": q, "qps": round(c * q / avg, 3)}
             if avg > 0 else {"avg_s": avg, "min_s": low, "max_s": high, "clients": c,
                              "queries_per_client": q}}
            for e, avg, low, high, c, q in rows]


def _cut_short(text: str, blocks: list[dict], groups: list[dict]) -> list[str]:
    """Errors for blocks missing a figure and for a last number that may be cut."""
    errors = []
    for number, block in enumerate(blocks, 1):
        missing = [name for name in _BLOCK_FIGURES if name not in block["metrics"]]
        if missing:
            errors.append(f"Benchmark block {number} is cut short: no {', '.join(missing)}")
    # mysqlslap ends every output with a newline: a last line without one
    # (part of a CSV line, "Bench", a number) was cut.
    tail = text[text.rfind("\n") + 1:].strip()
    if tail and (blocks or groups):
        errors.append(ends_mid_number(text) or f"output ends mid-line (cut short?): {tail[-80:]}")
    return errors


def expected_groups(params: dict) -> int:
    """Result blocks a run with these params prints: one per engine per
    concurrency (a cut between two whole blocks leaves no other trace)."""
    clean = validate(params)
    return len(clean.get("engine") or [None]) * len(_as_list(clean.get("concurrency") or [None]))


def _read_line(line: str, blocks: list[dict], errors: list[str], facts: dict) -> None:
    """Feed one output line into blocks/errors/facts."""
    stripped = line.strip()
    if stripped == "Benchmark":
        blocks.append({"labels": {}, "metrics": {}})
        return
    # Cheap substring checks first: a CSV line has commas, an error line
    # names the program; most lines are neither.
    csv = _CSV_LINE.match(stripped) if "," in stripped else None
    if csv:
        blocks.append(_csv_block(csv))
        facts.setdefault("load_type", csv.group(2))
        return
    error = _ERROR_LINE.match(stripped) if "slap" in stripped else None
    if error:
        errors.append(error.group(1))
        return
    match = _BLOCK_LINE.match(line)
    if match and blocks:
        _fill(blocks[-1], match)


def _fill(block: dict, match: re.Match) -> None:
    engine, stat, seconds, clients, per_client = match.group(2, 3, 4, 5, 6)
    if engine:
        block["labels"]["engine"] = engine
    elif stat:
        block["metrics"][_STAT[stat]] = float(seconds)
    elif clients:
        block["metrics"]["clients"] = int(clients)
    elif per_client:
        block["metrics"]["queries_per_client"] = int(per_client)


def _csv_block(match: re.Match) -> dict:
    engine, _load, avg, low, high, clients, per_client = match.groups()
    labels = {"engine": engine} if engine else {}
    metrics = {"avg_s": float(avg), "min_s": float(low), "max_s": float(high),
               "clients": int(clients), "queries_per_client": int(per_client)}
    return {"labels": labels, "metrics": metrics}


def _group(block: dict) -> dict:
    """Add concurrency label and qps (only when every input number is there)."""
    metrics = dict(block["metrics"])
    labels = dict(block["labels"])
    if "clients" in metrics:
        labels["concurrency"] = metrics["clients"]
    if {"clients", "queries_per_client", "avg_s"} <= metrics.keys() and metrics["avg_s"] > 0:
        metrics["qps"] = round(metrics["clients"] * metrics["queries_per_client"] / metrics["avg_s"], 3)
    return {"labels": labels, "metrics": metrics}


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
DEFAULT_PORTS = {"mysql": 3306}  # the port of a target of that kind when the plan does not say
MEASURED = True  # a plan may choose it as its measured tool
DURATION_PARAM = None  # runs a number of queries, not for a time
SERIES: tuple[str, ...] = ()  # no per-second output
METRICS = {
    "avg_s": m.latency("Average time to run all queries", "s"),
    "min_s": m.latency("Minimum time to run all queries", "s"),
    "max_s": m.latency("Maximum time to run all queries", "s"),
    "qps": m.throughput("Queries per second", "q/s"),
    "clients": m.count("Concurrent clients"),
    "queries_per_client": m.count("Queries per client"),
}


def default_view(axes: list[str]) -> dict:
    """S1: rows target, columns load_type, average seconds; S5: q/s per write_number."""
    if "auto_generate_sql_write_number" in axes:  # S5: spread of repeats visible
        return m.view(["auto_generate_sql_write_number"], ["repeat"], "qps")
    others = [a for a in axes if a != "target"]
    col = next((a for a in ("load_type", "concurrency", *others) if a in axes), None)
    row = "target" if "target" in axes or not others else (others[1:] or ["repeat"])[0]
    return m.view([row], [col] if col and col != row else ["repeat"], "avg_s")
