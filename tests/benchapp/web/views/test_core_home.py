"""The home page is a dashboard: running runs with live progress, recent runs
with status and headline figure, targets and their last connection check;
every row a link."""

import re

import pytest
from django.utils import timezone

from benchapp.models import Cell, Run, Target
from benchapp.plans.planning import save_plan
from benchapp.runs.orchestration import start_run
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


def test_recent_runs_show_status_and_headline_figure(owner_client, team, plan):
    # 4 cells: avg_s 1, 2, 3, 4 -> mean 2.5 (the first metric measured: avg_s)
    finished(team, plan, status=Run.PARTIAL, avg_s=1.0, qps=100.0)
    finished(team, plan, status=Run.FAILED)
    recent = rows(owner_client.get("/").content.decode(), "recent")
    assert "failed" in recent[0] and "—" in recent[0]  # nothing measured: no figure
    assert "completed with failures" in recent[1]
    assert "mean avg_s</span> 2.500 s" in recent[1]


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
