"""Alert notifications: a signed webhook received by a local HTTP server, mail
received by a local SMTP server (aiosmtpd), retries of a failing receiver, and
the team admins' settings page."""

import hashlib
import hmac
import json

import pytest
from django.urls import reverse

from benchapp import crypto
from benchapp.histories import notify
from benchapp.history_tasks import deliver_notification
from benchapp.models import Alert, AlertDelivery, Notifier, Plan
from tests.benchapp.results_data import make_run
from tests.support.receivers import mail_receiver, webhook_receiver  # noqa: F401

pytestmark = pytest.mark.django_db
SECRET = "s3cret-signing-key"


@pytest.fixture
def alert(team):
    plan = Plan.objects.create(team=team, name="nightly", tool="sysbench", document={})
    run = make_run(team, plan=plan, cells=[({"threads": 4}, 1, {"tps": 800.0})])
    return Alert.objects.create(
        team=team,
        plan=plan,
        cell_key="threads=4",
        metric="tps",
        start_run=run,
        before_mean=1000,
        before_low=990,
        before_high=1010,
        after_mean=800,
        after_low=795,
        after_high=805,
        magnitude=-0.2,
        pvalue=0.001,
        bad=True,
    )


@pytest.fixture
def local_hooks(settings):
    settings.BENCHBOARD_WEBHOOK_ALLOW_PRIVATE = True
    settings.BENCHBOARD_NOTIFY_BACKOFF_SECONDS = 0.01


def notifier_for(team, url="", emails=""):
    return Notifier.objects.create(
        team=team, webhook_url=url, emails=emails, webhook_secret=crypto.encrypt(SECRET)
    )


def test_the_webhook_is_signed_with_the_team_secret(team, alert, webhook_receiver, local_hooks):
    hook = webhook_receiver()
    notifier_for(team, url=hook.url)
    (delivery,) = notify.queue(alert, "new")
    assert notify.deliver(delivery.pk) == AlertDelivery.SENT
    (request,) = hook.requests
    expected = "sha256=" + hmac.new(SECRET.encode(), request["body"], hashlib.sha256).hexdigest()
    assert request["headers"]["X-Benchboard-Signature-256"] == expected
    assert request["headers"]["X-Benchboard-Event"] == "new"
    body = json.loads(request["body"])
    assert body["event"] == "new" and body["team"] == team.name
    assert body["alert"]["cell_key"] == "threads=4" and body["alert"]["magnitude"] == -0.2
    assert SECRET not in request["body"].decode()
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (AlertDelivery.SENT, 1)
    assert notify.deliver(delivery.pk) == AlertDelivery.SENT and len(hook.requests) == 1
    assert notify.queue(alert, "new") == []  # the same event is sent once


def test_mail_reaches_the_smtp_server(team, alert, mail_receiver, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", mail_receiver.port
    settings.DEFAULT_FROM_EMAIL = "bench@example.com"
    notifier_for(team, emails="ops@example.com, dba@example.com")
    (delivery,) = notify.queue(alert, "confirmed")
    assert notify.deliver(delivery.pk) == AlertDelivery.SENT
    (mail,) = mail_receiver.messages
    assert mail["to"] == ["ops@example.com", "dba@example.com"]
    assert mail["from"] == "bench@example.com"
    assert mail["message"]["Subject"] == "[Benchboard] confirmed: tps -20.0% on threads=4 (nightly)"
    assert f"from run #{alert.start_run_id}" in mail["message"].get_payload()


def test_a_failing_receiver_is_retried_with_backoff(team, alert, webhook_receiver, local_hooks):
    hook = webhook_receiver(failures=2)
    notifier_for(team, url=hook.url)
    (delivery,) = notify.queue(alert, "new")
    assert deliver_notification.apply(args=[delivery.pk]).get() == AlertDelivery.SENT
    assert len(hook.requests) == 3
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.error) == (AlertDelivery.SENT, 3, "")


def test_a_receiver_that_keeps_failing_ends_failed(
    team, alert, webhook_receiver, local_hooks, settings
):
    settings.BENCHBOARD_NOTIFY_RETRIES = 2
    hook = webhook_receiver(failures=100)
    notifier_for(team, url=hook.url)
    (delivery,) = notify.queue(alert, "new")
    assert deliver_notification.apply(args=[delivery.pk]).get() == "failed"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (AlertDelivery.FAILED, 3)
    assert "HTTP 500" in delivery.error and len(hook.requests) == 3


def test_private_addresses_are_refused_unless_allowed(team, alert, webhook_receiver):
    hook = webhook_receiver()
    notifier_for(team, url=hook.url)
    (delivery,) = notify.queue(alert, "new")
    assert notify.deliver(delivery.pk) == AlertDelivery.FAILED  # not retried
    delivery.refresh_from_db()
    assert "not a public address" in delivery.error and hook.requests == []


def test_improvements_are_not_sent_by_default(team, alert):
    notifier_for(team, url="https://hooks.example.com/x")
    Alert.objects.filter(pk=alert.pk).update(bad=False)
    alert.refresh_from_db()
    assert notify.queue(alert, "new") == []
    Notifier.objects.filter(team=team).update(only_bad=False)
    assert len(notify.queue(alert, "new")) == 1


def test_settings_page_is_for_team_admins(team_admin_client, team):
    url = reverse("notification_settings")
    response = team_admin_client.post(
        url,
        {
            "webhook_url": "https://hooks.example.com/bench",
            "secret": SECRET,
            "emails": "ops@example.com; dba@example.com",
            "only_bad": "on",
        },
    )
    assert response.status_code == 302
    notifier = Notifier.objects.get(team=team)
    assert notifier.recipients == ["ops@example.com", "dba@example.com"]
    assert crypto.decrypt(notifier.webhook_secret) == SECRET
    page = team_admin_client.get(url).content.decode()
    assert "hooks.example.com/bench" in page and SECRET not in page
    assert notifier.webhook_secret not in page
    # saving without a secret keeps it
    team_admin_client.post(
        url, {"webhook_url": "https://hooks.example.com/b2", "emails": "", "only_bad": ""}
    )
    notifier.refresh_from_db()
    assert crypto.decrypt(notifier.webhook_secret) == SECRET and not notifier.only_bad
    response = team_admin_client.post(url, {"webhook_url": "ftp://x", "emails": "nope"})
    assert response.status_code == 200 and b"valid email" in response.content


def test_members_cannot_change_notifications(member_client):
    assert member_client.get(reverse("notification_settings")).status_code == 403
    assert (
        member_client.post(
            reverse("notification_settings"), {"webhook_url": "https://evil.example.com"}
        ).status_code
        == 403
    )
    assert not Notifier.objects.exists()
