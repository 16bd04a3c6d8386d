"""The import graph: benchapp modules form no cycle and import only
downward through the folders docs/architecture.md draws as floors, runners
modules import only downward through the floors it draws for them, runners/
never imports Django, every module is named in docs/architecture.md, and
the tests under tests/benchapp are named after the modules they test.

Read with the standard library's ast, imports inside functions included,
so a cycle cannot hide in a function body.
"""

import ast
import fnmatch
import re
from pathlib import Path

import pytest

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


def test_whole_tree_forms_no_cycle():
    """Views, management commands and bench/ scripts too (a cycle sat in bench/)."""
    assert find_cycle(tree_graph("benchapp", "bench")) is None


ARCHITECTURE = (ROOT / "docs" / "architecture.md").read_text()


def diagram_lines(section: str) -> list[tuple[str, str]]:
    """The lines of the diagram under a heading of docs/architecture.md, top
    first: each line's first word and the list of modules after it, before
    the two spaces that start what they do."""
    block = ARCHITECTURE.split(section, 1)[1].split("```", 2)[1]
    return [tuple(re.split(r"\s{2,}", line.strip())[:2]) for line in block.strip().splitlines()]


def diagram_floors() -> list[tuple[str, list[str]]]:
    """The floors of the benchapp diagram, top first: each line's folder
    (`web/`, or `benchapp/` for the root) and the module names on it."""
    return [
        (folder, re.findall(r"([\w*]+)(?:\.py|/)", names))
        for folder, names in diagram_lines("## benchapp/ (Django)")
    ]


def floor_of(module: str, floors: list[tuple[str, list[str]]]) -> int | None:
    """The index of the line naming module: benchapp.runs.recording is
    `recording.py` on the `runs/` line, benchapp.web.views.runs is `views/`
    on the `web/` line, benchapp.models is on a `benchapp/` line, and a
    folder's own package (benchapp.runs) is its line."""
    parts = module.split(".")
    folders = {folder for folder, _ in floors}
    if parts[0] == "benchapp" and len(parts) > 1 and f"{parts[1]}/" in folders:
        folder, rest = f"{parts[1]}/", parts[2:]
    else:
        folder, rest = f"{parts[0]}/", parts[1:] or ["__init__"]
    for index, (line_folder, names) in enumerate(floors):
        if line_folder != folder:
            continue
        if not rest or any(re.fullmatch(n.replace("*", ".*"), rest[0]) for n in names):
            return index
    return None


def test_floor_of_reads_folders():
    floors = [("web/", ["views", "forms*"]), ("runs/", ["recording"]), ("benchapp/", ["models"])]
    assert floor_of("benchapp.web.views.runs", floors) == 0
    assert floor_of("benchapp.web.forms_targets", floors) == 0
    assert floor_of("benchapp.runs", floors) == 1
    assert floor_of("benchapp.runs.recording", floors) == 1
    assert floor_of("benchapp.models", floors) == 2
    assert floor_of("benchapp.runs.machines", floors) is None
    assert floor_of("benchapp.unnamed", floors) is None


def test_every_module_is_on_its_folder_line_of_the_diagram():
    floors = diagram_floors()
    unplaced = sorted(m for m in tree_graph("benchapp", "bench") if floor_of(m, floors) is None)
    assert unplaced == [], "modules missing from the diagram (or in a folder it does not draw)"


def test_no_import_goes_to_a_folder_above():
    floors = diagram_floors()
    upward = [
        f"{a} -> {b}"
        for a, deps in tree_graph("benchapp", "bench").items()
        for b in deps
        if floor_of(b, floors) < floor_of(a, floors)
    ]
    assert upward == []


def runners_floors() -> list[tuple[str, list[str]]]:
    """The floors of the runners diagram, top first: each line's floor name
    and what it holds (`cell.py`, `cell*.py`, a folder `tools/`, one file of
    a folder `providers/slots.py`)."""
    return [
        (floor, [name.strip() for name in names.split(",")])
        for floor, names in diagram_lines("## runners/ (no Django)")
    ]


def runners_floor_of(module: str, floors: list[tuple[str, list[str]]]) -> int | None:
    """The index of the line holding module: a file or pattern that names it
    (runners.cellwatch is `cell*.py`, runners.providers.slots is
    `providers/slots.py`), else its folder (runners.providers.aws_ec2 and the
    package runners.providers are `providers/`); runners itself is `__init__.py`."""
    path = "/".join(module.split(".")[1:]) or "__init__"

    def first(holds) -> int | None:
        return next((i for i, (_, names) in enumerate(floors) if any(map(holds, names))), None)

    found = first(
        lambda n: (
            n.endswith(".py")
            and ("/" in n) == ("/" in path)
            and fnmatch.fnmatchcase(f"{path}.py", n)
        )
    )
    if found is None:
        found = first(lambda n: n.endswith("/") and f"{path}/".startswith(n))
    return found


def test_runners_floor_of_reads_files_patterns_and_folders():
    floors = [
        ("run", ["providers/slots.py"]),
        ("cell", ["cell*.py"]),
        ("providers", ["providers/"]),
    ]
    floors += [("base", ["__init__.py", "errors.py"])]
    assert runners_floor_of("runners.providers.slots", floors) == 0
    assert runners_floor_of("runners.cellwatch", floors) == 1
    assert runners_floor_of("runners.providers.aws_ec2", floors) == 2
    assert runners_floor_of("runners.providers", floors) == 2
    assert runners_floor_of("runners", floors) == 3
    assert runners_floor_of("runners.errors", floors) == 3
    assert runners_floor_of("runners.tools.cellar", floors) is None
    assert runners_floor_of("runners.unnamed", floors) is None


def test_every_runners_module_is_on_a_floor():
    floors = runners_floors()
    unplaced = sorted(m for m in runners_graph() if runners_floor_of(m, floors) is None)
    assert unplaced == [], "runners modules missing from the floors of docs/architecture.md"


def test_no_runners_import_goes_to_a_floor_above():
    floors = runners_floors()
    upward = [
        f"{a} -> {b}"
        for a, deps in runners_graph().items()
        for b in deps
        if runners_floor_of(b, floors) < runners_floor_of(a, floors)
    ]
    assert upward == []


def test_every_module_is_named_in_architecture_md():
    """By file name (`cell.py`, `forms*.py`) or its folder (`views/`, `executors/`)."""
    named = set(re.findall(r"([\w*]+)(?:\.py|/)", ARCHITECTURE))
    patterns = [n.replace("*", ".*") for n in named]
    missing = []
    for top in ("benchapp", "runners", "bench"):
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
    graph = tree_graph("benchapp", "bench")
    importers = {name for name, deps in graph.items() if "benchapp.tasks" in deps}
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


# Suites that test a scenario across the whole app rather than one module.
CROSS_CUTTING_TESTS = {"test_foundation.py"}


def module_under_test(test_file: Path) -> Path | None:
    """tests/benchapp/runs/test_orchestration_retries.py -> benchapp/runs/orchestration.py:
    the longest test_<module>[_<aspect>] prefix naming a module (or package) of the folder."""
    relative = test_file.relative_to(ROOT / "tests" / "benchapp")
    folder = ROOT / "benchapp" / Path(*relative.parts[:-1])
    words = relative.stem.removeprefix("test_").split("_")
    for end in range(len(words), 0, -1):
        name = "_".join(words[:end])
        for candidate in (folder / f"{name}.py", folder / name / "__init__.py"):
            if candidate.exists():
                return candidate
    return None


def test_module_under_test_reads_prefixes():
    tests = ROOT / "tests" / "benchapp"
    retries = tests / "runs" / "test_orchestration_retries.py"
    assert module_under_test(retries) == ROOT / "benchapp" / "runs" / "orchestration.py"
    assert module_under_test(tests / "runs" / "test_pricing.py") is None
    assert module_under_test(tests / "test_orchestration.py") is None


def test_benchapp_test_files_are_named_after_their_modules():
    unnamed = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests" / "benchapp").rglob("test_*.py")
        if path.name not in CROSS_CUTTING_TESTS and module_under_test(path) is None
    )
    assert unnamed == [], "test_<module>[_<aspect>].py beside the module's folder"


# "Where a change goes": the files its rows name for a new tool and a new
# provider are the files the last such addition (the one the row says it was
# "counted on") names its tool or provider in, outside tests and docs.
CODE_TREES = ("benchapp", "runners", "bench", "scripts", "templates", "static/js")
CODE_FILES = ("Dockerfile", "docker-compose.yml", "Makefile", "pyproject.toml")
CODE_SUFFIXES = (".py", ".sh", ".txt", ".html", ".js", ".yml", ".yaml", ".toml", ".cfg")


def change_rows() -> dict[str, str]:
    """change -> files column of docs/architecture.md's "Where a change goes" table."""
    table = ARCHITECTURE.split("## Where a change goes", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0] not in ("change", "---"):
            rows[cells[0]] = cells[1]
    return rows


def row_paths(row: str, name: str | dict[str, str]) -> set[str]:
    """The repository paths a row names in backticks, <tool>/<provider>/<engine> read
    as name (or as names[placeholder]) and globs expanded (`runners/tools/<tool>.py`
    -> runners/tools/redis_benchmark.py)."""
    names = name if isinstance(name, dict) else {k: name for k in ("tool", "provider", "engine")}
    paths = set()
    for quoted in re.findall(r"`([^`\s]+)`", row):
        pattern = re.sub(r"<(tool|provider|engine)>", lambda m: names[m[1]], quoted.split(":")[0])
        if "/" not in pattern and not pattern.endswith((".py", ".txt", ".md")):
            continue
        paths |= {str(p.relative_to(ROOT)) for p in ROOT.glob(pattern)} or {pattern}
    return paths


def files_naming(words: set[str]) -> set[str]:
    """Code files outside tests/ and docs/ that name one of words: in a string or
    an import of a Python file (prose in docstrings and comments is not a use),
    anywhere in any other code file."""
    from tests.test_registry_closed import code_strings

    pattern = re.compile("|".join(rf"(?<![\w-]){re.escape(w)}(?![\w-])" for w in words))
    paths = [
        p
        for top in CODE_TREES
        for p in (ROOT / top).rglob("*")
        if p.is_file() and p.suffix in CODE_SUFFIXES and "vendor" not in p.parts
    ]
    paths += [ROOT / name for name in CODE_FILES]
    found = set()
    for path in paths:
        relative = str(path.relative_to(ROOT))
        if "migrations" in path.parts or "templates_plans" in path.parts:
            continue  # frozen history; plan templates are data written with tool names
        if path.suffix == ".py":
            named = any(pattern.search(text) for _, text in code_strings(path))
        else:
            named = bool(pattern.search(path.read_text(errors="replace")))
        if named:
            found.add(relative)
    return found


def counted_on(row: str) -> str:
    match = re.search(r"Counted on `(\w+)`", row)
    assert match, "the row names the addition it was counted on"
    return match.group(1)


def test_row_paths_read_placeholders_and_globs():
    paths = row_paths("`runners/tools/<tool>.py` and `runners/tools/__init__.py`", "sysbench")
    assert paths == {"runners/tools/sysbench.py", "runners/tools/__init__.py"}


def test_a_new_tool_touches_only_the_files_its_row_names():
    from tests.test_registry_closed import KNOWN, tool_names

    row = change_rows()["a new tool"]
    tool = counted_on(row)
    allowed = row_paths(row, tool) | {path for path, name in KNOWN if name == tool}
    assert files_naming(tool_names()[tool]) - allowed == set()
    assert all((ROOT / path).exists() for path in allowed), allowed


def test_a_new_provider_touches_only_the_files_its_row_names():
    from tests.test_registry_closed import provider_names

    row = change_rows()["a new provider"]
    provider = counted_on(row)
    allowed = row_paths(row, provider)
    assert files_naming(provider_names()[provider]) - allowed == set()
    assert all((ROOT / path).exists() for path in allowed), allowed


# The rows that name files without a "counted on" addition: each placeholder
# read as a real one, every file they name must exist (a renamed or removed
# module fails here until the row follows it).
EXAMPLES = {"tool": "sysbench", "provider": "aws_rds", "engine": "postgres"}
NAMED_ROWS = (
    "a new engine",
    "a new chart type",
    "a new telemetry source",
    "a new verdict rule",
    "a new REST endpoint",
)


def test_row_paths_read_each_placeholder():
    row = "`runners/engines/<engine>.py` and `runners/providers/<provider>.py`"
    assert row_paths(row, EXAMPLES) == {
        "runners/engines/postgres.py",
        "runners/providers/aws_rds.py",
    }


@pytest.mark.parametrize("change", NAMED_ROWS)
def test_the_files_a_change_row_names_exist(change):
    row = change_rows()[change]
    paths = row_paths(row, EXAMPLES)
    assert paths, f"{change}: the row names no file"
    missing = sorted(path for path in paths if not (ROOT / path).exists())
    assert missing == [], f"{change}: no such file"


def test_a_new_engine_row_is_counted_on_an_engine():
    from runners.engines import ENGINES

    assert counted_on(change_rows()["a new engine"]) in ENGINES
