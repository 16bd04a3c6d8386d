"""Export of a run in PKB sample JSON lines and Bencher Metric Format."""

import json
from pathlib import Path

import pytest

from benchapp import crypto
from benchapp.histories import formats, pkb_import
from benchapp.models import Credential, Run
from tests.benchapp.results_data import make_run
from tests.support.measures import stored

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(team):
    return make_run(
        team,
        cells=[
            ({"threads": 4}, 1, {"tps": 100.0}),
            ({"threads": 4}, 2, {"tps": 120.0}),
            ({"threads": 8}, 1, {"tps": 200.0, "latency_avg_ms": 4.0}),
        ],
    )


def test_pkb_lines(run):
    samples = [json.loads(line) for line in formats.to_pkb_lines(run).splitlines()]
    assert [(s["metric"], s["value"]) for s in samples] == [
        ("tps", 100.0),
        ("tps", 120.0),
        ("latency_avg_ms", 4.0),
        ("tps", 200.0),
    ]
    first = samples[0]
    assert first["metadata"]["threads"] == 4 and first["metadata"]["cell_key"] == "threads=4"
    assert first["metadata"]["repeat"] == 1
    assert "|threads:4|" in first["labels"]
    assert first["timestamp"] == run.created_at.timestamp()
    assert len({s["sample_uri"] for s in samples}) == 4


def test_bmf(run):
    assert formats.to_bmf(run) == {
        "threads=4": {"tps": {"value": 110.0, "lower_value": 100.0, "upper_value": 120.0}},
        "threads=8": {
            "latency_avg_ms": {"value": 4.0, "lower_value": 4.0, "upper_value": 4.0},
            "tps": {"value": 200.0, "lower_value": 200.0, "upper_value": 200.0},
        },
    }


# ---------------------------------------------------------------- URLs and import

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "pkb"


def test_export_urls_are_linked_and_download(member_client, run):
    page = member_client.get(f"/runs/{run.pk}/results/").content.decode()
    assert f"/runs/{run.pk}/export.pkb.jsonl" in page and f"/runs/{run.pk}/export.bmf.json" in page
    pkb = member_client.get(f"/runs/{run.pk}/export.pkb.jsonl")
    assert pkb["Content-Disposition"] == f'attachment; filename="run-{run.pk}.pkb.jsonl"'
    assert len(pkb.content.decode().splitlines()) == 4
    bmf = member_client.get(f"/runs/{run.pk}/export.bmf.json")
    assert json.loads(bmf.content)["threads=4"]["tps"]["value"] == 110.0


def test_exports_are_team_scoped(outsider_client, run):
    assert outsider_client.get(f"/runs/{run.pk}/export.pkb.jsonl").status_code == 404
    assert outsider_client.get(f"/runs/{run.pk}/export.bmf.json").status_code == 404


def test_pkb_export_scrubs_team_secrets(team, run):
    Credential.objects.create(
        team=team, name="db", kind=Credential.PASSWORD, encrypted=crypto.encrypt("hunter2-secret")
    )
    cell = run.cells.first()
    cell.axes = {**cell.axes, "dsn": "mysql://u:hunter2-secret@db"}
    cell.save()
    text = formats.to_pkb_lines(run)
    assert "hunter2-secret" not in text and "mysql://u:" in text


def test_import_samples_written_by_pkb_publisher(member_client, team):
    text = (FIXTURES / "iperf_samples.jsonl").read_text()
    response = member_client.post(
        "/archive/import/", {"tool": "pkb", "output": text, "name": "iperf from PKB"}
    )
    run = Run.objects.get(team=team, name="iperf from PKB")
    assert response.status_code == 302 and response.url == f"/runs/{run.pk}/results/"
    assert (run.origin, run.tool, run.status) == ("import", "iperf", Run.SUCCEEDED)
    cells = list(run.cells.order_by("index"))
    # 5 samples: three PKB runs of one configuration, two of another.
    assert sorted((c.key.split(",")[0], c.repeat) for c in cells) == [
        ("receiving_machine_type=n1-standard-4", 1),
        ("receiving_machine_type=n1-standard-4", 2),
        ("receiving_machine_type=n1-standard-4", 3),
        ("receiving_machine_type=n1-standard-8", 1),
        ("receiving_machine_type=n1-standard-8", 2),
    ]
    assert set(cells[0].axes) == {
        "receiving_machine_type",
        "receiving_zone",
        "sending_machine_type",
        "sending_zone",
    }
    assert cells[0].facts["pkb_metadata"]["cloud"] == "GCP"
    assert cells[0].facts["run_uri"] == "11084bdc-ca93-4e09-be95-4ad76c562392"
    index = dict(run.cells.values_list("pk", "index"))
    values = [
        (m.metric, m.value, m.unit)
        for m in sorted(stored(runs=[run.pk]), key=lambda m: index[m.cell_id])
    ]
    assert cells[0].key.startswith("receiving_machine_type=n1-standard-4,")
    first = json.loads(text.splitlines()[0])
    assert values[0] == ("TCP Throughput", float(first["value"]), "Mbits/sec")
    assert len(values) == 5
    assert run.started_at.timestamp() == min(
        json.loads(line)["timestamp"] for line in text.splitlines()
    )


def test_import_pkb_samples_with_metadata_objects(team):
    run = pkb_import.import_samples(team, (FIXTURES / "mpi_samples.jsonl").read_text())
    axes = dict(run.cells.values_list("pk", "axes"))
    by_metric = {(axes[m.cell_id]["bytes"], m.metric): m.value for m in stored(runs=[run.pk])}
    assert by_metric[(1024, "time_avg")] == 59.15 and by_metric[(2048, "time_avg")] == 66.4
    assert all(c.facts["pkb_metadata"]["mpi_vendor"] == "intel" for c in run.cells.all())


def test_own_export_round_trips(team, run):
    back = pkb_import.import_samples(team, formats.to_pkb_lines(run))
    assert formats.to_bmf(back) == formats.to_bmf(run)
    assert sorted(back.cells.values_list("key", "repeat")) == sorted(
        run.cells.values_list("key", "repeat")
    )


@pytest.mark.parametrize(
    "line, message",
    [
        ('{"metric": "tps", "value": "fast"}', "not a finite number"),
        ('{"metric": "tps", "value": NaN}', "not a finite number"),
        ('{"value": 3}', "no metric"),
        ("not json", "not JSON"),
    ],
)
def test_import_refuses_what_is_not_a_sample(member_client, team, line, message):
    good = (FIXTURES / "iperf_samples.jsonl").read_text().splitlines()[0]
    response = member_client.post("/archive/import/", {"tool": "pkb", "output": good + "\n" + line})
    assert response.status_code == 200 and message in response.content.decode()
    assert "line 2" in response.content.decode()
    assert not Run.objects.filter(team=team, origin="import").exists()


def test_imported_cells_are_keyed_as_plans_key_them(team):
    """One cell-key function: a PKB import keys booleans and floats as a plan does."""
    lines = "\n".join(
        json.dumps(
            {
                "metric": "tps",
                "value": value,
                "unit": "",
                "timestamp": 1.0 + i,
                "run_uri": "r",
                "metadata": {"direct": direct, "ratio": ratio},
            }
        )
        for i, (direct, ratio, value) in enumerate([(True, 0.5, 1.0), (False, 2.0, 2.0)])
    )
    run = pkb_import.import_samples(team, lines)
    assert sorted(run.cells.values_list("key", flat=True)) == [
        "direct=false,ratio=2.0",
        "direct=true,ratio=0.5",
    ]
