"""Storing and reading single measurements in tests, through the one
measurement store (benchapp.store.measurestore), which keeps an attempt's values packed."""

from benchapp.store import measurestore
from benchapp.store.measurestore import Value


def measure(cell, metric: str, value: float, *, attempt=None, group="", unit="", iteration=0):
    """Add one value to what is stored for the cell's attempt (its latest by default)."""
    attempt = cell.attempt if attempt is None else attempt
    kept = [
        v for v in measurestore.read(cells=[cell.pk], all_attempts=True) if v.attempt == attempt
    ]
    new = Value(cell.run_id, cell.pk, attempt, iteration, group, metric, float(value), unit)
    measurestore.write(cell, attempt, kept + [new])


def stored(**filters) -> list[Value]:
    """Every stored Value (all attempts) of runs=[...] / cells=[...], metrics, group."""
    return list(measurestore.read(all_attempts=True, **filters))
