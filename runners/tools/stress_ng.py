"""stress-ng: background load (CPU, memory, I/O) around a measured tool.

How Benchboard uses it: the stress phase starts stress-ng (e.g. `--cpu 4
--cpu-load 90`) before the measured tool and stops it after, by sending
SIGTERM to its process group. stress-ng treats SIGTERM (and SIGINT, SIGHUP)
as a clean stop: its workers end, it prints its --metrics-brief table for the
time it actually ran and exits 0; only the shorter "completed in" time tells
(fixtures stressng_killed_SIGTERM/SIGINT/SIGHUP). SIGKILL leaves no metrics
(exit 137), which parse() reports as a ParseError. `timeout` is the safety
net for a stop that never comes (default one day, stress-ng's own default).

stress-ng writes everything, metrics included, to stderr.
"""

from __future__ import annotations

import re

from runners import metrics as m
from runners.command import Command, Endpoint
from runners.errors import ParseError, ValidationError
from runners.limits import Use
from runners.params import Param, checked
from runners.params import validate as validate_params
from runners.results import Result, cap_warnings, line_warning

NAME = "stress_ng"
BINARY = "stress-ng"
PACKAGE = "stress-ng"
PHASES = ("run",)

CPU_METHODS = (
    "all",
    "ackermann",
    "bitops",
    "callfunc",
    "cfloat",
    "crc16",
    "double",
    "euler",
    "fft",
    "fibonacci",
    "float",
    "int64",
    "int32",
    "loop",
    "matrixprod",
    "nsqrt",
    "prime",
    "queens",
    "rand",
    "sieve",
    "sqrt",
    "trig",
)
STRESSORS = ("cpu", "vm", "io", "hdd")

PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param(
            "cpu",
            "int",
            "CPU workers (cores to load); to stress nothing, do not start "
            "stress-ng: it reads 0 as 'all CPUs'",
            option="--cpu",
            min=1,
            max=4096,
        ),
        Param(
            "cpu_load", "int", "load per CPU worker in percent", option="--cpu-load", min=0, max=100
        ),
        Param(
            "cpu_method", "choice", "CPU stress method", option="--cpu-method", choices=CPU_METHODS
        ),
        Param("vm", "int", "memory workers (mmap/munmap)", option="--vm", min=1, max=4096),
        Param("vm_bytes", "size", "memory per vm worker, e.g. 256m", option="--vm-bytes"),
        Param("io", "int", "workers calling sync()", option="--io", min=1, max=4096),
        Param("hdd", "int", "workers writing and unlinking files", option="--hdd", min=1, max=4096),
        Param("hdd_bytes", "size", "bytes written per hdd worker, e.g. 1g", option="--hdd-bytes"),
        Param("temp_path", "text", "directory for hdd files (absolute path)", option="--temp-path"),
        Param("taskset", "text", "CPUs to run on, e.g. 0-3 or 0,2", option="--taskset"),
        Param(
            "timeout",
            "int",
            "stop after this many seconds (safety net: Benchboard stops "
            "stress-ng itself after the measured tool)",
            option="--timeout",
            min=1,
            max=7 * 86400,
            default=86400,
        ),
    )
}
# The plan's `stress.load` axis names the CPU load.
ALIASES = {"load": "cpu_load"}
CPU_LIST = re.compile(r"^[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*$")
NEEDS = {
    "cpu_load": "cpu",
    "cpu_method": "cpu",
    "vm_bytes": "vm",
    "hdd_bytes": "hdd",
    "temp_path": "hdd",
}


def validate(params: dict) -> dict:
    """Return typed params (timeout defaulted) or raise ValidationError.

    Rules: at least one stressor (cpu, vm, io, hdd); per-stressor options need
    their stressor; taskset is a CPU list; temp_path is absolute.
    """
    clean = validate_params(NAME, PARAMS, params, ALIASES)
    clean.setdefault("timeout", PARAMS["timeout"].default)
    for name, needed in NEEDS.items():
        if name in clean and needed not in clean:
            raise ValidationError(name, f"needs {needed}")
    if not any(name in clean for name in STRESSORS):
        raise ValidationError("cpu", "give at least one stressor: " + ", ".join(STRESSORS))
    if "taskset" in clean and not CPU_LIST.fullmatch(clean["taskset"]):
        raise ValidationError("taskset", "a CPU list such as 0-3 or 0,2,4")
    if "temp_path" in clean and not clean["temp_path"].startswith("/"):
        raise ValidationError("temp_path", "an absolute path is required (starting with /)")
    return clean


def check_scope(clean: dict, scope) -> None:
    """Refuse a temp_path (where hdd workers write) outside scope's directories."""
    if clean.get("temp_path"):
        scope.check_path("temp_path", clean["temp_path"])


def build(params: dict, endpoint: Endpoint | None = None, phase: str = "run") -> Command:
    """Return the stress-ng Command (always --metrics-brief). endpoint is unused:
    stress-ng loads the machine it runs on."""
    if phase not in PHASES:
        raise ValidationError("phase", f"stress-ng has only the phases {', '.join(PHASES)}")
    clean = checked(params, validate)
    argv = [BINARY]
    for name, spec in PARAMS.items():
        if name in clean:
            argv.extend([spec.option, str(clean[name])])
    argv.append("--metrics-brief")
    return Command(argv=argv, tool=NAME, package=PACKAGE)


def version_command() -> list[str]:
    return [BINARY, "--version"]


def parse_version(text: str) -> str:
    """'stress-ng, version 0.15.06 (gcc 12.2.0, ...)' -> '0.15.06'."""
    match = re.search(r"stress-ng,? version (\d+[\w.\-]*)", text)
    if not match:
        raise ParseError("no stress-ng version found")
    return match.group(1)


# ---------------------------------------------------------------- parsing

# "stress-ng: info:  [13299] ..."; with --timestamp the level is preceded by
# the time of day ("stress-ng: 17:39:48.99 info:  [11480] ...").
PREFIX = re.compile(
    r"^stress-ng: (?:[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{2} )?(?:(?P<level>[a-z]+):\s+)?"
    r"(?:\[\d+\]\s?)?(?P<rest>.*)$"
)
# PREFIX over a whole output: each stress-ng line, stripped, as "line".
PREFIX_LINES = re.compile(
    r"^[ \t]*(?P<line>stress-ng: (?:[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{2} )?"
    r"(?:(?P<level>[a-z]+):[ \t]+)?(?:\[\d+\][ \t]?)?(?P<rest>[^\n]*))",
    re.MULTILINE,
)
HEADER = re.compile(r"^\s*stressor\s+bogo ops")
NUM = r"([0-9]+(?:\.[0-9]+)?)"
ROW = re.compile(
    rf"^\s*([a-z][a-z0-9_-]*)\s+([0-9]+)\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}"
    rf"(?:\s+{NUM})?(?:\s+{NUM})?\s*$"
)
# The table's second header line: "(secs)    (secs)    (secs)   (real time) ...".
UNITS = re.compile(r"^\s*\(secs\)\s+\(secs\)")
# "miscellaneous metrics:" rows (0.14+): "flock  5678.91 nanosecs per flock lock
# call (harmonic mean of 6 instances)"; kept in facts["misc_metrics"].
MISC = re.compile(rf"^\s*([a-z][a-z0-9_-]*)\s+{NUM}\s+(.*\S)\s*\(([^()]*)\)\s*$")
# A line of the table's shape (a stressor, then a number) that ROW and MISC
# do not read: a figure nothing reads, so a warning.
TABLE_LIKE = re.compile(r"^\s*[a-z][a-z0-9_-]*\s+[0-9]")
COLUMNS = (
    "bogo_ops",
    "real_time_s",
    "usr_time_s",
    "sys_time_s",
    "bogo_ops_per_s",
    "bogo_ops_per_s_usr_sys",
    "cpu_used_per_instance_pct",
    "rss_max_kb",
)
ERROR_LEVELS = ("fail", "error", None)  # None: a bare "stress-ng: unrecognized option ..."


def parse(text: str) -> Result:
    """Read stress-ng --metrics-brief (or --metrics) output.

    Reads e.g.::

        stress-ng: info:  [13299] setting to a 3 second run per stressor
        stress-ng: metrc: [13299] stressor       bogo ops real time  usr time  sys time   bogo ops/s     bogo ops/s
        stress-ng: metrc: [13299]                           (secs)    (secs)    (secs)   (real time) (usr+sys time)
        stress-ng: metrc: [13299] cpu                1528      3.03      1.51      0.00       503.48        1012.22
        stress-ng: info:  [13299] successful run completed in 3.04s

    (older versions print the table at level `info:`; --timestamp puts the
    time of day before the level; a run over a minute ends "completed in 1
    min, 10.23 secs"). One group per stressor (label stressor) with bogo_ops,
    bogo_ops_per_s (real time), the times and bogo_ops_per_s_usr_sys. With one
    stressor, metrics equal its group; with several, metrics hold each figure
    as <stressor>_<name> (bogo ops of different stressors do not add up).
    fail/error lines go to errors; a line of the table nothing reads is a warning.
    """
    if not text.strip():
        raise ParseError("empty stress-ng output")
    groups, errors, facts, seen, warnings = _read_lines(text)
    if not groups:
        if errors:
            return Result(errors=errors, facts=facts, warnings=warnings)
        if seen:
            raise ParseError(
                "stress-ng printed no metrics (killed with SIGKILL, or stopped before its summary?)"
            )
        raise ParseError("not stress-ng output (no 'stress-ng:' lines)")
    if not text.endswith("\n") and _WHOLE_UNITS_AT_END.search(text):
        facts.pop("run_s", None)  # "completed in 1 min" with no newline: "1 min, 0.42 secs" cut?
    if "run_s" not in facts and not any("run completed" in e for e in errors):
        errors.append("stress-ng output cut short: no 'run completed' line after its metrics")
    return Result(
        metrics=_combine(groups),
        groups=groups,
        errors=errors,
        facts=facts,
        warnings=cap_warnings(warnings),
    )


def _read_lines(text: str) -> tuple[list[dict], list[str], dict, bool, list[str]]:
    """Scan the lines: (groups, errors, facts, whether any stress-ng line was
    seen, warnings for table lines nothing reads)."""
    groups: list[dict] = []
    errors: list[str] = []
    facts: dict = {}
    warnings: list[str] = []
    in_table = False
    # One C-level pass finds every stress-ng line (PREFIX_LINES); Python only
    # sees their level and text.
    for match in PREFIX_LINES.finditer(text):
        line, level, rest = match.group(1, 2, 3)  # line, level, rest
        if rest[-1:].isspace():  # trailing blanks or a "\r"
            line, rest = line.rstrip(), rest.rstrip()
        # Cheap checks before each pattern (a row ends in a digit): most lines
        # are none of these.
        if "bogo ops" in rest and HEADER.match(rest):
            in_table = True
        elif in_table and rest[-1:].isdigit() and (row := ROW.match(rest)):
            groups.append(_group(row))
        elif level in ERROR_LEVELS or "unsuccessful run" in rest:
            errors.append(line)
        elif level == "warn":
            facts.setdefault("warnings", []).append(rest)
        elif in_table and _table_line(level, rest, facts):
            continue
        elif in_table and (level == "metrc" or TABLE_LIKE.match(rest)):
            warnings.append(line_warning("stress-ng metrics table", line))
        else:
            _fact(rest, facts)
    return groups, errors, facts, "stress-ng:" in text, warnings


def _table_line(level: str | None, rest: str, facts: dict) -> bool:
    """True for the table's lines that carry no figure of a stressor row:
    the units header, "miscellaneous metrics:" and its rows (into facts)."""
    if UNITS.match(rest) or rest.strip() == "miscellaneous metrics:":
        return True
    misc = MISC.match(rest) if rest[-1:] == ")" else None
    # Every version names how the figure was averaged over the instances.
    if misc is None or not ("mean" in misc.group(4) or "average" in misc.group(4)):
        return False
    stressor, value, what, how = misc.groups()
    entry = {"value": float(value), "metric": what, "mean": how}
    facts.setdefault("misc_metrics", {}).setdefault(stressor, []).append(entry)
    return True


def _group(row: re.Match) -> dict:
    stressor, *values = row.groups()
    # The optional columns come last: a None is only ever at the end.
    metrics = dict(zip(COLUMNS, map(float, filter(None, values))))
    return {"labels": {"stressor": stressor}, "metrics": metrics}


def _fact(rest: str, facts: dict) -> None:
    """Keep the requested and the actual run time: a shorter actual run means
    stress-ng was stopped early (SIGTERM), which is how Benchboard stops it."""
    # A substring check before each search: most info lines hold no fact.
    if "setting to a" in rest and (match := _TIMEOUT.search(rest)):
        _set(facts, "timeout_s", _seconds(match))
    elif "run completed" in rest and (match := _RUN_TIME.search(rest)):
        _set(facts, "run_s", _seconds(match))
    elif "dispatching hogs" in rest and (match := _STRESSORS.search(rest)):
        facts["stressors"] = match.group(1).strip()


def _set(facts: dict, name: str, value: float | None) -> None:
    if value is not None:
        facts[name] = value


# stress-ng writes a duration (stress_duration_to_str) as "3.04s" under a
# minute, and over it as the years, weeks, days, hours and mins that are not
# zero, then the seconds only if some are left: "60.42s (1 min, 0.42 secs)",
# "1 min, 10.23 secs", "2 hours, 1 min, 0.50 secs", "1 min" (exactly 60 s),
# "1 hour"; "setting to a 60 second run" or "a 1 min run".
_SCALES = {"year": 365.25 * 86400, "week": 7 * 86400, "day": 86400, "hour": 3600, "min": 60}
_UNIT = r"(?:years?|weeks?|days?|hours?|mins?)"
_DURATION = (
    rf"(?P<units>(?:\d+ {_UNIT}(?:,\s*|\b))*)"
    r"(?P<secs>[0-9]+(?:\.[0-9]+)?\s*(?:s\b|secs?\b|seconds?\b))?"
)
_TIMEOUT = re.compile(rf"setting to a {_DURATION}")
_RUN_TIME = re.compile(rf"successful run completed in {_DURATION}")
_STRESSORS = re.compile(r"dispatching hogs: (.*)$")
_PART = re.compile(rf"(\d+) ({_UNIT})")
_WHOLE_UNITS_AT_END = re.compile(rf"run completed in (?:\d+ {_UNIT},?\s*)+\Z")


def _seconds(match: re.Match) -> float | None:
    """The seconds of a _DURATION match, None when it holds no duration."""
    units, secs = match.group("units", "secs")
    if not secs and (not units or units.rstrip().endswith(",")):
        return None  # nothing, or "1 min, " whose seconds were cut off
    seconds = float(re.match(r"[0-9.]+", secs).group()) if secs else 0.0
    if not units:  # "3.04s": the common case
        return seconds
    for count, unit in _PART.findall(units):
        seconds += int(count) * _SCALES[unit.rstrip("s")]
    return round(seconds, 6)


def _combine(groups: list[dict]) -> dict[str, float]:
    if len(groups) == 1:
        return dict(groups[0]["metrics"])
    metrics: dict[str, float] = {}
    for group in groups:
        prefix = group["labels"]["stressor"].replace("-", "_")
        for name, value in group["metrics"].items():
            metrics[f"{prefix}_{name}"] = value
    return metrics


# ================================================================ registry
# Everything the rest of Benchboard knows about this tool (read through
# runners/tools/__init__.py; nothing outside this block lists it): target
# kinds, duration, metric catalog, default results view, per-second series.
# Its parameters are PARAMS above; its version command and pattern are
# version_command() and parse_version() above.
TARGET_KIND = "host"  # the kind of a target whose plan does not say
TARGET_KINDS = ("mysql", "postgres", "host")  # background load on any host
MEASURED = False  # background load (a plan's stress:), never the measured tool
STRESS = True  # the tool a plan's `stress:` runs beside the measure
DURATION_PARAM = "timeout"
# What counts against the worker's limits when this tool runs there (runners/limits.py).
# (Not its timeout: a safety net, Benchboard stops stress-ng after the measure.)
LIMITS = (
    Use("cpu", "processes"),
    Use("vm", "processes"),
    Use("io", "processes"),
    Use("hdd", "processes"),
    Use("vm_bytes", "memory", ("vm",)),  # per vm worker
    Use("hdd_bytes", "disk", ("hdd",)),  # per hdd worker
)
SERIES: tuple[str, ...] = ()
# Several stressors prefix these with the stressor ("vm_bogo_ops"); the
# catalog lookup (runners.tools.metric) reads the suffix.
# What answers "how fast" for this tool, best first: the dashboard, the
# trend and the timeline open on the first a run has (runners.tools.main_metric):
# bogo operations per second.
MAIN_METRICS = ("bogo_ops_per_s",)
METRICS = {
    "bogo_ops": m.count("Bogo operations"),
    "real_time_s": m.duration("Real time"),
    "usr_time_s": m.duration("User time"),
    "sys_time_s": m.duration("System time"),
    "bogo_ops_per_s": m.throughput("Bogo operations per second (real time)", "bogo ops/s"),
    "bogo_ops_per_s_usr_sys": m.throughput("Bogo operations per second (CPU time)", "bogo ops/s"),
    "cpu_used_per_instance_pct": m.count("CPU used per instance", "%"),
    "rss_max_kb": m.count("Maximum resident memory", "KB"),
}


def default_view(axes: list[str]) -> dict:
    return m.view(["target"], ["repeat"], "bogo_ops_per_s")
