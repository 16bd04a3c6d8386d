"""The registries are closed: a tool, provider or database engine is named
only by its own module(s) and its registry, so adding one touches nothing else.

A "name" is a tool's registry key or binary (sysbench, stress_ng,
stress-ng, ...) or a distinctive provider name (aws_rds, static_cluster;
"static" and "local" are ordinary words) or a resource kind only one
provider makes or its monitoring's source (cloudwatch), or an engine's kind (mysql, postgres, redis), written as a
string in code (docstrings and comments are prose and may give examples) or
imported as a module. Allowed to name them: the owning modules below, plan
templates (benchapp/plans/templates_plans), migrations (frozen history),
docs and tests; and for engines, the tools and providers of ENGINE_USERS.
"""

import ast
import re
from pathlib import Path

import pytest

from runners.engines import ENGINES
from runners.providers import PROVIDERS
from runners.tools import TOOLS

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("benchapp", "runners")
NOT_SCANNED = ("benchapp/plans/templates_plans", "benchapp/migrations")
# Providers named after an ordinary word: a string "static" is no evidence.
GENERIC_PROVIDERS = {"static", "local"}
# Names still written outside their owners, each with why it is acceptable
# for now. The test fails when one disappears too, so the list only shrinks.
KNOWN = {
    ("benchapp/runs/connection.py", "fio"): "help text of a host check's finding",
    ("benchapp/web/forms_targets.py", "pgbench"): "help text: what custom scripts allow",
    ("benchapp/management/commands/demo_run.py", "sysbench"): "the demo's plans are data",
    ("benchapp/management/commands/demo_run.py", "fio"): "the demo's plans are data",
    ("runners/docs.py", "sysbench"): "generated plan reference prose",
    ("runners/docs.py", "pgbench"): "generated plan reference prose",
    ("runners/docs.py", "mysqlslap"): "generated plan reference prose (several clients)",
    ("runners/docs.py", "fio"): "generated plan reference prose (several clients)",
    ("runners/docs.py", "redis_benchmark"): "generated plan reference prose (several clients)",
    ("runners/engines/mysql.py", "mysqlslap"): "help text of the access check's finding",
    ("runners/engines/mysql.py", "sysbench"): "help text of the access check's finding",
    ("runners/engines/postgres.py", "pgbench"): "help text of the access check's finding",
    ("runners/engines/postgres.py", "sysbench"): "help text of the access check's finding",
    ("runners/docs.py", "mysql"): "generated plan reference prose (snapshot_datadir)",
    ("benchapp/management/commands/demo_run.py", "mysql"): "the demo's target is data",
    ("benchapp/accounts/targetguard.py", "mysql"): "the app's own database, not a target",
    ("benchapp/accounts/targetguard.py", "postgres"): "the app's own database, not a target",
    ("benchapp/accounts/targetguard.py", "redis"): "the app's own broker, not a target",
}
# Modules that may name engines besides runners/engines/: a tool is written
# for the engines it runs against (its TARGET_KINDS, its endpoint's kind, its
# client's options), and a cloud provider makes servers of an engine (RDS's
# engine names are the API's). Adding an engine adds the tools that run
# against it; it changes none of these.
ENGINE_USERS = {
    "runners/tools/": "a tool declares the kinds it runs against and builds their options",
    "runners/providers/aws_rds.py": "RDS engines and the kinds of target they make",
    "runners/providers/aws_ec2.py": "the kinds of target an EC2 instance may serve",
}


def tool_names() -> dict[str, set[str]]:
    """tool -> the words that name it (registry key, its dashed form, its binary)."""
    return {name: {name, name.replace("_", "-"), module.BINARY} for name, module in TOOLS.items()}


def provider_names() -> dict[str, set[str]]:
    """provider -> its name, the resource kinds only it makes and its monitoring's source."""
    names = {}
    for name, provider in PROVIDERS.items():
        words = set() if name in GENERIC_PROVIDERS else {name}
        kinds = set(provider.PRIMARY_KINDS + provider.COUNTED_KINDS + provider.PRICED_KINDS)
        # Its monitoring's source: telemetry and verdicts ask the provider for it.
        monitoring = {provider.MONITORING_SOURCE} if provider.MONITORING_SOURCE else set()
        names[name] = words | kinds | monitoring
    return names


def engine_names() -> dict[str, set[str]]:
    """engine -> its kind (the registry key: mysql, postgres, redis)."""
    return {name: {name} for name in ENGINES}


def owners(kind: str, name: str) -> set[str]:
    """The files (relative paths) allowed to name a tool, provider or engine."""
    if kind == "engine":  # the engine modules (they share one interface) and ENGINE_USERS
        files = {str(p.relative_to(ROOT)) for p in (ROOT / "runners/engines").glob("*.py")}
        return files | {str(p.relative_to(ROOT)) for u in ENGINE_USERS for p in ROOT.glob(u + "*")}
    if kind == "tool":
        return {str(p.relative_to(ROOT)) for p in (ROOT / "runners/tools").glob(f"{name}*.py")}
    module = type(PROVIDERS[name]).__module__
    family = module.rsplit(".", 1)[-1].split("_")[0]  # aws_rds -> the aws_* modules
    files = {str(p.relative_to(ROOT)) for p in (ROOT / "runners/providers").glob(f"{family}_*.py")}
    return files | {module.replace(".", "/") + ".py"}


def code_strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string constant in path that is not a docstring."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                found.append((node.lineno, node.value))
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [(node.lineno, alias.name) for alias in node.names]
            found.append((node.lineno, node.module.rsplit(".", 1)[-1]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.rsplit(".", 1)[-1]) for alias in node.names]
    return found


def scanned_files() -> list[Path]:
    paths = [p for top in SCANNED for p in (ROOT / top).rglob("*.py")]
    return sorted(p for p in paths if not str(p.relative_to(ROOT)).startswith(NOT_SCANNED))


def violations() -> list[str]:
    """'path:line names tool|provider X' for every name used outside its owners
    (KNOWN ones included)."""
    registries = {
        "runners/tools/__init__.py",
        "runners/providers/__init__.py",
        "runners/engines/__init__.py",
    }
    named = [("tool", n, w) for n, w in tool_names().items()]
    named += [("provider", n, w) for n, w in provider_names().items()]
    named += [("engine", n, w) for n, w in engine_names().items()]
    found = []
    for path in scanned_files():
        relative = str(path.relative_to(ROOT))
        if relative in registries:
            continue
        for line, text in code_strings(path):
            for kind, name, words in named:
                if relative in owners(kind, name):
                    continue
                if any(re.search(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text) for w in words):
                    found.append(f"{relative}:{line} names {kind} {name}: {text[:60]!r}")
    return found


def test_scanner_sees_a_name_in_code_but_not_in_prose(tmp_path):
    source = tmp_path / "m.py"
    source.write_text('"""Runs sysbench."""\nTOOL = "sysbench"  # fio\n')
    assert code_strings(source) == [(2, "sysbench")]


def test_owners_are_the_modules_of_each_name():
    assert owners("tool", "sysbench") >= {
        "runners/tools/sysbench.py",
        "runners/tools/sysbench_parse.py",
    }
    assert "runners/providers/aws_common.py" in owners("provider", "aws_rds")
    assert owners("provider", "static_cluster") == {"runners/providers/static_cluster.py"}


def known(line: str) -> tuple[str, str]:
    """(path, name) of a violation line."""
    path, _, rest = line.partition(":")
    return path, rest.split(" names ", 1)[1].split(":", 1)[0].split(" ", 1)[1]


def test_no_tool_or_provider_is_named_outside_its_registry():
    found = violations()
    new = [line for line in found if known(line) not in KNOWN]
    assert new == [], "\n".join(new)
    gone = set(KNOWN) - {known(line) for line in found}
    assert gone == set(), f"no longer named there: remove from KNOWN: {sorted(gone)}"


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_every_tool_module_is_owned(name):
    assert f"runners/tools/{name}.py" in owners("tool", name)


@pytest.mark.parametrize("name", sorted(ENGINES))
def test_every_engine_module_is_owned(name):
    assert f"runners/engines/{name}.py" in owners("engine", name)
    assert "runners/dbstatus.py" not in owners("engine", name)
