"""`make run` from a fresh clone: the real start path (make, scripts/run.py,
gunicorn, a Celery worker and beat on the embedded default), checked from
outside like a new user would: the printed URL answers, the printed login
works, the demo run finishes, a 404 is the app's own page, Ctrl-C stops it.

The clone reuses the tests' virtualenv (VENV=..., INSTALL=0) instead of
installing one; everything else is what `make run` does on a fresh machine.
"""

import http.cookiejar
import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.support.browser import browser, screenshot  # noqa: F401 (fixture)
from tests.support.waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def clone(tmp_path):
    target = tmp_path / "benchboard"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(target)], check=True)
    return target


def read_until(stream, pattern: str, limit_s: float = 240) -> list[str]:
    """Lines of `stream` up to the one matching `pattern` (fails on EOF)."""
    lines, deadline = [], time.monotonic() + limit_s
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            pytest.fail("make run ended before printing the login:\n" + "".join(lines))
        lines.append(line)
        if re.search(pattern, line):
            return lines
    pytest.fail("no login printed:\n" + "".join(lines))


def _demo_cells_have_a_timeline_and_a_verdict(browser, url, username, password):  # noqa: F811
    """What a newcomer sees first, in Chromium: each demo cell's page draws the
    tool's and the machine's seconds and says what limited the cell (not
    "too short to judge", not "no verdict")."""
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(30_000)
    page.goto(url + "login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("main button[type=submit]")
    page.wait_for_url(url)
    page.goto(url + "runs/1/")
    links = sorted(
        set(
            page.eval_on_selector_all(
                "a[href*='/cells/'][href$='/artifacts/']", "els => els.map(e => e.href)"
            )
        )
    )
    assert len(links) == 3, links
    for link in links:
        page.goto(link)
        page.wait_for_selector("#cell-timeline[data-ready='1']", state="attached")
        assert page.get_attribute("#cell-timeline", "data-panels") == "tool,telemetry"
        verdict = page.locator("[data-role=verdict]")
        assert verdict.get_attribute("data-limit") not in ("no_telemetry", "too_short"), (
            verdict.inner_text()
        )
        assert "measured seconds" in page.inner_text("[data-role=rests-on]")
    screenshot(page, "make-run-demo-cell")


def test_make_run_from_a_fresh_clone(clone, tmp_path, browser):  # noqa: F811
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in (
            "DATABASE_URL",
            "CELERY_BROKER_URL",
            "REDIS_URL",
            "DJANGO_DEBUG",
            "BENCHBOARD_QUEUE",
            "DJANGO_SETTINGS_MODULE",
            "BENCHBOARD_EMBEDDED",
            # Under `make test` these make the inner make a sub-make, which
            # prints "Entering/Leaving directory" around a user's own output.
            "MAKELEVEL",
            "MAKEFLAGS",
            "MFLAGS",
        )
    }
    env.update(BENCHBOARD_VAR_DIR=str(tmp_path / "var"), BENCHBOARD_PORT=str(port))
    venv = (ROOT / ".venv").resolve()
    proc = subprocess.Popen(
        ["make", "run", f"VENV={venv}", "INSTALL=0"],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        lines = read_until(proc.stdout, r"^Log in as: ")
        url_line, login_line = lines[-2].strip(), lines[-1].strip()
        url = f"http://127.0.0.1:{port}/"
        assert url_line == f"Open {url}"
        username, password = re.fullmatch(r"Log in as: (\S+) / (\S+)", login_line).groups()
        # A line per setup step; the demo says where it runs and how to skip it.
        said = [line.strip() for line in lines]
        assert "... migrating the database and collecting the static files" in said
        assert f"... waiting for the web server at {url}" in said
        assert any(
            re.fullmatch(
                r"Demo run #1 started: demo: sysbench OLTP threads on local MariaDB \(3 cells\) "
                r"in schema benchboard_demo on 127\.0\.0\.1:3306 — see it at /runs/1/",
                line,
            )
            for line in said
        ), said
        assert "Skip the demo next time: make run DEMO=0" in said

        # The printed URL answers, served by gunicorn with DEBUG off.
        with urllib.request.urlopen(url + "login/") as response:
            assert response.status == 200 and response.headers["Server"].startswith("gunicorn")
            page = response.read().decode()

        # The printed login works.
        jar = http.cookiejar.CookieJar()
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
        assert 'name="csrfmiddlewaretoken"' in page
        with opener.open(url + "login/") as response:  # sets the csrf cookie
            token = re.search(
                r'name="csrfmiddlewaretoken" value="([^"]+)"', response.read().decode()
            ).group(1)
        form = urllib.parse.urlencode(
            {"username": username, "password": password, "csrfmiddlewaretoken": token}
        ).encode()
        request = urllib.request.Request(url + "login/", data=form, headers={"Referer": url})
        with opener.open(request) as response:
            home = response.read().decode()
        assert response.url == url and "Recent runs" in home and "Log out demo" in home

        # The demo run finishes.
        def demo_done():
            try:
                with opener.open(url + "runs/1/progress.json") as response:
                    data = json.loads(response.read())
            except urllib.error.HTTPError as error:  # the demo run is being created
                assert error.code == 404
                return None
            return data if not data["active"] else None

        data = wait_for(demo_done, timeout=240, step=1)
        assert data["status"] == "succeeded" and data["done"] == data["total"] > 0
        _demo_cells_have_a_timeline_and_a_verdict(browser, url, username, password)

        # A 404 is the app's own page, not Django's debug page with the URL patterns.
        with pytest.raises(urllib.error.HTTPError) as caught:
            opener.open(url + "no-such-page/")
        body = caught.value.read().decode()
        assert caught.value.code == 404
        assert "Not found · Benchboard" in body and "URLconf" not in body

        # Static files compressed, hashed names cached for good.
        css = re.search(r'href="(/static/css/app\.[0-9a-f]+\.css)"', home).group(1)
        request = urllib.request.Request(url.rstrip("/") + css, headers={"Accept-Encoding": "gzip"})
        with urllib.request.urlopen(request) as response:
            assert response.headers["Content-Encoding"] == "gzip"
            assert "immutable" in response.headers["Cache-Control"]
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        rest = proc.communicate(timeout=60)[0]
    # Ctrl-C stops it (make reports the interrupt as -SIGINT), nothing printed
    # after the URL and the login, and the web server is gone.
    assert proc.returncode in (0, -signal.SIGINT), rest
    assert rest.strip() == "", rest
    assert (tmp_path / "var" / "log" / "web.log").stat().st_size > 0

    def web_gone():
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2)
        except OSError:
            return True
        return False

    wait_for(web_gone, timeout=30, step=0.5)
