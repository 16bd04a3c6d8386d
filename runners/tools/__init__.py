"""The one registry of benchmark tools.

`TOOLS` maps each tool's name to its module; nothing else lists tools.
Every module exposes the same interface:

- building and parsing: NAME, BINARY, PACKAGE (its Debian package; or None
  and RELEASE, a runners.packages.Release to fetch and verify), PARAMS (the allow-list),
  ALIASES, PHASES, validate(params) -> dict,
  build(params, endpoint, phase="run") -> Command, parse(text) -> Result,
  version_command() -> list[str], parse_version(text) -> str;
- its registry block (at the end of the module): TARGET_KIND (a target's
  kind when the plan does not say), TARGET_KINDS (the kinds it runs
  against), MEASURED (a plan may measure with it), DURATION_PARAM (the
  parameter in seconds, or None) or duration_seconds(params), optionally
  ELAPSED_METRIC (the metric holding the seconds it measured) and
  LATENCY_WEIGHT (the count that weighs clients' average latencies), METRICS (the
  metric catalog, runners.metrics.Metric rows), MAIN_METRICS (the metrics
  that answer "how fast", best first: what pages open on), SERIES (per-second metrics),
  default_view(axes) (the results view a run opens with), and optionally
  expected_groups(params) (how many result blocks a whole output holds),
  DERIVED ({metric: (sources, function)} computed when results are read),
  WORKDIR_PARAM (the parameter naming the directory it works in, filled
  from a host target's directory) with WORKDIR_ALTERNATIVES,
  CONNECTIONS_PARAM (the parameter that is the number of connections one
  cell opens), STRESS (True for the tool a plan's `stress:` runs),
  PLAN_KEYS (params a plan may also set at its top level, for every cell),
  phases_for(clean) (the phases one test of the tool has, when not all
  of PHASES: sysbench's cpu test has no prepare), prepared_tables(params)
  ({table: rows} a prepare leaves, which
  runners.prepared counts for prepare-once plans) with PREPARE_REPLACES
  (its prepare replaces tables it finds), SCHEMA_PARAM with SCHEMA_DEFAULT
  and SCHEMA_PRIVILEGES (a scratch schema it creates and drops, which
  benchapp.plans.prerun checks), and LIMITS (runners.limits.Use rows: the
  parameters that count as processes, memory, disk or seconds against the
  worker's limits).

Adding a tool: a module with that interface and one row below. The kinds
of target (and their labels and default ports) are the database engines'
registry's (runners/engines/__init__.py).
"""

import gc
from types import ModuleType

from runners import engines, telemetry
from runners.errors import ValidationError
from runners.metrics import Metric, lookup
from runners.results import Result
from runners.tools import fio, mysqlslap, pgbench, redis_benchmark, stress_ng, sysbench

TOOLS: dict[str, ModuleType] = {
    "mysqlslap": mysqlslap,
    "sysbench": sysbench,
    "fio": fio,
    "pgbench": pgbench,
    "stress_ng": stress_ng,
    "redis_benchmark": redis_benchmark,
}
TOOL_NAMES = tuple(TOOLS)
# Tools a plan may choose as its measured tool (stress_ng is background load).
MEASURED_TOOLS = tuple(name for name, module in TOOLS.items() if module.MEASURED)
# The tool a new plan starts with (the builder's first choice).
DEFAULT_TOOL = MEASURED_TOOLS[0]
# The background-load tool a plan's `stress:` runs (the one declaring STRESS).
STRESS_TOOL = next(name for name, module in TOOLS.items() if getattr(module, "STRESS", False))
# Target kinds (the engines' registry's), each run against by a tool of this registry.
TARGET_KINDS = engines.TARGET_KINDS
# Metrics computed when results are read: {name: (sources, function)} of every tool.
DERIVED = {
    name: d for module in TOOLS.values() for name, d in getattr(module, "DERIVED", {}).items()
}
# {plan key: the tool that declares it} (a tool's PLAN_KEYS).
PLAN_KEYS = {
    key: name for name, module in TOOLS.items() for key in getattr(module, "PLAN_KEYS", ())
}


def get_tool(name: str) -> ModuleType:
    """Return the tool module for name, or raise KeyError listing the known ones."""
    key = name.replace("-", "_")
    if key not in TOOLS:
        raise KeyError(f"unknown tool {name!r}; known: {', '.join(TOOLS)}")
    return TOOLS[key]


def read_output(tool: ModuleType | str, text: str) -> Result:
    """tool.parse(text) (a tool module or name), with Python's cycle collector
    paused while it runs; ParseError as parse raises it.

    A long output becomes hundreds of thousands of small dicts and lists (a
    group per mysqlslap block, a test per redis-benchmark line), none of them
    in a reference cycle. Each 700 new containers start a collection, and the
    older generations are walked again and again as the result grows: 15-30 %
    of mysqlslap's and redis-benchmark's parse time on a 50 MB output
    (scripts/bench_parsers.py), more in a worker whose heap holds Django.
    The collector is left as it was found (a caller may have paused it).
    """
    module = get_tool(tool) if isinstance(tool, str) else tool
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return module.parse(text)
    finally:
        if was_enabled:
            gc.enable()


def duration_seconds(tool: str, params: dict) -> float | None:
    """Seconds one measured run of tool takes by its params, or None when the
    params name no duration (a count of queries or requests)."""
    module = get_tool(tool)
    # A plan may use an alias (sysbench's max_time is time): read canonical names.
    params = {module.ALIASES.get(name, name): value for name, value in params.items()}
    if hasattr(module, "duration_seconds"):
        return module.duration_seconds(params)
    value = params.get(module.DURATION_PARAM) if module.DURATION_PARAM else None
    return float(value) if value else None


def measured_seconds(tool: str, params: dict, metrics: dict) -> float | None:
    """Seconds one run of tool measured: the run time its output reported
    (the module's ELAPSED_METRIC), else its time limit by params, else None."""
    name = getattr(get_tool(tool), "ELAPSED_METRIC", None)
    reported = metrics.get(name) if name else None
    if isinstance(reported, int | float) and reported > 0:
        return float(reported)
    return duration_seconds(tool, params)


def tools_for_kind(kind: str, measured: bool = True) -> list[str]:
    """Names of the tools that run against a target of this kind (measured
    ones only by default), in registry order."""
    return [
        name
        for name, module in TOOLS.items()
        if kind in module.TARGET_KINDS and (module.MEASURED or not measured)
    ]


def default_tool(kind: str) -> str:
    """The tool a target of this kind is first checked with: the first whose
    TARGET_KIND it is, else the first that runs against it."""
    for name, module in TOOLS.items():
        if module.MEASURED and module.TARGET_KIND == kind:
            return name
    return tools_for_kind(kind)[0]


def metric(tool: str, name: str, unit: str = "") -> Metric:
    """The catalog row of a tool's metric (see runners.metrics.lookup); an
    unknown tool or metric is a plain number whose direction, if any, comes
    from its stored `unit`. A telemetry summary ("telemetry.target.cpu_busy_pct.mean")
    reads the telemetry catalog whatever the tool."""
    found = telemetry.metric(name)
    if found is not None:
        return found
    module = TOOLS.get((tool or "").replace("-", "_"))
    return lookup(getattr(module, "METRICS", {}) if module else {}, name, unit)


def main_metrics(tool: str) -> tuple[str, ...]:
    """The tool's MAIN_METRICS (the metrics that answer "how fast", best
    first); () for a tool no registry row names (an import)."""
    module = TOOLS.get((tool or "").replace("-", "_"))
    return tuple(getattr(module, "MAIN_METRICS", ())) if module else ()


def main_metric(tool: str, names=None) -> str | None:
    """The tool's main metric: the first of its MAIN_METRICS among `names`
    (the metrics a run or a plan has; any when None), else None."""
    candidates = main_metrics(tool)
    if names is None:
        return candidates[0] if candidates else None
    present = set(names)
    return next((name for name in candidates if name in present), None)


def direction(tool: str, name: str, unit: str = "") -> str | None:
    """Which way a metric is better: HIGHER, LOWER or None (neutral, a
    parameter, or unknown). Alerts, notifications, comparison colours,
    trend markers and price-performance all judge through this one function."""
    return metric(tool, name, unit).judged


def catalog(tool: str, names, units: dict | None = None) -> dict[str, dict]:
    """{name: Metric.to_dict()} for the names (JSON for pages and the API);
    `units` {name: unit} of stored measurements for names no catalog holds."""
    units = units or {}
    return {name: metric(tool, name, units.get(name, "")).to_dict() for name in names}


def tool_phases(tool: ModuleType, clean: dict) -> tuple[str, ...]:
    """The phases the tool has for these validated params: its PHASES, or
    fewer where its phases_for says one test lacks some (sysbench cpu runs only)."""
    rule = getattr(tool, "phases_for", None)
    return tuple(rule(clean)) if rule is not None else tuple(tool.PHASES)


def client_params(tool: ModuleType, clean: dict, index: int, count: int) -> dict:
    """Client `index`'s (1-based) params among `count` clients of one cell.

    One client runs the params as given; several get the tool's own rule
    (client_params in its module) against colliding, and a tool without one
    refuses (ValidationError) rather than guess.
    """
    if count == 1:
        return clean
    rule = getattr(tool, "client_params", None)
    if rule is None:
        raise ValidationError("client", f"{tool.NAME} cannot run from several clients")
    return rule(clean, index)


# Schemas of the server itself: a tool that drops its scratch schema must never name one.
SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")


def dropped_schemas(tool: ModuleType, clean: dict, count: int) -> list[str]:
    """The scratch schemas (SCHEMA_PARAM) the `count` clients of one cell
    create and drop, as each client's params name them (after the tool's
    per-client suffix: mysqlslap's `<schema>_c<i>`); [] for a tool without one
    or when its SCHEMA_KEPT_BY parameter (mysqlslap's no_drop) is set."""
    param = getattr(tool, "SCHEMA_PARAM", None)
    if param is None or clean.get(getattr(tool, "SCHEMA_KEPT_BY", None) or ""):
        return []  # no scratch schema, or one the tool is told not to drop
    names = [
        client_params(tool, clean, i, count).get(param, tool.SCHEMA_DEFAULT)
        for i in range(1, count + 1)
    ]
    return list(dict.fromkeys(names))


def check_dropped_schemas(
    tool: ModuleType, clean: dict, count: int, database: str | None, target: str = ""
) -> None:
    """ValidationError when a schema one of the `count` clients drops is the
    target's database or a system schema (compared without case: servers
    with lower_case_table_names fold it). target: its name, for the message."""
    for i, schema in enumerate(dropped_schemas(tool, clean, count), 1):
        folded = schema.lower()
        if database and folded == database.lower():
            what = f"{target}'s database" if target else "the target's database"
        elif folded in SYSTEM_SCHEMAS:
            what = "a system schema of the server"
        else:
            continue
        who = f" (client {i} of {count} works in {schema})" if count > 1 else ""
        raise ValidationError(
            tool.SCHEMA_PARAM,
            f"{tool.NAME} drops schema {schema} before and after its run{who}, and that is "
            f"{what}: its tables would be lost. Set {tool.SCHEMA_PARAM} to a scratch name of "
            f"its own ({tool.NAME} cannot run inside a database that holds data); the user "
            "needs CREATE and DROP on it.",
        )
