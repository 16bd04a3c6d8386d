"""fio: storage benchmark. Builds an argv with --output-format=json; its
output is read in fio_parse.

Benchboard always asks fio for JSON (3.x, also 2.x and json+), so the parser
never reads fio's human output of its own runs, whose units change with
magnitude (IOPS=165k, nsec/usec/msec). Job files are not used: every option
goes on the command line as `--name=value`, from the allow-list below.
"""

from __future__ import annotations

import re
from typing import Any

from runners import metrics as m
from runners.command import WORKDIR, Command, Endpoint
from runners.errors import ParseError, ValidationError
from runners.limits import Use
from runners.params import Param, checked
from runners.params import validate as validate_params
from runners.tools.fio_parse import DIRECTIONS, parse  # noqa: F401  (the interface's parse)

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
