"""The one CSV writer of the exports: no cell starts a spreadsheet formula.

Run names, cell keys, target names and axis values are written by plan
authors; a spreadsheet runs a cell that begins with `=`, `+`, `-` or `@` as a
formula (`=cmd|' /C calc'!A0`), and a leading tab or carriage return hides
one (OWASP "CSV injection"). Such a text cell is written with a single quote
before it, which spreadsheets show as text. Numbers stay numbers: a value
that is a number, or text that reads as one as a whole ("-3.5"), is left as
it is, so negative measurements still sort and sum.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralised(value):
    """`value`, or a text starting a formula with a single quote before it."""
    if not isinstance(value, str) or not value.startswith(FORMULA_START):
        return value
    if _is_number(value):
        return value
    return "'" + value


def _is_number(text: str) -> bool:
    if text != text.strip():  # float() ignores the tab or CR this is about
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def csv_text(rows: Iterable[Iterable]) -> str:
    """Rows (the header first) as CSV text, every cell through `neutralised`."""
    out = io.StringIO()
    writer = csv.writer(out)
    for row in rows:
        writer.writerow([neutralised(value) for value in row])
    return out.getvalue()
