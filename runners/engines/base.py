"""What the engines' modules share: running a client once, reading its
answer, and the settings every engine leaves out of an environment snapshot.

Nothing here names an engine: each engine module (mysql.py, postgres.py,
redis.py) builds its own commands and reads its own outputs with these.
"""

from __future__ import annotations

import re
import secrets
import socket

from runners.command import Command

# A client's whole check; the protocol probe and the clients' own connect timeouts.
CLIENT_SECONDS = 30
PROBE_SECONDS = 3

# Database and table names as sysbench and most schemas write them; anything
# else is refused rather than quoted into SQL.
IDENTIFIER = re.compile(r"[A-Za-z0-9_$]{1,64}")
# Values that change by themselves (positions, clocks, uptimes): left out, or
# an unchanged server would give a new snapshot every run (runners.environment).
VOLATILE = re.compile(
    r"^(gtid_(binlog|current|slave)_pos|gtid_binlog_state|gtid_executed|gtid_purged"
    r"|timestamp|rand_seed\d|last_insert_id|insert_id|identity|warning_count|error_count"
    r"|pseudo_thread_id|in_transaction|uptime_in_(seconds|days)|lru_clock|server_time_usec"
    r"|process_id|run_id|io_threads_active|hz|executable|config_file)$"
)


def run_client(executor, command: Command, seconds: float = CLIENT_SECONDS):
    """Run command (seconds at most), removing its credential files afterwards."""
    try:
        return executor.run(command, timeout=seconds)
    finally:
        for upload in command.uploads:
            executor.remove(f"{executor.workdir}/{upload.name}")


def last_line(execution, seconds: float = CLIENT_SECONDS) -> str:
    """The client's last word: its last error line, else its last output line."""
    lines = execution.stderr.strip().splitlines() or execution.stdout.strip().splitlines()
    if lines:
        return lines[-1]
    if execution.exit_code is None:
        return f"no answer within {seconds} s"
    return f"exit code {execution.exit_code}"


def scratch_table() -> str:
    """A table name no one uses: the access checks create and drop it."""
    return f"benchboard_check_{secrets.token_hex(4)}"


def recv(sock: socket.socket, n: int) -> bytes:
    """Up to n bytes, fewer only when the server closes first."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


def tab_line(line: str) -> tuple[str, str, str]:
    """(name, separator, value) of a SQL client's tab-separated output line."""
    return line.partition("\t")


def int_or_text(value: str):
    """A client's output field as an int when it is digits, else as text."""
    return int(value) if value.isdigit() else value
