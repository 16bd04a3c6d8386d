"""Raw outputs in the artifact store (benchapp.store.artifactstore): the filesystem
default and S3 through moto_server, the page's excerpts and the download read
from the store, a missing object is a message (never a 500), and
move_artifacts moves outputs kept in the database."""

from __future__ import annotations

import hashlib
import os
import time
import tracemalloc
from io import StringIO
from pathlib import Path

import boto3
import pytest
from django.core.files.storage import storages
from django.core.management import call_command
from django.db import transaction
from django.urls import reverse

from benchapp.analysis import rawoutput
from benchapp.models import Artifact, Cell, OutputBlob, Run
from benchapp.settings import artifact_storage
from benchapp.store import artifactstore
from tests.support.moto import free_port, moto_endpoint, moto_server  # noqa: F401

BIG = "first line\n" + "x" * (3 * rawoutput.EXCERPT_CHARS) + "\nlast line"
BUCKET = "bb-artifacts"
PKB = Path(__file__).resolve().parents[2] / "fixtures" / "pkb"


@pytest.fixture
def file_store(settings, tmp_path):
    settings.STORAGES = {**settings.STORAGES, "artifacts": artifact_storage(str(tmp_path), "", "")}
    return tmp_path


@pytest.fixture
def s3_store(settings, moto_endpoint):  # noqa: F811
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").create_bucket(
        Bucket=BUCKET
    )
    settings.STORAGES = {
        **settings.STORAGES,
        "artifacts": artifact_storage(f"s3://{BUCKET}/team-outputs", moto_endpoint, "us-east-1"),
    }
    return boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")


def recorded(team, streams: dict[str, str]) -> Artifact:
    """A finished cell with one measure output recorded through the store."""
    run = Run.objects.create(team=team, name="r", tool="fio", status=Run.SUCCEEDED, document={})
    cell = Cell.objects.create(run=run, index=1, key="k", status=Cell.SUCCEEDED)
    artifact = Artifact(cell=cell, attempt=1, phase="measure", exit_code=0)
    artifactstore.create_artifacts([(artifact, streams)])
    return artifact


def page(client, artifact) -> str:
    url = reverse("cell_artifacts", args=[artifact.cell.run_id, artifact.cell_id])
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def download(client, artifact, stream="stdout"):
    cell = artifact.cell
    url = reverse("cell_artifact_download", args=[cell.run_id, cell.pk, artifact.pk, stream])
    return client.get(url)


def full_text(response) -> str:
    return b"".join(response.streaming_content).decode()


def test_output_is_an_object_described_in_the_database(owner_client, team, file_store):
    artifact = recorded(team, {"stdout": BIG, "stderr": ""})
    (blob,) = OutputBlob.objects.filter(artifact=artifact)  # no object for an empty stream
    data = BIG.encode()
    assert (blob.stream, blob.size, blob.sha256) == (
        "stdout",
        len(data),
        hashlib.sha256(data).hexdigest(),
    )
    assert (blob.head, blob.tail) == (BIG[:1024], BIG[-1024:])
    assert (file_store / blob.key).read_bytes() == data
    assert Artifact.objects.get(pk=artifact.pk).stdout == ""  # not in PostgreSQL
    html = page(owner_client, artifact)
    assert "first line" in html and "last line" in html
    assert f"{len(data) - 2 * rawoutput.EXCERPT_CHARS} bytes not shown" in html
    assert len(html) < 3 * rawoutput.EXCERPT_CHARS
    assert full_text(download(owner_client, artifact)) == BIG


def test_short_output_is_shown_whole(owner_client, team, file_store):
    artifact = recorded(team, {"stdout": "tps: 12.5\n", "stderr": "warning: é\n"})
    html = page(owner_client, artifact)
    assert "tps: 12.5" in html and "warning: é" in html and "not shown" not in html
    assert artifactstore.text(artifact, "stderr") == "warning: é\n"


def test_missing_object_is_a_message_not_an_error(owner_client, team, file_store):
    artifact = recorded(team, {"stdout": BIG})
    blob = artifact.blobs.get()
    (file_store / blob.key).unlink()
    html = page(owner_client, artifact)
    assert f"not readable: the artifact store has no object {blob.key}" in html
    assert "first line" in html and "last line" in html  # the KiB kept in the database
    response = download(owner_client, artifact)
    assert response.status_code == 404
    assert f"has no object {blob.key}" in response.content.decode()


def test_s3_store_holds_the_output_under_its_prefix(owner_client, team, s3_store):
    artifact = recorded(team, {"stdout": BIG, "stderr": "err\n"})
    stdout = artifact.blobs.get(stream="stdout")
    body = s3_store.get_object(Bucket=BUCKET, Key=f"team-outputs/{stdout.key}")["Body"].read()
    assert body == BIG.encode()
    html = page(owner_client, artifact)
    assert "first line" in html and "last line" in html and "err" in html
    assert full_text(download(owner_client, artifact)) == BIG
    assert full_text(download(owner_client, artifact, "stderr")) == "err\n"


def test_s3_missing_object_is_a_message(owner_client, team, s3_store):
    artifact = recorded(team, {"stdout": BIG})
    blob = artifact.blobs.get()
    s3_store.delete_object(Bucket=BUCKET, Key=f"team-outputs/{blob.key}")
    assert "has no object" in page(owner_client, artifact)
    assert download(owner_client, artifact).status_code == 404


def test_s3_unreachable_is_a_message_without_the_keys(
    owner_client, team, s3_store, settings, monkeypatch, caplog
):
    artifact = recorded(team, {"stdout": "tps: 1\n"})
    secret = "canary-secret-key-0042"
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    closed = f"http://127.0.0.1:{free_port()}"
    settings.STORAGES = {
        **settings.STORAGES,
        "artifacts": artifact_storage(f"s3://{BUCKET}/team-outputs", closed, "us-east-1"),
    }
    html = page(owner_client, artifact)
    assert "the artifact store did not answer" in html and "tps: 1" in html
    response = download(owner_client, artifact)
    assert response.status_code == 404 and secret not in response.content.decode()
    assert secret not in html
    # Recording while the store is down: kept in the database, logged without the keys.
    with caplog.at_level("WARNING"):
        kept = recorded(team, {"stdout": "tps: 2\n"})
    assert Artifact.objects.get(pk=kept.pk).stdout == "tps: 2\n"
    assert "output kept in the database: the artifact store did not take" in caplog.text
    assert secret not in caplog.text


def test_move_artifacts_moves_database_outputs(team, file_store):
    run = Run.objects.create(team=team, name="old", tool="fio", status=Run.SUCCEEDED, document={})
    cell = Cell.objects.create(run=run, index=1, key="k", status=Cell.SUCCEEDED)
    old = Artifact.objects.create(cell=cell, phase="measure", stdout=BIG, stderr="e\n")
    empty = Artifact.objects.create(cell=cell, phase="prepare")
    out = StringIO()
    call_command("move_artifacts", stdout=out)
    assert out.getvalue().strip() == "1 artifacts moved (2 streams) to the artifact store"
    old.refresh_from_db()
    assert (old.stdout, old.stderr) == ("", "")
    assert artifactstore.text(old, "stdout") == BIG and artifactstore.text(old, "stderr") == "e\n"
    assert not empty.blobs.exists()
    out = StringIO()
    call_command("move_artifacts", stdout=out)  # again: nothing left to move
    assert out.getvalue().startswith("0 artifacts moved")


def test_deleting_a_run_deletes_its_objects(team, file_store, django_capture_on_commit_callbacks):
    artifact = recorded(team, {"stdout": "a\n", "stderr": "b\n"})
    keys = list(artifact.blobs.values_list("key", flat=True))
    assert all((file_store / key).exists() for key in keys)
    with django_capture_on_commit_callbacks(execute=True):
        artifact.cell.run.delete()
    assert not any((file_store / key).exists() for key in keys)


@pytest.mark.parametrize(
    ("url", "endpoint", "expected"),
    [
        (
            "s3://bkt/some/prefix/",
            "",
            {"bucket_name": "bkt", "location": "some/prefix", "region_name": "r"},
        ),
        (
            "s3://bkt",
            "http://minio:9000",
            {
                "bucket_name": "bkt",
                "location": "",
                "region_name": "r",
                "endpoint_url": "http://minio:9000",
            },
        ),
        ("/srv/artifacts", "", {"location": "/srv/artifacts"}),
    ],
)
def test_artifact_storage_setting(url, endpoint, expected):
    assert artifact_storage(url, endpoint, "r")["OPTIONS"] == expected


@pytest.mark.parametrize("url", ["s3://", "relative/dir", "gs://bucket"])
def test_artifact_storage_refuses_what_it_cannot_use(url):
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match="BENCHBOARD_ARTIFACTS"):
        artifact_storage(url, "", "r")


def test_default_store_is_the_filesystem_under_var(settings):
    store = storages.create_storage(artifact_storage("", "", ""))
    assert isinstance(store, artifactstore.FileArtifactStorage)
    assert store.location == str(settings.VAR_DIR / "artifacts")


def test_pkb_import_keeps_the_imported_file(member_client, team, file_store):
    text = (PKB / "iperf_samples.jsonl").read_text()
    member_client.post("/archive/import/", {"tool": "pkb", "output": text, "name": "from PKB"})
    run = Run.objects.get(team=team, name="from PKB")
    kept = Artifact.objects.get(cell__run=run, phase="import")
    assert kept.cell.index == 1 and artifactstore.text(kept, "stdout") == text


def test_s3_download_holds_one_chunk_at_a_time(owner_client, team, s3_store):
    size = 24 * 1024 * 1024
    artifact = recorded(team, {"stdout": "z" * size})
    tracemalloc.start()
    try:
        response = download(owner_client, artifact)
        total = sum(len(chunk) for chunk in response.streaming_content)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == size
    # Chunks of 4 MiB (plus the HTTP client's buffers), never the 24 MiB object.
    assert peak < 3 * artifactstore.CHUNK_BYTES


def test_output_the_store_refuses_is_kept_in_the_database(owner_client, team, settings, tmp_path):
    full = tmp_path / "not-a-directory"
    full.write_text("")  # the store's location is a file: every save fails
    settings.STORAGES = {**settings.STORAGES, "artifacts": artifact_storage(str(full), "", "")}
    artifact = recorded(team, {"stdout": "tps: 7\n"})
    assert not artifact.blobs.exists()
    assert Artifact.objects.get(pk=artifact.pk).stdout == "tps: 7\n"
    assert "tps: 7" in page(owner_client, artifact)
    settings.STORAGES = {
        **settings.STORAGES,
        "artifacts": artifact_storage(str(tmp_path / "ok"), "", ""),
    }
    call_command("move_artifacts", stdout=StringIO())
    assert artifact.blobs.get().size == len("tps: 7\n")
    assert Artifact.objects.get(pk=artifact.pk).stdout == ""


def test_sweep_deletes_objects_of_rolled_back_recordings_after_an_hour(team, file_store):
    kept = recorded(team, {"stdout": "a\n", "stderr": "b\n"})
    cell = kept.cell
    orphans = []
    for _ in range(2):
        with pytest.raises(RuntimeError), transaction.atomic():
            orphans.append(artifactstore.new_blob(cell, "stdout", "rolled back\n").key)
            raise RuntimeError("the recording failed after writing its object")
    assert not OutputBlob.objects.filter(key__in=orphans).exists()
    old = time.time() - 2 * 3600
    for key in [orphans[0], *kept.blobs.values_list("key", flat=True)]:
        os.utime(file_store / key, (old, old))
    out = StringIO()
    call_command("sweep_artifacts", stdout=out)
    assert out.getvalue().strip() == "1 orphaned objects deleted"
    assert not (file_store / orphans[0]).exists()
    assert (file_store / orphans[1]).exists()  # younger than an hour: maybe still recording
    assert (
        artifactstore.text(kept, "stdout") == "a\n" and artifactstore.text(kept, "stderr") == "b\n"
    )
