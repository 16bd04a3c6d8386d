"""The environment of a cell: every setting of the machines and servers it used.

A figure changes for a reason; most reasons are a setting somewhere. Before the
measure a cell reads, once per machine per run, what could explain a change:

- host (each machine the cell uses, through its executor, locally or over SSH):
  kernel and its command line, CPU model and microcode, online CPUs, frequency
  governor and boost, SMT, NUMA nodes, transparent huge pages, memory and swap,
  a chosen list of sysctls, each block device's scheduler, rotational flag,
  queue depth and read-ahead, each NIC's speed and MTU, the filesystem and mount
  options of the directories the cell names, virtualization and container;
- database: every global variable (MySQL/MariaDB `SHOW GLOBAL VARIABLES`,
  PostgreSQL `pg_settings` with each value's source, Redis `CONFIG GET *` and
  `INFO server`), version, storage engines, plugins, extensions;
- cloud: what the plan says of the instance (class, storage, IOPS, region);
- tools: the version of each tool and client.

Everything is read with one command per source (`grep -Hs` over a list of
files, one client query), so a machine costs a few round trips, off the
measured window. Values that change on their own (uptime, GTID positions) are
left out, so an unchanged machine gives the same snapshot every night; values
that are secrets are redacted by rule (redact()) before anything is kept.
snapshot_hash() names a snapshot by its content: the app stores each distinct
snapshot once. diff() lists what differs between two snapshots, by group.
"""

from __future__ import annotations

import hashlib
import json
import re

from runners import engines
from runners.command import Command, Endpoint
from runners.errors import RunnerError

# -- host -------------------------------------------------------------------------

# (key, file): read as they are, one value per file (the first line, or all
# lines joined by spaces for a file of several).
HOST_FILES = (
    ("kernel", "/proc/sys/kernel/osrelease"),
    ("kernel_cmdline", "/proc/cmdline"),
    ("cpus_online", "/sys/devices/system/cpu/online"),
    ("cpu_governor", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
    ("cpu_boost", "/sys/devices/system/cpu/cpufreq/boost"),
    ("intel_no_turbo", "/sys/devices/system/cpu/intel_pstate/no_turbo"),
    ("smt_control", "/sys/devices/system/cpu/smt/control"),
    ("smt_active", "/sys/devices/system/cpu/smt/active"),
    ("numa_nodes", "/sys/devices/system/node/online"),
    ("thp_enabled", "/sys/kernel/mm/transparent_hugepage/enabled"),
    ("thp_defrag", "/sys/kernel/mm/transparent_hugepage/defrag"),
    ("dmi_vendor", "/sys/class/dmi/id/sys_vendor"),
    ("dmi_product", "/sys/class/dmi/id/product_name"),
    ("hypervisor", "/sys/hypervisor/type"),
)
# The sysctls that move database and storage figures (vm.*, net.core.*, the scheduler's).
SYSCTLS = (
    "vm.swappiness",
    "vm.dirty_ratio",
    "vm.dirty_background_ratio",
    "vm.dirty_expire_centisecs",
    "vm.overcommit_memory",
    "vm.max_map_count",
    "vm.nr_hugepages",
    "vm.zone_reclaim_mode",
    "vm.min_free_kbytes",
    "net.core.somaxconn",
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.netdev_max_backlog",
    "net.core.default_qdisc",
    "kernel.sched_autogroup_enabled",
    "kernel.numa_balancing",
    "kernel.perf_event_paranoid",
)
# Per block device (/sys/block/<dev>/queue/<file>) and per NIC (/sys/class/net/<nic>/<file>).
BLOCK_FILES = ("scheduler", "rotational", "nr_requests", "read_ahead_kb")
NIC_FILES = ("speed", "mtu")
# Container markers, listed by `ls` (present or not).
CONTAINER_MARKERS = ("/.dockerenv", "/run/.containerenv")
VIRTUAL_NET = "/sys/devices/virtual/net"
_SKIPPED_DEVICES = re.compile(r"^(loop|ram|zram|dm-|sr|nbd)\d*")


def _grep_command(paths: list[str]) -> Command:
    """grep -Hs '' FILES: every line of every readable file, as "path:line".

    Outside the sandbox on the worker's own machine, like the host sampler:
    the files are fixed /proc and /sys paths (no plan names one), and inside
    the sandbox /proc/mounts would be the cell's own mount namespace (its
    scratch file system on /tmp), not the machine's."""
    return Command(
        argv=["grep", "-Hs", "", "--", *paths], tool="grep", package="grep", sandbox=False
    )


def parse_grep(text: str) -> dict[str, str]:
    """{path: content} from `grep -H` output ("/proc/cmdline:BOOT_IMAGE=...");
    a file of several lines is joined by spaces."""
    lines: dict[str, list[str]] = {}
    for line in text.splitlines():
        path, sep, value = line.partition(":")
        if sep and path.startswith("/"):
            lines.setdefault(path, []).append(value.strip())
    return {path: " ".join(v for v in values if v) for path, values in lines.items()}


def parse_ls(text: str) -> tuple[set[str], dict[str, list[str]]]:
    """(files named on the command line that exist, {directory: entries}) from
    `ls -1 FILE... DIR...`: the files come first, then "DIR:" sections."""
    files, dirs, current = set(), {}, None
    for line in text.splitlines():
        if line.endswith(":") and line.startswith("/"):
            current = dirs.setdefault(line[:-1], [])
        elif line.strip() and current is not None:
            current.append(line.strip())
        elif line.strip():
            files.add(line.strip())
    return files, dirs


def parse_cpuinfo_extra(text: str) -> dict:
    """CPU model and microcode from /proc/cpuinfo's first processor."""
    out = {}
    for field, key in (("model name", "cpu_model"), ("microcode", "microcode")):
        match = re.search(rf"^{field}\s*:\s*(.+)$", text, re.MULTILINE)
        if match:
            out[key] = match.group(1).strip()
    return out


def parse_meminfo_all(text: str) -> dict:
    """MemTotal, SwapTotal and huge page size in KiB from /proc/meminfo."""
    out = {}
    for field, key in (
        ("MemTotal", "memory_kib"),
        ("SwapTotal", "swap_kib"),
        ("Hugepagesize", "hugepage_kib"),
    ):
        match = re.search(rf"^{field}:\s*(\d+)", text, re.MULTILINE)
        if match:
            out[key] = int(match.group(1))
    return out


def mount_of(mounts: str, path: str) -> dict | None:
    """The /proc/mounts entry holding path (the longest mount point that is a
    prefix of it): {"mount", "device", "fstype", "options"}."""
    best = None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        point = fields[1].replace("\\040", " ")
        inside = path == point or path.startswith(point.rstrip("/") + "/")
        if inside and (best is None or len(point) > len(best["mount"])):
            best = {"mount": point, "device": fields[0], "fstype": fields[2], "options": fields[3]}
    return best


def _run_text(executor, command: Command) -> str:
    """A reading command's stdout; "" when it could not run at all."""
    try:
        return executor.run(command, timeout=30).stdout
    except RunnerError:
        return ""


def read_host(executor, paths: tuple[str, ...] = ()) -> dict:
    """The host settings of the executor's machine (module docstring), with the
    mount of each of `paths` (fio's directory, a database's data directory).
    Three commands: ls of the device lists, one grep of every file, nothing
    else; a file the machine does not have is left out."""
    listing = Command(
        argv=["ls", "-1", *CONTAINER_MARKERS, "/sys/block", "/sys/class/net", VIRTUAL_NET],
        tool="ls",
        sandbox=False,  # fixed paths; the machine's, not the sandbox's view
    )
    present, dirs = parse_ls(_run_text(executor, listing))
    devices = [d for d in dirs.get("/sys/block", []) if not _SKIPPED_DEVICES.match(d)]
    # Virtual interfaces (veth pairs, bridges, tunnels) come and go with
    # containers and namespaces: only the machine's own NICs are its setting.
    virtual = set(dirs.get(VIRTUAL_NET, []))
    nics = [n for n in dirs.get("/sys/class/net", []) if n not in virtual]
    sysctl_path = {name: "/proc/sys/" + name.replace(".", "/") for name in SYSCTLS}
    files = [path for _, path in HOST_FILES] + list(sysctl_path.values())
    files += ["/proc/cpuinfo", "/proc/meminfo", "/proc/mounts", "/etc/os-release"]
    files += [f"/sys/block/{d}/queue/{f}" for d in devices for f in BLOCK_FILES]
    files += [f"/sys/class/net/{n}/{f}" for n in nics for f in NIC_FILES]
    raw = _run_raw_files(executor, files)
    host = {key: raw[path] for key, path in HOST_FILES if raw.get(path)}
    host.update(parse_cpuinfo_extra(raw.get("/proc/cpuinfo", "")))
    host.update(parse_meminfo_all(raw.get("/proc/meminfo", "")))
    match = re.search(r'PRETTY_NAME="?([^"\n]*)', raw.get("/etc/os-release", ""))
    if match:
        host["os"] = match.group(1)
    host["sysctl"] = {n: raw[p] for n, p in sysctl_path.items() if p in raw}
    host["block"] = {
        d: {
            f: raw[f"/sys/block/{d}/queue/{f}"]
            for f in BLOCK_FILES
            if f"/sys/block/{d}/queue/{f}" in raw
        }
        for d in devices
    }
    host["nic"] = {
        n: {
            f: raw[f"/sys/class/net/{n}/{f}"] for f in NIC_FILES if f"/sys/class/net/{n}/{f}" in raw
        }
        for n in nics
    }
    host["container"] = sorted(present & set(CONTAINER_MARKERS))
    host["mounts"] = {p: m for p in paths if (m := mount_of(raw.get("/proc/mounts", ""), p))}
    return host


def _run_raw_files(executor, files: list[str]) -> dict[str, str]:
    """{path: content} of the readable files; /proc/cpuinfo, meminfo and mounts
    keep their lines (joined by newlines), the rest are one value each."""
    text = _run_text(executor, _grep_command(files))
    keep_lines = ("/proc/cpuinfo", "/proc/meminfo", "/proc/mounts", "/etc/os-release")
    multi: dict[str, list[str]] = {}
    for line in text.splitlines():
        path, sep, value = line.partition(":")
        if sep and path in keep_lines:
            multi.setdefault(path, []).append(value)
    out = parse_grep(text)
    out.update({path: "\n".join(lines) for path, lines in multi.items()})
    return out


# -- database ---------------------------------------------------------------------


def read_database(executor, endpoint: Endpoint) -> dict:
    """Every global setting of the endpoint's server, its version, engines,
    plugins or extensions (its engine's read_environment, runners/engines/).
    {} for kinds without a server; {"error": ...} when the server would not
    tell (the cell goes on: this is context)."""
    engine = engines.find(endpoint.kind)
    return engine.read_environment(executor, endpoint, _read) if engine is not None else {}


def _read(executor, command: Command) -> str:
    try:
        execution = executor.run(command, timeout=30)
    finally:
        for upload in command.uploads:
            executor.remove(f"{executor.workdir}/{upload.name}")
    if execution.exit_code != 0:
        message = (execution.stderr.strip().splitlines() or [f"exit {execution.exit_code}"])[-1]
        raise RunnerError(f"{command.tool}: {message}")
    return execution.stdout


# -- cloud ------------------------------------------------------------------------

CLOUD_KEYS = (
    "provider",
    "instance_class",
    "instance_type",
    "engine",
    "engine_version",
    "storage_type",
    "allocated_storage",
    "iops",
    "storage_throughput",
    "region",
    "availability_zone",
    "multi_az",
)


def cloud_of(provision: dict | None, cloud_instance: dict | None) -> dict:
    """What the plan says of a cloud machine (its provision block, or the
    existing resource it names): the keys of CLOUD_KEYS that are set."""
    out = {}
    for source in (cloud_instance or {}, provision or {}):
        for key in CLOUD_KEYS:
            if source.get(key) not in (None, "") and key not in out:
                out[key] = source[key]
    return out


# -- redaction, hashing, diffs ----------------------------------------------------

REDACTED = "[redacted]"
# A name that says it holds a secret: the value is replaced.
SECRET_NAME = re.compile(
    r"(pass(word|wd)?$|password|secret|token|credential|private_key|api_key|access_key"
    r"|auth$|requirepass|masterauth|_key_id$|^ssl_key$|encryption_key)",
    re.IGNORECASE,
)
# ...except settings about secrets, which hold none (password_encryption, password lifetimes).
NOT_SECRET = re.compile(
    r"(encryption$|lifetime|interval|length|policy|validation|validate|expired|history|reuse"
    r"|require_current|old_passwords|_check$)",
    re.IGNORECASE,
)
# user:password@ inside a URL or a conninfo's password=...: the secret part is replaced.
URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@\s]+:)[^@\s]+(?=@)", re.IGNORECASE)
CONNINFO_PASSWORD = re.compile(r"(?P<head>\bpassword\s*=\s*)('[^']*'|\S+)", re.IGNORECASE)


def redact(value, name: str = ""):
    """value with every secret replaced by REDACTED, recursively: a value whose
    key names a secret, passwords inside URLs and conninfo strings."""
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, name) for v in value]
    secret_name = name and SECRET_NAME.search(name) and not NOT_SECRET.search(name)
    if secret_name and value not in ("", None, "OFF", "0"):
        return REDACTED
    if isinstance(value, str):
        value = URL_PASSWORD.sub(lambda m: m.group("head") + REDACTED, value)
        return CONNINFO_PASSWORD.sub(lambda m: m.group("head") + REDACTED, value)
    return value


def canonical(snapshot: dict) -> bytes:
    """The snapshot as canonical JSON bytes (sorted keys, no spaces)."""
    return json.dumps(snapshot, sort_keys=True, separators=(",", ":"), default=str).encode()


def snapshot_hash(snapshot: dict) -> str:
    """sha256 of the canonical JSON: equal content, equal name."""
    return hashlib.sha256(canonical(snapshot)).hexdigest()


GROUPS = ("database", "host", "cloud", "tools", "plan")


def flatten(value, prefix: str = "") -> dict[str, object]:
    """{"a.b.c": leaf} of nested dicts; lists stay leaves."""
    if not isinstance(value, dict):
        return {prefix: value}
    out = {}
    for key, inner in value.items():
        out.update(flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
    return out


def diff(before: dict, after: dict) -> dict[str, list[dict]]:
    """What differs between two snapshots, by group (GROUPS order):
    {group: [{"key", "before", "after"}]} with only the keys that differ,
    sorted by key; None stands for a key one side does not have."""
    out = {}
    for group in GROUPS:
        a, b = flatten(before.get(group) or {}), flatten(after.get(group) or {})
        changed = [
            {"key": key, "before": a.get(key), "after": b.get(key)}
            for key in sorted(set(a) | set(b))
            if a.get(key) != b.get(key)
        ]
        if changed:
            out[group] = changed
    return out


def count_keys(snapshot: dict) -> dict[str, int]:
    """How many settings each group holds (the "all" toggle's counts)."""
    return {group: len(flatten(snapshot.get(group) or {})) for group in GROUPS if group in snapshot}
