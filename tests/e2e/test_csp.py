"""Content-Security-Policy in a real browser: the results page (Plotly
charts) and the share page render with no CSP violation, while an inline
script is refused (so the check itself can fail)."""

import pytest

from benchapp.histories import comparisons
from tests.e2e.test_charts import _runs, _traces
from tests.support.browser import browser, login, page  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

# Runs before any page script (Playwright injects it outside the page's CSP).
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


def _violations(page):  # noqa: F811
    return page.evaluate("window.__cspViolations")


def _csp_errors(page):  # noqa: F811
    return [e for e in page.console_errors if "Content Security Policy" in e]


def test_results_page_with_charts_has_no_csp_violation(page, live_server, owner, team):  # noqa: F811
    run = _runs(team)[0]
    page.add_init_script(RECORD_VIOLATIONS)
    login(page, live_server, owner)
    for kind in ("bar", "box", "line"):  # every trace type the pages draw
        response = page.goto(f"{live_server.url}/runs/{run.pk}/results/?chart={kind}")
        assert "script-src 'self'" in response.headers["content-security-policy"]
        assert _traces(page, "chart-main") >= 1
    page.wait_for_selector("#chart-series .main-svg", state="attached")
    page.hover("#chart-main .main-svg")  # hover labels and the mode bar draw too
    page.wait_for_timeout(300)
    assert _violations(page) == []
    assert _csp_errors(page) == []
    # The detector works: an inline script is refused and reported.
    page.evaluate("""() => { const s = document.createElement("script");
                             s.textContent = "window.__inlineRan = true;";
                             document.body.appendChild(s); }""")
    page.wait_for_timeout(200)
    assert page.evaluate("window.__inlineRan === undefined")
    assert any(v.startswith("script-src") for v in _violations(page))


def test_share_page_has_no_csp_violation(page, live_server, team):  # noqa: F811
    before, after = _runs(team)
    token = comparisons.save_comparison(team, "before/after", [before, after]).share()
    page.add_init_script(RECORD_VIOLATIONS)
    page.goto(f"{live_server.url}/share/{token}/")
    assert _traces(page, "chart-main") >= 2  # one line per run
    page.wait_for_timeout(300)
    assert _violations(page) == []
    assert _csp_errors(page) == []


@pytest.mark.parametrize("path", ["/api/docs/", "/api/redoc/"])
def test_api_docs_pages_have_no_csp_violation(page, live_server, owner, path):  # noqa: F811
    page.add_init_script(RECORD_VIOLATIONS)
    login(page, live_server, owner)
    page.goto(live_server.url + path)
    page.wait_for_selector(".swagger-ui .info, .api-info", state="attached")
    page.wait_for_timeout(300)
    # Nothing of this site is blocked; Redoc's logo from its CDN is (no off-site loads).
    blocked = [v for v in _violations(page) if "https://cdn.redoc.ly/" not in v]
    assert blocked == [], "\n".join(blocked)
