"""End to end through a real browser (Debian's chromium via Playwright), the
live server, a real Celery worker, real PostgreSQL/Redis and the local
MariaDB: log in, create a target, build a two-axis mysqlslap plan in the
form, run it, watch progress reach 100 % and read the result table.
Screenshots are kept in test-artifacts/."""

import re
import secrets

import pytest

from benchapp.models import Run
from tests.benchapp.ui_data import CANARY, make_credential
from tests.support.browser import PHONE, browser, browser_page, login, page, screenshot  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_ui_flow_build_run_and_watch(page, live_server, owner, start_worker):  # noqa: F811
    start_worker("ui")
    url = live_server.url
    login(page, live_server, owner)

    # A target for the local MariaDB, and its connection test.
    page.goto(f"{url}/targets/")
    page.click("text=Add your first target")
    page.fill("#id_name", "local-mariadb")
    page.select_option("#id_kind", "mysql")
    page.fill("#id_host", "127.0.0.1")
    page.fill("#id_port", "3306")
    page.fill("#id_user", "root")
    screenshot(page, "e2e-01-target-form")
    page.click("text=Create target")
    page.click("text=Test connection")
    page.wait_for_selector("#connection-result")
    assert "Connected from this server" in page.inner_text("#connection-result")
    screenshot(page, "e2e-02-target-tested")

    # The plan, built in the structured form with a live preview.
    page.goto(f"{url}/plans/new/")
    page.fill("#id_name", "ui-two-axis")
    page.select_option("#id_tool", "mysqlslap")
    page.check("input[name=targets][value=local-mariadb]")
    page.select_option("#id_param-mysqlslap-auto_generate_sql_add_autoincrement", "true")
    # Enough queries that the average is not 0.000 s (then mysqlslap gives no q/s).
    page.fill("#id_param-mysqlslap-number_of_queries", "2000")
    page.fill("#id_param-mysqlslap-create_schema", f"bb_e2e_{secrets.token_hex(3)}")
    page.fill("#id_axis-0-name", "load_type")
    page.fill("#id_axis-0-values", "read, bogus")
    page.wait_for_selector("#field-axis-0-values.has-error")  # inline error from the preview
    assert "'bogus' is not allowed" in page.inner_text("#field-axis-0-values")
    page.fill("#id_axis-0-values", "read, key")
    page.click("text=Add axis")
    page.fill("#id_axis-1-name", "concurrency")
    page.fill("#id_axis-1-values", "1, 2")
    page.wait_for_function("() => document.getElementById('preview-count').textContent === '4'")
    assert page.locator("#preview-cells tbody tr").count() == 4
    screenshot(page, "e2e-03-plan-builder")
    page.click("#plan-form button[type=submit]")
    page.wait_for_selector("text=Plan ui-two-axis saved.")
    screenshot(page, "e2e-04-plan-page")

    # Run it and watch the live progress.
    page.click("text=Run now")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.wait_for_selector("#run-bar")
    screenshot(page, "e2e-05-run-started")
    page.wait_for_function(
        "() => document.getElementById('run-percent').textContent.trim() === '100.0 %'",
        timeout=120_000,
    )
    page.wait_for_selector("table.results tbody tr", timeout=30_000)
    run = Run.objects.get(name="ui-two-axis")
    assert run.status == Run.SUCCEEDED, [(c.key, c.error) for c in run.cells.all()]
    rows = page.locator("table.results tbody tr")
    assert rows.count() == 4
    headers = page.locator("table.results thead th").all_inner_texts()
    assert {"load_type", "concurrency", "avg_s", "qps"} <= set(headers)
    qps = headers.index("qps")
    for i in range(4):
        assert float(rows.nth(i).locator("td").nth(qps).inner_text()) > 0
    assert page.inner_text("#run-status").lower() == "succeeded"
    screenshot(page, "e2e-06-run-finished")
    page.set_viewport_size(PHONE)
    screenshot(page, "e2e-07-run-finished-phone")
    assert page.console_errors == []


@pytest.mark.parametrize("viewport", ["desktop", "phone"])
def test_ui_pages_render_cleanly(page, live_server, owner, team, viewport):  # noqa: F811
    """Every page once, at 1280 px and phone width: no script errors, no secret."""
    from benchapp.plans.planning import save_plan
    from benchapp.runs.orchestration import start_run
    from tests.benchapp.ui_data import DEMO, make_target

    cred = make_credential(team)
    target = make_target(team, credential=cred)
    plan = save_plan(team, DEMO)
    run = start_run(team, plan.document, plan=plan)
    if viewport == "phone":
        page.set_viewport_size(PHONE)
    login(page, live_server, owner)
    pages = {
        "targets": "/targets/",
        "target": f"/targets/{target.pk}/",
        "target-edit": f"/targets/{target.pk}/edit/",
        "credentials": "/credentials/",
        "credential-edit": f"/credentials/{cred.pk}/edit/",
        "plans": "/plans/",
        "plan": f"/plans/{plan.pk}/",
        "builder-s2": "/plans/new/?template=s2-oltp-vs-cpu-stress",
        "import": "/plans/import/",
        "schedules": "/schedules/",
        "runs": "/runs/",
        "run": f"/runs/{run.pk}/",
    }
    for name, path in pages.items():
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
        assert CANARY not in page.content(), name
        screenshot(page, f"page-{viewport}-{name}")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= page.viewport_size["width"] + 1, f"{name} scrolls sideways ({width}px)"
    assert page.console_errors == []
