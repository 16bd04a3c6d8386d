"""Pinned upstream releases of tools Debian does not carry, fetched and verified.

A tool module declares RELEASE = Release(version, url, sha256, name) (and
PACKAGE None); `python -m runners fetch TOOL DIR` installs it. The sha256 is
the pin: a release whose bytes differ is never installed.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from runners.errors import RunnerError

SHA256 = re.compile(r"^[0-9a-f]{64}$")
# A benchmark tool's binary or archive, not a disk image: past this a
# download is refused before it fills the worker's disk.
MAX_RELEASE_BYTES = 512 * 1024 * 1024
CHUNK = 1024 * 1024


@dataclass(frozen=True)
class Release:
    """A pinned upstream release of a tool: the file at `url` must hash to
    `sha256`; it is saved as `name` (the tool's BINARY) and made executable."""

    version: str
    url: str
    sha256: str
    name: str

    def __post_init__(self):
        if not SHA256.match(self.sha256):
            raise ValueError(f"{self.name}: sha256 must be 64 lowercase hex digits")
        # https, or loopback (a local mirror; the tests' server).
        if not self.url.startswith(("https://", "http://127.0.0.1:")):
            raise ValueError(f"{self.name}: a release is fetched over https")


def fetch_release(release: Release, directory: Path, opener=urllib.request.urlopen) -> Path:
    """Download release into directory, verified: returns the installed file.

    The bytes go to a temporary file beside the target and are renamed into
    place only when their sha256 matches, so a tampered or truncated download
    leaves nothing where the tool is looked for. RunnerError (permanent) on a
    mismatch or an oversized file; the opener's OSError on a network failure.
    """
    directory.mkdir(parents=True, exist_ok=True)
    digest, size = hashlib.sha256(), 0
    handle, partial = tempfile.mkstemp(dir=directory, prefix=f".{release.name}.")
    try:
        with os.fdopen(handle, "wb") as out, opener(release.url, timeout=60) as response:
            while chunk := response.read(CHUNK):
                size += len(chunk)
                if size > MAX_RELEASE_BYTES:
                    raise RunnerError(
                        f"{release.url}: over {MAX_RELEASE_BYTES} bytes", permanent=True
                    )
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != release.sha256:
            raise RunnerError(
                f"{release.url}: sha256 {digest.hexdigest()} is not the pinned {release.sha256}",
                permanent=True,
            )
        target = directory / release.name
        os.chmod(partial, 0o755)
        os.replace(partial, target)
        return target
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
