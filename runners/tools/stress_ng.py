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
from runners.params import Param
from runners.params import validate as validate_params
from runners.results import Result

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
    clean = validate(params)
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

PREFIX = re.compile(r"^stress-ng: (?:(?P<level>[a-z]+):\s+)?(?:\[\d+\]\s?)?(?P<rest>.*)$")
HEADER = re.compile(r"^\s*stressor\s+bogo ops")
NUM = r"([0-9]+(?:\.[0-9]+)?)"
ROW = re.compile(
    rf"^\s*([a-z][a-z0-9_-]*)\s+([0-9]+)\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}\s+{NUM}"
    rf"(?:\s+{NUM})?(?:\s+{NUM})?\s*$"
)
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

    (older versions print the table at level `info:`). One group per stressor
    (label stressor) with bogo_ops, bogo_ops_per_s (real time), the times and
    bogo_ops_per_s_usr_sys. With one stressor, metrics equal its group; with
    several, metrics hold each figure as <stressor>_<name> (bogo ops of
    different stressors do not add up). fail/error lines go to errors.
    """
    if not text.strip():
        raise ParseError("empty stress-ng output")
    groups, errors, facts, seen = _read_lines(text)
    if not groups:
        if errors:
            return Result(errors=errors, facts=facts)
        if seen:
            raise ParseError(
                "stress-ng printed no metrics (killed with SIGKILL, or stopped before its summary?)"
            )
        raise ParseError("not stress-ng output (no 'stress-ng:' lines)")
    if "run_s" not in facts and not any("run completed" in e for e in errors):
        errors.append("stress-ng output cut short: no 'run completed' line after its metrics")
    return Result(metrics=_combine(groups), groups=groups, errors=errors, facts=facts)


def _read_lines(text: str) -> tuple[list[dict], list[str], dict, bool]:
    """Scan the lines: (groups, errors, facts, whether any stress-ng line was seen)."""
    groups: list[dict] = []
    errors: list[str] = []
    facts: dict = {}
    in_table = seen = False
    for line in text.splitlines():
        match = PREFIX.match(line.strip())
        if not match:
            continue
        seen = True
        line, level, rest = match.group(0, "level", "rest")
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
        else:
            _fact(rest, facts)
    return groups, errors, facts, seen


def _group(row: re.Match) -> dict:
    values = [float(v) for v in row.groups()[1:] if v is not None]
    return {"labels": {"stressor": row.group(1)}, "metrics": dict(zip(COLUMNS, values))}


def _fact(rest: str, facts: dict) -> None:
    """Keep the requested and the actual run time: a shorter actual run means
    stress-ng was stopped early (SIGTERM), which is how Benchboard stops it."""
    # A substring check before each search: most info lines hold no fact.
    if "setting to a" in rest and (match := _TIMEOUT.search(rest)):
        facts["timeout_s"] = float(match.group(1))
    elif "run completed" in rest and (match := _RUN_TIME.search(rest)):
        facts["run_s"] = float(match.group(1))
    elif "dispatching hogs" in rest and (match := _STRESSORS.search(rest)):
        facts["stressors"] = match.group(1).strip()


_TIMEOUT = re.compile(r"setting to a (\d+) second")
_RUN_TIME = re.compile(r"successful run completed in ([0-9.]+)\s*s")
_STRESSORS = re.compile(r"dispatching hogs: (.*)$")


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
