"""A cell's environment snapshot, assembled from the machines it uses.

gather() runs before the measure (after prepare and any data restore), reads
each machine once per run (runners.environment) and caches what it read in
the run's shared facts (CellContext.host_facts, under "environment:" keys),
so later cells of the run on the same machines cost nothing. A database is
re-read for every cell when the plan restores a data directory per cell: the
server's state may have changed with it.

The snapshot: {"database": ..., "host": {"client": ..., "target": ...,
"client_2": ...}, "cloud": ..., "tools": ...}, redacted (environment.redact)
before it leaves this module. The plan's own parameters are not part of it:
the app diffs those from the cells' frozen specs.
"""

from __future__ import annotations

import time

from runners import engines
from runners.command import Command
from runners.errors import ParseError, RunnerError


def _cached(ctx, key: str, read):
    """ctx.host_facts[key], read once (the run's per-process cache)."""
    if key not in ctx.host_facts:
        try:
            ctx.host_facts[key] = read()
        except RunnerError as exc:
            ctx.host_facts[key] = {"error": exc.message}
    return ctx.host_facts[key]


def _client_version(executor, kind: str) -> str | None:
    engine = engines.find(kind)  # its client program, for the "tools" group
    if engine is None:
        return None
    program = engine.CLIENT
    try:
        execution = executor.run(Command(argv=[program, "--version"], tool=program), timeout=30)
    except (RunnerError, ParseError):
        return None
    line = (execution.output.strip().splitlines() or [""])[0]
    return line.strip() or None


def _tool_version(tool, executor) -> str | None:
    command = Command(argv=tool.version_command(), tool=tool.NAME, package=tool.PACKAGE)
    try:
        return tool.parse_version(executor.run(command, timeout=30).output) or None
    except (RunnerError, ParseError, ValueError):
        return None


def _paths(cell_params: dict, database: dict) -> tuple[str, ...]:
    """The directories whose filesystem matters: fio's, the database's data directory."""
    found = [cell_params.get("directory"), cell_params.get("temp_path")]
    variables = database.get("variables") or {}
    found += [variables.get("datadir"), variables.get("data_directory"), variables.get("dir")]
    return tuple(p for p in found if isinstance(p, str) and p.startswith("/"))


def gather(run, target) -> dict:
    """The environment of `run`'s cell (a runners.cell._CellRun) on `target`.

    Returns the redacted snapshot, with "read_seconds": how long this cell
    spent reading (0.0 when every machine was read by an earlier cell).
    """
    from runners import environment

    started = time.monotonic()
    ctx = run.ctx
    database = {}
    if engines.find(target.kind) is not None:
        key = f"environment-db:{target.name}"
        if run.plan.prepare.snapshot_datadir:
            ctx.host_facts.pop(key, None)  # restored per cell: read it again
        database = _cached(ctx, key, lambda: environment.read_database(run.client, run.endpoint))
    paths = _paths(run.cell.params, database)
    hosts, tools = {}, {"tool": run.tool.NAME}
    for index, (ssh, executor) in enumerate(run.clients, 1):
        label = "client" if index == 1 else f"client_{index}"
        machine = ctx.executor_key(ssh)
        hosts[label] = _cached(
            ctx, f"environment:{machine}", lambda e=executor: environment.read_host(e, paths)
        )
        client = _cached(
            ctx,
            f"environment-tools:{machine}:{target.kind}",
            lambda e=executor: {"client_program": _client_version(e, target.kind)},
        )
        if machine not in ctx.versions:  # shared with the cell's facts (runners.cell)
            ctx.versions[machine] = _tool_version(run.tool, executor)
        tools[label] = {"version": ctx.versions[machine], **client}
    target_host = _target_host(run, target, paths)
    if target_host is not None:
        hosts["target"] = target_host
    snapshot = {
        "database": database,
        "host": hosts,
        "cloud": environment.cloud_of(target.provision, target.cloud_instance),
        "tools": tools,
    }
    snapshot = environment.redact(snapshot)
    snapshot["read_seconds"] = round(time.monotonic() - started, 3)
    return snapshot


def _target_host(run, target, paths) -> dict | None:
    """The target machine's host settings when it can be read and is not the
    client's machine (then "client" already holds them)."""
    try:
        ssh = run.ctx.host_ssh(target)
    except RunnerError:
        return None  # a target reached only through its port: no host to read
    machine = run.ctx.executor_key(ssh)
    if machine == run.ctx.executor_key(run.client_ssh):
        return None
    from runners.environment import read_host

    return _cached(
        run.ctx, f"environment:{machine}", lambda: read_host(run.ctx.executor(ssh), paths)
    )
