"""Telemetry from the warmup and the stress start through the measure: every
sample on the measure's time axis, the phases' boundaries kept, and the
summaries and verdict of the measured seconds only."""

from __future__ import annotations

import pytest

from runners import telemetry
from runners.cell import run_cell
from runners.cellwatch import measured, phase_times
from runners.context import CellContext
from runners.plan import expand, load_plan
from tests.support.sshd import host_target, sshd  # noqa: F401


def test_a_second_counts_for_the_phase_its_middle_falls_in():
    series = {"t": [-1.6, -0.6, 0.4, 1.4, 2.4], "cpu_busy_pct": [100.0, 100.0, 10.0, 20.0, 30.0]}
    # Rows are the intervals (-2.6, -1.6], ..., (1.4, 2.4]: the one ending at
    # 0.4 began at -0.6, its middle is -0.1: warmup, not measure; the one
    # ending at 2.4 has its middle at 1.9: in a measure that ended at 2.0,
    # not in one that ended at 1.8.
    kept = measured(series, 0.0, 2.0, first=-2.6)
    assert kept == {"t": [1.4, 2.4], "cpu_busy_pct": [20.0, 30.0]}
    assert measured(series, 0.0, 1.8, first=-2.6)["t"] == [1.4]
    assert measured(series, -3.0, 0.0, first=-2.6)["t"] == [-1.6, -0.6, 0.4]
    # The warmup's 100 % seconds change neither the mean nor the max.
    busy = telemetry.summarize(kept)["cpu_busy_pct"]
    assert (busy["mean"], busy["max"]) == (25.0, 30.0)


def test_phase_times_are_seconds_from_the_measure_in_start_order():
    marks = {"measure": [110.0, 114.5], "warmup": [100.0, 105.0], "stress": [105.2, 105.2]}
    assert phase_times(marks, 110.0) == [
        {"phase": "warmup", "start": -10.0, "end": -5.0},
        # stress-ng is stopped after the samplers: it ran to the measure's end.
        {"phase": "stress", "start": -4.8, "end": 4.5},
        {"phase": "measure", "start": 0.0, "end": 4.5},
    ]


def _run(plan_doc: dict, **ctx):
    plan = load_plan({"name": "t", "timeout": 300, **plan_doc})
    with CellContext(plan, **ctx) as context:
        return [run_cell(plan, cell, context) for cell in expand(plan)]


def _check_phases(outcome, source: str, warmup_s: float) -> None:
    """The warmup's seconds sampled inside its span, the summary exactly
    that of the measured seconds."""
    phases = {p["phase"]: p for p in outcome.facts["telemetry_phases"]}
    assert list(phases) == ["warmup", "stress", "measure"]
    warmup, stress, measure = phases["warmup"], phases["stress"], phases["measure"]
    assert measure["start"] == 0.0 < measure["end"]
    assert warmup["start"] < warmup["end"] <= stress["start"] < 0.0
    assert warmup["end"] - warmup["start"] >= warmup_s - 0.5
    assert stress["end"] == measure["end"]

    series = outcome.telemetry[source]
    times = series["t"]
    in_warmup = [t for t in times if warmup["start"] < t - 0.5 < warmup["end"]]
    assert len(in_warmup) >= warmup_s - 1, times  # the warmup's seconds were sampled
    assert times[-1] >= measure["end"] - 1.5  # ... and the measure's, to its end

    summary = outcome.facts["telemetry"][source]
    # a row is the interval since the sample before it; its middle decides
    # (a busy machine stretches intervals past a second)
    middles = [(t + before) / 2 for t, before in zip(times, [times[0] - 1.0, *times])]
    only_measured = [m for m in middles if 0.0 <= m <= measure["end"]]
    assert summary["seconds"] == len(only_measured)
    assert summary["seconds"] < len(times)
    expected = telemetry.summarize(measured(series, 0.0, measure["end"], times[0] - 1.0))
    assert summary == expected


@pytest.mark.slow
def test_warmup_and_stress_are_sampled_and_marked_but_not_summarised():
    """sysbench cpu with a 3 s warmup and stress-ng on the (local) target:
    the host sampler runs from the warmup, its warmup seconds are at negative
    times inside the warmup's boundaries, and the summary is exactly the one
    of the measured seconds."""
    (outcome,) = _run(
        {
            "tool": "sysbench",
            "targets": [{"name": "box", "kind": "host"}],
            "prepare": False,
            "params": {"test": "cpu", "threads": 1, "time": 5},
            "warmup": {"time": 3},
            "stress": {"cpu": 1, "cpu_load": 50},
        }
    )
    assert outcome.status == "succeeded", outcome.error
    assert 4.5 <= outcome.facts["telemetry_phases"][-1]["end"] <= 7.0
    _check_phases(outcome, "host", warmup_s=3)
    series = outcome.telemetry["host"]
    assert telemetry.summarize(series)["seconds"] == len(series["t"])  # the whole would differ


@pytest.mark.slow
def test_warmup_over_ssh_is_sampled_on_the_measures_time_axis(sshd, tmp_path):  # noqa: F811
    """The same over the test suite's sshd (client on the target): the host
    sampler runs over the pooled SSH connection from the warmup on, and its
    samples are placed on the measure's axis by the start's wall clock."""
    target = host_target(sshd)
    (outcome,) = _run(
        {
            "tool": "fio",
            "targets": [target],
            "client": {"on": "target"},
            "params": {"directory": str(tmp_path), "size": "4M", "runtime": 6, "time_based": True},
            "warmup": {"runtime": 3},
            "stress": {"cpu": 1, "cpu_load": 50},
        },
        resolve_secret={"box-key": sshd.client_key}.__getitem__,
    )
    assert outcome.status == "succeeded", outcome.error
    assert list(outcome.telemetry) == ["host"]
    _check_phases(outcome, "host", warmup_s=3)
