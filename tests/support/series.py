"""Reading a columnar series (runners.results.Series) back as rows, in tests."""

from runners.results import Series


def series_to_rows(series: Series) -> list[dict]:
    """The rows of a series, each with only the metrics its line reported
    (the inverse of runners.results.rows_to_series)."""
    names = list(series)
    return [
        {name: value for name, value in zip(names, values) if value is not None}
        for values in zip(*series.values())
    ]
