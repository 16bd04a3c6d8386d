"""Containment of tools run on the worker host (bubblewrap), and what a cell may reach.

Sandbox.wrap() turns a tool's argv into a bwrap command line: the tool sees
only the system directories read-only (/usr, /etc, /sys), a fresh /proc of
its own pid namespace, a private /dev, its scratch directory (also mounted
as /tmp) and the data directories the operator allowed, read-write. The
project, its var/ directory (keys, SQLite), /root and /home do not exist
inside. Its environment is empty but for PATH, LANG, HOME and the command's
own variables. When the worker runs as root, the tool runs as an
unprivileged user (BENCHBOARD_SANDBOX_USER, default nobody): the uid is
dropped before bwrap starts, and bwrap makes an unprivileged user namespace.
With limits (runners/limits.py), each tool run gets a cgroup of its own
(CPU quota, memory, pids; rlimits where no cgroup can be made, see
runners/cgroups.py) and the scratch directory a size cap (runners/scratch.py).

Scope says which code-running and file-reaching features a cell may use;
each tool's check_scope() refuses the rest (see docs/sandbox.md).
"""

from __future__ import annotations

import os
import posixpath
import pwd
import subprocess
from dataclasses import dataclass

from runners.command import WORKDIR
from runners.errors import RunnerError, ValidationError
from runners.limits import Limits

BWRAP = "bwrap"
PACKAGE = "bubblewrap"
PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
# Database sockets a local tool may connect to (read-only binds; connect() works).
SOCKET_DIRS = ("/run/mysqld", "/run/postgresql")
_probed: dict[str, str | None] = {}


@dataclass(frozen=True)
class Scope:
    """What one cell's tool may reach.

    custom_scripts: code-running features (Lua, \\shell, exec options,
    snapshots, service stop/start) are allowed. paths: None allows any path;
    otherwise the directories a file option may name besides the scratch
    directory (relative paths and @WORKDIR@). private_tmp: /tmp is the
    sandbox's own, so /tmp paths are inside the scratch directory.
    """

    custom_scripts: bool = True
    paths: tuple[str, ...] | None = None
    private_tmp: bool = False
    where: str = "here"

    def refuse(self, param: str, what: str) -> None:
        """Raise ValidationError when code-running features are not allowed."""
        if not self.custom_scripts:
            raise ValidationError(
                param,
                f"{what} is refused for {self.where} (the trust model: "
                "allowed only over SSH on a target that allows custom scripts)",
            )

    def check_path(self, param: str, path: str) -> None:
        """Raise ValidationError when path is outside the scratch and allowed directories."""
        if self.paths is None:
            return
        if "\\" in path or ".." in path.split("/"):
            raise ValidationError(param, f"{path!r} is not allowed: no '..' or backslashes")
        if path.startswith(WORKDIR) or not path.startswith("/"):
            return
        allowed = self.paths + (("/tmp",) if self.private_tmp else ())
        normal = posixpath.normpath(path)
        if any(normal == d or normal.startswith(d.rstrip("/") + "/") for d in allowed):
            return
        shown = ", ".join(self.paths) or "none configured"
        raise ValidationError(
            param,
            f"{path!r} is outside the scratch directory and the target's "
            f"data directories ({shown}); use a relative path",
        )


ANYTHING = Scope()


@dataclass(frozen=True)
class Sandbox:
    """How local tools are contained: user to run as (when root), writable
    data dirs, and the hard limits of each tool run (None: no limits)."""

    user: str = "nobody"
    data_dirs: tuple[str, ...] = ()
    limits: Limits | None = None

    def ids(self) -> tuple[int, int] | None:
        """(uid, gid) to drop to when the worker is root, else None."""
        if os.geteuid() != 0:
            return None
        try:
            entry = pwd.getpwnam(self.user)
        except KeyError:
            raise RunnerError(
                f"sandbox user {self.user!r} does not exist (BENCHBOARD_SANDBOX_USER)",
                permanent=True,
            ) from None
        if entry.pw_uid == 0:
            raise RunnerError(
                "the sandbox user must not be root (BENCHBOARD_SANDBOX_USER)", permanent=True
            )
        return entry.pw_uid, entry.pw_gid

    def wrap(self, argv: list[str], workdir: str, extra_env: dict[str, str]):
        """(argv, env, preexec) that run argv inside bwrap with workdir as cwd and /tmp."""
        ids = self.ids()
        tmp = os.path.join(workdir, "tmp")
        os.makedirs(tmp, exist_ok=True)
        if ids is not None:
            os.chown(tmp, *ids)
        args = [
            BWRAP,
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--die-with-parent",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            args += _system_dir(f"/{name}")
        args += [
            "--ro-bind",
            "/etc",
            "/etc",
            "--ro-bind-try",
            "/sys",
            "/sys",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--bind",
            tmp,
            "/tmp",
            "--bind",
            workdir,
            workdir,
            "--symlink",
            "../run",
            "/var/run",
        ]
        for path in SOCKET_DIRS:
            args += ["--ro-bind-try", path, path]
        for path in self.data_dirs:
            args += ["--bind", path, path]
        # The sandbox's own root (a tmpfs holding the mount points) read-only
        # too: a tool cannot fill memory by writing /var/tmp or /opt there.
        args += ["--remount-ro", "/", "--chdir", workdir, "--"]
        env = {
            "PATH": PATH,
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": workdir,
            "TMPDIR": "/tmp",
            **extra_env,
        }
        return args + argv, env, ids


def _system_dir(path: str) -> list[str]:
    """A merged-/usr symlink stays a symlink; a real directory is bound read-only."""
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    if os.path.isdir(path):
        return ["--ro-bind", path, path]
    return []


def unavailable(user: str = "nobody") -> str | None:
    """Why no sandbox can be made here (None: bwrap works); probed once per user."""
    if user not in _probed:
        _probed[user] = _probe(user)
    return _probed[user]


def _probe(user: str) -> str | None:
    import shutil
    import tempfile

    if shutil.which(BWRAP) is None:
        return f"bwrap is not installed (install the Debian package '{PACKAGE}')"
    sandbox = Sandbox(user=user)
    with tempfile.TemporaryDirectory(prefix="benchboard.probe.") as workdir:
        try:
            ids = sandbox.ids()
            if ids is not None:
                os.chown(workdir, *ids)
            argv, env, ids = sandbox.wrap(["true"], workdir, {})
            done = subprocess.run(
                argv,
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
                preexec_fn=drop_privileges(ids),
            )
        except (OSError, RunnerError, subprocess.SubprocessError) as exc:
            return f"bwrap cannot start: {exc}"
    if done.returncode != 0:
        return f"bwrap cannot make a sandbox here: {done.stderr.strip()[:200]}"
    return None


def drop_privileges(ids: tuple[int, int] | None):
    """A preexec function that switches to (uid, gid), or None when there is nothing to drop."""
    if ids is None:
        return None
    uid, gid = ids

    def drop() -> None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return drop


def contain_local(
    executor,
    user: str,
    data_dirs: tuple[str, ...],
    *,
    trusted: bool,
    unsafe_local: bool,
    limits: Limits | None = None,
) -> None:
    """Give a local executor its sandbox, or refuse (docs/trust-model.md).

    Used for every local tool of a run (runners.context) and for "test
    connection" (benchapp.runs.connection): bubblewrap as user with data_dirs
    writable when it works; otherwise an untrusted caller is refused unless
    unsafe_local, and gets an empty environment when it is allowed.
    """
    reason = unavailable(user)
    if reason is None:
        dirs = tuple(sorted(set(data_dirs)))
        executor.contain(Sandbox(user=user, data_dirs=dirs, limits=limits))
    elif not trusted and not unsafe_local:
        executor.close()
        raise refusal(reason)
    elif not trusted:
        executor.clean_env = True


def refusal(reason: str) -> RunnerError:
    """The permanent error for an untrusted plan that needs the sandbox this host lacks."""
    return RunnerError(
        f"this plan runs a tool on the worker host, and no sandbox can be made here ({reason}). "
        f"Install the Debian package '{PACKAGE}' on the worker, or (unsafe) set "
        "BENCHBOARD_UNSAFE_LOCAL_EXECUTION=true",
        permanent=True,
    )
