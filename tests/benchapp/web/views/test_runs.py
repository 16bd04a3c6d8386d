"""Run list and run page: progress JSON, cancel, per-cell cancel, raw output,
results table; team scoping and secrets."""

import pytest
from django.utils import timezone

from benchapp.models import Artifact, Cell, Run
from benchapp.plans.planning import save_plan
from benchapp.runs.orchestration import start_run
from tests.benchapp.ui_data import CANARY, DEMO, assert_no_canary, make_credential, make_target
from tests.support.measures import measure

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(team, owner):
    make_target(team)
    plan = save_plan(team, DEMO)
    return start_run(team, plan.document, plan=plan, user=owner)


def finish(cell, status=Cell.SUCCEEDED, **metrics):
    now = timezone.now()
    Cell.objects.filter(pk=cell.pk).update(
        status=status,
        attempt=1,
        started_at=now,
        finished_at=now,
        error="" if status == Cell.SUCCEEDED else "boom",
    )
    for name, value in metrics.items():
        measure(cell, name, value, attempt=1)


@pytest.mark.parametrize("persona", ["owner_client", "member_client"])
def test_run_pages_for_team_members(request, persona, run):
    client = request.getfixturevalue(persona)
    cell = run.cells.first()
    assert run.name in client.get("/runs/").content.decode()
    for url in (
        f"/runs/{run.pk}/",
        f"/runs/{run.pk}/progress.json",
        f"/runs/{run.pk}/cells/{cell.pk}/artifacts/",
    ):
        assert client.get(url).status_code == 200, url


def test_run_list_outsider_sees_own_team_only(outsider_client, run):
    html = outsider_client.get("/runs/").content.decode()
    assert "No runs yet" in html and run.name not in html


@pytest.mark.parametrize(
    "method,url",
    [
        ("get", "/runs/{pk}/"),
        ("get", "/runs/{pk}/progress.json"),
        ("post", "/runs/{pk}/cancel/"),
        ("post", "/runs/{pk}/cells/{cell}/cancel/"),
        ("get", "/runs/{pk}/cells/{cell}/artifacts/"),
    ],
)
def test_run_pages_outsider_gets_404(outsider_client, run, method, url):
    cell = run.cells.first()
    response = getattr(outsider_client, method)(url.format(pk=run.pk, cell=cell.pk))
    assert response.status_code == 404
    assert (
        Run.objects.get(pk=run.pk).status == Run.QUEUED
        and not Run.objects.get(pk=run.pk).cancel_requested
    )


def test_cell_of_another_run_is_404(owner_client, team, run):
    other = start_run(team, run.document)
    cell = other.cells.first()
    assert owner_client.get(f"/runs/{run.pk}/cells/{cell.pk}/artifacts/").status_code == 404
    assert owner_client.post(f"/runs/{run.pk}/cells/{cell.pk}/cancel/").status_code == 404


def test_run_list_query_count(owner_client, team, run, django_assert_max_num_queries):
    team.max_active_runs = 100  # many queued runs at once: above the default cap
    team.save()
    for _ in range(20):
        start_run(team, run.document)
    # session, user, team (x3), page count, page rows: none per run
    with django_assert_max_num_queries(9):
        html = owner_client.get("/runs/").content.decode()
    assert html.count("0/4") == 21


def test_run_detail_query_count(owner_client, run, django_assert_max_num_queries):
    for cell in run.cells.all():
        finish(cell, avg_s=0.5, qps=100)
    # 16: the limits tools ran with and why cells wait are one query each, and
    # the packed measurements' key names one more (benchapp.store.measurestore).
    # 17: the overlap marks (machines.overlaps) joined the page with isolation issue 38.
    with django_assert_max_num_queries(17):
        owner_client.get(f"/runs/{run.pk}/")


def test_run_page_shows_progress_and_cells(owner_client, run):
    cells = list(run.cells.order_by("index"))
    finish(cells[0], avg_s=0.25, qps=80.0)
    Cell.objects.filter(pk=cells[1].pk).update(
        status=Cell.RUNNING,
        phase="measure",
        started_at=timezone.now(),
        attempt=1,
        output_tail="Benchmark\n\tRunning for engine innodb",
    )
    html = owner_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-bar" class="bar bar-queued" max="100" value="25.0"' in html
    assert "1 of 4 cells done" in html
    assert "Running for engine innodb" in html  # the live tail
    assert html.count('data-role="bar"') == 4
    assert "Cancel run" in html and f"/runs/{run.pk}/results/" in html


def test_progress_json(member_client, run):
    cells = list(run.cells.order_by("index"))
    finish(cells[0])
    finish(cells[1], status=Cell.FAILED)
    Cell.objects.filter(pk=cells[2].pk).update(
        status=Cell.RUNNING, phase="measure", started_at=timezone.now(), output_tail="tail!"
    )
    data = member_client.get(f"/runs/{run.pk}/progress.json").json()
    assert (data["total"], data["done"], data["failed"], data["running"], data["percent"]) == (
        4,
        2,
        1,
        1,
        50.0,
    )
    assert data["active"] is True and data["phase"] == "measure"
    assert data["tails"] == {str(cells[2].pk): "tail!"}
    assert [c["status"] for c in data["cells"]] == ["succeeded", "failed", "running", "queued"]
    assert data["cells"][1]["error"] == "boom"


def test_results_table_from_result_document(owner_client, run):
    for cell in run.cells.all():
        finish(cell, avg_s=0.125, qps=96.0)
    Run.objects.filter(pk=run.pk).update(status=Run.SUCCEEDED)
    html = owner_client.get(f"/runs/{run.pk}/").content.decode()
    table = html[html.index('class="grid compact results"') :]
    assert "<th>load_type</th>" in table and "<th>concurrency</th>" in table
    assert table.count(">0.125<") == 4 and table.count(">96<") == 4
    assert "Cancel run" not in html


def test_cancel_run(owner_client, run):
    response = owner_client.post(f"/runs/{run.pk}/cancel/")
    assert response.url == f"/runs/{run.pk}/"
    run.refresh_from_db()
    assert run.status == Run.CANCELLED and set(run.cells.values_list("status", flat=True)) == {
        "cancelled"
    }


def test_cancel_one_cell(member_client, run):
    cell = run.cells.order_by("index").last()
    member_client.post(f"/runs/{run.pk}/cells/{cell.pk}/cancel/")
    cell.refresh_from_db()
    assert cell.status == Cell.CANCELLED
    assert run.cells.filter(status=Cell.QUEUED).count() == 3


def test_artifacts_page_shows_masked_output(owner_client, team, run):
    cell = run.cells.first()
    Artifact.objects.create(
        cell=cell,
        attempt=1,
        phase="run",
        command="mysqlslap --x",
        exit_code=0,
        stdout="Average number of seconds: 0.12",
        stderr="warn",
    )
    html = owner_client.get(f"/runs/{run.pk}/cells/{cell.pk}/artifacts/").content.decode()
    assert "Average number of seconds: 0.12" in html and "exit code 0" in html


def test_run_pages_never_show_a_credential(owner_client, team):
    cred = make_credential(team)
    make_target(team, credential=cred)
    run = start_run(team, DEMO)
    cell = run.cells.first()
    Cell.objects.filter(pk=cell.pk).update(status=Cell.RUNNING, output_tail="masked ****")
    for url in (
        "/runs/",
        f"/runs/{run.pk}/",
        f"/runs/{run.pk}/progress.json",
        f"/runs/{run.pk}/cells/{cell.pk}/artifacts/",
    ):
        assert_no_canary(owner_client.get(url))
    assert CANARY not in str(run.document)


def test_run_list_is_newest_first_across_pages(owner_client, team, run):
    """The Count annotation used to drop Run.Meta.ordering: page 1 held the oldest runs."""
    team.max_active_runs = 100  # many queued runs at once: above the default cap
    team.save()
    for _ in range(55):
        start_run(team, run.document)
    newest = Run.objects.for_team(team).order_by("-created_at", "-pk").first()
    first_page = owner_client.get("/runs/").content.decode()
    assert f'href="/runs/{newest.pk}/"' in first_page
    assert f'href="/runs/{run.pk}/"' not in first_page  # the oldest is on page 2
    assert f'href="/runs/{run.pk}/"' in owner_client.get("/runs/?page=2").content.decode()


def test_progress_bars_take_their_status_colour(owner_client, team, run):
    failed = start_run(team, run.document)
    Run.objects.filter(pk=failed.pk).update(status=Run.FAILED)
    cancelled = start_run(team, run.document)
    Run.objects.filter(pk=cancelled.pk).update(status=Run.CANCELLED)
    html = owner_client.get("/runs/").content.decode()
    assert 'class="bar bar-failed"' in html and 'class="bar bar-cancelled"' in html
    cell = failed.cells.first()
    finish(cell, status=Cell.FAILED)
    detail = owner_client.get(f"/runs/{failed.pk}/").content.decode()
    assert 'id="run-bar" class="bar bar-failed"' in detail
    assert 'class="bar bar-failed" max="100"' in detail  # the failed cell's own bar
    from django.contrib.staticfiles import finders

    css = open(finders.find("css/app.css")).read()
    for status in ("failed", "cancelled"):
        assert f"progress.bar-{status} {{ accent-color:var(--" in css
    assert "progress.bar-failed { accent-color:var(--bad); }" in css


def test_finished_cell_output_stays_on_the_run_page(owner_client, run):
    """With no cell running the page shows the tail of the cell that ended last."""
    cells = list(run.cells.order_by("index"))
    finish(cells[0])
    Cell.objects.filter(pk=cells[0].pk).update(output_tail="Average number of seconds: 0.01")
    html = owner_client.get(f"/runs/{run.pk}/").content.decode()
    assert "Average number of seconds: 0.01" in html
    data = owner_client.get(f"/runs/{run.pk}/progress.json").json()
    assert data["tails"] == {str(cells[0].pk): "Average number of seconds: 0.01"}


@pytest.mark.django_db(transaction=True)
def test_cell_shorter_than_the_heartbeat_keeps_its_output(team, settings):
    """A cell that ends before the first beat used to leave output_tail empty."""
    from benchapp.runs.orchestration import execute_cell

    settings.BENCHBOARD_HEARTBEAT_SECONDS = 3600
    make_target(team)
    plan = {**DEMO, "axes": {}, "params": {**DEMO["params"], "number_of_queries": 5}}
    started = start_run(team, plan)
    cell = started.cells.get()
    assert execute_cell(cell.pk) == Cell.SUCCEEDED
    cell.refresh_from_db()
    assert "Average number of seconds" in cell.output_tail
