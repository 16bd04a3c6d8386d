"""What a parser could not read reaches the people reading the results: a
worker's cell and an import keep the warnings (facts["parser_warnings"]),
the import page and the cell's output page list them. Real outputs from
tests/fixtures/, one of them with a line no parser knows put into its
summary block."""

from __future__ import annotations

from pathlib import Path

from django.utils import timezone

from benchapp.models import Cell, Run
from benchapp.runs.recording import record_outcome
from runners.phases import CellOutcome
from runners.tools import read_output
from tests.support.measures import stored

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
UNKNOWN = "    events lost:                         12"


def _with_unknown_line() -> str:
    """A real sysbench 1.1 summary with one line nothing reads in its block."""
    text = (FIXTURES / "sysbench" / "public_sysbench_11_cpu_throughput.out").read_text()
    return text.replace("    time elapsed:", UNKNOWN + "\n    time elapsed:")


def test_import_with_an_unknown_line_stays_on_the_page_and_lists_it(owner_client, team):
    response = owner_client.post(
        "/archive/import/",
        {
            "tool": "sysbench",
            "name": "pasted 1.1",
            "axes": "threads=1",
            "output": _with_unknown_line(),
        },
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert 'data-role="parser-warnings"' in page and "events lost:" in page
    cell = Run.objects.get(team=team).cells.get()
    assert cell.status == Cell.SUCCEEDED  # a warning does not fail the cell
    assert cell.facts["parser_warnings"] == [
        "sysbench summary: line not understood: 'events lost:                         12'"
    ]
    values = {m.metric: m.value for m in stored(cells=[cell.pk])}
    assert values["events_per_s"] == 45.3573 and values["total_time_s"] == 220.4715
    cell_page = owner_client.get(f"/runs/{cell.run_id}/cells/{cell.id}/artifacts/").content.decode()
    assert "Not read" in cell_page and "events lost:" in cell_page


def test_import_of_fio_normal_output_reads_its_figures(owner_client, team):
    text = (FIXTURES / "fio" / "public_fio_328_read_libaio_normal.out").read_text()
    response = owner_client.post(
        "/archive/import/",
        {"tool": "fio", "name": "old disk study", "axes": "rw=read", "output": text},
    )
    run = Run.objects.get(team=team)
    assert response.status_code == 302 and response.url == f"/runs/{run.pk}/results/"
    cell = run.cells.get()
    values = {m.metric: m.value for m in stored(cells=[cell.pk])}
    assert values["read_clat_mean_us"] == 365.36 and values["read_bw_kib_s"] == 677 * 1024
    assert "parser_warnings" not in cell.facts and cell.tool_version == "3.28"


def test_a_workers_cell_keeps_the_parser_warnings(team):
    run = Run.objects.create(
        team=team, name="worker run", tool="sysbench", status=Run.RUNNING, document={}
    )
    cell = Cell.objects.create(
        run=run, index=1, key="threads=1", repeat=1, axes={"threads": 1},
        target_name="host", status=Cell.RUNNING, attempt=1, started_at=timezone.now(),
    )  # fmt: skip
    result = read_output("sysbench", _with_unknown_line())
    assert record_outcome(cell, CellOutcome(status="succeeded", result=result))
    cell.refresh_from_db()
    assert cell.status == Cell.SUCCEEDED
    assert cell.facts["parser_warnings"] == result.warnings and len(result.warnings) == 1
