"""Telling a whole tool output from one cut short.

A run killed mid-summary, a lost ssh connection or a full disk leave an
output that stops anywhere, even inside a number ("tps: 555.2" of
"555.23"). Every tool ends its output with a newline, so text whose last
character is a digit with no newline after it may have lost the rest of that
number: its last line cannot be trusted. Each parser also checks that its
summary reached its last line (runners/tools/*.py).
"""

from __future__ import annotations


def ends_mid_number(text: str) -> str:
    """An error line when text stops right after a digit with no newline (the
    last number may be cut), else ""."""
    stripped = text.rstrip(" \t")
    if not stripped or not stripped[-1].isdigit():
        return ""
    last = stripped[stripped.rfind("\n") + 1 :].strip()
    return f"output ends in the middle of a number (cut short?): {last[-80:]}"
