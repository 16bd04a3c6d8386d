"""Content-Security-Policy on every page, and templates without inline script
(a <script> without src or an on*= attribute would need 'unsafe-inline')."""

import re
from pathlib import Path

import pytest

from benchapp.histories import comparisons
from tests.benchapp.results_data import make_run

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
REQUIRED = [
    "default-src 'self'",
    "script-src 'self'",
    "img-src 'self' data:",
    "frame-ancestors 'none'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
]


def _policy(response) -> str:
    policy = response["Content-Security-Policy"]
    for directive in REQUIRED:
        assert directive in policy, (directive, policy)
    script = re.search(r"script-src ([^;]*)", policy).group(1)
    assert "unsafe" not in script, policy
    return policy


@pytest.fixture
def pages(team, owner):
    run = make_run(team, cells=[({"threads": 1}, 1, {"tps": 10.0})])
    comparison = comparisons.save_comparison(team, "c", [run])
    cell = run.cells.get()
    return [
        "/",
        "/runs/",
        f"/runs/{run.pk}/",
        f"/runs/{run.pk}/results/",
        f"/runs/{run.pk}/cells/{cell.pk}/artifacts/",
        "/plans/",
        "/plans/new/",
        "/targets/",
        "/credentials/",
        "/schedules/",
        "/archive/",
        "/archive/import/",
        "/comparisons/",
        f"/comparisons/{comparison.pk}/",
        "/tokens/",
        "/alerts/",
        "/api/docs/",
        "/api/runs/",
        f"/runs/{run.pk}/results.json",
        "/no-such-page/",
    ], comparison


def test_every_page_carries_the_policy(owner_client, pages):
    urls, comparison = pages
    for url in urls:
        response = owner_client.get(url)
        assert response.status_code in (200, 404), (url, response.status_code)
        _policy(response)


def test_logged_out_and_share_pages_carry_the_policy(client, pages):
    _, comparison = pages
    token = comparison.share()
    for url in ("/login/", f"/share/{token}/", "/runs/"):
        _policy(client.get(url))


def test_templates_have_no_inline_script_or_handlers():
    offenders = []
    for path in TEMPLATES.rglob("*.html"):
        text = path.read_text()
        for match in re.finditer(r"<script\b[^>]*>", text):
            if "src=" not in match.group(0):
                offenders.append(f"{path.name}: {match.group(0)}")
        for match in re.finditer(r"<[^>]*\son[a-z]+\s*=", text):
            offenders.append(f"{path.name}: {match.group(0)[:60]}")
        if re.search(r"\sstyle\s*=", text):
            offenders.append(f"{path.name}: style attribute")
    assert offenders == []
