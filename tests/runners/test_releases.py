"""A tool from a pinned release: fetched from a real local HTTP server, installed
only when its sha256 matches, listed apart from the Debian packages."""

import hashlib
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest

from runners import packages
from runners.errors import RunnerError
from runners.releases import Release, fetch_release
from runners.tools import TOOLS

BINARY = b"#!/bin/sh\necho memtier 2.1.0\n"


@pytest.fixture
def server():
    """A loopback HTTP server serving BINARY at /memtier; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            self.send_response(200 if self.path == "/memtier" else 404)
            self.end_headers()
            if self.path == "/memtier":
                self.wfile.write(BINARY)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def release(url: str, sha256: str = hashlib.sha256(BINARY).hexdigest()) -> Release:
    return Release("2.1.0", f"{url}/memtier", sha256, "memtier_benchmark")


def test_a_verified_release_is_installed_executable(server, tmp_path):
    installed = fetch_release(release(server), tmp_path)
    assert installed == tmp_path / "memtier_benchmark"
    assert installed.read_bytes() == BINARY and os.access(installed, os.X_OK)


def test_a_release_whose_bytes_differ_leaves_nothing(server, tmp_path):
    with pytest.raises(RunnerError, match="is not the pinned") as refused:
        fetch_release(release(server, "0" * 64), tmp_path)
    assert refused.value.permanent and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "url, sha256, message",
    [
        ("https://example.org/m", "ABC", "64 lowercase hex"),
        ("http://example.org/m", "0" * 64, "over https"),
    ],
)
def test_a_release_pin_is_checked_when_declared(url, sha256, message):
    with pytest.raises(ValueError, match=message):
        Release("1", url, sha256, "m")


def test_a_release_tool_is_no_debian_package(monkeypatch, server):
    pinned = release(server)
    monkeypatch.setitem(TOOLS, "memtier", SimpleNamespace(PACKAGE=None, RELEASE=pinned))
    assert packages.tool_releases() == {"memtier": pinned}
    assert None not in packages.tool_packages()
