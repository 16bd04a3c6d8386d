"""CPU profiles of one cell's measure: `perf record -F 99 -g` attached to
the database server (found by its listening port) and to the benchmark
tool, on each machine where perf is installed and allowed.

What may be profiled (docs/telemetry.md, "CPU profiles"):
* on the worker host, only when the operator allows it (CellContext.profile_local,
  BENCHBOARD_PROFILE_LOCAL), and then only the target's own server process
  and the cell's own tool process and its descendants;
* over SSH, the team's own host: whatever its login may profile.

perf is the operator's command (Command.sandbox False: a sandbox's pid
namespace would hide the processes it attaches to). Nothing from a plan
reaches its argv but integers checked here: pids and the frequency.
A machine where perf is missing or refused gets a warning on the cell that
says which and how to allow it (`refusal`); the cell never fails for it.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from runners.command import WORKDIR, Command
from runners.errors import RunnerError
from runners.profiles import fold

FREQUENCY_HZ = 99  # not a multiple of common timer ticks: no lockstep with periodic work
SCRIPT_FIELDS = "comm,pid,tid,ip,sym,symoff,dso"
ATTACH_WAIT_S = 1.0  # how long the tool's own process may take to appear under its wrapper
PROBE = (
    "command -v perf >/dev/null 2>&1 && echo perf=yes || echo perf=no; "
    'echo "paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null)"; '
    'echo "user=$(id -un)"'
)
PACKAGE = "linux-perf"
_PID = re.compile(r"pid=(\d+)")
_ALLOW = (
    "allow it with `sysctl -w kernel.perf_event_paranoid=1` (user-space profiles of the "
    "login's own processes; -1 for all), or give perf CAP_PERFMON and CAP_SYS_PTRACE"
)
# (a pattern in perf's error output, what it means): the first that matches
# names the refusal; %(host)s, %(user)s, %(paranoid)s are filled in.
REFUSALS: tuple[tuple[re.Pattern, str], ...] = (
    (
        re.compile(r"perf_event_paranoid|performance monitoring .* is limited", re.I | re.S),
        "perf is not allowed for %(user)s on %(host)s (kernel.perf_event_paranoid is "
        "%(paranoid)s): " + _ALLOW,
    ),
    (
        re.compile(r"No permission|Permission denied|Operation not permitted", re.I),
        "perf may not attach to that process as %(user)s on %(host)s (another user's "
        "process): run the server as the login's user, or " + _ALLOW,
    ),
    (
        re.compile(r"not supported|No such device|returned with 95|returned with 19", re.I),
        "%(host)s offers no perf events (a VM without a virtual PMU or perf support, or a "
        "container whose seccomp profile forbids perf_event_open): enable them in the "
        "hypervisor or container runtime",
    ),
    (
        re.compile(r"No such process|Couldn't find|not found", re.I),
        "the process ended before perf attached on %(host)s",
    ),
)


@dataclass
class Profile:
    """One process's profile: role ("server" or "tool"), where, what, its stacks."""

    role: str
    host: str
    process: str
    pids: list[int]
    stacks: Counter = field(default_factory=Counter)

    @property
    def samples(self) -> int:
        return sum(self.stacks.values())


def refusal(output: str, host: str, user: str = "?", paranoid: str = "?") -> str:
    """The warning for perf's error output (see REFUSALS)."""
    values = {"host": host, "user": user or "?", "paranoid": paranoid or "?"}
    if not output.strip():
        return f"no samples on {host}: the process was not on a CPU while perf watched it"
    for pattern, message in REFUSALS:
        if pattern.search(output):
            return message % values
    first = next((line.strip() for line in output.splitlines() if line.strip()), "no output")
    return f"perf failed on {host}: {first[:200]}"


def listener_pids(ss_output: str, port: int) -> list[int]:
    """The pids listening on TCP port in `ss -ltnpH` output:

    LISTEN 0 80 127.0.0.1:3306 0.0.0.0:* users:(("mariadbd",pid=3787,fd=21))
    """
    pids: set[int] = set()
    for line in ss_output.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[3].rsplit(":", 1)[-1] == str(port):
            pids.update(int(p) for p in _PID.findall(line))
    return sorted(pids)


def process_table(ps_output: str) -> dict[int, tuple[int, str]]:
    """{pid: (ppid, comm)} of `ps -e -o pid=,ppid=,comm=` output."""
    table = {}
    for line in ps_output.splitlines():
        fields = line.split(None, 2)
        if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit():
            table[int(fields[0])] = (int(fields[1]), fields[2].strip() if len(fields) > 2 else "")
    return table


def descendants(table: dict[int, tuple[int, str]], root: int) -> list[int]:
    """root and every process below it in table, root first."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root] if root in table else []
    while todo:
        pid = todo.pop(0)
        found.append(pid)
        todo.extend(sorted(children.get(pid, [])))
    return found


def record_command(pids: list[int], name: str) -> Command:
    """perf record of pids into WORKDIR/name (pids checked: positive integers)."""
    clean = [int(p) for p in pids]
    if not clean or any(p <= 0 for p in clean) or not re.fullmatch(r"[a-z0-9.-]+", name):
        raise ValueError("perf attaches to positive pids only, into a plain file name")
    argv = ["perf", "record", "-q", "-F", str(int(FREQUENCY_HZ)), "-g"]
    argv += ["-p", ",".join(map(str, clean)), "-o", f"{WORKDIR}/{name}"]
    return Command(argv=argv, tool="perf", package=PACKAGE, sandbox=False)


def script_command(name: str) -> Command:
    argv = ["perf", "script", "-F", SCRIPT_FIELDS, "-i", f"{WORKDIR}/{name}"]
    return Command(argv=argv, tool="perf", package=PACKAGE, sandbox=False)


def _plain(argv: list[str], package: str) -> Command:
    return Command(argv=argv, tool=argv[0], package=package, sandbox=False)


class CellProfiler:
    """start_server() before the measure, attach_tool(bg) when the
    tool has started, stop() after it: then profiles and warnings."""

    def __init__(self, machines: dict[str, object | None]):
        """machines: role -> the executor of the machine it runs on ("server",
        "tool"), or None when profiling there is not allowed."""
        self.machines = machines
        self.running: list[tuple[Profile, object, object, str]] = []
        self.profiles: list[Profile] = []
        self.warnings: list[str] = []
        self._probed: dict[int, dict | None] = {}
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        # A local process dies with the thread that started it (the executor's
        # parent-death signal): the thread that attached perf to the tool waits
        # for this event, set once every perf has been stopped.
        self._stopped = threading.Event()

    def _probe(self, executor) -> dict | None:
        """{"user", "paranoid"} of a machine with perf; None (and a warning) without."""
        key = id(executor)
        if key not in self._probed:
            try:
                out = executor.run(_plain(["sh", "-c", PROBE], "dash"), timeout=30).stdout
            except RunnerError as exc:
                self.warnings.append(f"profile: {exc.message}")
                out = ""
            facts = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
            if out and facts.get("perf") != "yes":
                self.warnings.append(
                    f"profile: perf is not installed on {executor.host}: install the "
                    f"Debian package '{PACKAGE}' (or the distribution's perf) for CPU profiles"
                )
            self._probed[key] = facts if facts.get("perf") == "yes" else None
        return self._probed[key]

    def start_server(self, port: int | None) -> None:
        """Attach to the process listening on port on the server's machine."""
        executor = self.machines.get("server")
        if executor is None or not port or self._probe(executor) is None:
            return
        try:
            out = executor.run(_plain(["ss", "-ltnpH"], "iproute2"), timeout=30).stdout
        except RunnerError as exc:
            self.warnings.append(f"profile server: {exc.message}")
            return
        pids = listener_pids(out, int(port))
        if not pids:
            self.warnings.append(
                f"profile server: no process listening on port {int(port)} is visible "
                f"on {executor.host} (ss -p shows another user's processes to root only)"
            )
            return
        self._attach("server", executor, pids)

    def attach_tool(self, background) -> None:
        """Called as the tool starts (Executor.run's on_start): attach to it
        and its descendants, in a thread (the measure is not held back)."""
        executor = self.machines.get("tool")
        if executor is None or self._probe(executor) is None:
            return
        thread = threading.Thread(target=self._attach_tool, args=(executor, background))
        thread.start()
        self._threads.append(thread)

    def _attach_tool(self, executor, background) -> None:
        binary = background.command.argv[0].rsplit("/", 1)[-1]
        deadline = time.monotonic() + ATTACH_WAIT_S
        pids: list[int] = []
        while not background.done.is_set():
            root = executor.process_root(background)
            table = self._processes(executor)
            pids = descendants(table, root) if root else []
            if any(table[p][1] == binary[:15] for p in pids) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if pids and not background.done.is_set():
            self._attach("tool", executor, pids, binary)
            self._stopped.wait()

    def _processes(self, executor) -> dict:
        try:
            command = _plain(["ps", "-e", "-o", "pid=,ppid=,comm="], "procps")
            return process_table(executor.run(command, timeout=30).stdout)
        except RunnerError:
            return {}

    def _attach(self, role: str, executor, pids: list[int], process: str = "") -> None:
        name = f"profile-{role}.data"
        profile = Profile(role, executor.host, process, pids)
        with self._lock:  # never after stop() took the list: that perf would be lost
            if self._stopped.is_set():
                return
            try:
                background = executor.start(record_command(pids, name))
            except RunnerError as exc:
                self.warnings.append(f"profile {role}: {exc.message}")
                return
            self.running.append((profile, executor, background, name))

    def stop(self) -> None:
        """Stop every perf (it writes its file on TERM), fold what it recorded."""
        with self._lock:
            running, self.running = self.running, []
            self._stopped.set()
        stopped = [(entry, self._stop_one(entry)) for entry in running]
        for thread in self._threads:
            thread.join()
        for (profile, executor, _, name), recorded in stopped:
            if recorded is not None:
                self._collect(profile, executor, recorded, name)

    def _stop_one(self, entry):
        profile, executor, background, name = entry
        try:
            return executor.stop(background, grace=10.0)
        except RunnerError as exc:
            self.warnings.append(f"profile {profile.role}: {exc.message}")
            _remove(executor, name)
            return None

    def _collect(self, profile: Profile, executor, recorded, name: str) -> None:
        facts = self._probed.get(id(executor)) or {}
        try:
            script = executor.run(script_command(name), timeout=300)
        except RunnerError as exc:
            self.warnings.append(f"profile {profile.role}: {exc.message}")
            return
        finally:
            _remove(executor, name)
        profile.stacks = fold(script.stdout)
        if not profile.stacks:
            reason = refusal(
                recorded.output + script.stderr,
                executor.host,
                facts.get("user", "?"),
                facts.get("paranoid", "?"),
            )
            self.warnings.append(f"profile {profile.role}: {reason}")
            return
        if not profile.process:
            profile.process = profile.stacks.most_common(1)[0][0].split(";", 1)[0]
        self.profiles.append(profile)


def _remove(executor, name: str) -> None:
    try:
        executor.remove(f"{executor.workdir}/{name}")
    except RunnerError:
        pass
