"""Data an earlier run of a prepare-once plan left on its target.

A plan with `prepare: {once: true}` and no `cleanup: true` keeps its tables
after the run, so the next night's sysbench prepare would fail on them
("Table 'sbtest1' already exists"). Before a target's first prepare in a
run, the tables the parameters prepare are counted: none there, the tool
prepares them; every one there with the rows the parameters say, they are
reused (the cell's facts say so); anything else is refused before the
measure with the fix, since reusing other data would give other numbers.
A tool whose prepare replaces its own tables (PREPARE_REPLACES) simply
prepares again on a mismatch. Which tables is each tool's own declaration
(`prepared_tables(params)` in its registry block).

Counts are exact (COUNT(*)): information_schema's table_rows is an InnoDB
estimate, and a table that oltp_insert grew must not pass for a fresh one.
"""

from __future__ import annotations

from runners import engines
from runners.errors import RunnerError
from runners.tools import get_tool


def expected(tool: str, params: dict) -> dict[str, int] | None:
    """{table: rows} a prepare with these params makes, by the tool's own
    `prepared_tables(params)`; None when its data is not tables this module
    counts (a tool that declares none, sysbench fileio or cpu...)."""
    tables = getattr(get_tool(tool), "prepared_tables", None)
    return tables(params) if tables else None


def replaces(tool: str) -> bool:
    """Whether the tool's prepare replaces tables it finds (its PREPARE_REPLACES):
    then a mismatch simply prepares again instead of being refused."""
    return getattr(get_tool(tool), "PREPARE_REPLACES", False)


def present(executor, endpoint, tables: dict[str, int], timeout: float = 600) -> dict[str, int]:
    """{table: exact rows} of the given tables that exist in endpoint's database;
    each query is stopped after timeout seconds (the data_check phase's limit)."""
    names = ", ".join(f"'{name}'" for name in tables)  # names come from expected(): safe
    engine = engines.get(endpoint.kind)
    listing, prefix = engine.table_listing(endpoint, names)
    command = engine.client_command
    found = [row[0] for row in _rows(executor, command(endpoint, listing, "prepared"), timeout)]
    if not found:
        return {}
    counts = " UNION ALL ".join(f"SELECT '{name}', COUNT(*) FROM {prefix}{name}" for name in found)
    counted = {
        row[0]: int(row[1])
        for row in _rows(executor, command(endpoint, counts, "prepared"), timeout)
    }
    return {name: counted[name] for name in tables if name in counted}  # in tables' order


def _rows(executor, command, timeout: float) -> list[list[str]]:
    try:
        execution = executor.run(command, timeout=timeout)
    finally:
        for upload in command.uploads:
            executor.remove(f"{executor.workdir}/{upload.name}")
    if execution.timed_out:
        raise RunnerError(
            f"counting the prepared tables (data_check) stopped at its limit of {timeout:.0f} s",
            output=execution.output,
        )
    if execution.exit_code != 0:
        last = (execution.stderr.strip().splitlines() or [f"exit {execution.exit_code}"])[-1]
        raise RunnerError(f"counting the prepared tables: {last}", output=execution.output)
    return [line.split("\t") for line in execution.stdout.splitlines() if line.strip()]


def describe(tables: dict[str, int]) -> str:
    """ "sbtest1, sbtest2 (1,000 rows each)", or each table with its rows."""
    if len(tables) > 1 and len(set(tables.values())) == 1:
        return f"{', '.join(tables)} ({_rows_text(next(iter(tables.values())))} each)"
    return ", ".join(f"{name} ({_rows_text(rows)})" for name, rows in tables.items())


def _rows_text(rows: int) -> str:
    return f"{rows:,} row{'' if rows == 1 else 's'}"


def mismatch(target: str, found: dict[str, int], wanted: dict[str, int]) -> str:
    """Why the data left on target cannot be reused, and the fixes (one short
    line: a cell's error is cut at runners.phases.MAX_ERROR)."""
    return (
        f"{target} already has {describe(found)}, the plan prepares {describe(wanted)}: "
        "drop those tables, or add cleanup: true to the plan, or set the parameters "
        "they were prepared with"
    )
