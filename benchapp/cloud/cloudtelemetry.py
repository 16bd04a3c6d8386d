"""The cloud's own monitoring of provisioned targets, added to each cell's
telemetry after the run (CloudWatch for RDS: credits, CPU, IOPS, queue,
memory; runners.providers.Provider.metrics says what each provider reads).

A managed database has no SSH to sample it from, so its provider's
monitoring is the only view of the target's machine. It is read once,
just before teardown: a cloud publishes its figures minutes late, so that
is the last moment they are complete for every cell and the instance still
exists. Telemetry is context: a failure is logged, never the teardown's.
"""

from __future__ import annotations

import logging

from django.db import transaction

from benchapp.models import Artifact, Cell, CellSeries, CloudResource
from benchapp.store import measurestore, seriesstore
from benchapp.store.measurestore import Value
from runners import cellwatch, telemetry
from runners.providers import Handle, get_provider
from runners.providers.slots import variant_of

log = logging.getLogger(__name__)

SOURCE = "cloudwatch"


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


def _collect_cell(cell: Cell, row: CloudResource, context_of) -> int:
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
    provider = get_provider(row.provider)
    series = provider.metrics(Handle.from_dict(row.handle), *window, context_of(row))
    if not series:
        return 0
    record(cell, series)
    return 1


def record(cell: Cell, series: dict) -> None:
    """Add the series (source "cloudwatch") and its summary to the cell's
    telemetry and measurements (runners.telemetry.summary_metrics), and
    judge the cell again with it."""
    summary = telemetry.summarize(series)
    with transaction.atomic():
        current = Cell.objects.select_for_update().get(pk=cell.pk)
        attempt = current.attempt
        CellSeries.objects.filter(cell=current, attempt=attempt, source=SOURCE).delete()
        CellSeries.objects.bulk_create(seriesstore.rows(current, attempt, series, source=SOURCE))
        prefix = f"{telemetry.METRIC_PREFIX}{SOURCE}."
        kept = [
            v
            for v in measurestore.read(cells=[current.pk], all_attempts=True)
            if v.attempt == attempt and not v.metric.startswith(prefix)
        ]
        cloud = [
            Value(current.run_id, current.pk, attempt, 0, "", name, value, unit_of(name))
            for name, value in telemetry.summary_metrics({SOURCE: summary}).items()
        ]
        measurestore.write(current, attempt, kept + cloud)
        facts = dict(current.facts)
        summaries = {**facts.get("telemetry", {}), SOURCE: summary}
        facts["telemetry"] = summaries
        facts["verdict"] = cellwatch.judge(
            summaries, summary, client_throttled=facts.get("client_cpu_throttled")
        )
        Cell.objects.filter(pk=current.pk).update(facts=facts)


def unit_of(name: str) -> str:
    return telemetry.metric(name).unit
