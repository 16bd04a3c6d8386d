"""moto_server on a free loopback port: real boto3 HTTP calls, no AWS.

    from tests.support.moto import moto_endpoint, moto_server  # noqa: F401

`moto_server` (session scope) starts the process once and kills it at the
end; `moto_endpoint` (per test) resets moto's state and sets AWS_ENDPOINT_URL
and dummy credentials in the environment for that test only, so boto3
clients made without an explicit endpoint also land on moto.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

MOTO_BIN = Path(sys.executable).with_name("moto_server")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _post(url: str) -> None:
    # Loopback only: bypass any proxy configured in the environment.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    opener.open(urllib.request.Request(url, data=b"", method="POST"), timeout=10).read()


def _wait_ready(url: str, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {proc.returncode}")
        try:
            opener.open(f"{url}/moto-api/data.json", timeout=2).read()
            return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("moto_server did not answer within 30 s")


@pytest.fixture(scope="session")
def moto_server():
    """Start moto_server on 127.0.0.1:<free port>; yield its URL; kill it at teardown."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [str(MOTO_BIN), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group, killed as a whole below
    )
    try:
        _wait_ready(url, proc)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture
def moto_endpoint(moto_server, monkeypatch):
    """A clean moto (state reset) and AWS env pointing at it; yields the URL."""
    _post(f"{moto_server}/moto-api/reset")
    env = {
        "AWS_ENDPOINT_URL": moto_server,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "ap-northeast-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "NO_PROXY": "127.0.0.1,localhost",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    yield moto_server
