"""A real sshd on a loopback port, for executor tests.

The fixture generates an ed25519 host key and an ed25519 client key in a tmp
dir, writes its own sshd_config (no PAM, no strict modes, root by key; the
password method is enabled but root has no usable password here, so only
*failed* password logins can be tested) and runs `/usr/sbin/sshd -D -e -f`.
Teardown kills the listener and every per-connection child it forked.
sshd logs at INFO into <dir>/sshd.log: accepted() counts the connections it
authenticated, which tells whether a client reused its connection.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

SSHD = "/usr/sbin/sshd"

CONFIG = """\
Port {port}
ListenAddress {listen}
HostKey {dir}/host_ed25519
PidFile {dir}/sshd.pid
AuthorizedKeysFile {dir}/authorized_keys
UsePAM no
StrictModes no
PermitRootLogin yes
PubkeyAuthentication yes
PasswordAuthentication yes
KbdInteractiveAuthentication no
Subsystem sftp internal-sftp
LogLevel INFO
MaxStartups 50
MaxSessions 50
"""


@dataclass
class SSHServer:
    """What a test needs to reach the fixture's sshd."""

    host: str
    port: int
    user: str
    client_key: str  # private key, OpenSSH PEM text
    host_key: str  # "ssh-ed25519 AAAA..." (the known_host_key line)
    process: subprocess.Popen
    directory: Path
    netns: str = ""  # the network namespace sshd runs in ("": this machine's)

    def accepted(self) -> int:
        """How many connections sshd has authenticated so far (from its log)."""
        log = self.directory / "sshd.log"
        return log.read_text().count("Accepted publickey") if log.exists() else 0

    def drop_connections(self) -> None:
        """SIGKILL the per-connection sshd processes, keep the listener.

        Every established connection is reset; new ones are accepted.
        """
        for pid in _sshd_descendants(self.process.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def restart(self) -> None:
        """Kill sshd and everything below it, then start it again on the same port and keys."""
        self.kill_all()
        self.process.stderr.close()
        self.process = _spawn(self.directory / "sshd_config", self.netns)
        _wait_listening(self.port, self.process, log=self.directory / "sshd.log", host=self.host)

    def kill_all(self) -> None:
        """SIGKILL the listener and every per-connection sshd below it.

        Simulates the SSH server (or the machine's network) vanishing
        mid-run: sessions' shells and their tools are left orphaned.
        """
        for pid in [self.process.pid, *_sshd_descendants(self.process.pid)]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=5)


def _children(pid: int) -> list[int]:
    """Direct children of pid, read from /proc/<pid>/task/*/children."""
    found = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:  # pid has exited meanwhile: no children left
        return found
    for task in tasks:
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _sshd_descendants(pid: int) -> list[int]:
    """Every sshd process descending from pid (not the sessions' shells)."""
    result, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            if _comm(child).startswith("sshd"):
                result.append(child)
                todo.append(child)
    return result


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
        check=True,
        capture_output=True,
    )


def _wait_listening(
    port: int,
    process: subprocess.Popen,
    timeout: float = 10,
    log: Path | None = None,
    host: str = "127.0.0.1",
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            said = log.read_text()[-2000:] if log and log.exists() else ""
            raise RuntimeError(f"sshd exited: {process.stderr.read().decode()}{said}")
        try:
            with socket.create_connection((host, port), timeout=0.5) as sock:
                if sock.recv(7).startswith(b"SSH-"):
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("sshd did not start listening")


def _spawn(config: Path, netns: str = "") -> subprocess.Popen:
    """sshd in the foreground, logging to sshd.log beside its config."""
    inside = ["ip", "netns", "exec", netns] if netns else []
    return subprocess.Popen(
        [*inside, SSHD, "-D", "-E", str(config.parent / "sshd.log"), "-f", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


# A slow login: sshd runs this instead of each session's command (ForceCommand),
# which waits, then runs the command as asked (SFTP without the wait).
SLOW_LOGIN = """\
#!/bin/sh
case "$SSH_ORIGINAL_COMMAND" in
  internal-sftp) exec /usr/lib/openssh/sftp-server ;;
esac
sleep {delay}
exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"
"""


def start_sshd(
    directory: Path, login_delay: float = 0, listen: str = "127.0.0.1", netns: str = ""
) -> SSHServer:
    """Generate keys and config under directory, start sshd, return its handle.

    login_delay: seconds every session (but SFTP's) waits before its command
    starts, like a host whose login shell's rc file is slow; listen: its
    address; netns: a network namespace to run it in (`ip netns exec`),
    reached from here at listen through a veth of the test's own."""
    _keygen(directory / "host_ed25519")
    _keygen(directory / "client_ed25519")
    (directory / "authorized_keys").write_text((directory / "client_ed25519.pub").read_text())
    port = _free_port()
    config = directory / "sshd_config"
    text = CONFIG.format(port=port, dir=directory, listen=listen)
    if login_delay:
        wrapper = directory / "slow-login"
        wrapper.write_text(SLOW_LOGIN.format(delay=login_delay))
        wrapper.chmod(0o755)
        text += f"ForceCommand {wrapper}\n"
    config.write_text(text)
    # sshd refuses to start without its privilege separation directory, which
    # Debian's service unit normally creates at boot.
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    process = _spawn(config, netns)
    _wait_listening(port, process, log=directory / "sshd.log", host=listen)
    host_pub = (directory / "host_ed25519.pub").read_text().split()
    return SSHServer(
        host=listen,
        port=port,
        user="root",
        client_key=(directory / "client_ed25519").read_text(),
        host_key=f"{host_pub[0]} {host_pub[1]}",
        process=process,
        directory=directory,
        netns=netns,
    )


def host_target(server: SSHServer, name: str = "box", credential: str = "box-key") -> dict:
    """A plan's host target reached over this sshd, its key named `credential`
    (the test resolves that name to server.client_key)."""
    return {
        "name": name,
        "kind": "host",
        "host": server.host,
        "ssh": {
            "host": server.host,
            "port": server.port,
            "user": server.user,
            "credential": credential,
            "known_host_key": server.host_key,
        },
    }


def stop_sshd(server: SSHServer) -> None:
    """Kill the listener and its per-connection children; reap the listener."""
    if server.process.poll() is None:
        server.kill_all()
    server.process.stderr.close()


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """A running sshd shared by a test module; yields an SSHServer."""
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield server
    stop_sshd(server)


@pytest.fixture
def sshd_disposable(tmp_path):
    """A private sshd that a test may kill; yields an SSHServer."""
    server = start_sshd(tmp_path)
    yield server
    stop_sshd(server)
