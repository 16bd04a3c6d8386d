"""The home page is a dashboard: running runs with live progress, recent runs
with status and headline figure, targets and their last connection check;
every row a link."""

import re

import pytest
from django.utils import timezone

from benchapp.models import Cell, Run, Target
from benchapp.plans.planning import save_plan
from benchapp.runs.orchestration import start_run
from tests.benchapp.results_data import make_run
from tests.benchapp.ui_data import DEMO, make_target
from tests.support.measures import measure

pytestmark = pytest.mark.django_db


@pytest.fixture
def plan(team):
    make_target(team)
    return save_plan(team, DEMO)


def finished(team, plan, status=Run.SUCCEEDED, **metrics):
    run = start_run(team, plan.document, plan=plan)
    now = timezone.now()
    for n, cell in enumerate(run.cells.all()):
        Cell.objects.filter(pk=cell.pk).update(status=Cell.SUCCEEDED, attempt=1, finished_at=now)
        for name, value in metrics.items():
            measure(cell, name, value + n, attempt=1, unit="s")
    Run.objects.filter(pk=run.pk).update(status=status, finished_at=now)
    return run


def rows(html, section):
    body = html.split(f'id="{section}"', 1)[1].split("</section>", 1)[0]
    return re.findall(r"<tr[^>]*>.*?</tr>", body.split("<tbody>", 1)[1], re.S)


def test_every_run_row_is_a_link(owner_client, team, plan):
    done = finished(team, plan, avg_s=1.0)
    running = start_run(team, plan.document, plan=plan)
    html = owner_client.get("/").content.decode()
    recent, active = rows(html, "recent"), rows(html, "running")
    assert len(recent) == 1 and f'href="/runs/{done.pk}/"' in recent[0]
    assert len(active) == 1 and f'href="/runs/{running.pk}/"' in active[0]
    assert f'data-live-run="/runs/{running.pk}/progress.json"' in active[0]
    assert "js/home.js" in html


def test_running_run_shows_its_progress(owner_client, team, plan):
    run = start_run(team, plan.document, plan=plan)
    first = run.cells.order_by("index").first()
    Cell.objects.filter(pk=first.pk).update(status=Cell.SUCCEEDED)
    active = rows(owner_client.get("/").content.decode(), "running")[0]
    assert 'max="100" value="25.0"' in active and "1/4" in active


def _headline(row: str) -> str:
    cell = re.search(r'<td class="num headline">(.*?)</td>', row, re.S).group(1)
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", cell)).strip()


def test_recent_runs_show_status_and_the_tools_main_metric(owner_client, team, plan):
    # 4 cells: qps 100..103 -> mean 101.5; avg_s was measured first, but
    # mysqlslap's main metric is its queries per second, with its unit
    finished(team, plan, status=Run.PARTIAL, avg_s=1.0, qps=100.0)
    finished(team, plan, status=Run.FAILED)
    recent = rows(owner_client.get("/").content.decode(), "recent")
    assert "failed" in recent[0] and "—" in recent[0]  # nothing measured: no figure
    assert "completed with failures" in recent[1]
    assert _headline(recent[1]) == "Queries per second 101.5 q/s"


def test_headline_falls_back_to_the_next_main_metric_then_the_first(owner_client, team, plan):
    finished(team, plan, avg_s=2.0)  # no qps: mysqlslap's next main metric
    finished(team, plan, min_s=1.0)  # none of its main metrics: the first measured
    newest, older = rows(owner_client.get("/").content.decode(), "recent")
    assert _headline(newest) == "Minimum time to run all queries 2.5 s"
    assert _headline(older) == "Average time to run all queries 3.5 s"


@pytest.mark.parametrize(
    "tool, metrics, expected",
    [
        # sysbench OLTP: TPS, not the reads it counted first
        ("sysbench", {"reads": 9408.0, "tps": 470.25}, "Transactions per second 470.2 tps"),
        # sysbench cpu: events per second
        (
            "sysbench",
            {"events": 10.0, "events_per_s": 1234.5},
            "Events per second 1,234.5 events/s",
        ),
        # fio: IOPS read + write (derived as values are stored), not read bandwidth
        (
            "fio",
            {"read_bw_kib_s": 778232.75, "read_iops": 1500.0, "write_iops": 500.0},
            "IOPS (read + write) 2,000 IOPS",
        ),
        ("pgbench", {"latency_avg_ms": 3.0, "tps": 800.0}, "Transactions per second 800 tps"),
        (
            "redis_benchmark",
            {"latency_avg_ms": 0.2, "rps": 90000.0},
            "Requests per second 90,000 req/s",
        ),
    ],
)
def test_dashboard_headline_is_the_main_metric_with_its_unit(
    owner_client, team, tool, metrics, expected
):
    make_run(team, tool=tool, cells=[({"threads": 1}, 1, metrics)])
    (row,) = rows(owner_client.get("/").content.decode(), "recent")
    assert _headline(row) == expected


def test_home_query_count_does_not_grow_with_runs(
    owner_client, team, plan, django_assert_max_num_queries
):
    for _ in range(12):
        finished(team, plan, avg_s=1.0)
    for _ in range(3):
        start_run(team, plan.document, plan=plan)
    # session, user, team (x3), active runs, recent alerts, recent runs with headline, targets
    with django_assert_max_num_queries(11):
        html = owner_client.get("/").content.decode()
    assert len(rows(html, "recent")) == 12 and len(rows(html, "running")) == 3


def test_targets_show_their_last_connection_check(owner_client, team):
    good = make_target(team)
    bad = make_target(team, name="nowhere", port=1)
    fresh = make_target(team, name="fresh")
    for target in (good, bad):
        assert owner_client.post(f"/targets/{target.pk}/test/").status_code == 200
    good.refresh_from_db()
    bad.refresh_from_db()
    assert good.last_check_ok is True and good.last_check_at is not None
    assert bad.last_check_ok is False and bad.last_check_error
    table = {
        re.search(r">([\w-]+)</a>", row).group(1): row
        for row in rows(owner_client.get("/").content.decode(), "targets")
    }
    assert "connected" in table["local-mariadb"] and "failed" in table["nowhere"]
    assert "never tested" in table["fresh"]
    assert f'href="/targets/{fresh.pk}/"' in table["fresh"]
    assert Target.objects.filter(last_check_at__isnull=False).count() == 2


def test_alerts_have_their_place():
    """Another part provides history/_recent_alerts.html: the home page keeps a block for it."""
    from django.template.loader import get_template
    from django.template.loader_tags import BlockNode

    nodes = get_template("home.html").template.nodelist.get_nodes_by_type(BlockNode)
    assert "alerts" in [node.name for node in nodes]
