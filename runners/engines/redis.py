"""Redis: what a target of kind "redis" is.

Its client is `redis-cli` (redis-tools). A password travels in
REDISCLI_AUTH, never argv: set from the Command's env for a one-off PING,
or read by the shell from a 0600 file (auth_line: the one writer of that
file) where a shell line runs the client, so that it is not in the `env K=V`
an SSH executor would pass a Command's env with either. Here: the protocol
probe (PING), the access check (PING), INFO as telemetry and CONFIG GET *
with INFO server as the environment. A Redis server has no tables and no
SQL: no facts query, no table listing.
"""

from __future__ import annotations

import re
import shlex
import socket

from runners.command import WORKDIR, Command, Endpoint, Upload
from runners.engines.base import CLIENT_SECONDS, VOLATILE, last_line, recv, run_client
from runners.errors import RunnerError

NAME = "redis"
LABEL = "Redis"  # how forms name the kind
PROTOCOL = "Redis"  # how a probe names what a port speaks
DEFAULT_PORT = 6379
CLIENT = "redis-cli"  # the client program (the environment's "tools" group)
CLIENT_PACKAGE = "redis-tools"
# The server's processes by name, where no pid is known (runners.proctree).
SERVER_PROCESSES = ("redis-server",)


# -- the client ----------------------------------------------------------------------


def where(endpoint: Endpoint) -> list[str]:
    """redis-cli's options for where the server is: its socket, else host and port."""
    if endpoint.socket:
        return ["-s", endpoint.socket]
    return ["-h", endpoint.host or "127.0.0.1", "-p", str(endpoint.port or DEFAULT_PORT)]


def auth_line(
    endpoint: Endpoint, line: str, name: str, then: str = ""
) -> tuple[str, list[Upload], list[str]]:
    """(shell line, uploads, secrets): line preceded, when the endpoint has a
    password, by its export as REDISCLI_AUTH read from a 0600 file `name`
    (and by `then`, "exec " for a line that is one command)."""
    if not endpoint.password:
        return line, [], []
    auth = shlex.quote(f"{WORKDIR}/{name}")
    line = f'REDISCLI_AUTH="$(cat {auth})"; export REDISCLI_AUTH; {then}{line}'
    return line, [Upload(name, endpoint.password.encode(), 0o600)], [endpoint.password]


# -- what the user may do (benchapp.runs.connection) -----------------------------------


def access(executor, endpoint: Endpoint) -> str:
    """PING; the password travels in REDISCLI_AUTH, never argv."""
    place = f"{endpoint.host}:{endpoint.port or DEFAULT_PORT}"
    command = Command(
        argv=[
            CLIENT,
            "-h",
            endpoint.host or "127.0.0.1",
            "-p",
            str(endpoint.port or DEFAULT_PORT),
            "PING",
        ],
        env={"REDISCLI_AUTH": endpoint.password} if endpoint.password else {},
        secrets=[endpoint.password] if endpoint.password else [],
        tool=CLIENT,
        package=CLIENT_PACKAGE,
    )
    execution = run_client(executor, command)
    if execution.exit_code == 0 and execution.stdout.strip() == "PONG":
        return f"redis on {place} answered PING"
    raise RunnerError(
        f"redis on {place} did not answer PING: {last_line(execution, CLIENT_SECONDS)}",
        permanent=False,
        output=execution.output,
    )


# -- does a port speak it? -------------------------------------------------------------


def speaks(sock: socket.socket) -> bool:
    """Redis answers PING with +PONG, or an error (-NOAUTH) when it wants a password."""
    sock.sendall(b"PING\r\n")
    return recv(sock, 1) in (b"+", b"-")


# What identifying an unknown port sends (an HTTP server answers it too),
# and whether the answer is this protocol's.
QUESTION = b"PING\r\n"


def answers(data: bytes) -> bool:
    return data[:1] in (b"+", b"-")


# -- telemetry (runners.dbstatus) -------------------------------------------------------

# Redis INFO (its stats, memory and clients sections). The sampler's own INFO
# adds one command a second to total_commands_processed.
COUNTERS = {
    "total_commands_processed": "ops_per_s",
    "keyspace_hits": "keyspace_hits_per_s",
    "keyspace_misses": "keyspace_misses_per_s",
    "evicted_keys": "evicted_keys_per_s",
}
GAUGES = {"used_memory": "used_memory_mb", "connected_clients": "connected_clients"}
# A gauge read in other units than its figure's: used_memory is in bytes.
GAUGE_SCALES = {"used_memory": 1 / (1024 * 1024)}
# Keys found vs not found: a cache's hit ratio, not a disk's (a miss reads
# nothing), hence a figure of its own that the not_in_memory rule ignores.
HIT_RATIOS = {"keyspace_hit_ratio_pct": ("keyspace_hits", "keyspace_misses")}
LOGICAL_INCLUDES_PHYSICAL = False  # hits and misses are counted apart
# A Redis INFO line: "name:value"; "# Stats" heads a section; any other line
# (NOAUTH, "Could not connect to Redis at ...") is the client's error.
_INFO_LINE = re.compile(r"([A-Za-z0-9_]+):(.*)")
TELEMETRY_AUTH_FILE = "telemetry.redisauth"


def split_line(line: str) -> tuple[str, str, str]:
    """(name, separator, value) of an INFO line; no separator: not a value
    line (a section heading keeps "#" as its separator)."""
    line = line.strip()
    if line.startswith("#"):
        return "", "#", ""
    match = _INFO_LINE.fullmatch(line)
    return (match[1], ":", match[2]) if match else (line, "", "")


def sampler(endpoint: Endpoint, loop) -> Command:
    """redis-cli INFO once a second in loop(argv) (runners.dbstatus), the
    password exported from a 0600 file (auth_line)."""
    line, uploads, secrets = auth_line(
        endpoint, loop([CLIENT, *where(endpoint), "INFO"]), TELEMETRY_AUTH_FILE
    )
    return Command(
        argv=["sh", "-c", line],
        uploads=uploads,
        secrets=secrets,
        tool=CLIENT,
        package=CLIENT_PACKAGE,
    )


# -- the environment (runners.environment) ----------------------------------------------


def parse_environment(config: str, info: str) -> dict:
    """`CONFIG GET *` (name and value on alternate lines) and `INFO server`."""
    lines = config.splitlines()
    variables = {
        lines[i]: lines[i + 1]
        for i in range(0, len(lines) - 1, 2)
        if lines[i] and not VOLATILE.match(lines[i])
    }
    server = {}
    for line in info.splitlines():
        name, sep, value = line.strip().partition(":")
        if sep and not name.startswith("#") and not VOLATILE.match(name):
            server[name] = value
    return {"version": server.get("redis_version", ""), "variables": variables, "server": server}


def environment_commands(endpoint: Endpoint) -> list[Command]:
    """redis-cli CONFIG GET * and INFO server, the password exported from a
    0600 file (auth_line)."""
    commands = []
    for name, args in (("config", ["CONFIG", "GET", "*"]), ("info", ["INFO", "server"])):
        line, uploads, secrets = auth_line(
            endpoint,
            shlex.join([CLIENT, *where(endpoint), *args]),
            f"environment.{name}.auth",
            then="exec ",
        )
        commands.append(
            Command(
                argv=["sh", "-c", line],
                uploads=uploads,
                secrets=secrets,
                tool=CLIENT,
                package=CLIENT_PACKAGE,
            )
        )
    return commands


def read_environment(executor, endpoint: Endpoint, read) -> dict:
    """Every setting of the server; read(executor, command) -> its output."""
    config, info = (read(executor, c) for c in environment_commands(endpoint))
    return parse_environment(config, info)
