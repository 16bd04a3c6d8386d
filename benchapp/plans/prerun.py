"""Pre-run checks at plan save: what a plan from the web or the API would be
refused for, or would very likely fail at, found before anything runs.

Each check reads the plan (runners.plan.Plan) and the team's stored rows and
returns Findings, each naming the plan key and the fix. A *refusal* is a plan
the worker certainly refuses or the tool certainly fails on: saving it is
refused (PlanRefused, the builder marks the field). A *warning* is a likely
failure the app cannot be sure of (a fact read at the last connection test,
a name that may resolve on the worker): the plan is saved and the warning
shown in the builder and after saving. The worker checks everything again
when a cell starts (runners.cell, runners.context), so a check here only
moves a failure earlier; it never lets anything through.

Operator plan files (`manage.py runplan`, `python -m runners run`) are
trusted and not checked here (password_env is theirs).
"""

from __future__ import annotations

import posixpath
import re
import socket
import time
from dataclasses import dataclass

from benchapp.models import Credential, Target, Team
from runners import engines, limits
from runners.endpoint import address
from runners.errors import ValidationError
from runners.plan import CellSpec, Plan, expand
from runners.tools import check_dropped_schemas, get_tool

# Above this share of max_connections other sessions (the app, monitoring,
# PostgreSQL's superuser_reserved_connections) may take what the tool needs.
CONNECTIONS_WARN_SHARE = 0.8
DNS_TIMEOUT_S = 2.0
# Characters of a failed connection test's error quoted in a warning: enough
# for the sandbox write check's message with its fix ("chown nobody DIR").
ERROR_SHOWN = 400
DNS_CACHE_S = 60.0


@dataclass(frozen=True)
class Finding:
    """path: the plan key (as ValidationError.param); refuse: certain failure."""

    path: str
    message: str
    refuse: bool = False

    def __str__(self):
        return f"{self.path}: {self.message}" if self.path else self.message


def findings(
    spec: Plan, team: Team, stored: dict[str, Target], cells: list[CellSpec] | None = None
) -> list[Finding]:
    """Every finding of every check, refusals first. stored: the team's
    Targets that are the plan's targets of that name (same address), whose
    grants and last connection test apply (benchapp.plans.planning.stored_targets).
    cells: the plan's expansion (benchapp.plans.planning.check's), else expanded here."""
    cells = expand(spec) if cells is None else cells
    found = [f for check in CHECKS for f in check(spec, team, stored, cells)]
    return sorted(found, key=lambda f: not f.refuse)


# ------------------------------------------------------------------ checks


def environment_secrets(spec, team, stored, cells) -> list[Finding]:
    """password_env reads the worker's environment: refused for web/API plans."""
    found = []
    for i, target in enumerate(spec.targets):
        for path, env in (
            (f"targets[{i}]", target.password_env),
            (f"targets[{i}].ssh", _ssh_env(target.ssh)),
        ):
            if env:
                found.append(Finding(f"{path}.password_env", _ENV_FIX.format(env=env), refuse=True))
    for path, client in spec.client_paths():
        if _ssh_env(client.ssh):
            found.append(
                Finding(
                    f"{path}.ssh.password_env", _ENV_FIX.format(env=client.ssh.password_env), True
                )
            )
    return found


_ENV_FIX = (
    "password_env ({env}) reads the worker's environment and is refused for plans from the "
    "web or the API. Store the password under Credentials and write credential: NAME instead."
)


def _ssh_env(ssh) -> str | None:
    return ssh.password_env if ssh is not None else None


def missing_credentials(spec, team, stored, cells) -> list[Finding]:
    """Credentials named by the plan that the team does not have."""
    names = set(Credential.objects.filter(team=team).values_list("name", flat=True))
    shown = ", ".join(sorted(names)) or "none yet"
    found = []
    for path, name in _credential_refs(spec):
        if name not in names:
            found.append(
                Finding(
                    path,
                    f"credential '{name}' does not exist in team {team.name}. Create it under "
                    f"Credentials with that name, or name one of the team's ({shown}).",
                    refuse=True,
                )
            )
    return found


def _credential_refs(spec):
    for i, target in enumerate(spec.targets):
        if target.credential:
            yield f"targets[{i}].credential", target.credential
        if target.ssh is not None and target.ssh.credential:
            yield f"targets[{i}].ssh.credential", target.ssh.credential
    for path, client in spec.client_paths():
        if client.ssh is not None and client.ssh.credential:
            yield f"{path}.ssh.credential", client.ssh.credential


def paths_and_scripts(spec, team, stored, cells) -> list[Finding]:
    """File options outside the scratch and data directories, and code-running
    features where custom scripts are not allowed: the worker refuses the cell
    (runners.cell._check_scope) with the same rules."""
    tool = get_tool(spec.tool)
    check_scope = getattr(tool, "check_scope", None)
    if check_scope is None:
        return []
    ctx = _context(spec, stored)
    seen, found = set(), []
    for cell in cells:
        for params in _phases(spec, cell.params):
            scope = _scope(ctx, cell.target)
            if scope is None or (cell.target, repr(params)) in seen:
                continue
            seen.add((cell.target, repr(params)))
            try:
                # A cell's own params are validated (planning.check); a phase's are merged.
                clean = params if params is cell.params else tool.validate(params)
                check_scope(clean, scope)
            except ValidationError as exc:
                message = exc.message + _scope_fix(exc, cell.target, stored)
                return [Finding(_param_path(spec, exc.param), message, refuse=True)]
    return found


def _phases(spec, params):
    phases = [params]
    if spec.prepare.enabled and spec.prepare.params:
        phases.append({**params, **spec.prepare.params})
    if spec.warmup:
        phases.append({**params, **spec.warmup})
    return phases


def _context(spec, stored):
    from runners.context import CellContext, Permissions

    grants = {
        name: Permissions(t.allow_custom_scripts, tuple(t.data_dirs)) for name, t in stored.items()
    }
    return CellContext(spec, trusted=False, permissions=grants)


def _scope(ctx, target_name: str):
    """The Scope a cell on target_name would get (None: decided only when the
    run provisions its client). Local execution is judged as inside the
    worker's sandbox, whose /tmp is the scratch directory."""
    from runners.context import Permissions
    from runners.errors import RunnerError
    from runners.sandbox import Scope

    target = ctx.plan.target(target_name)
    try:
        client_ssh = ctx.client_ssh_for(target)
    except RunnerError:
        return None
    if client_ssh is None:
        allowed = ctx.permissions.get(target_name, Permissions())
        return Scope(False, allowed.data_dirs, private_tmp=True, where="local execution")
    return ctx.scope(target, client_ssh)


def _scope_fix(exc: ValidationError, target: str, stored) -> str:
    if "outside the scratch directory" not in exc.message:
        return ""
    where = "" if target in stored else f" (store target {target} first)"
    return (
        f". Or ask an operator (staff) to add the directory to target {target}'s "
        f"data directories{where}."
    )


def connections(spec, team, stored, cells) -> list[Finding]:
    """Connections per cell against the max_connections the target's last
    connection test read (Target.last_check_facts)."""
    name = getattr(get_tool(spec.tool), "CONNECTIONS_PARAM", None)
    if name is None:
        return []
    worst: dict[str, int] = {}
    for cell in cells:
        for params in _phases(spec, cell.params):
            worst[cell.target] = max(worst.get(cell.target, 0), _count(params.get(name)))
    found = []
    for target_name, wanted in worst.items():
        target = stored.get(target_name)
        limit = (
            (target.last_check_facts or {}).get("db", {}).get("max_connections") if target else None
        )
        if isinstance(limit, int) and wanted:
            found += _connection_finding(spec, name, target, wanted, limit)
    return found


def _count(value) -> int:
    """Connections of one value: an int, or mysqlslap's list/"1,8,64" (its largest)."""
    if isinstance(value, (list, tuple)):
        return max((_count(v) for v in value), default=0)
    if isinstance(value, str):
        return max((int(p) for p in value.split(",") if p.strip().isdigit()), default=0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _connection_finding(spec, name, target, wanted, limit) -> list[Finding]:
    path = _param_path(spec, name)
    # How the server's max_connections is raised, and the connections it
    # keeps beyond it for a privileged user: the engine's.
    engine = engines.get(target.kind)
    raise_it = engine.RAISE_MAX_CONNECTIONS
    tail = (
        f"Lower {name} to at most {{n}}, or raise max_connections on the server "
        f"({raise_it}) and test the connection of {target.name} again."
    )
    if wanted > limit + engine.PRIVILEGED_CONNECTIONS:
        message = (
            f"{name} {wanted} opens {wanted} connections to {target.name}, whose server "
            f"accepts {limit} (max_connections at its last connection test). "
        )
        return [Finding(path, message + tail.format(n=limit), refuse=True)]
    if wanted > CONNECTIONS_WARN_SHARE * limit:
        message = (
            f"{name} {wanted} takes {wanted} of the {limit} connections {target.name} accepts "
            "(max_connections at its last connection test): other sessions may leave too "
            "few. "
        )
        return [Finding(path, message + tail.format(n=int(CONNECTIONS_WARN_SHARE * limit)))]
    return []


def _param_path(spec, name: str) -> str:
    """Where a tool parameter is set: its axis, else params."""
    return f"axes.{name}" if name in spec.axes else f"params.{name}"


def free_space(spec, team, stored, cells) -> list[Finding]:
    """fio files bigger than the free space its last connection test read in
    a host target's directory (Target.last_check_facts["disk"]), when the
    files go inside that directory: fio would stop with "No space left"."""
    tool = get_tool(spec.tool)
    worst: dict[str, tuple[int, str]] = {}  # target -> (bytes, "size 10T × numjobs 1")
    for cell in cells:
        disk = _disk(stored.get(cell.target))
        for params in _phases(spec, cell.params) if disk else ():
            if not _writes_inside(params, disk["directory"]):
                continue
            for asked, need in limits.uses(tool, params, "disk"):
                if need > worst.get(cell.target, (0, ""))[0]:
                    worst[cell.target] = (need, asked)
    found = []
    for name, (need, asked) in worst.items():
        disk = _disk(stored[name])
        if need > disk["free_bytes"]:
            found.append(_space_finding(spec, name, disk, asked, need))
    return found


def _disk(target: Target | None) -> dict | None:
    return (target.last_check_facts or {}).get("disk") if target is not None else None


def _writes_inside(params: dict, directory: str) -> bool:
    """Whether every path fio writes (each ':'-separated filename, directory)
    is inside directory (a relative one is in the cell's scratch directory)."""
    paths = [p for p in str(params.get("filename", "")).split(":") if p]
    if params.get("directory"):
        paths.append(params["directory"])
    root = posixpath.normpath(directory)
    return bool(paths) and all(
        posixpath.isabs(p)
        and (posixpath.normpath(p) == root or posixpath.normpath(p).startswith(root + "/"))
        for p in paths
    )


def _space_finding(spec, target_name, disk, asked, need) -> Finding:
    first = asked.split(" ")[0]
    return Finding(
        _param_path(spec, first),
        f"{asked} = {_gb(need)} of files in {disk['directory']} on {target_name}, which had "
        f"{_gb(disk['free_bytes'])} free at its last connection test: {spec.tool} would stop "
        f"with 'No space left on device'. Lower {first} to fit, or free space and test the "
        f"connection of {target_name} again.",
        refuse=True,
    )


def _gb(amount: int) -> str:
    return f"{amount / 2**30:,.1f} GB"


def scratch_schema(spec, team, stored, cells) -> list[Finding]:
    """A tool whose generated SQL drops its schema before and after the run
    (its SCHEMA_PARAM, e.g. runners.tools.mysqlslap): refused when a schema
    one of a cell's clients drops, after the tool's per-client suffix, is the
    target's database or a system schema (runners.tools.check_dropped_schemas,
    which the worker runs again before the tool starts)."""
    tool = get_tool(spec.tool)
    param = getattr(tool, "SCHEMA_PARAM", None)
    if param is None:
        return []
    found, seen = [], set()
    for cell in cells:
        database = _database(spec, cell.target, stored)
        for params, clients in _schema_phases(spec, cell):
            clean = tool.validate(params)
            try:
                check_dropped_schemas(tool, clean, clients, database, cell.target)
            except ValidationError as exc:
                if (cell.target, exc.message) not in seen:
                    seen.add((cell.target, exc.message))
                    found.append(Finding(_param_path(spec, param), exc.message, refuse=True))
    return found


def _schema_phases(spec, cell) -> list[tuple[dict, int]]:
    """(params, clients) of a cell's phases: the measure runs on all its clients."""
    phases = [(cell.params, cell.clients)]
    return phases + [(params, 1) for params in _phases(spec, cell.params)[1:]]


def schema_rights(spec, team, stored, cells) -> list[Finding]:
    """A tool's scratch schema (SCHEMA_PARAM) the user may not create and use
    (its SCHEMA_PRIVILEGES), by the grants the target's last connection test
    read (Target.last_check_facts["db"]["schema_grants"]): a warning, since a
    role or a later GRANT may allow it."""
    tool = get_tool(spec.tool)
    param = getattr(tool, "SCHEMA_PARAM", None)
    if param is None:
        return []
    found, seen = [], set()
    for cell in cells:
        row = stored.get(cell.target)
        grants = (
            ((row.last_check_facts or {}).get("db") or {}).get("schema_grants") if row else None
        )
        schema = cell.params.get(param, tool.SCHEMA_DEFAULT)
        if (
            grants is None
            or (cell.target, schema) in seen
            or _may_create(grants, schema, tool.SCHEMA_PRIVILEGES)
        ):
            continue
        seen.add((cell.target, schema))
        found.append(
            Finding(
                _param_path(spec, param),
                f"user {row.user} may not create and use schema {schema} on {cell.target} "
                f"(its grants at the last connection test), as {spec.tool} does. Fix: GRANT "
                f"{', '.join(tool.SCHEMA_PRIVILEGES)} ON `{schema}`.* TO the user, or set "
                f"{param} to a schema it may use, then test the connection again.",
            )
        )
    return found


def _may_create(grants: list[dict], schema: str, needed: tuple[str, ...]) -> bool:
    held = set()
    for grant in grants:
        if grant["schema"] == "*" or _like(grant["schema"]).fullmatch(schema):
            privileges = set(grant["privileges"])
            held |= set(needed) if "ALL PRIVILEGES" in privileges else privileges
    return held.issuperset(needed)


def _like(pattern: str) -> re.Pattern:
    """A grant's schema pattern (SQL LIKE: % and _, \\% and \\_ literal) as a regex."""
    parts = re.findall(r"\\.|%|_|[^\\%_]+", pattern)
    wild = {"%": ".*", "_": "."}
    return re.compile(
        "".join(wild.get(p) or re.escape(p[-1] if p[0] == "\\" else p) for p in parts)
    )


def _database(spec, target_name: str, stored) -> str | None:
    row = stored.get(target_name)
    return (row.database if row is not None else None) or spec.target(target_name).database


def failed_targets(spec, team, stored, cells) -> list[Finding]:
    """Stored targets whose last connection test failed."""
    found = []
    for i, target in enumerate(spec.targets):
        row = stored.get(target.name)
        if row is not None and row.last_check_ok is False:
            found.append(
                Finding(
                    f"targets[{i}]",
                    f"target {row.name} failed its last connection test "
                    f"({(row.last_check_error or 'no message')[:ERROR_SHOWN]}). Fix it and press "
                    "Test connection on its page.",
                )
            )
    return found


def unresolved_hosts(spec, team, stored, cells) -> list[Finding]:
    """Host names this server cannot resolve (the worker may: a warning)."""
    found = []
    for i, target in enumerate(spec.targets):
        if target.provision is not None:
            continue
        hosts = [(f"targets[{i}].host", address(target).host)]
        if target.ssh is not None:
            hosts.append((f"targets[{i}].ssh.host", target.ssh.host))
        for path, host in hosts:
            if host and not _resolves(host):
                found.append(
                    Finding(
                        path,
                        f"host {host} does not resolve here: the run fails unless the "
                        "worker resolves it. Check the name, or use an IP address.",
                    )
                )
    return found


def _resolves(host: str) -> bool:
    """True when host resolves within DNS_TIMEOUT_S (getaddrinfo has no timeout
    of its own: it runs in a thread that is left to finish). Answers are kept
    DNS_CACHE_S: the builder's preview asks on every change."""
    import concurrent.futures

    now = time.monotonic()
    if host in _resolved and now - _resolved[host][0] < DNS_CACHE_S:
        return _resolved[host][1]
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        pool.submit(socket.getaddrinfo, host, None).result(timeout=DNS_TIMEOUT_S)
        ok = True
    except (OSError, UnicodeError, concurrent.futures.TimeoutError):
        ok = False
    finally:
        pool.shutdown(wait=False)
    if len(_resolved) > 1000:
        _resolved.clear()
    _resolved[host] = (now, ok)
    return ok


_resolved: dict[str, tuple[float, bool]] = {}


# The checks, in the order their findings are shown (a row per check).
CHECKS = (
    environment_secrets,
    missing_credentials,
    paths_and_scripts,
    connections,
    free_space,
    scratch_schema,
    schema_rights,
    failed_targets,
    unresolved_hosts,
)
