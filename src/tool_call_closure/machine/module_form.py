"""The shipped table's compiled machine as a module of its own: the text of ``machine/generated.py``.

Theory of operation
-------------------
:func:`module_source` is :func:`.compiler.generate_source`'s code with what a
module needs to stand alone and be read: a header (what it is, how to
regenerate it, the sha256 digests of the table's text and of the sources it
was generated from: :func:`digest_sources`), imports of every helper, context
class and annotation it names, every parameter and working field annotated as
the context classes declare them, and the annotated locals of the inlined
bodies declared once per operation.  :mod:`.regenerate` formats it with ruff
(wrapping only) and writes it; :func:`.interpreter.checked_in_module` uses the
file only while its digests match what is present.
"""

from __future__ import annotations

import ast
import builtins
import hashlib
import inspect
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from tool_call_closure.errors import TableError
from tool_call_closure.machine.compiler import NAMES_NOTE, generate
from tool_call_closure.machine.inliner import IDENTIFIER, KINDS, Code, context_fields, python_name
from tool_call_closure.machine.specialize import method_functions
from tool_call_closure.machine.table import Table

__all__ = ["digest_sources", "module_source"]

_MODULE_DOC: Final = '''"""The transition table {version}, compiled: one function per operation.

Theory of operation
-------------------
Generated: do not edit.  This is the machine that runs.  ``tool_call_closure.machine.compiler``
writes the table (``spec/machine.json``) out as Python: each operation's
phases in order, each phase's rows as an ``if``/``elif`` chain, the bodies
of the semantics (``machine/semantics.py``) inlined.  The public class calls
``enter_<op>`` here; the definitional walk (``Machine.walk``) is its oracle
on every vector and every step the bounded model check reaches, and
``TCC_MACHINE=walk`` runs the walk instead (breakpoints in the semantics fire).

Regenerate after changing the table, the semantics, the contexts or the
compiler (``tests/test_generated.py`` fails until you do)::

    python -m tool_call_closure.machine.regenerate

The two digests below name what this was generated from; when either does
not match the files present, the interpreter ignores this module and
generates the machine at import, as it does for any other table.

{names}
"""'''


def digest_sources(table_text: str, modules: Iterable[Any]) -> tuple[str, str]:
    """(sha256 of the table's text, sha256 of the source files of ``modules``): what a module was generated from."""
    table = hashlib.sha256(table_text.encode("utf-8")).hexdigest()
    sources = hashlib.sha256()
    for module in modules:
        sources.update(inspect.getsource(module).encode("utf-8"))
    return table, sources.hexdigest()


def module_source(
    table: Table,
    implementations: Mapping[str, Mapping[str, Callable[..., Any]]],
    helpers: Mapping[str, Any],
    contexts: Mapping[str, type],
    digests: tuple[str, str],
) -> str:
    """The compiled table as a module of its own: imports, annotations, and the digests it was generated from.

    The same functions :func:`.compiler.generate_source` writes, with the parameters
    and working fields annotated as the context classes declare them, the
    helpers and the modules inlined bodies read imported by name, and every
    called implementation bound from its own module.  Unwrapped: the
    checked-in file is this text formatted (``machine.regenerate``).
    """
    code = Code(implementations)
    code.typed = True
    imports: dict[str, set[str]] = {"typing": {"Any", "Final"}, "collections.abc": {"Callable", "Mapping"}}
    aliases = [f"import {module} as {alias}" for alias, module in sorted(code.modules.items())]
    bare = generate(table, code, contexts, head="")
    code.declared.clear()
    body = ast.parse("\n".join([bare, *method_functions(table, bare)[0]]))
    used = {node.id for node in ast.walk(body) if isinstance(node, ast.Name)}
    for name, value in helpers.items():
        if name not in used:
            continue  # not used by this table's operations
        module, attribute = _origin(value)
        imports.setdefault(module, set()).add(attribute if attribute == name else f"{attribute} as {name}")
    for context in contexts.values():
        imports.setdefault(context.__module__, set()).add(context.__name__)
        fields = context_fields(context)
        for annotation in fields.types.values():
            for identifier in IDENTIFIER.findall(annotation):
                origin = _annotation_origin(context, identifier)
                if origin is not None:
                    imports.setdefault(origin, set()).add(identifier)
    for kind in KINDS:
        for name, function in implementations.get(kind, {}).items():
            if (kind, name) not in code.inlined:
                module, attribute = _origin(function)
                imports.setdefault(module, set()).add(f"{attribute} as {python_name(kind, name)}")
    doc = _MODULE_DOC.format(version=table.version, names=NAMES_NOTE)
    # The table's default (no row ended the operation) is written after rows that may always end it.
    lines = ["# mypy: warn-unreachable=false", doc, "", "from __future__ import annotations", ""]
    standard = sorted(module for module in imports if module.partition(".")[0] in sys.stdlib_module_names)
    for group in (standard, sorted(set(imports) - set(standard))):
        lines += [f"from {module} import {', '.join(sorted(imports[module]))}" for module in group]
        lines += [*(aliases if group is not standard else ()), ""]
    lines += ["# What this module was generated from: the table's text, and the sources of the semantics, the contexts"]
    lines += ["# and the code generator (sha256; see tool_call_closure.machine.interpreter.checked_in_module)."]
    lines += [f'TABLE_SHA256: Final = "{digests[0]}"', f'SOURCES_SHA256: Final = "{digests[1]}"']
    source = generate(table, code, contexts, head="\n".join(lines))
    # The public methods' fast entry points (.specialize): enter_<op> with what each method fixes folded in.
    functions, names = method_functions(table, source)
    methods = ", ".join(f"{method!r}: {name}" for method, name in names.items())
    tail = [*(f"\n\n{function}" for function in functions), "", ""]
    tail += ["# public method -> its fast entry point (the public class calls them by name)"]
    tail += [f"METHODS: Final[Mapping[str, Callable[..., Any]]] = {{{methods}}}", ""]
    return source + "\n".join(tail)


def _origin(value: Any) -> tuple[str, str]:
    """(module, name) under which ``value`` is importable; a table whose names are not importable has no module."""
    module_name = getattr(value, "__module__", None)
    name = getattr(value, "__name__", None)
    if not isinstance(module_name, str) or not isinstance(name, str):
        module_name, name = type(value).__module__, None
    module = sys.modules.get(module_name)
    if module is not None and name is not None and getattr(module, name, None) is value:
        return module_name, name
    for attribute, bound in vars(module or {}).items():
        if bound is value and not attribute.startswith("__"):
            return module_name, attribute
    raise TableError(f"invalid transition table: {value!r} is not importable by name", code="table_invalid")


def _annotation_origin(context: type, identifier: str) -> str | None:
    """The module an annotation of ``context`` imports ``identifier`` from (``None``: a builtin or a keyword)."""
    module = sys.modules[context.__module__]
    if identifier in vars(builtins) or identifier == "None":
        return None
    for node in ast.parse(inspect.getsource(module)).body:
        if not isinstance(node, ast.ImportFrom) or node.module in (None, "__future__"):
            continue
        if any((alias.asname or alias.name) == identifier for alias in node.names):
            return node.module
    if identifier in vars(module):
        return module.__name__
    return None
