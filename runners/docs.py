"""The plan file reference, generated from the tool registry.

    python -m runners.docs > docs/plan-reference.md

tests/test_docs.py fails when the committed file differs from what this
prints, so a parameter added to a tool's PARAMS is documented by running it.
"""

from __future__ import annotations

from runners.combine import MIN_OVERLAP
from runners.plan import START_TOLERANCE_S
from runners.planspec import MAX_CLIENTS
from runners.repeats import MAX_ADAPTIVE, MAX_REPEATS
from runners.tools import TOOLS


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
        "| `isolation: run` | nothing else runs on the run's machines while the run runs: "
        "each cell holds the machines of every target of the run, and they pass from one "
        "cell to the next |",
        "| `isolation: target` | only cells of one target are kept apart (Benchboard's "
        "behaviour before machines were known); the results page says where cells on "
        "shared machines overlapped |",
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
        "known), with `start_spread_s` and "
        "`overlap_share` (the share of the whole span when every client ran), checked "
        "against `min_overlap`. With a fixed amount of work (mysqlslap, redis-benchmark, fio "
        "without runtime) clients end apart on a busy machine: give enough work that they "
        "run for several seconds, or lower `min_overlap` knowingly. When one client fails, the others' commands "
        "are stopped (TERM then KILL of the process group, the SSH channel closed) and the "
        "cell fails naming that client. How the clients' figures combine: "
        "docs/results.md.",
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
    lines += repeat_section() + prepare_section() + isolation_section() + clients_section()
    for name, module in TOOLS.items():
        lines += tool_section(name, module)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    print(render(), end="")
