"""End to end through a real Celery worker, Redis, PostgreSQL and fio: a plan
whose target gets slower (its fio jobs are capped at half the IOPS from the
eleventh run on) raises a bad alert, the automatic confirmation run (only
that cell) confirms it, and the signed webhook and the SMTP server each
receive the confirmed alert once, the "new" notification being held back
(other metrics' own alerts, if any, are each received once too)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time

import pytest

from benchapp import crypto
from benchapp.models import Alert, AlertDelivery, Notifier, Plan, Run
from benchapp.runs import orchestration
from tests.support.receivers import mail_receiver, webhook_receiver  # noqa: F401
from tests.support.waiting import finished, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "e2e-signing-secret"
FAST, SLOW, BEFORE, AFTER = 4000, 2000, 10, 5  # a level needs 5 runs (min_size)


def fio_document(rate_iops: int) -> dict:
    return {
        "name": "fio history",
        "tool": "fio",
        "targets": [{"name": "disk", "kind": "host"}],
        "params": {
            "filename": "history.data",
            "size": "1M",
            "bs": "4k",
            "rw": "read",
            "runtime": 1,
            "time_based": True,
            "rate_iops": rate_iops,
        },
        "axes": {"iodepth": [1]},
    }


def test_slower_target_alerted_confirmed_and_notified_once(
    team, start_worker, webhook_receiver, mail_receiver
):
    hook = webhook_receiver()
    start_worker(
        "history",
        BENCHBOARD_WEBHOOK_ALLOW_PRIVATE="true",
        EMAIL_HOST="127.0.0.1",
        EMAIL_PORT=mail_receiver.port,
        DEFAULT_FROM_EMAIL="bench@example.com",
        BENCHBOARD_NOTIFY_BACKOFF_SECONDS=0.5,
        BENCHBOARD_HEARTBEAT_SECONDS=1,
    )
    Notifier.objects.create(
        team=team,
        webhook_url=hook.url,
        emails="ops@example.com",
        webhook_secret=crypto.encrypt(SECRET),
    )
    plan = Plan.objects.create(
        team=team, name="fio history", tool="fio", document=fio_document(FAST), confirm_alerts=True
    )
    for night in range(BEFORE + AFTER):
        if night == BEFORE:  # the target gets slower
            plan.document = fio_document(SLOW)
            plan.save()
        run = orchestration.start_run(team, plan.document, plan=plan, origin="schedule")
        # reap (what beat does): a confirmation run started by an earlier
        # alert may hold the target; its release wakes only its own run
        wait_for(lambda run=run: finished(run), timeout=60, reap=True)
        assert run.status == Run.SUCCEEDED, run.error
    slow_from = Run.objects.filter(plan=plan, origin="schedule").order_by("created_at")[BEFORE]

    # One confirmation run per detection that raised bad alerts: another
    # metric's alert may be raised (and confirmed) one run later than read_iops'.
    confirms = Run.objects.filter(plan=plan, origin="confirm")
    wait_for(confirms.exists, timeout=60)
    wait_for(lambda: all(finished(run) for run in confirms), timeout=60, reap=True)
    judged = Alert.objects.filter(plan=plan, metric="read_iops").exclude(status=Alert.NEW)
    try:
        iops = wait_for(judged.first, timeout=60)
    except AssertionError:
        raise AssertionError(
            list(Alert.objects.values_list("metric", "status", "confirm_note"))
        ) from None
    confirm = iops.confirm_run
    assert (iops.status, iops.bad, iops.start_run, confirm.origin) == (
        Alert.CONFIRMED,
        True,
        slow_from,
        "confirm",
    )
    assert list(confirm.cells.values_list("key", flat=True)) == ["iodepth=1"]
    assert iops.magnitude == pytest.approx(-0.5, abs=0.05)
    assert Alert.objects.filter(plan=plan, metric="read_iops").count() == 1

    def delivered():
        deliveries = AlertDelivery.objects.all()
        return (
            deliveries.filter(alert=iops).count() == 2
            and not deliveries.exclude(status=AlertDelivery.SENT).exists()
            and len(hook.requests) + len(mail_receiver.messages) == deliveries.count()
        )

    wait_for(delivered, timeout=60)
    time.sleep(2)  # a duplicate would arrive now

    # Other series (latencies...) may raise alerts of their own; whatever was
    # sent, each (alert, event) arrived once on each channel.
    posts = [json.loads(r["body"]) for r in hook.requests]
    events = [(p["alert"]["id"], p["event"]) for p in posts]
    assert len(events) == len(set(events)) == len(mail_receiver.messages)
    assert (iops.pk, "new") not in events  # held back until the confirmation decided
    for request in hook.requests:
        signature = hmac.new(SECRET.encode(), request["body"], hashlib.sha256).hexdigest()
        assert request["headers"]["X-Benchboard-Signature-256"] == f"sha256={signature}"
    (post,) = [p for p in posts if p["alert"]["id"] == iops.pk]
    assert post["event"] == "confirmed" and post["alert"]["status"] == Alert.CONFIRMED
    assert post["alert"]["confirm_run"] == confirm.pk and post["alert"]["metric"] == "read_iops"
    subjects = [m["message"]["Subject"] for m in mail_receiver.messages]
    assert sum("confirmed: read_iops -" in s for s in subjects) == 1
