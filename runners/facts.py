"""Facts about the machines and databases a cell ran on, read through an executor.

host_facts(): CPU count and model, memory, kernel, OS, tool versions — read
from /proc and /etc/os-release, so the same code works locally and over SSH.
db_facts(): server version and the variables that explain a result (each
engine's FACTS_QUERY, runners/engines/), read with the DB's own client and
credentials in 0600 files, never in argv.
CpuSampler: the client's CPU utilisation over the measured phase, from
/proc/stat, to flag client-bound cells.
"""

from __future__ import annotations

import re

from runners import engines
from runners.command import Command, Endpoint
from runners.engines.base import int_or_text
from runners.errors import ParseError, RunnerError

# A cell whose client CPU was busier than this is flagged client-bound: the
# benchmark measured the client, not the target.
CLIENT_BOUND_PCT = 90.0


# -- host -----------------------------------------------------------------------


def parse_cpuinfo(text: str) -> tuple[int, str]:
    """(number of processors, model name) from /proc/cpuinfo.

    Reads lines such as:
        processor	: 0
        model name	: Intel(R) Xeon(R) CPU @ 2.20GHz
    ARM kernels may have no "model name"; "Hardware"/"CPU part" stand in then.
    """
    cpus = len(re.findall(r"^processor\s*:", text, re.MULTILINE))
    for field in ("model name", "Hardware", "cpu model", "CPU part"):
        match = re.search(rf"^{field}\s*:\s*(.+)$", text, re.MULTILINE)
        if match:
            return cpus, match.group(1).strip()
    return cpus, ""


def parse_meminfo(text: str) -> int:
    """MemTotal in KiB from /proc/meminfo ("MemTotal:        8131720 kB")."""
    match = re.search(r"^MemTotal:\s*(\d+)\s*kB", text, re.MULTILINE)
    return int(match.group(1)) if match else 0


def parse_os_release(text: str) -> str:
    """PRETTY_NAME from /etc/os-release ('PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"')."""
    match = re.search(r"^PRETTY_NAME=(.*)$", text, re.MULTILINE)
    return match.group(1).strip().strip("\"'") if match else ""


def _read_text(executor, path: str) -> str:
    try:
        return executor.read_file(path).decode(errors="replace")
    except RunnerError:
        return ""


def tool_version(executor, name: str) -> str | None:
    """The version of tool `name` on the executor's host, or None when unknown.

    Uses the tool module's version_command()/parse_version(); a tool without
    a module, a missing binary or unreadable output gives None.
    """
    try:
        from runners.tools import get_tool

        tool = get_tool(name)
        command = Command(
            argv=tool.version_command(), tool=name, package=getattr(tool, "PACKAGE", "")
        )
        execution = executor.run(command, timeout=30)
        return tool.parse_version(execution.output)
    except (ImportError, KeyError, AttributeError, ParseError, RunnerError, ValueError):
        return None


def host_facts(executor, tools: list[str] | tuple[str, ...] = ()) -> dict:
    """Facts about the executor's host.

    Returns {"cpus", "cpu_model", "memory_kib", "kernel", "os",
    "tool_versions": {tool: version}} (tools whose version could not be read
    are left out).
    """
    cpus, model = parse_cpuinfo(_read_text(executor, "/proc/cpuinfo"))
    versions = {name: tool_version(executor, name) for name in tools}
    return {
        "cpus": cpus,
        "cpu_model": model,
        "memory_kib": parse_meminfo(_read_text(executor, "/proc/meminfo")),
        "kernel": _read_text(executor, "/proc/sys/kernel/osrelease").strip(),
        "os": parse_os_release(_read_text(executor, "/etc/os-release")),
        "tool_versions": {name: v for name, v in versions.items() if v},
    }


# -- databases --------------------------------------------------------------------

# Words in a client's error output that mean the credentials are wrong: retrying
# cannot help.
AUTH_FAILURES = ("Access denied", "password authentication failed", "no password supplied")


def db_facts(executor, endpoint: Endpoint) -> dict:
    """Server version and key variables of an endpoint whose engine has a
    facts query ({} for other kinds): {name: value} of the engine's FACTS
    (server_version, innodb_buffer_pool_size or shared_buffers, max_connections).
    The credential file is removed afterwards. Raises RunnerError (permanent
    for refused credentials) with the client's message.
    """
    engine = engines.find(endpoint.kind)
    if engine is None or not hasattr(engine, "FACTS_QUERY"):
        return {}
    command, names = engine.client_command(endpoint), engine.FACTS
    try:
        execution = executor.run(command, timeout=30)
    finally:
        executor.remove(f"{executor.workdir}/{command.uploads[0].name}")
    row = execution.stdout.strip().splitlines()[:1]
    values = row[0].split("\t") if row else []
    if execution.exit_code != 0 or len(values) != len(names):
        message = execution.stderr.strip().splitlines()[-1:] or [f"exit code {execution.exit_code}"]
        permanent = any(word in execution.stderr for word in AUTH_FAILURES)
        raise RunnerError(
            f"{command.tool} on {endpoint.where}: {message[0]}",
            permanent=permanent,
            output=execution.output,
        )
    return {name: int_or_text(value) for name, value in zip(names, values)}


# -- client CPU ---------------------------------------------------------------------


def parse_proc_stat(text: str) -> tuple[int, int]:
    """(busy, total) jiffies from the aggregate "cpu" line of /proc/stat.

    "cpu  21707 0 8722 90304 1403 0 449 2470 0 0": user nice system idle
    iowait irq softirq steal guest guest_nice. idle and iowait are not busy;
    guest time is already counted in user, so it is left out of the total.
    """
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            numbers = [int(n) for n in fields[1:9]]
            total = sum(numbers)
            return total - numbers[3] - numbers[4], total
    raise ParseError("no aggregate cpu line in /proc/stat")


def client_bound(busy_pct: float | None) -> bool:
    """True when the client's CPU was the bottleneck."""
    return busy_pct is not None and busy_pct > CLIENT_BOUND_PCT


class CpuSampler:
    """Whole-machine CPU utilisation between start() and stop(), via /proc/stat."""

    def __init__(self) -> None:
        self._executor = None
        self._first: tuple[int, int] | None = None

    def start(self, executor) -> None:
        """Take the first sample on executor's host."""
        self._executor = executor
        self._first = parse_proc_stat(executor.read_file("/proc/stat").decode())

    def stop(self) -> dict:
        """Return {"client_cpu_busy_pct": percent busy since start()}."""
        busy, total = parse_proc_stat(self._executor.read_file("/proc/stat").decode())
        first_busy, first_total = self._first
        elapsed = total - first_total
        pct = 100.0 * (busy - first_busy) / elapsed if elapsed > 0 else 0.0
        return {"client_cpu_busy_pct": round(pct, 1)}
