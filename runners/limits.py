"""The operator's limits for tools run on the worker host, and the plan check against them.

Limits are what one sandboxed tool run may use (runners/cgroups.py enforces
them while it runs). Before that, runners.planlimits.check_plan_limits() refuses a plan whose own
parameters ask for more than the limits of the place each tool runs: a tool
on the worker host gets the worker's limits; a tool over SSH runs on a host
that is the team's own, whose limits are the team's business.

What counts is declared by each tool in its registry block, as LIMITS: a
tuple of Use rows (which parameter, which resource, multiplied by which
other parameters). One function reads them all; no tool is named here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from runners.errors import ValidationError

MB = 1024 * 1024
# The resource kinds a Use row may count, with the unit shown and the setting named.
KINDS = {
    "processes": ("", "BENCHBOARD_SANDBOX_PIDS"),
    "memory": ("bytes", "BENCHBOARD_SANDBOX_MEMORY_MB"),
    "disk": ("bytes", "BENCHBOARD_SANDBOX_SCRATCH_MB"),
    "seconds": ("s", "BENCHBOARD_SANDBOX_SECONDS"),
}
# fio, sysbench and stress-ng read k, m, g... as powers of 1024 (kb_base=1024).
UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
SIZE = re.compile(r"^([0-9]+)([kmgtp]?)(?:i?b)?$")


@dataclass(frozen=True)
class Limits:
    """What one cell's local processes on the worker may use together
    (operator settings, plain values): one cgroup holds them all.

    host_cells: how many cells may run sandboxed tools on one worker host at
    once (0: no bound), counted by the slot files in slots_dir
    (runners/hostslots.py)."""

    cpus: float = 2.0
    memory_mb: int = 4096
    pids: int = 512
    scratch_mb: int = 1024
    seconds: int = 14400
    host_cells: int = 0
    slots_dir: str = ""

    def allowed(self, kind: str) -> int:
        """The limit of a resource kind, in the unit its Use rows count."""
        return {
            "processes": self.pids,
            "memory": self.memory_mb * MB,
            "disk": self.scratch_mb * MB,
            "seconds": self.seconds,
        }[kind]


@dataclass(frozen=True)
class Use:
    """One parameter that counts against a limit: its value (a number or a
    size such as 4G) times the values of `times` (each 1 when absent)."""

    param: str
    kind: str
    times: tuple[str, ...] = ()


def size_bytes(value: Any) -> int | None:
    """A count or size (4096, "4k", "1P", "16MiB") as a number, the largest of
    a list (mysqlslap's concurrency: 1,8,64); None when unreadable."""
    if isinstance(value, (list, tuple)):
        sizes = [size for size in map(size_bytes, value) if size is not None]
        return max(sizes, default=None)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    match = SIZE.fullmatch(str(value).strip().lower())
    if not match:
        return None
    return int(match.group(1)) * UNITS[match.group(2)]


def check_params(tool, params: dict, limits: Limits, where: str = "params") -> None:
    """Raise ValidationError for the first of tool.LIMITS over limits (params: one cell's)."""
    for use in getattr(tool, "LIMITS", ()):
        amount = _amount(use, params)
        if amount is not None and amount > limits.allowed(use.kind):
            raise ValidationError(f"{where}.{use.param}", _message(use, params, amount, limits))


def uses(tool, params: dict, kind: str) -> list[tuple[str, int]]:
    """What one run of tool with params asks of a resource kind, a row per
    Use the params set: ("size 5G × numjobs 4", bytes)."""
    rows = []
    for use in getattr(tool, "LIMITS", ()):
        amount = _amount(use, params) if use.kind == kind else None
        if amount is not None:
            rows.append((_asked(use, params), amount))
    return rows


def _amount(use: Use, params: dict) -> int | None:
    value = size_bytes(params.get(use.param)) if use.param in params else None
    if value is None:
        return None
    for name in use.times:
        value *= size_bytes(params.get(name, 1)) or 1
    return value


def _message(use: Use, params: dict, amount: int, limits: Limits) -> str:
    unit, setting = KINDS[use.kind]
    asked = _asked(use, params)
    shown = show_amount(amount, unit)
    total = f" = {shown}" if len(use.times) and any(n in params for n in use.times) else ""
    return (
        f"{asked}{total} is over the worker's limit of {show_amount(limits.allowed(use.kind), unit)} "
        f"{_noun(use.kind)} for a tool run on the worker ({setting}); lower it, or run the "
        "tool over SSH on your own host"
    )


def _asked(use: Use, params: dict) -> str:
    return " × ".join(
        f"{name} {params[name]}" for name in (use.param, *use.times) if name in params
    )


def _noun(kind: str) -> str:
    return {
        "processes": "processes and threads",
        "memory": "of memory",
        "disk": "in the scratch directory",
        "seconds": "per run",
    }[kind]


def show_amount(amount: int, unit: str) -> str:
    if unit == "bytes":
        return f"{amount / MB:,.0f} MB"
    if unit == "s":
        return f"{amount:,} s"
    return f"{amount:,}"
