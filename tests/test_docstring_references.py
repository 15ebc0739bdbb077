"""Every module, class or function a docstring of ``src/`` names exists.

Docstrings are read as the specification's prose, so a reference to a module that was renamed
or merged away (``._machine``, ``._canonical``) sends a reader nowhere.  Checked: Sphinx roles
(:mod:, :func:, :class:, :meth:, :data:, :exc:, :attr:) and double-backquoted dotted names
``tool_call_closure.…``.  A role's bare name resolves as Sphinx would for a reader: in the
module itself, then in its package, then in ``tool_call_closure``.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
ROLE = re.compile(r":(mod|func|class|meth|data|exc|attr|obj):`~?([A-Za-z_.][\w.]*)(?:\(\))?`")
DOTTED = re.compile(r"``(tool_call_closure(?:\.\w+)+)``")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _docstrings(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc:
                yield doc


def _lookup(dotted: str) -> bool:
    """Does ``a.b.c`` name a module, or an attribute path below the longest importable module prefix?"""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def _on_a_class(module: ModuleType, name: str) -> bool:
    """A bare method or attribute name: of a class the module defines (the class being documented)."""
    return any(isinstance(value, type) and hasattr(value, name) for value in vars(module).values())


def _resolves(role: str, target: str, module: ModuleType, package: str) -> bool:
    if target.startswith("."):
        dots = len(target) - len(target.lstrip("."))
        anchor = package.rsplit(".", dots - 1)[0] if dots > 1 else package
        if _lookup(f"{anchor}.{target.lstrip('.')}"):
            return True
        if role == "mod" or dots > 1 or target.startswith("._"):
            return False
        target = target[1:]  # Sphinx's ".Name": the name wherever it is defined, nearest first
    if role == "mod":
        return _lookup(target)
    if role in ("meth", "attr") and "." not in target and _on_a_class(module, target):
        return True
    first = target.split(".")[0]
    if hasattr(builtins, first) or first in ("json", "asyncio", "threading", "concurrent", "linecache", "typing"):
        return _lookup(target) or hasattr(builtins, first)
    return any(_lookup(f"{scope}.{target}") for scope in (module.__name__, package, "tool_call_closure")) or _lookup(
        target
    )


def _references() -> Iterator[tuple[str, str, str]]:
    for path in sorted(SRC.rglob("*.py")):
        name = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for doc in _docstrings(tree):
            for role, target in ROLE.findall(doc):
                yield name, role, target
            for target in DOTTED.findall(doc):
                yield name, "dotted", target


REFERENCES = sorted(set(_references()))


def test_the_docstrings_name_things_at_all() -> None:
    assert len(REFERENCES) > 100  # the scan reads what it should (a broken pattern would find nothing)


@pytest.mark.parametrize(("module_name", "role", "target"), REFERENCES)
def test_docstring_reference_resolves(module_name: str, role: str, target: str) -> None:
    module = importlib.import_module(module_name)
    package = module_name if hasattr(module, "__path__") else module_name.rpartition(".")[0]
    assert _resolves(role, target, module, package), f"{module_name}: :{role}:`{target}` names nothing"


def test_a_stale_reference_is_caught() -> None:
    module = importlib.import_module("tool_call_closure.machine.table")
    assert not _resolves("mod", "._machine", module, "tool_call_closure.machine")
    assert _resolves("mod", ".semantics", module, "tool_call_closure.machine")
    assert not _resolves("func", "no_such_function", module, "tool_call_closure.machine")
