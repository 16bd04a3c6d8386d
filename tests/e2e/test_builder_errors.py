"""Builder errors stay visible after submit, in a real browser: the page's
own preview (which runs on load) no longer clears the server's marks."""

import pytest

from tests.benchapp.ui_data import make_target
from tests.support.browser import browser, browser_page, login, page  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_builder_errors_visible_after_submit(page, live_server, owner, team):  # noqa: F811
    make_target(team)
    login(page, live_server, owner)
    page.goto(f"{live_server.url}/plans/new/")
    page.wait_for_load_state("networkidle")
    page.fill("#id_name", "typed")
    page.select_option("#id_tool", "mysqlslap")
    page.check("input[name=targets][value=local-mariadb]")
    page.fill("#id_axis-0-name", "load_type")
    page.fill("#id_axis-0-values", "read, bogus")
    with page.expect_response(lambda r: r.url.endswith("/plans/preview.json")) as first:
        page.click("#plan-form button[type=submit]")
    assert first.value.json()["valid"] is False  # the reloaded page's own preview ran
    page.wait_for_load_state("networkidle")
    assert "Please fix the fields marked below." in page.inner_text("#plan-form")
    field = page.locator("#field-axis-0-values")
    assert "has-error" in field.get_attribute("class")
    assert "'bogus' is not allowed" in field.inner_text()
