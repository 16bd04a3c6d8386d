"""The five reference scenarios from their templates to results, in a real
browser (Debian's chromium via Playwright), from a freshly migrated database:
a user tests a MariaDB target, sets the directory of a host target an
operator has allowed, picks a scenario, chooses which target plays each role
and the quick preset, saves the pre-filled plan, runs it on a real Celery
worker (tools sandboxed) and reads the pivot table and the charts. No YAML
is typed anywhere. Screenshots are kept in test-artifacts/."""

from __future__ import annotations

import os
import re
import shutil
import tempfile

import pytest

from benchapp.models import Run, Target
from benchapp.plans.templates_plans import get_template
from tests.support.browser import browser, login, page, screenshot  # noqa: F401
from tests.support.dbtargets import mariadb_database  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

# slug -> cells of the quick preset on this machine's targets
SCENARIOS = {
    "s1-rds-classes-mysqlslap": 20,  # targets interleaved, twice each
    "s2-oltp-vs-cpu-stress": 3,
    "s3-ebs-raid0-fio": 4,  # volumes are striped only when provisioned: bs × rw
    "s4-managed-mysql-threads": 16,  # targets interleaved, twice each
    "s5-myisam-update": 6,
}


@pytest.fixture
def data_dir():
    """A directory the sandbox user (nobody, when tests run as root) may write."""
    path = tempfile.mkdtemp(prefix="bb-e2e-data-")
    os.chmod(path, 0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _make_targets(page, url, team, database, data_dir):
    """A tested MariaDB target, and a host target in the operator's data directory."""
    page.goto(f"{url}/targets/new/")
    page.fill("#id_name", "local-mariadb")
    page.select_option("#id_kind", "mysql")
    page.fill("#id_host", "127.0.0.1")
    page.fill("#id_port", "3306")
    page.fill("#id_user", "root")
    page.fill("#id_database", database)
    page.click("text=Create target")
    page.click("text=Test connection")
    page.wait_for_selector("#connection-result")
    assert f"user 'root' can create and drop tables in '{database}'" in page.inner_text(
        "#connection-result"
    )
    # What an operator (staff) allows: where tools on this server may write.
    disk = Target.objects.create(team=team, name="disk", kind="host", data_dirs=[data_dir])
    page.goto(f"{url}/targets/{disk.pk}/edit/")
    page.fill("#id_directory", f"{data_dir}/fio")
    page.click("text=Save target")
    page.wait_for_selector("text=Target disk saved.")
    os.makedirs(f"{data_dir}/fio", mode=0o777)
    os.chmod(f"{data_dir}/fio", 0o777)


@pytest.mark.parametrize("slug", SCENARIOS)
def test_scenario_from_template_to_results(
    page,
    live_server,
    owner,
    team,
    start_worker,  # noqa: F811
    mariadb_database,
    data_dir,
    slug,
):
    start_worker("templates")
    url = live_server.url
    login(page, live_server, owner)
    _make_targets(page, url, team, mariadb_database, data_dir)
    template = get_template(slug)

    # The scenario: which target plays each role, and the quick preset.
    page.goto(f"{url}/plans/")
    page.click(f"a.tile:has-text('{template['title']}')")
    page.wait_for_selector("#template-form")
    assert page.locator(".has-error").count() == 0
    for role in template["roles"]:
        name = "disk" if role["kind"] == "host" else "local-mariadb"
        pk = Target.objects.get(team=team, name=name).pk
        page.select_option(f"select[name='role-{role['name']}']", str(pk))
    page.check("input[name=preset][value=quick]")
    screenshot(page, f"templates-{slug}-1-roles")
    page.click("text=Open in the plan builder")

    # The builder opens pre-filled and valid.
    page.wait_for_selector("#plan-form")
    page.wait_for_function(
        f"() => document.getElementById('preview-count').textContent === '{SCENARIOS[slug]}'"
    )
    assert page.locator(".field.has-error").count() == 0
    assert page.locator("#preview-errors").is_hidden()
    screenshot(page, f"templates-{slug}-2-builder")
    page.click("#plan-form button[type=submit]")
    page.wait_for_selector(f"text=Plan {template['document']['name']}-quick saved.")

    # Run it on the worker.
    page.click("text=Run now")
    page.wait_for_url(re.compile(r"/runs/\d+/$"))
    page.wait_for_function(
        "() => document.getElementById('run-percent').textContent.trim() === '100.0 %'",
        timeout=480_000,  # S1: 20 mysqlslap cells, about 4 min on a busy 2-core machine
    )
    run = Run.objects.get(name=f"{template['document']['name']}-quick")
    assert run.status == Run.SUCCEEDED, [(c.key, c.error) for c in run.cells.all()]
    assert run.cells.count() == SCENARIOS[slug]
    # What each cell's verdict rests on (printed with -s: the figures of
    # docs/telemetry.md's quick-preset table come from here).
    for cell in run.cells.order_by("index"):
        found = (cell.facts or {}).get("verdict") or {}
        print(f"{slug} {cell.key or '-'}: {found.get('seconds')} s, {found.get('limit')}")

    # Its result table and chart.
    page.goto(f"{url}/runs/{run.pk}/results/")
    page.wait_for_selector("table.pivot td.num")
    values = page.locator("table.pivot td.num").all_inner_texts()
    assert any(re.search(r"[1-9]", v) for v in values), values
    page.wait_for_selector(".chart .main-svg .trace", state="attached")
    screenshot(page, f"templates-{slug}-3-results")
    assert page.console_errors == []
