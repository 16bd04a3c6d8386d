"""The comparison's reading aids: short run labels, the geometric mean of
ratios by the metric's direction, refusal of selections that do not compare."""

import datetime as dt
import math

import pytest

from benchapp.histories import comparisons
from benchapp.models import Run
from tests.benchapp.results_data import make_run


def _run(team, name, tps, latency=None, tool="sysbench"):
    """Two repeats per threads value; tps[i] and latency[i] for threads 4, 16, 64, 256."""
    cells = []
    for i, t in enumerate((4, 16, 64, 256)):
        metrics = {"tps": tps[i]}
        if latency:
            metrics["latency_avg_ms"] = latency[i]
        cells += [({"threads": t}, r, metrics) for r in (1, 2)]
    return make_run(team, name=name, tool=tool, cells=cells)


def test_short_label_is_number_and_day(team):
    run = Run.objects.create(
        team=team, name="a long and repeated nightly name", tool="fio", document={}
    )
    run.started_at = dt.datetime(2026, 11, 24, 3, 0, tzinfo=dt.UTC)
    assert comparisons.short_label(run) == f"#{run.pk} Tue 24 Nov"
    run.started_at = None
    run.created_at = dt.datetime(2026, 3, 2, tzinfo=dt.UTC)
    assert comparisons.short_label(run) == f"#{run.pk} Mon 2 Mar"


@pytest.mark.parametrize(
    "base, value, direction, expected",
    [
        (100.0, 118.0, "higher", 1.18),
        (10.0, 5.0, "lower", 2.0),  # half the latency: twice as good
        (10.0, 20.0, None, 2.0),  # no direction: the plain ratio
        (0.0, 5.0, "higher", None),
        (5.0, -1.0, "higher", None),
    ],
)
def test_speedup_turns_by_direction(base, value, direction, expected):
    assert comparisons.speedup(base, value, direction) == pytest.approx(expected)


def test_geometric_mean_treats_double_and_half_as_opposites():
    assert comparisons.geometric_mean([2.0, 0.5]) == pytest.approx(1.0)
    assert comparisons.geometric_mean([1.1, 1.2, 1.3]) == pytest.approx(
        math.prod([1.1, 1.2, 1.3]) ** (1 / 3)
    )
    assert comparisons.geometric_mean([]) is None


def test_summary_row_per_run_with_directions(team):
    base = _run(team, "base", [100, 200, 400, 800], latency=[10, 10, 10, 10])
    faster = _run(team, "faster", [110, 240, 480, 1000], latency=[5, 5, 5, 5])
    slower = _run(team, "slower", [80, 160, 320, 640], latency=[20, 20, 20, 20])
    comparison = comparisons.save_comparison(team, "c", [base, faster, slower])
    data = comparisons.compare(comparison, {"metric": ["tps", "latency_avg_ms"]})
    (panel,) = data["panels"]
    # runs are the columns; threads × metric the rows. Latency ratios are
    # turned: half the latency counts as 2× faster, double as 2× slower.
    assert data["view"]["rows"] == ["threads", "metric"]
    tps_gains = [1.1, 1.2, 1.2, 1.25]
    gain = math.prod(tps_gains + [2.0] * 4) ** (1 / 8)
    assert [s["text"] for s in panel["summary"]] == [
        "baseline",
        f"{gain:.2f}× faster",
        "1.58× slower",  # 1 / √(0.8 × 0.5)
    ]
    assert panel["summary"][1]["ratio"] == pytest.approx(gain) and panel["summary"][1]["n"] == 8
    assert [(o["label"], o["summary"]["text"]) for o in panel["overall"]] == [
        (comparisons.short_label(faster), f"{gain:.2f}× faster"),
        (comparisons.short_label(slower), "1.58× slower"),
    ]
    # the deltas judge each row by its own metric: lower latency is better
    latency_row = next(i for i, r in enumerate(data["table"]["rows"]) if "latency" in str(r["key"]))
    assert data["deltas"][latency_row][1]["change"] == pytest.approx(-0.5)


def test_summary_of_a_metric_without_direction_is_a_plain_ratio(team):
    a = make_run(team, name="a", cells=[({"threads": 4}, 1, {"threads_seen": 4.0})])
    b = make_run(team, name="b", cells=[({"threads": 4}, 1, {"threads_seen": 8.0})])
    data = comparisons.compare(comparisons.save_comparison(team, "c", [a, b]))
    assert data["panels"][0]["summary"][1]["text"] == "2.00× the baseline"


def test_runs_stand_side_by_side_as_the_only_column(team):
    a, b = _run(team, "a", [1, 2, 3, 4]), _run(team, "b", [2, 3, 4, 5])
    data = comparisons.compare(comparisons.save_comparison(team, "c", [a, b]))
    assert data["view"]["columns"] == ["run"]
    assert [c["label"] for c in data["panels"][0]["columns"]] == [
        comparisons.short_label(a),
        comparisons.short_label(b),
    ]


def test_run_problems_refuse_one_run_mixed_tools_and_too_many(team):
    fio = _run(team, "fio", [1, 2, 3, 4], tool="fio")
    slap = _run(team, "slap", [1, 2, 3, 4], tool="mysqlslap")
    assert comparisons.run_problems([fio]) == [
        "A comparison needs at least two runs: pick another run to compare with."
    ]
    (mixed,) = comparisons.run_problems([fio, slap])
    assert "different tools (fio, mysqlslap)" in mixed
    many = [_run(team, str(i), [1, 2, 3, 4]) for i in range(6)]
    assert comparisons.run_problems(many) == ["Pick at most 5 runs: more do not fit side by side."]
    assert comparisons.run_problems(many[:5]) == []


def test_new_comparison_form_refuses_one_run_with_the_reason(member_client, team):
    run = _run(team, "alone", [1, 2, 3, 4])
    response = member_client.post("/comparisons/new/", {"name": "x", "runs": [run.pk]})
    assert response.status_code == 200
    assert "A comparison needs at least two runs" in response.content.decode()
    assert not team.comparisons.exists()


def test_detail_page_warns_about_mixed_tools_made_elsewhere(member_client, team):
    fio = _run(team, "fio", [1, 2, 3, 4], tool="fio")
    slap = _run(team, "slap", [1, 2, 3, 4], tool="mysqlslap")
    comparison = comparisons.save_comparison(team, "old", [fio, slap])
    html = member_client.get(f"/comparisons/{comparison.pk}/").content.decode()
    assert 'class="card warn comparison-problem">These runs used different tools' in html


def test_api_refuses_a_one_run_comparison(team, member):
    from rest_framework.test import APIClient

    run = _run(team, "alone", [1, 2, 3, 4])
    client = APIClient()
    client.force_authenticate(member)
    response = client.post("/api/comparisons/", {"name": "x", "runs": [run.pk]}, format="json")
    assert response.status_code == 400
    assert "at least two runs" in str(response.json()["runs"])
