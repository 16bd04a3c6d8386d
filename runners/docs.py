"""The plan file reference, generated from the tool registry.

    python -m runners.docs > docs/plan-reference.md

tests/test_docs.py fails when the committed file differs from what this
prints, so a parameter added to a tool's PARAMS is documented by running it.
"""

from __future__ import annotations

from runners.combine import MIN_OVERLAP
from runners.params import MAX_SQL_BYTES
from runners.phases import DEFAULT_LIMITS_S
from runners.plan import START_TOLERANCE_S
from runners.plantargets import MAX_CLIENTS
from runners.repeats import MAX_ADAPTIVE, MAX_REPEATS
from runners.safeyaml import MAX_DOCUMENT_BYTES
from runners.tools import TOOLS, sysbench


def _value(param) -> str:
    text = param.describe()
    if param.many:
        text += f" (or a list, joined with '{param.sep}')"
    if param.default is not None:
        text += f"; default {param.default}"
    return text


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def tool_section(name: str, module) -> list[str]:
    """Markdown lines of one tool: what it runs against, its parameters, metrics."""
    duration = getattr(module, "DURATION_PARAM", None)
    lines = [
        f"## {name}",
        "",
        f"Binary `{module.BINARY}` (Debian package `{module.PACKAGE}`); phases: "
        f"{', '.join(module.PHASES)}; target kinds: {', '.join(module.TARGET_KINDS)} "
        f"(default {module.TARGET_KIND}); "
        + (
            "measured tool"
            if module.MEASURED
            else "background load (`stress:`), not a measured tool"
        )
        + "; "
        + (f"duration parameter `{duration}`." if duration else "no duration parameter."),
        "",
        "### Parameters",
        "",
        "| name | option | value | meaning |",
        "|---|---|---|---|",
    ]
    for pname, param in module.PARAMS.items():
        option = f"`{param.option}`" if param.option else ""
        lines.append(f"| `{pname}` | {option} | {_cell(_value(param))} | {_cell(param.help)} |")
    aliases = getattr(module, "ALIASES", {})
    if aliases:
        lines += ["", "Aliases: " + ", ".join(f"`{a}` → `{c}`" for a, c in aliases.items()) + "."]
    lines += [
        "",
        "### Metrics",
        "",
        "| metric | label | unit | better | kind |",
        "|---|---|---|---|---|",
    ]
    for mname, metric in module.METRICS.items():
        lines.append(
            f"| `{mname}` | {_cell(metric.label)} | {metric.unit} | "
            f"{metric.judged or '— (neither)'} | {metric.kind} |"
        )
    if module.SERIES:
        lines += ["", "Per-second series: " + ", ".join(f"`{s}`" for s in module.SERIES) + "."]
    if getattr(module, "MEASURED", False):
        lines += ["", "Several clients: " + _rule(module)]
    return lines + [""]


def _rule(module) -> str:
    """The tool's rule against colliding clients: its client_params docstring."""
    rule = getattr(module, "client_params", None)
    if rule is None:
        return "refused (the tool has no rule against colliding clients)."
    paragraph = (rule.__doc__ or "").split("\n\n", 1)[-1]
    return " ".join(paragraph.split())


def repeat_section() -> list[str]:
    """Markdown lines of the plan's `repeat` key (its limits from runners.repeats)."""
    return [
        "## repeat",
        "",
        "How many times every combination of axis values runs.",
        "",
        "| form | meaning |",
        "|---|---|",
        f"| `repeat: 5` | every combination 5 times (1 to {MAX_REPEATS}; default 1) |",
        "| `repeat: {min: 3, max: 10, until_cv: 0.03, metric: tps}` | adaptive: at least "
        "`min` and at most `max` times; after each repeat, once `min` repeats succeeded, the "
        "combination stops when the coefficient of variation (sample standard deviation / "
        "mean) of `metric` over its succeeded repeats is at or below `until_cv` |",
        "",
        f"Adaptive repeats: `min` >= 2, `max` >= `min` and <= {MAX_ADAPTIVE}, `until_cv` a "
        "fraction between 0 and 1 (0.03 is 3%), `metric` one of the tool's metrics below. A "
        "run holds `max` cells per combination (the cell limit and the estimate count them); "
        "the repeats a stopped combination no longer needs are dropped. Each repeat that ran "
        "says how many ran and why they stopped (`repeat_stop`: reason `cv` or `max`, the "
        "number of repeats, the coefficient of variation and a one-line summary), on the run "
        "page, in the API and in the result document. With `order: interleaved` or "
        "`shuffled`, combinations stop independently. The plan builder's repeat fields write "
        "the same key.",
        "",
    ]


def prepare_section() -> list[str]:
    """Markdown lines of the plan's `prepare` and `cleanup` keys."""
    return [
        "## prepare and cleanup",
        "",
        "| key | meaning |",
        "|---|---|",
        "| `prepare: false` | no prepare phase (sysbench prepare, pgbench -i) |",
        "| `prepare: {once: true}` | prepare before a target's first cell only; without "
        "`cleanup: true` the next run reuses the tables an earlier run left when they are "
        "what the parameters prepare (sysbench `sbtest*`, pgbench's, counted exactly; the "
        "cell says which run prepared them), and refuses other sysbench tables before the "
        "measure |",
        "| `prepare: {params: {...}}` | parameters for the prepare phase only |",
        "| `prepare: {snapshot_datadir: true, datadir, snapshot_dir}` | after the prepare, "
        "copy the data directory aside (rsync -a --delete) with the server stopped; restore "
        "it the same way before every later cell (implies once). On a mysql target the "
        "tables' checksums (CHECKSUM TABLE) are taken before each measure and must equal "
        "those taken after the snapshot, else the cell fails; each cell keeps them in its "
        "facts (`data_checksums`) |",
        "| `prepare: {service_manager: systemctl \\| service, service: mysql}` | how the server "
        "is stopped and started around a copy (default systemctl mysql) |",
        "| `prepare: {service_manager: command, stop_command: [...], start_command: [...]}` | "
        "stop and start with these argument lists (no shell line); start_command returns "
        "once the server accepts connections |",
        "| `prepare: {service_manager: none}` | copy without stopping anything |",
        "| `cleanup: true` | with `prepare: {once: true}`: drop each target's data (sysbench "
        "cleanup) once the run's cells are over, succeeded, failed or cancelled, before the "
        "run ends; `cleanup: false` keeps per-cell prepared data too |",
        "",
        "Snapshots and service commands run on the target's machine (its `ssh:`), so a plan "
        "from the web or the API needs the target's admin to allow custom scripts there.",
        "",
        "## telemetry",
        "",
        "| key | meaning |",
        "|---|---|",
        "| `telemetry: false` | no host or database telemetry during the warmup, stress start "
        "and measure (on by default: see docs/telemetry.md) |",
        "| `targets: [{..., telemetry: false}]` | none for the cells of this target (neither "
        "its hosts nor its database are sampled) |",
        "| `targets: [{..., link_mbit: 1000}]` | the target host's link speed in Mb/s, declared: "
        "the network-bound rule measures that host's interfaces (all but `lo`) against it "
        'instead of the speed their drivers report (docs/telemetry.md, "Link speed") |',
        "| `targets: [{..., cloud_instance: {provider: NAME, ...}}]` | the existing managed "
        "instance the target is (its id under the provider's id field, `region`, the "
        "provider's credential field): its cloud monitoring joins each cell's telemetry when "
        "the run ends (docs/telemetry.md); not with `provision`, whose instance is read anyway |",
        "| `profile: true` | CPU profiles during the measure: `perf record -F 99 -g` of the "
        "database server (found by its listening port) and of the tool, on each machine where "
        "perf is installed and allowed; a flame graph on the cell page, a differential one in "
        'comparisons (docs/telemetry.md, "CPU profiles"). Off by default; on the worker host '
        "only when the operator sets BENCHBOARD_PROFILE_LOCAL |",
        "| `targets: [{..., profile: true}]` | the same for the cells of this target only |",
        "",
    ]


# What each phase of DEFAULT_LIMITS_S is, for the table.
_PHASE_MEANING = {
    "prepare": "the tool's prepare (sysbench prepare, pgbench -i)",
    "data_check": "counting the tables an earlier run prepared (prepare once)",
    "snapshot": "each step of saving the data directory (stop, copy, start)",
    "restore": "each step of restoring it",
    "checksum": "the tables' checksums (snapshot_datadir on mysql)",
    "warmup": "the warmup run",
    "measure": "the measured run (the app also stops a cell past "
    "BENCHBOARD_CELL_MAX_SECONDS, docs/operations.md)",
    "cleanup": "the tool's cleanup (per cell, or the run's final one)",
}


def phases_section() -> list[str]:
    """Markdown lines of the plan's `timeout` and each phase's limit."""
    rows = [
        f"| {phase} | {seconds:g} s | {_PHASE_MEANING[phase]} |"
        for phase, seconds in DEFAULT_LIMITS_S.items()
    ]
    run_only = ", ".join(sysbench.RUN_ONLY_TESTS)
    return [
        "## timeout and phase limits",
        "",
        "Every phase of a cell has a limit; past it the phase's processes are stopped (TERM, "
        "then KILL of the whole process group, on the worker or over SSH), the cell fails "
        "naming the phase, its limit and the tool's last output line (`prepare timed out "
        "after 20 s (the plan's timeout of 20 s); last output: ...`; the whole output stays "
        "in the cell's raw output), and the run goes on with its next cell.",
        "",
        "| key | meaning |",
        "|---|---|",
        "| `timeout: 600` | seconds the phases from prepare to the end of the measure may take "
        "together (each phase gets what the earlier ones left); the phases that tidy up "
        "after them (cleanup, a server's start after a data-directory copy) get the same "
        "number of seconds each on their own, at most their default below, so a failed or "
        "cancelled cell still ends within about twice the timeout |",
        "",
        "Without `timeout`, each phase's default:",
        "",
        "| phase | limit | what runs |",
        "|---|---|---|",
        *rows,
        "",
        "A phase the test does not have is skipped, not run: sysbench's "
        f"{run_only} tests have no prepare or cleanup, so a plan that leaves `prepare` on "
        "runs their measure only (the cell's facts say `skipped_phases`). Whatever a tool "
        "cannot do otherwise (an OLTP test against a host target, an option combination it "
        "refuses, several clients a tool cannot split) is refused when the plan is saved, "
        "naming the phase, the target and the cell: every command a cell would run is "
        "built then.",
        "",
        "A cancel stops the running phase the same way; the cell keeps its error (the phase "
        "it stopped and its last output, or the failure before the cancel) and the output "
        "of every phase that ran.",
        "",
    ]


def isolation_section() -> list[str]:
    """Markdown lines of the plan's `isolation` key."""
    return [
        "## isolation",
        "",
        "Which cells may run at the same moment. A cell loads machines: the database server "
        "behind its target (its resolved address and port: several targets on one server "
        "share it), the host of a host target, and its client host (the worker host for a "
        "local tool, the host the cell is placed on; an SSH client by resolved address and SSH "
        "port).",
        "",
        "| value | meaning |",
        "|---|---|",
        "| `isolation: machine` | (default) cells that share any machine never overlap, "
        "across runs, plans and teams; cells on disjoint machines run in parallel |",
        "| `isolation: run` | no other run of the team gets in between the run's cells: "
        "each cell holds the machines of every target of the run, and they pass from one "
        "cell to the next, unless a cell of another team waits for one of them: it gets it "
        "at the end of the running cell (another team waits for at most one cell) |",
        "| `isolation: target` | the run's cells may share machines with the team's own "
        "`isolation: target` cells (each target is still one cell at a time), never with "
        "another team's cell; the run, cell and results pages say where cells on shared "
        "machines overlapped |",
        "",
        "A waiting cell's reason is on the run page (\"waiting for machine 10.0.0.5:3306, "
        'held by run 12 cell threads=8").',
        "",
    ]


def clients_section() -> list[str]:
    """Markdown lines of the plan's `client` list, `client_hosts` and `start_tolerance`."""
    return [
        "## clients",
        "",
        "A cell may load its target from several client hosts at once. Each runs the same "
        "tool with the same params (threads, clients, jobs are per client), except where a "
        "tool's rule below keeps clients from colliding.",
        "",
        "| key | meaning |",
        "|---|---|",
        "| `client: [{ssh: {...}}, {local: true}, {on: target}, ...]` | the clients, in order; "
        f"at most {MAX_CLIENTS}, at most one `provision` |",
        "| `client: [{ssh: {...}, count: 3}]` | `count`: that client 3 times (e.g. three "
        "local clients) |",
        "| `axes: {client_hosts: [1, 2, 3]}` | a cell uses the first N listed clients; "
        "without the axis every cell uses all of them (`client_hosts`, because `clients` "
        "is pgbench's and redis-benchmark's own parameter) |",
        f"| `start_tolerance: 2` | seconds (default {START_TOLERANCE_S:g}) the clients' "
        "measured commands may start apart; a cell beyond it fails, not counted |",
        f"| `min_overlap: 0.9` | the share (default {MIN_OVERLAP:g}) of the whole span, first "
        "start to last end, during which every client ran; a cell below it fails, not "
        "counted |",
        "",
        "Prepare, warmup, cleanup, checksums and the database facts run from client 1 "
        "only (the data is shared). The measure starts on every client at one moment: one "
        "thread per client waits at a barrier, then launches its command; each client's "
        "measured window is kept (`client_windows`: its command's start to the end of the run "
        "time the tool reported, or of its time limit; the command's exit when neither is "
        "known), timed by the client's own clock: the command that runs the tool over SSH "
        "reads the host's clock right before the tool starts and right after it ends, and "
        "those times, less the host's clock offset to the worker (measured once per "
        "connection: the shortest of five round trips reading the host's clock, after the "
        "login's), are the window; `client_windows_clock` says `client` (or `worker` when a "
        "host gave no time) and `client_clock_offsets_s` the offsets. So a client whose "
        "login takes a second starts a second late, and `start_tolerance` refuses the cell "
        "naming that host. With `start_spread_s` and "
        "`overlap_share` (the share of the whole span when every client ran), checked "
        "against `min_overlap`. With a fixed amount of work (mysqlslap, redis-benchmark, fio "
        "without runtime) clients end apart on a busy machine: give enough work that they "
        "run for several seconds, or lower `min_overlap` knowingly. When one client fails, the others' commands "
        "are stopped (TERM then KILL of the process group, the SSH channel closed) and the "
        "cell fails naming that client. How the clients' figures combine: "
        "docs/results.md.",
        "",
    ]


def address_section() -> list[str]:
    """Markdown lines on where a target's clients connect (runners/endpoint.py)."""
    return [
        "## where clients connect",
        "",
        "Every client of a cell connects to one address: the target's `socket`, else its "
        "`connect_via` or `host`, and its `port`. A PostgreSQL `socket` may name the socket "
        "file (`/run/postgresql/.s.PGSQL.5433`, whose port it is) or its directory (the file "
        "for `port` in it). A target naming both `socket` and `host` (or `connect_via`) is "
        "refused: `targets[0].socket: give socket or host, not both` (a MySQL client takes TCP "
        "for any host but `localhost`, libpq a host before a socket). For a socket on a host "
        "reached over SSH, write `ssh: {host: ...}` and leave `host` out. A stored credential "
        "goes only where it is bound, from the client machine that connects "
        '(docs/trust-model.md, "Credentials belong to targets").',
        "",
    ]


def sizes_section() -> list[str]:
    return [
        "## sizes",
        "",
        f"A plan document is at most {MAX_DOCUMENT_BYTES} bytes (YAML or JSON). A SQL or "
        f"script parameter (`sql` kind: mysqlslap `create` and `query`, pgbench `script`, "
        f"sysbench `script`) is at most {MAX_SQL_BYTES} bytes of UTF-8 wherever it is set "
        "(params, prepare params, warmup, axes, overrides): a larger one is refused at save "
        "naming the parameter. A run stores each of its plan's large parts (scripts, "
        "parameters, targets) once, whatever its number of cells (docs/architecture.md, "
        '"Frozen cells").',
        "",
    ]


def render() -> str:
    """The whole reference as Markdown."""
    lines = [
        "# Plan file reference: repeats, prepare, isolation, clients and tools",
        "",
        "Generated from the tool registry (runners/tools) by "
        "`python -m runners.docs > docs/plan-reference.md`; do not edit by hand.",
        "A plan's `tool:` is one of the measured tools below; its `params:` (and axes and "
        "overrides over them) take the parameters of that tool. Metric names are those "
        "the results pages, exports and the API show.",
        "",
    ]
    lines += repeat_section() + prepare_section() + phases_section()
    lines += isolation_section() + clients_section() + address_section()
    lines += sizes_section()
    for name, module in TOOLS.items():
        lines += tool_section(name, module)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    print(render(), end="")
