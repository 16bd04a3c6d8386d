"""MySQL and MariaDB: what a target of kind "mysql" is.

Its client is `mysql` (Debian's mariadb-client), which reads the endpoint's
connection and password from a 0600 [client] option file, never argv
(option_file: the one writer of such a file). Here: the protocol probe
(the server speaks first), the access check (a scratch table created and
dropped), the facts query, the user's database-wide grants, the nodes a
balancer's connections reach, SHOW GLOBAL STATUS as telemetry and SHOW
GLOBAL VARIABLES as the environment.
"""

from __future__ import annotations

import re
import socket

from runners.command import WORKDIR, Command, Endpoint, Upload, option_value
from runners.engines.base import (
    CLIENT_SECONDS,
    IDENTIFIER,
    PROBE_SECONDS,
    VOLATILE,
    int_or_text,
    last_line,
    recv,
    run_client,
    scratch_table,
    tab_line,
)
from runners.errors import RunnerError

NAME = "mysql"
LABEL = "MySQL / MariaDB"  # how forms name the kind
PROTOCOL = "MySQL"  # how a probe names what a port speaks
DEFAULT_PORT = 3306
CLIENT = "mysql"  # the client program (the environment's "tools" group)
CLIENT_PACKAGE = "mariadb-client"
# The server's processes by name, where no pid is known (runners.proctree).
SERVER_PROCESSES = ("mariadbd", "mysqld")
# Connections the server accepts beyond max_connections for a privileged
# user (one for SUPER/CONNECTION ADMIN), and how max_connections is raised.
PRIVILEGED_CONNECTIONS = 1
RAISE_MAX_CONNECTIONS = "SET GLOBAL max_connections = N"
# Table checksums (runners.checksums: CHECKSUM TABLE) prove a restored
# data directory holds the same data; where that directory is and the
# service that stops and starts the server (prepare.snapshot_datadir's defaults).
CHECKSUM_TABLE = True
DATADIR = "/var/lib/mysql"
SERVICE = "mysql"


# -- the client ----------------------------------------------------------------------


def option_file(endpoint: Endpoint) -> bytes:
    """A [client] option file with the endpoint's connection and password.

    Values are double-quoted with backslash escapes, as the MySQL/MariaDB
    option file reader expects; a control character is refused
    (runners.command.option_value: a line break would start an option).
    """

    def quote(value) -> str:
        text = option_value(value, "[client] option value")
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = ["[client]"]
    for key in ("host", "port", "user", "password", "socket"):
        value = getattr(endpoint, key)
        if value is not None and value != "":
            lines.append(f"{key}={quote(value)}")
    return ("\n".join(lines) + "\n").encode()


FACTS_QUERY = "SELECT @@version, @@innodb_buffer_pool_size, @@max_connections"
FACTS = ("server_version", "innodb_buffer_pool_size", "max_connections")


def client_command(
    endpoint: Endpoint,
    query: str = FACTS_QUERY,
    name: str = "facts",
    *,
    database: str | None = None,
    connect_timeout: int | None = None,
) -> Command:
    """mysql client reading its credentials from a 0600 option file (name.my.cnf)."""
    argv = [CLIENT, f"--defaults-extra-file={WORKDIR}/{name}.my.cnf"]
    if connect_timeout:
        argv.append(f"--connect-timeout={connect_timeout}")
    if database:
        argv.append(f"--database={database}")
    return Command(
        argv=[*argv, "--batch", "--skip-column-names", "-e", query],
        uploads=[Upload(f"{name}.my.cnf", option_file(endpoint), 0o600)],
        secrets=[endpoint.password] if endpoint.password else [],
        tool=CLIENT,
        package=CLIENT_PACKAGE,
    )


# -- what the user may do (benchapp.runs.connection) -----------------------------------


def access(executor, endpoint: Endpoint) -> str:
    """Create and drop a scratch table in endpoint.database; the finding as a
    sentence, or RunnerError naming what is missing."""
    where = f"{endpoint.host}:{endpoint.port or DEFAULT_PORT}"
    if not endpoint.database:
        return (
            "No database set: mysqlslap works in a schema of its own; sysbench needs "
            "a database (give one to check that tables can be created there)."
        )
    table = f"`{endpoint.database}`.`{scratch_table()}`"
    command = client_command(
        endpoint,
        f"CREATE TABLE {table} (id INT); DROP TABLE {table}",
        "check",
        database=endpoint.database,
        connect_timeout=PROBE_SECONDS,
    )
    execution = run_client(executor, command)
    if execution.exit_code == 0:
        return f"user '{endpoint.user}' can create and drop tables in '{endpoint.database}'"
    text = execution.output
    if "ERROR 1049" in text:  # Unknown database
        problem = f"database '{endpoint.database}' does not exist on {where}"
    elif "ERROR 1044" in text:  # Access denied for user to database
        problem = (
            f"user '{endpoint.user}' has no privileges on database '{endpoint.database}' on {where}"
        )
    elif "ERROR 1142" in text:  # CREATE/DROP command denied
        verb = "DROP" if "DROP command denied" in text else "CREATE"
        problem = f"user '{endpoint.user}' cannot {verb} in '{endpoint.database}' on {where}"
    else:
        problem = f"mysql on {where}: {last_line(execution, CLIENT_SECONDS)}"
    raise RunnerError(problem, permanent=True, output=text)


# "GRANT SELECT, CREATE ON `bb\_s%`.* TO ..." or "... ON *.* TO ...": the
# database-wide grants (table and column grants do not create schemas).
_GRANT = re.compile(r"^GRANT (?P<privileges>.+?) ON (?:\*|`(?P<schema>(?:[^`]|``)*)`)\.\* TO ")


def schema_grants(executor, endpoint: Endpoint) -> list[dict] | None:
    """The user's database-wide grants as [{"schema": LIKE pattern or "*",
    "privileges": [...]}], for benchapp.plans.prerun (mysqlslap creates and drops
    its schema); None when SHOW GRANTS does not say (an error, or roles,
    whose privileges it does not list). Password hashes are never kept."""
    execution = run_client(executor, client_command(endpoint, "SHOW GRANTS", "grants"))
    if execution.exit_code != 0:
        return None
    grants = []
    for line in execution.stdout.splitlines():
        line = line.replace("\\\\", "\\")  # --batch writes a backslash as two
        match = _GRANT.match(line)
        if match is None:
            if line.startswith("GRANT `"):  # a role: its privileges are not listed here
                return None
            continue
        privileges = [p.strip().upper() for p in match["privileges"].split(",")]
        schema = match["schema"].replace("``", "`") if match["schema"] is not None else "*"
        grants.append({"schema": schema, "privileges": privileges})
    return grants


# -- does a port speak it? -------------------------------------------------------------


def is_greeting(data: bytes) -> bool:
    """A packet of sequence 0 holding protocol 10 or an error (0xff, e.g.
    "host not allowed"): how a MySQL/MariaDB server opens a connection."""
    return len(data) >= 5 and data[3] == 0 and data[4] in (0x0A, 0xFF)


def speaks(sock: socket.socket) -> bool:
    """A MySQL/MariaDB server speaks first (is_greeting)."""
    return is_greeting(recv(sock, 5))


# What identifying an unknown port sends (nothing: the server speaks first)
# and whether the answer is this protocol's.
QUESTION = b""
answers = is_greeting


# -- the data a prepare left (runners.prepared) -------------------------------------


def table_listing(endpoint: Endpoint, names: str) -> tuple[str, str]:
    """(query listing which of the quoted table names exist in the endpoint's
    database, prefix naming a table of that database in a query).

    The mysql client's option file names no database: the query does
    (sysbench's own default database is sbtest)."""
    database = endpoint.database or "sbtest"
    if not IDENTIFIER.fullmatch(database):
        raise RunnerError(f"database name {database!r} not supported", permanent=True)
    listing = (
        "SELECT table_name FROM information_schema.tables "
        f"WHERE table_schema = '{database}' AND table_name IN ({names})"
    )
    return listing, f"`{database}`."


# -- behind a balancer (runners.cell) ---------------------------------------------------

NODE_QUERY = "SELECT @@hostname, @@port, @@server_id"


def nodes(executor, endpoint: Endpoint, connections: int = 4) -> list[dict]:
    """The MySQL servers that `connections` new connections to endpoint reach.

    Behind a balancer each connection may land on another node: the answer
    lists every node seen, [{"host", "port", "server_id", "connections"}]
    sorted by host and port ("connections": how many of them it answered).
    A connection that fails is left out (a node going down is what this
    shows); RunnerError, with the client's message, when none answered.
    """
    command = client_command(endpoint, NODE_QUERY)
    seen: dict[tuple, int] = {}
    failure = ""
    try:
        for _ in range(connections):
            execution = executor.run(command, timeout=30)
            values = (execution.stdout.strip().splitlines() or [""])[0].split("\t")
            if execution.exit_code != 0 or len(values) != 3:
                failure = (execution.stderr.strip().splitlines() or [failure])[-1]
                continue
            node = (values[0], int_or_text(values[1]), int_or_text(values[2]))
            seen[node] = seen.get(node, 0) + 1
    finally:
        executor.remove(f"{executor.workdir}/{command.uploads[0].name}")
    if not seen:
        raise RunnerError(f"mysql on {endpoint.where}: {failure or 'no answer'}")
    found = [
        {"host": host, "port": port, "server_id": server_id, "connections": count}
        for (host, port, server_id), count in seen.items()
    ]
    return sorted(found, key=lambda node: (node["host"], str(node["port"]).zfill(10)))


# -- telemetry (runners.dbstatus) -------------------------------------------------------

COUNTERS = {
    "Questions": "questions_per_s",
    "Com_commit": "commits_per_s",
    "Com_rollback": "rollbacks_per_s",
    # Rows read: MariaDB counts them as Rows_read, MySQL as Innodb_rows_read
    # (the server has one of the two); rows written at the handler level.
    "Rows_read": "rows_read_per_s",
    "Innodb_rows_read": "rows_read_per_s",
    "Handler_write": "rows_inserted_per_s",
    "Handler_update": "rows_updated_per_s",
    "Handler_delete": "rows_deleted_per_s",
    "Innodb_buffer_pool_read_requests": "buffer_pool_read_requests_per_s",
    "Innodb_buffer_pool_reads": "buffer_pool_disk_reads_per_s",
    "Innodb_data_reads": "data_reads_per_s",
    "Innodb_data_writes": "data_writes_per_s",
    "Innodb_row_lock_waits": "row_lock_waits_per_s",
    "Innodb_row_lock_time": "row_lock_time_ms_per_s",
    "Innodb_deadlocks": "deadlocks_per_s",
    "Created_tmp_disk_tables": "tmp_disk_tables_per_s",
    # MyISAM keeps only its indexes in a cache of its own (the key buffer;
    # data rows are left to the OS page cache): index blocks asked for, and
    # of those the ones read from a file because the key buffer lacked them.
    "Key_read_requests": "key_read_requests_per_s",
    "Key_reads": "key_reads_per_s",
    # Table locks (MyISAM, MEMORY, LOCK TABLES): granted at once, or after a
    # wait for another session's lock on the whole table.
    "Table_locks_immediate": "table_locks_immediate_per_s",
    "Table_locks_waited": "table_locks_waited_per_s",
}
GAUGES = {"Threads_running": "threads_running", "Threads_connected": "threads_connected"}
GAUGE_SCALES: dict[str, float] = {}
# The hit ratios of a second: figure -> (logical reads, of which from disk).
HIT_RATIOS = {
    "hit_ratio_pct": ("Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads"),
    "key_cache_hit_ratio_pct": ("Key_read_requests", "Key_reads"),
}
# MySQL counts every logical read, the disk reads among them.
LOGICAL_INCLUDES_PHYSICAL = True
TELEMETRY_QUERY = "SHOW GLOBAL STATUS WHERE Variable_name IN ({})".format(
    ", ".join(f"'{name}'" for name in [*COUNTERS, *GAUGES])
)
split_line = tab_line


def sampler(endpoint: Endpoint, loop) -> Command:
    """The telemetry client (SHOW GLOBAL STATUS) in loop(argv), the shell
    line that runs it once a second (runners.dbstatus)."""
    client = client_command(endpoint, TELEMETRY_QUERY, name="telemetry")
    client.argv = ["sh", "-c", loop(client.argv)]
    return client


# -- the environment (runners.environment) ----------------------------------------------

ENVIRONMENT_QUERY = (
    "SHOW GLOBAL VARIABLES;"
    " SELECT CONCAT('@engine:', ENGINE), SUPPORT FROM information_schema.ENGINES;"
    " SELECT CONCAT('@plugin:', PLUGIN_NAME), PLUGIN_VERSION FROM information_schema.PLUGINS"
    " WHERE PLUGIN_STATUS = 'ACTIVE'"
)


def parse_environment(text: str) -> dict:
    """Variables, storage engines and active plugins from ENVIRONMENT_QUERY's output."""
    variables, engines, plugins = {}, {}, {}
    for line in text.splitlines():
        name, _, value = line.partition("\t")
        if name.startswith("@engine:"):
            engines[name[8:]] = value
        elif name.startswith("@plugin:"):
            plugins[name[8:]] = value
        elif name and not VOLATILE.match(name):
            variables[name] = value
    return {
        "version": variables.get("version", ""),
        "variables": variables,
        "engines": engines,
        "plugins": plugins,
    }


def read_environment(executor, endpoint: Endpoint, read) -> dict:
    """Every global setting of the server; read(executor, command) -> its output."""
    return parse_environment(
        read(executor, client_command(endpoint, ENVIRONMENT_QUERY, "environment"))
    )
