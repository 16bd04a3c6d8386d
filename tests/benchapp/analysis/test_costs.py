"""The run's cost and its main metric per dollar-hour on results and comparisons."""

import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from benchapp.analysis import results
from benchapp.histories import comparisons
from runners import plan
from runners.plan import load_plan
from tests.benchapp.study_runs import s2_run, s4_run

pytestmark = pytest.mark.django_db

RDS_PER_HOUR = 187.18 / 730  # price_per_month over the hours of a month
# rds-mysql's TPS: threads x 10 (read-only) and x 4 (read-write), mean over 10 cells
RDS_TPS = sum(t * k for t in (4, 16, 64, 128, 256) for k in (10, 4)) / 10


def _finished(run, hours):
    start = timezone.now() - timedelta(hours=hours)
    run.started_at, run.finished_at = start, start + timedelta(hours=hours)
    run.save(update_fields=["started_at", "finished_at"])
    return run


def test_s4_cost_and_tps_per_dollar_hour(owner_client, team):
    run = _finished(s4_run(team), 2.5)
    load_plan(run.document)  # a real plan document
    (cost,) = results.results([run])["costs"]
    assert cost["hours"] == 3.0  # whole hours, as provisioned items are billed
    assert cost["total"] == pytest.approx(3 * RDS_PER_HOUR)  # the JPY-priced one is left out
    assert cost["metric"] == "tps" and cost["metric_title"] == "Transactions per second (tps)"
    (rds,) = cost["targets"]
    assert rds["target"] == "rds-mysql" and RDS_TPS == 655.2
    assert rds["per_dollar_hour"] == pytest.approx(RDS_TPS / RDS_PER_HOUR)  # 2,555.3
    html = owner_client.get(f"/runs/{run.pk}/results/").content.decode()
    assert '<span class="cost">$0.77</span> (3 h billed)' in html
    assert "Transactions per second (tps) per dollar-hour: " in html
    assert '<span class="per-dollar">rds-mysql 2555</span> (at $0.256/h)' in html


def test_comparison_shows_each_priced_runs_cost(owner_client, team, owner):
    runs = [_finished(s4_run(team, name="before"), 1), _finished(s4_run(team, name="after"), 1)]
    comp = comparisons.save_comparison(team, "services", runs, user=owner)
    html = owner_client.get(f"/comparisons/{comp.pk}/").content.decode()
    for run in runs:
        assert (
            f'<strong>#{run.pk} {run.name}</strong>: cost <span class="cost">$0.26</span>' in html
        )


def test_unpriced_run_shows_no_cost_and_costs_no_query(team, django_assert_max_num_queries):
    run = s2_run(team)
    # cells, metric names, measurements, their key names (unless this process
    # has them cached): no price lookups
    with django_assert_max_num_queries(4):
        assert results.results([run])["costs"] == []


def test_priced_results_page_reads_each_plan_once(owner_client, team, monkeypatch):
    """Run.spec is the one reader of a stored plan: the priced results page
    (cost, price per dollar-hour, client line) types the document once; it
    was typed three times before."""
    run = _finished(s4_run(team), 2.5)
    calls = []

    def counted(source):
        calls.append(source)
        return original(source)

    # Every module that holds the name, so a parse anywhere on the page counts.
    original = plan.load_plan
    for module in list(sys.modules.values()):
        if getattr(module, "load_plan", None) is original:
            monkeypatch.setattr(module, "load_plan", counted)
    html = owner_client.get(f"/runs/{run.pk}/results/").content.decode()
    assert '<span class="cost">$0.77</span> (3 h billed)' in html  # the priced page
    assert len(calls) == 1
