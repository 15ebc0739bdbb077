"""The compiled build: the generated machine and its hot helpers compiled by mypyc, used only while fresh.

Theory of operation
-------------------
Nothing here is checked in but this file.  ``python -m
tool_call_closure.machine.build_compiled`` (:mod:`tool_call_closure.machine.build_compiled`) copies each
module of :data:`COMPILED_MODULES` — the checked-in machine
(``machine/generated.py``), the function-only helpers it calls on every
operation (``machine/semantics.py``, ``machine/reading.py``), the run
record it reads on every operation (``machine/run.py``) and the plain-data
JSON writer every success and export uses (``ecma_plain.py``) — into this
package under a name of its own, points the copies' imports of one another
at the copies (:data:`REWRITES`), compiles them with mypyc (one C extension
per copy and a shared library, beside this file) and records the sha256 of
each pure source it compiled in ``build.json``.

A process that runs the compiled machine uses the compiled ``Run`` throughout
(:func:`run_class`, called by the contexts at import, chooses it exactly when
the compiled machine is to run; :func:`load` refuses a process that chose the
pure one): compiled code reads a run's fields natively and accepts no other
class.

The other pure modules stay what every other part of the package imports: the
values, contexts and the public class are never compiled (a compiled
annotation would turn a caller's bad argument into a ``TypeError`` where the
public class must raise ``UsageError``), the code generator reads the pure
semantics' source, and the fault injector steps through the pure machine.

:func:`load` returns the compiled machine only when every compiled copy is
present, importable by this interpreter, really compiled, and built from the
sources present now (a changed ``generated.py`` makes the build stale: it is
then ignored, never half used).  ``TCC_MACHINE`` chooses
(:mod:`tool_call_closure.machine.interpreter`): unset, the compiled build
when :func:`load` finds it, else the pure generated module.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import json
import os
import types
from pathlib import Path
from typing import Final, TypeVar

_Class = TypeVar("_Class", bound=type)

__all__ = [
    "BUILD_RECORD",
    "CLASS_HOMES",
    "COMPILED_MODULES",
    "PACKAGE_ROOT",
    "REWRITES",
    "RUNS_COMPILED",
    "SWITCH",
    "load",
    "run_class",
    "source_sha256",
]

PACKAGE_ROOT: Final = Path(__file__).resolve().parent.parent
"""The ``tool_call_closure`` folder, which the sources of :data:`COMPILED_MODULES` are relative to."""

COMPILED_MODULES: Final = {
    "ecma_plain": "ecma_plain.py",
    "machine_run": "machine/run.py",
    "machine_reading": "machine/reading.py",
    "machine_semantics": "machine/semantics.py",
    "machine_generated": "machine/generated.py",
}
"""Compiled module (in this package) -> the pure source it is a copy of, relative to :data:`PACKAGE_ROOT`.
Only modules that define no class (a compiled copy of a class would be another class than the pure one), except
:data:`CLASS_HOMES`."""

CLASS_HOMES: Final = frozenset({"machine/run.py"})
"""The compiled modules that define a class: ``Run``, whose compiled copy is the one class of its kind in a process
that runs the compiled machine (:func:`run_class` chooses; :func:`load` refuses a process that chose the other)."""

SWITCH: Final = "TCC_MACHINE"
"""The environment variable that chooses the machine (:data:`tool_call_closure.machine.interpreter.MACHINE_SWITCH`).
"""

RUNS_COMPILED: Final = ("generated", "compiled")
"""The values of :data:`SWITCH` (unset is ``generated``) under which the compiled machine runs when it is fresh."""

REWRITES: Final = {
    "tool_call_closure.ecma_plain": "tool_call_closure._compiled.ecma_plain",
    "tool_call_closure.machine.run": "tool_call_closure._compiled.machine_run",
    "tool_call_closure.machine.reading": "tool_call_closure._compiled.machine_reading",
    "tool_call_closure.machine.semantics": "tool_call_closure._compiled.machine_semantics",
}
"""In the copies: a pure module's name -> its compiled copy's (so compiled code calls compiled code natively)."""

MACHINE_MODULE: Final = "machine_generated"
BUILD_RECORD: Final = Path(__file__).with_name("build.json")
"""What the last build compiled: ``{"sources": {module: sha256 of its pure source}, "mypy": version}``."""


def source_sha256(relative: str) -> str:
    """The sha256 of the pure source ``relative`` (to :data:`PACKAGE_ROOT`) as it is now."""
    return hashlib.sha256((PACKAGE_ROOT / relative).read_bytes()).hexdigest()


def _is_extension(module: types.ModuleType) -> bool:
    filename = getattr(module, "__file__", None) or ""
    return filename.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def staleness() -> str | None:
    """Why the compiled build cannot be used (not built, built from other sources), or ``None`` if it can.

    Checked on the record and the sources alone, before any compiled module is imported."""
    try:
        record = json.loads(BUILD_RECORD.read_text(encoding="utf-8"))
        built = record["sources"]
    except (OSError, ValueError, KeyError, TypeError):
        return "not built (python -m tool_call_closure.machine.build_compiled builds it)"
    for name, relative in COMPILED_MODULES.items():
        try:
            current = source_sha256(relative)
        except OSError:
            return f"the source of {name} ({relative}) is not present"
        if built.get(name) != current:
            return f"stale: {relative} changed since the build (rebuild it)"
    return None


def run_class(pure: _Class) -> _Class:
    """The ``Run`` class this process uses: the compiled one when the compiled machine is to run, else ``pure``.

    The compiled machine is to run when :data:`SWITCH` is unset, ``generated``
    or ``compiled`` and the build is fresh and importable (what
    :func:`tool_call_closure.machine.interpreter._shipped_machine` then
    loads).  Called once, by :mod:`tool_call_closure.machine.context`, before
    anything builds a run."""
    if os.environ.get(SWITCH, "generated") not in RUNS_COMPILED or staleness() is not None:
        return pure
    try:
        module = importlib.import_module(f"{__name__}.machine_run")
    except ImportError:
        return pure
    compiled: _Class = module.Run
    return compiled if _is_extension(module) else pure


def load(run: type) -> tuple[types.ModuleType | None, str]:
    """``(the compiled machine module, "fresh")``, or ``(None, why not)``; imports the copies only when fresh.

    ``run`` is the ``Run`` class the process uses (``context.Run``): the
    compiled machine is refused unless it is the compiled one."""
    why = staleness()
    if why is not None:
        return None, why
    modules: dict[str, types.ModuleType] = {}
    for name in COMPILED_MODULES:
        try:
            modules[name] = importlib.import_module(f"{__name__}.{name}")
        except ImportError as error:  # built for another interpreter, or a library missing
            return None, f"not importable here: {error}"
        if not _is_extension(modules[name]):
            return None, f"{name} is not a compiled extension ({modules[name].__file__})"
    if run is not modules["machine_run"].Run:  # the compiled machine's code accepts its own Run only
        chosen = os.environ.get(SWITCH, "generated")
        return None, f"not usable in this process: it chose the pure Run record ({SWITCH}={chosen})"
    return modules[MACHINE_MODULE], "fresh"
