"""A comparison's headline carries the caveat of the deltas under it, and
reads as a conclusion (bold, coloured) only when one of them is significant."""

import pytest

from benchapp.histories import comparisons
from tests.benchapp.results_data import make_run

# tps per repeat of the baseline and the candidate, at two threads values
CASES = {
    # one repeat each: 1.72× slower on paper, nothing testable
    "one repeat each": ([1720.0], [1000.0], False, "1 repeat each: too few to test"),
    # four repeats each that overlap: a ratio, not a difference
    "not significant": (
        [100.0, 140.0, 90.0, 130.0],
        [120.0, 95.0, 150.0, 105.0],
        False,
        "not significant, p = ",
    ),
    # four repeats each, far apart: a real difference
    "significant": ([100.0, 101.0, 102.0, 103.0], [150.0, 151.0, 152.0, 153.0], True, ""),
}


def _run(team, name, values):
    cells = [({"threads": t}, r, {"tps": v * t}) for t in (4, 16) for r, v in enumerate(values, 1)]
    return make_run(team, name=name, cells=cells)


@pytest.mark.parametrize("case", list(CASES))
def test_headline_carries_the_caveat_of_its_deltas(team, case):
    base, other, significant, caveat = CASES[case]
    comparison = comparisons.save_comparison(
        team, "c", [_run(team, "base", base), _run(team, "other", other)]
    )
    (panel,) = comparisons.compare(comparison)["panels"]
    (overall,) = panel["overall"]
    summary = overall["summary"]
    assert summary["significant"] is significant
    assert summary["caveat"].startswith(caveat) if caveat else summary["caveat"] == ""
    assert panel["summary"][1]["caveat"] == summary["caveat"]


@pytest.mark.parametrize("case", list(CASES))
def test_headline_is_bold_only_when_a_delta_is_significant(member_client, team, case):
    base, other, significant, caveat = CASES[case]
    comparison = comparisons.save_comparison(
        team, "c", [_run(team, "base", base), _run(team, "other", other)]
    )
    html = member_client.get(f"/comparisons/{comparison.pk}/").content.decode()
    overall = html[html.index('<p class="overall') : html.index("</p>", html.index('"overall'))]
    assert ('<strong class="headline">' in overall) is significant
    assert ("tentative" in overall) is not significant
    if caveat:
        assert f'<span class="caveat">({caveat}' in overall


def test_caveat_words_for_each_kind_of_delta():
    def delta(verdict, n_baseline=4, n=4, p_value=None):
        return {"verdict": verdict, "n_baseline": n_baseline, "n": n, "p_value": p_value}

    too_few, not_sig = "too few repeats", "no significant difference"
    assert comparisons.headline_caveat([]) == (False, "no difference tested")
    assert comparisons.headline_caveat([delta(too_few, 1, 1)] * 3) == (
        False,
        "1 repeat each: too few to test",
    )
    assert comparisons.headline_caveat([delta(too_few, 2, 2)]) == (
        False,
        "2 repeats each: too few to test",
    )
    assert comparisons.headline_caveat([delta(too_few, 1, 3), delta(too_few, 2, 1)]) == (
        False,
        "too few repeats (1 vs 1)",
    )
    assert comparisons.headline_caveat(
        [delta(not_sig, p_value=0.2), delta(not_sig, p_value=0.34), delta(too_few, 1, 1)]
    ) == (False, "not significant, p = 0.2–0.34")
    assert comparisons.headline_caveat([delta("worse", p_value=0.03), delta(not_sig)]) == (
        True,
        "1 of 2 differences significant",
    )
    assert comparisons.headline_caveat([delta("better", p_value=0.03)]) == (True, "")


def _telemetry(cpu, load, hit, queue=3.0):
    return {
        "telemetry": {
            "host": {
                "cpu_busy_pct": {"mean": cpu, "max": 100.0},
                "load1": {"mean": load, "max": load + 1},
                "procs_running": {"mean": queue, "max": queue + 2},
                "seconds": 30,
            },
            "db": {"hit_ratio_pct": {"mean": hit, "min": hit - 1, "max": 100.0}, "seconds": 30},
        }
    }


def test_what_differs_shows_the_telemetry_that_differs_most(team):
    busy = make_run(
        team,
        name="busy",
        cells=[({"threads": 4}, 1, {"tps": 1000.0}, {"facts": _telemetry(98.0, 8.4, 91.0)})],
    )
    quiet = make_run(
        team,
        name="quiet",
        cells=[({"threads": 4}, 1, {"tps": 2140.0}, {"facts": _telemetry(45.0, 1.2, 99.0)})],
    )
    diff = comparisons.compare(comparisons.save_comparison(team, "c", [busy, quiet]))["diff"]
    rows = diff["telemetry"]
    # most different first; the run queue (3.0 on both) and the maxima are left out
    assert [(r["name"], r["values"]) for r in rows] == [
        ("host load (1 min), mean", ["8.4", "1.2"]),
        ("host CPU busy, mean", ["98 %", "45 %"]),
        ("database buffer/cache hit ratio, mean", ["91 %", "99 %"]),
    ]
    assert all(r["differs"] for r in rows)


def test_telemetry_rows_show_at_most_the_top_ones():
    per_run = [
        {f"telemetry.host.{f}.mean": [1.0] for f in comparisons.telemetry.FIGURES},
        {
            f"telemetry.host.{f}.mean": [3.0 + i]
            for i, f in enumerate(comparisons.telemetry.FIGURES)
        },
    ]
    rows = comparisons.telemetry_rows(per_run)
    assert len(rows) == comparisons.TELEMETRY_ROWS
    assert rows[0]["spread"] >= rows[-1]["spread"]
