"""A real browser for end-to-end tests: Playwright driving Debian's chromium.

    from tests.support.browser import browser, page, browser_page, login, screenshot  # noqa: F401

`browser` launches /usr/bin/chromium headless for one test;
`page` (per test) is a fresh context and page at 1280x900, closed after;
`browser_page` is the same page for tests that prefer that name. Use them
with pytest-django's `live_server` (which implies a transactional database):

    def test_x(page, live_server, owner):
        login(page, live_server, owner)
        page.goto(live_server.url + "/runs/")
        screenshot(page, "runs")

Screenshots go to test-artifacts/ at the repository root (gitignored).
`playwright install` cannot download browsers here, hence executable_path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("BENCHBOARD_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
VIEWPORT = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
def browser(monkeypatch):
    """A headless chromium for one test; closed (and its process ended) after it.

    Per test, not per session: while Playwright's sync API is active its event
    loop counts as running in this thread, and Django's ORM refuses to run
    there unless DJANGO_ALLOW_ASYNC_UNSAFE is set. Setting it only for the
    tests that drive a browser keeps it out of every other test (and out of
    subprocesses such as `manage.py check --deploy`).
    """
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM}")
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser):
    """A fresh browser context and page (1280x900). Script errors and failed
    responses (but /favicon.ico) are collected in page.console_errors, so tests
    can assert that a page ran clean."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(15_000)
    new_page = context.new_page()
    new_page.console_errors = []

    def on_console(msg):
        # A missing resource is reported by on_response with its URL instead.
        if msg.type == "error" and not msg.text.startswith("Failed to load resource"):
            new_page.console_errors.append(msg.text)

    def on_response(response):
        if response.status >= 400 and not response.url.endswith("/favicon.ico"):
            new_page.console_errors.append(f"{response.status} {response.url}")

    new_page.on("console", on_console)
    new_page.on("response", on_response)
    new_page.on("pageerror", lambda exc: new_page.console_errors.append(str(exc)))
    try:
        yield new_page
    finally:
        context.close()


@pytest.fixture
def browser_page(page):
    return page


def login(page, live_server, user, password: str | None = None) -> None:
    """Log in through the real login form (tests/conftest.py passwords are "pw-<name>")."""
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", password or f"pw-{user.username}")
    page.click("main button[type=submit]")
    page.wait_for_url(re.compile(r"^(?!.*/login/).*$"))


def screenshot(page, name: str, full_page: bool = True) -> Path:
    """Save a PNG under test-artifacts/ and return its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', name)}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
