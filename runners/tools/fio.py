"""fio: storage benchmark. Builds an argv with --output-format=json, reads fio JSON.

Benchboard always asks fio for JSON (3.x, also 2.x and json+), so the parser
never reads fio's human output, whose units change with magnitude (IOPS=165k,
nsec/usec/msec). Job files are not used: every option goes on the command line
as `--name=value`, from the allow-list below.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from runners import metrics as m
from runners.command import WORKDIR, Command, Endpoint
from runners.errors import ParseError, ValidationError
from runners.limits import Use
from runners.params import Param, checked
from runners.params import validate as validate_params
from runners.results import Result, cap_warnings
from runners.tools import fio_parse

NAME = "fio"
BINARY = "fio"
PACKAGE = "fio"
PHASES = ("run",)

RW_MODES = (
    "read",
    "write",
    "randread",
    "randwrite",
    "rw",
    "readwrite",
    "randrw",
    "trim",
    "randtrim",
    "trimwrite",
)
MIXED_MODES = ("rw", "readwrite", "randrw")
IOENGINES = ("psync", "sync", "libaio", "io_uring", "posixaio", "mmap")

PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("name", "text", "job name (shown as the group label)", default="benchboard"),
        Param("rw", "choice", "I/O pattern", choices=RW_MODES, default="read"),
        Param("bs", "size", "block size, e.g. 4k or 32m", default="4k"),
        Param("size", "size", "total I/O per job (file size), e.g. 5G"),
        Param("numjobs", "int", "parallel jobs", min=1, max=4096),
        Param("runtime", "int", "maximum run time in seconds", min=1, max=7 * 86400),
        Param("time_based", "bool", "keep running until runtime even when size is done"),
        Param(
            "ramp_time", "int", "seconds of warm-up not counted in the results", min=0, max=86400
        ),
        Param("direct", "bool", "O_DIRECT: bypass the page cache"),
        Param("ioengine", "choice", "I/O engine", choices=IOENGINES),
        Param("iodepth", "int", "I/Os in flight per job (async engines)", min=1, max=65536),
        Param("filename", "text", "file or device path (absolute; ':' separates several)"),
        Param(
            "directory",
            "text",
            "directory for the job files (relative: inside the cell's scratch directory)",
        ),
        Param("nrfiles", "int", "files per job", min=1, max=100000),
        Param(
            "file_service_type",
            "choice",
            "how jobs pick among their files",
            choices=("random", "roundrobin", "sequential"),
        ),
        Param("group_reporting", "bool", "report the jobs of a group as one"),
        Param("rwmixread", "int", "percentage of reads in a mixed workload", min=0, max=100),
        Param("fsync", "int", "fsync after this many writes (0 = never)", min=0, max=1 << 30),
        Param("end_fsync", "bool", "fsync when the job ends"),
        Param("invalidate", "bool", "drop the page cache of the files before starting"),
        Param("randrepeat", "bool", "same random sequence on every run"),
        Param("norandommap", "bool", "do not track random offsets (may revisit blocks)"),
        Param("refill_buffers", "bool", "refill the I/O buffer on every submit"),
        Param("thread", "bool", "use threads instead of processes"),
        Param("unlink", "bool", "delete the job files when done"),
        Param("rate_iops", "int", "cap IOPS per job", min=1, max=1 << 30),
        Param(
            "output_format",
            "choice",
            "json, or json+ with latency bins",
            choices=("json", "json+"),
            default="json",
        ),
    )
}
ALIASES = {"readwrite": "rw", "blocksize": "bs"}

# Booleans fio takes as bare flags; the other booleans are written as =1/=0.
FLAG_OPTIONS = ("time_based", "group_reporting", "norandommap", "refill_buffers", "thread")
PATH_PARAMS = ("filename", "directory")


def validate(params: dict) -> dict:
    """Return typed, canonical params with defaults filled in, or raise ValidationError.

    Cross-field rules: a filename or a directory is required (a relative
    one is inside the cell's scratch directory, fio's working directory);
    rwmixread needs a mixed rw mode; time_based needs runtime.
    """
    clean = validate_params(NAME, PARAMS, params, ALIASES)
    for name, spec in PARAMS.items():
        if spec.default is not None:
            clean.setdefault(name, spec.default)
    for name, value in clean.items():
        if isinstance(value, str) and WORKDIR in value:
            raise ValidationError(name, f"{WORKDIR} is reserved")
    if "filename" not in clean and "directory" not in clean:
        raise ValidationError("filename", "give filename or directory: where fio does its I/O")
    if "rwmixread" in clean and clean["rw"] not in MIXED_MODES:
        raise ValidationError("rwmixread", f"only with rw = {', '.join(MIXED_MODES)}")
    if clean.get("time_based") and "runtime" not in clean:
        raise ValidationError("time_based", "needs runtime")
    return clean


def check_scope(clean: dict, scope) -> None:
    """Refuse filename/directory outside the scratch and data directories of scope.

    fio options that execute or include (exec_prerun, include, ioengine exec,
    write_*_log...) are not in PARAMS at all: no plan can pass them.
    """
    for name in PATH_PARAMS:
        # ':' separates several files; '\:' is a literal colon (refused by check_path).
        for path in (clean.get(name) or "").split(":"):
            if path:
                scope.check_path(name, path)


def build(params: dict, endpoint: Endpoint | None = None, phase: str = "run") -> Command:
    """Return the fio Command for params (validated here). fio ignores endpoint:
    it runs on the client host against the file system there."""
    if phase not in PHASES:
        raise ValidationError("phase", f"fio has only the phases {', '.join(PHASES)}")
    clean = checked(params, validate)
    argv = [BINARY]
    for name in PARAMS:  # PARAMS order: stable, readable command lines
        if name in clean and name != "output_format":
            argv.extend(_option(name, clean[name]))
    argv.append(f"--output-format={clean['output_format']}")
    return Command(argv=argv, tool=NAME, package=PACKAGE)


def _option(name: str, value: Any) -> list[str]:
    """One `--name=value` element (or a bare flag, or nothing for a false flag)."""
    if name in FLAG_OPTIONS:
        return [f"--{name}"] if value else []
    if isinstance(value, bool):
        value = int(value)
    return [f"--{name}={value}"]


def version_command() -> list[str]:
    return [BINARY, "--version"]


def parse_version(text: str) -> str:
    """'fio-3.33' -> '3.33'."""
    match = re.search(r"fio-(\d+[\w.\-]*)", text)
    if not match:
        raise ParseError("no fio version found")
    return match.group(1)


# ---------------------------------------------------------------- parsing

DIRECTIONS = ("read", "write", "trim", "mixed")  # "mixed": unified_rw_reporting
ERROR_WORDS = re.compile(
    r"err|fail|invalid|unable|cannot|can't|denied|no space|not ", re.IGNORECASE
)


def parse(text: str) -> Result:
    """Read fio JSON output (3.x, 2.x, json+), possibly with other lines around it.

    Reads e.g.::

        note: both iodepth >= 1 and synchronous I/O engine are selected, queue ...
        fio: pid=13163, err=28/file:io_u.c:1876, func=io_u error, error=No space ...
        {
          "fio version" : "fio-3.33",
          "jobs" : [
            {
              "jobname" : "read4k", "groupid" : 0, "error" : 0,
              "read" : { "bw" : 1260307, "iops" : 315076.923077, "runtime" : 104,
                         "clat_ns" : { "mean" : 5764.85, "N" : 32768,
                                       "percentile" : { "95.000000" : 1400, ... } },
                         "lat_ns" : { "mean" : 5938.12, "N" : 32768 }, ... },

    Returns one group per entry of "jobs" (labels job, jobnum, and groupid
    when the jobs ran in several reporting groups), whole-output metrics (see
    _headline), `fio:` error lines and job errors in errors, notes and disk
    utilisation in facts. fio lines without JSON (a bad option or directory)
    give a Result with only errors; JSON cut short is a ParseError.
    """
    if not text.strip():
        raise ParseError("empty fio output")
    start = _json_start(text)
    if start is None or '"jobs"' not in text:
        # Outputs of runs made elsewhere (Archive -> Import): terse v3, normal.
        for found, read in (
            (fio_parse.is_terse, fio_parse.parse_terse),
            (fio_parse.is_normal, fio_parse.parse_normal),
        ):
            if found(text):
                return _text_result(text, *read(text))
    if start is None:
        errors, _ = _messages(text)
        if errors:
            return Result(errors=errors)
        raise ParseError(
            "no fio output found: neither JSON (--output-format=json), terse v3 (--minimal) "
            "nor normal output with a job block"
        )
    doc, end = _decode(text, start)
    jobs = doc.get("jobs")
    if not isinstance(jobs, list) or not all(isinstance(j, dict) for j in jobs):
        raise ParseError('JSON without a fio "jobs" list: not fio output')
    errors, notes = _messages(text[:start] + "\n" + text[end:])
    several = len({_groupid(job) for job in jobs}) > 1
    # Each job's directions are read once, for its group and for the headline.
    directions = [_directions(job) for job in jobs]
    groups = []
    for jobnum, (job, job_directions) in enumerate(zip(jobs, directions)):
        labels = {"job": str(job.get("jobname", "")), "jobnum": jobnum}
        if several:
            labels["groupid"] = _groupid(job)
        groups.append({"labels": labels, "metrics": _job_metrics(job_directions)})
        if _number(job.get("error")):
            errors.append(_job_error(job, jobnum))
    facts = _facts(doc, notes)
    if not several:
        facts.update(_latency_histograms(jobs))
    return Result(metrics=_headline(jobs, directions), groups=groups, errors=errors, facts=facts)


def _latency_histograms(jobs: list[dict]) -> dict[str, Any]:
    """{"latency_histograms": {"<direction>_clat_us": [[us, count], ...]}}
    from json+ output.

    json+ adds each direction's completion latency bins ("clat_ns": {"bins":
    {"<ns>": count}}); the jobs' bins of one direction, added up, are the
    histogram behind the headline's <direction>_clat_p95_us and _p99_us
    (keyed by the metrics' name without the percentile).
    Several clients' histograms merge into exact combined percentiles
    (runners/combine.py). Plain json has no bins: nothing.
    """
    histograms = {}
    for direction in DIRECTIONS:
        counts: dict[float, int] = {}
        for job in jobs:
            bins = _dict(_dict(_dict(job.get(direction)).get("clat_ns")).get("bins"))
            for ns, count in bins.items():
                us, n = _bin(ns, count)
                counts[us] = counts.get(us, 0) + n
        if counts:
            histograms[f"{direction}_clat_us"] = [[us, counts[us]] for us in sorted(counts)]
    return {"latency_histograms": histograms} if histograms else {}


def _bin(ns: str, count) -> tuple[float, int]:
    """A json+ latency bin as (us, count); ParseError when either is not a
    number (a bin that cannot be read must not pass for an empty one)."""
    try:
        return _us(float(ns), 1000.0), int(count)
    except (TypeError, ValueError):
        raise ParseError(f"fio json+: unreadable latency bin {ns!r}: {count!r}") from None


def _text_result(text: str, jobs, directions, facts, errors, warnings) -> Result:
    """A Result of fio_parse's reading of terse or normal output, built as
    parse() builds one from JSON (the same groups, headline and errors)."""
    if not jobs:
        raise ParseError("fio output without a job result (cut short before its first job?)")
    own_errors, notes = _messages(text)
    several = len({_groupid(job) for job in jobs}) > 1
    groups = []
    for jobnum, (job, job_directions) in enumerate(zip(jobs, directions)):
        labels = {"job": job["jobname"], "jobnum": jobnum}
        if several:
            labels["groupid"] = _groupid(job)
        groups.append({"labels": labels, "metrics": _job_metrics(job_directions)})
        if job["error"]:
            own_errors.append(_job_error(job, jobnum))
    if notes:
        facts["notes"] = notes
    return Result(
        metrics=_headline(jobs, directions),
        groups=groups,
        errors=own_errors + errors,
        facts=facts,
        warnings=cap_warnings(warnings),
    )


def _groupid(job: dict) -> int:
    value = _number(job.get("groupid"))
    return int(value) if value is not None else 0


def _headline(jobs: list[dict], directions: list[dict]) -> dict[str, float]:
    """Whole-output metrics: the jobs combined when they share one reporting
    group (they ran side by side); with several groups (stonewall, new_group:
    one group ran after the other), adding them up would invent a throughput
    nothing reached, so each group's combined figures are kept apart, named
    "group<id>_<metric>" (e.g. group1_read_iops), and no sum is given."""
    by_group: dict[int, list[dict]] = {}
    for job, job_directions in zip(jobs, directions):
        by_group.setdefault(_groupid(job), []).append(job_directions)
    if len(by_group) <= 1:
        return _combine(directions)
    metrics = {}
    for groupid, members in sorted(by_group.items()):
        metrics.update(
            {f"group{groupid}_{name}": value for name, value in _combine(members).items()}
        )
    return metrics


def _json_start(text: str) -> int | None:
    """Offset of the JSON document: the first line that starts with '{', else the first '{'."""
    match = re.search(r"(?m)^[ \t]*\{", text)
    if match:
        return match.end() - 1
    index = text.find("{")
    return None if index < 0 else index


def _decode(text: str, start: int) -> tuple[dict, int]:
    """Decode the JSON object at start; return it and the offset after it."""
    try:
        doc, end = json.JSONDecoder().raw_decode(text, start)
    except json.JSONDecodeError as exc:
        raise ParseError(
            f"truncated or malformed fio JSON: {exc.msg} at offset {exc.pos}"
        ) from None
    except RecursionError:
        raise ParseError("malformed fio JSON: nested too deeply") from None
    if not isinstance(doc, dict):
        raise ParseError("fio JSON is not an object")
    return doc, end


def _messages(text: str) -> tuple[list[str], list[str]]:
    """Split fio's own lines around the JSON into (errors, notes).

    `fio: ...` lines that speak of errors or failures are errors; `note: ...`
    and other `fio: ...` lines (e.g. the iodepth/synchronous engine note) are notes.
    """
    errors: list[str] = []
    notes: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("fio:") and ERROR_WORDS.search(line):
            errors.append(line)
        elif line.startswith(("fio:", "note:")) and line not in notes:
            notes.append(line)
    return errors, notes


def _job_error(job: dict, jobnum: int) -> str:
    try:
        code = int(_number(job.get("error")) or 0)
        reason = os.strerror(code)
    except (ValueError, OverflowError):
        code, reason = job.get("error"), "unknown error"
    return f"job {job.get('jobname', '')!s} #{jobnum}: error {code} ({reason})"


def _directions(job: dict) -> dict[str, dict[str, float]]:
    """{direction: _direction(job, direction)} for the directions that did I/O,
    and "sync" (_sync) when the job synced."""
    found = {direction: _direction(job, direction) for direction in DIRECTIONS}
    found["sync"] = _sync(job)
    return {direction: stats for direction, stats in found.items() if stats is not None}


def _sync(job: dict) -> dict[str, float] | None:
    """The job's fsync/fdatasync latencies (fio 3.x "sync": {"total_ios",
    "lat_ns"}), as a direction of their own that holds only latencies (named
    lat: sync_lat_mean_us, sync_lat_p99_us), or None when it did not sync."""
    sync = _dict(job.get("sync"))
    lat = _dict(sync.get("lat_ns"))
    ios = _number(sync.get("total_ios")) or _number(lat.get("N")) or 0.0
    if not ios or not _has_samples(lat, ios):
        return None
    out = {"samples": float(_number(lat.get("N")) or ios)}
    if _number(lat.get("mean")) is not None:
        out["lat_mean_us"] = _us(_number(lat["mean"]), 1000.0)
    out.update(_percentile_figures("lat", lat, 1000.0))
    return out


def _job_metrics(directions: dict[str, dict[str, float]]) -> dict[str, float]:
    """Metrics of one job entry: per active direction, plus runtime_s."""
    metrics: dict[str, float] = {}
    runtimes = []
    for direction, stats in directions.items():
        for key, value in stats.items():
            if key not in ("runtime_ms", "samples"):
                metrics[f"{direction}_{key}"] = value
        if "runtime_ms" in stats:  # not the sync pseudo-direction
            runtimes.append(stats["runtime_ms"])
    if runtimes:
        metrics["runtime_s"] = max(runtimes) / 1000.0
    return metrics


def _direction(job: dict, direction: str) -> dict[str, float] | None:
    """iops, bw_kib_s, lat/clat figures of one direction, or None if it did no I/O.

    fio 3.x reports latencies in ns (clat_ns, lat_ns, with N); fio 2.x in us
    (clat, lat, no N). "bw" is KiB/s in both. Latencies with no samples are
    left out rather than reported as 0. fio before 2.2 has no total_ios
    either: the I/O count (the weight of a job's latencies) is then
    iops x runtime, and any I/O at all (io_bytes) means its latencies count.
    """
    stats = job.get(direction)
    if not isinstance(stats, dict):
        return None
    iops, bw = _number(stats.get("iops")), _number(stats.get("bw"))
    runtime_ms = _number(stats.get("runtime")) or 0.0
    ios = _number(stats.get("total_ios"))
    if ios is None and iops is not None:
        ios = round(iops * runtime_ms / 1000.0) or (1.0 if _number(stats.get("io_bytes")) else 0.0)
    if not ios and not _number(stats.get("io_bytes")):
        return None
    if iops is None or bw is None:
        return None
    out = {"iops": iops, "bw_kib_s": bw, "runtime_ms": runtime_ms}
    slat, clat, lat, scale = _latency_blocks(stats)
    if _has_samples(lat, ios) and _number(lat.get("mean")) is not None:
        out["lat_mean_us"] = _us(_number(lat["mean"]), scale)
    if _has_samples(clat, ios) and _number(clat.get("mean")) is not None:
        out["clat_mean_us"] = _us(_number(clat["mean"]), scale)
    # Each latency's percentiles under its own name: clat always; lat and
    # slat with lat_percentiles=1 / slat_percentiles=1.
    for kind, block in (("clat", clat), ("lat", lat), ("slat", slat)):
        if _has_samples(block, ios):
            out.update(_percentile_figures(kind, block, scale))
    out["samples"] = float((lat or {}).get("N") or ios)
    return out


def _percentile_figures(kind: str, block: dict, scale: float) -> dict[str, float]:
    """{"<kind>_p95_us": ..., "<kind>_p99_us": ...} of one latency block."""
    found = _percentiles(block.get("percentile"), (95, 99)).items()
    return {f"{kind}_p{pct}_us": _us(value, scale) for pct, value in found if value is not None}


def _latency_blocks(stats: dict) -> tuple[dict, dict, dict, float]:
    """(slat, clat, lat, divisor to microseconds) for fio 3.x (ns) or 2.x (us)."""
    if isinstance(stats.get("lat_ns"), dict) or isinstance(stats.get("clat_ns"), dict):
        blocks = (stats.get("slat_ns"), stats.get("clat_ns"), stats.get("lat_ns"))
        return (*(_dict(b) for b in blocks), 1000.0)
    return _dict(stats.get("slat")), _dict(stats.get("clat")), _dict(stats.get("lat")), 1.0


def _us(value: float, scale: float) -> float:
    # Rounded to 9 places: fio's ns figures have 6 decimals, so this is exact
    # and only removes float noise such as 5.3222239380000005.
    return round(value / scale, 9)


def _has_samples(block: dict, ios: float) -> bool:
    if not block:
        return False
    if "N" in block:
        return bool(_number(block.get("N")))
    return bool(ios)  # fio 2.x has no N: trust blocks of directions that did I/O


def _percentiles(table: Any, wanted: tuple[int, ...]) -> dict[int, float | None]:
    """{pct: value} for the wanted pcts in fio's {"95.000000": 1234, ...} table
    (the first key equal to each; None when the value is not a number); one
    pass over the table, a pct it lacks is left out."""
    found: dict[int, float | None] = {}
    if not isinstance(table, dict):
        return found
    for key, value in table.items():
        try:
            number = float(key)
        except ValueError:
            continue
        for pct in wanted:
            if pct not in found and abs(number - pct) < 1e-9:
                found[pct] = _number(value)
    return {pct: found[pct] for pct in wanted if pct in found}


def _combine(directions: list[dict[str, dict[str, float]]]) -> dict[str, float]:
    """Whole-output metrics over job entries (each one's _directions).

    iops and bw_kib_s: sums over jobs (jobs run at the same time).
    lat_mean_us: the mean over all I/Os, i.e. job means weighted by each
    job's I/O count (exact). clat_p95_us/clat_p99_us: job percentiles weighted
    by I/O count, an approximation (exact merged percentiles need
    group_reporting, where fio merges the jobs itself). runtime_s: the longest job.
    A single entry gives exactly its own metrics.
    """
    sums: dict[str, float] = {}
    weighted: dict[str, list[tuple[float, float]]] = {}
    runtimes = []
    for job in directions:
        for direction, stats in job.items():
            if "runtime_ms" in stats:  # not the sync pseudo-direction
                runtimes.append(stats["runtime_ms"])
            for key in ("iops", "bw_kib_s"):
                if key in stats:
                    name = f"{direction}_{key}"
                    sums[name] = sums.get(name, 0.0) + stats[key]
            for key in _WEIGHTED:
                if key in stats:
                    weighted.setdefault(f"{direction}_{key}", []).append(
                        (stats[key], stats["samples"])
                    )
    metrics = {name: round(value, 9) for name, value in sums.items()}
    for name, pairs in weighted.items():
        total = sum(weight for _, weight in pairs)
        if len(pairs) == 1:
            metrics[name] = pairs[0][0]
        elif total:
            metrics[name] = round(sum(value * weight for value, weight in pairs) / total, 9)
    if runtimes:
        metrics["runtime_s"] = max(runtimes) / 1000.0
    return {name: metrics[name] for name in sorted(metrics)}


# Latency figures combined over jobs weighted by I/O count (_combine).
_WEIGHTED = (
    "lat_mean_us",
    "clat_mean_us",
    *(f"{kind}_p{pct}_us" for kind in ("clat", "lat", "slat") for pct in (95, 99)),
)


def _facts(doc: dict, notes: list[str]) -> dict[str, Any]:
    facts: dict[str, Any] = {}
    version = doc.get("fio version")
    if isinstance(version, str):
        facts["version"] = version.removeprefix("fio-")
    disks = doc.get("disk_util")
    if isinstance(disks, list):
        facts["disk_util"] = {
            str(d.get("name")): _number(d.get("util")) for d in disks if isinstance(d, dict)
        }
    if notes:
        facts["notes"] = notes
    return facts


def _number(value: Any) -> float | None:
    """value as a float if it is a JSON number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


# ================================================================ registry
# Everything the rest of Benchboard knows about this tool (read through
# runners/tools/__init__.py; nothing outside this block lists it): target
# kinds, duration, metric catalog, default results view, per-second series.
# Its parameters are PARAMS above; its version command and pattern are
# version_command() and parse_version() above.
TARGET_KIND = "host"  # the kind of a target whose plan does not say
TARGET_KINDS = ("mysql", "postgres", "host")  # the disks of any host
MEASURED = True  # a plan may choose it as its measured tool
DURATION_PARAM = "runtime"
ELAPSED_METRIC = "runtime_s"  # the seconds it measured (runners.tools.measured_seconds)
# What counts against the worker's limits when this tool runs there (runners/limits.py).
LIMITS = (
    Use("numjobs", "processes"),
    Use("size", "disk", ("numjobs",)),  # per job (a shared filename counts once per job too)
    Use("iodepth", "memory", ("bs", "numjobs")),  # I/O buffers in flight
    Use("runtime", "seconds"),
    Use("ramp_time", "seconds"),
)
SERIES: tuple[str, ...] = ()  # JSON output has no per-second values
# The parameter naming the directory it works in: a stored host target's
# directory fills it and a new host target is checked with it (benchapp);
# the WORKDIR_ALTERNATIVES place the files themselves, so a plan naming one
# keeps its own place.
WORKDIR_PARAM = "directory"
WORKDIR_ALTERNATIVES = ("filename",)


def _total(values: dict, *names: str) -> float | None:
    """The sum of the names a cell has (a read-only job has no write figures), or None."""
    present = [values[n] for n in names if n in values]
    return sum(present) if present else None


def _total_mb_s(values: dict) -> float | None:
    kib_s = _total(values, "read_bw_kib_s", "write_bw_kib_s")
    return None if kib_s is None else kib_s * 1.024e-3  # KiB/s -> MB/s (10^6 bytes)


# Metrics computed when results are read, from the stored ones of a cell:
# {name: (the metrics it needs, function of {metric: value} -> value or None)}.
DERIVED = {
    "iops": (("read_iops", "write_iops"), lambda v: _total(v, "read_iops", "write_iops")),
    "bw_mb_s": (("read_bw_kib_s", "write_bw_kib_s"), _total_mb_s),
}
# What answers "how fast" for this tool, best first: the dashboard, the
# trend and the timeline open on the first a run has (runners.tools.main_metric):
# IOPS, read + write; a run stored before that total was counted falls
# back to its read or write IOPS.
MAIN_METRICS = ("iops", "read_iops", "write_iops")
METRICS = {
    "iops": m.throughput("IOPS (read + write)", "IOPS"),  # derived when results are read
    "bw_mb_s": m.throughput("Bandwidth (read + write)", "MB/s"),  # derived likewise
    "runtime_s": m.duration("Run time"),
}
for _way in DIRECTIONS:
    METRICS.update(
        {
            f"{_way}_iops": m.throughput(f"{_way} IOPS", "IOPS"),
            f"{_way}_bw_kib_s": m.throughput(f"{_way} bandwidth", "KiB/s"),
            f"{_way}_lat_mean_us": m.latency(f"{_way} mean latency", "µs"),
            f"{_way}_clat_mean_us": m.latency(f"{_way} mean completion latency", "µs"),
            f"{_way}_clat_p95_us": m.latency(f"{_way} 95th percentile completion latency", "µs"),
            f"{_way}_clat_p99_us": m.latency(f"{_way} 99th percentile completion latency", "µs"),
            f"{_way}_lat_p95_us": m.latency(f"{_way} 95th percentile total latency", "µs"),
            f"{_way}_lat_p99_us": m.latency(f"{_way} 99th percentile total latency", "µs"),
            f"{_way}_slat_p95_us": m.latency(f"{_way} 95th percentile submission latency", "µs"),
            f"{_way}_slat_p99_us": m.latency(f"{_way} 99th percentile submission latency", "µs"),
        }
    )
# fsync/fdatasync latencies of the jobs (fio's "sync" block).
METRICS.update(
    {
        "sync_lat_mean_us": m.latency("mean fsync/fdatasync latency", "µs"),
        "sync_lat_p95_us": m.latency("95th percentile fsync/fdatasync latency", "µs"),
        "sync_lat_p99_us": m.latency("99th percentile fsync/fdatasync latency", "µs"),
    }
)


def default_view(axes: list[str]) -> dict:
    """S3: rows rw, columns volumes, IOPS; and MB/s."""
    others = [a for a in axes if a not in ("target", "rw")]
    col = next((a for a in ("volumes", "numjobs", "bs", *others) if a in axes), None)
    return m.view(
        ["rw"] if "rw" in axes else ["target"], [col or "repeat"], "iops", extra_metrics=["bw_mb_s"]
    )


def client_params(clean: dict, index: int) -> dict:
    """Client `index`'s params when several clients run fio in one cell.

    Clients may share a host (two local clients): each writes its own files,
    `<filename>.c<index>` for every ':'-separated file. A device (/dev/...)
    cannot be renamed, and files fio names itself in `directory` would be the
    same on a shared host: both are refused.
    """
    if "filename" not in clean:
        raise ValidationError(
            "directory", "several clients need `filename` (each client gets its own files)"
        )
    files = clean["filename"].split(":")
    if any(path.startswith("/dev/") for path in files):
        raise ValidationError("filename", "several clients cannot share a device")
    return {**clean, "filename": ":".join(f"{path}.c{index}" for path in files)}
