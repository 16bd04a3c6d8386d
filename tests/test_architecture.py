"""The import graph: benchapp modules form no cycle and import only
downward through the floors docs/architecture.md draws, runners/ never
imports Django, and every module is named in docs/architecture.md.

Read with the standard library's ast, imports inside functions included,
so a cycle cannot hide in a function body.
"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def imported_modules(path: Path) -> set[str]:
    """Every module path.py imports (absolute names; `from a import b` gives a and a.b)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def benchapp_graph() -> dict[str, set[str]]:
    """benchapp module -> the benchapp modules it imports (top-level files only)."""
    modules = {
        f"benchapp.{p.stem}": p for p in (ROOT / "benchapp").glob("*.py") if p.stem != "__init__"
    }
    return {
        name: {m for m in imported_modules(path) if m in modules and m != name}
        for name, path in modules.items()
    }


def module_name(path: Path) -> str:
    """benchapp/web/views/runs.py -> benchapp.web.views.runs (a package is its __init__)."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def tree_graph(*tops: str) -> dict[str, set[str]]:
    """Every module under the top folders (subpackages included: views/,
    management/, bench/) -> the modules of the same trees it imports."""
    modules = {
        module_name(p): p
        for top in tops
        for p in (ROOT / top).rglob("*.py")
        if "migrations" not in p.parts
    }
    graph = {}
    for name, path in modules.items():
        deps = {m for m in imported_modules(path) if m in modules and m != name}
        graph[name] = {d for d in deps if not any(o.startswith(d + ".") for o in deps)}
    return graph


def runners_graph() -> dict[str, set[str]]:
    """runners module (a package is its __init__) -> the runners modules it imports."""
    modules = {}
    for path in (ROOT / "runners").rglob("*.py"):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for name, path in modules.items():
        deps = {m for m in imported_modules(path) if m in modules and m != name}
        # `from runners.executors import remote` names the package only as
        # the way to its submodule: the edge is to the submodule.
        graph[name] = {d for d in deps if not any(o.startswith(d + ".") for o in deps)}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a list of modules (first repeated at the end), or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_find_cycle_sees_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_imports_inside_functions_are_read(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from benchapp import tasks\n    import django.db\n")
    assert {"benchapp.tasks", "django.db"} <= imported_modules(source)


def test_benchapp_modules_form_no_cycle():
    assert find_cycle(benchapp_graph()) is None


def test_whole_tree_forms_no_cycle():
    """Views, management commands and bench/ scripts too (a cycle sat in bench/)."""
    assert find_cycle(tree_graph("benchapp", "bench")) is None


ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def diagram_floors() -> list[list[str]]:
    """The benchapp floors of docs/architecture.md's diagram, top first: the
    module names in the left column (before two spaces) of each line of its
    code block."""
    block = ARCHITECTURE.split("## benchapp/ (Django)", 1)[1].split("```", 2)[1]
    columns = [re.split(r"\s{2,}", line.strip())[0] for line in block.strip().splitlines()]
    return [re.findall(r"([\w*]+)(?:\.py|/)", column) for column in columns]


def floor_of(module: str, floors: list[list[str]]) -> int | None:
    """The floor whose names match module (forms*.py matches forms_targets)."""
    for index, names in enumerate(floors):
        if any(re.fullmatch(name.replace("*", ".*"), module) for name in names):
            return index
    return None


def test_benchapp_imports_only_go_down_the_documented_floors():
    floors = diagram_floors()
    graph = benchapp_graph()
    unplaced = sorted(m for m in graph if floor_of(m.split(".")[-1], floors) is None)
    assert unplaced == [], "modules missing from the diagram"
    upward = [
        f"{a} -> {b}"
        for a, deps in graph.items()
        for b in deps
        if floor_of(a.split(".")[-1], floors) > floor_of(b.split(".")[-1], floors)
    ]
    assert upward == []


def test_every_module_is_named_in_architecture_md():
    """By file name (`cell.py`, `forms*.py`) or its folder (`views/`, `executors/`)."""
    named = set(re.findall(r"([\w*]+)(?:\.py|/)", ARCHITECTURE))
    patterns = [n.replace("*", ".*") for n in named]
    missing = []
    for top in ("benchapp", "runners"):
        for path in (ROOT / top).rglob("*.py"):
            parts = path.relative_to(ROOT).parts
            if "migrations" in parts or path.stem == "__init__" and len(parts) == 2:
                continue
            candidates = [path.stem, *parts[1:-1]]
            if not any(re.fullmatch(p, c) for p in patterns for c in candidates):
                missing.append(str(path.relative_to(ROOT)))
    assert sorted(missing) == []


def test_runners_modules_form_no_cycle():
    """runners/ reads downward too: tools declare, the registry lists them,
    the metric catalog and command helpers sit below both."""
    assert find_cycle(runners_graph()) is None


def test_domain_modules_never_import_tasks():
    """Tasks are sent by name through benchapp.dispatch; only Celery's own
    modules (and the beat schedule) may name benchapp.tasks."""
    importers = {name for name, deps in benchapp_graph().items() if "benchapp.tasks" in deps}
    assert importers == set()


def test_runners_never_import_django():
    offenders = []
    for path in sorted((ROOT / "runners").rglob("*.py")):
        django = {
            m
            for m in imported_modules(path)
            if m == "django"
            or m.startswith("django.")
            or m == "benchapp"
            or m.startswith("benchapp.")
        }
        if django:
            offenders.append(f"{path.relative_to(ROOT)}: {sorted(django)}")
    assert offenders == []
