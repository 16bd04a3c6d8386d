"""The S3 backend of the artifact store (BENCHBOARD_ARTIFACTS=s3://...):
django-storages' S3Storage with range reads and chunked downloads
(benchapp.store.artifactstore explains why). Imported by Django's storage
handler only when configured, so boto3 loads only then."""

from __future__ import annotations

from collections.abc import Iterator

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from storages.backends.s3 import S3Storage
from storages.utils import clean_name

from benchapp.store.artifactstore import StoreError

MISSING = {"NoSuchKey", "404", "NotFound"}


class S3ArtifactStorage(S3Storage):
    def __init__(self, **settings):
        super().__init__(**settings)
        # A page waits on the store: seconds, not botocore's default of a
        # 60 s connect timeout tried 5 times against an unreachable endpoint.
        self.client_config = self.client_config.merge(
            Config(
                connect_timeout=5, read_timeout=30, retries={"max_attempts": 3, "mode": "standard"}
            )
        )

    def _save(self, name, content):
        try:
            return super()._save(name, content)
        except (BotoCoreError, ClientError) as exc:
            raise StoreError(f"the artifact store did not take {name}: {_reason(exc)}") from None

    def delete(self, name):
        try:
            super().delete(name)
        except (BotoCoreError, ClientError) as exc:
            raise StoreError(f"the artifact store did not delete {name}: {_reason(exc)}") from None

    def read_range(self, name: str, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        return self._get(name, Range=f"bytes={start}-{start + length - 1}").read()

    def chunks(self, name: str, size: int) -> Iterator[bytes]:
        """GETs the object now (a missing one raises here, not mid-download)."""
        body = self._get(name)
        return _iter_body(body, size)

    def _get(self, name: str, **params):
        obj = self.bucket.Object(self._normalize_name(clean_name(name)))
        try:
            return obj.get(**params)["Body"]
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code", "") in MISSING:
                raise FileNotFoundError(name) from None
            raise StoreError(f"the artifact store refused {name}: {_reason(exc)}") from None
        except BotoCoreError as exc:
            raise StoreError(
                f"the artifact store did not answer for {name}: {_reason(exc)}"
            ) from None


def _reason(exc: Exception) -> str:
    """The S3 error code, or botocore's message (which names the endpoint,
    never the credentials)."""
    if isinstance(exc, ClientError):
        return exc.response.get("Error", {}).get("Code", "") or "error"
    return str(exc)


def _iter_body(body, size: int) -> Iterator[bytes]:
    try:
        yield from body.iter_chunks(size)
    finally:
        body.close()
