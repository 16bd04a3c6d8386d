"""The host sampler: the fixed shell loop that prints, once a second, what
runners.telemetry parses (the /proc lines and the process listing of
runners.proctree).

Nothing is installed on the host: sh, sed, cat and sleep. It runs through
the cell's executor like any command (locally outside the sandbox, as the
worker's child, so it sees every process; over SSH on the pooled
connection, beside the cell's other commands).
"""

from __future__ import annotations

from runners import proctree
from runners.command import Command
from runners.telemetry import INTERVAL_S, MARK

# Two processes a second (sed, sleep): what a sample costs is mostly starting
# processes, so the shell's own `read` takes /proc/uptime and /proc/loadavg,
# and one sed reads the rest, each line rewritten by the first of these rules
# that fits it (`t` ends a line's rules; a line no rule fits is dropped):
# every /proc/PID/stat line (runners.proctree); the chosen lines of
# /proc/stat (not "intr": alone it can be thousands of numbers), /proc/meminfo
# and /proc/vmstat, kept as they are; /proc/net/dev's interfaces (a name, a
# colon and many numbers: a meminfo line has one); /proc/diskstats (its
# major number padded with spaces). Each interface's link speed (Mb/s; -1
# when the driver has none, as for lo or a virtual NIC, or the link is
# down) is read once and printed in every sample.
_KEPT = (
    "cpu",
    "ctxt ",
    "procs_",
    "MemTotal:",
    "MemAvailable:",
    "Cached:",
    "Dirty:",
    "SwapTotal:",
    "SwapFree:",
    "pswpin ",
    "pswpout ",
)
_RULES = (
    proctree.PROC_RULE,
    *(f"s/^{line}/&/p" for line in _KEPT),
    "s/^ *\\([^ :]*\\): *\\([0-9]\\{1,\\} \\{1,\\}[0-9]\\)/net \\1 \\2/p",
    "s/^ \\{1,\\}[0-9]/disk &/p",
)
_FILES = "/proc/stat /proc/meminfo /proc/vmstat /proc/diskstats /proc/net/dev"
_SCRIPT = (
    "speeds=$(for d in /sys/class/net/*; do "
    'echo "speed ${d##*/} $(cat $d/speed 2>/dev/null || echo -1)"; done); '
    "while :; do "
    f'read -r up < /proc/uptime; echo "{MARK} $up"; '
    'echo "$speeds"; '
    'read -r load < /proc/loadavg; echo "load $load"; '
    f"echo {proctree.SELF} $$; "
    "sed -n " + " -e t ".join(f"-e '{rule}'" for rule in _RULES) + " "
    f"{_FILES} {proctree.PROC_FILES} 2>/dev/null; "
    f"echo {MARK} end; sleep {INTERVAL_S}; done"
)


def sampler_command() -> Command:
    """The background command that prints one sample a second until stopped.

    Outside the sandbox on the worker's own machine: it is this fixed
    script, not a plan's tool, and a sandbox's pid namespace would hide the
    other processes whose CPU it accounts (runners.proctree)."""
    return Command(argv=["sh", "-c", _SCRIPT], tool="telemetry", package="coreutils", sandbox=False)
