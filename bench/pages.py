#!/usr/bin/env python
"""Results pages in a real browser: load time and bytes on the wire, cold and warm.

    .venv/bin/python bench/pages.py [--loads 5] [--database sqlite|postgresql]
    .venv/bin/python bench/pages.py --year [--rounds 5] [--warm 4] [--year-scale 1]


Serves the app the way `make run` and production do (DEBUG off, collectstatic,
gunicorn with 2 workers, whitenoise) on a database of 2 runs × 500 cells ×
20 metrics (scripts/bench_results.py makes it once), on each database: the
embedded default (SQLite under a var/ directory, no DATABASE_URL, as `make
run` starts it) and PostgreSQL (DATABASE_URL's server, database
benchboard_bench_2). It drives Debian's chromium through Playwright:

- cold: a new browser context (empty cache) loads the page until its charts
  are drawn (every chart's SVG attached);
- warm: the same context loads it again.

Pages: a run's results page (500 cells) and the comparison of 2 runs ×
10,000 measurements. Bytes are what crossed the network (Chromium's
encodedDataLength: compressed bodies plus headers), summed over every
request of the load. Goals: cold <= 1.0 s, warm <= 0.5 s, first load <= 1 MB.
Each row also gives where the time went (medians, ms from the navigation's
start, the page's own clock): the HTML received, Plotly received, every
script run, Plotly included (DOMContentLoaded), the first JSON request
asked and the last one answered (none when the page asks for no JSON),
every chart drawn. Prints JSON on its last line.

--year loads the pages of one team of the generated year instead
(scripts/bench_scale.py's database, `benchboard_scale`, 100 M measurements;
built by `make bench-scale`, read here, only a login session written): the
home dashboard, the runs list, an archive search, a run's page (its cells),
its results page (the first cell's series drawn with it), the comparisons of
2 and 5 runs and a plan's trend page (its Plotly chart drawn). Each round
starts the server afresh for each page: cold is the page's first load, in a
new browser context, after the server's start; warm is the same context
loading it again (--warm times). Figures: median and range over the rounds.
PostgreSQL's buffers and the OS's page cache stay warm unless --cold-database
COMMAND (or BENCH_COLD_DATABASE) names the command that restarts the database
server (scripts/bench_scale.py: the same option); then it runs before each
server start, and the OS's page cache is dropped where permitted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.appserver import collectstatic, environment, server  # noqa: E402
from bench.report import print_browser_pages, spread  # noqa: E402
from tests.support.browser import ARGS, CHROMIUM  # noqa: E402 (Chromium as the tests start it)

GOALS = {"cold_s": 1.0, "warm_s": 0.5, "first_load_bytes": 1_000_000}


DATABASES = {"sqlite": "the embedded default (SQLite)", "postgresql": "PostgreSQL"}
# The embedded default's var/ directory: its SQLite file is made once and kept.
SQLITE_VAR_DIR = ROOT / "var" / "bench" / "pages-sqlite"


def prepared(env: dict) -> dict:
    """prepare_data in a process of its own, on the server's environment."""
    proc = subprocess.run(
        [sys.executable, __file__, "--prepare"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def prepare_data() -> dict:
    """The 2-run database (made once), a user's session and the page URLs."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_results

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore
    from django.core.management import call_command

    from benchapp.histories import comparisons
    from benchapp.models import Run, Team

    call_command("migrate", verbosity=0)
    bench_results.generate(False, 2)
    team = Team.objects.get(name="bench")
    runs = list(Run.objects.filter(team=team).order_by("pk")[:2])
    comparison = team.comparisons.filter(name="bench pair").first() or comparisons.save_comparison(
        team, "bench pair", runs
    )
    user = User.objects.get(username="bench")
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.create()
    return {
        "session_cookie": settings.SESSION_COOKIE_NAME,
        "session": session.session_key,
        "pages": {
            "run results page (500 cells)": f"/runs/{runs[0].pk}/results/",
            "comparison page (2 runs x 10,000)": f"/comparisons/{comparison.pk}/",
        },
        "json": [f"/runs/{runs[0].pk}/results.json", f"/comparisons/{comparison.pk}/results.json"],
    }


# The page's clock (ms since navigation) when every chart is drawn (or marked empty).
ALL_DRAWN = """() => [...document.querySelectorAll("div.chart[id], div.trend-chart")].every(
    (d) => d.querySelector(".main-svg") || d.classList.contains("chart-empty")
) && performance.now()"""
# Where the time went, from the page's resource timing.
TIMING = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const res = performance.getEntriesByType("resource");
  const json = res.filter((r) => /[.]json/.test(r.name));
  return {
    html_ms: nav.responseEnd,
    plotly_ms: Math.max(0, ...res.filter((r) => /plotly/.test(r.name)).map((r) => r.responseEnd)),
    scripts_run_ms: nav.domContentLoadedEventStart,
    json_asked_ms: json.length ? Math.min(...json.map((r) => r.startTime)) : null,
    json_answered_ms: json.length ? Math.max(...json.map((r) => r.responseEnd)) : null,
  };
}"""


def load(page, cdp_bytes: list, url: str) -> tuple[float, int, dict]:
    """Seconds until every chart on the page is drawn, the bytes received
    meanwhile, and the page's own timeline (ms)."""
    cdp_bytes.clear()
    start = time.perf_counter()
    page.goto(url, wait_until="load")
    drawn = page.wait_for_function(ALL_DRAWN, timeout=30_000).json_value()
    elapsed = time.perf_counter() - start
    page.wait_for_load_state("networkidle")
    return elapsed, sum(cdp_bytes), {**page.evaluate(TIMING), "drawn_ms": drawn}


def warm_server(base: str, data: dict) -> None:
    """Request every page a few times first: a cold browser, not a just-started server."""
    import urllib.request

    cookie = f"{data['session_cookie']}={data['session']}"
    for path in [*data["pages"].values(), *data["json"]]:
        for _ in range(4):  # reaches both gunicorn workers
            request = urllib.request.Request(base + path, headers={"Cookie": cookie})
            with urllib.request.urlopen(request, timeout=60) as response:
                response.read()


def timeline(loads: list[dict]) -> dict:
    """Median of each step over the loads, in ms (steps a page does not take left out)."""
    steps = {key: [t[key] for t in loads if t[key] is not None] for key in loads[0]}
    return {key: round(statistics.median(values)) for key, values in steps.items() if values}


def measure(base: str, data: dict, loads: int, database: str) -> dict:
    from playwright.sync_api import sync_playwright

    warm_server(base, data)
    out = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            for name, path in data["pages"].items():
                cold, warm, cold_bytes, warm_bytes, encodings = [], [], [], [], {}
                steps = {"cold": [], "warm": []}
                for _ in range(loads):
                    context = browser.new_context(viewport={"width": 1280, "height": 900})
                    context.add_cookies(
                        [{"name": data["session_cookie"], "value": data["session"], "url": base}]
                    )
                    page = context.new_page()
                    got: list[int] = []
                    cdp = context.new_cdp_session(page)
                    cdp.send("Network.enable")
                    cdp.on(
                        "Network.loadingFinished",
                        lambda e, got=got: got.append(int(e.get("encodedDataLength", 0))),
                    )
                    page.on(
                        "response",
                        lambda r, enc=encodings: enc.setdefault(
                            r.url.replace(base, "").split("?")[0],
                            r.headers.get("content-encoding", "identity"),
                        ),
                    )
                    for times, sizes, key in (
                        (cold, cold_bytes, "cold"),
                        (warm, warm_bytes, "warm"),
                    ):
                        seconds, size, steps_ms = load(page, got, base + path)
                        if "/login/" in page.url:
                            raise RuntimeError(f"{path}: not logged in")
                        times.append(seconds)
                        sizes.append(size)
                        steps[key].append(steps_ms)
                    context.close()
                out[f"{name} on {DATABASES[database]}"] = {
                    "cold_s": spread(cold),
                    "warm_s": spread(warm),
                    "first_load_bytes": spread(cold_bytes, 0),
                    "warm_load_bytes": spread(warm_bytes, 0),
                    "content_encoding": encodings,
                    "cold_timeline_ms": timeline(steps["cold"]),
                    "warm_timeline_ms": timeline(steps["warm"]),
                }
        finally:
            browser.close()
    return out


def page_figures(loads: int = 5, databases=tuple(DATABASES)) -> dict:
    """Figures for `make bench` (bench/run.py): see the module docstring."""
    figures = {}
    for database in databases:
        with contextlib.ExitStack() as stack:
            if database == "sqlite":
                var_dir = SQLITE_VAR_DIR
                var_dir.mkdir(parents=True, exist_ok=True)
            else:
                var_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bb-pages-")))
            env = environment(database, var_dir)
            data = prepared(env)
            base = stack.enter_context(server(env))
            figures.update(measure(base, data, loads, database))
    return {"goals": GOALS, "pages": figures}


# ------------------------------------------------------------ the generated year


def prepare_year() -> dict:
    """A session of the year's user on team-00, and that team's page URLs
    (the saved comparisons scripts/bench_scale.py made; made here if missing)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_scale

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "benchapp.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore

    from benchapp.accounts.access import SESSION_KEY
    from benchapp.models import Team

    team = Team.objects.get(name="team-00")
    user = User.objects.get(username="scale")
    urls = {name: url for name, url, _goal in bench_scale.pages(team, 0)}
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session[SESSION_KEY] = team.pk
    session.create()
    results = urls["run results page"]
    return {
        "session_cookie": settings.SESSION_COOKIE_NAME,
        "session": session.session_key,
        "pages": {
            "home dashboard": urls["home dashboard"],
            "runs list": urls["runs list"],
            "archive search (by tool)": urls["archive: by tool"],
            "run page (its cells)": results.removesuffix("results/"),
            "run results page (and a cell's series)": results,
            "comparison of 2 runs": urls["comparison of 2 runs"],
            "comparison of 5 runs": urls["comparison of 5 runs"],
            "plan trend page (chart drawn)": urls["plan trend page"],
        },
    }


def year_figures(
    rounds: int = 5, warm_loads: int = 4, scale: float = 1.0, cold_database: str = ""
) -> dict:
    """Figures of `--year`: see the module docstring."""
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_parsers
    import bench_scale

    with tempfile.TemporaryDirectory(prefix="bb-year-pages-") as tmp:
        env = environment("sqlite", Path(tmp))
        env.pop("BENCHBOARD_EMBEDDED", None)
        env["DATABASE_URL"] = bench_scale.database_url(scale)
        data = prepared({**env, "BB_PAGES_YEAR": "1"})
        collectstatic(env)
        times = {name: {"cold": [], "warm": [], "steps": ([], [])} for name in data["pages"]}
        loads_avg = [os.getloadavg()[0]]
        cold_note = "server started, database and OS caches warm"
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
            try:
                for _ in range(rounds):
                    for name, path in data["pages"].items():
                        if cold_database:
                            restarted = bench_scale.restart_database(
                                cold_database, env["DATABASE_URL"]
                            )
                            cold_note = f"server started; {restarted}"
                        with server(env, collect=False, workers_ready=True) as base:
                            cold, warm, steps = year_loads(browser, base, data, path, warm_loads)
                        times[name]["cold"].append(cold)
                        times[name]["warm"] += warm
                        times[name]["steps"][0].append(steps[0])
                        times[name]["steps"][1].extend(steps[1:])
                    loads_avg.append(os.getloadavg()[0])
            finally:
                browser.close()
    pages = {
        name: {
            "cold_s": spread(t["cold"]),
            "warm_s": spread(t["warm"]),
            "cold_timeline_ms": timeline(t["steps"][0]),
            "warm_timeline_ms": timeline(t["steps"][1]),
        }
        for name, t in times.items()
    }
    load_range = [round(min(loads_avg), 1), round(max(loads_avg), 1)]
    return {
        "goals": GOALS,
        "pages": pages,
        "load_average_1min": load_range,
        "cold": cold_note,
        # How fast this CPU is (bench_parsers' yardstick): figures from two
        # machines compare once this is known; the goals are per CPU.
        "yardstick_ms": bench_parsers.yardstick_ms(),
    }


def year_loads(browser, base: str, data: dict, path: str, warm_loads: int):
    """One page's first load in a new context (the server just started), then
    its warm loads in that context: seconds until every chart is drawn."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        context.add_cookies(
            [{"name": data["session_cookie"], "value": data["session"], "url": base}]
        )
        page = context.new_page()
        seconds, steps = [], []
        for _ in range(1 + warm_loads):
            elapsed, _size, steps_ms = load(page, [], base + path)
            if "/login/" in page.url:
                raise RuntimeError(f"{path}: not logged in")
            seconds.append(elapsed)
            steps.append(steps_ms)
        return seconds[0], seconds[1:], steps
    finally:
        context.close()


def print_year(figures: dict) -> None:
    goals = figures["goals"]
    print(f"load average (1 min) while measuring: {figures['load_average_1min']}")
    print(f"cold: {figures['cold']}")
    print(f"this CPU runs sum(range(10**6)) in {figures['yardstick_ms']} ms")
    for name, row in figures["pages"].items():
        cells = []
        for key in ("cold_s", "warm_s"):
            s = row[key]
            met = "met" if s["median"] <= goals[key] else "NOT met"
            cells.append(
                f"{key[:-2]} {s['median']:.3f} s ({s['min']:.3f}-{s['max']:.3f}, n={s['n']}, "
                f"goal {goals[key]} s: {met})"
            )
        print(f"{name:<40} " + "  ".join(cells))
        for key in ("cold_timeline_ms", "warm_timeline_ms"):
            steps = ", ".join(f"{k[:-3]} {v}" for k, v in row[key].items())
            print(f"  {key:<17} {steps} (ms, medians)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--database", choices=DATABASES, action="append", help="default: both")
    parser.add_argument("--prepare", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--year", action="store_true", help="the generated year's pages")
    parser.add_argument("--rounds", type=int, default=5, help="--year: server starts per page")
    parser.add_argument("--warm", type=int, default=4, help="--year: warm loads per round")
    parser.add_argument("--year-scale", type=float, default=1.0, help="--year: the year's share")
    parser.add_argument(
        "--cold-database",
        default=os.environ.get("BENCH_COLD_DATABASE", ""),
        metavar="COMMAND",
        help="--year: restart the database server with COMMAND before each server start",
    )
    args = parser.parse_args()
    if args.prepare:  # the child process of `prepared`
        year = os.environ.get("BB_PAGES_YEAR")
        print(json.dumps(prepare_year() if year else prepare_data()))
        return 0
    if args.year:
        figures = year_figures(args.rounds, args.warm, args.year_scale, args.cold_database)
        print_year(figures)
        print(json.dumps(figures))
        return 0
    figures = page_figures(args.loads, args.database or tuple(DATABASES))
    print_browser_pages(figures)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
