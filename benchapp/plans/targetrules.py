"""What a stored target may be: the rules the target form and the API both
apply, to typed values (a Target row, lists, a provision mapping).

Each check returns problems as {field: message} (None: the target as a
whole), so the form adds them to its fields and the API answers a 400
naming the same fields with the same messages.
"""

from __future__ import annotations

import re

from benchapp.models import Membership, Target
from benchapp.plans import planning
from runners.errors import ValidationError
from runners.planspec import ABS_PATH, FORBIDDEN_DIRS
from runners.plantargets import LOCAL_HOSTS
from runners.tools import default_tool, get_tool

NAME = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"
NAME_RULE = "Use letters, digits, '.', '_' and '-' only."
PROVISION_RULE = "Expected a mapping such as {provider: NAME, ...}."
REFUSALS = {
    "allow_custom_scripts": "Only a team admin may allow custom scripts on a target.",
    "data_dirs": "Only an operator (staff) may set a target's data directories: they "
    "are where tools may write on this server.",
}


def check(target: Target, current: Target, may: dict[str, bool]) -> dict[str | None, str]:
    """Every rule, the first problem per field: the form's and the API's one
    check of a target (its name, its permission fields by who changes them,
    its data directories, then the target itself). current: the stored row
    (a new Target() when creating); may: may_change's answer."""
    found = permission_problems(target, current, may)
    if problem := name_problem(target):
        found["name"] = problem
    if "data_dirs" not in found and (problem := data_dirs_problem(target.data_dirs)):
        found["data_dirs"] = problem
    return problems(target, found)


def may_change(user, team) -> dict[str, bool]:
    """Which permission fields (REFUSALS) the user may change on the team's targets:
    team admins allow custom scripts, operators (staff) set data directories."""
    membership = Membership.objects.filter(team=team, user=user).first() if user else None
    return {
        "allow_custom_scripts": bool(membership and membership.allows(Membership.ADMIN)),
        "data_dirs": bool(user and user.is_staff),
    }


def name_problem(target: Target) -> str:
    """Why the target's name may not be used in its team ("" when it may)."""
    if not re.fullmatch(NAME, target.name or ""):
        return NAME_RULE
    taken = Target.objects.filter(team=target.team, name=target.name).exclude(pk=target.pk)
    return "This team already has a target with this name." if taken.exists() else ""


def data_dirs_problem(dirs: list[str]) -> str:
    """Why these data directories may not be allowed ("" when they may)."""
    for path in dirs:
        if not re.fullmatch(ABS_PATH, path) or ".." in path.split("/"):
            return f"{path}: an absolute path of letters, digits and _ . / + @ - (no '..')."
        if path.rstrip("/") in FORBIDDEN_DIRS | {""}:
            return f"{path} is a system directory."
    return ""


def permission_problems(target: Target, current: Target, may: dict[str, bool]) -> dict:
    """{field: refusal} for each permission field changed by someone who may not."""
    return {
        name: refusal
        for name, refusal in REFUSALS.items()
        if getattr(target, name) != getattr(current, name) and not may[name]
    }


def problems(target: Target, found: dict | None = None) -> dict[str | None, str]:
    """What is wrong with the target itself, by field, added to the problems
    already `found` (its name, its permissions); {} when nothing is.

    The plan validator is the one judge of a target's connection fields: the
    target is tried in a minimal plan of its kind's default tool, once
    nothing else is wrong.
    """
    found = dict(found or {})
    if not isinstance(target.provision, dict):
        return {**found, "provision": PROVISION_RULE}
    if not isinstance(target.cloud_instance, dict):
        return {**found, "cloud_instance": PROVISION_RULE}
    if not target.host and not target.provision and target.kind != "host":
        found["host"] = "A database target needs a host (or a provisioning spec)."
    if target.kind == "host" and not target.directory:
        found["directory"] = "A host target needs the directory the tools work in."
    if found:
        return found
    tool = default_tool(target.kind)
    workdir = getattr(get_tool(tool), "WORKDIR_PARAM", None)
    try:
        directory = directory_problem(target)
        if directory:
            raise ValidationError("directory", directory)
        planning.validate_document(
            {
                "name": "check",
                "tool": tool,
                "targets": [planning.target_document(target)],
                **({"params": {workdir: target.directory}} if workdir else {}),
            }
        )
    except ValidationError as exc:
        # The innermost target field the culprit lies in (cloud_instance for
        # targets[0].cloud_instance.region), else the target as a whole.
        parts = [part.split("[")[0] for part in exc.param.split(".")]
        fields = {field.name for field in Target._meta.get_fields()}
        found[next((part for part in reversed(parts) if part in fields), None)] = exc.message
    return found


def directory_problem(target: Target) -> str:
    """Why the tools may not work in target.directory, or "" when they may.

    The rules are the sandbox's (runners.context.RunContext.scope): on the
    worker host, and over SSH without custom scripts, a tool may only write
    in the operator-approved data_dirs; a provisioned host, or an SSH host
    whose team admin allows custom scripts, may use any path.
    """
    from runners.sandbox import ANYTHING, Scope

    path = target.directory
    if not path:
        return ""
    if not re.fullmatch(ABS_PATH, path) or ".." in path.split("/"):
        return "An absolute path of letters, digits and _ . / + @ - (no '..')."
    if path.rstrip("/") in FORBIDDEN_DIRS | {""}:
        return f"{path} is a system directory, not one for benchmark files."
    local = not target.ssh_host and not target.provision and target.host in ("", *LOCAL_HOSTS)
    if target.provision or (target.ssh_host and target.allow_custom_scripts):
        scope = ANYTHING
    else:
        scope = Scope(custom_scripts=False, paths=tuple(target.data_dirs))
    try:
        scope.check_path("directory", path)
    except ValidationError:
        where = "on this server" if local else f"on {target.ssh_host or target.host}"
        allowed = ", ".join(target.data_dirs) or "none yet"
        return (
            f"{path} is not inside one of this target's data directories ({allowed}): "
            f"the tools may only write {where} where an operator (staff) has allowed it. Ask an "
            "operator to add the directory to the target's data directories"
            + ("" if local else ", or a team admin to allow custom scripts on it")
            + "."
        )
    return ""
