"""Provisioning of run targets and client hosts (issue 6).

Orchestration and recording call the hooks below; static and local targets
need nothing, so each hook is a no-op for plans without `provision:` specs.

The lifecycle of a provisioned run:

- `check_budget` (in start_run, before the Run row exists) refuses a plan
  over the team's quota of live cloud resources or its per-run budget, so a
  refused plan makes no create call and no row.
- `provision_run` (task) claims the run (QUEUED -> PROVISIONING), brings up
  every slot (a target, one per distinct `${volumes}` value, and the client),
  then sets RUNNING and dispatches. A CloudResource row is written BEFORE
  each create call (the provider's on_create) and gets its cloud id after
  (on_created), so a worker killed between the two leaves a row to reap.
- `teardown_run` (task, retried; also called on failure and cancel) tears
  down each slot through its provider, then sweeps everything tagged with
  the run in each region it used (the provider's sweep), so resources
  whose handle was never stored are deleted too.
- `reap_cloud` (beat) fails runs stuck in PROVISIONING (their worker died),
  tears down finished runs that still hold resources (e.g. cancelled after
  provisioning) and deletes expired tagged resources per region.

connect_via in a provision spec points the tool at another address than the
one the cloud gives (a tunnel, a private address, local MariaDB in tests);
`{host: 127.0.0.1}` on an EC2 host or client means "this worker", so the
tool runs locally. Nothing ever connects to an address moto invents.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import defaultdict
from dataclasses import replace
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from benchapp.cloud import cloudtelemetry, pricing
from benchapp.cloud.cloudaccounts import (
    ambient_allowed,
    credential_named,
    provision_context,
    stored_credential,
)
from benchapp.dispatch import DISPATCH_RUN, TEARDOWN_RUN, send
from benchapp.models import Cell, CloudResource, Credential, Run, Team
from benchapp.plans.planning import CheckedPlan, PlanRefused
from runners.errors import RunnerError, ValidationError
from runners.plan import CellSpec, expand
from runners.plan import Plan as PlanSpec
from runners.plantargets import ClientSpec, SSHSpec
from runners.providers import (
    ProvisionContext,
    counted_kinds,
    get_provider,
    primary_kinds,
    slots,
    sweep,
)
from runners.providers.base import resource_name
from runners.providers.endpoints import on_worker, pick, ssh_of, target_spec
from runners.providers.slots import CLIENT, Slot, counted_resources, needs_provisioning, variant_of

log = logging.getLogger(__name__)

PRIMARY_KINDS = primary_kinds()  # rows that carry a slot's handle
COUNTED_KINDS = counted_kinds()  # what the quota counts
LIVE_STATES = ("creating", "live")


def planned_slots(plan: PlanSpec) -> list[Slot]:
    """Every slot the plan needs (runners.providers.slots), each in its provider's default region."""
    return slots.planned_slots(plan)


# ----------------------------------------------------------------- budget


def check_budget(team: Team, checked: CheckedPlan | PlanSpec) -> None:
    """Refuse (PlanRefused) a plan over the team's quota or per-run budget,
    before any create call. No-op for plans without provisioning. checked:
    planning.check's (its cells and cost are used, not worked out again), or
    a run's plan (a re-run of frozen cells)."""
    spec = checked.spec if isinstance(checked, CheckedPlan) else checked
    if not needs_provisioning(spec):
        return
    if not isinstance(checked, CheckedPlan):
        checked = CheckedPlan(spec, expand(spec))
    wanted = sum(counted_resources(slot) for slot in slots.planned_slots(spec, checked.cells))
    live = CloudResource.objects.filter(
        team=team, kind__in=COUNTED_KINDS, state__in=LIVE_STATES
    ).count()
    if live + wanted > team.max_cloud_resources:
        raise PlanRefused(
            "targets",
            (
                f"this run needs {wanted} cloud resources (instances, DB instances, volumes) and "
                f"the team has {live} live; the team's quota is {team.max_cloud_resources}. "
                "Remove targets or axis values, wait for active runs to finish, or ask an "
                "administrator to raise the quota."
            ),
        )
    estimate = pricing.plan_cost(checked)
    if estimate["total"] > float(team.max_run_cost):
        raise PlanRefused(
            "targets",
            (
                f"the estimated cost of this run is {estimate['total']:.2f} {estimate['currency']}, "
                f"over the team's per-run budget of {float(team.max_run_cost):.2f} "
                f"{estimate['currency']} "
                f"({estimate['hours']:g} h of {len(estimate['lines'])} priced items). "
                "Use smaller classes, fewer targets or axis values, or ask an administrator "
                "to raise the budget."
            ),
        )


# ------------------------------------------------------------ provisioning


def run_tag(run: Run) -> str:
    """The run's value for the `run` tag and resource names: unique across
    installations that share an account (ids alone would collide)."""
    return f"{run.pk}-{run.created_at:%y%m%d%H%M%S}"


def _safe_tag(text: str) -> str:
    return re.sub(r"[^\w .:/=+@-]", "_", text)[:200]


class _Recorder:
    """The provider callbacks of one slot: rows before/after create calls, secrets."""

    def __init__(self, run: Run, slot: Slot, expires_at):
        self.run, self.slot, self.expires_at = run, slot, expires_at

    def on_create(self, kind: str, token: str, tags: dict) -> None:
        if CloudResource.objects.filter(kind=kind, token=token).exists():
            return  # a retried provision, or the run's shared group / key pair

        spec = get_provider(self.slot.spec["provider"]).resource_spec(kind, self.slot.spec)
        CloudResource.objects.create(
            team_id=self.run.team_id,
            run=self.run,
            target_name=self.slot.target,
            provider=self.slot.spec["provider"],
            kind=kind,
            token=token,
            region=self.slot.region,
            state="creating",
            expires_at=self.expires_at,
            price_per_hour=pricing.hourly_price(kind, spec),
            handle={
                "spec": spec,
                "run_tag": tags.get("run", ""),
                "credential": credential_named(self.slot.spec),
            },
        )

    def on_created(self, kind: str, token: str, cloud_id: str) -> None:
        CloudResource.objects.filter(kind=kind, token=token, state__in=LIVE_STATES).update(
            cloud_id=cloud_id, state="live"
        )

    def secret_sink(self, name: str, value: str) -> None:
        cred = Credential.objects.filter(team_id=self.run.team_id, name=name).first() or Credential(
            team_id=self.run.team_id, name=name
        )
        cred.kind = (
            Credential.SSH_KEY if value.lstrip().startswith("-----BEGIN") else Credential.PASSWORD
        )
        cred.set_secret(value)
        cred.save()


class _CancelWatcher(threading.Thread):
    """Turns Run.cancel_requested into the providers' cancel event."""

    def __init__(self, run_id: int):
        super().__init__(daemon=True, name=f"provision-cancel-{run_id}")
        self.run_id = run_id
        self.event = threading.Event()
        self._stop_event = threading.Event()

    def run(self) -> None:
        try:
            interval = min(1.0, settings.BENCHBOARD_CLOUD_POLL_SECONDS)
            while not self._stop_event.wait(interval):
                if Run.objects.filter(pk=self.run_id, cancel_requested=True).exists():
                    self.event.set()
                    return
        finally:
            connection.close()

    def stop(self) -> None:
        self._stop_event.set()
        self.join(timeout=10)


def _expiry(plan: PlanSpec):
    """When the run's resources count as expired: twice the estimate, plus an hour."""
    return timezone.now() + timedelta(seconds=2 * pricing.run_seconds(plan) + 3600)


def provision_run(run_id: int) -> None:
    """Bring up the run's targets and client, then dispatch its cells.

    Claims the run (QUEUED -> PROVISIONING) so a redelivered message does
    nothing. On failure or cancel: the run is failed (or cancelled), its
    queued cells say why, and everything is torn down.
    """
    if not Run.objects.filter(pk=run_id, status=Run.QUEUED, cancel_requested=False).update(
        status=Run.PROVISIONING, started_at=timezone.now()
    ):
        return
    run = Run.objects.select_related("team", "created_by").get(pk=run_id)
    watcher = _CancelWatcher(run_id)
    watcher.start()
    try:
        plan = run.spec
        expires_at = _expiry(plan)
        for slot in planned_slots(plan):
            _provision_slot(run, slot, expires_at, watcher.event)
    except Exception as exc:  # noqa: BLE001 - every failure ends the same way
        watcher.stop()
        _provisioning_failed(run_id, exc)
        return
    watcher.stop()
    if not Run.objects.filter(pk=run_id, status=Run.PROVISIONING, cancel_requested=False).update(
        status=Run.RUNNING
    ):
        _provisioning_failed(run_id, RunnerError("cancelled while provisioning"))
        return
    send(DISPATCH_RUN, run_id)


def _provision_slot(run: Run, slot: Slot, expires_at, cancel: threading.Event) -> None:
    recorder = _Recorder(run, slot, expires_at)
    owner = run.created_by.get_username() if run.created_by else ""
    ctx = provision_context(
        run.team_id,
        run_tag(run),
        slot.region,
        slot.spec["provider"],
        credential_named(slot.spec),
        ambient=ambient_allowed(run),
        team=_safe_tag(run.team.name),
        owner=_safe_tag(owner),
        expires_at=expires_at,
        on_create=recorder.on_create,
        on_created=recorder.on_created,
        secret_sink=recorder.secret_sink,
        cancel=cancel,
    )
    ctx.check_cancel("provisioning")
    handle = get_provider(slot.spec["provider"]).provision(slot.spec, ctx)
    stored = {
        **handle.to_dict(),
        "slot": slot.to_dict(),
        "spec": slot.spec,
        "run_tag": run_tag(run),
        "credential": credential_named(slot.spec),
    }
    stored["slot"]["storage"] = _prepare_storage(run, slot, handle)
    primary = handle.ids.get(get_provider(slot.spec["provider"]).PRIMARY_ID)
    CloudResource.objects.filter(run=run, kind__in=PRIMARY_KINDS).filter(cloud_id=primary).update(
        handle=stored
    )


def _prepare_storage(run: Run, slot: Slot, handle) -> str:
    """The slot's provider prepares its storage (EC2: RAID0 over SSH); what was
    done is returned for the record, a note (e.g. skipped) goes to the run."""

    def secret(name: str) -> str:
        return Credential.objects.get(team_id=run.team_id, name=name).secret()

    try:
        done, note = get_provider(slot.spec["provider"]).prepare_storage(handle, slot.spec, secret)
    except RunnerError as exc:
        raise RunnerError(f"{slot.label}: {exc.message}", permanent=exc.permanent) from None
    if note:
        _append_note(run.pk, f"{slot.label}: {note}")
    return done


def _append_note(run_id: int, note: str) -> None:
    run = Run.objects.get(pk=run_id)
    run.notes = (run.notes + "\n" + note).strip()
    run.save(update_fields=["notes"])


def _error_text(exc: BaseException) -> str:
    if isinstance(exc, (RunnerError, ValidationError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _provisioning_failed(run_id: int, exc: BaseException) -> None:
    """Fail (or cancel) the run and its queued cells, then tear down."""
    with transaction.atomic():  # the run and its cells change together
        now = timezone.now()
        if Run.objects.filter(pk=run_id, cancel_requested=True).exists():
            Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).update(
                status=Run.CANCELLED, finished_at=now
            )
            Cell.objects.filter(run_id=run_id, status=Cell.QUEUED).update(
                status=Cell.CANCELLED, finished_at=now, error="cancelled during provisioning"
            )
        else:
            message = f"provisioning failed: {_error_text(exc)}"
            log.warning("run %s: %s", run_id, message)
            Run.objects.filter(pk=run_id, status__in=Run.ACTIVE).update(
                status=Run.FAILED, finished_at=now, error=message
            )
            Cell.objects.filter(run_id=run_id, status=Cell.QUEUED).update(
                status=Cell.FAILED, finished_at=now, error=message
            )
    _teardown_or_enqueue(run_id)


def _teardown_or_enqueue(run_id: int) -> None:
    """Tear down now; if that fails, leave it to the retried teardown task."""
    try:
        teardown_run(run_id)
    except Exception:
        log.warning("run %s: teardown failed; retrying as a task", run_id, exc_info=True)
        send(TEARDOWN_RUN, run_id)


# ---------------------------------------------------------------- runtime


def _live_handles(run: Run) -> list[dict]:
    rows = CloudResource.objects.filter(run=run, kind__in=PRIMARY_KINDS, state="live")
    return [row.handle for row in rows if row.handle.get("provider")]


def runtime_overrides(
    run: Run, plan: PlanSpec, cell: CellSpec | None = None
) -> tuple[dict, SSHSpec | None]:
    """(targets name -> TargetSpec, client SSHSpec | None) from what provisioning made.

    plan: the run's plan, or a cell's frozen one (its targets suffice). cell
    picks the variant of a target provisioned once per `${volumes}` value
    (S3); without it the first variant is used.
    """
    if not needs_provisioning(plan):
        return {}, None
    handles = _live_handles(run)
    targets = {}
    for target in plan.targets:
        if not target.provision:
            continue
        variant = variant_of(target.provision, cell.axes) if cell is not None else None
        handle = pick(handles, target.name, variant)
        if handle is not None:
            targets[target.name] = target_spec(target, handle)
    client = pick(handles, CLIENT, None)
    return targets, (ssh_of(client) if client else None)


def runtime_plan(run: Run, plan: PlanSpec) -> PlanSpec:
    """The plan a cell runs with; a provisioned client reached as this worker runs locally."""
    if plan.provisioned_client is not None:
        client = pick(_live_handles(run), CLIENT, None)
        if client is not None and on_worker(client):
            local = tuple(ClientSpec() if c.provision else c for c in plan.clients)
            plan = replace(plan, client=local[0], clients=local)
    return plan


# --------------------------------------------------------------- teardown


def teardown_run(run_id: int) -> int:
    """Tear down every live cloud resource of the run; return how many rows
    were still live. Idempotent; raises (so the task retries) while some
    resource of the run may remain."""
    rows = CloudResource.objects.filter(run_id=run_id).exclude(state="deleted")
    count = rows.count()
    # Every run ends here: its targets naming an existing cloud resource
    # (cloud_instance) get that resource's monitoring, as provisioned ones do.
    cloudtelemetry.collect_watched(run_id, _watched_context)
    if count:
        cloudtelemetry.collect(run_id, PRIMARY_KINDS, _reading_context)
    if count:
        teardown_rows(list(rows))
    run = Run.objects.filter(pk=run_id).first()
    if run is not None:
        _forget_secrets(run)
    return count


def _row_context(row: CloudResource) -> ProvisionContext:
    """The context of deleting a row's resource: the credential it was made
    with; the worker's own identity deletes what that identity made (rows
    without a credential: an allowed operator plan's, or older ones)."""
    return provision_context(
        row.team_id,
        row.handle.get("run_tag", ""),
        row.region,
        row.provider,
        stored_credential(row.handle),
        ambient=True,
    )


def _reading_context(row: CloudResource) -> ProvisionContext:
    """The context of reading a row's monitoring for its run: the credential
    it was made with; the worker's own identity only for an allowed run."""
    return provision_context(
        row.team_id,
        row.handle.get("run_tag", ""),
        row.region,
        row.provider,
        stored_credential(row.handle),
        ambient=ambient_allowed(row.run),
    )


def _watched_context(run: Run, provider, spec: dict) -> ProvisionContext:
    """The context of reading a target's cloud_instance: the team's
    credential it names (the provider's credential field) and its region;
    the worker's own identity only for an allowed run."""
    credential = spec.get(provider.CREDENTIAL_FIELD) if provider.CREDENTIAL_FIELD else None
    region = spec.get("region") or provider.default_region()
    return provision_context(
        run.team_id, "watch", region, provider.name, credential, ambient=ambient_allowed(run)
    )


def teardown_rows(rows: list[CloudResource]) -> None:
    """Provider teardown of each slot, then a sweep by run tag per account and region.

    The sweep deletes what has no stored handle (a worker killed between a
    create call and its response) and is what marks the rows deleted.
    """
    from runners.providers import Handle

    for row in rows:
        if row.kind not in PRIMARY_KINDS or not row.handle.get("provider"):
            continue
        try:
            get_provider(row.provider).teardown(Handle.from_dict(row.handle), _row_context(row))
        except Exception as exc:  # noqa: BLE001 - the sweep below tries again
            log.warning("teardown of %s %s failed: %s", row.kind, row.cloud_id, _error_text(exc))
    groups = defaultdict(list)
    for row in rows:
        groups[row.team_id, row.provider, stored_credential(row.handle), row.region].append(row)
    for (team_id, provider, credential, region), members in groups.items():
        tags = {row.handle.get("run_tag") for row in members} - {"", None}
        sweep_account(team_id, provider, credential, region, tags)
        CloudResource.objects.filter(
            pk__in=[r.pk for r in members], deleted_at__isnull=True
        ).update(state="deleted", deleted_at=timezone.now())
        CloudResource.objects.filter(pk__in=[r.pk for r in members]).update(state="deleted")


def sweep_account(
    team_id: int, provider: str, credential: str | None, region: str, tags: set[str]
) -> list:
    """The sweep of provider's group (the reaper) in one account and region for
    these run tags (and expired ones); nothing for providers without a sweep."""
    group = get_provider(provider).SWEEP_GROUP
    if not group:
        return []
    # Deleting only, and only what is tagged as the app's: without a credential,
    # the worker's own identity sweeps what it made itself.
    ctx = provision_context(team_id, "reaper", region, provider, credential, ambient=True)
    return sweep(ctx, tags, group)


def _forget_secrets(run: Run) -> None:
    """Generated master passwords and private keys die with their resources."""
    if not CloudResource.objects.filter(run=run).exclude(state="deleted").exists():
        prefix = resource_name(run_tag(run)) + "-"
        Credential.objects.filter(team_id=run.team_id, name__startswith=prefix).delete()
