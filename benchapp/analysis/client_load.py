"""Is the client the limit? One line above a results table.

A client-bound flag (the client's CPU above runners.facts.CLIENT_BOUND_PCT
during the measure) means something only when the client is a machine of
its own: with `client: {on: target}` (or a local client against a loopback
target) the busy CPU is the target's too, so the line shows that host's CPU
during the runs instead, and no cell is called client-bound.
"""

from __future__ import annotations

from benchapp.models import Run
from runners.combine import UNEVEN_SHARE
from runners.facts import CLIENT_BOUND_PCT

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def one_machine(run: Run) -> bool:
    """True when the run's tool ran on its target's host."""
    doc = run.document if isinstance(run.document, dict) else {}
    client = doc.get("client")
    # Several clients: one machine only when every one of them is the target's.
    return all(_on_target(doc, c) for c in (client if isinstance(client, list) else [client]))


def _on_target(doc: dict, client) -> bool:
    """True when this client (one entry of `client`) runs on its target's host."""
    if isinstance(client, dict) and client.get("local") is not True:
        return "on" in client
    if client not in (None, "local") and not isinstance(client, dict):
        return False
    hosts = [t.get("host") for t in doc.get("targets") or [] if isinstance(t, dict)]
    return bool(hosts) and all(h in LOOPBACK for h in hosts)


def _label(cell, several_runs: bool) -> str:
    return (f"{cell.run_label} " if several_runs else "") + f"{cell.key} #{cell.repeat}"


def summary(runs: list[Run], cells: dict) -> list[str]:
    """The lines to show above the table (none when there is nothing to say)."""
    shared = {r.pk for r in runs if one_machine(r)}
    several = len(runs) > 1
    lines = []
    bound = [c for c in cells.values() if c.client_bound and c.run_id not in shared]
    separate = [c for c in cells.values() if c.run_id not in shared]
    if bound:
        names = ", ".join(_label(c, several) for c in bound[:6])
        more = f" and {len(bound) - 6} more" if len(bound) > 6 else ""
        lines.append(
            f"Client-bound: {len(bound)} of {len(separate)} cells ({names}{more}) ran "
            f"with the client's CPU above {CLIENT_BOUND_PCT:g} % busy: the client, not "
            "the target, may be their limit."
        )
    busy = [c.facts.get("client_cpu_busy_pct") for c in cells.values() if c.run_id in shared]
    busy = [b for b in busy if isinstance(b, (int, float))]
    if busy:
        lines.append(
            f"Client and target are one machine: its CPU was {min(busy):.0f}–"
            f"{max(busy):.0f} % busy during the runs (mean "
            f"{sum(busy) / len(busy):.0f} %, {len(busy)} cells), the tool's share "
            "included."
        )
    return lines + several_clients(cells, several)


def several_clients(cells: dict, several_runs: bool) -> list[str]:
    """One line on the cells loaded from several client hosts (runners.combine):
    how far apart the clients started, and the cells whose load was uneven."""
    multi = [c for c in cells.values() if (c.facts or {}).get("clients", 1) > 1]
    if not multi:
        return []
    counts = sorted({c.facts["clients"] for c in multi})
    hosts = f"{counts[0]}" if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    spread = max(c.facts.get("start_spread_s") or 0.0 for c in multi)
    line = (
        f"Several clients: {len(multi)} cells loaded their target from {hosts} client hosts "
        f"together, started at most {spread * 1000:.0f} ms apart; each client's figures are "
        "the groups client=N."
    )
    uneven = [c for c in multi if c.facts.get("uneven_clients")]
    if uneven:
        named = ", ".join(
            f"{_label(c, several_runs)} (client {', '.join(map(str, c.facts['uneven_clients']))})"
            for c in uneven[:6]
        )
        line += (
            f" Uneven load in {len(uneven)} cells: {named} made less than "
            f"{UNEVEN_SHARE:.0%} of the "
            "clients' median throughput."
        )
    return [line]


def clear_shared(runs: list[Run], cells: dict) -> None:
    """Drop the client-bound flag of cells whose client was their target's host."""
    shared = {r.pk for r in runs if one_machine(r)}
    for cell in cells.values():
        if cell.run_id in shared:
            cell.client_bound = False
