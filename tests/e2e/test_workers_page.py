"""The Workers page in Chromium and the pool in the REST API (issue 43), with
two real worker hosts (tests/support/worker.py: own UTS namespaces, host
names and var dirs) and a cell running on one of them."""

import re

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from benchapp.models import Cell, WorkerHost
from benchapp.runs import orchestration
from tests.support.browser import browser, login, page, screenshot  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES, match_leases

pytestmark = pytest.mark.django_db(transaction=True)

A, B = "pool-page-a", "pool-page-b"


@pytest.fixture(autouse=True)
def fast_leases(settings):
    match_leases(settings, FAST_LEASES)


def long_cell_plan(directory) -> dict:
    return {
        "name": "pool-page",
        "tool": "fio",
        "targets": [{"name": "d1", "kind": "host"}],
        "params": {
            "filename": f"{directory}/fio.data",
            "size": "2M",
            "bs": "4k",
            "rw": "read",
            "runtime": 20,
            "time_based": True,
        },
    }


def api_as(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def test_workers_page_lists_hosts_running_cells_and_drains_one(
    page,  # noqa: F811
    live_server,
    owner,
    member,
    team,
    tmp_path,
    start_worker,
):
    owner.is_staff = True
    owner.save()
    start_worker("a", host=A, **FAST_LEASES)
    start_worker("b", host=B, **FAST_LEASES)
    run = orchestration.start_run(team, long_cell_plan(tmp_path))
    cell = wait_for(lambda: Cell.objects.filter(run=run, status=Cell.RUNNING).first())
    busy, idle = (A, B) if cell.worker == A else (B, A)

    login(page, live_server, owner)
    page.goto(f"{live_server.url}/workers/")
    rows = page.locator("table[data-role=workers] tbody tr")
    assert rows.count() == 2
    busy_row = page.locator(f"tr[data-host={busy}]")
    assert busy_row.get_attribute("data-state") == "up"
    assert busy_row.locator("[data-role=slots]").inner_text() == "1 / 0"
    assert "fio 3" in busy_row.locator("[data-role=tools]").inner_text()
    idle_row = page.locator(f"tr[data-host={idle}]")
    assert idle_row.locator("[data-role=slots]").inner_text() == "0 / 1"
    screenshot(page, "workers-page")

    idle_row.locator("[data-role=drain]").click()
    page.wait_for_url(re.compile(r"/workers/$"))
    assert page.locator(f"tr[data-host={idle}]").get_attribute("data-state") == "draining"
    assert WorkerHost.objects.get(hostname=idle).draining

    api = api_as(owner)
    listed = {h["hostname"]: h for h in api.get("/api/workers/").json()}
    assert listed[idle]["state"] == "draining" and listed[busy]["state"] == "up"
    assert [c["cell"] for c in listed[busy]["running"]] == [cell.pk]
    assert listed[busy]["tools"]["fio"].startswith("3")

    page.locator(f"tr[data-host={idle}] [data-role=resume]").click()
    page.wait_for_url(re.compile(r"/workers/$"))
    assert page.locator(f"tr[data-host={idle}]").get_attribute("data-state") == "up"

    # The running cell's link leads to its cell page, which names its host.
    page.locator(f"tr[data-host={busy}] [data-role=running] a").click()
    page.wait_for_url(re.compile(rf"/runs/{run.pk}/cells/{cell.pk}/"))
    assert page.locator("[data-role=worker-host]").inner_text().startswith(busy)
    assert page.console_errors == []

    orchestration.cancel_run(run)
    wait_for(lambda: finished(run), timeout=120)


def test_the_pool_api_is_for_staff_only_and_drains_and_resumes(owner, member, team, start_worker):
    start_worker("a", host=A, **FAST_LEASES)
    host_id = WorkerHost.objects.get(hostname=A).host_id
    plain = api_as(member)
    assert plain.get("/api/workers/").status_code == 403
    assert plain.post(f"/api/workers/{host_id}/drain/").status_code == 403
    assert not WorkerHost.objects.get(hostname=A).draining

    owner.is_staff = True
    owner.save()
    staff = api_as(owner)
    [listed] = staff.get("/api/workers/").json()
    assert listed["host_id"] == host_id and listed["state"] == "up" and listed["slots"] == 1
    drained = staff.post(f"/api/workers/{host_id}/drain/")
    assert drained.status_code == 200 and drained.json()["state"] == "draining"
    assert staff.get("/api/workers/").json()[0]["state"] == "draining"
    assert staff.post(f"/api/workers/{host_id}/resume/").json()["state"] == "up"
    assert staff.post("/api/workers/no-such-host/drain/").status_code == 404


def test_the_workers_page_is_refused_to_non_staff(member_client):
    assert member_client.get("/workers/").status_code == 403
