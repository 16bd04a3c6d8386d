"""Comparisons: side by side, deltas, diff, save, share links."""

import gzip
import json

import pytest

from benchapp.histories import comparisons
from benchapp.models import Comparison
from tests.benchapp.results_data import embedded_charts, make_run


def _threads_run(team, name, base, version="1.0.20", cpus=8):
    cells = [
        ({"target": "db8", "threads": t}, r, {"tps": base * t + r}) for t in (4, 16) for r in (1, 2)
    ]
    run = make_run(team, name=name, cells=cells)
    run.cells.update(tool_version=version, facts={"client": {"cpus": cpus, "kernel": "6.1"}})
    return run


@pytest.fixture
def pair(team):
    return _threads_run(team, "before", 10), _threads_run(team, "after", 12, "1.0.18", cpus=16)


@pytest.fixture
def comparison(team, pair, owner):
    return comparisons.save_comparison(team, "tuning", pair, user=owner)


def test_compare_puts_runs_side_by_side_with_deltas(comparison, pair):
    before, after = pair
    data = comparisons.compare(comparison)
    assert data["view"]["rows"] == ["threads"] and data["view"]["columns"] == ["run"]
    assert [c["key"][0] for c in data["table"]["columns"]] == [
        f"#{before.pk} before",
        f"#{after.pk} after",
    ]
    row4 = data["table"]["cells"][0]
    assert (row4[0].mean, row4[1].mean) == (41.5, 49.5)
    delta = data["deltas"][0][1]
    assert delta["delta"] == 8.0 and delta["change"] == pytest.approx(8 / 41.5)
    # two repeats a side: even 8 against 41.5 cannot be told from noise
    assert delta["verdict"] == "too few repeats" and delta["better"] is None
    assert data["deltas"][0][0] is None  # the baseline itself
    cell = data["display"][0]["cells"][1]
    assert cell["delta"].startswith("+19.3% (95 % CI ") and cell["delta"].endswith(
        " · too few repeats (2 vs 2)"
    )
    html_note = "two-sided Mann–Whitney U test over the repeats"
    assert html_note in data["test_method"] and data["test_minimum"] == "4 repeats on each side"


def _repeats_run(team, name, values, metric="tps"):
    return make_run(
        team, name=name, cells=[({"threads": 4}, r, {metric: v}) for r, v in enumerate(values, 1)]
    )


@pytest.mark.parametrize(
    "before, after, metric, verdict, better, p, ci",
    [
        # U = 0 of 16: exact two-sided p = 2 / C(8, 4) = 2/70. Means 11.5 -> 15.5 (+34.8 %);
        # Welch: s² = 5/3 each, se = √(5/6) = 0.91287, df = 6, t(.975, 6) = 2.44691,
        # half-width 2.23374 -> diff [1.76626, 6.23374] / 11.5.
        (
            [10, 11, 12, 13],
            [14, 15, 16, 17],
            "tps",
            "better",
            True,
            2 / 70,
            (1.76626 / 11.5, 6.23374 / 11.5),
        ),
        # The same numbers as latency: higher is worse.
        (
            [10, 11, 12, 13],
            [14, 15, 16, 17],
            "latency_avg_ms",
            "worse",
            False,
            2 / 70,
            (1.76626 / 11.5, 6.23374 / 11.5),
        ),
        # Means differ (25 -> 30, +20 %) but the repeats overlap: U = 6, P(U <= 6) = 24/70,
        # p = 48/70; s² = 500/3 each, se = √(250/3) = 9.12871, half-width 22.3374.
        (
            [10, 20, 30, 40],
            [15, 25, 35, 45],
            "tps",
            "no significant difference",
            None,
            48 / 70,
            (-17.3374 / 25, 27.3374 / 25),
        ),
    ],
)
def test_deltas_say_whether_a_difference_is_real(
    team, owner, before, after, metric, verdict, better, p, ci
):
    runs = [
        _repeats_run(team, "before", before, metric),
        _repeats_run(team, "after", after, metric),
    ]
    comp = comparisons.save_comparison(team, "judged", runs, user=owner)
    data = comparisons.compare(comp)
    delta = data["deltas"][0][1]
    assert delta["change"] == pytest.approx((sum(after) - sum(before)) / sum(before))
    assert (delta["verdict"], delta["better"]) == (verdict, better)
    assert delta["p_value"] == pytest.approx(p, rel=1e-6)
    assert (delta["ci_low"], delta["ci_high"]) == pytest.approx(ci, rel=1e-4)
    assert data["display"][0]["cells"][1]["better"] is better


def test_deltas_page_colours_only_significant_ones(owner_client, team, owner):
    runs = [
        _repeats_run(team, "before", [10, 11, 12, 13]),
        _repeats_run(team, "after", [14, 15, 16, 17]),
        _repeats_run(team, "noise", [10, 20, 30, 40]),
    ]
    comp = comparisons.save_comparison(team, "three", runs, user=owner)
    html = owner_client.get(f"/comparisons/{comp.pk}/").content.decode()
    assert (
        'class="delta better" data-verdict="better">+34.8% (95 % CI +15.4% to +54.2%) '
        "· better, p = 0.029</small>"
    ) in html
    assert 'class="delta" data-verdict="no significant difference">' in html
    assert "Mann–Whitney U" in html


def test_diff_shows_tool_versions_and_host_facts(comparison):
    diff = comparisons.compare(comparison)["diff"]
    assert diff["tool_versions"] == [
        {"name": "tool version", "values": ["1.0.20", "1.0.18"], "differs": True}
    ]
    facts = {r["name"]: r for r in diff["facts"]}
    assert facts["client.cpus"]["values"] == ["8", "16"] and facts["client.cpus"]["differs"]
    assert not facts["client.kernel"]["differs"]
    params = {r["name"]: r for r in diff["parameters"]}
    assert params["params.time"] == {
        "name": "params.time",
        "values": ["10", "10"],
        "differs": False,
    }


def test_comparison_of_cells_only(team, pair, owner):
    before, after = pair
    cells = [
        before.cells.get(key="target=db8,threads=4", repeat=1).pk,
        after.cells.get(key="target=db8,threads=4", repeat=1).pk,
    ]
    comp = comparisons.save_comparison(team, "narrow", pair, cells, user=owner)
    data = comparisons.compare(comp)
    assert len(data["cells"]) == 2 and len(data["table"]["rows"]) == 1


def test_save_comparison_refuses_other_teams_runs(team, outsider):
    other_run = make_run(outsider.teams.get(), name="theirs")
    from django.http import Http404

    with pytest.raises(Http404):
        comparisons.save_comparison(team, "x", [other_run])


def test_new_comparison_page_creates_one(owner_client, pair, team):
    response = owner_client.get("/comparisons/new/?tool=sysbench")
    assert set(response.context["runs"]) == set(pair)
    response = owner_client.get(f"/comparisons/new/?runs={pair[0].pk}&runs={pair[1].pk}")
    assert len(response.context["cell_choices"]) == 8
    response = owner_client.post(
        "/comparisons/new/", {"name": "tuning", "runs": [pair[0].pk, pair[1].pk]}
    )
    comp = Comparison.objects.get(team=team)
    assert response.status_code == 302 and response.url == f"/comparisons/{comp.pk}/"
    assert set(comp.runs.all()) == set(pair)


def test_comparison_pages_personas(
    owner_client, comparison, member, outsider, client, django_assert_max_num_queries
):
    with django_assert_max_num_queries(10):
        response = owner_client.get(f"/comparisons/{comparison.pk}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "tool version" in html and "js/comparison.js" in html
    with django_assert_max_num_queries(9):
        assert owner_client.get("/comparisons/").status_code == 200
    client.force_login(member)
    assert client.get(f"/comparisons/{comparison.pk}/").status_code == 200
    client.force_login(outsider)
    for url in ("", "results.json", "series.json?cells=1", "export.csv", "export.json"):
        assert client.get(f"/comparisons/{comparison.pk}/{url}").status_code == 404
    for url in ("share/", "revoke/", "delete/", "save/"):
        assert client.post(f"/comparisons/{comparison.pk}/{url}").status_code == 404
    assert "tuning" not in client.get("/comparisons/").content.decode()


def test_comparison_list_query_count_does_not_grow(
    owner_client, team, pair, owner, django_assert_max_num_queries
):
    for i in range(5):
        comparisons.save_comparison(team, f"c{i}", pair, user=owner)
    with django_assert_max_num_queries(9):
        response = owner_client.get("/comparisons/")
    assert len(response.context["comparisons"]) == 5


def test_save_keeps_the_view(owner_client, comparison, pair):
    owner_client.post(
        f"/comparisons/{comparison.pk}/save/",
        {
            "name": "tuning v2",
            "rows": "repeat",
            "metric": "tps",
            "baseline": f"#{pair[1].pk} after",
        },
    )
    comparison.refresh_from_db()
    assert comparison.name == "tuning v2"
    assert comparison.chart_settings == {
        "rows": ["repeat"],
        "metric": "tps",
        "baseline": f"#{pair[1].pk} after",
    }
    data = comparisons.compare(comparison)
    assert data["view"]["rows"] == ["repeat"] and data["baseline"] == f"#{pair[1].pk} after"


def _share(owner_client, comparison):
    response = owner_client.post(f"/comparisons/{comparison.pk}/share/", follow=True)
    (message,) = [str(m) for m in response.context["messages"]]
    return message.rsplit("/share/", 1)[1].strip("/")


def test_share_link_works_logged_out_and_exposes_nothing_else(
    owner_client, comparison, pair, team, client
):
    token = _share(owner_client, comparison)
    comparison.refresh_from_db()
    assert comparison.share_token_hash and token not in comparison.share_token_hash
    other = make_run(team, name="unrelated-run")
    owner_client.logout()
    response = client.get(f"/share/{token}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "tuning" in html and "Runs</a>" not in html  # no navigation
    assert f"/runs/{pair[0].pk}" not in html and "export" not in html.lower()
    assert "unrelated-run" not in html
    chart = client.get(f"/share/{token}/results.json").json()["chart"]
    assert chart["metric"] == "tps"
    cell = pair[0].cells.first()
    assert client.get(f"/share/{token}/series.json?cells={cell.pk}").json()["traces"]
    other_cell = other.cells.first() if other.cells.exists() else None
    if other_cell:
        traces = client.get(f"/share/{token}/series.json?cells={other_cell.pk}").json()
        assert traces["traces"] == []
    for url in (
        f"/runs/{pair[0].pk}/results/",
        f"/runs/{other.pk}/results/",
        f"/comparisons/{comparison.pk}/",
        f"/runs/{pair[0].pk}/export.json",
        "/archive/",
        "/comparisons/",
    ):
        response = client.get(url)
        assert response.status_code in (302, 404), url
        if response.status_code == 302:
            assert response.url.startswith("/login/")
    assert client.get("/share/not-a-token/").status_code == 404


def test_revoked_share_link_is_404(owner_client, comparison, client):
    token = _share(owner_client, comparison)
    owner_client.post(f"/comparisons/{comparison.pk}/revoke/")
    owner_client.logout()
    for url in ("", "results.json", "series.json"):
        assert client.get(f"/share/{token}/{url}").status_code == 404


def test_sharing_again_replaces_the_link(owner_client, comparison, client):
    first = _share(owner_client, comparison)
    second = _share(owner_client, comparison)
    assert client.get(f"/share/{first}/").status_code == 404
    assert client.get(f"/share/{second}/").status_code == 200


def test_comparison_export(owner_client, comparison, pair):
    body = owner_client.get(f"/comparisons/{comparison.pk}/export.csv").content.decode()
    assert body.count("\n") == 1 + 8
    doc = owner_client.get(f"/comparisons/{comparison.pk}/export.json").json()
    assert doc["comparison"]["name"] == "tuning"
    assert [r["id"] for r in doc["runs"]] == [pair[0].pk, pair[1].pk]


def test_delete(owner_client, comparison):
    assert owner_client.post(f"/comparisons/{comparison.pk}/delete/").status_code == 302
    assert not Comparison.objects.exists()


def test_saved_view_is_what_the_page_and_the_share_link_show(
    owner_client, comparison, pair, client
):
    after = f"#{pair[1].pk} after"
    chosen = {
        "rows": ["repeat"],
        "columns": ["run", "threads"],
        "metric": "tps",
        "statistic": "max",
        "chart_x": "threads",
        "chart": "box",
        "baseline": after,
    }
    owner_client.post(
        f"/comparisons/{comparison.pk}/save/", {"name": "tuning", **chosen}, follow=True
    )
    comparison.refresh_from_db()
    assert comparison.chart_settings == chosen
    token = _share(owner_client, comparison)

    def shown(response):
        data = response.context["data"]
        return {
            **{k: data["view"][k] for k in chosen if k != "baseline"},
            "baseline": data["baseline"],
        }

    assert shown(owner_client.get(f"/comparisons/{comparison.pk}/")) == chosen
    assert shown(client.get(f"/share/{token}/")) == chosen
    assert client.get(f"/share/{token}/results.json").json()["chart"]["type"] == "box"
    # Saving again from the page as shown (its form posts the view in effect) keeps it.
    html = owner_client.get(f"/comparisons/{comparison.pk}/").content.decode()
    assert '<input type="hidden" name="chart" value="box">' in html
    assert '<input type="hidden" name="statistic" value="max">' in html
    # A link to exactly this view, for bookmarks.
    assert (
        "?rows=repeat&amp;columns=run&amp;columns=threads&amp;metric=tps&amp;statistic=max" in html
    )
    # The URL overrides the saved view, one key at a time.
    response = owner_client.get(f"/comparisons/{comparison.pk}/?statistic=min")
    assert shown(response) == {**chosen, "statistic": "min"}


def test_pages_carry_what_results_json_serves_redacted_on_share(owner_client, team, client):
    runs = [
        make_run(
            team,
            name=n,
            cells=[({"target": "db1.internal", "threads": t}, 1, {"tps": t}) for t in (1, 4)],
        )
        for n in ("a", "b")
    ]
    comparison = comparisons.save_comparison(team, "hosts", runs)
    served = owner_client.get(f"/comparisons/{comparison.pk}/results.json").json()
    assert embedded_charts(owner_client.get(f"/comparisons/{comparison.pk}/")) == served
    assert any("db1.internal" in label for _id, label in served["cells"])
    token = _share(owner_client, comparison)
    owner_client.logout()
    page = client.get(f"/share/{token}/")
    assert "db1.internal" not in page.content.decode()
    assert embedded_charts(page) == client.get(f"/share/{token}/results.json").json()


def test_comparison_json_is_gzipped_for_browsers_that_accept_it(owner_client, comparison, client):
    token = _share(owner_client, comparison)
    for c, url in ((owner_client, f"/comparisons/{comparison.pk}/"), (client, f"/share/{token}/")):
        gzipped = c.get(url + "results.json", HTTP_ACCEPT_ENCODING="gzip")
        assert gzipped["Content-Encoding"] == "gzip"
        assert json.loads(gzip.decompress(gzipped.content)) == c.get(url + "results.json").json()
        assert not c.get(url, HTTP_ACCEPT_ENCODING="gzip").has_header("Content-Encoding")
