"""Alert notifications (docs/history.md): per team, a signed JSON webhook and
email, for new, confirmed and resolved alerts.

`queue` records one AlertDelivery per event and channel (the unique
constraint makes a repeated event a no-op) and sends the Celery task
`benchapp.deliver_notification` after commit; `deliver` does one attempt and
raises DeliveryError on failure, so the task retries with backoff. Nothing
here runs inside a run's lifecycle: a dead receiver never delays a run.

Webhook: POST of the JSON payload, header X-Benchboard-Signature-256 =
"sha256=" + hex HMAC-SHA256 of the raw body with the team's secret (as GitHub
does), X-Benchboard-Event and X-Benchboard-Delivery. Addresses that are not
public (loopback, private, link-local) are refused unless
BENCHBOARD_WEBHOOK_ALLOW_PRIVATE is set.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import math
import socket
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from benchapp import crypto
from benchapp.dispatch import DELIVER_NOTIFICATION, send
from benchapp.models import Alert, AlertDelivery, Notifier

EVENTS = ("new", "confirmed", "resolved")
TIMEOUT = 10


class DeliveryError(Exception):
    """A delivery attempt failed; worth retrying."""


class Refused(Exception):
    """A delivery that can never succeed as configured (not retried)."""


def queue(alert: Alert, event: str) -> list[AlertDelivery]:
    """Record and send the deliveries of `event` for `alert` on the team's channels."""
    assert event in EVENTS, event
    notifier = Notifier.objects.filter(team_id=alert.team_id).first()
    # "Only changes for the worse": an improvement or a change of a metric
    # with no direction (alert.bad None) is not sent.
    if notifier is None or (notifier.only_bad and alert.bad is not True):
        return []
    if alert.lead_id is not None:
        return []  # one change, one notification: its lead's names every metric

    channels = ([AlertDelivery.WEBHOOK] if notifier.webhook_url else []) + (
        [AlertDelivery.EMAIL] if notifier.recipients else []
    )
    queued = []
    for channel in channels:
        delivery, new = AlertDelivery.objects.get_or_create(
            alert=alert, event=event, channel=channel
        )
        if new:
            send(DELIVER_NOTIFICATION, delivery.pk)
            queued.append(delivery)
    return queued


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def _number(value: float) -> float | None:
    return value if math.isfinite(value) else None


def payload(alert: Alert, event: str) -> dict:
    """What a receiver gets: the event and the alert, no secrets."""
    return {
        "event": event,
        "team": alert.team.name,
        "alert": {
            "id": alert.pk,
            "status": alert.status,
            "bad": alert.bad,
            "change": alert.change,
            "plan_edit": alert.plan_edit,
            "what_else_changed": [c["text"] for c in alert.explanation or []],
            "also_moved": [
                {
                    "id": f.pk,
                    "cell_key": f.cell_key,
                    "group": f.group,
                    "metric": f.metric,
                    "change": f.change,
                    "magnitude": _number(f.magnitude),
                }
                for f in alert.followers.order_by("metric", "cell_key")
            ],
            "plan": {"id": alert.plan_id, "name": alert.plan.name},
            "cell_key": alert.cell_key,
            "group": alert.group,
            "metric": alert.metric,
            "magnitude": _number(alert.magnitude),
            "pvalue": alert.pvalue,
            "before": {
                "mean": _number(alert.before_mean),
                "low": _number(alert.before_low),
                "high": _number(alert.before_high),
            },
            "after": {
                "mean": _number(alert.after_mean),
                "low": _number(alert.after_low),
                "high": _number(alert.after_high),
            },
            "start_run": alert.start_run_id,
            "confirm_run": alert.confirm_run_id,
            "confirm_note": alert.confirm_note,
            "resolved_run": alert.resolved_run_id,
        },
        "sent_at": timezone.now().isoformat(),
    }


def subject(alert: Alert, event: str) -> str:
    change = f"{alert.magnitude:+.1%}" if math.isfinite(alert.magnitude) else "changed"
    return (
        f"[Benchboard] {event}: {alert.metric} {change} on {alert.series_name} ({alert.plan.name})"
    )


def deliver(delivery_id: int, final: bool = False) -> str:
    """One attempt at a delivery; its status. DeliveryError when it failed
    and may be retried (`final`: this was the last attempt)."""
    delivery = (
        AlertDelivery.objects.select_related("alert__plan", "alert__team", "alert__team__notifier")
        .filter(pk=delivery_id)
        .first()
    )
    if delivery is None or delivery.status == AlertDelivery.SENT:
        return delivery.status if delivery else "gone"
    AlertDelivery.objects.filter(pk=delivery.pk).update(attempts=F("attempts") + 1)
    notifier = getattr(delivery.alert.team, "notifier", None)
    try:
        if notifier is None:
            raise Refused("the team has no notification settings any more")
        if delivery.channel == AlertDelivery.WEBHOOK:
            _post(notifier, delivery)
        else:
            _mail(notifier, delivery)
    except Refused as exc:
        _record(delivery, AlertDelivery.FAILED, str(exc))
        return AlertDelivery.FAILED
    except Exception as exc:  # any failure of the receiver's side is retried
        _record(
            delivery,
            AlertDelivery.FAILED if final else AlertDelivery.PENDING,
            f"{type(exc).__name__}: {exc}"[:500],
        )
        raise DeliveryError(str(exc)) from exc
    _record(delivery, AlertDelivery.SENT, "")
    return AlertDelivery.SENT


def _record(delivery: AlertDelivery, status: str, error: str) -> None:
    AlertDelivery.objects.filter(pk=delivery.pk).update(
        status=status, error=error, sent_at=timezone.now() if status == AlertDelivery.SENT else None
    )


def check_url(url: str) -> None:
    """Refuse (Refused) a webhook URL that is not http(s) or points at a
    non-public address (unless BENCHBOARD_WEBHOOK_ALLOW_PRIVATE)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise Refused("the webhook URL must be http(s)://host/...")
    if settings.BENCHBOARD_WEBHOOK_ALLOW_PRIVATE:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 443, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise DeliveryError(f"cannot resolve {parts.hostname}: {exc}") from exc
    for info in infos:
        if not ipaddress.ip_address(info[4][0]).is_global:
            raise Refused(f"{parts.hostname} is not a public address")


def _post(notifier: Notifier, delivery: AlertDelivery) -> None:
    check_url(notifier.webhook_url)
    body = json.dumps(payload(delivery.alert, delivery.event), sort_keys=True).encode()
    secret = crypto.decrypt(notifier.webhook_secret) if notifier.webhook_secret else ""
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "Benchboard",
        "X-Benchboard-Event": delivery.event,
        "X-Benchboard-Delivery": str(delivery.pk),
    }
    if secret:
        headers["X-Benchboard-Signature-256"] = sign(secret, body)
    response = requests.post(
        notifier.webhook_url, data=body, headers=headers, timeout=TIMEOUT, allow_redirects=False
    )
    if response.status_code >= 300:
        raise DeliveryError(f"HTTP {response.status_code}")


def _mail(notifier: Notifier, delivery: AlertDelivery) -> None:
    alert, event = delivery.alert, delivery.event
    data = payload(alert, event)["alert"]
    lines = [
        f"{event.capitalize()} alert of plan {alert.plan.name} ({alert.team.name})",
        "",
        f"Series: {alert.series_name}, metric {alert.metric}",
        f"Change: {alert.change}, {alert.magnitude:+.1%} from run #{alert.start_run_id}",
        f"Before: {data['before']['mean']}, after: {data['after']['mean']}",
        f"Status: {alert.get_status_display()}",
    ]
    if alert.confirm_note:
        lines.append(f"Confirmation: {alert.confirm_note}")
    if alert.plan_edit:
        lines.append(f"Note: the change straddles a {alert.plan_edit}")
    also = list(alert.followers.order_by("metric", "cell_key"))
    if also:
        lines += ["", f"Also moved at this change ({len(also)}):"]
        lines += [f"  - {f.series_name} {f.metric} {f.magnitude:+.1%}" for f in also]
    if alert.explanation:
        lines += ["", "What else changed (nearest the change first):"]
        lines += [f"  - {c['text']}" for c in alert.explanation]
    send_mail(
        subject(alert, event),
        "\n".join(lines) + "\n",
        settings.DEFAULT_FROM_EMAIL,
        notifier.recipients,
        fail_silently=False,
    )


@transaction.atomic
def save_settings(
    notifier: Notifier,
    *,
    webhook_url: str,
    emails: str,
    only_bad: bool,
    secret: str | None = None,
    clear_secret: bool = False,
) -> Notifier:
    """Store a team's notification settings; the secret is write-only (encrypted)."""
    notifier.webhook_url, notifier.emails, notifier.only_bad = webhook_url, emails, only_bad
    if secret:
        notifier.webhook_secret = crypto.encrypt(secret)
    elif clear_secret:
        notifier.webhook_secret = ""
    notifier.save()
    return notifier
