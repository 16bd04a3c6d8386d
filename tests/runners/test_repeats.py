"""Adaptive repeats: the plan syntax, its validation and the stop rule."""

from __future__ import annotations

import pytest

from runners.errors import ValidationError
from runners.frozen import freeze, thaw
from runners.plan import count_cells, expand, load_plan
from runners.repeats import CV, MAX, RepeatRule, coefficient_of_variation, decide
from tests.support.dbtargets import mariadb_target  # noqa: F401

RULE = RepeatRule(min=3, max=10, until_cv=0.03, metric="tps")


def plan(repeat, tool="sysbench", **extra):
    params = (
        {"test": "oltp_point_select"}
        if tool == "sysbench"
        else {"rw": "read", "filename": "f.data", "size": "1M"}
    )
    kind = "mysql" if tool == "sysbench" else "host"
    return load_plan(
        {
            "name": "p",
            "tool": tool,
            "targets": [{"name": "t", "kind": kind, "host": "127.0.0.1"}],
            "params": params,
            "repeat": repeat,
            **extra,
        }
    )


# ------------------------------------------------------------------ the rule


def test_cv_is_sample_stdev_over_mean():
    assert coefficient_of_variation([100, 100, 100]) == 0
    assert coefficient_of_variation([90, 100, 110]) == pytest.approx(0.1)
    assert coefficient_of_variation([5]) is None
    assert coefficient_of_variation([-1, 1]) is None  # a zero mean has no relative spread


def test_steady_values_stop_at_min_and_not_before():
    assert decide(RULE, [100, 101], ran=2) is None  # fewer than min
    stop = decide(RULE, [100, 101, 100], ran=3)
    assert (stop.reason, stop.repeats, stop.succeeded) == (CV, 3, 3)
    assert stop.cv == pytest.approx(0.00574, abs=1e-4)
    assert stop.summary(RULE) == "3 repeats: cv of tps 0.6% <= 3.0%"


def test_noisy_values_go_on_until_max():
    noisy = [100, 130, 80, 120, 90, 125, 85, 110, 95]
    assert decide(RULE, noisy, ran=9) is None
    stop = decide(RULE, noisy + [105], ran=10)
    assert (stop.reason, stop.repeats) == (MAX, 10)
    assert stop.cv > 0.03
    assert stop.summary(RULE).startswith("10 repeats (max): cv of tps ")


def test_the_threshold_itself_stops():
    values = [97.0, 100.0, 103.0]  # cv exactly 0.03
    rule = RepeatRule(3, 10, coefficient_of_variation(values), "tps")
    assert decide(rule, values, ran=3).reason == CV


def test_failed_repeats_count_as_run_but_bring_no_value():
    assert decide(RULE, [100, 100], ran=3) is None  # two values: fewer than min
    stop = decide(RULE, [100, 100, 100], ran=5)
    assert (stop.reason, stop.repeats, stop.succeeded) == (CV, 5, 3)
    stop = decide(RULE, [], ran=10)
    assert (stop.reason, stop.cv) == (MAX, None)
    assert stop.summary(RULE) == "10 repeats (max): 0 with a tps value; 10 failed"


def test_no_repeat_left_stops_early():
    assert decide(RULE, [100, 150], ran=4, left=0).reason == MAX


# ------------------------------------------------------------------ the plan


def test_adaptive_repeat_expands_max_cells_and_keeps_the_rule():
    p = plan({"min": 3, "max": 10, "until_cv": 0.03, "metric": "tps"}, axes={"threads": [1, 2]})
    assert p.repeat_rule == RULE and p.repeat == 10
    assert count_cells(p) == 20 == len(expand(p))
    frozen_plan, _ = thaw(freeze(p, expand(p)[0]))
    assert frozen_plan.repeat_rule == RULE


def test_integer_repeat_still_works():
    p = plan(3)
    assert (p.repeat, p.repeat_rule, len(expand(p))) == (3, None, 3)
    assert thaw(freeze(p, expand(p)[0]))[0].repeat_rule is None


@pytest.mark.parametrize(
    "repeat, path, message",
    [
        ({"min": 1, "max": 5, "until_cv": 0.03, "metric": "tps"}, "repeat.min", "between 2"),
        ({"min": 5, "max": 4, "until_cv": 0.03, "metric": "tps"}, "repeat.max", "less than min"),
        ({"min": 3, "max": 101, "until_cv": 0.03, "metric": "tps"}, "repeat.max", "and 100"),
        ({"min": 3, "max": 5, "until_cv": 0, "metric": "tps"}, "repeat.until_cv", "fraction"),
        ({"min": 3, "max": 5, "until_cv": 3, "metric": "tps"}, "repeat.until_cv", "fraction"),
        ({"min": 3, "max": 5, "metric": "tps"}, "repeat.until_cv", "required"),
        (
            {"min": 3, "max": 5, "until_cv": 0.03, "metric": "read_iops"},
            "repeat.metric",
            "not a metric of this tool",
        ),
        ({"min": 3, "max": 5, "until_cv": 0.03}, "repeat.metric", "required"),
        ({"min": 3, "max": 5, "until_cv": 0.03, "metric": "tps", "n": 1}, "repeat.n", "unknown"),
        (0, "repeat", "out of range"),
    ],
)
def test_invalid_repeat_is_refused_with_its_path(repeat, path, message):
    with pytest.raises(ValidationError) as info:
        plan(repeat)
    assert info.value.param == path and message in info.value.message


def test_the_metric_comes_from_the_tools_catalog():
    assert (
        plan(
            {"min": 2, "max": 3, "until_cv": 0.1, "metric": "read_iops"}, tool="fio"
        ).repeat_rule.metric
        == "read_iops"
    )
    with pytest.raises(ValidationError, match="not a metric"):
        plan({"min": 2, "max": 3, "until_cv": 0.1, "metric": "tps"}, tool="fio")


# ------------------------------------------------------------------ inline


def test_inline_run_stops_a_steady_combination_at_min(mariadb_target, monkeypatch):  # noqa: F811
    """`python -m runners run`: with --events=200 and no rate every repeat
    completes exactly 200 transactions (cv 0), at --rate=50 a Poisson number
    (about 100 +- 10, which three repeats match to 0.2% about once in a thousand)."""
    from runners.inline import run_plan

    monkeypatch.setenv("BB_TEST_REPEATS_PASSWORD", mariadb_target.password)
    target = {
        "name": "db",
        "kind": "mysql",
        "host": mariadb_target.host,
        "port": mariadb_target.port,
        "user": mariadb_target.user,
        "database": mariadb_target.database,
        "password_env": "BB_TEST_REPEATS_PASSWORD",
    }
    p = load_plan(
        {
            "name": "inline-adaptive",
            "tool": "sysbench",
            "targets": [target],
            "params": {
                "test": "oltp_point_select",
                "tables": 1,
                "table_size": 100,
                "time": 2,
                "events": 200,
            },
            "axes": {"rate": [0, 50]},
            "prepare": {"once": True},
            "cleanup": True,
            "repeat": {"min": 3, "max": 4, "until_cv": 0.002, "metric": "transactions"},
        }
    )
    cells = run_plan(p)["cells"]
    steady = [c for c in cells if c["axes"]["rate"] == 0]
    noisy = [c for c in cells if c["axes"]["rate"] == 50]
    assert [c["repeat"] for c in steady] == [1, 2, 3]
    assert [c["repeat"] for c in noisy] == [1, 2, 3, 4]
    assert {c["repeat_stop"]["reason"] for c in steady} == {CV}
    assert {c["repeat_stop"]["reason"] for c in noisy} == {MAX}
