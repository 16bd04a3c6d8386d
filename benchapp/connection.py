"""The "test connection" check of a stored Target.

test_connection(target) reaches the target the way a run would — over SSH
when the target has an SSH host, else from this machine — and returns plain
data for the page: host facts (CPUs, memory, kernel, tool versions), the
database's version and key variables, or the exact error. An SSH host whose
key is not yet known is never connected to: its key and fingerprint are
returned for a person to accept (trust on first use).
"""

from __future__ import annotations

from benchapp.models import Credential, Target
from runners.command import Endpoint
from runners.errors import RunnerError

# Tool versions worth knowing per target kind.
TOOLS = {"mysql": ("mysqlslap", "sysbench"), "postgres": ("pgbench",), "host": ("fio",)}


def test_connection(target: Target) -> dict:
    """{"ok", "where", "host": facts, "db": facts, "error", "host_key", "fingerprint"}."""
    result = {"ok": False, "where": _where(target), "host": {}, "db": {}, "error": "",
              "host_key": "", "fingerprint": ""}
    if target.provision and not target.host:
        result["error"] = ("This target is provisioned when a run starts; there is nothing "
                           "to reach yet.")
        return result
    try:
        if target.ssh_host and not target.known_host_key:
            from runners.executors import trust_on_first_use

            result["host_key"], result["fingerprint"] = trust_on_first_use(
                target.ssh_host, target.ssh_port)
            return result
        with _executor(target) as executor:
            from runners.facts import db_facts, host_facts

            result["host"] = host_facts(executor, TOOLS.get(target.kind, ()))
            result["host"]["memory"] = f"{result['host']['memory_kib'] / 1048576:.1f} GiB"
            if target.kind in ("mysql", "postgres"):
                result["db"] = db_facts(executor, _endpoint(target))
    except RunnerError as exc:
        result["error"] = exc.message
        return result
    result["ok"] = True
    return result


def host_key_fingerprint(line: str) -> str:
    """"SHA256:..." of a known_host_key line (for display)."""
    from runners.executors import ssh

    try:
        return ssh.fingerprint(ssh.parse_key_line(line))
    except RunnerError:
        return "invalid key"


def _where(target: Target) -> str:
    if target.ssh_host:
        return f"{target.ssh_user or 'root'}@{target.ssh_host}:{target.ssh_port} (SSH)"
    return "this server"


def _executor(target: Target):
    from runners.executors import LocalExecutor

    if not target.ssh_host:
        return LocalExecutor()
    from runners.executors import SSHExecutor

    cred: Credential | None = target.ssh_credential
    secret = cred.secret() if cred else None
    is_key = cred is not None and cred.kind == Credential.SSH_KEY
    return SSHExecutor(target.ssh_host, target.ssh_port, target.ssh_user or "root",
                       private_key=secret if is_key else None,
                       password=None if is_key else secret,
                       known_host_key=target.known_host_key)


def _endpoint(target: Target) -> Endpoint:
    return Endpoint(kind=target.kind, host=target.host or None, port=target.port,
                    user=target.user or None, database=target.database or None,
                    password=target.credential.secret() if target.credential else None)
