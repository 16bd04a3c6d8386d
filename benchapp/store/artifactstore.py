"""The artifact store: every non-empty stream of a raw output (Artifact) is
one object in Django's "artifacts" storage (settings.STORAGES, set by
BENCHBOARD_ARTIFACTS: files under var/artifacts by default, or an
S3-compatible bucket through django-storages).

PostgreSQL keeps an OutputBlob per object: its key, size, sha256 and the
stream's first and last KiB. The pages read the object in ranges and stream
downloads in chunks: Django's File API on S3 (django-storages' S3File)
downloads the whole object before the first read, so both backends add
read_range() and chunks() (FileArtifactStorage here, S3ArtifactStorage in
benchapp.store.artifactstore_s3, which imports boto3 only when configured).
"""

from __future__ import annotations

import gzip
import hashlib
import logging
import uuid
from collections.abc import Iterator
from datetime import timedelta

from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, storages
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone

from benchapp.models import Artifact, CellProfile, OutputBlob

log = logging.getLogger(__name__)

GLANCE_CHARS = 1024  # the first and last KiB kept in the database
CHUNK_BYTES = 4 * 1024 * 1024  # one download chunk held in the web process
STREAMS = ("stdout", "stderr")


class StoreError(Exception):
    """An object the store does not have, or a store that did not answer.
    str() is a sentence for the page (it names the key, never a credential)."""


class FileArtifactStorage(FileSystemStorage):
    """The filesystem default, with the two reads the pages need."""

    def read_range(self, name: str, start: int, length: int) -> bytes:
        with self.open(name, "rb") as file:
            file.seek(start)
            return file.read(length)

    def chunks(self, name: str, size: int) -> Iterator[bytes]:
        """Opens the object now (a missing one raises here, not mid-download)."""
        return _read_chunks(self.open(name, "rb"), size)


def _read_chunks(file, size: int) -> Iterator[bytes]:
    with file:
        while data := file.read(size):
            yield data


def store():
    return storages["artifacts"]


def new_blob(cell, stream: str, text: str) -> OutputBlob | None:
    """Writes one stream into the store; the unsaved OutputBlob describing it
    (its artifact still to be set), or None for an empty stream."""
    if not text:
        return None
    data = text.encode()
    # A fresh name per object: a retried attempt or a moved output never
    # overwrites another one, and the key says whose output it is.
    name = f"outputs/run-{cell.run_id}/cell-{cell.pk}/{uuid.uuid4().hex}.{stream}.txt"
    try:
        key = store().save(name, ContentFile(data))
    except OSError as exc:  # the filesystem store full or unwritable
        raise StoreError(f"the artifact store did not take {name}: {exc.strerror}") from None
    whole = len(text) <= 2 * GLANCE_CHARS  # head and tail would overlap: keep it whole
    return OutputBlob(
        stream=stream,
        key=key,
        size=len(data),
        sha256=hashlib.sha256(data).hexdigest(),
        head=text if whole else text[:GLANCE_CHARS],
        tail="" if whole else text[-GLANCE_CHARS:],
    )


def save_profile(cell, attempt: int, profile, folded: str) -> CellProfile:
    """Writes one profile's folded stacks (runners.profiles.folded_text),
    gzip-compressed, into the store; the unsaved CellProfile that names it."""
    data = gzip.compress(folded.encode(), mtime=0)
    name = f"profiles/run-{cell.run_id}/cell-{cell.pk}/{uuid.uuid4().hex}.{profile.role}.folded.gz"
    try:
        key = store().save(name, ContentFile(data))
    except OSError as exc:
        raise StoreError(f"the artifact store did not take {name}: {exc.strerror}") from None
    return CellProfile(
        cell=cell,
        attempt=attempt,
        role=profile.role,
        host=profile.host,
        process=profile.process[:64],
        samples=profile.samples,
        key=key,
        size=len(data),
    )


def read_profile(profile: CellProfile) -> str:
    """A profile's folded stacks as text; StoreError when its object is gone."""
    data = b"".join(_call(profile, lambda s: s.chunks(profile.key, CHUNK_BYTES)))
    return gzip.decompress(data).decode()


def create_artifacts(rows: list[tuple[Artifact, dict[str, str]]]) -> None:
    """Saves each Artifact and writes its streams ({"stdout": text, ...}) to
    the store. A stream the store does not take (unreachable, full) is kept
    in the artifact's database column instead, so a store outage loses no
    cell; `move_artifacts` moves it later. Inside the caller's transaction:
    an object written before a rollback stays in the store unreferenced."""
    blobs = []
    for artifact, streams in rows:
        for stream, text in streams.items():
            try:
                blob = new_blob(artifact.cell, stream, text)
            except StoreError as exc:
                log.warning("output kept in the database: %s", exc)
                setattr(artifact, stream, text)
                continue
            if blob is not None:
                blobs.append((artifact, blob))
    Artifact.objects.bulk_create([artifact for artifact, _ in rows])
    for artifact, blob in blobs:
        blob.artifact = artifact
    OutputBlob.objects.bulk_create([blob for _, blob in blobs])


def move_to_store(artifact_id: int) -> int:
    """Moves an artifact's streams still kept in its database columns into
    the store (and empties the columns); returns how many it moved."""
    with transaction.atomic():
        artifact = Artifact.objects.select_for_update().select_related("cell").get(pk=artifact_id)
        blobs = [new_blob(artifact.cell, s, getattr(artifact, s)) for s in STREAMS]
        blobs = [b for b in blobs if b is not None]
        for blob in blobs:
            blob.artifact = artifact
        OutputBlob.objects.bulk_create(blobs)
        Artifact.objects.filter(pk=artifact_id).update(stdout="", stderr="")
    return len(blobs)


def read_range(blob: OutputBlob, start: int, length: int) -> str:
    """length bytes of the object from start, as text (a character cut at
    either edge is dropped)."""
    return _call(blob, lambda s: s.read_range(blob.key, start, length)).decode("utf-8", "ignore")


def chunks(blob: OutputBlob) -> Iterator[bytes]:
    """The whole object, CHUNK_BYTES at a time; StoreError now if it is gone."""
    return _call(blob, lambda s: s.chunks(blob.key, CHUNK_BYTES))


def text(artifact: Artifact, stream: str) -> str:
    """A stream's whole text, for callers that need it all (exports of a
    few outputs, tests): its object, or the column of an output not moved."""
    blob = artifact.blobs.filter(stream=stream).first()
    if blob is None:
        return getattr(artifact, stream)
    return b"".join(chunks(blob)).decode()


def delete(blob: OutputBlob) -> None:
    _call(blob, lambda s: s.delete(blob.key))


def _call(blob, operation):
    try:
        return operation(store())
    except FileNotFoundError:
        raise StoreError(f"the artifact store has no object {blob.key}") from None
    except OSError as exc:
        raise StoreError(f"the artifact store could not read {blob.key}: {exc.strerror}") from None


@receiver(post_delete, sender=CellProfile)
@receiver(post_delete, sender=OutputBlob)
def _delete_object(sender, instance, **kwargs) -> None:
    """A deleted row (its run or cell deleted, an attempt recorded again)
    takes its object along once the deletion is committed."""

    def delete_quietly():
        try:
            delete(instance)
        except StoreError as exc:
            log.warning("artifact object not deleted: %s", exc)

    transaction.on_commit(delete_quietly)


ORPHAN_SECONDS = 3600  # a recording's objects are written before its transaction commits


def sweep_orphans(older_than: float = ORPHAN_SECONDS) -> int:
    """Delete the store's output and profile objects that no row names and that
    are older than `older_than` seconds: those of recordings rolled back
    after their objects were written. How many were deleted. One query per
    run folder (outputs/run-N/), whatever the store holds."""
    s = store()
    cutoff = timezone.now() - timedelta(seconds=older_than)
    deleted = 0
    for run_dir in _folders(s, "outputs") + _folders(s, "profiles"):
        names = _files(s, run_dir)
        kept = set(OutputBlob.objects.filter(key__in=names).values_list("key", flat=True))
        kept |= set(CellProfile.objects.filter(key__in=names).values_list("key", flat=True))
        for name in names:
            if name not in kept and s.get_modified_time(name) < cutoff:
                s.delete(name)
                deleted += 1
    return deleted


def _folders(s, path: str) -> list[str]:
    try:
        folders, _files_here = s.listdir(path)
    except FileNotFoundError:
        return []
    return [f"{path}/{f}" for f in folders]


def _files(s, path: str) -> list[str]:
    """Every object under path, its subfolders' too."""
    folders, files = s.listdir(path)
    out = [f"{path}/{f}" for f in files]
    for folder in folders:
        out += _files(s, f"{path}/{folder}")
    return out
