"""Raw outputs (Artifact.stdout/stderr) without loading them whole.

An output can be hundreds of MiB (a long fio or pgbench log). The cell's
output page shows the first and the last EXCERPT_CHARS of each stream, cut
in the database; the full text is downloaded in slices of SLICE_CHARS, so
the web process holds one slice at a time.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import QuerySet
from django.db.models.functions import Length, Right, Substr

from benchapp.models import Artifact

EXCERPT_CHARS = 64 * 1024
SLICE_CHARS = 4 * 1024 * 1024
STREAMS = ("stdout", "stderr")


def excerpts(artifacts: QuerySet) -> list[dict]:
    """One dict per artifact: its fields but the streams, and per stream
    {"length", "head", "tail", "cut"}; `tail` is empty when `head` is all."""
    annotations = {}
    for stream in STREAMS:
        annotations[f"{stream}_length"] = Length(stream)
        annotations[f"{stream}_head"] = Substr(stream, 1, EXCERPT_CHARS)
        annotations[f"{stream}_tail"] = Right(stream, EXCERPT_CHARS)
    rows = []
    for artifact in artifacts.defer(*STREAMS).annotate(**annotations):
        row = {"artifact": artifact}
        for stream in STREAMS:
            length = getattr(artifact, f"{stream}_length") or 0
            cut = length > 2 * EXCERPT_CHARS
            row[stream] = {
                "length": length,
                "cut": cut,
                "omitted": length - 2 * EXCERPT_CHARS,
                "head": getattr(artifact, f"{stream}_head")
                if cut
                else _whole(artifact, stream, length),
                "tail": getattr(artifact, f"{stream}_tail") if cut else "",
            }
        rows.append(row)
    return rows


def _whole(artifact, stream: str, length: int) -> str:
    """An output no longer than two excerpts: head + tail overlap, so fetch it
    whole (at most 2 * EXCERPT_CHARS)."""
    head = getattr(artifact, f"{stream}_head")
    if length <= EXCERPT_CHARS:
        return head
    return head + getattr(artifact, f"{stream}_tail")[-(length - EXCERPT_CHARS) :]


def stream_slices(artifact_id: int, stream: str) -> Iterator[str]:
    """The full text of one stream, SLICE_CHARS at a time (one query each)."""
    assert stream in STREAMS
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
