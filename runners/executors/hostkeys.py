"""SSH host keys and private keys: a host key's fingerprint and its
known_host_key line, read back; a private key of any supported type; a
server's key fetched for a person to accept (trust on first use); and the
policy that refuses an unknown key while remembering it for the message.
runners/executors/ssh.py pins the keys with these.
"""

from __future__ import annotations

import base64
import hashlib
import io
import socket

import paramiko

from runners.errors import RunnerError


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH's SHA256 fingerprint of a key ("SHA256:...")."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def key_line(key: paramiko.PKey) -> str:
    """A key as the known_host_key line ("ssh-ed25519 AAAA...")."""
    return f"{key.get_name()} {key.get_base64()}"


def parse_key_line(line: str) -> paramiko.PKey:
    """Read "TYPE BASE64 [comment]" into a public key, or raise a permanent RunnerError."""
    try:
        key_type, data = line.split()[:2]
        return paramiko.PKey.from_type_string(key_type, base64.b64decode(data))
    except (ValueError, TypeError, paramiko.SSHException) as exc:
        raise RunnerError(
            f"the known host key is not a valid key line: {exc}", permanent=True
        ) from exc


def load_private_key(text: str) -> paramiko.PKey:
    """Read an OpenSSH/PEM private key of any supported type."""
    for cls in (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey):
        try:
            return cls.from_private_key(io.StringIO(text))
        except (paramiko.SSHException, ValueError):
            continue
    raise RunnerError(
        "the SSH private key could not be read (unsupported or encrypted)", permanent=True
    )


def trust_on_first_use(host: str, port: int = 22, timeout: float = 10.0) -> tuple[str, str]:
    """Fetch the server's host key without authenticating.

    Returns (known_host_key line "ssh-ed25519 AAAA...", "SHA256:..."
    fingerprint), for a person to compare and accept explicitly.
    """
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except OSError as exc:
        raise RunnerError(f"cannot reach {host}:{port}: {exc}") from exc
    transport = paramiko.Transport(sock)
    transport.banner_timeout = timeout
    try:
        transport.start_client(timeout=timeout)
        key = transport.get_remote_server_key()
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise RunnerError(f"cannot read the host key of {host}:{port}: {exc}") from exc
    finally:
        transport.close()
    return key_line(key), fingerprint(key)


class RecordingReject(paramiko.RejectPolicy):
    """RejectPolicy that remembers the key the server offered, for the message."""

    offered: paramiko.PKey | None = None

    def missing_host_key(self, client, hostname, key):
        self.offered = key
        super().missing_host_key(client, hostname, key)
