"""Comparisons: runs (or some of their cells) side by side.

The page, the share page, the export and the API all call `compare`; a
Comparison row only stores the selection and the chosen pivot settings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.db import transaction
from django.http import Http404

from benchapp import crypto
from benchapp.analysis import environments, results, significance
from benchapp.analysis.tables import fmt
from benchapp.models import Cell, Comparison, Run, Team
from runners import stats, telemetry
from runners.metrics import HIGHER, LOWER
from runners.tools import direction as catalog_direction

# A comparison reads well with 2 to 5 runs side by side; more is refused at
# creation (the panels would scroll sideways again, which is what they fix).
MIN_RUNS, MAX_RUNS = 2, 5

# Facts that are per-cell noise or already shown elsewhere, not host facts.
# The telemetry's summaries are measurements (the pivot compares them) and
# the verdict is diffed as one row of headline codes ("what limited it").
SKIP_FACTS = {
    "tool_errors",
    "warnings",
    "client_bound",
    "version",
    "client_cpu_busy_pct",
    "telemetry",
    "verdict",
    "environment_read_s",
}


def comparison_runs(comparison: Comparison) -> list[Run]:
    return list(comparison.runs.order_by("pk"))


def compare(
    comparison: Comparison, requested: dict | None = None, baseline: str | None = None
) -> dict:
    """The comparison's results (pivot, deltas vs baseline, charts), the
    diff of parameters, tool versions and host facts, and what the page reads
    first: "panels" (one per metric, with the summary row), "short_labels"
    {run label: "#12 Tue 24 Nov"} and "problems" (run_problems)."""
    runs = comparison_runs(comparison)
    saved = dict(comparison.chart_settings or {})
    baseline = baseline or saved.pop("baseline", None)
    # What the URL leaves empty keeps the saved choice (an empty request
    # must not turn a saved view back into the default one).
    asked = {k: v for k, v in (requested or {}).items() if v not in (None, "", [])}
    data = results.results(runs, {**saved, **asked}, comparison.cells or None, baseline)
    data["runs"] = runs
    data["diff"] = diff(runs, data["cells"])
    data["problems"] = run_problems(runs)
    data["short_labels"] = {results.run_label(r): short_label(r) for r in runs}
    data["panels"] = [panel(data, t) for t in data["tables"]] if len(runs) > 1 else []
    _shorten_chart_labels(data)
    return data


def _shorten_chart_labels(data: dict) -> None:
    """The chart's legend names runs as the panels' headers do."""
    for col in (data.get("chart") or {}).get("columns", []):
        for long, brief in data["short_labels"].items():
            col["series"] = col["series"].replace(long, brief)


def run_problems(runs: list[Run]) -> list[str]:
    """Why these runs do not make a comparison (empty when they do): one run
    has nothing to compare with, different tools measure different things,
    and more than MAX_RUNS runs no longer fit side by side."""
    if len(runs) < MIN_RUNS:
        return ["A comparison needs at least two runs: pick another run to compare with."]
    problems = []
    tools = sorted({r.tool for r in runs})
    if len(tools) > 1:
        problems.append(
            "These runs used different tools ("
            + ", ".join(tools)
            + "): their metrics measure different things and cannot be compared. "
            "Pick runs of one tool."
        )
    if len(runs) > MAX_RUNS:
        problems.append(f"Pick at most {MAX_RUNS} runs: more do not fit side by side.")
    return problems


def short_label(run: Run) -> str:
    """ "#12 Mon 24 Nov": the run's number and day, short enough to head a
    column (the run's name is the column's tooltip)."""
    when = run.started_at or run.created_at
    return f"#{run.pk} {when:%a %-d %b}" if when else f"#{run.pk}"


# ------------------------------------------------------------------ panels


def panel(data: dict, table: dict) -> dict:
    """One metric's panel: the table's columns headed by short run labels and
    a summary row, the geometric mean of each column's ratios to the baseline,
    each with the caveat of the deltas under it (headline_caveat)."""
    short = data["short_labels"]
    columns = []
    for col in table["table"]["columns"]:
        label = str(col["label"])
        for long, brief in short.items():
            label = label.replace(long, brief)
        columns.append({"label": label, "title": col["label"], "key": col["key"]})
    args = (table["table"], data["baseline"], data["tool"], data["units"], table.get("deltas"))
    runs = [{**o, "label": short.get(o["run"], o["run"])} for o in overall(*args)]
    dims = table["table"]["column_dims"]
    summary = [
        s or ({"text": "baseline"} if data["baseline"] in col["key"] and "run" in dims else None)
        for s, col in zip(geometric_summary(*args), columns)
    ]
    return {
        **table,
        "columns": columns,
        "summary": summary,
        "overall": runs,
        "baseline_label": short.get(data["baseline"], data["baseline"]),
    }


@dataclass
class Ratios:
    """What one column (or one run's columns) holds against the baseline: the
    speedups of its rows, the directions of their metrics, and the rows'
    deltas (benchapp.analysis.significance), which say whether any of it is real."""

    ratios: list[float] = field(default_factory=list)
    directions: set = field(default_factory=set)
    deltas: list[dict] = field(default_factory=list)

    def extend(self, other: Ratios) -> None:
        self.ratios.extend(other.ratios)
        self.directions |= other.directions
        self.deltas.extend(other.deltas)

    def summary(self) -> dict | None:
        return _summary(geometric_mean(self.ratios), len(self.ratios), self.directions, self.deltas)


def speedup(base: float, value: float, direction: str | None) -> float | None:
    """How many times better value is than base (> 1: better) by the metric's
    direction; the plain ratio when the metric has none; None when a ratio
    means nothing (a zero or negative value)."""
    if base <= 0 or value <= 0:
        return None
    return base / value if direction == LOWER else value / base


def geometric_mean(ratios: list[float]) -> float | None:
    """The geometric mean (the mean of ratios that treats 2× and 0.5× as
    opposites, as OpenBenchmarking and SPEC summarise); None for no ratio."""
    if not ratios:
        return None
    return math.exp(math.fsum(math.log(r) for r in ratios) / len(ratios))


def geometric_summary(
    table: dict, baseline: str, tool: str, units: dict | None = None, deltas=None
) -> list:
    """Per column of a comparison's pivot: None for the baseline's own columns,
    else {"ratio", "n", "text", "better", "significant", "caveat"}: the
    geometric mean over the rows of the column's means against the baseline
    run's same cell, each ratio turned by its metric's direction (so 1.18
    means 18 % better, for a latency too)."""
    return [
        None if found is None else found.summary()
        for found in column_ratios(table, baseline, tool, units, deltas)
    ]


def overall(
    table: dict, baseline: str, tool: str, units: dict | None = None, deltas=None
) -> list[dict]:
    """Per run other than the baseline: {"run", "summary"}, the geometric mean
    of the ratios of all its cells in the table (every column of the run)."""
    dims = table["column_dims"]
    pooled: dict[str, Ratios] = {}
    for col, found in zip(table["columns"], column_ratios(table, baseline, tool, units, deltas)):
        if found is not None:
            pooled.setdefault(col["key"][dims.index("run")], Ratios()).extend(found)
    return [
        {"run": run, "summary": found.summary()} for run, found in pooled.items() if found.ratios
    ]


def column_ratios(
    table: dict, baseline: str, tool: str, units: dict | None = None, deltas=None
) -> list[Ratios | None]:
    """Per column: None for the baseline's own (or a column with no baseline
    twin), else its Ratios over the rows where both sides have a value;
    `deltas` (per row, per column, as significance.deltas gives them) adds
    each such row's delta."""
    units = units or {}
    dims = table["column_dims"]
    if "run" not in dims:
        return [None] * len(table["columns"])
    pos = dims.index("run")
    index = {tuple(c["key"]): j for j, c in enumerate(table["columns"])}
    out: list[Ratios | None] = []
    for j, col in enumerate(table["columns"]):
        key = list(col["key"])
        key[pos] = baseline
        base_j = index.get(tuple(key))
        if base_j is None or base_j == j:
            out.append(None)
            continue
        found = Ratios()
        for i, line in enumerate(table["cells"]):
            if not (line[j] and line[base_j] and line[j].n and line[base_j].n):
                continue
            name = significance.cell_metric(table, i, j)
            direction = catalog_direction(tool, name, units.get(name))
            ratio = speedup(line[base_j].mean, line[j].mean, direction)
            if ratio is not None:
                found.ratios.append(ratio)
                found.directions.add(direction)
                if deltas and deltas[i][j]:
                    found.deltas.append(deltas[i][j])
        out.append(found)
    return out


def _summary(ratio: float | None, n: int, directions: set, deltas=()) -> dict | None:
    """The summary cell's words: "1.18× faster", "1.18× slower", or "1.18×
    the baseline" when a metric in it has no better direction (its ratio is
    a plain one: "faster" would be a guess); with the caveat of its deltas
    (headline_caveat), and "significant" only when a delta under it is."""
    if ratio is None:
        return None
    if not directions or not directions <= {HIGHER, LOWER}:
        text, better = f"{ratio:.2f}× the baseline", None
    elif round(ratio, 2) == 1:
        text, better = "1.00× (same)", None
    elif ratio > 1:
        text, better = f"{ratio:.2f}× faster", True
    else:  # 0.85× reads as "1.18× slower": the same distance as 1.18× faster
        text, better = f"{1 / ratio:.2f}× slower", False
    significant, caveat = headline_caveat(list(deltas))
    return {
        "ratio": ratio,
        "n": n,
        "text": text,
        "better": better,
        "significant": significant,
        "caveat": caveat,
    }


# Verdicts of a delta that say the difference is real (better, worse, or
# different for a metric with no better direction).
SIGNIFICANT = {stats.BETTER, stats.WORSE, significance.DIFFERENT}


def headline_caveat(deltas: list[dict]) -> tuple[bool, str]:
    """(significant, caveat) of a headline resting on these deltas: whether
    any of them is significant, and the words that must stand beside the
    ratio ("" when every delta is significant). One repeat a side reads
    "1 repeat each: too few to test"; tested differences that are not real
    read "not significant, p = 0.2–0.34"; a partly real one "2 of 8
    differences significant". A headline with nothing significant under it is
    never shown as a conclusion (not bold, not coloured)."""
    if not deltas:
        return False, "no difference tested"
    real = [d for d in deltas if d["verdict"] in SIGNIFICANT]
    if real:
        shown = "" if len(real) == len(deltas) else f"{len(real)} of {len(deltas)} differences"
        return True, f"{shown} significant" if shown else ""
    tested = [d["p_value"] for d in deltas if d["verdict"] == stats.NOT_SIGNIFICANT]
    if tested:
        low, high = min(tested), max(tested)
        p = f"{low:.2g}" if f"{low:.2g}" == f"{high:.2g}" else f"{low:.2g}–{high:.2g}"
        return False, f"not significant, p = {p}"
    return False, _too_few(deltas)


def _too_few(deltas: list[dict]) -> str:
    """ "1 repeat each: too few to test", or "too few repeats (1 vs 3)"."""
    pairs = {(d["n_baseline"], d["n"]) for d in deltas}
    if len(pairs) == 1 and len({n for pair in pairs for n in pair}) == 1:
        n = next(iter(pairs))[0]
        return f"{n} repeat{'s' if n != 1 else ''} each: too few to test"
    return f"too few repeats ({min(b for b, _ in pairs)} vs {min(c for _, c in pairs)})"


# ------------------------------------------------------------ saving, sharing


@transaction.atomic
def save_comparison(
    team: Team,
    name: str,
    runs,
    cell_ids=(),
    user=None,
    chart_settings: dict | None = None,
    comparison: Comparison | None = None,
) -> Comparison:
    """Create (or update) a Comparison of the team's runs; cells narrow the runs
    and must belong to them. Raises Http404 for another team's run or cell."""
    runs = list(runs)
    if any(r.team_id != team.pk for r in runs):
        raise Http404("No such run")
    cell_ids = sorted({int(c) for c in cell_ids})
    if cell_ids:
        found = Cell.objects.filter(pk__in=cell_ids, run__in=runs).count()
        if found != len(cell_ids):
            raise Http404("No such cell")
    comparison = comparison or Comparison(team=team, created_by=user)
    comparison.name = name
    comparison.cells = cell_ids
    comparison.chart_settings = chart_settings or {}
    comparison.save()
    comparison.runs.set(runs)
    return comparison


def by_share_token(token: str) -> Comparison:
    """The shared comparison for a token (compared by hash) or Http404."""
    comparison = Comparison.objects.filter(share_token_hash=crypto.hash_token(token)).first()
    if comparison is None or not token:
        raise Http404("No such link")
    return comparison


# -------------------------------------------------------------------- diff


def _flatten(value, prefix=""):
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): value}


def run_parameters(run: Run) -> dict:
    """The plan's parameters as flat "params.threads" -> value (targets by name
    only: their addresses and credential names are not parameters)."""
    doc = dict(run.document or {})
    doc.pop("name", None)
    doc["targets"] = ", ".join(
        t if isinstance(t, str) else str(t.get("name")) for t in doc.get("targets") or []
    )
    doc.pop("client", None)
    return _flatten(doc)


def diff(runs: list[Run], cells: dict) -> dict:
    """Rows of {"name", "values": [per run], "differs"} for parameters, tool
    versions, host facts and the telemetry summaries that differ most
    (telemetry_rows); values of one run's cells are joined when they vary."""
    params = [run_parameters(r) for r in runs]
    versions = [set() for _ in runs]
    facts = [{} for _ in runs]
    summaries = [{} for _ in runs]
    position = {r.pk: i for i, r in enumerate(runs)}
    for cell in cells.values():
        i = position[cell.run_id]
        for name, value in telemetry.summary_metrics(
            (cell.facts or {}).get("telemetry") or {}
        ).items():
            summaries[i].setdefault(name, []).append(value)
        if cell.tool_version:
            versions[i].add(cell.tool_version)
        if cell.verdict:
            facts[i].setdefault("what limited it", set()).add(cell.verdict)
        for key, value in results.flatten_facts(cell.facts).items():
            if key.split(".")[0] not in SKIP_FACTS:
                facts[i].setdefault(key, set()).add(str(value))
    return {
        "parameters": _rows([{k: _show(v) for k, v in p.items()} for p in params]),
        "tool_versions": _rows([{"tool version": ", ".join(sorted(v))} for v in versions]),
        "facts": _rows([{k: _joined(v) for k, v in f.items()} for f in facts]),
        "telemetry": telemetry_rows(summaries),
        **environments.sections(runs, cells.values()),
    }


# The telemetry rows "what differs" shows: the summaries' means (a maximum
# repeats what its mean says), at most this many, those that differ by at
# least TELEMETRY_MIN_SPREAD between the runs (a hit ratio of 91 % against
# 99 % is 8 % apart, and eight times the misses), most different first.
TELEMETRY_ROWS = 8
TELEMETRY_MIN_SPREAD = 0.05


def telemetry_rows(per_run: list[dict[str, list[float]]]) -> list[dict]:
    """Rows of {"name" (in words: "host CPU busy, mean"), "values" (per run,
    the mean over its cells, with the unit), "differs", "spread"} of the
    telemetry means that differ most between the runs (host CPU, outside
    load, run queue, hit ratio...): a 2× gap measured on a busy machine
    against a quiet one shows here beside the parameters."""
    names = {n for summary in per_run for n in summary if n.endswith(".mean")}
    rows = []
    for name in names:
        means = [_mean(summary.get(name)) for summary in per_run]
        spread = _spread([m for m in means if m is not None])
        if spread is None or spread < TELEMETRY_MIN_SPREAD:
            continue
        found = telemetry.metric(name)
        unit = f" {found.unit}" if found.unit else ""
        values = ["" if m is None else f"{fmt(m)}{unit}" for m in means]
        rows.append({"name": found.label, "values": values, "differs": True, "spread": spread})
    rows.sort(key=lambda row: (-row["spread"], row["name"]))
    return rows[:TELEMETRY_ROWS]


def _mean(values: list[float] | None) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _spread(means: list[float]) -> float | None:
    """How far apart the runs' means are: (highest - lowest) / highest
    magnitude; None below two runs with a value, 0 when all are 0."""
    if len(means) < 2:
        return None
    top = max(abs(m) for m in means)
    return (max(means) - min(means)) / top if top else 0.0


def _joined(values: set) -> str:
    return ", ".join(sorted(values)) if len(values) <= 4 else f"{len(values)} different values"


def _show(value) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def _rows(per_run: list[dict]) -> list[dict]:
    names = sorted({k for d in per_run for k in d})
    rows = []
    for name in names:
        values = [d.get(name, "") for d in per_run]
        rows.append({"name": name, "values": values, "differs": len(set(values)) > 1})
    return rows
