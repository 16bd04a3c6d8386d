"""Environments read: a run's snapshots, and what differs between runs or cells.

A cell references its environment snapshot by hash (benchapp.store.envstore);
this module turns those into what the pages and the API show: the run page's
Environment view (each distinct snapshot, grouped: database, host, cloud,
tools), the comparison's "what differs" sections (one per group, a row per
setting, marked when it differs), and the API's snapshot-and-diff answer.
"""

from __future__ import annotations

import re

from benchapp.models import Cell, Run
from benchapp.store import envstore, frozenparts
from runners import environment

GROUP_TITLES = {
    "database": "environment: database",
    "host": "environment: host",
    "cloud": "environment: cloud",
    "tools": "environment: tools",
}
# Settings that name a machine or an address: left out of share pages, where
# host names are redacted (the redactor knows the team's targets, not a
# server's own idea of its name).
SHARE_HIDDEN = re.compile(
    r"(^|\.)(hostname|report_host|server_uuid|bind_address|listen_addresses|\w*_address"
    r"|kernel_cmdline|device|wsrep_\w+|dmi_product|server_id)(\.|$)"
)


def run_snapshots(run: Run) -> list[dict]:
    """Each distinct environment of run's cells: [{"hash", "content",
    "cells": [cell keys], "counts": {group: settings}}], the most used first."""
    used: dict[str, list[str]] = {}
    for key, digest in run.cells.exclude(environment=None).values_list("key", "environment_id"):
        used.setdefault(digest, []).append(key)
    found = envstore.contents(used)
    ordered = sorted(used, key=lambda d: -len(used[d]))
    return [
        {
            "hash": d,
            "content": found[d],
            "cells": sorted(set(used[d])),
            "counts": environment.count_keys(found[d]),
        }
        for d in ordered
        if d in found
    ]


def _per_run(runs: list[Run], cells) -> list[dict[str, dict[str, set]]]:
    """For each run, {group: {setting: {values over its cells' snapshots}}};
    cells: the comparison's CellInfo rows (their environment_id)."""
    hashes = [set() for _ in runs]
    position = {r.pk: i for i, r in enumerate(runs)}
    for cell in cells:
        if cell.environment_id and cell.run_id in position:
            hashes[position[cell.run_id]].add(cell.environment_id)
    found = envstore.contents(set().union(*hashes))
    out = []
    for digests in hashes:
        groups: dict[str, dict[str, set]] = {}
        for digest in digests:
            for group in GROUP_TITLES:
                flat = environment.flatten(found.get(digest, {}).get(group) or {})
                for key, value in flat.items():
                    groups.setdefault(group, {}).setdefault(key, set()).add(_text(value))
        out.append(groups)
    return out


def _text(value) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)


def _joined(values: set) -> str:
    return ", ".join(sorted(values)) if len(values) <= 4 else f"{len(values)} different values"


def sections(runs: list[Run], cells) -> dict[str, list[dict]]:
    """The comparison's environment sections: {title: [{"name", "values":
    [per run], "differs"}]}, differing rows first. Runs without a snapshot
    (recorded before environments were read) give no section."""
    per_run = _per_run(runs, cells)
    out = {}
    for group, title in GROUP_TITLES.items():
        names = sorted({k for run in per_run for k in run.get(group, {})})
        rows = []
        for name in names:
            values = [_joined(run.get(group, {}).get(name, set())) for run in per_run]
            rows.append({"name": name, "values": values, "differs": len(set(values)) > 1})
        if rows:
            out[title] = sorted(rows, key=lambda row: not row["differs"])
    return out


def for_share(diff: dict) -> dict:
    """diff without the environment rows that name machines (SHARE_HIDDEN)."""
    return {
        section: [r for r in rows if not SHARE_HIDDEN.search(r["name"])]
        if section in GROUP_TITLES.values()
        else rows
        for section, rows in diff.items()
    }


def cell_diff(before: Cell, after: Cell) -> dict:
    """{"before", "after": hashes, "diff": {group: [{"key", "before", "after"}]}}
    between two cells' environments, with the plan's parameters as group "plan"."""
    found = envstore.contents([before.environment_id, after.environment_id])
    a = dict(found.get(before.environment_id) or {})
    b = dict(found.get(after.environment_id) or {})
    a["plan"], b["plan"] = _cell_params(before), _cell_params(after)
    return {
        "before": before.environment_id,
        "after": after.environment_id,
        "diff": environment.diff(a, b),
    }


def _cell_params(cell: Cell) -> dict:
    """The cell's resolved tool parameters, from its frozen spec (parts resolved)."""
    return dict((frozenparts.frozen(cell).get("cell") or {}).get("params") or {})


def representative(run: Run) -> Cell | None:
    """The run's first cell (by index) with an environment: its snapshot
    stands for the run's in a run-to-run diff."""
    return run.cells.exclude(environment=None).order_by("index").first()


def run_diff(before: Run, after: Run) -> dict:
    """cell_diff of the two runs' representative cells; {} when either has none."""
    a, b = representative(before), representative(after)
    if a is None or b is None:
        return {}
    return cell_diff(a, b)
