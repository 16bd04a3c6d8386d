"""Archive: search, tags and notes, import of real outputs, exports without secrets."""

import csv
import io
import json
from pathlib import Path

import pytest

from benchapp.histories import archive
from benchapp.models import Cell, CellSeries, Credential, Run, Target
from benchapp.store.artifactstore import text as artifact_text
from tests.benchapp.results_data import make_run
from tests.support.measures import measure, stored

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CANARY = "canary-Pa55w0rd-9f3e1c"


def _fixture(tool, name):
    return (FIXTURES / tool / name).read_text()


def test_import_sysbench_output_creates_measurements_and_series(owner_client, team):
    text = _fixture("sysbench", "sysbench_oltp_read_write_run_interval_histogram.out")
    response = owner_client.post(
        "/archive/import/",
        {
            "tool": "sysbench",
            "name": "old oltp study",
            "axes": "threads=2, target=db8",
            "output": text,
        },
    )
    run = Run.objects.get(team=team)
    assert response.status_code == 302 and response.url == f"/runs/{run.pk}/results/"
    assert (run.origin, run.tool, run.name, run.status) == (
        "import",
        "sysbench",
        "old oltp study",
        "succeeded",
    )
    cell = run.cells.get()
    assert (cell.key, cell.axes, cell.target_name, cell.tool_version) == (
        "target=db8,threads=2",
        {"threads": 2, "target": "db8"},
        "db8",
        "1.0.20",
    )
    values = {m.metric: m.value for m in stored(cells=[cell.pk], group="")}
    assert values["tps"] == 555.23 and values["qps"] == 11104.57
    assert values["latency_avg_ms"] == 3.59 and values["latency_p95_ms"] == 5.09
    assert CellSeries.objects.get(cell=cell, metric="tps").count == 5
    assert artifact_text(cell.artifacts.get(), "stdout") == text


def test_import_mysqlslap_outputs_as_repeats_of_one_run(owner_client, team):
    for name in ("mysqlslap_load_update.out", "mysqlslap_load_update.out"):
        run = Run.objects.filter(team=team).first()
        owner_client.post(
            "/archive/import/",
            {
                "tool": "mysqlslap",
                "name": "myisam-update",
                "run": run.pk if run else "",
                "axes": "auto_generate_sql_write_number=10000",
                "output": _fixture("mysqlslap", name),
            },
        )
    run = Run.objects.get(team=team)
    assert list(run.cells.values_list("key", "repeat")) == [
        ("auto_generate_sql_write_number=10000", 1),
        ("auto_generate_sql_write_number=10000", 2),
    ]
    assert run.document["axes"] == {"auto_generate_sql_write_number": [10000]}
    qps = [m.value for m in stored(runs=[run.pk], metrics=["qps"])]
    assert qps == [pytest.approx(9090.909)] * 2
    assert [m.value for m in stored(runs=[run.pk], metrics=["avg_s"])] == [0.033, 0.033]


def test_import_multi_engine_mysqlslap_keeps_blocks_as_groups(team):
    cell = archive.import_output(
        team,
        "mysqlslap",
        _fixture("mysqlslap", "mysqlslap_multi_engine.out"),
        {"load_type": "mixed"},
    )
    groups = sorted({m.group for m in stored(cells=[cell.pk]) if m.group})
    assert len(groups) == 2 and all(g.startswith("engine=") for g in groups)


def test_import_with_errors_beside_figures_is_a_failed_cell(team):
    # MySQL 5.7's mysqlslap printed a Benchmark block although some clients never connected.
    cell = archive.import_output(
        team, "mysqlslap", _fixture("mysqlslap", "public_mysql57_too_many_connections.out"), {}
    )
    assert cell.status == Cell.FAILED
    assert cell.error.startswith("Error when connecting to server: 1040 Too many connections")
    assert stored(cells=[cell.pk], metrics=["avg_s"])  # the figures are still kept


def test_import_refuses_unreadable_output(owner_client, team):
    response = owner_client.post(
        "/archive/import/", {"tool": "fio", "output": "hello", "axes": "rw=read"}
    )
    assert response.status_code == 200
    assert "could not read this output" in response.content.decode()
    assert not Run.objects.exists()
    response = owner_client.post(
        "/archive/import/", {"tool": "fio", "output": "x", "axes": "no-equals"}
    )
    assert "is not name=value" in response.content.decode()


def test_archive_search_filters(owner_client, team, django_assert_max_num_queries):
    a = make_run(
        team,
        name="oltp nightly",
        tool="sysbench",
        tags=["nightly", "s2"],
        cells=[({"target": "db8"}, 1, {"tps": 1.0})],
    )
    b = make_run(
        team,
        name="fio ebs",
        tool="fio",
        notes="striped volumes",
        status=Run.FAILED,
        cells=[({"target": "c1-medium"}, 1, {"read_iops": 1.0})],
    )
    for query, expected in [
        ("", [b, a]),
        ("?tool=fio", [b]),
        ("?tag=nightly", [a]),
        ("?tag=night", []),
        ("?target=db8", [a]),
        ("?status=failed", [b]),
        ("?q=striped", [b]),
        ("?q=OLTP", [a]),
        ("?since=2000-01-01", [b, a]),
        ("?until=2000-01-01", []),
    ]:
        # session, user, team, runs, tags, team switcher + the session write (3)
        with django_assert_max_num_queries(9):
            response = owner_client.get("/archive/" + query)
        assert response.context["runs"] == expected, query
    assert response.context["tags"] == ["nightly", "s2"]


def test_tags_and_notes(owner_client, member_client, team, outsider, client):
    run = make_run(team)
    owner_client.post(f"/runs/{run.pk}/annotate/", {"tags": "s2, nightly s2", "notes": "burst"})
    run.refresh_from_db()
    assert (run.tags, run.notes) == (["s2", "nightly"], "burst")
    member_client.post(f"/runs/{run.pk}/annotate/", {"tags": "", "notes": ""})
    run.refresh_from_db()
    assert run.tags == []
    client.force_login(outsider)
    assert client.post(f"/runs/{run.pk}/annotate/", {"tags": "x"}).status_code == 404


def test_archive_pages_outsider_sees_nothing(team, outsider, client):
    run = make_run(team, name="secret-study")
    client.force_login(outsider)
    assert "secret-study" not in client.get("/archive/").content.decode()
    for url in (f"/runs/{run.pk}/export.csv", f"/runs/{run.pk}/export.json"):
        assert client.get(url).status_code == 404


@pytest.fixture
def run_with_canary(team):
    """A run against a target whose credential password is a canary; its cell's
    command and facts carry the secret as if an unmasked line had slipped in."""
    cred = Credential(team=team, name="db-pw", kind=Credential.PASSWORD)
    cred.set_secret(CANARY)
    cred.save()
    Target.objects.create(team=team, name="db8", host="127.0.0.1", user="sb", credential=cred)
    run = make_run(
        team,
        name="oltp",
        cells=[
            (
                {"target": "db8", "threads": 4},
                1,
                {"tps": 100.0},
                {
                    "command": "sysbench oltp_read_write --mysql-password=**** --threads=4",
                    "facts": {"client": {"cpus": 8}, "note": f"pw {CANARY}"},
                },
            ),
            (
                {"target": "db8", "threads": 8},
                1,
                {"tps": 150.0},
                {"command": f"sysbench oltp_read_write --mysql-password={CANARY} --threads=8"},
            ),
        ],
    )
    run.document = {
        **run.document,
        "targets": [
            {
                "name": "db8",
                "host": "127.0.0.1",
                "credential": "db-pw",
                "password_env": "DB_PASSWORD",
            }
        ],
    }
    run.save()
    return run


def test_exports_contain_measurements_and_no_secrets(owner_client, run_with_canary):
    run = run_with_canary
    response = owner_client.get(f"/runs/{run.pk}/export.csv")
    assert response["Content-Type"] == "text/csv"
    assert response["Content-Disposition"] == f'attachment; filename="run-{run.pk}.csv"'
    body = response.content.decode()
    assert CANARY not in body
    rows = list(csv.DictReader(io.StringIO(body)))
    assert [(r["axis:threads"], r["metric"], float(r["value"]), r["unit"]) for r in rows] == [
        ("4", "tps", 100.0, "tps"),
        ("8", "tps", 150.0, "tps"),
    ]
    body = owner_client.get(f"/runs/{run.pk}/export.json").content.decode()
    assert CANARY not in body
    doc = json.loads(body)
    cells = doc["runs"][0]["cells"]
    assert [c["command"] for c in cells] == [
        "sysbench oltp_read_write --mysql-password=**** --threads=4",
        "sysbench oltp_read_write --mysql-password=**** --threads=8",
    ]
    assert cells[0]["measurements"] == [
        {"group": "", "metric": "tps", "value": 100.0, "unit": "tps"}
    ]  # from the metric catalog
    assert "password_env" not in json.dumps(doc["runs"][0]["plan"])
    assert doc["runs"][0]["plan"]["targets"][0]["credential"] == "db-pw"  # a name, not a secret


def test_export_skips_earlier_attempts(owner_client, team):
    run = make_run(team, cells=[({"threads": 1}, 1, {"tps": 5.0}, {"attempt": 2})])
    measure(Cell.objects.get(run=run), "tps", 999.0, attempt=1)
    doc = json.loads(owner_client.get(f"/runs/{run.pk}/export.json").content)
    assert [m["value"] for m in doc["runs"][0]["cells"][0]["measurements"]] == [5.0]


def test_a_pasted_output_without_its_final_newline_is_whole(owner_client, team):
    """A copy from a terminal drops the last newline; mysqlslap's last line ends
    in a number, which the parser would otherwise read as cut short."""
    text = _fixture("mysqlslap", "mysqlslap_load_update.out").rstrip("\n")
    response = owner_client.post(
        "/archive/import/", {"tool": "mysqlslap", "name": "pasted", "axes": "", "output": text}
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    cell = Run.objects.get(team=team, name="pasted").cells.get()
    assert cell.status == "succeeded" and cell.error == ""
