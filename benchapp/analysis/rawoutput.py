"""Raw outputs (Artifact streams) without loading them whole.

An output can be hundreds of MiB (a long fio or pgbench log). The cell's
output page shows the first and the last EXCERPT_CHARS of each stream, read
as two ranges of its object in the artifact store (benchapp.store.artifactstore);
the full text is downloaded in chunks, so the web process holds one chunk at
a time. When the object is gone (expired by retention, or missing from the
store) the page says so and shows the first and last KiB the database keeps.

Outputs recorded before the store existed still sit in Artifact.stdout/
stderr until `manage.py move_artifacts`: those are cut in the database and
downloaded in slices of SLICE_CHARS, as before.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Prefetch, QuerySet
from django.db.models.functions import Length, Right, Substr

from benchapp.models import Artifact, OutputBlob
from benchapp.store import artifactstore

EXCERPT_CHARS = 64 * 1024  # bytes of an object in the store, characters of a column
SLICE_CHARS = 4 * 1024 * 1024
STREAMS = artifactstore.STREAMS


def excerpts(artifacts: QuerySet) -> list[dict]:
    """One dict per artifact: {"artifact": it, "stdout": ..., "stderr": ...},
    each stream {"length", "unit", "head", "tail", "cut", "omitted", "gone"};
    `tail` is empty when `head` is all, `gone` says why the object could not
    be read (else "")."""
    rows = []
    for artifact in _with_column_excerpts(artifacts).prefetch_related(
        Prefetch("blobs", queryset=OutputBlob.objects.all(), to_attr="stored")
    ):
        stored = {blob.stream: blob for blob in artifact.stored}
        row = {"artifact": artifact}
        for stream in STREAMS:
            blob = stored.get(stream)
            row[stream] = _stored(blob) if blob else _in_column(artifact, stream)
        rows.append(row)
    return rows


def _stored(blob: OutputBlob) -> dict:
    """The excerpt of a stream in the store: read there, or the database's
    first and last KiB with the reason when the object is gone."""
    size = blob.size
    if blob.expired_at:
        gone = f"expired on {blob.expired_at:%Y-%m-%d} by retention (BENCHBOARD_RAW_RETENTION_DAYS)"
        return _glance(blob, gone)
    try:
        if size <= 2 * EXCERPT_CHARS:
            return _excerpt(size, "bytes", artifactstore.read_range(blob, 0, size), "")
        head = artifactstore.read_range(blob, 0, EXCERPT_CHARS)
        tail = artifactstore.read_range(blob, size - EXCERPT_CHARS, EXCERPT_CHARS)
    except artifactstore.StoreError as exc:
        return _glance(blob, f"not readable: {exc}")
    return _excerpt(size, "bytes", head, tail, omitted=size - 2 * EXCERPT_CHARS)


def _glance(blob: OutputBlob, gone: str) -> dict:
    """The first and last KiB kept in the database, for an object that is gone."""
    row = _excerpt(blob.size, "bytes", blob.head, blob.tail)
    row["gone"] = gone
    row["omitted"] = max(blob.size - len(blob.head.encode()) - len(blob.tail.encode()), 0)
    return row


def _excerpt(length: int, unit: str, head: str, tail: str, omitted: int = 0) -> dict:
    return {
        "length": length,
        "unit": unit,
        "head": head,
        "tail": tail,
        "cut": bool(tail),
        "omitted": omitted,
        "gone": "",
    }


def _with_column_excerpts(artifacts: QuerySet) -> QuerySet:
    """Annotates the lengths, heads and tails of the streams still in the
    database columns (cut in the database, never fetched whole)."""
    annotations = {}
    for stream in STREAMS:
        annotations[f"{stream}_length"] = Length(stream)
        annotations[f"{stream}_head"] = Substr(stream, 1, EXCERPT_CHARS)
        annotations[f"{stream}_tail"] = Right(stream, EXCERPT_CHARS)
    return artifacts.defer(*STREAMS).annotate(**annotations)


def _in_column(artifact, stream: str) -> dict:
    length = getattr(artifact, f"{stream}_length") or 0
    if length > 2 * EXCERPT_CHARS:
        head = getattr(artifact, f"{stream}_head")
        tail = getattr(artifact, f"{stream}_tail")
        return _excerpt(length, "characters", head, tail, omitted=length - 2 * EXCERPT_CHARS)
    return _excerpt(length, "characters", _whole(artifact, stream, length), "")


def _whole(artifact, stream: str, length: int) -> str:
    """An output no longer than two excerpts: head + tail overlap, so fetch it
    whole (at most 2 * EXCERPT_CHARS)."""
    head = getattr(artifact, f"{stream}_head")
    if length <= EXCERPT_CHARS:
        return head
    return head + getattr(artifact, f"{stream}_tail")[-(length - EXCERPT_CHARS) :]


def download(artifact_id: int, stream: str) -> Iterator[str | bytes]:
    """The full text of one stream: the object's chunks, or the database
    column's slices for an output not yet moved. StoreError (before any
    chunk) when the object is expired or missing."""
    assert stream in STREAMS
    blob = OutputBlob.objects.filter(artifact_id=artifact_id, stream=stream).first()
    if blob is None:
        return _column_slices(artifact_id, stream)
    if blob.expired_at:
        raise artifactstore.StoreError(
            f"this output expired on {blob.expired_at:%Y-%m-%d} by retention "
            "(BENCHBOARD_RAW_RETENTION_DAYS); its first and last KiB are on the cell's page"
        )
    return artifactstore.chunks(blob)


def _column_slices(artifact_id: int, stream: str) -> Iterator[str]:
    """The full text of a stream kept in its column, SLICE_CHARS at a time (one query each)."""
    length = (
        Artifact.objects.filter(pk=artifact_id)
        .annotate(n=Length(stream))
        .values_list("n", flat=True)
        .first()
    ) or 0
    for start in range(1, length + 1, SLICE_CHARS):
        yield (
            Artifact.objects.filter(pk=artifact_id)
            .annotate(part=Substr(stream, start, SLICE_CHARS))
            .values_list("part", flat=True)
            .first()
        ) or ""
