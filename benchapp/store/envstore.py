"""Environment snapshots stored once, by content (benchapp.models.Environment).

A cell's runner reads its environment (runners.cellenv) and hands it over in
its facts; store() names it by hash and writes the row only when no cell
stored that content before. Concurrent cells of equal content race on the
primary key, which `ignore_conflicts` settles: one row, every cell a reference.
"""

from __future__ import annotations

from benchapp.models import Environment
from runners import environment


def store(snapshot: dict | None, mask=None) -> str | None:
    """Store a redacted snapshot (once) and return its hash; None for none.

    The snapshot is redacted again here (runners.environment.redact is
    idempotent), and `mask` (the run's secret book) replaces any secret the
    run used wherever it appears, whatever the setting's name.
    """
    if not snapshot:
        return None
    content = environment.redact({k: v for k, v in snapshot.items() if k != "read_seconds"})
    if mask is not None:
        content = _masked(content, mask)
    digest = environment.snapshot_hash(content)
    size = len(environment.canonical(content))
    Environment.objects.bulk_create(
        [Environment(hash=digest, content=content, size=size)], ignore_conflicts=True
    )
    return digest


def contents(hashes) -> dict[str, dict]:
    """{hash: content} of the given hashes, in one query."""
    wanted = {h for h in hashes if h}
    rows = Environment.objects.filter(hash__in=wanted).values_list("hash", "content")
    return dict(rows)


def _masked(value, mask):
    if isinstance(value, dict):
        return {k: _masked(v, mask) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v, mask) for v in value]
    return mask(value) if isinstance(value, str) else value
