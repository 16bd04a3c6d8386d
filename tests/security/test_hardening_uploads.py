"""Raw-output imports are read in chunks and refused past BENCHBOARD_MAX_UPLOAD_MB
(nothing stored); a cell's output page shows the head and tail of a long
output and streams the whole of it as a download."""

import io
from pathlib import Path

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from benchapp import rawoutput
from benchapp.models import Artifact, Cell, Run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysbench"
MIB = 1024 * 1024


def _upload(client, size: int, name="big.out"):
    data = io.BytesIO(b"x" * size)
    data.name = name
    return client.post("/archive/import/", {"tool": "sysbench", "name": "big", "file": data})


def test_upload_past_the_default_cap_is_refused_and_nothing_stored(owner_client, team):
    cap = settings.BENCHBOARD_MAX_UPLOAD_MB * MIB
    # Within the announced-size allowance: the upload handler counts the bytes.
    response = _upload(owner_client, cap + MIB)
    assert response.status_code == 413
    assert b"larger than the 50 MiB limit" in response.content
    assert b"nothing was imported" in response.content
    assert not Run.objects.filter(team=team).exists()
    assert not Artifact.objects.exists()


def test_announced_oversized_body_is_refused_before_reading(owner_client, team):
    cap = settings.BENCHBOARD_MAX_UPLOAD_MB * MIB
    response = _upload(owner_client, cap + settings.DATA_UPLOAD_MAX_MEMORY_SIZE + MIB)
    assert response.status_code == 413
    assert response["Content-Type"].startswith("text/plain")
    assert b"BENCHBOARD_MAX_UPLOAD_MB" in response.content
    assert not Run.objects.filter(team=team).exists()


def test_upload_under_the_cap_is_imported(owner_client, team, settings):
    settings.BENCHBOARD_MAX_UPLOAD_MB = 1
    output = (FIXTURES / "public_sysbench_0412_oltp_complex.out").read_bytes()
    data = io.BytesIO(output)
    data.name = "oltp.out"
    response = owner_client.post("/archive/import/", {"tool": "sysbench", "file": data,
                                                      "axes": "threads=4"})
    assert response.status_code == 302, response.content[:2000]
    run = Run.objects.get(team=team)
    assert run.cells.get().artifacts.get().stdout == output.decode()
    # The same output past a 1 MiB cap (padded) is refused, the run unchanged.
    padded = io.BytesIO(output + b"\n" * MIB)
    padded.name = "oltp.out"
    response = owner_client.post("/archive/import/", {"tool": "sysbench", "file": padded,
                                                      "run": run.pk, "axes": "threads=8"})
    assert response.status_code == 413
    assert run.cells.count() == 1


def _cell_with_output(team, stdout: str, stderr: str = "") -> Cell:
    run = Run.objects.create(team=team, name="r", tool="fio", status=Run.SUCCEEDED,
                             document={})
    cell = Cell.objects.create(run=run, index=1, key="k", status=Cell.SUCCEEDED,
                               started_at=timezone.now())
    Artifact.objects.create(cell=cell, phase="measure", stdout=stdout, stderr=stderr)
    return cell


def test_long_output_page_shows_head_and_tail_and_downloads_whole(owner_client, team):
    middle = "MIDDLE-LINE\n" * (3 * MIB // 12)
    stdout = "HEAD-MARKER\n" + middle + "TAIL-MARKER\n"
    cell = _cell_with_output(team, stdout, stderr="warning: é\n")
    page = owner_client.get(reverse("cell_artifacts", args=[cell.run_id, cell.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "HEAD-MARKER" in body and "TAIL-MARKER" in body
    assert len(page.content) < 4 * rawoutput.EXCERPT_CHARS  # not 3 MiB
    assert "characters not shown" in body
    assert "warning: é" in body  # a short stream is shown whole
    artifact = cell.artifacts.get()
    url = reverse("cell_artifact_download", args=[cell.run_id, cell.pk, artifact.pk, "stdout"])
    assert url in body
    download = owner_client.get(url)
    assert download.status_code == 200
    assert download.streaming
    parts = [part.decode() for part in download.streaming_content]
    assert len(parts) == -(-len(stdout) // rawoutput.SLICE_CHARS)
    assert "".join(parts) == stdout
    assert "attachment" in download["Content-Disposition"]
    assert owner_client.get(url.replace("stdout.txt", "secrets.txt")).status_code == 404


def test_output_download_is_team_scoped(client, outsider, team):
    cell = _cell_with_output(team, "private output\n")
    artifact = cell.artifacts.get()
    client.force_login(outsider)
    url = reverse("cell_artifact_download", args=[cell.run_id, cell.pk, artifact.pk, "stdout"])
    assert client.get(url).status_code == 404


def test_output_just_over_one_excerpt_is_whole(owner_client, team):
    stdout = "a" * rawoutput.EXCERPT_CHARS + "b" * 100 + "END"
    cell = _cell_with_output(team, stdout)
    page = owner_client.get(reverse("cell_artifacts", args=[cell.run_id, cell.pk]))
    assert stdout in page.content.decode()
    assert "characters not shown" not in page.content.decode()
