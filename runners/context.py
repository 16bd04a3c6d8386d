"""CellContext: what the cells of one run share (executors, secrets, caches, cancel).

One CellContext lives as long as a run (inline) or one cell (benchapp). It
opens executors lazily and keeps them; SSH connections outlive it in the
process's pool (runners/executors/pool.py), so a worker connects to a host
once. It takes host facts once per host (benchapp hands it the run's facts
already known to the worker); it remembers which targets are prepared
(prepare.once) and snapshotted.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Self

from runners.command import Endpoint
from runners.endpoint import WORKER, address, machine
from runners.errors import RunnerError, ValidationError
from runners.limits import Limits
from runners.netguard import Guard, TargetRefused
from runners.plan import Plan
from runners.plantargets import CELL_TARGET, SSHSpec, TargetSpec
from runners.sandbox import ANYTHING, Scope, unavailable

SecretResolver = Callable[[str], str]
# check_use(credential name, host, port, client machine): raises RunnerError
# when the stored credential may not be sent there from that machine
# (benchapp: its binding, runners.endpoint.holds).
UseCheck = Callable[[str, str | None, int | None, str], None]


def _no_secrets(name: str) -> str:
    raise RunnerError(f"credential {name!r} cannot be resolved here", permanent=True)


@dataclass(frozen=True)
class Permissions:
    """What a team admin (custom_scripts) and the operator (data_dirs) allowed on a target."""

    custom_scripts: bool = False
    data_dirs: tuple[str, ...] = ()


def _make_executor(ssh: SSHSpec | None, secret: str | None):
    """LocalExecutor for None, else an SSHExecutor for ssh with its secret.

    A secret that looks like a PEM/OpenSSH private key is used as the key,
    anything else as the login password. SSH connections come from the
    process's pool: a worker reuses one per host and credential across cells.
    """
    from runners.executors import LocalExecutor, SSHExecutor
    from runners.executors.pool import shared_pool

    if ssh is None:
        return LocalExecutor()
    auth = {}
    if secret and secret.lstrip().startswith("-----BEGIN"):
        auth["private_key"] = secret
    elif secret:
        auth["password"] = secret
    return SSHExecutor(
        ssh.host, ssh.port, ssh.user, known_host_key=ssh.known_host_key, pool=shared_pool(), **auth
    )


class CellContext:
    """Shared state of the cells of one run.

    resolve_secret(name) -> str resolves a `credential` name (benchapp:
    decrypts the stored Credential); password_env is read from os.environ.
    targets: name -> TargetSpec overrides, e.g. what provisioning produced
    (host and port of a fresh RDS instance) replacing the plan's spec.
    client_ssh: where a provisioned client lives, once it is up.
    executor_factory(ssh | None, secret | None) -> Executor (tests may wrap it).

    trusted: the plan is the operator's (a plan file, origin cli): no
    refusals, password_env allowed, tools sandboxed when bwrap works and run
    plainly otherwise. Untrusted (web, API, schedule): `permissions` (target
    name -> Permissions, from the stored targets) decide what may run, every
    local tool is sandboxed, and without a sandbox local execution is refused
    unless unsafe_local (BENCHBOARD_UNSAFE_LOCAL_EXECUTION). limits: what
    each sandboxed tool run may use (runners/limits.py). sandbox_user:
    the uid local tools drop to when the worker is root. profile_local: the
    operator allows `profile: true` to run perf on the worker host (its target's
    server and the cell's tool only, runners.profiler).

    guard: the app's own services and the operator's network lists
    (runners.netguard.Guard); every endpoint a tool connects to and every SSH
    host is checked against it, after name resolution, right before use.

    check_use(name, host, port, machine): for untrusted plans, asked before a
    stored credential is resolved for the endpoint or SSH host it will be sent
    to, from the client machine that sends it (runners.endpoint.machine;
    SSH logins always leave from the worker). benchapp: SecretBook.check_use,
    the credential's binding; it raises to refuse, and the secret is then
    never read.
    """

    def __init__(
        self,
        plan: Plan,
        *,
        resolve_secret: SecretResolver | None = None,
        targets: dict[str, TargetSpec] | None = None,
        client_ssh: SSHSpec | None = None,
        executor_factory=_make_executor,
        cancel_event: threading.Event | None = None,
        trusted: bool = True,
        permissions: dict[str, Permissions] | None = None,
        sandbox_user: str = "nobody",
        unsafe_local: bool = False,
        guard: Guard | None = None,
        limits: Limits | None = None,
        check_use: UseCheck | None = None,
        profile_local: bool = False,
    ):
        self.plan = plan
        self.resolve_secret = resolve_secret or _no_secrets
        self.targets = dict(targets or {})
        self.client_ssh = client_ssh
        self.executor_factory = executor_factory
        self.cancel_event = cancel_event or threading.Event()
        self.prepared: set[str] = set()  # targets whose data is prepared (prepare.once)
        self.snapshots: set[str] = set()  # targets whose datadir was copied aside
        self.checksums: dict[str, dict] = {}  # target name -> table checksums of its snapshot
        self.host_facts: dict[str, dict] = {}  # executor key -> host facts
        self.db_facts: dict[str, dict] = {}  # target name -> db facts
        self.versions: dict[str, str | None] = {}  # executor key -> tool version
        self.trusted = trusted
        self.permissions = dict(permissions or {})
        self.sandbox_user = sandbox_user
        self.unsafe_local = unsafe_local
        self.guard = guard
        self.limits = limits or Limits()
        self.check_use = check_use
        # The operator allows CPU profiles on the worker host (BENCHBOARD_PROFILE_LOCAL).
        self.profile_local = profile_local
        self._executors: dict[str, object] = {}
        self._lock = threading.Lock()

    # -- targets and secrets ----------------------------------------------

    def target(self, name: str) -> TargetSpec:
        """The target to use for name; RunnerError if it still needs provisioning."""
        target = self.targets.get(name) or self.plan.target(name)
        if target.provision is not None:
            provider = target.provision.get("provider")
            raise RunnerError(
                f"target {name} needs provisioning (provider {provider}); this runner has "
                "no provisioned address for it",
                permanent=True,
            )
        return target

    def secret(
        self,
        credential: str | None,
        password_env: str | None,
        host: str | None = None,
        port: int | None = None,
        client: str = WORKER,
    ) -> str | None:
        """The clear secret named by credential or password_env, or None.

        host, port: where the secret will be sent (a socket as "unix:PATH");
        client: the machine that sends it (runners.endpoint.machine). An
        untrusted plan's stored credential must be bound there from there.
        """
        if credential:
            if not self.trusted and self.check_use is not None:
                self.check_use(credential, host, port, client)
            return self.resolve_secret(credential)
        if password_env:
            if not self.trusted:
                raise RunnerError(
                    f"password_env ({password_env}) is refused for plans from the web or API: it "
                    "reads the worker's environment, which is for operator plan files "
                    "(python -m runners run, manage.py runplan); use a stored credential",
                    permanent=True,
                )
            if password_env not in os.environ:
                raise RunnerError(
                    f"environment variable {password_env} (password_env) is not set", permanent=True
                )
            return os.environ[password_env]
        return None

    def endpoint(self, target: TargetSpec, client_ssh: SSHSpec | None = None) -> Endpoint:
        """The Endpoint a client at client_ssh (None: this machine) connects to.

        Every client invocation of a cell (the tool, facts, the prepared-table
        count, telemetry, checksums) uses what this returns: the one address of
        runners.endpoint.address, its credential checked for that client
        machine. Called again for each further client before it connects.
        """
        try:
            where = address(target)
        except ValidationError as exc:
            raise RunnerError(f"target {target.name}: {exc.message}", permanent=True) from None
        if target.kind != "host" and not (where.socket and target.ssh is not None):
            # A socket on this machine is this machine; on an SSH host it is the team's.
            self.check_address(target.name, where.host, where.port)
        return Endpoint(
            kind=target.kind,
            host=where.host,
            port=where.port,
            user=target.user,
            database=target.database,
            password=self.secret(
                target.credential, target.password_env, *where.key, client=machine(client_ssh)
            ),
            socket=where.socket,
        )

    def check_address(self, name: str, host: str | None, port: int | None) -> None:
        """RunnerError (permanent) when the guard refuses host:port for target name."""
        if self.guard is None:
            return
        try:
            self.guard.check(host, port)
        except TargetRefused as exc:
            raise RunnerError(f"target {name}: {exc}", permanent=True) from None

    # -- executors ---------------------------------------------------------

    def executor(self, ssh: SSHSpec | None):
        """The (cached) executor for a machine: local for None, else over SSH."""
        key = self.executor_key(ssh)
        with self._lock:
            if key in self._executors:
                return self._executors[key]
        if ssh is not None:
            self.check_address(f"SSH host {ssh.host}", ssh.host, ssh.port)
        secret = self.secret(ssh.credential, ssh.password_env, ssh.host, ssh.port) if ssh else None
        made = self.executor_factory(ssh, secret)
        if ssh is None and hasattr(made, "sandbox"):
            self._contain(made)
        with self._lock:
            existing = self._executors.setdefault(key, made)
        if existing is not made:
            made.close()
        if self.cancel_event.is_set():
            existing.cancel()
        return existing

    def _contain(self, executor) -> None:
        """Give a local executor its sandbox, or refuse (see the class docstring)."""
        from runners.sandbox import contain_local

        dirs = tuple(d for p in self._local_permissions() for d in p.data_dirs)
        contain_local(
            executor,
            self.sandbox_user,
            dirs,
            trusted=self.trusted,
            unsafe_local=self.unsafe_local,
            limits=self.limits,
        )

    def _local_permissions(self) -> list[Permissions]:
        if self.trusted:
            return [Permissions(True, t.data_dirs) for t in self.plan.targets]
        return list(self.permissions.values())

    def scope(self, target: TargetSpec, client_ssh: SSHSpec | None) -> Scope:
        """What the tool of a cell on target, run at client_ssh (None: here), may reach."""
        if self.trusted:
            return ANYTHING
        allowed = self.permissions.get(target.name, Permissions())
        if client_ssh is None:
            return Scope(
                custom_scripts=False,
                paths=allowed.data_dirs,
                private_tmp=unavailable(self.sandbox_user) is None,
                where="local execution",
            )
        if allowed.custom_scripts:
            return ANYTHING
        if self.plan.target(target.name).provision is not None:
            # A host made for this run in the team's own cloud account: its
            # files are the team's, code still needs allow_custom_scripts.
            return Scope(custom_scripts=False, where=f"target {target.name}")
        return Scope(
            custom_scripts=False,
            paths=allowed.data_dirs,
            where=f"target {target.name} (custom scripts not allowed)",
        )

    @staticmethod
    def executor_key(ssh: SSHSpec | None) -> str:
        return "local" if ssh is None else f"{ssh.user}@{ssh.host}:{ssh.port}"

    def host_ssh(self, target: TargetSpec) -> SSHSpec | None:
        """The SSH spec of the target's machine (None: this machine); RunnerError if unreachable."""
        if target.ssh is not None:
            return target.ssh
        if target.is_local or (target.kind == "host" and target.host is None):
            return None
        raise RunnerError(
            f"target {target.name}: its host {target.host} is not reachable "
            "(add ssh: {host, user, credential} to the target)",
            permanent=True,
        )

    def client_ssh_for(self, target: TargetSpec, index: int = 0) -> SSHSpec | None:
        """Where the tool runs for a cell on target (None: this machine);
        index: which of the plan's clients (0: the first)."""
        client = self.plan.clients[index]
        if client.kind == "local":
            return None
        if client.kind == "ssh":
            return client.ssh
        if client.kind == "on":
            host = target if client.target == CELL_TARGET else self.target(client.target)
            return self.host_ssh(host)
        if self.client_ssh is None:
            provider = (client.provision or {}).get("provider")
            raise RunnerError(
                f"the client needs provisioning (provider {provider}); this "
                "runner has no provisioned client host",
                permanent=True,
            )
        return self.client_ssh

    # -- cancel and close --------------------------------------------------

    def cancel(self) -> None:
        """Cancel the run: stop what runs on every executor (thread-safe)."""
        self.cancel_event.set()
        with self._lock:
            executors = list(self._executors.values())
        for executor in executors:
            executor.cancel()

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    def close(self) -> None:
        """Close every executor (their work dirs and connections)."""
        with self._lock:
            executors, self._executors = list(self._executors.values()), {}
        for executor in executors:
            try:
                executor.close()
            except RunnerError:
                pass  # a host that vanished has nothing left to close

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
