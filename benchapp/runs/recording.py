"""Between the database and runners: build a cell's context from its frozen
spec (Cell.spec) and the run's provisioned endpoints, run it, and record the outcome exactly once per attempt.

Recording replaces the attempt's own rows inside one transaction, so a
redelivered or retried cell never duplicates a measurement, and a crash
halfway leaves nothing half-written.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import UTC, datetime
from functools import partial

from django.conf import settings
from django.db import transaction

from benchapp.accounts import credbinding, targetguard
from benchapp.cloud import provisioning
from benchapp.models import Artifact, Cell, CellProfile, CellSeries, Credential, Run
from benchapp.plans.planning import sandbox_limits
from benchapp.store import artifactstore, envstore, frozenparts, measurestore, seriesstore
from benchapp.store.measurestore import Value
from runners import telemetry
from runners.cell import run_cell
from runners.context import CellContext, Permissions
from runners.endpoint import same_target
from runners.errors import RunnerError
from runners.frozen import thaw
from runners.plan import CellSpec, expand
from runners.plan import Plan as PlanSpec
from runners.plantargets import read_target
from runners.providers.base import resource_name
from runners.results import Result

MASK = "****"


class SecretBook:
    """Resolves a team's credentials by name and remembers every secret it
    handed out, so anything written to the database can be masked again
    (defence in depth: runners already masks what it knows)."""

    def __init__(self, team_id: int):
        self.team_id = team_id
        self.seen: set[str] = set()

    def __call__(self, name: str) -> str:
        cred = Credential.objects.filter(team_id=self.team_id, name=name).first()
        if cred is None:
            raise RunnerError(f"credential {name!r} does not exist in this team", permanent=True)
        secret = cred.secret()
        self.seen.add(secret)
        return secret

    def check_use(
        self,
        name: str,
        host: str | None,
        port: int | None,
        client: str = credbinding.WORKER,
        generated: str = "",
    ) -> None:
        """RunnerError (permanent) unless the stored credential may be sent to
        host:port by the client machine `client` (runners.endpoint.machine).

        The worker's own check of the credential binding (benchapp.accounts.credbinding,
        the same rule as at save), made from the frozen cell's address right
        before each client connects, whatever the plan's validation said.
        generated: the name prefix of the secrets provisioning made for this
        run (bound to what it made).
        """
        cred = Credential.objects.filter(team_id=self.team_id, name=name).first()
        if cred is None:
            raise RunnerError(f"credential {name!r} does not exist in this team", permanent=True)
        if generated and name.startswith(generated):
            return
        endpoint = credbinding.key(host, port)
        if cred.kind in Credential.ACCOUNT_KINDS or not credbinding.is_bound(
            cred, endpoint, client
        ):
            raise RunnerError(
                f"{credbinding.refusal(name, endpoint, client)}; refused before connecting: "
                f"{credbinding.reason(endpoint, client)}",
                permanent=True,
            )

    def mask(self, text: str) -> str:
        for secret in self.seen:
            if secret:
                text = text.replace(secret, MASK)
        return text


def frozen_cell(cell: Cell) -> tuple[PlanSpec, CellSpec]:
    """The (plan, cell) runners runs, from the spec start_run froze on the cell.

    Cells stored before cells were frozen are found by expanding the run's
    plan once (the old, slow way).
    """
    if cell.spec:
        return thaw(frozenparts.frozen(cell))
    plan = cell.run.spec
    for spec in expand(plan):
        if spec.key == cell.key and spec.repeat == cell.repeat:
            return plan, spec
    raise RunnerError(f"cell {cell.key} #{cell.repeat} is not in the run's plan", permanent=True)


def cell_context(
    run: Run,
    plan: PlanSpec,
    spec: CellSpec,
    book: SecretBook,
    cancel_event: threading.Event | None = None,
) -> tuple[PlanSpec, CellContext]:
    """(the plan as it runs here, a CellContext) for a stored cell of run: its
    provisioned endpoints, the team's secrets and what the run may do."""
    plan = provisioning.runtime_plan(run, plan)
    targets, client_ssh = provisioning.runtime_overrides(run, plan, spec)
    ctx = CellContext(
        plan,
        resolve_secret=book,
        cancel_event=cancel_event,
        targets=targets,
        client_ssh=client_ssh,
        trusted=run.origin == "cli",
        permissions=_permissions(run, plan),
        sandbox_user=settings.BENCHBOARD_SANDBOX_USER,
        unsafe_local=settings.BENCHBOARD_UNSAFE_LOCAL_EXECUTION,
        profile_local=settings.BENCHBOARD_PROFILE_LOCAL,
        guard=targetguard.guard(),
        limits=sandbox_limits(),
        check_use=partial(book.check_use, generated=_generated_prefix(run)),
    )
    ctx.prepared = set(run.prepared_targets)
    ctx.host_facts, ctx.db_facts, ctx.versions = run_facts(run.pk)
    if plan.prepare.snapshot_datadir:  # the snapshot's checksums, from the cell that took it
        taken = run.cells.filter(facts__has_key="data_checksums").order_by("index")
        for target, facts in taken.values_list("target_name", "facts"):
            ctx.checksums.setdefault(target, facts["data_checksums"])
    return plan, ctx


def _generated_prefix(run: Run) -> str:
    """The names of the secrets provisioning generates for run begin with this."""
    return resource_name(provisioning.run_tag(run)) + "-"


def run_cell_for(cell: Cell, *, cancel_event: threading.Event, on_phase, on_output):
    """Run one stored cell through runners; return (CellOutcome, SecretBook)."""
    run = cell.run
    plan, spec = frozen_cell(cell)
    book = SecretBook(run.team_id)
    plan, ctx = cell_context(run, plan, spec, book, cancel_event)
    done = threading.Event()
    watcher = threading.Thread(target=_forward_cancel, args=(ctx, cancel_event, done), daemon=True)
    watcher.start()
    try:
        outcome = run_cell(
            plan,
            spec,
            ctx,
            on_phase=on_phase,
            on_output=lambda phase, stream, chunk: on_output(phase, stream, book.mask(chunk)),
        )
        if ctx.prepared != set(run.prepared_targets):
            _add_prepared(run.pk, ctx.prepared)
    finally:
        done.set()
        cancel_event.set()  # wakes the watcher, which sees `done` and leaves
        ctx.close()
    outcome.secret_book = book
    return outcome


# Facts this worker process already read, per run (host facts, db facts, tool
# versions): taken once per host per run, not once per cell. Recent runs only.
_RUN_FACTS: OrderedDict[int, tuple[dict, dict, dict]] = OrderedDict()
RUN_FACTS_KEPT = 16


def run_facts(run_id: int) -> tuple[dict, dict, dict]:
    """(host_facts, db_facts, versions) dicts of a run, shared by its cells in this process."""
    if run_id in _RUN_FACTS:
        _RUN_FACTS.move_to_end(run_id)
    else:
        _RUN_FACTS[run_id] = ({}, {}, {})
        while len(_RUN_FACTS) > RUN_FACTS_KEPT:
            _RUN_FACTS.popitem(last=False)
    return _RUN_FACTS[run_id]


def _permissions(run: Run, plan) -> dict[str, Permissions]:
    """What the team's stored targets allow, for plan targets that are those
    targets (runners.endpoint.same_target, as at save): a plan cannot borrow
    a name's grants."""
    from benchapp.plans.planning import target_document

    docs = {t.name: t for t in plan.targets}
    grants = {}
    for stored in run.team.targets.filter(name__in=docs):
        same = read_target(target_document(stored), "target", run.tool)
        if same_target(docs[stored.name], same):
            grants[stored.name] = Permissions(stored.allow_custom_scripts, tuple(stored.data_dirs))
    return grants


def _forward_cancel(ctx: CellContext, event: threading.Event, done: threading.Event) -> None:
    """Turn the heartbeat's cancel flag into a kill of the cell's processes."""
    event.wait()
    if not done.is_set():
        ctx.cancel()


def _add_prepared(run_id: int, targets: set[str]) -> None:
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        run.prepared_targets = sorted(set(run.prepared_targets) | targets)
        run.save(update_fields=["prepared_targets"])


def _when(epoch: float | None):
    return datetime.fromtimestamp(epoch, tz=UTC) if epoch else None


def group_label(labels: dict) -> str:
    """ "engine=innodb,concurrency=4" — the stored form of a group's labels."""
    return ",".join(f"{k}={labels[k]}" for k in labels)


def measurement_rows(cell: Cell, attempt: int, result: Result | None, prefix: str = ""):
    """Measurements (measurestore.Value) of one Result: whole-output metrics
    in group "", each block of a multi-block output in its own group."""
    if result is None:
        return []
    rows = {}
    blocks = [("", result.metrics)]
    if len(result.groups) > 1:
        blocks += [
            (group_label(g.get("labels") or {}), g.get("metrics") or {}) for g in result.groups
        ]
    for group, metrics in blocks:
        for metric, value in metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                name = prefix + metric
                rows[(group, name)] = Value(
                    run_id=cell.run_id,
                    cell_id=cell.pk,
                    attempt=attempt,
                    iteration=0,
                    group=(prefix.rstrip("_") + ":" + group) if prefix and group else group,
                    metric=name,
                    value=float(value),
                )
    return list(rows.values())


def store_measurements(cell: Cell, attempt: int, rows: list[Value]) -> None:
    """Replace one attempt's stored measurements by rows (measurement_rows'),
    inside the caller's transaction."""
    measurestore.write(cell, attempt, rows)


def telemetry_rows(cell: Cell, attempt: int, facts: dict) -> list[Value]:
    """Measurements of a cell's telemetry summaries (facts["telemetry"], by
    runners.cellwatch), named "telemetry.<source>.<figure>.<stat>" so tables,
    charts, comparisons and trends read them like the tool's own metrics."""
    return [
        Value(cell.run_id, cell.pk, attempt, 0, "", name, value, telemetry.metric(name).unit)
        for name, value in telemetry.summary_metrics(facts.get("telemetry") or {}).items()
    ]


def series_rows(cell: Cell, attempt: int, result: Result | None) -> list[CellSeries]:
    """CellSeries rows of a Result's columnar series (runners.results.Series),
    one per metric (benchapp.store.seriesstore)."""
    return seriesstore.rows(cell, attempt, result.series if result else None)


def store_profiles(cell: Cell, attempt: int, profiles: list, warnings: list[str]) -> None:
    """One CellProfile per profiled process, its folded stacks in the
    artifact store; a store that does not take one is a warning on the cell."""
    from runners.profiles import folded_text

    rows = []
    for profile in profiles:
        try:
            rows.append(
                artifactstore.save_profile(cell, attempt, profile, folded_text(profile.stacks))
            )
        except artifactstore.StoreError as exc:
            warnings.append(f"profile {profile.role} not kept: {exc}")
    CellProfile.objects.bulk_create(rows)


def error_kind(outcome) -> str:
    """ "transient", "permanent" or "" (no failure) — what Cell.error_kind shows."""
    if outcome.status != Cell.FAILED:
        return ""
    return "transient" if getattr(outcome, "transient", False) else "permanent"


def record_outcome(cell: Cell, outcome, *, requeue: bool = False) -> bool:
    """Store an attempt's measurements, series, artifacts and final state.

    requeue: the attempt failed transiently and will be retried: the cell
    goes back to QUEUED (its error says why) in the same transaction, so no
    dispatch ever sees it failed and ends the run.
    Returns False (and writes nothing) when the cell is no longer this
    attempt's: the reaper re-queued it after our lease ran out.
    """
    book = getattr(outcome, "secret_book", None)
    mask = book.mask if book else (lambda text: text)
    attempt = cell.attempt
    with transaction.atomic():
        current = Cell.objects.select_for_update().filter(pk=cell.pk).first()
        if (
            current is None
            or current.attempt != attempt
            or current.status not in (Cell.RUNNING, Cell.CANCELLED)
        ):
            return False
        for model in (CellSeries, Artifact, CellProfile):
            model.objects.filter(cell=cell, attempt=attempt).delete()
        store_measurements(
            cell,
            attempt,
            measurement_rows(cell, attempt, outcome.result)
            + measurement_rows(cell, attempt, outcome.stress_result, prefix="stress_")
            + telemetry_rows(cell, attempt, outcome.facts),
        )
        CellSeries.objects.bulk_create(
            series_rows(cell, attempt, outcome.result)
            + [
                row
                for source, series in (getattr(outcome, "telemetry", None) or {}).items()
                for row in seriesstore.rows(cell, attempt, series, source=source)
            ]
        )
        artifactstore.create_artifacts(
            [
                (
                    Artifact(
                        cell=cell,
                        attempt=attempt,
                        phase=p.phase,
                        command=mask(p.command),
                        exit_code=p.exit_code,
                        started_at=_when(p.started),
                        finished_at=_when(p.finished),
                    ),
                    {"stdout": mask(p.stdout), "stderr": mask(p.stderr)},
                )
                for p in outcome.phases
            ]
        )
        store_profiles(cell, attempt, getattr(outcome, "profiles", None) or [], outcome.warnings)
        status = Cell.CANCELLED if current.status == Cell.CANCELLED else outcome.status
        if requeue and status == Cell.FAILED:
            status = Cell.QUEUED
        facts = dict(outcome.facts)
        snapshot = facts.pop("environment", None)
        if snapshot:
            facts["environment_read_s"] = snapshot.get("read_seconds")
        if outcome.result is not None and outcome.result.errors:
            facts["tool_errors"] = [mask(e) for e in outcome.result.errors[:50]]
        if outcome.warnings:
            facts["warnings"] = [mask(w) for w in outcome.warnings]
        if outcome.result is not None and outcome.result.warnings:
            # What the parser could not read (runners.results.Result.warnings).
            facts["parser_warnings"] = [mask(w) for w in outcome.result.warnings]
        Cell.objects.filter(pk=cell.pk).update(
            status=status,
            error=mask(outcome.error or ("cancelled" if status == "cancelled" else "")),
            error_kind=error_kind(outcome) if status != Cell.CANCELLED else "",
            command=mask(outcome.command),
            tool_version=outcome.tool_version or "",
            facts=facts,
            environment_id=envstore.store(snapshot, mask if book else None),
            client_bound=bool(facts.get("client_bound")),
            finished_at=_when(outcome.finished),
            phase="",
            lease_expires_at=None,
        )
    return True
