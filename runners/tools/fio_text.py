"""fio's normal (text) and terse/minimal v3 outputs, for importing outputs of
runs made elsewhere (`fio_parse.parse` sends them here; runs Benchboard starts
itself use JSON).

Both give, per job entry and per direction that did I/O, the figures the
JSON reader gives (fio_parse._direction): iops, bw_kib_s, lat_mean_us,
clat_mean_us, clat_p95_us, clat_p99_us, runtime_ms and the I/O count
("samples", the weight when jobs are combined), so the metric names are
those of JSON. Units: IOPS; bandwidth in KiB/s; latencies in µs.

Every percentile block of normal output (clat, lat, slat, and the job's
sync block) is kept under its own name in the unit of its own header.
Normal output prints IOPS rounded (a whole number, or three significant
digits with a suffix: "IOPS=42.6k") and bandwidth with three significant
digits ("BW=166MiB/s"), percentiles as whole numbers of their unit
("95.00th=[  227]" usec): IOPS is computed exactly from the I/Os issued and
the run time the same block prints, as fio's JSON computes it, when that
agrees with the printed figure (marked in facts["derived_metrics"]);
bandwidth is the printed figure (facts["precision"] says so). Terse v3 prints every figure in full.
"""

from __future__ import annotations

import re
from typing import Any

from runners.errors import ParseError
from runners.results import line_warning

DIRECTIONS = ("read", "write", "trim", "mixed")
_NUM = r"[0-9]+(?:\.[0-9]+)?"

# ---------------------------------------------------------------- terse v3

# Per direction (read, then write): total KiB, bw KiB/s, iops, runtime ms;
# slat min/max/mean/stdev; clat min/max/mean/stdev; 20 clat percentiles
# ("95.000000%=1", padded with "0%=0"); lat min/max/mean/stdev; bw
# min/max/agg%/mean/stdev. Latencies in µs.
_TERSE_DIRECTION = 41
_TERSE_HEAD = 5  # version; fio version; jobname; groupid; error
_TERSE_DIRECTIONS = ("read", "write")
_TERSE_DISK = 9  # name; read ios; write ios; merges x2; ticks x2; in_queue; util%
# cpu (5), IO depths (7), IO latency distribution in us (10) and ms (12).
_TERSE_TAIL = 5 + 7 + 10 + 12


def is_terse(text: str) -> bool:
    return _TERSE_LINE.search(text) is not None


_TERSE_LINE = re.compile(r"(?m)^[0-9]+;fio-[^;]*;")


def parse_terse(text: str) -> tuple[list[dict], list[dict], dict, list[str], list[str]]:
    """(jobs, directions per job, facts, errors, warnings) of terse output.

    jobs are {"jobname", "groupid", "error"}; a line that is not terse v3 (a
    v2 line, a line cut short) is refused whole: its fields are positional,
    so a missing field would shift every figure after it.
    """
    jobs, directions, warnings, disks = [], [], [], {}
    facts: dict[str, Any] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not _TERSE_LINE.match(line):
            if line.strip() and not line.startswith(("fio:", "note:")):
                warnings.append(line_warning("fio terse output", line))
            continue
        fields = line.split(";")
        if fields[0] != "3":
            raise ParseError(
                f"fio terse version {fields[0]} on line {number}: only version 3 is read "
                "(fio --minimal or --terse-version=3)"
            )
        size = _TERSE_HEAD + len(_TERSE_DIRECTIONS) * _TERSE_DIRECTION + _TERSE_TAIL
        extra = len(fields) - size
        if extra < 0 or (extra % _TERSE_DISK and extra % _TERSE_DISK != 1):
            raise ParseError(
                f"fio terse v3 line {number} has {len(fields)} fields, not {size} plus "
                f"{_TERSE_DISK} per disk (cut short?)"
            )
        facts["version"] = fields[1].removeprefix("fio-")
        try:
            jobs.append({"jobname": fields[2], "groupid": int(fields[3]), "error": int(fields[4])})
            directions.append(_terse_directions(fields))
            disks.update(_terse_disks(fields[size:]))
        except ValueError:
            raise ParseError(f"fio terse v3 line {number}: a field is not a number") from None
    if disks:
        facts["disk_util"] = disks
    return jobs, directions, facts, [], warnings


def _terse_directions(fields: list[str]) -> dict[str, dict[str, float]]:
    found = {}
    for index, direction in enumerate(_TERSE_DIRECTIONS):
        start = _TERSE_HEAD + index * _TERSE_DIRECTION
        stats = _terse_direction(fields[start : start + _TERSE_DIRECTION])
        if stats is not None:
            found[direction] = stats
    return found


def _terse_direction(part: list[str]) -> dict[str, float] | None:
    """The JSON-named figures of one direction's 47 terse fields, or None if
    it did no I/O. Terse latencies are µs."""
    total_kib, bw, iops, runtime_ms = (float(v) for v in part[:4])
    if not total_kib:
        return None
    clat_mean, lat_mean = float(part[10]), float(part[34])
    percentiles = dict(_terse_percentile(v) for v in part[12:32])
    out = {"iops": iops, "bw_kib_s": bw, "runtime_ms": runtime_ms}
    out["lat_mean_us"] = lat_mean
    out["clat_mean_us"] = clat_mean
    for pct in (95, 99):
        if float(pct) in percentiles:
            out[f"clat_p{pct}_us"] = percentiles[float(pct)]
    out["samples"] = float(round(iops * runtime_ms / 1000.0) or 1)
    return out


def _terse_percentile(field: str) -> tuple[float, float]:
    """'95.000000%=1' -> (95.0, 1.0); fio pads unused slots with '0%=0'."""
    pct, _, value = field.partition("%=")
    return float(pct), float(value)


def _terse_disks(fields: list[str]) -> dict[str, float]:
    disks = {}
    for start in range(0, len(fields) - _TERSE_DISK + 1, _TERSE_DISK):
        disk = fields[start : start + _TERSE_DISK]
        disks[disk[0]] = float(disk[8].rstrip("%"))
    return disks


# ---------------------------------------------------------------- normal

_JOB = re.compile(
    r"^(?P<job>.*): \(groupid=(?P<groupid>\d+), jobs=(?P<jobs>\d+)\): err=\s*(?P<err>\d+)"
)
# fio 3.x: "  read: IOPS=42.6k, BW=166MiB/s (174MB/s)(89.3MiB/537msec)"
_DIRECTION_3 = re.compile(
    rf"^\s*(?P<dir>read|write|trim|mixed): IOPS=(?P<iops>{_NUM})(?P<iops_unit>[kKMG]?), "
    rf"BW=(?P<bw>{_NUM})(?P<bw_unit>B|KiB|MiB|GiB|TiB)/s \([^)]*\)\((?P<io>{_NUM})(?P<io_unit>[KMGTP]?i?B)/"
    rf"(?P<runtime>\d+)msec\)(?:; \d+ zone resets)?\s*$"
)
# fio 2.x: "  read : io=3071.7MB, bw=112770KB/s, iops=28192, runt= 27892msec"
_DIRECTION_2 = re.compile(
    rf"^\s*(?P<dir>read|write|trim|mixed)\s*: io=(?P<io>{_NUM})(?P<io_unit>[KMGTP]?B), "
    rf"bw=(?P<bw>{_NUM})(?P<bw_unit>B|KB|MB|GB|TB)/s, iops=(?P<iops>{_NUM})(?P<iops_unit>[kKMG]?), "
    rf"runt=\s*(?P<runtime>\d+)msec\s*$"
)
_LATENCY = re.compile(
    rf"^\s*(?P<kind>slat|clat|lat|sync)\s*\((?P<unit>nsec|usec|msec)\): min=\s*{_NUM}[kKMG]?, "
    rf"max=\s*{_NUM}[kKMG]?, avg=\s*(?P<avg>{_NUM})(?P<avg_unit>[kKMG]?), stdev=\s*{_NUM}[kKMG]?\s*$"
)
# Each latency fio measures prints its own percentile block: clat always,
# lat with lat_percentiles=1, slat with slat_percentiles=1 (async engines),
# and, after the directions, sync (fsync/fdatasync) for the whole job. Each
# block's values are in the unit of its own header.
_PCT_HEADER = re.compile(
    r"^\s*(?P<kind>clat|lat|slat|sync) percentiles \((?P<unit>nsec|usec|msec)\):\s*$"
)
_SYNC_HEADER = re.compile(r"^\s*fsync/fdatasync/sync_file_range:\s*$")
# The figure names of each kind of latency inside its block ("sync" is the
# job's own pseudo-direction, whose one latency is named lat: sync_lat_p99_us).
_LATENCY_NAME = {"clat": "clat", "lat": "lat", "slat": "slat", "sync": "lat"}
_PCT_ROW = re.compile(rf"^\s*\|(?:\s*{_NUM}th=\[\s*[0-9]+\],?)+\s*$")
_PCT = re.compile(rf"({_NUM})th=\[\s*([0-9]+)\]")
_ISSUED = re.compile(r"^\s*issued\s*(?:rwts|rwt|r/w/d|r/w)?\s*:\s*total=(?P<ios>[0-9,rwd=/]+)")
_DISK = re.compile(
    r"^\s*(?P<disk>\S+): ios=\d+/\d+, merge=\d+/\d+, ticks=\d+/\d+, .*util=(?P<util>[0-9.]+)%"
)
# Lines inside a job block that carry no figure the JSON reader keeps:
# per-sample bandwidth/IOPS statistics, latency and depth distributions, CPU.
_KNOWN = re.compile(
    r"^\s*(?:bw \(\s*[KMG]i?B\s*/s\):|iops\s*:|lat \((?:nsec|usec|msec)\)\s*:|cpu\s*:"
    r"|IO depths\s*:|submit\s*:|complete\s*:|latency\s*:|clat prio|"
    r"Run status group \d+ \(all jobs\):|(?:READ|WRITE|TRIM|MIXED): (?:bw|io)="
    r"|Disk stats \(read/write\):|aggr(?:b|egate)?\s*:|clat hist)"
)
_RUN_STATUS = re.compile(r"^Run status group (\d+) \(all jobs\):\s*$")
_VERSION = re.compile(r"(?m)^fio-([0-9][\w.\-]*)\s*$")
_TO_KIB = {"B": 1 / 1024, "KiB": 1.0, "MiB": 1024.0, "GiB": 1048576.0, "TiB": 1073741824.0}
_TO_KIB_2 = {"B": 1 / 1024, "KB": 1.0, "MB": 1024.0, "GB": 1048576.0, "TB": 1073741824.0}
_SUFFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
_TO_US = {"nsec": 0.001, "usec": 1.0, "msec": 1000.0}
_DIRECTION_INDEX = {"read": 0, "write": 1, "trim": 2, "sync": 3}


def is_normal(text: str) -> bool:
    return any(_JOB.match(line) for line in text.splitlines())


def parse_normal(text: str) -> tuple[list[dict], list[dict], dict, list[str], list[str]]:
    """(jobs, directions per job, facts, errors, warnings) of normal output.

    From the first job block on, every line is read, known to carry nothing
    the JSON reader keeps (_KNOWN), blank, or a warning.
    """
    reader = _NormalReader()
    version = _VERSION.search(text)
    if version:
        reader.facts["version"] = version.group(1)
    started = False
    for line in text.splitlines():
        started = started or bool(_JOB.match(line))
        if started:
            reader.line(line)
    return reader.finish()


class _NormalReader:
    """State of one pass over normal output: the job and direction blocks
    being read, and what has been found."""

    def __init__(self) -> None:
        self.jobs: list[dict] = []
        self.directions: list[dict[str, dict]] = []
        self.issued: list[list[float] | None] = []
        self.derived: set[str] = set()
        self.facts: dict[str, Any] = {"precision": _PRECISION}
        self.warnings: list[str] = []
        self.direction: dict | None = None
        self.pct_unit: str | None = None
        self.pct_kind = "clat"
        self.in_disks = False
        self.run_status: set[int] = set()

    def line(self, line: str) -> None:
        if not line.strip():
            self.pct_unit = None
            return
        readers = (self._job, self._direction, self._sync, self._latency, self._percentiles)
        for reader in (*readers, self._other):
            if reader(line):
                return
        self.warnings.append(line_warning("fio normal output", line))

    def _job(self, line: str) -> bool:
        match = _JOB.match(line)
        if not match:
            return False
        self.jobs.append(
            {"jobname": match["job"], "groupid": int(match["groupid"]), "error": int(match["err"])}
        )
        self.directions.append({})
        self.issued.append(None)
        self.direction = self.pct_unit = None
        self.in_disks = False
        return True

    def _direction(self, line: str) -> bool:
        match = _DIRECTION_3.match(line) or _DIRECTION_2.match(line)
        if not match or not self.jobs:
            return False
        fio3 = match.re is _DIRECTION_3
        iops = float(match["iops"]) * _SUFFIX[match["iops_unit"]]
        bw = float(match["bw"]) * (_TO_KIB if fio3 else _TO_KIB_2)[match["bw_unit"]]
        self.direction = {
            "iops": iops,
            "bw_kib_s": round(bw, 3),
            "runtime_ms": float(match["runtime"]),
            "_suffixed": bool(match["iops_unit"]),
            "_io": float(match["io"]),
        }
        self.directions[-1][match["dir"]] = self.direction
        self.pct_unit = None
        return True

    def _sync(self, line: str) -> bool:
        """ "fsync/fdatasync/sync_file_range:" opens the job's sync block, read
        as a direction of its own (named "sync") that holds only latencies."""
        if not _SYNC_HEADER.match(line) or not self.jobs:
            return False
        self.direction = self.directions[-1].setdefault("sync", {})
        self.pct_unit = None
        return True

    def _latency(self, line: str) -> bool:
        match = _LATENCY.match(line)
        if not match or self.direction is None:
            return False
        if (match["kind"] == "sync") != self._in_sync():
            return False  # a sync line outside the sync block, or the reverse
        value = float(match["avg"]) * _SUFFIX[match["avg_unit"]] * _TO_US[match["unit"]]
        if match["kind"] != "slat":
            self.direction[f"{_LATENCY_NAME[match['kind']]}_mean_us"] = round(value, 9)
        return True

    def _percentiles(self, line: str) -> bool:
        header = _PCT_HEADER.match(line)
        if header and self.direction is not None:
            if (header["kind"] == "sync") != self._in_sync():
                return False
            self.pct_unit, self.pct_kind = header["unit"], _LATENCY_NAME[header["kind"]]
            return True
        if self.pct_unit is None or not _PCT_ROW.match(line):
            return False
        for pct, value in _PCT.findall(line):
            if float(pct) in (95.0, 99.0):
                us = float(value) * _TO_US[self.pct_unit]
                self.direction[f"{self.pct_kind}_p{int(float(pct))}_us"] = round(us, 9)
        return True

    def _in_sync(self) -> bool:
        return self.direction is not None and self.direction is self.directions[-1].get("sync")

    def _other(self, line: str) -> bool:
        issued = _ISSUED.match(line)
        if issued and self.jobs:
            self.issued[-1] = _issued_counts(issued["ios"])
            return True
        status = _RUN_STATUS.match(line)
        if status:
            self.run_status.add(int(status.group(1)))
            return True
        if line.strip().startswith("Disk stats"):
            self.in_disks = True
            return True
        disk = _DISK.match(line) if self.in_disks else None
        if disk:
            self.facts.setdefault("disk_util", {})[disk["disk"]] = float(disk["util"])
            return True
        return bool(_KNOWN.match(line)) or line.startswith(("fio:", "note:", "Jobs:"))

    def finish(self) -> tuple[list[dict], list[dict], dict, list[str], list[str]]:
        for directions, issued in zip(self.directions, self.issued):
            for name, stats in directions.items():
                self._finish_direction(name, stats, issued)
        if self.derived:
            self.facts["derived_metrics"] = sorted(self.derived)
        return self.jobs, self.directions, self.facts, self._cut_short(), self.warnings

    def _cut_short(self) -> list[str]:
        """fio ends each job block with its "issued" line and prints a "Run
        status group" block per reporting group after the last job: an output
        without them stopped early (killed, or cut when it was saved)."""
        for jobnum, (job, issued) in enumerate(zip(self.jobs, self.issued)):
            if issued is None and not job["error"]:
                return [
                    f"fio output cut short: job {job['jobname']} #{jobnum} has no 'issued' line"
                ]
        missing = sorted({job["groupid"] for job in self.jobs} - self.run_status)
        if missing and not any(job["error"] for job in self.jobs):
            return [f"fio output cut short: no 'Run status group {missing[0]}' block"]
        return []

    def _finish_direction(self, name: str, stats: dict, issued: list[float] | None) -> None:
        """IOPS printed with a suffix ("42.6k") is computed from the I/Os
        issued over the run time when those agree with it; the I/O count is
        the weight of this job's latencies when jobs are combined."""
        index = _DIRECTION_INDEX.get(name, len(issued or ()))
        ios = issued[index] if issued and index < len(issued) else None
        if name == "sync":  # the 4th "issued rwts" count; 0 when fio did not count them
            stats["samples"] = float(ios or 0.0)
            return
        suffixed = stats.pop("_suffixed")
        stats.pop("_io")
        if ios is not None and stats["runtime_ms"]:
            exact = round(ios * 1000.0 / stats["runtime_ms"], 6)
            if exact != stats["iops"] and _rounds_to(exact, stats["iops"], suffixed):
                stats["iops"] = exact
                self.derived.add(f"{name}_iops")
        stats["samples"] = float(ios if ios else round(stats["iops"] * stats["runtime_ms"] / 1000))


_PRECISION = (
    "fio normal output: bandwidth as printed (three significant digits), latency means "
    "with two decimals, percentiles as whole numbers of the unit fio prints them in"
)


def _issued_counts(text: str) -> list[float]:
    """'22870,9898,0,0' (3.x) or 'r=786347/w=262229/d=0' (2.x) -> counts."""
    parts = re.split(r"[,/]", text)
    return [float(p.split("=")[-1]) for p in parts if p.split("=")[-1].isdigit()]


def _rounds_to(exact: float, printed: float, suffixed: bool) -> bool:
    """True when `exact` as fio shows it is `printed`: three significant
    digits with a suffix ("42.6k"), else a whole number ("6571")."""
    tolerance = printed * 0.0051 if suffixed else 1.0  # fio 2.x truncates, 3.x rounds
    return printed > 0 and abs(exact - printed) <= tolerance
