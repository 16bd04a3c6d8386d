"""What else changed at a change point (benchapp.histories.explain): the
alert's explanation ranks the settings that changed exactly at the change
above those that changed runs earlier, and reaches the alert table, the
webhook and the email."""

import random

import pytest

from benchapp.histories import history, notify
from benchapp.models import AlertDelivery, Notifier, Plan
from benchapp.store import envstore
from tests.benchapp.results_data import make_run

pytestmark = pytest.mark.django_db


def snapshot(pool: str, kernel: str, sysbench: str) -> dict:
    return {
        "database": {"variables": {"innodb_buffer_pool_size": pool, "max_connections": "151"}},
        "host": {"client": {"kernel": kernel, "cpus_online": "0-1"}},
        "tools": {"tool": "sysbench", "client": {"version": sysbench}},
    }


def nightly(team, plan, nights):
    """nights: [(tps, snapshot, verdict)] -> one run each, two repeats of one cell."""
    rng = random.Random(3)
    runs = []
    for i, (tps, snap, verdict) in enumerate(nights):
        digest = envstore.store(snap)
        extra = {"environment_id": digest, "facts": {"verdict": {"limit": verdict}}}
        cells = [
            ({"threads": 8}, r, {"tps": tps * (1 + rng.gauss(0, 0.01))}, extra) for r in (1, 2)
        ]
        runs.append(make_run(team, name=f"night {i}", plan=plan, cells=cells))
    return runs


@pytest.fixture
def alert(team):
    plan = Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})
    big, small = "21474836480", "8589934592"
    nights = [(1000, snapshot(big, "6.1.0-20", "1.0.20"), "none")] * 9
    # A kernel update three runs before the step, with no effect on the figures.
    nights += [(1000, snapshot(big, "6.1.0-21", "1.0.20"), "none")] * 3
    # The step: the buffer pool shrunk, the data no longer fits in memory.
    nights += [(600, snapshot(small, "6.1.0-21", "1.0.20"), "not_in_memory")] * 10
    runs = nightly(team, plan, nights)
    created = [a for a in history.detect_plan(plan) if a.metric == "tps"]
    assert len(created) == 1
    assert created[0].start_run == runs[12]
    return created[0], runs


def test_the_variable_that_changed_at_the_change_point_comes_first(alert):
    found, runs = alert
    first, *rest = found.explanation
    assert (first["key"], first["before"], first["after"]) == (
        "variables.innodb_buffer_pool_size",
        "21474836480",
        "8589934592",
    )
    assert first["distance"] == 0 and first["run"] == runs[12].pk
    assert first["text"] == (
        f"innodb_buffer_pool_size 21474836480 → 8589934592 from run #{runs[12].pk}"
    )
    keys = [(c["group"], c["key"], c["distance"]) for c in rest]
    assert keys == [("verdict", "limit", 0), ("host", "client.kernel", 3)]
    assert "verdict changed from none to not_in_memory" in rest[0]["text"]


def test_the_explanation_reaches_the_webhook_and_the_email(alert, mailoutbox):
    found, runs = alert
    body = notify.payload(found, "new")["alert"]
    assert body["what_else_changed"][0].startswith("innodb_buffer_pool_size 21474836480")
    assert len(body["what_else_changed"]) == 3
    notifier = Notifier.objects.create(team=found.team, emails="oncall@example.test")
    delivery = AlertDelivery.objects.create(alert=found, event="new", channel=AlertDelivery.EMAIL)
    notify._mail(notifier, delivery)
    text = mailoutbox[0].body
    assert "What else changed" in text
    assert f"innodb_buffer_pool_size 21474836480 → 8589934592 from run #{runs[12].pk}" in text


def test_one_change_is_one_incident_notified_once(team, mailoutbox):
    """tps, qps and latency of two cells move at one buffer-pool change: one
    lead (tps, a bad change) that every other alert follows; one email, which
    names every metric that moved and the variable."""
    plan = Plan.objects.create(team=team, name="incident", tool="sysbench", document={})
    Notifier.objects.create(team=team, emails="oncall@example.test", only_bad=False)
    rng = random.Random(5)
    big, small = snapshot("21474836480", "6.1", "1.0.20"), snapshot("8589934592", "6.1", "1.0.20")
    for i in range(24):
        snap, tps = (big, 1000) if i < 12 else (small, 600)
        digest = envstore.store(snap)
        cells = [
            (
                {"threads": t},
                r,
                {
                    "tps": tps * t * (1 + rng.gauss(0, 0.01)),
                    "qps": 20 * tps * t * (1 + rng.gauss(0, 0.01)),
                    "latency_avg_ms": 1000 / tps * (1 + rng.gauss(0, 0.01)),
                },
                {"environment_id": digest},
            )
            for t in (4, 8)
            for r in (1, 2)
        ]
        make_run(team, name=f"night {i}", plan=plan, cells=cells)
    created = history.detect_plan(plan)
    assert len(created) == 6  # three metrics of two cells
    leads = [a for a in created if a.lead_id is None]
    assert len(leads) == 1 and leads[0].metric == "tps" and leads[0].bad
    lead = leads[0]
    assert lead.followers.count() == 5
    sent = [d for a in created for d in notify.queue(a, "new")]
    assert [d.alert_id for d in sent] == [lead.pk]
    body = notify.payload(lead, "new")["alert"]
    assert sorted(f["metric"] for f in body["also_moved"]) == ["latency_avg_ms"] * 2 + [
        "qps"
    ] * 2 + ["tps"]
    assert body["what_else_changed"][0].startswith("innodb_buffer_pool_size")
