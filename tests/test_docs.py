"""docs/plan-reference.md is generated from the tool registry and kept current."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from runners import docs
from runners.tools import TOOLS

REFERENCE = Path(__file__).parent.parent / "docs" / "plan-reference.md"


def documented() -> dict[str, set[str]]:
    """{tool: parameter names in its "Parameters" table} read from the file."""
    out, tool, in_params = {}, None, False
    for line in REFERENCE.read_text().splitlines():
        if line.startswith("## "):
            tool, in_params = line[3:].strip(), False
            out[tool] = set()
        elif line.startswith("### "):
            in_params = line == "### Parameters"
        elif in_params and (match := re.match(r"\| `([^`]+)` \|", line)):
            out[tool].add(match.group(1))
    return out


@pytest.mark.parametrize("tool", list(TOOLS))
def test_docs_every_parameter_of_every_tool_is_documented(tool):
    missing = set(TOOLS[tool].PARAMS) - documented().get(tool, set())
    assert not missing, f"undocumented {tool} parameters: {sorted(missing)}"


def test_docs_plan_reference_is_current():
    assert REFERENCE.read_text() == docs.render(), (
        "docs/plan-reference.md is stale: python -m runners.docs > docs/plan-reference.md"
    )
