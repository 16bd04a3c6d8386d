"""The one registry of benchmark tools.

Every tool module exposes the same small interface (see each module):
NAME, BINARY, PACKAGE, PARAMS (allow-list), ALIASES, PHASES,
validate(params) -> dict, build(params, endpoint, phase="run") -> Command,
parse(text) -> Result, version_command() -> list[str], parse_version(text) -> str.
"""

from importlib import import_module
from types import ModuleType

TOOL_NAMES = ("mysqlslap", "sysbench", "fio", "pgbench", "stress_ng")
# Tools a plan may choose as its measured tool (stress_ng is background load).
MEASURED_TOOLS = ("mysqlslap", "sysbench", "fio", "pgbench")


def get_tool(name: str) -> ModuleType:
    """Return the tool module for name, or raise KeyError listing the known ones."""
    key = name.replace("-", "_")
    if key not in TOOL_NAMES:
        raise KeyError(f"unknown tool {name!r}; known: {', '.join(TOOL_NAMES)}")
    return import_module(f"runners.tools.{key}")
