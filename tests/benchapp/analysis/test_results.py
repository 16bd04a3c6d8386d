"""Pivot statistics, default views, downsampling and the run results pages."""

import gzip
import json
import math

import pytest

from benchapp.analysis import charts, pivot, results
from benchapp.models import Cell
from tests.benchapp.results_data import add_series, embedded_charts, make_run
from tests.support.measures import measure


def _obs(rows):
    """[(axes, metric, value)] -> Observations of distinct cells."""
    out = []
    for i, (axes, metric, value) in enumerate(rows):
        cell = pivot.CellInfo(i, 1, "#1 r", "k", axes.get("repeat", 1), "t1", axes, "succeeded")
        out.append(pivot.Observation(cell, "", metric, value))
    return out


@pytest.mark.parametrize(
    "values, mean, sd, cv",
    [
        # S5's three runs: deviations -228, -3676, 3904; squares sum 28,806,176; / (n-1) = 14,403,088
        ([7645, 4197, 11777], 7873.0, math.sqrt(14_403_088), math.sqrt(14_403_088) / 7873.0),
        ([10.0], 10.0, 0.0, 0.0),
        ([1.0, 2.0, 3.0, 4.0], 2.5, math.sqrt(5 / 3), math.sqrt(5 / 3) / 2.5),
        ([100.0, 104.0], 102.0, math.sqrt(8), math.sqrt(8) / 102.0),
    ],
)
def test_describe_statistics_match_hand_computed(values, mean, sd, cv):
    stats = pivot.describe(values, threshold=0.05)
    assert stats.n == len(values)
    assert stats.mean == pytest.approx(mean)
    assert stats.min == min(values) and stats.max == max(values)
    assert stats.stddev == pytest.approx(sd, rel=1e-6)
    assert stats.cv == pytest.approx(cv, rel=1e-6)
    assert stats.noisy == (cv > 0.05)


def test_pivot_groups_rows_and_columns():
    obs = _obs(
        [
            ({"target": "micro", "load_type": "read"}, "avg_s", 2.0),
            ({"target": "micro", "load_type": "read"}, "avg_s", 4.0),
            ({"target": "micro", "load_type": "write"}, "avg_s", 1.0),
            ({"target": "big", "load_type": "read"}, "avg_s", 0.5),
            ({"target": "big", "load_type": "read"}, "qps", 99.0),
        ]
    )
    table = pivot.pivot(obs, ["target"], ["load_type"], "avg_s")
    assert [r["label"] for r in table["rows"]] == ["big", "micro"]
    assert [c["label"] for c in table["columns"]] == ["read", "write"]
    big, micro = table["cells"]
    assert big[0].mean == 0.5 and big[1] is None
    assert (micro[0].mean, micro[0].n, micro[0].min, micro[0].max) == (3.0, 2, 2.0, 4.0)
    assert micro[0].stddev == pytest.approx(math.sqrt(2))
    assert micro[0].noisy
    assert table["margin"][1].mean == pytest.approx(7 / 3)


def test_pivot_sorts_numbers_numerically_and_shows_several_metrics():
    obs = _obs(
        [({"threads": t}, m, t * k) for t in (4, 16, 128) for m, k in (("tps", 1), ("qps", 20))]
    )
    table = pivot.pivot(obs, ["threads"], ["metric"], ["tps", "qps"])
    assert [r["key"] for r in table["rows"]] == [[4], [16], [128]]
    assert [c["label"] for c in table["columns"]] == ["qps", "tps"]
    assert table["cells"][2][0].mean == 128 * 20


def test_downsample_keeps_first_last_and_extremes():
    points = [(float(t), math.sin(t / 50.0)) for t in range(10_000)]
    points[4321] = (4321.0, 50.0)  # a spike
    points[777] = (777.0, -40.0)  # a stall
    out = charts.downsample(points, 200)
    assert len(out) <= 200
    assert out[0] == points[0] and out[-1] == points[-1]
    assert (4321.0, 50.0) in out and (777.0, -40.0) in out
    assert [p[0] for p in out] == sorted(p[0] for p in out)
    assert charts.downsample(points[:50], 200) == points[:50]


@pytest.mark.django_db
def test_only_latest_attempt_counts_and_fio_iops_are_derived(team):
    run = make_run(
        team,
        tool="fio",
        cells=[
            (
                {"rw": "read", "volumes": 1},
                1,
                {"read_iops": 100.0, "read_bw_kib_s": 1000.0},
                {"attempt": 2},
            ),
            ({"rw": "write", "volumes": 1}, 1, {"write_iops": 50.0}),
        ],
    )
    stale = run.cells.get(key="rw=read,volumes=1")
    measure(stale, "read_iops", 1e9, attempt=1)
    data = results.results([run])
    assert data["view"]["rows"] == ["rw"] and data["view"]["metric"] == "iops"
    cells = {
        r["label"]: line[0].mean for r, line in zip(data["table"]["rows"], data["table"]["cells"])
    }
    assert cells == {"read": 100.0, "write": 50.0}
    bw = pivot.pivot(results.load_observations(data["cells"]), ["rw"], [], "bw_mb_s")
    assert bw["cells"][0][0].mean == pytest.approx(1.024)


# ------------------------------------------------------------------ pages


def _s2_run(team):
    cells = []
    for cpu in (0, 2, 4):
        for rep in (1, 2):
            cells.append(
                (
                    {"stress.cpu": cpu},
                    rep,
                    {"tps": 1000.0 - cpu * 100 + rep, "qps": 20000.0, "latency_avg_ms": 5.0},
                )
            )
    cells.append(
        (
            {"stress.cpu": 8},
            1,
            {},
            {"status": Cell.FAILED, "error": "Err1317 Query execution was interrupted"},
        )
    )
    run = make_run(team, name="oltp-vs-cpu", cells=cells)
    run.cells.filter(key="stress.cpu=4", repeat=2).update(client_bound=True)
    return run


def test_results_page_access_and_content(owner_client, team, django_assert_max_num_queries):
    run = _s2_run(team)
    # 10: one of them reads the cells' machines (did cells overlap on one?),
    # one the names of the packed measurements' keys (benchapp.store.measurestore).
    with django_assert_max_num_queries(10):
        response = owner_client.get(f"/runs/{run.pk}/results/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Err1317 Query execution was interrupted" in html
    assert "client-bound" in html
    # repeats fold into n; each is listed, so the spread is visible
    assert 'title="n=2 · min 1,001 · max 1,002 · stddev 0.7071' in html
    assert "n=2: 1,001, 1,002" in html
    html = owner_client.get(f"/runs/{run.pk}/results/?rows=stress.cpu&rows=repeat").content.decode()
    assert 'title="n=1 · min 1,001 · max 1,001 · stddev 0' in html
    assert "js/run_results.js" in html and "vendor/plotly.min.js" in html


def test_results_page_member_ok_outsider_404(member_client, team, outsider, client):
    run = _s2_run(team)
    assert member_client.get(f"/runs/{run.pk}/results/").status_code == 200
    client.force_login(outsider)
    for url in ("results/", "results.json", "series.json?cells=1&metric=tps"):
        assert client.get(f"/runs/{run.pk}/{url}").status_code == 404
    client.logout()
    assert client.get(f"/runs/{run.pk}/results/").status_code == 302


def test_results_page_user_choices(owner_client, team):
    run = _s2_run(team)
    response = owner_client.get(
        f"/runs/{run.pk}/results/?rows=repeat&columns=stress.cpu&metric=qps&statistic=n"
    )
    view = response.context["data"]["view"]
    assert (view["rows"], view["columns"], view["metric"]) == (["repeat"], ["stress.cpu"], "qps")
    assert response.context["data"]["table"]["cells"][0][0].n == 1


def test_results_json_has_the_sweep_chart(owner_client, team):
    run = _s2_run(team)
    data = owner_client.get(f"/runs/{run.pk}/results.json").json()
    chart = data["chart"]
    assert chart["x_dim"] == "stress.cpu" and chart["numeric_x"] and chart["metric"] == "tps"
    # the failed stress.cpu=8 cell keeps its point: no value, its error
    assert [r["key"][0] for r in chart["rows"]] == [0, 2, 4, 8]
    first = chart["cells"][0][0]
    assert (first["min"], first["max"], first["n"]) == (1001.0, 1002.0, 2)
    failed = chart["cells"][3][0]
    assert (failed["n"], failed["mean"]) == (0, None)
    assert failed["errors"] == ["stress.cpu=8 #1: Err1317 Query execution was interrupted"]


def test_series_json_downsamples_to_twice_the_width(owner_client, team):
    run = _s2_run(team)
    cell = run.cells.first()
    add_series(cell, "tps", [float(i % 97) for i in range(3000)])
    add_series(cell, "tps", [1e6] * 10, attempt=5)  # an earlier attempt: ignored
    data = owner_client.get(
        f"/runs/{run.pk}/series.json?cells={cell.pk}&metric=tps&width=300"
    ).json()
    (trace,) = data["traces"]
    assert trace["total"] == 3000 and len(trace["x"]) <= 600 and max(trace["y"]) == 96.0
    assert data["max_points"] == 600
    data = owner_client.get(
        f"/runs/{run.pk}/series.json?cells={cell.pk}&metric=tps&width=1000"
    ).json()
    assert data["max_points"] == 2000 and len(data["traces"][0]["x"]) == 2000


def test_results_page_carries_what_results_json_serves(owner_client, team):
    run = _s2_run(team)
    for query in ("", "?metric=qps&rows=repeat&columns=stress.cpu&chart=box"):
        page = owner_client.get(f"/runs/{run.pk}/results/{query}")
        served = owner_client.get(f"/runs/{run.pk}/results.json{query}").json()
        assert embedded_charts(page) == {k: served[k] for k in ("view", "chart", "cells")}
    assert embedded_charts(page)["chart"]["type"] == "box"


def test_json_is_gzipped_for_browsers_that_accept_it_pages_are_not(owner_client, team):
    run = _s2_run(team)
    cell = run.cells.first()
    add_series(cell, "tps", [float(i % 97) for i in range(300)])
    for url in ("results.json", f"series.json?cells={cell.pk}&metric=tps"):
        plain = owner_client.get(f"/runs/{run.pk}/{url}")
        assert not plain.has_header("Content-Encoding")
        gzipped = owner_client.get(f"/runs/{run.pk}/{url}", HTTP_ACCEPT_ENCODING="gzip")
        assert gzipped["Content-Encoding"] == "gzip"
        assert json.loads(gzip.decompress(gzipped.content)) == plain.json()
    # The page holds a CSRF token beside what the URL asks for (BREACH): never compressed.
    page = owner_client.get(f"/runs/{run.pk}/results/?metric=tps", HTTP_ACCEPT_ENCODING="gzip")
    assert page.status_code == 200 and not page.has_header("Content-Encoding")
