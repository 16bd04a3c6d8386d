"""sysbench 1.x and legacy 0.4: build commands; parsing lives in sysbench_parse.

The DB password never goes into argv. The mysql driver's client library
reads MYSQL_PWD when no --mysql-password is given (checked with Debian's
sysbench 1.0.20 against MariaDB); the pgsql driver's libpq reads a pgpass
file uploaded as @WORKDIR@/pgpass (0600) and named by PGPASSFILE. The
password is still listed in Command.secrets, so an error echoing it is masked.

Parameters (names are long options with - -> _, see PARAMS in sysbench_params for all):
- `test`: a built-in (oltp_read_write, oltp_read_only, ..., cpu, memory,
  fileio) or, with `sysbench_version: "0.4"`, oltp/cpu/memory/fileio/threads/
  mutex. A custom Lua script goes in `script` (uploaded as @WORKDIR@/custom.lua,
  mode 0600); `test` may then be omitted or "custom".
- `sysbench_version`: "1" (default; "1.0"/"1.1" too) or "0.4" (legacy syntax:
  --test=oltp, --num-threads, --max-time, --max-requests, --oltp-table-size,
  --oltp-test-mode, --oltp-read-only, --mysql-table-engine, phase last).
  1.x names are translated for 0.4 (threads -> --num-threads, time ->
  --max-time, events -> --max-requests, table_size -> --oltp-table-size, ...);
  the 0.4 names are accepted as aliases in both syntaxes.
- `read_only` (convenience for scenario S4): in 1.x it picks the test:
  true -> oltp_read_only, false -> oltp_read_write (test must be one of those
  two or absent; a contradiction such as test oltp_read_only + read_only false
  is refused). In 0.4 it becomes --oltp-read-only=on|off.
- The driver comes from Endpoint.kind: mysql -> --db-driver=mysql,
  postgres -> --db-driver=pgsql. cpu/memory/fileio need no database.
- `--forced-shutdown` is ALWAYS set: a query stuck on a lock, or a server that
  stops answering, would otherwise keep sysbench (and the cell, and the lock
  on its target) running forever. After `time` plus the grace sysbench stops
  and still prints the statistics gathered so far. Grace: 5 % of `time`,
  at least 10 s, so in-flight transactions of short runs can finish;
  override with `forced_shutdown` (seconds).
"""

from __future__ import annotations

import math
import re

from runners import engines
from runners import metrics as m
from runners.command import WORKDIR, Command, Endpoint, Upload, option_value
from runners.errors import ParseError, ValidationError
from runners.limits import Use
from runners.params import SAFE_TEXT, checked
from runners.params import validate as validate_params
from runners.tools.sysbench_params import (
    ALIASES,
    HOST_TESTS,
    LEGACY_OPTIONS,
    LEGACY_TESTS,
    OLTP_TESTS,
    PARAMS,
)
from runners.tools.sysbench_parse import parse  # noqa: F401  (the interface's parse)

NAME = "sysbench"
BINARY = "sysbench"
PACKAGE = "sysbench"
PHASES = ("prepare", "run", "cleanup")
SCRIPT_NAME = "custom.lua"
PGPASS_NAME = "pgpass"
_NOT_OPTIONS = {"test", "script", "sysbench_version", "read_only"}
_LUA_PATH = re.compile(r"^/[A-Za-z0-9_./-]+\.lua$")
_ERROR_CODE = re.compile(r"^(?:[0-9]{1,5}|all)$")
_ENGINE = re.compile(r"^[A-Za-z0-9_]+$")


def validate(params: dict) -> dict:
    """Return typed canonical params or raise ValidationError (cross-field rules too)."""
    clean = validate_params(NAME, PARAMS, params, ALIASES)
    clean.setdefault("sysbench_version", "1")
    legacy = clean["sysbench_version"] == "0.4"
    _check_values(clean)
    if legacy:
        _check_legacy(clean)
    else:
        _check_modern(clean)
    return clean


def _check_values(clean: dict) -> None:
    codes = clean.get("mysql_ignore_errors")
    if codes is not None:
        codes = [
            c for item in (codes if isinstance(codes, list) else [codes]) for c in item.split(",")
        ]
        if not all(_ERROR_CODE.fullmatch(c) for c in codes):
            raise ValidationError(
                "mysql_ignore_errors",
                "expected MySQL error codes such as 1213, 1205, 2013 (a list), or all",
            )
        clean["mysql_ignore_errors"] = codes
    engine = clean.get("mysql_storage_engine")
    if engine is not None and not _ENGINE.fullmatch(engine):
        raise ValidationError(
            "mysql_storage_engine",
            f"{engine!r} is not allowed: expected an engine name such as innodb",
        )


def _check_legacy(clean: dict) -> None:
    test = clean.get("test")
    if test not in LEGACY_TESTS:
        raise ValidationError(
            "test",
            f"{test!r} is not allowed with sysbench_version 0.4: "
            f"expected one of {', '.join(LEGACY_TESTS)}",
        )
    for name in clean:
        if name not in LEGACY_OPTIONS and name not in _NOT_OPTIONS:
            raise ValidationError(
                name,
                "does not exist in sysbench 0.4; known there: " + ", ".join(sorted(LEGACY_OPTIONS)),
            )
    if "script" in clean:
        raise ValidationError("script", "custom Lua scripts need sysbench 1.x")


def _check_modern(clean: dict) -> None:
    if "oltp_test_mode" in clean:
        raise ValidationError("oltp_test_mode", "exists only with sysbench_version 0.4")
    if "script" in clean:
        if clean.get("test", "custom") != "custom":
            raise ValidationError("test", "must be omitted (or 'custom') when `script` is given")
        clean["test"] = "custom"
    if "read_only" in clean:
        wanted = "oltp_read_only" if clean["read_only"] else "oltp_read_write"
        if clean.get("test", wanted) not in ("oltp_read_write", wanted):
            raise ValidationError(
                "read_only",
                f"contradicts test {clean['test']!r}; read_only applies "
                "to oltp_read_write / oltp_read_only",
            )
        clean["test"] = wanted
    test = clean.get("test")
    if test is None:
        raise ValidationError(
            "test",
            "required: one of "
            + ", ".join(OLTP_TESTS + HOST_TESTS)
            + ", a Lua script path, or `script`",
        )
    if test != "custom" and test not in OLTP_TESTS + HOST_TESTS and not _LUA_PATH.fullmatch(test):
        raise ValidationError(
            "test",
            f"{test!r} is not allowed: expected one of "
            + ", ".join(OLTP_TESTS + HOST_TESTS)
            + " or an absolute .lua path",
        )


def check_scope(clean: dict, scope) -> None:
    """Refuse Lua scripts (inline `script` or a `test` path) where scope forbids code."""
    if clean.get("test") == "custom":
        scope.refuse("script", "a sysbench Lua script")
    elif clean.get("test") not in OLTP_TESTS + HOST_TESTS + LEGACY_TESTS:
        scope.refuse(
            "test",
            f"a sysbench Lua script by path ({clean.get('test')!r}); only the built-in tests are",
        )


# Built-in tests that only run: nothing to prepare or clean up.
RUN_ONLY_TESTS = ("cpu", "memory", "threads", "mutex")


def phases_for(clean: dict) -> tuple[str, ...]:
    """The phases of clean's test: run alone for cpu, memory, threads and
    mutex (a cell skips prepare and cleanup for them), all three otherwise."""
    return ("run",) if clean.get("test") in RUN_ONLY_TESTS else PHASES


def build(params: dict, endpoint: Endpoint, phase: str = "run") -> Command:
    """Validate params and return the sysbench Command for endpoint and phase.

    The DB password is in MYSQL_PWD or a pgpass file (see the module
    docstring), listed in Command.secrets. A custom script is uploaded as
    @WORKDIR@/custom.lua.
    """
    if phase not in PHASES:
        raise ValidationError("phase", f"{phase!r} is not allowed: one of {', '.join(PHASES)}")
    clean = checked(params, validate)
    legacy = clean["sysbench_version"] == "0.4"
    test = clean["test"]
    if phase not in phases_for(clean):
        raise ValidationError("phase", f"{test} has no {phase} phase (only run)")
    argv = [BINARY]
    db_options, secrets = _db_options(endpoint, test)
    argv += db_options
    env, uploads = _password(endpoint) if secrets else ({}, [])
    options = _options(clean, legacy)
    argv += options
    argv.append(f"--forced-shutdown={_grace(clean)}")
    if test == "custom":
        uploads.append(Upload(SCRIPT_NAME, clean["script"].encode(), 0o600))
        test = f"{WORKDIR}/{SCRIPT_NAME}"
    argv += [f"--test={test}", phase] if legacy else [test, phase]
    return Command(argv=argv, env=env, uploads=uploads, secrets=secrets, tool=NAME, package=PACKAGE)


def _password(endpoint: Endpoint) -> tuple[dict[str, str], list[Upload]]:
    """The environment and uploads that carry the password (never argv)."""
    if endpoint.kind == "mysql":
        return {"MYSQL_PWD": option_value(endpoint.password, "password")}, []
    upload = Upload(PGPASS_NAME, engines.get(endpoint.kind).pgpass_line(endpoint), 0o600)
    return {"PGPASSFILE": f"{WORKDIR}/{PGPASS_NAME}"}, [upload]


def _options(clean: dict, legacy: bool) -> list[str]:
    """The test options in a stable order (the PARAMS order)."""
    out = []
    for name in PARAMS:
        if name not in clean or name in _NOT_OPTIONS or name == "forced_shutdown":
            continue
        out.append(_option(name, clean[name], legacy))
    if legacy and "read_only" in clean:
        out.append(f"--oltp-read-only={'on' if clean['read_only'] else 'off'}")
    return out


def _option(name: str, value, legacy: bool) -> str:
    option = LEGACY_OPTIONS[name] if legacy else name.replace("_", "-")
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif isinstance(value, list):
        text = ",".join(str(v) for v in value)
    elif isinstance(value, float):
        text = f"{value:g}"
    else:
        text = str(value)
    return f"--{option}={text}"


def _grace(clean: dict) -> int:
    """Seconds after --time before a forced shutdown (see the module docstring)."""
    if "forced_shutdown" in clean:
        return clean["forced_shutdown"]
    return max(10, math.ceil(clean.get("time", 0) * 0.05))


def _db_options(endpoint: Endpoint, test: str) -> tuple[list[str], list[str]]:
    """Driver options for endpoint (none for host tests) and the secrets they carry."""
    if test in HOST_TESTS:
        # cpu/memory/fileio never connect: no driver options, no password.
        return [], []
    if endpoint.kind not in ("mysql", "postgres"):
        raise ValidationError(
            "endpoint", f"test {test} needs a mysql or postgres endpoint, not {endpoint.kind!r}"
        )
    prefix = "mysql" if endpoint.kind == "mysql" else "pgsql"
    argv = [f"--db-driver={prefix}"]
    for key in ("host", "port", "user", "database", "socket"):
        value = getattr(endpoint, key)
        if value is None or value == "":
            continue
        if key == "socket" and prefix == "pgsql":
            raise ValidationError("endpoint.socket", "the pgsql driver connects by host/port only")
        text = str(value)
        if not SAFE_TEXT.fullmatch(text) or text.startswith("-"):
            raise ValidationError(f"endpoint.{key}", f"{text!r} is not allowed: plain text only")
        argv.append(f"--{prefix}-{'db' if key == 'database' else key}={text}")
    # The password travels in the environment or a file (see _password).
    return argv, [endpoint.password] if endpoint.password else []


def version_command() -> list[str]:
    return [BINARY, "--version"]


def parse_version(text: str) -> str:
    """'sysbench 1.0.20' -> '1.0.20'; 'sysbench 0.4.12:  multi-...' -> '0.4.12'."""
    match = re.search(r"sysbench\s+([0-9][0-9A-Za-z.\-]*?)(?::|\s|$)", text)
    if not match:
        raise ParseError("no sysbench version found")
    return match.group(1)


# ================================================================ registry
# Everything the rest of Benchboard knows about this tool (read through
# runners/tools/__init__.py; nothing outside this block lists it): target
# kinds, duration, metric catalog, default results view, per-second series.
# Its parameters are PARAMS (sysbench_params); its version command and pattern are
# version_command() and parse_version() above.
TARGET_KIND = "mysql"  # the kind of a target whose plan does not say
TARGET_KINDS = ("mysql", "postgres", "host")  # OLTP on either database; cpu/fileio on a host
MEASURED = True  # a plan may choose it as its measured tool
CONNECTIONS_PARAM = "threads"  # connections one cell opens (the pre-run check counts them)
# Params a plan may also set at its top level, for every cell (the scenarios'
# plans name the command syntax once, beside the tool).
PLAN_KEYS = ("sysbench_version",)
# sysbench's defaults when the plan does not set them.
DEFAULT_TABLES, DEFAULT_TABLE_SIZE = 1, 10_000
# The tests whose data is sbtest tables ("oltp": 0.4's one table).
TABLE_TESTS = (*OLTP_TESTS, "oltp")


def prepared_tables(params: dict) -> dict[str, int] | None:
    """{table: rows} a prepare with these params makes (runners.prepared counts
    them); None when the test's data is not tables (fileio, cpu...)."""
    if params.get("test", "") not in TABLE_TESTS:
        return None
    size = params.get("table_size", DEFAULT_TABLE_SIZE)
    if params.get("sysbench_version") == "0.4":
        return {"sbtest": size}
    return {f"sbtest{i}": size for i in range(1, params.get("tables", DEFAULT_TABLES) + 1)}


DURATION_PARAM = "time"
# What counts against the worker's limits when this tool runs there (runners/limits.py).
LIMITS = (
    Use("threads", "processes"),
    Use("memory_block_size", "memory", ("threads",)),  # a block per thread
    Use("file_total_size", "disk"),
    Use("time", "seconds"),
    Use("warmup_time", "seconds"),
)
SERIES = (
    "tps",
    "qps",
    "reads",
    "writes",
    "other",
    "latency_p95_ms",
    "latency_p99_ms",
    "err_s",
    "reconn_s",
)
# Averages of several clients are weighted by this count (runners.combine).
LATENCY_WEIGHT = "events"
ELAPSED_METRIC = "total_time_s"  # the seconds it measured (runners.tools.measured_seconds)
# What answers "how fast" for this tool, best first: the dashboard, the
# trend and the timeline open on the first a run has (runners.tools.main_metric):
# OLTP scripts report transactions per second; cpu, threads and mutex
# events per second; memory and fileio their rates.
MAIN_METRICS = (
    "tps",
    "events_per_s",
    "eps",
    "memory_mib_per_s",
    "fileio_reads_per_s",
    "fileio_writes_per_s",
)
METRICS = {
    "tps": m.throughput("Transactions per second", "tps"),
    "qps": m.throughput("Queries per second", "qps"),
    "transactions": m.count("Transactions"),
    "queries": m.count("Queries"),
    "reads": m.count("Read queries"),
    "writes": m.count("Write queries"),
    "other": m.count("Other queries"),
    "errors": m.count("Ignored errors", direction=m.LOWER),
    "err_s": m.Metric("Errors per second", "err/s", m.LOWER, "throughput"),
    "reconnects": m.count("Reconnects", direction=m.LOWER),
    "reconn_s": m.Metric("Reconnects per second", "reconn/s", m.LOWER, "throughput"),
    "deadlocks": m.count("Deadlocks", direction=m.LOWER),
    "latency_min_ms": m.latency("Minimum latency"),
    "latency_avg_ms": m.latency("Average latency"),
    "latency_max_ms": m.latency("Maximum latency"),
    "latency_p95_ms": m.latency("95th percentile latency"),
    "latency_p99_ms": m.latency("99th percentile latency"),
    "total_time_s": m.duration("Total time"),
    "events": m.count("Events"),
    "events_per_s": m.throughput("Events per second", "events/s"),
    "memory_ops": m.count("Memory operations"),
    "memory_ops_per_s": m.throughput("Memory operations per second", "ops/s"),
    "memory_mib": m.count("Memory transferred", "MiB"),
    "memory_mib_per_s": m.throughput("Memory transfer rate", "MiB/s"),
    "fileio_reads_per_s": m.throughput("File reads per second", "reads/s"),
    "fileio_writes_per_s": m.throughput("File writes per second", "writes/s"),
    "fileio_fsyncs_per_s": m.throughput("File fsyncs per second", "fsyncs/s"),
    "fileio_read_mib_per_s": m.throughput("File read rate", "MiB/s"),
    "fileio_written_mib_per_s": m.throughput("File write rate", "MiB/s"),
    "threads": m.parameter("Threads running"),  # the --threads it ran with
    "thread_events": m.count("Events per thread"),
    "thread_time_s": m.duration("Execution time per thread"),
    # Interval columns of the non-OLTP tests (cpu/threads/mutex "eps:",
    # fileio "reads: 28.78 MiB/s ... fsyncs: 0.00/s").
    "eps": m.throughput("Events per second", "events/s"),
    "fsyncs": m.throughput("File fsyncs per second", "fsyncs/s"),
    "reads_mib_s": m.throughput("File read rate", "MiB/s"),
    "writes_mib_s": m.throughput("File write rate", "MiB/s"),
}
# --percentile=N names the latency percentile sysbench prints ("latency_p99_9_ms").
for _pct in ("50", "75", "80", "90", "97", "98", "99_5", "99_9", "99_99", "100"):
    METRICS[f"latency_p{_pct}_ms"] = m.latency(f"{_pct.replace('_', '.')}th percentile latency")


def default_view(axes: list[str]) -> dict:
    """S2: stress cores × TPS/QPS/latency; S4: TPS vs threads, one line per target."""
    stress = next((a for a in ("stress.cpu", "stress.load") if a in axes), None)
    if stress:  # S2
        return m.view([stress, "repeat"], ["metric"], ["tps", "qps", "latency_avg_ms"])
    if "threads" in axes:  # S4
        rows = (["read_only"] if "read_only" in axes else []) + ["threads"]
        return m.view(rows, ["target"], "tps", chart_x="threads")
    others = [a for a in axes if a != "target"]
    return m.view([others[0] if others else "target"], ["repeat"], "tps")


# Tests whose prepared data (tables on the server) several clients may share:
# the OLTP scripts read and write rows concurrently by design, and the CPU,
# memory, threads and mutex tests have no data at all.
_SHARED_DATA_TESTS = ("cpu", "memory", "threads", "mutex")


def client_params(clean: dict, index: int) -> dict:
    """Client `index`'s params when several clients run one cell: the same.

    The OLTP tables are prepared once, from client 1, and shared (that is
    what a server with many application hosts sees). fileio prepares files
    on the client's own disk, which client 1's prepare would not make
    elsewhere: refused, as is a custom script (its data is unknown).
    """
    test = str(clean.get("test", "custom"))
    if not (test.startswith("oltp") or test in _SHARED_DATA_TESTS):
        raise ValidationError(
            "test", f"{test!r} with several clients: only oltp_*, cpu, memory, threads, mutex"
        )
    return clean
