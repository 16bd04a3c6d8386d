"""Table checksums of a MySQL/MariaDB database: the proof that each cell of
a plan that restores a data-directory snapshot starts from the same data.

`table_checksums` lists the endpoint's database's tables and runs CHECKSUM
TABLE over them with the engine's client (runners.engines.mysql: credentials
in a 0600 option file, as for the db facts); `differences` names the tables whose checksum is not
the reference's.
"""

from __future__ import annotations

from runners import engines
from runners.command import Endpoint
from runners.engines.base import IDENTIFIER
from runners.errors import RunnerError


def _rows(executor, endpoint: Endpoint, sql: str, timeout: float) -> list[list[str]]:
    command = engines.get(endpoint.kind).client_command(endpoint, sql, "checksum")
    try:
        execution = executor.run(command, timeout=timeout)
    finally:
        for upload in command.uploads:
            executor.remove(f"{executor.workdir}/{upload.name}")
    if execution.timed_out:
        raise RunnerError(
            f"table checksums (checksum) stopped at their limit of {timeout:.0f} s",
            output=execution.output,
        )
    if execution.exit_code != 0:
        last = execution.stderr.strip().splitlines()[-1:] or [f"exit {execution.exit_code}"]
        raise RunnerError(
            f"table checksums on {endpoint.where}: {last[0]}", output=execution.output
        )
    return [line.split("\t") for line in execution.stdout.splitlines() if line.strip()]


def table_checksums(executor, endpoint: Endpoint, timeout: float = 600) -> dict[str, str]:
    """{table: checksum} of every base table of endpoint.database ("NULL" for a
    table the engine cannot checksum); {} without a database. Each query is
    stopped after timeout seconds (the checksum phase's limit)."""
    if endpoint.kind not in engines.CHECKSUM_KINDS or not endpoint.database:
        return {}
    database = endpoint.database
    if not IDENTIFIER.fullmatch(database):
        raise RunnerError(
            f"table checksums: database name {database!r} not supported", permanent=True
        )
    names = [
        row[0]
        for row in _rows(
            executor,
            endpoint,
            (
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                f"'{database}' AND table_type = 'BASE TABLE' ORDER BY table_name"
            ),
            timeout,
        )
    ]
    bad = [name for name in names if not IDENTIFIER.fullmatch(name)]
    if bad:
        raise RunnerError(f"table checksums: table name {bad[0]!r} not supported", permanent=True)
    if not names:
        return {}
    listed = ", ".join(f"`{database}`.`{name}`" for name in names)
    rows = _rows(executor, endpoint, f"CHECKSUM TABLE {listed} EXTENDED", timeout)
    return {row[0].split(".", 1)[-1]: row[1] for row in rows if len(row) == 2}


def differences(reference: dict[str, str], current: dict[str, str]) -> list[str]:
    """One line per table whose data differs from the reference (added, gone, changed)."""
    lines = []
    for table in sorted(set(reference) | set(current)):
        before, now = reference.get(table), current.get(table)
        if before != now:
            lines.append(f"{table}: {before or 'absent'} -> {now or 'absent'}")
    return lines
