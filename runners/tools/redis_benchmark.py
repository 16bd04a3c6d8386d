"""redis-benchmark: Redis request throughput and latency, one figure set per test.

A password is refused. redis-benchmark 7.0 takes one only on its command
line (`-a`, or inside `-u redis://user:pw@host`), where every user of the
client host could read it, and reads neither REDISCLI_AUTH nor a file
(checked against a real redis-server with requirepass: "NOAUTH
Authentication required."). So a Redis target with a credential or
password_env is refused when the plan is validated (check_target), and
build() refuses an endpoint with a password. Should a server still answer
NOAUTH, the parser reports it as the cell's error: no numbers are ever
measured against the wrong thing.
"""

from __future__ import annotations

import csv
import re

from runners import engines
from runners import metrics as m
from runners.command import Command, Endpoint
from runners.errors import ParseError, ValidationError
from runners.limits import Use
from runners.params import SAFE_TEXT, Param, checked
from runners.params import validate as validate_params
from runners.results import Result, cap_warnings, line_warning

NAME = "redis_benchmark"
BINARY = "redis-benchmark"
PACKAGE = "redis-tools"
PHASES = ("run",)
TESTS = (
    "ping",
    "ping_inline",
    "ping_mbulk",
    "set",
    "get",
    "incr",
    "lpush",
    "rpush",
    "lpop",
    "rpop",
    "sadd",
    "hset",
    "spop",
    "zadd",
    "zpopmin",
    "lrange",
    "lrange_100",
    "lrange_300",
    "lrange_500",
    "lrange_600",
    "mset",
    "xadd",
)
PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("clients", "int", "parallel connections", option="-c", min=1, max=100_000),
        Param("requests", "int", "total number of requests", option="-n", min=1, max=1 << 40),
        Param("data_size", "int", "SET/GET value size in bytes", option="-d", min=1, max=512 << 20),
        Param("pipeline", "int", "requests per pipeline", option="-P", min=1, max=100_000),
        Param(
            "tests",
            "choice",
            "tests to run (comma separated list)",
            option="-t",
            choices=TESTS,
            many=True,
        ),
        Param(
            "threads",
            "int",
            "client threads (multi-thread mode)",
            option="--threads",
            min=1,
            max=500,
        ),
        Param("keyspace", "int", "random keys in 0..keyspace-1", option="-r", min=1, max=1 << 40),
        Param("csv", "bool", "CSV output", option="--csv"),
        Param("quiet", "bool", "one line per test (requests/s and p50 only)", option="-q"),
    )
}
ALIASES = {
    "c": "clients",
    "n": "requests",
    "size": "data_size",
    "P": "pipeline",
    "t": "tests",
    "keyspacelen": "keyspace",
}


def validate(params: dict) -> dict:
    """Return typed params or raise ValidationError."""
    clean = validate_params(NAME, PARAMS, params, ALIASES)
    if isinstance(clean.get("tests"), str):
        clean["tests"] = [clean["tests"]]
    return clean


def build(params: dict, endpoint: Endpoint | None = None, phase: str = "run") -> Command:
    """Return the redis-benchmark Command against endpoint's host/port (or socket).

    argv: redis-benchmark -h HOST -p PORT [options]; an endpoint with a
    password is refused (see the module docstring).
    """
    if phase not in PHASES:
        raise ValidationError("phase", f"redis-benchmark has only the phases {', '.join(PHASES)}")
    clean = checked(params, validate)
    endpoint = endpoint or Endpoint(kind="redis")
    argv = [BINARY] + _endpoint_options(endpoint)
    for name, spec in PARAMS.items():
        value = clean.get(name)
        if spec.kind == "bool":
            argv += [spec.option] if value else []
        elif value is not None:
            argv += [spec.option, ",".join(value) if spec.many else str(value)]
    if endpoint.password:
        raise ValidationError("password", NO_PASSWORD)
    return Command(argv=argv, tool=NAME, package=PACKAGE)


NO_PASSWORD = (
    "a Redis target cannot have a password: redis-benchmark 7.0 takes it only on its "
    "command line (-a), where every user of the client host could read it. Benchmark a "
    "server (or an ACL user) without a password, reachable only from the client host"
)


def check_target(target, path: str) -> None:
    """Refuse, when the plan is read, a Redis target that names a password."""
    for key in ("credential", "password_env"):
        if target.kind == "redis" and getattr(target, key):
            raise ValidationError(f"{path}.{key}", NO_PASSWORD)


def _endpoint_options(endpoint: Endpoint) -> list[str]:
    if endpoint.socket:
        if not SOCKET.fullmatch(endpoint.socket):
            raise ValidationError("socket", "an absolute path of plain characters")
        return ["-s", endpoint.socket]
    port = PORT.convert(endpoint.port or engines.get(TARGET_KIND).DEFAULT_PORT)
    return ["-h", _checked("host", endpoint.host or "127.0.0.1"), "-p", str(port)]


PORT = Param("port", "int", min=1, max=65535)
SOCKET = re.compile(r"/[A-Za-z0-9_./+@-]*")


def _checked(field: str, value: str) -> str:
    """value if it is plain text (no spaces, shell characters, leading '-'), else ValidationError."""
    if not isinstance(value, str) or not SAFE_TEXT.fullmatch(value) or value.startswith("-"):
        raise ValidationError(field, "plain text without spaces or shell characters")
    return value


def version_command() -> list[str]:
    return [BINARY, "--version"]


def parse_version(text: str) -> str:
    """'redis-benchmark 7.0.15' -> '7.0.15'."""
    match = re.search(r"redis-benchmark (?:v=)?(\d+\.\d+[\w.\-]*)", text)
    if not match:
        raise ParseError("no redis-benchmark version found")
    return match.group(1)


# ---------------------------------------------------------------- parsing

NUM = r"([0-9]+(?:\.[0-9]+)?)"
SECTION = re.compile(r"^====== (.+) ======\s*$")
THROUGHPUT = re.compile(rf"^\s*(?:throughput summary: )?{NUM} requests per second\s*$")
LATENCY_ROW = re.compile(rf"^\s*{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s*$")
LATENCY_NAMES = (
    "latency_avg_ms",
    "latency_min_ms",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_max_ms",
)
QUIET = re.compile(rf"^\s*(.+?): {NUM} requests per second(?:, p50={NUM} msec)?\s*$")
PROGRESS = re.compile(r"^\s*.+?: rps=")
CSV_FIELDS = {
    "rps": "rps",
    "avg_latency_ms": "latency_avg_ms",
    "min_latency_ms": "latency_min_ms",
    "p50_latency_ms": "latency_p50_ms",
    "p95_latency_ms": "latency_p95_ms",
    "p99_latency_ms": "latency_p99_ms",
    "max_latency_ms": "latency_max_ms",
}
ERROR = re.compile(
    r"^(?:Could not connect|NOAUTH|ERR |WRONGPASS|Error|Node .* replied with error|"
    r"Writing to socket|Reading from socket|Invalid option|Unrecognized option)"
)
# How an ERROR line starts (a str.startswith check before the pattern).
ERROR_STARTS = (
    "Could not connect", "NOAUTH", "ERR ", "WRONGPASS", "Error", "Node ",
    "Writing to socket", "Reading from socket", "Invalid option", "Unrecognized option",
)  # fmt: skip


def parse(text: str) -> Result:
    """Read redis-benchmark output: plain (7.x), quiet (-q) or CSV (--csv).

    Reads e.g. (7.0, plain; progress lines end in \\r and are skipped)::

        ====== SET ======
          throughput summary: 47619.05 requests per second
          latency summary (msec):
                  avg       min       p50       p95       p99       max
                0.119     0.024     0.087     0.239     0.311     0.823

    or ``SET: 74074.07 requests per second, p50=0.071 msec`` (-q), or
    ``"SET","76923.08","0.078","0.024","0.071","0.119","0.231","0.343"``
    (--csv, after its header line). Older versions' ``NNN requests per
    second`` after a section give requests/s only. One group per test
    (labels {"test": "SET"}); with one test, metrics equal its group's, with
    several they are prefixed with the test ("get_rps"), never summed: the
    tests run one after another.
    A test whose summary is cut off is an error, not a partial figure.
    """
    whole, _, tail = text.rpartition("\n")
    # Progress lines end in "\r": it separates lines as "\n" does.
    lines = [line for line in whole.replace("\r", "\n").split("\n") if line and not line.isspace()]
    stripped = list(map(str.strip, lines))
    starts = "\n" + "\n".join(stripped)  # each line's start follows a "\n"
    errors = [line for line in stripped if line.startswith(ERROR_STARTS) and ERROR.match(line)]
    if any(e.startswith("NOAUTH") for e in errors):
        errors.append(
            "the server wants a password: redis-benchmark 7.0 reads it only "
            "from argv (-a), which Benchboard never uses"
        )
    if tail.strip():  # every complete output ends with a newline
        errors.append(f"output ends mid-line (cut off?): {tail.strip()[-80:]}")
    warnings: list[str] = []
    facts: dict = {}
    if '\n"' in starts:
        groups = _csv_groups(lines, errors, warnings)
    elif any(line.startswith("====== ") and SECTION.match(line) for line in lines):
        groups = _plain_groups(lines, errors, warnings, facts)
    else:
        groups = _quiet_groups(lines, errors, warnings)
    if not groups and not errors:
        raise ParseError("no redis-benchmark results found (output empty or cut off)")
    return Result(
        metrics=_combine(groups),
        groups=groups,
        errors=errors,
        facts=facts,
        warnings=cap_warnings(warnings),
    )


def _known(line: str) -> bool:
    """A line that carries no figure the parser keeps: an error (in errors),
    a progress line ("SET: rps=..."), a setting of the run."""
    if SETTING.match(line) or ("rps=" in line and PROGRESS.match(line)):
        return True
    stripped = line.strip()
    return bool(stripped.startswith(ERROR_STARTS) and ERROR.match(stripped))


# Lines of a plain section that carry no figure kept: the run's settings,
# the headers of its blocks, and the latency distribution ("50.000% <= 0.087
# milliseconds (cumulative count 71483)"; the summary's percentiles are kept).
SETTING = re.compile(
    r"^\s*(?:\d+ parallel clients|\d+ bytes payload|keep alive: \d+|host configuration .*"
    r"|multi-thread: \w+|threads: \d+|Latency by percentile distribution:"
    r"|Cumulative distribution of latencies:|Summary:|latency summary \(msec\):"
    r"|avg\s+min\s+p50\s+p95\s+p99\s+max|[0-9.]+% <= [0-9.]+ milliseconds.*"
    r"|\d+ requests completed in [0-9.]+ seconds|cluster mode: .*|WARNING: .*)\s*$"
)
COMPLETED = re.compile(rf"^\s*(\d+) requests completed in {NUM} seconds\s*$")


def _group(test: str, metrics: dict) -> dict:
    return {"labels": {"test": test}, "metrics": metrics}


def _csv_groups(lines: list[str], errors: list[str], warnings: list[str]) -> list[dict]:
    for line in lines:
        if not line.lstrip().startswith('"') and not _known(line):
            warnings.append(line_warning("redis-benchmark CSV output", line))
    rows = list(csv.reader(line.strip() for line in lines if line.lstrip().startswith('"')))
    header = rows[0] if rows and rows[0][:1] == ["test"] else ["test", "rps"]
    groups = []
    for row in rows[1:] if header is rows[0] else rows:
        if len(row) != len(header) or not all(re.fullmatch(NUM, v) for v in row[1:]):
            errors.append(f"incomplete CSV row (output cut off?): {','.join(row)}")
            continue
        groups.append(
            _group(row[0], {CSV_FIELDS.get(h, h): float(v) for h, v in zip(header[1:], row[1:])})
        )
    return groups


def _plain_groups(
    lines: list[str], errors: list[str], warnings: list[str], facts: dict
) -> list[dict]:
    groups, current = [], None
    for line in lines:
        # Cheap checks before each pattern: most lines are the percentile
        # distribution ("50.000% <= 0.087 milliseconds ..."), none of these.
        if line.startswith("====== ") and (match := SECTION.match(line)):
            _close(current, groups, errors)
            current = _group(match.group(1), {})
        elif current is None or ("%" in line and "<=" in line):
            continue
        elif "requests per second" in line and (match := THROUGHPUT.match(line)):
            current["metrics"]["rps"] = float(match.group(1))
            # 7.x prints a latency table after its "throughput summary"
            current["needs_latency"] = "summary" in line
        elif match := LATENCY_ROW.match(line):
            current["metrics"].update(zip(LATENCY_NAMES, map(float, match.groups())))
        elif "completed" in line and (match := COMPLETED.match(line)):
            completed = {"requests": int(match.group(1)), "seconds": float(match.group(2))}
            facts.setdefault("completed", {})[current["labels"]["test"]] = completed
        elif not _known(line):
            warnings.append(line_warning("redis-benchmark section", line))
    _close(current, groups, errors)
    return groups


def _close(group: dict | None, groups: list[dict], errors: list[str]) -> None:
    """Keep a finished section; one with no requests/s, or with a 7.x
    throughput summary but no latency table after it, was cut off."""
    if group is None:
        return
    needs_latency = group.pop("needs_latency", False)
    if "rps" not in group["metrics"] or (
        needs_latency and "latency_max_ms" not in group["metrics"]
    ):
        errors.append(f"{group['labels']['test']}: output ends before its summary (cut off?)")
        return
    groups.append(group)


def _quiet_groups(lines: list[str], errors: list[str], warnings: list[str]) -> list[dict]:
    groups = []
    for line in lines:
        if match := QUIET.match(line):
            metrics = {"rps": float(match.group(2))}
            if match.group(3) is not None:
                metrics["latency_p50_ms"] = float(match.group(3))
            groups.append(_group(match.group(1).strip(), metrics))
        elif groups and not _known(line):  # after the first result: the results
            warnings.append(line_warning("redis-benchmark quiet output", line))
    last = lines[-1] if lines else ""
    if groups and PROGRESS.match(last):
        errors.append(f"output ends in the middle of a test: {last.strip()}")
    return groups


def _combine(groups: list[dict]) -> dict[str, float]:
    if len(groups) == 1:
        return dict(groups[0]["metrics"])
    metrics: dict[str, float] = {}
    for group in groups:
        prefix = re.sub(r"[^a-z0-9]+", "_", group["labels"]["test"].lower()).strip("_")
        for name, value in group["metrics"].items():
            metrics[f"{prefix}_{name}"] = value
    return metrics


# ================================================================ registry
# Everything the rest of Benchboard knows about this tool (read through
# runners/tools/__init__.py; nothing outside this block lists it): target
# kinds, duration, metric catalog, default results view, per-second series.
# Its parameters are PARAMS above; its version command and pattern are
# version_command() and parse_version() above.
TARGET_KIND = "redis"  # the kind of a target whose plan does not say
TARGET_KINDS = ("redis",)  # the kinds it can run against
MEASURED = True  # a plan may choose it as its measured tool
DURATION_PARAM = None  # runs a number of requests, not for a time
# What counts against the worker's limits when this tool runs there (runners/limits.py).
LIMITS = (Use("clients", "processes"), Use("threads", "processes"))
SERIES: tuple[str, ...] = ()  # its progress lines are overwritten, not a series
# What answers "how fast" for this tool, best first: the dashboard, the
# trend and the timeline open on the first a run has (runners.tools.main_metric):
# requests per second.
MAIN_METRICS = ("rps",)
METRICS = {
    "rps": m.throughput("Requests per second", "req/s"),
    "latency_avg_ms": m.latency("Average latency"),
    "latency_min_ms": m.latency("Minimum latency"),
    "latency_p50_ms": m.latency("Median latency"),
    "latency_p95_ms": m.latency("95th percentile latency"),
    "latency_p99_ms": m.latency("99th percentile latency"),
    "latency_max_ms": m.latency("Maximum latency"),
}


def default_view(axes: list[str]) -> dict:
    """Requests/s per test (a `tests` axis, else the output's groups), one
    column per target or other axis."""
    row = "tests" if "tests" in axes else "group"
    others = [a for a in axes if a not in ("target", row)]
    column = "target" if "target" in axes else (others[0] if others else "repeat")
    return m.view([row], [column], "rps")


def client_params(clean: dict, index: int) -> dict:
    """Client `index`'s params when several clients run one cell: the same.

    A shared keyspace is safe: every test writes a key (SET, INCR, LPUSH, ...)
    without reading another client's result, so clients only add load on the
    same keys, as more connections of one redis-benchmark would.
    """
    return clean
