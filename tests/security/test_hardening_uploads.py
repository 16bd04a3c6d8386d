"""Raw-output imports are read in chunks and refused past BENCHBOARD_MAX_UPLOAD_MB
(nothing stored); a cell's output page shows the head and tail of a long
output and streams the whole of it as a download."""

import http.client
import io
import tracemalloc
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from benchapp.analysis import rawoutput
from benchapp.models import Artifact, Cell, Run
from benchapp.store.artifactstore import text

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
    response = owner_client.post(
        "/archive/import/", {"tool": "sysbench", "file": data, "axes": "threads=4"}
    )
    assert response.status_code == 302, response.content[:2000]
    run = Run.objects.get(team=team)
    assert text(run.cells.get().artifacts.get(), "stdout") == output.decode()
    # The same output past a 1 MiB cap (padded) is refused, the run unchanged.
    padded = io.BytesIO(output + b"\n" * MIB)
    padded.name = "oltp.out"
    response = owner_client.post(
        "/archive/import/", {"tool": "sysbench", "file": padded, "run": run.pk, "axes": "threads=8"}
    )
    assert response.status_code == 413
    assert run.cells.count() == 1


def _cell_with_output(team, stdout: str, stderr: str = "") -> Cell:
    run = Run.objects.create(team=team, name="r", tool="fio", status=Run.SUCCEEDED, document={})
    cell = Cell.objects.create(
        run=run, index=1, key="k", status=Cell.SUCCEEDED, started_at=timezone.now()
    )
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


CSRF = "a" * 32  # a CSRF secret sent as both cookie and form field


def _multipart_stream(size: int, boundary: str, chunk: int = 256 * 1024):
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"'
        f'\r\n\r\n{CSRF}\r\n--{boundary}\r\nContent-Disposition: form-data; name="tool"\r\n\r\nsysbench\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="big.out"\r\nContent-Type: text/plain\r\n\r\n'
    ).encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    block = b"y" * chunk

    def body():
        yield head
        for _ in range(size // chunk):
            yield block
        yield tail

    return body(), len(head) + (size // chunk) * chunk + len(tail)


def _post_over_http(live_server, session: str, size: int):
    body, length = _multipart_stream(size, "bb-boundary")
    url = urlsplit(live_server.url)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    try:
        connection.request(
            "POST",
            "/archive/import/",
            body=body,
            headers={
                "Content-Type": "multipart/form-data; boundary=bb-boundary",
                "Content-Length": str(length),
                "Cookie": f"{settings.SESSION_COOKIE_NAME}={session}; csrftoken={CSRF}",
            },
        )
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
def test_oversized_upload_over_http_is_never_held_in_memory(live_server, owner, team, settings):
    """A real HTTP upload of 12 MiB against a 4 MiB cap, streamed by the client:
    the server counts it chunk by chunk, answers 413, and the process's Python
    heap never grows by anything near the body's size."""
    settings.BENCHBOARD_MAX_UPLOAD_MB = 4
    client = Client()
    client.force_login(owner)
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    # A first refused upload imports every module on the way (numpy among them).
    assert _post_over_http(live_server, session, 5 * MIB)[0] == 413
    tracemalloc.start()
    try:
        status, content = _post_over_http(live_server, session, 12 * MIB)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert status == 413
    assert b"larger than the 4 MiB limit" in content
    assert peak < 2 * MIB, f"peak {peak / MIB:.1f} MiB"
    assert not Run.objects.filter(team=team).exists()
