"""Metric lists in words: every list of metrics a page offers (the pivot
form, the comparison's, the trend's) names them by their catalog labels
("Transactions per second (tps)", "host CPU busy, mean (%)"), the tool's
own first with its main metric at the top, then the telemetry summaries
grouped by where they were measured (host, target, database, ...).

The names stay the values (URLs, saved views and the API keep them); only
what a reader sees changes.
"""

from __future__ import annotations

from runners import telemetry, tools


def label(tool: str, name: str, units: dict | None = None) -> str:
    """ "Transactions per second (tps)" or "host CPU busy, mean (%)"."""
    return tools.metric(tool, name, (units or {}).get(name, "")).title()


def group(tool: str, name: str) -> str:
    """The list group of a metric: "<source> telemetry" for a telemetry
    summary ("host telemetry"), else the tool's own ("sysbench")."""
    if telemetry.metric(name) is not None:
        source = name[len(telemetry.METRIC_PREFIX) :].split(".")[0]
        return f"{telemetry.source_label(source)} telemetry"
    return tool or "measured"


def grouped(tool: str, names, units: dict | None = None) -> list[tuple[str, list]]:
    """Django-style grouped choices [(group, [(name, label), ...])]: the
    tool's metrics first (its main metric at the top, then by label), then
    each telemetry source's summaries by label; groups in first-seen order."""
    names = list(names)
    main = tools.main_metric(tool, names)
    own = tool or "measured"
    ordered = sorted(names, key=lambda n: (group(tool, n) != own, n != main))
    groups: dict[str, list] = {}
    for name in ordered:
        groups.setdefault(group(tool, name), []).append((name, label(tool, name, units)))
    for key, rows in groups.items():
        head = rows[:1] if rows and rows[0][0] == main else []
        groups[key] = head + sorted(rows[len(head) :], key=lambda row: row[1].lower())
    return list(groups.items())


def as_json(tool: str, names, units: dict | None = None) -> list[dict]:
    """grouped() for a page's script: [{"group", "options": [{"value", "label"}]}]."""
    return [
        {"group": g, "options": [{"value": v, "label": text} for v, text in rows]}
        for g, rows in grouped(tool, names, units)
    ]
