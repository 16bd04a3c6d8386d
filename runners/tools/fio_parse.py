"""fio's output read: JSON (3.x, also 2.x and json+), which every run
Benchboard starts asks for (runners/tools/fio.py), and, for outputs of runs
made elsewhere, terse v3 and normal text (runners/tools/fio_text.py).

JSON spares the parser fio's human output, whose units change with
magnitude (IOPS=165k, nsec/usec/msec).
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from runners.errors import ParseError
from runners.results import Result, cap_warnings
from runners.tools import fio_text

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
            (fio_text.is_terse, fio_text.parse_terse),
            (fio_text.is_normal, fio_text.parse_normal),
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
