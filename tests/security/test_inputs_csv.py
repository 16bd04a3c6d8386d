"""CSV exports begin no cell with a formula character (OWASP CSV injection):
run names, cell keys, target names and axis values written by a plan are
neutralised with a leading single quote; numbers stay numbers."""

import csv
import io

import pytest

from benchapp.analysis.csvexport import neutralised
from benchapp.models import Comparison
from tests.benchapp.results_data import make_run

PAYLOADS = ["=cmd|' /C calc'!A0", "+SUM(1+1)", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)"]
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def crafted_run(team):
    return make_run(
        team,
        name='=HYPERLINK("http://evil.test","x")',
        cells=[
            (
                {"=cmd|'/C calc'!A0": payload, "mode": "\tnote", "depth": "\r=1+1"},
                1,
                {"tps": -3.5, "=metric": 2.0},
                {"target_name": "@target"},
            )
            for payload in PAYLOADS
        ],
    )


def cells_of(body: str) -> list[str]:
    return [value for row in csv.reader(io.StringIO(body)) for value in row]


def assert_no_formula(body: str):
    for value in cells_of(body):
        if value.startswith(FORMULA):
            float(value)  # only a plain number may start with - or +


def test_run_export_csv_begins_no_cell_with_a_formula(owner_client, team):
    run = crafted_run(team)
    response = owner_client.get(f"/runs/{run.pk}/export.csv")
    assert response.status_code == 200
    body = response.content.decode()
    assert_no_formula(body)
    values = cells_of(body)
    # The payloads are all there, quoted, and the negative number is still a number.
    assert '\'=HYPERLINK("http://evil.test","x")' in values
    assert "'@target" in values and "'\tnote" in values and "'\r=1+1" in values
    assert all(f"'{p}" in values for p in PAYLOADS)
    assert "axis:=cmd|'/C calc'!A0" in values
    assert "-3.5" in values and "'=metric" in values
    assert any(v.startswith("'=cmd|'/C calc'!A0=") for v in values)  # the cell key


def test_comparison_export_csv_begins_no_cell_with_a_formula(owner_client, team, owner):
    comparison = Comparison.objects.create(team=team, name="c", created_by=owner)
    comparison.runs.set([crafted_run(team), crafted_run(team)])
    response = owner_client.get(f"/comparisons/{comparison.pk}/export.csv")
    assert response.status_code == 200
    assert_no_formula(response.content.decode())
    assert len(cells_of(response.content.decode())) > 40


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("=1+1", "'=1+1"),
        ("-1", "-1"),
        ("+2.5e3", "+2.5e3"),
        ("-1+cmd", "'-1+cmd"),
        ("\t-1", "'\t-1"),
        ("\r1", "'\r1"),
        ("-", "'-"),
        ("plain", "plain"),
        ("a=1", "a=1"),
        (-4.0, -4.0),
        (3, 3),
        (None, None),
    ],
)
def test_neutralised(value, written):
    assert neutralised(value) == written
