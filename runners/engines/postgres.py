"""PostgreSQL: what a target of kind "postgres" is.

Its client is `psql` (postgresql-client), which reads the password from a
0600 PGPASSFILE, never argv (pgpass_line: the one writer of such a file,
which pgbench and sysbench's pgsql driver read too). Here: where libpq
finds a server's socket file, the protocol probe (an SSLRequest), the access
check (a scratch table created and dropped), the facts query,
pg_stat_database as telemetry and pg_settings as the environment.
"""

from __future__ import annotations

import re
import socket
import struct

from runners.command import WORKDIR, Command, Endpoint, Upload, option_value
from runners.engines.base import (
    CLIENT_SECONDS,
    PROBE_SECONDS,
    VOLATILE,
    last_line,
    run_client,
    scratch_table,
    tab_line,
)
from runners.errors import RunnerError

NAME = "postgres"
LABEL = "PostgreSQL"  # how forms name the kind
PROTOCOL = "PostgreSQL"  # how a probe names what a port speaks
DEFAULT_PORT = 5432
CLIENT = "psql"  # the client program (the environment's "tools" group)
CLIENT_PACKAGE = "postgresql-client"
# The server's processes by name, where no pid is known (runners.proctree).
SERVER_PROCESSES = ("postgres", "postmaster")
# Connections the server accepts beyond max_connections for a privileged
# user (superuser_reserved_connections are counted in it), and how
# max_connections is raised.
PRIVILEGED_CONNECTIONS = 0
RAISE_MAX_CONNECTIONS = "max_connections in postgresql.conf, then a restart"


# -- the client ----------------------------------------------------------------------


def pgpass_line(endpoint: Endpoint, database: str | None = None) -> bytes:
    """A one-line PGPASSFILE, host:port:database:user:password, ':' and '\\'
    escaped; a control character is refused (runners.command.option_value:
    a line break would add a line).

    Fields the endpoint leaves open are '*', and so is the database unless
    given; a socket connection matches '*' too (libpq compares it as
    "localhost").
    """

    def esc(value) -> str:
        return option_value(value, "pgpass value").replace("\\", "\\\\").replace(":", "\\:")

    fields = [
        "*" if endpoint.socket or not endpoint.host else endpoint.host,
        endpoint.port or "*",
        database or "*",
        endpoint.user or "*",
        endpoint.password or "",
    ]
    return (":".join(esc(f) if f != "*" else "*" for f in fields) + "\n").encode()


# libpq names a server's socket file <directory>/.s.PGSQL.<port>.
SOCKET_FILE = re.compile(r"(?P<dir>/.*)/\.s\.PGSQL\.(?P<port>[0-9]{1,5})")


def socket_address(path: str, port: int | None) -> tuple[int, str]:
    """(port, socket file) a target's socket reaches: a file names its port;
    a directory holds the file of port (the default one when not given)."""
    named = SOCKET_FILE.fullmatch(path)
    if named:  # the file says its port: that is the server reached
        return int(named["port"]), path
    return port or DEFAULT_PORT, f"{path.rstrip('/')}/.s.PGSQL.{port or DEFAULT_PORT}"


def socket_directory(path: str) -> str:
    """The directory libpq takes as its host for a socket file path."""
    named = SOCKET_FILE.fullmatch(path)
    return named["dir"] if named else path


FACTS_QUERY = (
    "SELECT current_setting('server_version'), current_setting('shared_buffers'), "
    "current_setting('max_connections')"
)
FACTS = ("server_version", "shared_buffers", "max_connections")


def client_command(
    endpoint: Endpoint,
    query: str = FACTS_QUERY,
    name: str = "facts",
    *,
    connect_timeout: int | None = None,
) -> Command:
    """psql with the password in a 0600 PGPASSFILE (name.pgpass), unaligned
    tab-separated output, stopping at the first error."""
    argv = [CLIENT, "-X", "-A", "-t", "-F", "\t", "-w", "-v", "ON_ERROR_STOP=1"]
    for flag, value in (
        # A socket alone, never beside a host (runners/endpoint.py): libpq
        # takes its directory as the host.
        ("-h", socket_directory(endpoint.socket) if endpoint.socket else endpoint.host),
        ("-p", endpoint.port),
        ("-U", endpoint.user),
    ):
        if value:
            argv += [flag, str(value)]
    argv += ["-d", endpoint.database or "postgres", "-c", query]
    env = {"PGPASSFILE": f"{WORKDIR}/{name}.pgpass"}
    if connect_timeout:
        env["PGCONNECT_TIMEOUT"] = str(connect_timeout)
    return Command(
        argv=argv,
        env=env,
        uploads=[Upload(f"{name}.pgpass", pgpass_line(endpoint), 0o600)],
        secrets=[endpoint.password] if endpoint.password else [],
        tool=CLIENT,
        package=CLIENT_PACKAGE,
    )


# -- what the user may do (benchapp.runs.connection) -----------------------------------


def access(executor, endpoint: Endpoint) -> str:
    """Create and drop a scratch table in endpoint.database (in the user's
    default schema); the finding as a sentence, or RunnerError naming what
    is missing."""
    where = f"{endpoint.host}:{endpoint.port or DEFAULT_PORT}"
    if not endpoint.database:
        return (
            "No database set: pgbench and sysbench need one (give one to check that "
            "tables can be created there)."
        )
    table = scratch_table()
    command = client_command(
        endpoint,
        f"CREATE TABLE {table} (id int); DROP TABLE {table}",
        "check",
        connect_timeout=PROBE_SECONDS,
    )
    execution = run_client(executor, command)
    user = endpoint.user or "(default user)"
    if execution.exit_code == 0:
        return f"user '{user}' can create and drop tables in '{endpoint.database}'"
    text = execution.output
    if f'database "{endpoint.database}" does not exist' in text:
        problem = f"database '{endpoint.database}' does not exist on {where}"
    elif "permission denied for database" in text:
        problem = f"user '{user}' may not connect to '{endpoint.database}' on {where}"
    elif "permission denied for schema" in text:
        problem = f"user '{user}' cannot CREATE in '{endpoint.database}' on {where}"
    else:
        problem = f"psql on {where}: {last_line(execution, CLIENT_SECONDS)}"
    raise RunnerError(problem, permanent=True, output=text)


# -- does a port speak it? -------------------------------------------------------------

# PostgreSQL's SSLRequest: length 8, code 80877103.
SSL_REQUEST = struct.pack("!ii", 8, 80877103)


def speaks(sock: socket.socket) -> bool:
    """A PostgreSQL server answers an SSLRequest with one byte: S, N (or E)."""
    sock.sendall(SSL_REQUEST)
    # One recv, not one byte: an SSH server's greeting also starts with S.
    return sock.recv(64) in (b"S", b"N", b"E")


# What identifying an unknown port sends, and whether the answer is this protocol's.
QUESTION = SSL_REQUEST


def answers(data: bytes) -> bool:
    return data in (b"S", b"N")


# -- the data a prepare left (runners.prepared) -------------------------------------


def table_listing(endpoint: Endpoint, names: str) -> tuple[str, str]:
    """(query listing which of the quoted table names the user sees, prefix
    naming a table in a query: none, the search path finds it)."""
    listing = (
        "SELECT relname FROM pg_class WHERE relkind = 'r' "
        f"AND pg_table_is_visible(oid) AND relname IN ({names})"
    )
    return listing, ""


# -- telemetry (runners.dbstatus) -------------------------------------------------------

COUNTERS = {
    "xact_commit": "commits_per_s",
    "xact_rollback": "rollbacks_per_s",
    "blks_read": "blocks_read_per_s",
    "blks_hit": "blocks_hit_per_s",
    "tup_returned": "rows_returned_per_s",
    "tup_fetched": "rows_fetched_per_s",
    "tup_inserted": "rows_inserted_per_s",
    "tup_updated": "rows_updated_per_s",
    "tup_deleted": "rows_deleted_per_s",
    "deadlocks": "deadlocks_per_s",
    "temp_bytes": "temp_bytes_per_s",
}
GAUGES = {"active_backends": "active_backends", "waiting_locks": "waiting_locks"}
GAUGE_SCALES: dict[str, float] = {}
# The hit ratios of a second: figure -> (blocks hit, blocks read from disk).
HIT_RATIOS = {"hit_ratio_pct": ("blks_hit", "blks_read")}
# PostgreSQL counts hits and reads apart.
LOGICAL_INCLUDES_PHYSICAL = False
TELEMETRY_QUERY = (
    "SELECT v.k, v.n FROM pg_stat_database d, LATERAL (VALUES "
    + ", ".join(f"('{name}', d.{name}::bigint)" for name in COUNTERS)
    + ") v(k, n) WHERE d.datname = current_database() "
    "UNION ALL SELECT 'active_backends', count(*) FROM pg_stat_activity WHERE state = 'active' "
    "UNION ALL SELECT 'waiting_locks', count(*) FROM pg_locks WHERE NOT granted"
)
split_line = tab_line


def sampler(endpoint: Endpoint, loop) -> Command:
    """The telemetry client (pg_stat_database) in loop(argv), the shell line
    that runs it once a second (runners.dbstatus)."""
    client = client_command(endpoint, TELEMETRY_QUERY, name="telemetry")
    client.argv = ["sh", "-c", loop(client.argv)]
    return client


# -- the environment (runners.environment) ----------------------------------------------

ENVIRONMENT_QUERY = (
    "SELECT name, setting || coalesce(' ' || unit, ''), source FROM pg_settings"
    " UNION ALL SELECT '@extension:' || extname, extversion, '' FROM pg_extension"
    " UNION ALL SELECT '@version', version(), ''"
)
# pg_settings sources that describe the reading session, not the server.
SESSION_SOURCES = ("client", "session")


def parse_environment(text: str) -> dict:
    """Settings (with the source of each one not at its default), extensions
    and version from ENVIRONMENT_QUERY's output."""
    settings, sources, extensions, version = {}, {}, {}, ""
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) < 2:
            continue
        name, value = fields[0], fields[1]
        if name == "@version":
            version = value
        elif name.startswith("@extension:"):
            extensions[name[11:]] = value
        elif not VOLATILE.match(name) and (fields[2:] or [""])[0] not in SESSION_SOURCES:
            settings[name] = value
            if len(fields) > 2 and fields[2] not in ("default", ""):
                sources[name] = fields[2]
    return {"version": version, "variables": settings, "sources": sources, "extensions": extensions}


def read_environment(executor, endpoint: Endpoint, read) -> dict:
    """Every setting of the server; read(executor, command) -> its output."""
    return parse_environment(
        read(executor, client_command(endpoint, ENVIRONMENT_QUERY, "environment"))
    )
