"""The cloud's own monitoring of managed targets, added to each cell's
telemetry after the run (for RDS: credits, CPU, IOPS, queue, memory;
runners.providers.Provider.metrics says what each provider reads, and
MONITORING_SOURCE the source its series are stored under):
the targets the run provisioned (collect) and the targets that name an
existing cloud resource, `cloud_instance` (collect_watched).

A managed database has no SSH to sample it from, so its provider's
monitoring is the only view of the target's machine. It is read once,
just before teardown: a cloud publishes its figures minutes late, so that
is the last moment they are complete for every cell and the instance still
exists. Telemetry is context: a failure is logged, never the teardown's.
"""

from __future__ import annotations

import logging

from django.db import transaction

from benchapp.models import Artifact, Cell, CellSeries, CloudResource, Run
from benchapp.store import measurestore, seriesstore
from benchapp.store.measurestore import Value
from runners import cellwatch, telemetry
from runners.errors import ValidationError
from runners.providers import Handle, get_provider
from runners.providers.slots import variant_of

log = logging.getLogger(__name__)


def collect(run_id: int, kinds, context_of) -> int:
    """Read the monitoring of the run's live resources of kinds (those that
    carry a target's handle) over each of their cells' measured windows;
    context_of(row) gives the ProvisionContext. Returns the cells updated."""
    updated = 0
    rows = CloudResource.objects.filter(run_id=run_id, kind__in=kinds, state="live")
    for row in rows:
        slot = row.handle.get("slot") or {}
        for cell in _cells_of(run_id, slot, row.target_name):
            try:
                updated += _collect_cell(cell, row, context_of)
            except Exception as exc:  # noqa: BLE001 - context, never the teardown's failure
                log.warning("cell %s: cloud monitoring not read: %s", cell.pk, type(exc).__name__)
    return updated


def _cells_of(run_id: int, slot: dict, target_name: str) -> list[Cell]:
    """The finished cells measured on the slot's target (and variant)."""
    cells = Cell.objects.filter(run_id=run_id, target_name=slot.get("target", target_name))
    cells = cells.exclude(status__in=(Cell.QUEUED, Cell.RUNNING))
    variant = slot.get("variant")
    return [c for c in cells if not variant or variant_of(slot.get("spec", {}), c.axes) == variant]


def collect_watched(run_id: int, context_of) -> int:
    """Read the monitoring of the existing cloud resources the run's targets
    name (cloud_instance) over each of their cells' measured windows;
    context_of(run, provider, spec) gives the ProvisionContext (the team's
    credential the spec names). Returns the cells updated."""
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        return 0
    try:
        targets = run.spec.targets
    except ValidationError as exc:  # a plan this version cannot read watches nothing
        log.warning("run %s: plan not readable, no cloud monitoring read: %s", run_id, exc)
        return 0
    updated = 0
    for target in targets:
        spec = target.cloud_instance
        if not spec:
            continue
        try:
            provider = get_provider(spec["provider"])
            handle, context = provider.watched(spec), context_of(run, provider, spec)
        except Exception as exc:  # noqa: BLE001 - context, never the run's failure
            log.warning("target %s: cloud monitoring not read: %s", target.name, exc)
            continue
        cells = Cell.objects.filter(run_id=run_id, target_name=target.name)
        for cell in cells.exclude(status__in=(Cell.QUEUED, Cell.RUNNING)):
            try:
                updated += _read_cell(cell, provider, handle, context)
            except Exception as exc:  # noqa: BLE001
                log.warning("cell %s: cloud monitoring not read: %s", cell.pk, type(exc).__name__)
    return updated


def _collect_cell(cell: Cell, row: CloudResource, context_of) -> int:
    provider = get_provider(row.provider)
    return _read_cell(cell, provider, Handle.from_dict(row.handle), lambda: context_of(row))


def _read_cell(cell: Cell, provider, handle: Handle, context) -> int:
    """Add the monitoring of handle over the cell's measure to the cell (1),
    or nothing (0) when its telemetry is off, it has no measure or no data.
    context: a ProvisionContext, or a function making one."""
    if "telemetry" not in cell.facts:  # telemetry turned off for this cell
        return 0
    window = (
        Artifact.objects.filter(cell=cell, attempt=cell.attempt, phase="measure")
        .exclude(started_at=None)
        .exclude(finished_at=None)
        .values_list("started_at", "finished_at")
        .last()
    )
    if window is None:
        return 0
    series = provider.metrics(handle, *window, context() if callable(context) else context)
    if not series:
        return 0
    record(cell, series, provider)
    return 1


def record(cell: Cell, series: dict, provider) -> None:
    """Add the series (source: the provider's MONITORING_SOURCE) and its
    summary to the cell's telemetry and measurements
    (runners.telemetry.summary_metrics), and judge the cell again with it."""
    source = provider.MONITORING_SOURCE
    summary = telemetry.summarize(series)
    with transaction.atomic():
        current = Cell.objects.select_for_update().get(pk=cell.pk)
        attempt = current.attempt
        CellSeries.objects.filter(cell=current, attempt=attempt, source=source).delete()
        CellSeries.objects.bulk_create(seriesstore.rows(current, attempt, series, source=source))
        prefix = f"{telemetry.METRIC_PREFIX}{source}."
        kept = [
            v
            for v in measurestore.read(cells=[current.pk], all_attempts=True)
            if v.attempt == attempt and not v.metric.startswith(prefix)
        ]
        cloud = [
            Value(current.run_id, current.pk, attempt, 0, "", name, value, unit_of(name))
            for name, value in telemetry.summary_metrics({source: summary}).items()
        ]
        measurestore.write(current, attempt, kept + cloud)
        facts = dict(current.facts)
        summaries = {**facts.get("telemetry", {}), source: summary}
        facts["telemetry"] = summaries
        facts["verdict"] = cellwatch.judge(
            summaries,
            summary,
            client_throttled=facts.get("client_cpu_throttled"),
            measured_s=(facts.get("verdict") or {}).get("seconds"),
            monitoring=(source, provider.MONITORING_NAME),
        )
        Cell.objects.filter(pk=current.pk).update(facts=facts)


def unit_of(name: str) -> str:
    return telemetry.metric(name).unit
