"""The measurement store: every measurement of one cell attempt in one
CellMeasurements row, packed as arrays, its text (group, metric, unit) as
MeasureKey ids. The one module that writes and reads measurements.

Writers hand in Value rows (benchapp.runs.recording.measurement_rows makes them
from a Result); readers get Value rows back, filtered by run, cell, metric
and group, by default only of each cell's latest attempt.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np
from django.db import transaction
from django.db.models import F, Sum, Window

from benchapp.models import CellMeasurements, MeasureKey, RunMetric
from runners.tools import DERIVED

_KEY = np.dtype("<i4")
_ITERATION = np.dtype("<i4")
_FLOAT = np.dtype("<f8")


@dataclass(frozen=True, slots=True)
class Value:
    """One measurement: (cell, attempt, iteration, group, metric) -> value."""

    run_id: int
    cell_id: int
    attempt: int
    iteration: int
    group: str
    metric: str
    value: float
    unit: str = ""


def key_ids(names: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], int]:
    """{(group, metric, unit): MeasureKey id}, creating the keys not yet stored.

    Not cached between calls: a rolled-back transaction can free an id that
    SQLite then gives to another key, and a cached id would name the wrong metric."""
    names = set(names)
    if not names:
        return {}
    MeasureKey.objects.bulk_create(
        [MeasureKey(group=g, metric=m, unit=u) for g, m, u in names], ignore_conflicts=True
    )
    stored = MeasureKey.objects.filter(metric__in={m for _g, m, _u in names})
    ids = {(g, m, u): pk for pk, g, m, u in stored.values_list("pk", "group", "metric", "unit")}
    return {name: ids[name] for name in names}


def _names(ids: set[int]) -> dict[int, tuple[str, str, str]]:
    """{MeasureKey id: (group, metric, unit)} (one query, none for no ids)."""
    if not ids:
        return {}
    keys = MeasureKey.objects.filter(pk__in=ids)
    return {pk: (g, m, u) for pk, g, m, u in keys.values_list("pk", "group", "metric", "unit")}


def _check(values: list[Value]) -> None:
    """ValueError when two values of one attempt share (iteration, group, metric)."""
    names = {(v.iteration, v.group, v.metric) for v in values}
    if len(names) != len(values):
        raise ValueError("two values of one (iteration, group, metric) in one attempt")


def _pack(values: list[Value], ids: dict) -> dict:
    """The packed fields (count, keys, iterations, values) of one attempt's values."""
    iterations = [v.iteration for v in values]
    return {
        "count": len(values),
        "keys": np.array([ids[(v.group, v.metric, v.unit)] for v in values], _KEY).tobytes(),
        "iterations": np.array(iterations, _ITERATION).tobytes() if any(iterations) else b"",
        "values": np.array([v.value for v in values], _FLOAT).tobytes(),
    }


@transaction.atomic
def write(cell, attempt: int, values: list[Value]) -> None:
    """Replace the stored measurements of one cell attempt by values (none: no row).
    ValueError, and nothing changed, when two values share (iteration, group, metric)."""
    _check(values)
    old = [v for v in read(cells=[cell.pk], all_attempts=True) if v.attempt == attempt]
    _count(cell.run_id, old, sign=-1)
    CellMeasurements.objects.filter(cell_id=cell.pk, attempt=attempt).delete()
    add([(cell, attempt, values)])


def add(attempts: list[tuple]) -> None:
    """Store the values of attempts that have none yet: [(cell, attempt,
    [Value])], in a few INSERTs however many (an import's hundreds of cells)."""
    for _cell, _attempt, values in attempts:
        _check(values)
    ids = key_ids((v.group, v.metric, v.unit) for _c, _a, values in attempts for v in values)
    CellMeasurements.objects.bulk_create(
        (
            CellMeasurements(
                run_id=cell.run_id, cell_id=cell.pk, attempt=attempt, **_pack(values, ids)
            )
            for cell, attempt, values in attempts
            if values
        ),
        batch_size=1000,
    )
    for run_id in {cell.run_id for cell, _a, _v in attempts}:
        _count(run_id, [v for cell, _a, vs in attempts if cell.run_id == run_id for v in vs])


def _count(run_id: int, values: list[Value], sign: int = 1) -> None:
    """Add (sign -1: take away) values to their run's RunMetric totals, with
    the DERIVED metrics they make (fio's IOPS, read + write): a run's
    headline mean of a derived metric cannot be rebuilt from its sources'
    totals when some cells lack a source (a read-only job has no write IOPS)."""
    sums: dict[str, list] = {}
    for v in values + _derived(values):
        entry = sums.setdefault(v.metric, [v.unit, 0, 0.0])
        entry[1] += 1
        entry[2] += v.value
    if not sums:
        return
    RunMetric.objects.bulk_create(
        [RunMetric(run_id=run_id, metric=m, unit=u) for m, (u, _n, _t) in sums.items()],
        ignore_conflicts=True,
    )
    for metric, (_unit, n, total) in sums.items():
        RunMetric.objects.filter(run_id=run_id, metric=metric).update(
            count=F("count") + sign * n, total=F("total") + sign * total
        )


def _derived(values: list[Value]) -> list[Value]:
    """The DERIVED metrics (runners.tools.DERIVED) of each set of values
    (one cell attempt, iteration and group) that has their sources, as
    results.load_observations computes them when results are read."""
    sets: dict[tuple, dict[str, float]] = {}
    for v in values:
        sets.setdefault((v.run_id, v.cell_id, v.attempt, v.iteration, v.group), {})[v.metric] = (
            v.value
        )
    out = []
    for (run_id, cell_id, attempt, iteration, group), found in sets.items():
        for name, (_sources, fn) in DERIVED.items():
            value = None if name in found else fn(found)
            if value is not None:
                out.append(Value(run_id, cell_id, attempt, iteration, group, name, value))
    return out


def read(
    *,
    runs: Iterable[int] | None = None,
    cells: Iterable[int] | None = None,
    metrics: Iterable[str] | None = None,
    group: str | None = None,
    all_attempts: bool = False,
) -> Iterator[Value]:
    """The stored Values of the runs (or cells), each cell's latest attempt
    unless all_attempts; only of `metrics` and of `group` when given.
    In cell, then stored, order. Two queries at most (rows, unknown keys)."""
    qs = CellMeasurements.objects.all()
    if runs is not None:
        qs = qs.filter(run_id__in=list(runs))
    if cells is not None:
        qs = qs.filter(cell_id__in=list(cells))
    if not all_attempts:
        qs = qs.filter(attempt=F("cell__attempt"))
    return unpacked(qs, metrics, group)


def unpacked(rows, metrics=None, group: str | None = None) -> Iterator[Value]:
    """The Values of a CellMeasurements queryset, in (cell, attempt, stored)
    order, only of `metrics` and `group` when given (two queries)."""
    rows = list(
        rows.order_by("cell_id", "attempt").values_list(
            "run_id", "cell_id", "attempt", "keys", "iterations", "values"
        )
    )
    names = _names({int(k) for row in rows for k in np.frombuffer(bytes(row[3]), _KEY)})
    wanted = set(metrics) if metrics is not None else None
    for run_id, cell_id, attempt, keys, iterations, values in rows:
        keys = np.frombuffer(bytes(keys), _KEY)
        numbers = np.frombuffer(bytes(values), _FLOAT)
        steps = np.frombuffer(bytes(iterations), _ITERATION) if iterations else None
        for i, key in enumerate(keys.tolist()):
            g, metric, unit = names[key]
            if (wanted is None or metric in wanted) and (group is None or g == group):
                iteration = int(steps[i]) if steps is not None else 0
                yield Value(run_id, cell_id, attempt, iteration, g, metric, float(numbers[i]), unit)


class Listing:
    """The Values of a CellMeasurements queryset as a sequence a paginator
    cuts (len and slices) without unpacking every row: without a metric the
    length is the rows' stored counts and a page reads only the rows it
    covers (a running total of the counts, in the database); with a metric
    the rows are unpacked and filtered."""

    def __init__(self, rows, metric: str = ""):
        self.rows = rows.order_by("cell_id", "attempt")
        self.metric = metric
        self._length = None

    def __len__(self) -> int:
        if self._length is None:
            if self.metric:
                self._length = sum(1 for _v in unpacked(self.rows, [self.metric]))
            else:
                self._length = self.rows.aggregate(n=Sum("count"))["n"] or 0
        return self._length

    def __getitem__(self, cut: slice) -> list[Value]:
        start, stop = cut.start or 0, cut.stop if cut.stop is not None else len(self)
        if self.metric:
            return list(unpacked(self.rows, [self.metric]))[start:stop]
        # Each row holds at least one value: the page's rows are the first
        # (stop - start) whose running total passes start.
        order = [F("cell_id").asc(), F("attempt").asc()]
        running = self.rows.annotate(upto=Window(Sum("count"), order_by=order))
        covering = running.filter(upto__gt=start)[: max(stop - start, 0)]
        pks = list(covering.values_list("pk", "upto", "count"))
        if not pks:
            return []
        skip = start - (pks[0][1] - pks[0][2])  # values of the first row before start
        values = list(unpacked(CellMeasurements.objects.filter(pk__in=[p for p, _u, _c in pks])))
        return values[skip : skip + stop - start]


def count(runs: Iterable[int]) -> int:
    """How many values are stored for the runs, every attempt (one query)."""
    total = CellMeasurements.objects.filter(run_id__in=list(runs)).aggregate(n=Sum("count"))
    return total["n"] or 0


def metric_units(runs: Iterable[int]) -> dict[str, str]:
    """{metric: unit} of every metric stored for the runs (any attempt), from
    their RunMetric totals: one query, whatever the runs' size."""
    totals = RunMetric.objects.filter(run_id__in=list(runs), count__gt=0).order_by("pk")
    units: dict[str, str] = {}
    for metric, unit in totals.values_list("metric", "unit"):
        units[metric] = units.get(metric) or unit
    return units
