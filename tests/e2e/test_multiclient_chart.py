"""A plan loading one target from 1, 2 and 3 clients, from the builder to a
chart of throughput against the number of client hosts, in a real browser
with a real worker and the tests' private PostgreSQL."""

import re

import pytest

from benchapp.models import Run
from tests.benchapp.ui_data import make_target
from tests.support.browser import browser, login, page, screenshot  # noqa: F401
from tests.support.dbtargets import postgres_target  # noqa: F401
from tests.support.private_services import private_postgres_server  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_client_hosts_axis_from_the_builder_to_the_chart(
    page,  # noqa: F811
    live_server,
    owner,
    team,
    start_worker,
    postgres_target,  # noqa: F811
):
    start_worker("clients")
    make_target(
        team,
        name="pg",
        kind="postgres",
        host=postgres_target.host,
        port=postgres_target.port,
        user="postgres",
        database=postgres_target.database,
    )
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/plans/new/")
    page.fill("#id_name", "clients-axis")
    page.select_option("#id_tool", "pgbench")
    page.check("input[name=targets][value=pg]")
    page.fill("#id_param-pgbench-time", "6")
    page.select_option("#id_param-pgbench-builtin", "select-only")
    page.fill("#id_axis-0-name", "client_hosts")
    page.fill("#id_axis-0-values", "1, 2, 3")
    page.click("text=Other plan keys")  # the YAML box for keys the form has no field for
    page.fill("#id_extra", "client: [{local: true, count: 3}]\nprepare: {once: true}\n")
    page.wait_for_function("() => document.getElementById('preview-count').textContent === '3'")
    assert "from up to 3 client hosts at once" in page.inner_text("#preview-estimate")
    page.click("#plan-form button[type=submit]")
    page.wait_for_selector("text=Plan clients-axis saved.")
    page.click("text=Run now")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.wait_for_function(
        "() => document.getElementById('run-percent').textContent.trim() === '100.0 %'",
        timeout=180_000,
    )
    run = Run.objects.get(name="clients-axis")
    assert run.status == Run.SUCCEEDED, [(c.key, c.error) for c in run.cells.all()]
    page.goto(f"{live_server.url}/runs/{run.pk}/results/")
    page.wait_for_selector("#chart-main .main-svg .trace", state="attached")
    traces = page.evaluate(
        "() => document.getElementById('chart-main').data.map(t => ({x: t.x, y: t.y}))"
    )
    assert [str(x) for x in traces[0]["x"]] == ["1", "2", "3"]
    assert all(y > 0 for y in traces[0]["y"])
    assert "tps" in page.locator("#chart-main .g-ytitle").text_content().lower()
    assert "Several clients: 2 cells loaded their target from 2–3 client hosts" in page.content()
    screenshot(page, "e2e-clients-axis-chart")
    assert page.console_errors == []
