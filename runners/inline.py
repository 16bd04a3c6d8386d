"""Running a whole plan in this process, without Django: `python -m runners run`.

run_plan expands the plan, runs its cells one after the other through
run_cell, and returns the result document of DESIGN.md:

    {"plan": {...}, "cells": [{"axes", "repeat", "status", "error", "metrics",
                               "groups", "command", "facts", ...}]}

Provisioning is not done here: a target with `provision:` needs a `provision`
callable (target spec -> static target spec); without one its cells fail with
a clear, permanent error and the rest of the plan still runs.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from runners.cell import run_cell
from runners.cellcleanup import cleanup_target
from runners.context import CellContext
from runners.errors import RunnerError
from runners.phases import CellOutcome
from runners.plan import CellSpec, Plan, expand, with_seed
from runners.plantargets import TargetSpec
from runners.repeats import decide

Progress = Callable[[CellSpec, int, CellOutcome | None], None]
Provision = Callable[[TargetSpec], TargetSpec]
SECRET_ENV_PREFIX = "BENCHBOARD_SECRET_"


def env_secret_name(credential: str) -> str:
    """The environment variable holding credential for inline runs.

    e.g. "sb-password" -> BENCHBOARD_SECRET_SB_PASSWORD.
    """
    return SECRET_ENV_PREFIX + re.sub(r"[^A-Za-z0-9]", "_", credential).upper()


def secret_resolver(files: dict[str, str] | None = None) -> Callable[[str], str]:
    """resolve_secret for inline runs: a file given per name, else an env variable."""
    files = dict(files or {})

    def resolve(name: str) -> str:
        if name in files:
            try:
                return Path(files[name]).read_text().rstrip("\n")
            except OSError as exc:
                raise RunnerError(
                    f"credential {name}: cannot read its file ({exc.strerror})", permanent=True
                ) from None
        variable = env_secret_name(name)
        if variable in os.environ:
            return os.environ[variable]
        raise RunnerError(
            f"credential {name!r}: set {variable} or pass --secret {name}=@FILE", permanent=True
        )

    return resolve


def cell_document(cell: CellSpec, outcome: CellOutcome) -> dict[str, Any]:
    """One entry of the result document's "cells" list."""
    result = outcome.result
    stress = outcome.stress_result
    return {
        "index": cell.index,
        "key": cell.key,
        "axes": cell.axes,
        "repeat": cell.repeat,
        "target": cell.target,
        "status": outcome.status,
        "error": outcome.error,
        "permanent": outcome.permanent,
        "metrics": result.metrics if result else {},
        "groups": result.groups if result else [],
        "series": result.series if result else {},
        "errors": result.errors if result else [],
        "stress": stress.metrics if stress else None,
        "command": outcome.command,
        "tool_version": outcome.tool_version,
        "facts": outcome.facts,
        "warnings": outcome.warnings,
        "started": outcome.started,
        "finished": outcome.finished,
        "duration_s": round(outcome.duration, 3),
    }


def phases_document(outcome: CellOutcome) -> list[dict[str, Any]]:
    """The raw (masked) phase records of a cell, for --phases."""
    return [vars(record).copy() for record in outcome.phases]


def _provisioned(plan: Plan, provision: Provision | None) -> tuple[dict, dict]:
    """Static specs for targets that need provisioning, and errors for those that failed."""
    resolved, errors = {}, {}
    for target in plan.targets:
        if target.provision is None or provision is None:
            continue
        try:
            resolved[target.name] = provision(target)
        except RunnerError as exc:
            errors[target.name] = exc
    return resolved, errors


def run_plan(
    plan: Plan,
    *,
    seed: int | None = None,
    resolve_secret: Callable[[str], str] | None = None,
    provision: Provision | None = None,
    on_progress: Progress | None = None,
    on_output=None,
    with_phases: bool = False,
    cancel_event: threading.Event | None = None,
) -> dict[str, Any]:
    """Run every cell of plan here and return the result document.

    on_progress(cell, total, outcome) is called before (outcome None) and
    after each cell. Cells run one after the other; a failed cell does not
    stop the plan. cancel_event set: the cell running is cancelled and the
    remaining cells are reported as cancelled. With adaptive repeats
    (plan.repeat_rule), a combination's repeats stop once the rule says so.
    """
    if seed is not None:
        plan = with_seed(plan, seed)
    cells = expand(plan)
    last_of_target = {cell.target: cell.index for cell in cells}
    resolved, failed = _provisioned(plan, provision)
    documents = []
    with (
        CellContext(
            plan,
            resolve_secret=resolve_secret or secret_resolver(),
            targets=resolved,
            cancel_event=cancel_event,
        ) as ctx,
        _watch_cancel(ctx),
    ):
        repeats = _Repeats(plan, cells)
        for cell in cells:
            if repeats.stopped(cell):
                if last_of_target[cell.target] == cell.index:
                    last = next(d for d in reversed(documents) if d["target"] == cell.target)
                    _final_cleanup(plan, cell.target, ctx, last)
                continue
            if on_progress:
                on_progress(cell, len(cells), None)
            outcome = _one_cell(plan, cell, ctx, failed.get(cell.target), on_output)
            document = cell_document(cell, outcome)
            if with_phases:
                document["phases"] = phases_document(outcome)
            documents.append(document)
            repeats.ended(cell, document)
            if on_progress:
                on_progress(cell, len(cells), outcome)
            if last_of_target[cell.target] == cell.index:
                _final_cleanup(plan, cell.target, ctx, document)
    return {"plan": plan.document, "cells": documents}


class _Repeats:
    """Adaptive repeats inline: the stop rule after each repeat of a combination;
    a stopped combination's later repeats are skipped, and each of its cell
    documents gets the decision as "repeat_stop"."""

    def __init__(self, plan: Plan, cells: list[CellSpec]):
        self.rule = plan.repeat_rule
        self.left = Counter(cell.key for cell in cells)
        self.done: dict[str, list[dict]] = defaultdict(list)
        self.stop: set[str] = set()

    def stopped(self, cell: CellSpec) -> bool:
        return cell.key in self.stop

    def ended(self, cell: CellSpec, document: dict) -> None:
        if self.rule is None:
            return
        self.left[cell.key] -= 1
        ran = [d for d in self.done[cell.key] + [document] if d["status"] != "cancelled"]
        self.done[cell.key].append(document)
        values = [
            d["metrics"][self.rule.metric]
            for d in ran
            if d["status"] == "succeeded"
            and isinstance(d["metrics"].get(self.rule.metric), (int, float))
        ]
        stop = decide(self.rule, values, len(ran), left=self.left[cell.key])
        if stop is not None:
            self.stop.add(cell.key)
            for done in self.done[cell.key]:
                done["repeat_stop"] = stop.to_dict(self.rule)


@contextmanager
def _watch_cancel(ctx: CellContext):
    """Turn cancel_event.set() (e.g. from a signal handler) into ctx.cancel(),
    which also stops the processes running right now."""
    finished = threading.Event()

    def watch():
        while not finished.is_set():
            if ctx.cancel_event.wait(0.2):
                ctx.cancel()
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        finished.set()
        watcher.join()


def _one_cell(plan, cell, ctx, provision_error, on_output) -> CellOutcome:
    now = time.time()
    if ctx.cancelled:
        return CellOutcome(status="cancelled", error="cancelled", started=now, finished=now)
    if provision_error is not None:
        return CellOutcome(
            status="failed",
            error=provision_error.message,
            permanent=provision_error.permanent,
            started=now,
            finished=now,
        )
    forward = None
    if on_output is not None:

        def forward(phase, stream, chunk):
            on_output(cell, phase, stream, chunk)

    return run_cell(plan, cell, ctx, on_output=forward)


def _final_cleanup(plan, target: str, ctx, document: dict) -> None:
    """prepare.once + cleanup: true: drop the target's data after its last cell."""
    try:
        record = cleanup_target(plan, target, ctx)
    except RunnerError as exc:
        document["warnings"].append(f"final cleanup: {exc.message}")
        return
    if record is not None and record.exit_code != 0:
        document["warnings"].append(f"final cleanup failed (exit {record.exit_code})")


def progress_line(cell: CellSpec, total: int, outcome: CellOutcome | None) -> str:
    """The two halves of "[3/12] load_type=read target=local rep 1 ... ok 1.2s"."""
    if outcome is None:
        axes = " ".join(f"{k}={_show(v)}" for k, v in cell.axes.items()) or cell.target
        if "target" not in cell.axes:
            axes += f" target={cell.target}"
        return f"[{cell.index}/{total}] {axes} rep {cell.repeat} ... "
    word = {"succeeded": "ok", "failed": "FAILED", "cancelled": "cancelled"}[outcome.status]
    tail = f": {outcome.error}" if outcome.error else ""
    return f"{word} {outcome.duration:.1f}s{tail}\n"


def _show(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)
