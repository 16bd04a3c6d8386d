"""The cloud reaper (beat's `benchapp.reap_cloud`): runs lost while
provisioning, finished runs that still hold resources, and expired tagged
resources in every account and region used recently."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from benchapp.cloud.cloudaccounts import stored_credential
from benchapp.cloud.provisioning import LIVE_STATES, sweep_account, teardown_rows, teardown_run
from benchapp.models import Cell, CloudResource, Run
from runners.providers import get_provider

log = logging.getLogger(__name__)


def reap_cloud() -> dict:
    """The periodic clean-up (beat): returns counts for logs and tests.

    1. Runs PROVISIONING for longer than BENCHBOARD_PROVISION_TIMEOUT lost
       their worker: they are failed.
    2. Runs that are over but still hold resources (failed, lost, cancelled
       after provisioning, or whose teardown task gave up) are torn down.
    3. In every account and region with live or recent rows, runners'
       reaper deletes expired tagged resources.
    """
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.BENCHBOARD_PROVISION_TIMEOUT)
    lost = list(
        Run.objects.filter(status=Run.PROVISIONING, started_at__lt=cutoff).values_list(
            "pk", flat=True
        )
    )
    for run_id in lost:
        message = (
            "provisioning failed: no progress for "
            f"{settings.BENCHBOARD_PROVISION_TIMEOUT} s (worker lost?)"
        )
        with transaction.atomic():
            Run.objects.filter(pk=run_id, status=Run.PROVISIONING).update(
                status=Run.FAILED, finished_at=now, error=message
            )
            Cell.objects.filter(run_id=run_id, status=Cell.QUEUED).update(
                status=Cell.FAILED, finished_at=now, error=message
            )
    leftover = CloudResource.objects.exclude(state="deleted").exclude(run__status__in=Run.ACTIVE)
    torn = errors = 0
    for run_id in set(leftover.values_list("run_id", flat=True)):
        try:
            if run_id is None:
                teardown_rows(list(leftover.filter(run__isnull=True)))
            else:
                teardown_run(run_id)
            torn += 1
        except Exception:
            errors += 1
            log.warning("reap_cloud: teardown of run %s failed", run_id, exc_info=True)
    reaped = _reap_expired(now)
    return {"lost_runs": len(lost), "torn_down": torn, "errors": errors, "reaped": reaped}


def _reap_expired(now) -> int:
    """Expired tagged resources in each account/region used within the last day."""
    recent = CloudResource.objects.exclude(state="deleted") | CloudResource.objects.filter(
        deleted_at__gt=now - timedelta(days=1)
    )
    accounts = {
        (row.team_id, row.provider, stored_credential(row.handle), row.region)
        for row in recent.only("team_id", "provider", "handle", "region")
    }
    seen, reaped = set(), 0
    for team_id, provider, credential, region in accounts:
        group = get_provider(provider).SWEEP_GROUP
        key = (team_id if credential else None, group, credential, region)
        if not group or key in seen:
            continue
        seen.add(key)
        try:
            found = sweep_account(team_id, provider, credential, region, set())
        except Exception:
            log.warning("reap_cloud: sweep of %s failed", region, exc_info=True)
            continue
        reaped += len(found)
        for item in found:
            CloudResource.objects.filter(kind=item.kind, state__in=LIVE_STATES).filter(
                Q(cloud_id=item.id) | Q(token=item.id)
            ).update(state="deleted", deleted_at=now)
    return reaped
