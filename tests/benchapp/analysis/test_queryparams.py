"""Invalid query parameters on the reading pages: a 400 naming the parameter
and the values it accepts (benchapp.analysis.queryparams), never a 500 or silence."""

import pytest

from benchapp.analysis import queryparams
from benchapp.histories import comparisons
from tests.benchapp.results_data import make_run


def _run(team, name="r", base=100.0):
    cells = [({"threads": t}, r, {"tps": base * t + r}) for t in (4, 16) for r in (1, 2)]
    return make_run(team, name=name, cells=cells)


@pytest.mark.parametrize(
    "query, named, accepted",
    [
        ("statistic=medain", "statistic='medain'", "mean, median, p95, n, min, max"),
        ("metric=zzz", "metric='zzz'", "Accepted values: tps."),
        ("rows=bogus", "rows='bogus'", "threads, target, repeat, run, metric, group"),
        ("chart=pie", "chart='pie'", "line, bar, box"),
        ("chart_x=nope", "chart_x='nope'", "threads"),
    ],
)
def test_results_page_refuses_bad_parameter_naming_accepted_values(
    owner_client, team, query, named, accepted
):
    run = _run(team)
    response = owner_client.get(f"/runs/{run.pk}/results/?{query}")
    assert response.status_code == 400
    text = response.content.decode()
    assert named in text.replace("&#x27;", "'") and accepted in text
    data = owner_client.get(f"/runs/{run.pk}/results.json?{query}")
    assert data.status_code == 400 and data.json()["parameter"] == query.split("=")[0]


def test_comparison_page_refuses_unknown_baseline_and_accepts_good_ones(owner_client, team):
    before, after = _run(team, "before"), _run(team, "after", 120.0)
    comparison = comparisons.save_comparison(team, "c", [before, after])
    bad = owner_client.get(f"/comparisons/{comparison.pk}/?baseline=%2399+nope")
    assert bad.status_code == 400
    assert f"#{before.pk} before, #{after.pk} after" in bad.content.decode()
    good = owner_client.get(
        f"/comparisons/{comparison.pk}/",
        {"baseline": f"#{after.pk} after", "statistic": "median", "metric": ""},
    )
    assert good.status_code == 200 and good.context["data"]["baseline"] == f"#{after.pk} after"


def test_share_page_refuses_bad_statistic(client, team):
    before, after = _run(team, "before"), _run(team, "after", 120.0)
    token = comparisons.save_comparison(team, "c", [before, after]).share()
    response = client.get(f"/share/{token}/?statistic=avg")
    assert response.status_code == 400 and "statistic=&#x27;avg&#x27;" in response.content.decode()
    assert client.get(f"/share/{token}/results.json?metric=x").status_code == 400


def test_check_lets_empty_values_through_and_cuts_long_lists():
    from django.http import QueryDict

    queryparams.check(QueryDict("metric=&rows="), {"metric": ["tps"], "rows": ["a"]})
    with pytest.raises(queryparams.BadParameter) as found:
        queryparams.check(QueryDict("metric=x"), {"metric": [f"m{i}" for i in range(40)]})
    assert str(found.value).endswith("m29 (and 10 more).")
