"""The per-second series store: one CellSeries row per (cell, attempt,
source, metric), times and values packed as little-endian float64 arrays.

Writers hand in a Result's columnar series (runners.results.Series);
readers get numpy arrays back, so a page never makes a Python object per
stored value until it has downsampled to what it sends.
"""

from __future__ import annotations

import numpy as np

from benchapp.models import CellSeries
from runners.results import Series

TOOL = "tool"  # the source of the tool's own interval lines
_FLOAT = np.dtype("<f8")


def pack(values) -> bytes:
    """A sequence of numbers as little-endian float64 bytes."""
    return np.asarray(values, dtype=_FLOAT).tobytes()


def unpack(blob) -> np.ndarray:
    """The float64 array packed by pack (bytes or a memoryview, as drivers return)."""
    return np.frombuffer(bytes(blob), dtype=_FLOAT)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def rows(cell, attempt: int, series: Series | None, source: str = TOOL) -> list[CellSeries]:
    """Unsaved CellSeries rows of a columnar series, one per metric; values
    that are missing (None) at a time are left out of that metric."""
    if not series:
        return []
    times = series.get("t", [])
    out = []
    for metric, values in series.items():
        if metric == "t":
            continue
        pairs = [(float(t), float(v)) for t, v in zip(times, values) if _is_number(v)]
        if not pairs:
            continue
        ts, vs = zip(*pairs)
        out.append(
            CellSeries(
                cell=cell,
                attempt=attempt,
                source=source,
                metric=metric,
                count=len(ts),
                t=pack(ts),
                values=pack(vs),
            )
        )
    return out


def read(
    attempts: dict[int, int], metric: str, source: str = TOOL
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """{cell id: (times, values)} of metric for each cell's given attempt (one query)."""
    qs = CellSeries.objects.filter(cell_id__in=list(attempts), metric=metric, source=source)
    out = {}
    for cell_id, attempt, t, values in qs.values_list("cell_id", "attempt", "t", "values"):
        if attempts[cell_id] == attempt:
            out[cell_id] = (unpack(t), unpack(values))
    return out


def points(cell_id: int, attempt: int, source: str = TOOL) -> list[tuple[float, str, float]]:
    """(t, metric, value) of every stored value of one attempt, metric by metric
    in time order: the row-per-value view, for exports and tests."""
    qs = CellSeries.objects.filter(cell_id=cell_id, attempt=attempt, source=source)
    out = []
    for metric, t, values in qs.order_by("metric").values_list("metric", "t", "values"):
        out += [(float(a), metric, float(b)) for a, b in zip(unpack(t), unpack(values))]
    return out
