"""What a run stores is bounded by its document (docs/architecture.md, "Frozen
cells"): a plan's large parts (SQL scripts, params, targets) are stored once
per run and its cells refer to them. A 1 MiB plan of 2,000 cells started
through the API stores about twice its document, not 2,000 times (before:
a 286 KB request wrote 25 MB); a real worker runs cells whose script is a
shared part; a script over the cap is refused at save.

The sizes are PostgreSQL's own (pg_column_size of the rows as stored,
compressed or not): the scripts are random text, so compression cannot hide
a copy per cell."""

from __future__ import annotations

import secrets
import time

import pytest
from django.db import connection, transaction
from rest_framework.test import APIClient

from benchapp.models import Cell, FrozenPart, Plan, Run
from benchapp.store import frozenparts
from runners.frozen import PART_KEY
from runners.params import MAX_SQL_BYTES
from runners.safeyaml import MAX_DOCUMENT_BYTES
from tests.support.dbtargets import mariadb_database, mariadb_sql  # noqa: F401
from tests.support.waiting import finished, wait_for
from tests.support.worker import FAST_LEASES

CELLS = 2_000
# Per cell, what its own row holds besides the shared parts: index, key, axes,
# its parameters and references (about 1 KB here, measured below).
PER_CELL_BYTES = 1_500


def _api(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def _script(size: int, statement: str) -> str:
    """statement followed by a comment of random text: size bytes that do not compress."""
    padding = size - len(statement) - 7
    return f"{statement} /* {secrets.token_urlsafe(padding)[:padding]} */"


def _big_plan() -> dict:
    """A mysqlslap plan of CELLS cells whose document is just under 1 MiB: four
    distinct scripts of ~250 KB (create, query, and two queries set by overrides)."""
    size = (MAX_DOCUMENT_BYTES - 16_000) // 4
    assert size <= MAX_SQL_BYTES
    return {
        "name": "big-scripts",
        "tool": "mysqlslap",
        "targets": [{"name": "db", "kind": "mysql", "host": "db.example.com", "user": "bench"}],
        "params": {
            "create": _script(size, "CREATE TABLE t (id INT PRIMARY KEY)"),
            "query": _script(size, "SELECT id FROM t"),
            "number_of_queries": 10,
            "create_schema": "scratch",
        },
        "axes": {"concurrency": list(range(1, CELLS // 4 + 1)), "iterations": [1, 2, 3, 4]},
        "overrides": [
            {"when": {"iterations": 2}, "set": {"query": _script(size, "SELECT 2 FROM t")}},
            {"when": {"concurrency": 7}, "set": {"query": _script(size, "SELECT 7 FROM t")}},
        ],
    }


def _bytes(sql: str, run_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(sql, [run_id])
        return int(cursor.fetchone()[0] or 0)


def stored_bytes(run: Run) -> dict[str, int]:
    """What PostgreSQL stores for the run's own row, its cells and its frozen parts."""
    return {
        "run": _bytes("SELECT pg_column_size(t.*) FROM benchapp_run t WHERE id = %s", run.pk),
        "cells": _bytes(
            "SELECT sum(pg_column_size(t.*)) FROM benchapp_cell t WHERE run_id = %s", run.pk
        ),
        "parts": _bytes(
            "SELECT sum(pg_column_size(t.*)) FROM benchapp_frozenpart t WHERE run_id = %s", run.pk
        ),
    }


@pytest.mark.django_db
def test_storage_a_1mib_plan_of_2000_cells_stores_about_its_document_once(member, team):
    import json

    document = _big_plan()
    size = len(json.dumps(document).encode())
    assert MAX_DOCUMENT_BYTES - 20_000 < size <= MAX_DOCUMENT_BYTES
    started = time.perf_counter()
    response = _api(member).post("/api/runs/", {"document": document}, format="json")
    elapsed = time.perf_counter() - started
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert run.cells.count() == CELLS
    stored = stored_bytes(run)
    total = sum(stored.values())
    per_cell = stored["cells"] / CELLS
    print(
        f"document {size} B, {CELLS} cells: run row {stored['run']} B, cells {stored['cells']} B "
        f"({per_cell:.0f} B each), frozen parts {stored['parts']} B, total {total} B; "
        f"started in {elapsed:.1f} s"
    )
    # The document is kept once on the run and its scripts once among the parts.
    assert total < 3 * size + CELLS * PER_CELL_BYTES
    assert per_cell < PER_CELL_BYTES
    assert stored["parts"] < 1.2 * size
    # Each script is one part, whatever the number of cells that use it.
    scripts = [document["params"]["query"], document["params"]["create"]]
    scripts += [o["set"]["query"] for o in document["overrides"]]
    values = list(FrozenPart.objects.filter(run=run).values_list("value", flat=True))
    assert [values.count(s) for s in scripts] == [1, 1, 1, 1]


@pytest.mark.django_db
def test_storage_every_cell_reads_back_its_own_script(member, team):
    document = _big_plan()
    document["axes"] = {"concurrency": [1, 7, 8], "iterations": [1, 2]}
    response = _api(member).post("/api/runs/", {"document": document}, format="json")
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    for cell in run.cells.all():
        stored = cell.spec["cell"]["params"]["query"]
        assert list(stored) == [PART_KEY]  # the row holds a reference, not the text
        frozen = frozenparts.frozen(cell)
        expected = document["params"]["query"]
        if cell.axes["concurrency"] == 7:
            expected = document["overrides"][1]["set"]["query"]
        elif cell.axes["iterations"] == 2:
            expected = document["overrides"][0]["set"]["query"]
        assert frozen["cell"]["params"]["query"] == expected
        assert frozen["plan"]["params"]["create"] == document["params"]["create"]


@pytest.mark.django_db
def test_storage_an_oversize_script_is_refused_at_save(member, team):
    document = _big_plan()
    document["axes"] = {}
    document["overrides"] = []
    document["params"]["query"] = _script(MAX_SQL_BYTES + 1, "SELECT 1")
    client = _api(member)
    for path in ("/api/plans/", "/api/runs/"):
        response = client.post(path, {"document": document}, format="json")
        assert response.status_code == 400, response.content
        text = str(response.json())
        assert "query" in text
        assert f"the script is {MAX_SQL_BYTES + 1} bytes; the limit is {MAX_SQL_BYTES}" in text
    assert not Plan.objects.filter(team=team).exists()
    assert not Run.objects.filter(team=team).exists()


@pytest.mark.django_db(transaction=True)
def test_storage_a_worker_runs_cells_whose_script_is_a_shared_part(
    member, team, start_worker, mariadb_database
):
    """The query inserts into a table outside mysqlslap's scratch schema, so
    what the server ran is counted after the run: the worker resolved the
    cells' reference to the exact text."""
    mariadb_sql(f"CREATE TABLE {mariadb_database}.seen (cell INT, note VARCHAR(300))")
    note = secrets.token_hex(100)  # makes each script a part (over runners.frozen.PART_MIN)
    document = {
        "name": "shared-script",
        "tool": "mysqlslap",
        "targets": [
            {"name": "db", "kind": "mysql", "host": "127.0.0.1", "port": 3306, "user": "root"}
        ],
        "params": {
            "create": f"CREATE TABLE t (id INT PRIMARY KEY, note VARCHAR(300)); "
            f"INSERT INTO t VALUES (1, '{note}')",
            "query": f"INSERT INTO {mariadb_database}.seen SELECT 1, note FROM t WHERE id = 1",
            "number_of_queries": 1,
            "iterations": 1,
            "create_schema": f"bb_scratch_{secrets.token_hex(3)}",
        },
        "axes": {"concurrency": [1, 2]},
    }
    start_worker("store", **FAST_LEASES)
    with transaction.atomic():
        response = _api(member).post("/api/runs/", {"document": document}, format="json")
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["id"])
    assert all(list(c.spec["plan"]["params"]) == [PART_KEY] for c in run.cells.all())
    wait_for(lambda: finished(run), timeout=180)
    cells = list(run.cells.order_by("index"))
    assert [c.status for c in cells] == [Cell.SUCCEEDED] * 2, [c.error for c in cells]
    seen = mariadb_sql(f"SELECT count(*), min(note) FROM {mariadb_database}.seen").split()
    assert int(seen[0]) >= 2 and seen[1] == note
