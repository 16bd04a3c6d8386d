"""Builders of runs with known measurements for the results tests."""

import json

from benchapp.models import Cell, CellSeries, Run
from benchapp.store import measurestore, seriesstore


def make_run(
    team, name="run", tool="sysbench", cells=(), status=Run.SUCCEEDED, document=None, **kw
):
    """cells: [(axes, repeat, {metric: value}, extra Cell fields)] -> Run.
    document: plan keys over the default (name, tool, params, axes)."""
    axes_names = []
    for axes, *_ in cells:
        axes_names += [a for a in axes if a not in axes_names]
    doc = {
        "name": name,
        "tool": tool,
        "params": {"time": 10},
        "axes": {a: [] for a in axes_names},
        **(document or {}),
    }
    run = Run.objects.create(team=team, name=name, tool=tool, status=status, document=doc, **kw)
    for i, (axes, repeat, metrics, *extra) in enumerate(cells, 1):
        fields = {"status": Cell.SUCCEEDED, "attempt": 1, **(extra[0] if extra else {})}
        key = ",".join(f"{k}={axes[k]}" for k in sorted(axes))
        fields.setdefault("target_name", str(axes.get("target", "t1")))
        cell = Cell.objects.create(run=run, index=i, key=key, repeat=repeat, axes=axes, **fields)
        measurestore.write(
            cell,
            cell.attempt,
            [
                measurestore.Value(run.pk, cell.pk, cell.attempt, 0, "", m, v)
                for m, v in metrics.items()
            ],
        )
    return run


def add_series(cell, metric, values, attempt=None):
    series = {"t": [float(t) for t in range(1, len(values) + 1)], metric: list(values)}
    CellSeries.objects.bulk_create(seriesstore.rows(cell, attempt or cell.attempt, series))


def embedded_charts(response) -> dict:
    """The #charts-data block a results page carries (json_script)."""
    html = response.content.decode()
    start = html.index('<script id="charts-data" type="application/json">')
    body = html[html.index(">", start) + 1 : html.index("</script>", start)]
    return json.loads(body)
