"""The telemetry of one cell: host samplers on every machine it uses and the
database's counters, started before the warmup (or the stress start, or the
measure: whichever of them comes first) and stopped after the measure.

Every series's t is in seconds from the measure's start: the warmup's and
the stress start's samples are at negative times, the measure's from 0, on
the same axis as the tool's own series. The phase boundaries (the cell's
facts["telemetry_phases"]) say which second was which; the summaries and
the verdict read the measured seconds only (`measured`).

Sources: "client" (the machine the tool runs on), "target" (the database or
storage host, reached over the target's own SSH), "host" when client and
target are one machine, "client2", "client3"... (the other clients of a
cell loaded from several) and "db" (the database server's counters).
Telemetry is context: a sampler that cannot start or whose
output cannot be read is a warning on the cell, never its failure.
"""

from __future__ import annotations

import time

from runners import dbstatus, hostsampler, proctree, telemetry, verdict
from runners.errors import RunnerError
from runners.executors.local import LocalExecutor
from runners.plantargets import TargetSpec


class CellWatch:
    """start() before the first sampled phase, stop(origin) after the measure;
    then series, summaries, verdict."""

    def __init__(
        self, ctx, target: TargetSpec, client, client_ssh, endpoint, more_clients=()
    ) -> None:
        self.ctx, self.target, self.endpoint = ctx, target, endpoint
        self.client, self.client_ssh = client, client_ssh
        self.more_clients = list(more_clients)  # executors of clients 2, 3, ...
        self.running: list[tuple[str, object, object, object]] = []  # (source, ex, bg, cmd)
        self.series: dict[str, dict] = {}
        self.started: dict[str, float] = {}  # source -> wall clock of its first sample
        self.first: dict[str, float] = {}  # source -> its first sample's t (from origin)
        self.warnings: list[str] = []
        self.owners: dict[str, proctree.Owners] = {}  # source -> whose CPU is whose there

    def _hosts(self) -> list[tuple[str, object]]:
        """(role, executor) of every machine to sample."""
        target_ssh = self.target.ssh
        one_machine = (self.client_ssh is None and self.target.is_local) or (
            target_ssh is not None and self.client_ssh == target_ssh
        )
        more = [(f"client{i}", ex) for i, ex in enumerate(self.more_clients, 2)]
        if one_machine:
            return [("host", self.client), *more]
        hosts = [("client", self.client), *more]
        if target_ssh is not None:
            hosts.append(("target", self.ctx.executor(target_ssh)))
        return hosts

    def _owners(self, role: str, executor) -> proctree.Owners:
        """Who is the cell and who the server on the machine of role: the
        server only where the target runs ("host": one machine, "target")."""
        local = isinstance(executor, LocalExecutor)
        if role not in ("host", "target") or self.endpoint is None:
            return proctree.Owners(proctree.PARENT if local else proctree.SESSION)
        where = self.endpoint
        return proctree.owners_for(where.kind, local, where.port, where.socket)

    def start(self) -> None:
        hosts = self._hosts()
        self.owners = {role: self._owners(role, ex) for role, ex in hosts}
        starts = [(role, ex, hostsampler.sampler_command()) for role, ex in hosts]
        db_command = dbstatus.sampler_command(self.endpoint) if self.endpoint else None
        if db_command is not None:
            starts.append(("db", self.client, db_command))
        for source, executor, command in starts:
            before = time.time()
            try:
                self.running.append((source, executor, executor.start(command), command))
            except RunnerError as exc:
                self.warnings.append(f"telemetry {source}: {exc.message}")
                continue
            # The loop prints its first sample as soon as it starts: between
            # these two clocks.
            self.started[source] = (before + time.time()) / 2

    def stop(self, origin: float | None = None) -> None:
        """Stop every sampler and read what it printed; origin: the wall clock
        that becomes t = 0 (the measure's start; default the first sampler's)."""
        if origin is None:
            origin = min(self.started.values(), default=0.0)
        for source, executor, background, command in self.running:
            try:
                execution = executor.stop(background, grace=1.0)
            except RunnerError as exc:
                self.warnings.append(f"telemetry {source}: {exc.message}")
                continue
            finally:
                for upload in command.uploads:
                    _remove(executor, upload.name)
            self._read(source, execution.stdout, self.started[source] - origin)
        self.running = []

    def _read(self, source: str, text: str, shift: float = 0.0) -> None:
        if source == "db":
            series, errors = dbstatus.parse_samples(self.endpoint.kind, text)
            if errors:
                self.warnings.append("telemetry db: " + errors[0][:200])
        else:
            # The target's declared link speed is its host's ("host": one machine).
            link = self.target.link_mbit if source in ("target", "host") else None
            series = telemetry.parse_samples(text, link_mbit=link, owners=self.owners.get(source))
        if series:
            self.series[source] = _shifted(series, shift)
            self.first[source] = shift
        else:
            self.warnings.append(f"telemetry {source}: no complete sample")

    def facts(self, measure_s: float, client_throttled: float | None = None) -> dict:
        """{"telemetry": {source: summary}, "verdict": {...}} for the cell's facts,
        of the measured seconds only (0 to measure_s, see `measured`);
        client_throttled: the share of CPU periods the sandbox's quota stopped
        the tool in (None when it ran without one)."""
        summaries = {
            source: telemetry.summarize(measured(s, 0.0, measure_s, self.first.get(source)))
            for source, s in self.series.items()
        }
        found = judge(summaries, client_throttled=client_throttled, measured_s=measure_s)
        return {"telemetry": summaries, "verdict": found}


def start_watch(cell_run, target: TargetSpec) -> CellWatch | None:
    """The telemetry samplers of the cell (a runners.cell._CellRun), started
    (None when turned off)."""
    if not (cell_run.plan.telemetry and target.telemetry):
        return None
    more = [executor for _, executor in cell_run.clients[1:]]
    watch = CellWatch(
        cell_run.ctx, target, cell_run.client, cell_run.client_ssh, cell_run.endpoint, more
    )
    watch.start()
    return watch


def stop_watch(cell_run, client_throttled: float | None = None) -> None:
    """Stop the cell's telemetry samplers (once); keep their series on the
    measure's time axis, the phases' boundaries, and, when the measure
    ran, the summaries and verdict of its seconds."""
    watch, cell_run.watch = cell_run.watch, None
    if watch is None:
        return
    measure = cell_run.marks.get("measure")
    origin = measure[0] if measure else None
    watch.stop(origin)
    cell_run.outcome.telemetry = watch.series
    cell_run.outcome.warnings += watch.warnings
    zero = origin if origin is not None else min(watch.started.values(), default=0.0)
    cell_run.outcome.facts["telemetry_phases"] = phase_times(cell_run.marks, zero)
    if measure:
        measure_s = measure[1] - measure[0]
        cell_run.outcome.facts.update(watch.facts(measure_s, client_throttled=client_throttled))


def phase_times(marks: dict[str, list[float]], zero: float) -> list[dict]:
    """[{"phase", "start", "end"}] in seconds from zero (the measure's start),
    in the order the phases started: the cell's facts["telemetry_phases"].
    The stress phase, stopped after the samplers, ends at the measure's end
    when it was still running then."""
    out = []
    for phase, (start, end) in sorted(marks.items(), key=lambda item: item[1][0]):
        if phase == "stress" and end == start and "measure" in marks:
            end = marks["measure"][1]
        out.append({"phase": phase, "start": round(start - zero, 2), "end": round(end - zero, 2)})
    return out


def _shifted(series: dict, shift: float) -> dict:
    """series with shift seconds added to every t."""
    return {**series, "t": [round(t + shift, 2) for t in series["t"]]}


def measured(series: dict, start: float, end: float, first: float | None = None) -> dict:
    """The rows of series whose second lies within [start, end]: a row is the
    interval between two samples (first: the time of the sample before the
    first row; default a second before it), and its middle decides, so a
    second that straddles the warmup's end and the measure's start counts for
    at most half a second of the warmup. Summaries and verdicts read these rows only."""
    times = series.get("t", [])
    if first is None:
        first = times[0] - 1.0 if times else 0.0
    keep = [
        i
        for i, (t, before) in enumerate(zip(times, [first, *times]))
        if start <= (t + before) / 2 <= end
    ]
    return {name: [values[i] for i in keep] for name, values in series.items()}


def _busy(summary: dict) -> float:
    """A host summary's mean CPU busy percent (0 when it has none)."""
    return (summary.get("cpu_busy_pct") or {}).get("mean", 0.0)


def _remove(executor, name: str) -> None:
    try:
        executor.remove(f"{executor.workdir}/{name}")
    except RunnerError:
        pass


def judge(
    summaries: dict[str, dict],
    cloud: dict | None = None,
    client_throttled: float | None = None,
    measured_s: float | None = None,
    monitoring: tuple[str, str] | None = None,
) -> dict:
    """The verdict of a cell's telemetry summaries ({source: summary}).

    Several clients ("client", "client2", ...) are judged as one: the
    busiest, so the cell is client-bound if any client was. cloud: the
    summary of the cloud's monitoring, whose (source, name) is monitoring
    (its provider's MONITORING_SOURCE and MONITORING_NAME)."""
    hosts = {s: v for s, v in summaries.items() if s != "db" and not telemetry.is_cloud(s)}
    clients = [s for s in hosts if s.startswith("client")]
    hosts = {s: v for s, v in hosts.items() if s not in clients}
    if clients:
        hosts["client"] = max((summaries[s] for s in clients), key=_busy)
    return verdict.judge(
        hosts,
        summaries.get("db"),
        cloud,
        client_throttled=client_throttled,
        measured_s=measured_s,
        monitoring=monitoring,
    )
