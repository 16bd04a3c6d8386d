"""The shell scripts SSHExecutor runs on the remote host, and how it calls them.

Every value reaches the scripts as a positional argument of `sh -c SCRIPT`
(the whole line built with shlex.join), so no argv element is ever parsed by
a shell. The scripts are POSIX sh (dash on Debian).

Detaching (why a dropped connection or a cancel never leaves a tool running):

* The tool runs under `setsid`, so it leads its own session and process
  group; the group id is written to R.pid. `timeout -k 10 T` wraps it as a
  backstop: even if everything else fails, the tool dies T seconds (+10 for
  KILL) after it started.
* Output goes to files R.out / R.err; two `tail -f --pid` stream them back
  over the channel's stdout / stderr while the whole output stays on disk
  until the run ends. The tool itself never writes into the SSH channel,
  so a dead channel cannot block it or SIGPIPE it.
* A watchdog holds the channel's stdin (fd 3) and blocks on it. When the SSH
  session goes away (connection dropped, sshd killed, client gone) stdin
  reaches EOF and the watchdog kills the tool's group and session: TERM, then
  KILL after the grace period. After a normal end R.rc exists and the
  watchdog does nothing.
* cancel() opens a second channel and runs `killgroup` with the same pid file.

Client clock: the script reads the host's own clock (`date +%s.%N`) right
before it starts the tool and right after the tool ends, and prints both on
the channel's stderr as one marker line after the tool's output
(CLOCK_MARKER); the executor strips it from the output. Several clients'
start times are those stamps, not the worker's (which come before a slow
login, a busy sshd, a shell's rc file).
"""

from __future__ import annotations

import math
import shlex

MISSING_MARKER = "@@benchboard: command not found@@"
# "@@benchboard: clock <start> <end>@@": the host's clock around the tool.
CLOCK_MARKER = "@@benchboard: clock"

# killgroup PREFIX GRACE_TENTHS: kill the session whose id is in PREFIX.pid,
# unless the run already ended (PREFIX.rc). dash's kill knows no "--", so the
# negative pid (the group) directly follows the signal name.
KILLGROUP = r"""
killgroup() {
  [ -e "$1.rc" ] && return 0
  i=0
  while [ ! -s "$1.pid" ] && [ "$i" -lt 50 ] && [ ! -e "$1.rc" ]; do sleep 0.1; i=$((i+1)); done
  pg=$(cat "$1.pid" 2>/dev/null)
  [ -n "$pg" ] || return 0
  kill -TERM "-$pg" 2>/dev/null; pkill -TERM -s "$pg" 2>/dev/null
  i=0
  while [ "$i" -lt "$2" ] && pgrep -s "$pg" >/dev/null 2>&1; do sleep 0.1; i=$((i+1)); done
  kill -KILL "-$pg" 2>/dev/null; pkill -KILL -s "$pg" 2>/dev/null
  return 0
}
"""

# sh -c RUN benchboard WORKDIR PREFIX TIMEOUT GRACE_TENTHS BINARY [env K=V...] ARGV...
RUN = (
    KILLGROUP
    + r"""
WD=$1 R=$2 T=$3 G=$4 BIN=$5
shift 5
cd "$WD" || exit 125
if ! command -v "$BIN" >/dev/null 2>&1; then echo "@@benchboard: command not found@@ $BIN" >&2; exit 127; fi
exec 3<&0
: > "$R.out"; : > "$R.err"
c0=$(date +%s.%N)
setsid -w sh -c 'echo $$ > "$0.pid"; exec "$@"' "$R" timeout -k 10 "$T" "$@" \
  </dev/null >"$R.out" 2>"$R.err" 3<&- &
tool=$!
{ cat >/dev/null; killgroup "$R" "$G"; } <&3 >/dev/null 2>&1 &
tail -c +1 -s 0.2 --pid="$tool" -f "$R.out" 3<&- &
t1=$!
tail -c +1 -s 0.2 --pid="$tool" -f "$R.err" >&2 3<&- &
t2=$!
# dash reports a signalled background job on stderr ("Terminated"): not tool output.
{ wait "$tool"; } 2>/dev/null; rc=$?
c1=$(date +%s.%N)
wait "$t1" "$t2"
printf '@@benchboard: clock %s %s@@\n' "$c0" "$c1" >&2
echo "$rc" > "$R.rc"
rm -f "$R.out" "$R.err"
exit "$rc"
"""
)

CANCEL = KILLGROUP + 'killgroup "$1" "$2"\n'

MKWORKDIR = "umask 077 && mktemp -d /tmp/benchboard.XXXXXXXXXX"


def tenths(seconds: float) -> str:
    """A grace period as whole tenths of a second, for the shell loop."""
    return str(max(1, math.ceil(seconds * 10)))


def run_line(
    workdir: str, prefix: str, limit: float, grace: float, argv: list[str], env: dict[str, str]
) -> str:
    """The remote command line that runs argv detached (see module docstring).

    limit is the `timeout` backstop in seconds; env entries are passed with
    `env K=V` (never secrets: those travel in uploaded 0600 files).
    """
    env_args = ["env", *(f"{k}={v}" for k, v in env.items())] if env else []
    return shlex.join(
        ["sh", "-c", RUN, "benchboard", workdir, prefix, f"{limit:g}", tenths(grace), argv[0]]
        + env_args
        + argv
    )


def cancel_line(prefix: str, grace: float) -> str:
    """The remote command line that kills the run whose files start with prefix."""
    return shlex.join(["sh", "-c", CANCEL, "benchboard", prefix, tenths(grace)])


# Reads the host's clock once per line read from stdin: the first answer
# waits for the login (a slow shell rc); the later ones measure the clock.
CLOCK_LOOP = "while read -r _; do date +%s.%N; done"


def clock_line() -> str:
    """The remote command line of the clock reader (SSHExecutor.clock_offset)."""
    return shlex.join(["sh", "-c", CLOCK_LOOP])


def remove_line(path: str) -> str:
    """rm -rf of one path (the work dir at close)."""
    return shlex.join(["rm", "-rf", "--", path])
