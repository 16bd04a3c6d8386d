"""The "test connection" check of a stored Target.

test_connection(target) reaches the target the way a run would — over SSH
when the target has an SSH host, else from this machine — and returns plain
data for the page: host facts (CPUs, memory, kernel, tool versions), the
database's version and key variables, whether the user may create tables
in the target's database (a scratch table is created and dropped) or a
Redis server answers PING, or the exact error naming what is missing
("database 'x' does not exist on h:p", "user 'u' cannot CREATE in 'x'").
An SSH host whose
key is not yet known is never connected to: its key and fingerprint are
returned for a person to accept (trust on first use).

On this server the clients run exactly as a run's local tools do: in the
bubblewrap sandbox, as BENCHBOARD_SANDBOX_USER, with an empty environment and
the password in a 0600 option file (runners.sandbox.contain_local); without a
sandbox the check is refused unless BENCHBOARD_UNSAFE_LOCAL_EXECUTION. Before
any client starts, a database port reached from here gets a short protocol
probe (no secret sent): a port that speaks something else is named within
5 s, with the protocol it speaks when that is one of a few well known ones
("127.0.0.1:6379 answered like Redis, not MySQL"), instead of a client waiting
out its timeout.
"""

from __future__ import annotations

import os
import posixpath
import pwd
import socket
import stat

from django.conf import settings
from django.utils import timezone

from benchapp.models import Credential, Target
from runners import engines
from runners.command import Command, Endpoint
from runners.engines.base import CLIENT_SECONDS, PROBE_SECONDS, run_client
from runners.errors import RunnerError
from runners.tools import tools_for_kind


def test_connection(target: Target) -> dict:
    """{"ok", "where", "host": facts, "db": facts, "disk": free space of a host
    target's directory, "error", "host_key", "fingerprint", "access"}."""
    result = {
        "ok": False,
        "where": _where(target),
        "host": {},
        "db": {},
        "error": "",
        "host_key": "",
        "fingerprint": "",
        "access": "",
        "disk": {},
    }
    if target.provision and not target.host:
        result["error"] = (
            "This target is provisioned when a run starts; there is nothing to reach yet."
        )
        return result
    problem = _refused(target)
    if problem:
        result["error"] = problem
        return result
    try:
        if target.ssh_host and not target.known_host_key:
            from runners.executors import trust_on_first_use

            result["host_key"], result["fingerprint"] = trust_on_first_use(
                target.ssh_host, target.ssh_port
            )
            return result
        problem = _protocol_problem(target)
        if problem:
            result["error"] = problem
            return result
        with _executor(target) as executor:
            from runners.facts import db_facts, host_facts

            result["host"] = host_facts(executor, tools_for_kind(target.kind))  # the registry's
            result["host"]["memory"] = f"{result['host']['memory_kib'] / 1048576:.1f} GiB"
            # The access check first: its errors name what is missing.
            engine = engines.find(target.kind)
            if engine is not None:
                result["access"] = engine.access(executor, _endpoint(target))
            elif target.kind == "host" and target.directory and not target.ssh_host:
                result["access"] = local_directory_access(executor, target)
            elif target.kind == "host" and target.directory:
                result["access"] = directory_access(executor, target.directory, result["where"])
            if target.kind == "host" and target.directory:
                result["disk"] = disk_facts(executor, target.directory)
            if engine is not None and hasattr(engine, "FACTS_QUERY"):
                result["db"] = db_facts(executor, _endpoint(target))
            if hasattr(engine, "schema_grants"):
                result["db"]["schema_grants"] = engine.schema_grants(executor, _endpoint(target))
    except RunnerError as exc:
        result["error"] = exc.message
        return result
    result["ok"] = True
    return result


def record_check(target: Target, result: dict) -> None:
    """Keep a test's outcome on the target: the home page shows the last
    check, and the pre-run checks (benchapp.plans.prerun) read the database's
    variables and a host directory's free space of a successful one."""
    kept = {name: result[name] for name in ("db", "disk") if result[name]} if result["ok"] else {}
    Target.objects.filter(pk=target.pk).update(
        last_check_at=timezone.now(),
        last_check_ok=result["ok"],
        last_check_error=result["error"],
        last_check_facts=kept,
    )


def _refused(target: Target) -> str:
    """Why the target may not be reached (an app service, a denied network), or ""."""
    from benchapp.accounts.targetguard import guard
    from runners.netguard import TargetRefused

    checks = [(target.ssh_host, target.ssh_port)] if target.ssh_host else []
    if target.kind != "host":
        where = _address(target)
        checks.append((where.host, where.port))
    try:
        for host, port in checks:
            guard().check(host, port)
    except TargetRefused as exc:
        return str(exc)
    return ""


def host_key_fingerprint(line: str) -> str:
    """ "SHA256:..." of a known_host_key line (for display)."""
    from runners.executors import hostkeys

    try:
        return hostkeys.fingerprint(hostkeys.parse_key_line(line))
    except RunnerError:
        return "invalid key"


def _where(target: Target) -> str:
    if target.ssh_host:
        return f"{target.ssh_user or 'root'}@{target.ssh_host}:{target.ssh_port} (SSH)"
    return "this server"


def _executor(target: Target):
    from runners.executors import LocalExecutor
    from runners.sandbox import contain_local

    if not target.ssh_host:
        executor = LocalExecutor()
        contain_local(
            executor,
            settings.BENCHBOARD_SANDBOX_USER,
            tuple(target.data_dirs or ()),
            trusted=False,
            unsafe_local=settings.BENCHBOARD_UNSAFE_LOCAL_EXECUTION,
        )
        return executor
    from runners.executors import SSHExecutor

    cred: Credential | None = target.ssh_credential
    secret = cred.secret() if cred else None
    is_key = cred is not None and cred.kind == Credential.SSH_KEY
    return SSHExecutor(
        target.ssh_host,
        target.ssh_port,
        target.ssh_user or "root",
        private_key=secret if is_key else None,
        password=None if is_key else secret,
        known_host_key=target.known_host_key,
    )


def _address(target: Target):
    """Where its clients connect (runners.endpoint.address, as a run's cells):
    from its SSH host when it has one, else from this server; the target's own
    credential is bound there by being its credential (credbinding)."""
    from runners.endpoint import address
    from runners.plantargets import TargetSpec

    port = (
        (target.port or engines.DEFAULT_PORTS.get(target.kind)) if target.kind != "host" else None
    )
    return address(TargetSpec(target.name, target.kind, host=target.host or None, port=port))


def _endpoint(target: Target) -> Endpoint:
    where = _address(target)
    return Endpoint(
        kind=target.kind,
        host=where.host,
        port=where.port,
        user=target.user or None,
        database=target.database or None,
        password=target.credential.secret() if target.credential else None,
        socket=where.socket,
    )


# -- what the user may do -------------------------------------------------------------


def _run(executor, command: Command):
    """Run command (CLIENT_SECONDS at most), removing its credential file afterwards."""
    return run_client(executor, command, CLIENT_SECONDS)


def directory_access(executor, directory: str, where: str) -> str:
    """Whether the host target's directory exists where fio will run."""
    execution = _run(executor, Command(argv=["test", "-d", directory], tool="test"))
    if execution.exit_code == 0:
        return f"directory {directory} exists on {where}"
    raise RunnerError(f"directory {directory} does not exist on {where}", permanent=True)


def disk_facts(executor, directory: str) -> dict:
    """{"directory", "free_bytes"}: the space left for fio's files in the host
    target's directory (prerun.free_space compares a plan's sizes with it);
    {} when df does not say."""
    execution = _run(executor, Command(argv=["df", "-Pk", "--", directory], tool="df"))
    lines = execution.stdout.strip().splitlines()
    fields = lines[-1].split() if execution.exit_code == 0 and len(lines) == 2 else []
    # POSIX df -P: filesystem, 1024-blocks, used, available, capacity, mounted on.
    if len(fields) < 6 or not fields[3].isdigit():
        return {}
    return {"directory": directory, "free_bytes": int(fields[3]) * 1024}


# -- does the port speak the target's protocol? ----------------------------------------


def _protocol_problem(target: Target) -> str:
    """Why the database port reached from this server is not the target's
    database ("" when it answers as one, or when only the client can tell)."""
    if target.ssh_host or engines.find(target.kind) is None or not target.host:
        return ""  # reached from the SSH host: the client's own timeout applies there
    where = _address(target)
    return protocol_problem(target.kind, where.host, where.port)


def protocol_problem(kind: str, host: str, port: int, seconds: float = PROBE_SECONDS) -> str:
    """A sentence naming a port that does not speak kind's protocol, or ""
    (a refused connection is left to the client, which names it itself)."""
    engine = engines.get(kind)
    name, speaks = engine.PROTOCOL, engine.speaks
    where = f"{host}:{port}"
    try:
        with socket.create_connection((host, port), timeout=seconds) as sock:
            sock.settimeout(seconds)
            if speaks(sock):
                return ""
    except ConnectionRefusedError:
        return ""
    except TimeoutError:
        return _another_service(where, name, host, port) or (
            f"{where} does not answer as {name} within {seconds:g} s "
            "(it may be another service, or a firewall drops the packets)"
        )
    except ConnectionResetError:
        pass
    except OSError:
        return ""  # unreachable, unresolvable: the client says it in its own words
    return _another_service(where, name, host, port) or (
        f"{where} does not answer as {name} (it may be another service)"
    )


def _another_service(where: str, name: str, host: str, port: int) -> str:
    other = identify(host, port)
    if other is None or other == name:
        return ""
    return f"{where} answered like {other}, not {name}: check the target's host and port"


# -- what does a port that is not the target's database speak? ------------------------

# Each question waits this long: three of them after a probe of PROBE_SECONDS
# keep the whole check within 5 s even where a firewall drops every packet.
IDENTIFY_SECONDS = 0.5
# Servers that speak first, by the start of what they say.
GREETINGS = ((b"SSH-", "SSH"), (b"220", "SMTP or FTP"), (b"* OK", "IMAP"), (b"+OK", "POP3"))


def identify(host: str, port: int) -> str | None:
    """The protocol a port speaks, named for a person, or None: first what
    the server says unasked (an engine that speaks first, or GREETINGS), then
    its answer to each other engine's question (an HTTP server answers one
    too). No secret is sent."""
    greeting = _exchange(host, port, b"")
    if greeting:
        for engine in engines.ENGINES.values():
            if not engine.QUESTION and engine.answers(greeting):
                return engine.PROTOCOL
        return next((name for start, name in GREETINGS if greeting.startswith(start)), None)
    for engine in engines.ENGINES.values():
        if engine.QUESTION:
            answer = _exchange(host, port, engine.QUESTION)
            if answer.startswith(b"HTTP/"):
                return "HTTP"
            if engine.answers(answer):
                return engine.PROTOCOL
    return None


def _exchange(host: str, port: int, question: bytes) -> bytes:
    """What the port says within IDENTIFY_SECONDS after question (b"": nothing sent)."""
    try:
        with socket.create_connection((host, port), timeout=IDENTIFY_SECONDS) as sock:
            sock.settimeout(IDENTIFY_SECONDS)
            if question:
                sock.sendall(question)
            return sock.recv(64)
    except OSError:
        return b""


# -- a directory on this server --------------------------------------------------------


def local_directory_access(executor, target: Target) -> str:
    """Whether a run's tool (in the sandbox, as the sandbox user) can write the host
    target's directory on this server; the fix when it cannot."""
    directory = target.directory
    allowed = [d for d in target.data_dirs or [] if _inside(directory, d)]
    if not allowed:
        shown = ", ".join(target.data_dirs or []) or "none"
        raise RunnerError(
            f"directory {directory} is not in this target's data directories ({shown}): "
            "a tool on this server may write only there; an operator (staff) adds it to "
            "the target's data_dirs",
            permanent=True,
        )
    where = "this server"
    user = settings.BENCHBOARD_SANDBOX_USER
    if _run(executor, Command(argv=["test", "-d", directory], tool="test")).exit_code != 0:
        closed = _closed_parent(directory, user) if os.path.isdir(directory) else None
        if closed is None:
            raise RunnerError(f"directory {directory} does not exist on {where}", permanent=True)
        raise RunnerError(
            f"the sandbox user {user} cannot reach {directory}: it may not enter {closed} "
            f"({_owner(closed)}). Fix: chmod o+x {closed}, or use a directory whose parents "
            f"{user} may enter",
            permanent=True,
        )
    if _run(executor, Command(argv=["test", "-w", directory], tool="test")).exit_code != 0:
        raise RunnerError(
            f"the sandbox user {user} cannot write {directory} ({_owner(directory)}): "
            f"fio would fail with 'Permission denied'. Fix: chown {user} {directory} "
            f"(or give {user} write access another way)",
            permanent=True,
        )
    return f"directory {directory} exists on {where} and the sandbox user can write it"


def _closed_parent(directory: str, user: str) -> str | None:
    """The first directory on the way to directory that user may not enter, or None."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return None
    path = "/"
    for part in posixpath.normpath(directory).strip("/").split("/"):
        path = posixpath.join(path, part)
        try:
            info = os.stat(path)
        except OSError:
            return None
        if info.st_uid == entry.pw_uid:
            bit = stat.S_IXUSR
        elif info.st_gid == entry.pw_gid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return path
    return None


def _inside(path: str, directory: str) -> bool:
    path, directory = posixpath.normpath(path), posixpath.normpath(directory)
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def _owner(directory: str) -> str:
    try:
        info = os.stat(directory)
        owner = pwd.getpwuid(info.st_uid).pw_name
    except (OSError, KeyError):
        return "owner unknown"
    return f"owner {owner}, mode {info.st_mode & 0o777:o}"
