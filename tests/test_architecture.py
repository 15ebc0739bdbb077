"""The package's layout is its architecture: layers enforced by import-linter, no import cycle, rooms by role.

The contracts live in ``pyproject.toml`` (``[tool.importlinter]``); the README's
"Architecture" section draws them.
"""

from __future__ import annotations

import ast
import importlib
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "tool_call_closure"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(src: Path) -> subprocess.CompletedProcess[str]:
    """Run import-linter with the project's contracts over the package found in ``src``."""
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_layering_contracts_are_kept() -> None:
    done = _lint_imports(ROOT / "src")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout, done.stdout


@pytest.mark.parametrize(
    ("module", "planted", "contract"),
    [
        ("machine/table.py", "import tool_call_closure.providers", "CLI > conformance kit"),
        ("closure.py", "import tool_call_closure.runners.batch", "CLI > conformance kit"),
        ("machine/context.py", "import tool_call_closure.machine.interpreter", "Inside the machine"),
        ("machine/compiler.py", "import tool_call_closure.machine.interpreter", "Inside the machine"),
        ("providers/openai_chat.py", "import tool_call_closure.conformance.compare", "Providers never import"),
        ("conformance/compare.py", "import tool_call_closure.providers.anthropic", "reaches providers only"),
    ],
)
def test_a_planted_upward_import_breaks_a_contract(tmp_path: Path, module: str, planted: str, contract: str) -> None:
    copy = tmp_path / "tool_call_closure"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / module
    target.write_text(target.read_text(encoding="utf-8") + f"\n{planted}  # planted\n", encoding="utf-8")
    done = _lint_imports(tmp_path)
    assert done.returncode != 0, done.stdout
    broken = [line for line in done.stdout.splitlines() if line.endswith("BROKEN")]
    assert any(contract in line for line in broken) or contract in done.stdout.split("Broken contracts")[-1], (
        done.stdout
    )


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.find_modules_directly_imported_by(node) & modules:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return groups


def test_the_import_graph_has_no_cycle_type_only_imports_included() -> None:
    graph = grimp.build_graph("tool_call_closure", include_external_packages=False, exclude_type_checking_imports=False)
    modules = set(graph.modules)
    assert {"tool_call_closure.machine.interpreter", "tool_call_closure.providers.anthropic"} <= modules
    assert _cycles(graph, modules) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = grimp.ImportGraph()
    for name in ("a", "a.b", "a.c", "a.d"):
        graph.add_module(name)
    graph.add_import(importer="a.b", imported="a.c")
    graph.add_import(importer="a.c", imported="a.b")
    graph.add_import(importer="a.c", imported="a.d")
    assert _cycles(graph, {"a", "a.b", "a.c", "a.d"}) == [["a.b", "a.c"]]


@pytest.mark.parametrize(
    ("package", "modules"),
    [
        (
            "tool_call_closure.machine",
            [
                "table",
                "context",
                "semantics",
                "reading",
                "inliner",
                "compiler",
                "module_form",
                "generated",
                "interpreter",
                "regenerate",
                "build_compiled",
                "diagram",
            ],
        ),
        (
            "tool_call_closure.providers",
            [
                "openai_chat",
                "openai_responses",
                "anthropic",
                "gemini",
                "bedrock",
                "mistral",
                "calls",
                "reading",
                "result_text",
                "sdk_types",
            ],
        ),
        (
            "tool_call_closure.conformance",
            ["serve", "subject", "vectors", "conform", "compare", "coverage", "modelgen", "fuzz", "scenarios"],
        ),
        ("tool_call_closure.cli", ["main", "demo"]),
        (
            "tool_call_closure.runners",
            ["asyncio_runner", "thread_runner", "batch", "outcomes", "options", "mcp_tools", "mcp_wire", "mcp_results"],
        ),
    ],
)
def test_each_room_holds_its_modules(package: str, modules: list[str]) -> None:
    importlib.import_module(package)
    for name in modules:
        assert importlib.import_module(f"{package}.{name}").__doc__, f"{package}.{name} has no theory of operation"


def test_the_node_adapter_lives_in_the_kit() -> None:
    assert (PACKAGE / "conformance" / "node" / "adapter.cjs").is_file()


def test_every_export_format_of_the_table_is_rendered_by_one_provider_module() -> None:
    from tool_call_closure.machine.table import TABLE
    from tool_call_closure.providers import PROVIDERS, RENDERERS

    formats = {m["format"] for m in TABLE.operations["export"].methods}
    assert set(RENDERERS) == formats
    assert {m.FORMAT: m.render_records for m in PROVIDERS} == dict(RENDERERS)
    assert len({m.FORMAT for m in PROVIDERS}) == len(PROVIDERS)


def _package_dirs() -> list[Path]:
    return sorted(path.parent for path in PACKAGE.rglob("__init__.py"))


def _members(package_dir: Path) -> set[str]:
    """The modules and subpackages of a package, by name."""
    modules = {path.stem for path in package_dir.glob("*.py")} - {"__init__", "__main__"}
    return modules | {path.name for path in package_dir.iterdir() if (path / "__init__.py").exists()}


def _mentioned(doc: str, name: str) -> bool:
    return re.search(rf"``{name}/?``|:mod:`~?\.{name}`", doc) is not None


@pytest.mark.parametrize("package_dir", _package_dirs(), ids=lambda path: path.name)
def test_each_package_map_names_every_module_it_holds(package_dir: Path) -> None:
    # A newcomer reads a package's __init__ to find where a thing lives: its map must be complete.
    doc = (package_dir / "__init__.py").read_text(encoding="utf-8").split('"""')[1]
    missing = sorted(name for name in _members(package_dir) if not _mentioned(doc, name))
    assert not missing, f"{package_dir.name}/__init__.py does not name {missing}"


@pytest.mark.parametrize("package_dir", _package_dirs(), ids=lambda path: path.name)
def test_each_package_map_names_only_modules_that_exist(package_dir: Path) -> None:
    doc = (package_dir / "__init__.py").read_text(encoding="utf-8").split('"""')[1]
    named = set(re.findall(r"^``(\w+)/?``\s", doc, flags=re.M)) | set(re.findall(r":mod:`~?\.(\w+)`", doc))
    assert named <= _members(package_dir) | {"node"}, sorted(named - _members(package_dir))


def test_a_package_map_missing_a_module_is_caught() -> None:
    assert _mentioned("``table``  load it", "table")
    assert _mentioned("see :mod:`.table`", "table")
    assert not _mentioned("``tables``  load them", "table")


def test_the_kits_entry_points_import_from_the_package_on_first_use() -> None:
    # conformance.__all__ names the kit's entry points; each is loaded from its module when first asked for, so
    # importing the package imports none of its modules (a subprocess: this test process has imported them all).
    import tool_call_closure.conformance as kit

    assert sorted(kit.__all__) == sorted(kit._HOMES)
    for name in kit.__all__:
        home = importlib.import_module(f"tool_call_closure.conformance.{kit._HOMES[name]}")
        assert getattr(kit, name) is getattr(home, name)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        kit.nothing  # noqa: B018
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, tool_call_closure.conformance; print(sorted(m for m in sys.modules if "
            "m.startswith('tool_call_closure.conformance.')))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert loaded.strip() == "[]"


MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 80
# Generated code is exempt: it is read as the table's rendering, one function per operation.
GENERATED = {"machine/generated.py"}


def _sizes() -> Iterator[tuple[str, str, int]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name in GENERATED:
            continue
        text = path.read_text(encoding="utf-8")
        yield name, "module", len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                yield name, node.name, node.end_lineno - node.lineno + 1


def test_every_module_and_function_is_one_a_reader_can_hold_in_mind() -> None:
    too_long = [
        f"{name}: {what} has {lines} lines"
        for name, what, lines in _sizes()
        if lines > (MAX_MODULE_LINES if what == "module" else MAX_FUNCTION_LINES)
    ]
    assert too_long == []
