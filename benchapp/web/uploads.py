"""The upload cap (BENCHBOARD_MAX_UPLOAD_MB): an uploaded file is read in
chunks and refused past the cap, so the web process never holds an
oversized body.

Two checks, because a body can announce its size or not:
- UploadCapMiddleware refuses a multipart request whose Content-Length
  exceeds the cap plus the form-body allowance with a 413, before any of
  the body is read.
- CappedUploadHandler counts each file's bytes as they arrive and stops the
  upload past the cap (the rest of the body is read and dropped in chunks);
  the view then sees `request.upload_refused` and stores nothing.
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpResponse


def upload_cap() -> int:
    return settings.BENCHBOARD_MAX_UPLOAD_MB * 1024 * 1024


def refusal_message() -> str:
    return (
        f"The upload is larger than the {settings.BENCHBOARD_MAX_UPLOAD_MB} MiB limit "
        "(BENCHBOARD_MAX_UPLOAD_MB); nothing was imported."
    )


class CappedUploadHandler(FileUploadHandler):
    """First in FILE_UPLOAD_HANDLERS: passes chunks on to the next handler
    (memory or temporary file) until a file passes the cap."""

    def new_file(self, *args, **kwargs):
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > upload_cap():
            if self.request is not None:
                self.request.upload_refused = refusal_message()
                _drain(self.request)
            # Drained here: Django's own draining reads the body line by line,
            # and a body without newlines would be one line held whole.
            raise StopUpload(connection_reset=True)
        return raw_data

    def file_complete(self, file_size):
        return None


def _drain(request, chunk: int = 64 * 1024) -> None:
    """Reads and drops the rest of the request body, a chunk at a time."""
    while request.read(chunk):
        pass


class UploadCapMiddleware:
    """Refuses an announced oversized multipart body up front (before CSRF and
    every other reader of request.POST)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if (
            request.content_type == "multipart/form-data"
            and self._announced(request) > upload_cap() + settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        ):
            return HttpResponse(refusal_message(), status=413, content_type="text/plain")
        return self.get_response(request)

    @staticmethod
    def _announced(request) -> int:
        try:
            return int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            return 0


def read_text(upload, limit: int | None = None) -> str:
    """An uploaded file's text, read chunk by chunk (UTF-8, undecodable bytes
    replaced); ValueError past `limit` bytes (default: the upload cap)."""
    limit = upload_cap() if limit is None else limit
    parts, size = [], 0
    for chunk in upload.chunks():
        size += len(chunk)
        if size > limit:
            raise ValueError(refusal_message())
        parts.append(chunk)
    return b"".join(parts).decode("utf-8", "replace")
