"""The one registry of database engines: what a target's kind is.

`ENGINES` maps each database kind of target to its module; nothing else
lists them (a target of kind "host" is a machine, no database). Every module
exposes the same interface:

- NAME, LABEL (how forms name the kind), PROTOCOL (how a probe names what a
  port speaks), DEFAULT_PORT, CLIENT and CLIENT_PACKAGE (its client program
  and the Debian package with it), SERVER_PROCESSES (the server's process
  names, runners.proctree);
- access(executor, endpoint) -> str: what the user may do there, or
  RunnerError naming what is missing (benchapp.runs.connection);
- speaks(sock) -> bool: the protocol probe of a connected socket (no secret
  sent); QUESTION and answers(data): what identifying an unknown port sends,
  and whether its answer is this protocol's;
- telemetry (runners.dbstatus): COUNTERS and GAUGES ({server's name: figure}),
  GAUGE_SCALES, HIT_RATIOS ({figure: (logical, physical)}) with
  LOGICAL_INCLUDES_PHYSICAL, split_line(line), sampler(endpoint, loop);
- read_environment(executor, endpoint, read) (runners.environment);
- optionally, for a SQL server: client_command(endpoint, query, name) (its
  client with credentials in a 0600 file written by its one writer),
  FACTS_QUERY and FACTS (runners.facts), table_listing(endpoint, names)
  (runners.prepared), PRIVILEGED_CONNECTIONS and RAISE_MAX_CONNECTIONS
  (benchapp.plans.prerun), and where the engine has them:
  schema_grants(executor, endpoint), nodes(executor, endpoint, connections)
  (behind a balancer), CHECKSUM_TABLE (runners.checksums) with DATADIR
  and SERVICE (a data directory snapshot's defaults),
  socket_address(path, port) and socket_directory(path) (a socket file
  named by its directory).

Adding an engine: a module with that interface and one row below (plus a
migration: the target kinds are model choices), and the tools that run
against it declare it in their TARGET_KINDS.
"""

from types import ModuleType

from runners.engines import mysql, postgres, redis

ENGINES: dict[str, ModuleType] = {"mysql": mysql, "postgres": postgres, "redis": redis}
# A target that is a machine (a filesystem, a CPU), no database.
HOST = "host"
# Target kinds, in registry order after "host": the model's choices.
TARGET_KINDS = (HOST, *ENGINES)
# {kind: label} for forms and model choices (Target.KINDS), in TARGET_KINDS order.
TARGET_KIND_LABELS = {HOST: "Host / filesystem", **{k: m.LABEL for k, m in ENGINES.items()}}
# The kind a new target starts with (the form's first database).
DEFAULT_KIND = next(iter(ENGINES))
# {kind: port} of a target whose plan or form gives none.
DEFAULT_PORTS = {kind: module.DEFAULT_PORT for kind, module in ENGINES.items()}
# Kinds whose server holds tables a client lists and counts (runners.prepared).
TABLE_KINDS = tuple(k for k, m in ENGINES.items() if hasattr(m, "table_listing"))
# Kinds whose tables a checksum compares (runners.checksums): a data
# directory snapshot (prepare.snapshot_datadir) is proven with them, and its
# defaults are the first such engine's data directory and service.
CHECKSUM_KINDS = tuple(k for k, m in ENGINES.items() if getattr(m, "CHECKSUM_TABLE", False))
SNAPSHOT_DATADIR = ENGINES[CHECKSUM_KINDS[0]].DATADIR
SNAPSHOT_SERVICE = ENGINES[CHECKSUM_KINDS[0]].SERVICE


def get(kind: str) -> ModuleType:
    """The engine of a database kind, or KeyError listing the known ones."""
    try:
        return ENGINES[kind]
    except KeyError:
        raise KeyError(f"unknown database kind {kind!r}; known: {', '.join(ENGINES)}") from None


def find(kind: str | None) -> ModuleType | None:
    """The engine of kind, or None (a host target, or no kind)."""
    return ENGINES.get(kind or "")
