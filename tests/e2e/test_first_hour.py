"""The first hour of a new user, in a real browser: the brand-new plan form
opens without validation errors and shows them once the user has typed."""

import pytest

from tests.benchapp.ui_data import make_target
from tests.support.browser import browser, browser_page, login, page  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


def test_new_plan_form_shows_no_errors_before_typing(page, live_server, owner, team):  # noqa: F811
    make_target(team)
    login(page, live_server, owner)
    with page.expect_response(lambda r: r.url.endswith("/plans/preview.json")) as first:
        page.goto(f"{live_server.url}/plans/new/")
    assert first.value.json()["valid"] is False  # the empty form is incomplete...
    page.wait_for_load_state("networkidle")
    assert page.locator(".field.has-error").count() == 0  # ...but nothing is red yet
    assert page.locator("#preview-errors").is_hidden()
    assert "This field is required." not in page.inner_text("#plan-form")
    # Once the user has typed, errors are shown as before.
    page.fill("#id_name", "typed")
    page.select_option("#id_tool", "mysqlslap")
    page.check("input[name=targets][value=local-mariadb]")
    page.fill("#id_axis-0-name", "load_type")
    page.fill("#id_axis-0-values", "read, bogus")
    page.wait_for_selector("#field-axis-0-values.has-error")
    assert "'bogus' is not allowed" in page.inner_text("#field-axis-0-values")
