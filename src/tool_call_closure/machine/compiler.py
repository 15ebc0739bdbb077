"""The table compiled to Python: one generated function per operation.

Theory of operation
-------------------
The generic interpreter (:meth:`.interpreter.Machine.walk`) answers every
operation by walking the table's rows: for each phase it looks up the rows of
(operation, phase, run state) and fires the first whose guard holds.  That
walk is the definition; this module writes the *same walk out as code*, once,
when the table is loaded.  For each operation it emits one Python function
whose body is the operation's phases in order:

* an unlocked phase is its rows (the same in every state) written inline;
* consecutive locked phases become one ``with lock:`` block — the same lock
  plumbing the walk uses (reentry by the thread holding the lock refused
  first, then one acquisition); in it each phase reads the run state afresh
  and branches on it, one branch per group of states that have the same rows;
* within a branch the rows become an ``if``/``elif`` chain in table order,
  the guard of each row its condition (a row without a guard ends the chain:
  the rows after it can never fire in that state);
* a firing row appends its id to ``closure._trace`` (read once per
  operation) when tracing, runs its
  effects, moves the draft run's state (checking a dynamic target against the
  row's allowed targets), and ends the operation with its result — a
  committing row builds its result first and then installs the draft with one
  assignment — or falls through to the next phase;
* an operation that runs out of phases raises the table's default error.

One acquisition.  An unlocked phase between two locked ones whose
caller-code effects all have a no-caller-code check (``NO_CALLER_CODE`` in
the semantics; the implementations' kind ``no_caller_code``) is emitted
twice: when every check holds for the call, the three runs of phases hold
the lock once (spec/README.md §14, "One acquisition"); otherwise they are
three segments, as the walk runs them.  Within one acquisition the
compiler also keeps what the phases so far have established (per run state,
the guards found false; the states in which the operation already ended):
a later phase omits what is known, so the recheck of a call normalized
under the lock evaluates nothing admission found false (see
:func:`_emit_phase` for when what is known ends).

Inlining.  A call costs more than most of the steps the table names, so the
generator writes each implementation's *body* in place of its call when the
body qualifies (:func:`inline`: one parameter, no nested scope, a value's
only ``return`` at its end, an effect without ``return``), and calls the
function otherwise.  The body is copied mechanically, never by hand: its
locals get a prefix of their own (``effect_record_settlement__run``), and its
globals are read from its module when it runs (``semantics_.bounded_string``),
so rebinding a module global — a monkeypatch, a planted bug — changes the
generated code exactly as it changes the walk's call.  Every guard, effect,
result, observed kind and target rule of the shipped semantics qualifies;
the mechanisms (``install``, ``draft_of``, ``reject``) are always called, so
the one installing assignment stays a frame of its own.

The fields as locals.  An operation's context (``machine/context.py``)
holds its inputs and what its phases compute; the walk builds one per call.
The compiled operation ``enter_<op>(closure, method, inputs…)`` takes the
inputs as parameters and keeps every field in a local variable instead
(``ctx.settlement`` is written ``settlement``), which is what the public
class calls: no object is built, and no attribute is read where a local
is.  An inlined statement that hands ``ctx`` itself to a function is
preceded by building the object from the locals (``spill_<Context>``) and
followed by reading its fields back; an operation that uses a name that is
not inlined builds its context from its parameters and runs on the object.
``run_<op>(ctx)`` runs ``enter_<op>`` on a context object's inputs (the
interpreter's ``run``).

Nothing in the generated code is written by hand: every state, row id, guard,
effect, result, error code and rejection reason comes from the table, and the
names are bound to the same :mod:`.semantics` functions the walk calls (a
change to a guard or an effect changes both paths).  The source is built by
:func:`generate_source`, compiled with :func:`compile`, and registered with
:mod:`linecache` so a traceback through it shows the generated lines.
``tool-call-closure table --emit-python`` prints it: it is also a readable
rendering of the table for port authors.

The tests keep the walk as the oracle: the compiled functions and the walk
must agree on every vector and on every step the bounded model check reaches
(``tests/test_compiler.py``).
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import functools
import hashlib
import inspect
import linecache
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from tool_call_closure.absent import ABSENT
from tool_call_closure.errors import TableError
from tool_call_closure.machine.context import draft_of
from tool_call_closure.machine.table import Row, Table

__all__ = [
    "GENERATED_FILENAME",
    "Inlined",
    "Operation",
    "compile_operations",
    "generate_source",
    "inline",
    "module_alias",
    "python_name",
    "row_commits",
]

Operation = Callable[[Any], Any]
"""A compiled operation: takes the operation's context, returns its result or raises."""

GENERATED_FILENAME: Final = "<tool-call-closure machine {digest}>"

_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KINDS: Final = ("guard", "effect", "result", "observed", "target", "no_caller_code")


def python_name(kind: str, name: str) -> str:
    """The identifier the generated code uses for the ``kind`` implementation the table calls ``name``."""
    identifier = f"{kind}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
    if not _IDENTIFIER.fullmatch(identifier):  # pragma: no cover - the substitution always yields one
        raise TableError(f"invalid transition table: {kind} {name!r} has no Python name", code="table_invalid")
    return identifier


def _comment(text: str) -> str:
    """``text`` safe to put after ``#`` (a row id from the table could hold anything)."""
    return text if text.isprintable() else repr(text)


def _docstring(text: str) -> str:
    """A docstring line for ``text``; names from the table that could end it or escape are shown as ``?``."""
    safe = "".join(c if c.isprintable() and c not in '\\"' else "?" for c in text)
    return f'"""{safe}"""'


_WIDTH: Final = 120  # the project's line length


class _Writer:
    """Indented lines of source."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def line(self, text: str = "") -> None:
        indent = "    " * self.depth
        if text.startswith("# ") and len(indent) + len(text) > _WIDTH:  # a comment: wrapped to the line length
            for part in textwrap.wrap(text[2:], _WIDTH - len(indent) - 2, break_long_words=False):
                self.lines.append(f"{indent}# {part}")
            return
        code, mark, comment = text.partition("  # ")
        if mark and len(indent) + len(text) > _WIDTH and "'" not in comment and '"' not in comment:
            self.line(f"# {comment}")  # a long line's own comment goes above it: the formatter will wrap the code
            text = code
        self.lines.append((indent + text) if text else "")

    def block(self, text: str) -> None:
        """A statement of one or more lines (an inlined statement, as :func:`ast.unparse` wrote it)."""
        for part in text.splitlines():
            self.line(part)

    def indent(self) -> None:
        self.depth += 1

    def dedent(self) -> None:
        self.depth -= 1


# --------------------------------------------------------------------------- inlining the semantics

# The generated functions' own local names; an inlined body's locals are renamed, so they never clash.
_GENERATED_LOCALS: Final = frozenset({"ctx", "closure", "trace", "run", "state", "result", "target", "lock"})
_NOT_INLINED: Final = (
    ast.Lambda,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Global,
    ast.Nonlocal,
    ast.Yield,
    ast.YieldFrom,
    ast.Await,
    ast.Import,
    ast.ImportFrom,
)
_VALUE_KINDS: Final = frozenset({"guard", "result", "observed", "target", "no_caller_code"})
_HELPERS: Final = frozenset(
    {
        "reentry_error",
        "reject",
        "spec_error",
        "draft_of",
        "draft_from",
        "install",
        "install_fields",
        "ABSENT",
        "OPERATIONS",
        "ENTRIES",
    }
)


@dataclass(frozen=True, slots=True)
class Inlined:
    """An implementation written into the generated code: statements to run, then (for a value) the expression."""

    origin: str  # module.qualname of the implementation the text was taken from
    statements: tuple[str, ...]
    value: str | None  # the expression a guard, result, observed kind or target rule evaluates to
    annotations: tuple[tuple[str, str], ...] = ()  # (renamed local, its annotation): declared by the module form
    typed: tuple[str, ...] = ()  # the statements with their annotated assignments kept (the module form's)


def module_alias(module: str) -> str:
    """The name under which the generated code reads the globals of ``module``: its last component, prefixed.

    ``tool_call_closure.machine.semantics`` is read as ``semantics_``, so an
    inlined ``bounded_string(…)`` reads ``semantics_.bounded_string(…)``.
    """
    return re.sub(r"[^A-Za-z0-9_]", "_", module.rpartition(".")[2]) + "_"


def inline(kind: str, name: str, function: Callable[..., Any], alias: str | None = None) -> Inlined | None:
    """The body of ``function`` rewritten to run in place of a call, or ``None`` if it is not inlinable.

    An implementation is inlined when it is a plain module-level function of
    one parameter whose source is available, whose body holds no nested
    function, class, import, ``global``/``nonlocal`` or generator, and — for a
    value (guard, result, observed kind, target rule) — ends with its only
    ``return``, or — for an effect — has no ``return`` at all.  Anything else
    is called, exactly as before.  The rewrite keeps the meaning:

    * the parameter becomes ``ctx`` and ``ctx.closure`` the operation's
      ``closure`` local (the same object);
    * every local name of the body gets a prefix of its own, so inlined bodies
      and the generated code never share a local;
    * every global name is read from its module at the time it runs
      (``semantics_.name``: ``alias``, default :func:`module_alias`), so rebinding a module global — a monkeypatch, a
      planted bug — changes the inlined code exactly as it changes a call;
      builtins stay builtins.
    """
    if not inspect.isfunction(function) or function.__code__.co_freevars:
        return None
    code = function.__code__
    plain = code.co_argcount == 1 and not code.co_kwonlyargcount and not code.co_posonlyargcount
    if not plain or code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS | inspect.CO_GENERATOR):
        return None
    module = sys.modules.get(function.__module__)
    if module is None or vars(module) is not function.__globals__:
        return None
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    definition = ast.parse(source).body[0]
    if not isinstance(definition, ast.FunctionDef) or definition.decorator_list:
        return None
    body = list(definition.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    returns = [node for statement in body for node in ast.walk(statement) if isinstance(node, ast.Return)]
    if kind in _VALUE_KINDS:
        last = body[-1] if body else None
        if not (isinstance(last, ast.Return) and last.value is not None and returns == [last]):
            return None
    elif returns:
        return None
    if any(isinstance(node, _NOT_INLINED) for statement in body for node in ast.walk(statement)):
        return None
    parameter = definition.args.args[0].arg
    local_names = set().union(*(_assigned_names(statement) for statement in body)) - {parameter}
    # A comprehension's variable lives in the comprehension's own scope; renamed with the body's locals, a
    # global or builtin of the same name read elsewhere in the body would be read as the local: not inlined.
    comprehension_names = {
        target.id
        for statement in body
        for node in ast.walk(statement)
        if isinstance(node, ast.comprehension)
        for target in ast.walk(node.target)
        if isinstance(target, ast.Name)
    }
    if any(name in function.__globals__ or hasattr(builtins, name) for name in comprehension_names):
        return None
    # The locals of a no-caller-code check are prefixed ``check_``: the kind's own name would not fit a line.
    prefix = python_name("check" if kind == "no_caller_code" else kind, name)
    renamed = _Renamer(parameter, local_names, prefix, function.__globals__, alias or module_alias(module.__name__))
    annotated = _Renamer(parameter, local_names, prefix, function.__globals__, renamed.alias, keep=True)
    typed = [annotated.visit(copy.deepcopy(statement)) for statement in body]
    typed = [statement for statement in typed if not isinstance(statement, ast.Pass)]
    statements = [renamed.visit(statement) for statement in body]
    statements = [statement for statement in statements if not isinstance(statement, ast.Pass)]
    if renamed.unresolved:
        return None
    value: str | None = None
    if kind in _VALUE_KINDS:
        final = statements.pop()
        assert isinstance(final, ast.Return)
        assert final.value is not None
        value = ast.unparse(final.value)
    if kind in _VALUE_KINDS:
        typed.pop()
    origin = f"{function.__module__}.{function.__qualname__}"
    declared = tuple(annotated.annotations.items())
    return Inlined(origin, tuple(map(ast.unparse, statements)), value, declared, tuple(map(ast.unparse, typed)))


class _Renamer(ast.NodeTransformer):
    """Rewrites one body for inlining (see :func:`inline`)."""

    def __init__(
        self,
        parameter: str,
        locals_: set[str],
        prefix: str,
        globals_: Mapping[str, Any],
        alias: str,
        keep: bool = False,
    ) -> None:
        self.keep = keep  # annotated assignments kept (the typed form); a bare annotation goes to ``annotations``
        self.parameter = parameter
        self.locals = locals_  # every name the body assigns is local to it throughout (Python's scoping rule)
        self.prefix = prefix
        self.globals = globals_
        self.alias = alias
        self.unresolved = False
        self.annotations: dict[str, str] = {}  # renamed local -> its annotation, its names read as the body's

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        target = node.value
        reads_closure = isinstance(target, ast.Name) and target.id == self.parameter and node.attr == "closure"
        if reads_closure and isinstance(node.ctx, ast.Load):
            return ast.copy_location(ast.Name("closure", ast.Load()), node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id == self.parameter:
            return ast.copy_location(ast.Name("ctx", node.ctx), node)
        if node.id in self.locals:
            return ast.copy_location(ast.Name(f"{self.prefix}__{node.id}", node.ctx), node)
        if node.id == "draft_of" and _is_draft_mechanism(self.globals.get(node.id)):
            return node  # the generated code's own draft_of: the locals form writes it as the local draft
        if node.id in self.globals:
            module = ast.Name(self.alias, ast.Load())
            return ast.copy_location(ast.Attribute(module, node.id, node.ctx), node)
        if not hasattr(builtins, node.id) or node.id in _GENERATED_LOCALS:
            self.unresolved = True
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        """A local's annotation is never evaluated: the inlined form is the plain assignment (or nothing).

        The annotation is kept aside (``annotations``): the typed module form declares it once, at the top.
        """
        if self.keep and node.value is not None:
            kept: ast.AST = self.generic_visit(node)
            return kept
        if self.keep and isinstance(node.target, ast.Name):
            target = self.visit(ast.Name(node.target.id, ast.Store()))
            self.annotations[target.id] = ast.unparse(self.visit(node.annotation))
        if node.value is None:
            return ast.copy_location(ast.Pass(), node)
        assignment: ast.AST = self.visit(ast.copy_location(ast.Assign([node.target], node.value), node))
        return assignment

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        if node.name is not None:
            node.name = f"{self.prefix}__{node.name}"
        return self.generic_visit(node)


def _is_draft_mechanism(value: object) -> bool:
    """Whether ``value`` is the draft mechanism itself (:func:`.context.draft_of`), whatever name binds it.

    Only a body whose module binds the mechanism itself as ``draft_of`` keeps
    the bare name (see ``_Renamer.visit_Name``), and only the bare name is
    the local ``draft`` in the locals form: a function of another module that
    happens to be called ``draft_of`` is read from its module and called.
    """
    return value is draft_of


class _Localizer(ast.NodeTransformer):
    """``ctx.field`` -> ``field``: an operation's context fields as its local variables.

    The draft mechanism too: ``draft_of(ctx)`` (the run a commit builds aside,
    made on first use; the bare name is only left for the mechanism itself,
    see :func:`_is_draft_mechanism`) becomes the local ``draft``, made on first
    use by ``draft_from(closure)``.
    """

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if isinstance(node.value, ast.Name) and node.value.id == "ctx":
            return ast.copy_location(ast.Name(node.attr, node.ctx), node)
        return self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> ast.AST:
        mechanism = isinstance(node.func, ast.Name) and node.func.id == "draft_of"
        only_ctx = len(node.args) == 1 and isinstance(node.args[0], ast.Name) and node.args[0].id == "ctx"
        if mechanism and only_ctx and not node.keywords:
            made = ast.NamedExpr(ast.Name("draft", ast.Store()), ast.parse("draft_from(closure)", mode="eval").body)
            test = ast.Compare(ast.Name("draft", ast.Load()), [ast.IsNot()], [ast.Constant(None)])
            return ast.copy_location(ast.IfExp(test, ast.Name("draft", ast.Load()), made), node)
        return self.generic_visit(node)


def _hands_on(tree: ast.AST) -> bool:
    """Whether ``tree`` uses the name ``ctx`` other than for one of its fields: it hands the object on."""
    bases = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return any(isinstance(node, ast.Name) and node.id == "ctx" and id(node) not in bases for node in ast.walk(tree))


@functools.lru_cache(maxsize=4096)  # an inlined statement is asked about by each operation using it
def _local_form(source: str, mode: str) -> tuple[str, bool]:
    """``source`` (``mode`` "exec": statements, "eval": a value) with the context's fields as locals, and
    whether it still hands ``ctx`` itself on."""
    tree = _Localizer().visit(ast.parse(source, mode=mode))
    return ast.unparse(tree), _hands_on(tree)


@dataclass(frozen=True)
class _Fields:
    """An operation's context fields, kept as local variables of its compiled form (see ``Context`` in context.py).

    ``inputs`` are the parameters after ``closure`` and ``method`` (name,
    default's source or ``None``), ``working`` the fields the phases compute
    (name, initial value's source), ``context`` the class's name.
    """

    context: str
    inputs: tuple[tuple[str, str | None], ...]
    working: tuple[tuple[str, str], ...]
    types: Mapping[str, str] = dataclasses.field(default_factory=dict)  # field -> its annotation's source

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.inputs) + tuple(name for name, _ in self.working)

    def parameters(self, typed: bool = False) -> str:
        """The parameter list of ``enter_<op>``; ``typed``: annotated as the context's ``__init__`` is."""
        if not typed:
            return ", ".join(["closure", "method", *(n if d is None else f"{n}={d}" for n, d in self.inputs)])
        annotated = [f"{n}: {self.types.get(n, 'Any')}" for n in ("closure", "method", *(n for n, _ in self.inputs))]
        defaults = [None, None, *(d for _, d in self.inputs)]
        return ", ".join(a if d is None else f"{a} = {d}" for a, d in zip(annotated, defaults, strict=True))

    def declaration(self, name: str, source: str, typed: bool) -> str:
        """The local ``name`` holding a working field's initial value (annotated when ``typed``)."""
        return f"{name}: {self.types.get(name, 'Any')} = {source}" if typed else f"{name} = {source}"

    def arguments(self, source: str = "") -> str:
        return ", ".join([f"{source}closure", f"{source}method", *(f"{source}{n}" for n, _ in self.inputs)])

    def spill(self) -> str:
        return f"ctx = spill_{self.context}({', '.join(('closure', 'method', *self.names))})"

    def reload(self) -> str:
        return f"{', '.join(self.names)} = {', '.join(f'ctx.{name}' for name in self.names)}"


def context_fields(context: type) -> _Fields:
    """The :class:`_Fields` of a context class: its ``__init__`` parameters and its ``WORKING`` fields."""
    parameters = list(inspect.signature(context).parameters.values())[2:]  # closure, method
    inputs = tuple((p.name, None if p.default is p.empty else _default_source(p.default)) for p in parameters)
    working = tuple(context.WORKING.items())  # type: ignore[attr-defined]
    slots = {slot for cls in context.__mro__ for slot in getattr(cls, "__slots__", ())}
    declared = {"closure", "method", *(name for name, _ in inputs), *(name for name, _ in working)}
    if slots != declared:
        raise TableError(
            f"invalid transition table: {context.__name__} declares {sorted(declared)}, has slots {sorted(slots)}",
            code="table_invalid",
        )
    return _Fields(context.__name__, inputs, working, _field_types(context))


def _field_types(context: type) -> dict[str, str]:
    """Each field's annotation, as written: ``__init__``'s parameters, and ``self.x: T = …`` in an ``__init__``."""
    types: dict[str, str] = {}
    for cls in reversed(context.__mro__):
        init = vars(cls).get("__init__")
        if not inspect.isfunction(init):
            continue
        for parameter in inspect.signature(init).parameters.values():
            if isinstance(parameter.annotation, str):
                types[parameter.name] = parameter.annotation
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        except (OSError, TypeError):  # pragma: no cover - the contexts are plain source
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Attribute):
                types[node.target.attr] = ast.unparse(node.annotation)
    return types


def _default_source(value: object) -> str:
    if value is None or type(value) in (bool, int, str):
        return repr(value)
    if value is ABSENT:
        return "ABSENT"
    raise TableError(f"invalid transition table: a context default {value!r} has no source", code="table_invalid")


def _assigned_names(node: ast.AST) -> set[str]:
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    names |= {n.name for n in ast.walk(node) if isinstance(n, ast.ExceptHandler) and n.name is not None}
    return names


class _Code:
    """How the generated code names or inlines each implementation of the table's names."""

    def __init__(self, implementations: Mapping[str, Mapping[str, Callable[..., Any]]]) -> None:
        self.fields: _Fields | None = None  # the operation being emitted keeps its context's fields as locals
        self.typed = False  # the module form: annotated signatures and working fields (see module_source)
        self.declared: set[str] = set()  # the module form: locals the operation being emitted has annotated
        self.inlined: dict[tuple[str, str], Inlined] = {}
        self.checked = frozenset(implementations.get("no_caller_code", {}))  # effects with a no-caller-code check
        self.modules: dict[str, str] = {}  # alias -> the module whose globals inlined bodies read through it
        reserved = {python_name(kind, name) for kind in _KINDS for name in implementations.get(kind, {})}
        reserved |= _GENERATED_LOCALS | _HELPERS | set(dir(builtins))
        for kind in _KINDS:
            for name, function in implementations.get(kind, {}).items():
                module = getattr(function, "__module__", None)
                if not isinstance(module, str):
                    continue
                alias = module_alias(module)
                if alias in reserved or self.modules.get(alias, module) != module or module not in sys.modules:
                    continue  # no unambiguous name for its module (or none at all): called, not inlined
                found = inline(kind, name, function, alias)
                if found is not None:
                    self.inlined[kind, name] = found
                    self.modules[alias] = module

    def statements(self, out: _Writer, kind: str, name: str) -> str:
        """Emit what runs before the value of ``kind`` ``name``; return the expression of its value (or a call)."""
        found = self.inlined.get((kind, name))
        if found is None:
            assert self.fields is None, "an operation with a name that is called keeps its context object"
            return f"{python_name(kind, name)}(ctx)"
        out.line(f"# {kind} {_comment(name)}: inlined from {found.origin}")
        for statement in found.typed if self.typed else found.statements:
            statement = self._declare_once(statement) if self.typed else statement
            if self.fields is None:
                out.block(statement)
            elif _local_form(statement, "exec")[1]:  # it needs the object: built from the locals, read back after
                out.line(self.fields.spill())
                out.block(statement)
                out.line(self.fields.reload())
            else:
                out.block(_local_form(statement, "exec")[0])
        if found.value is None:
            return ""
        return found.value if self.fields is None else _local_form(found.value, "eval")[0]

    def _declare_once(self, statement: str) -> str:
        """``statement`` with an annotated assignment of a local already declared in this operation made plain."""
        if ":" not in statement:
            return statement
        tree = ast.parse(statement)
        changed = False
        for node in ast.walk(tree):
            for field, value in ast.iter_fields(node):
                if not isinstance(value, list):
                    continue
                for position, child in enumerate(value):
                    if isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name) and child.value:
                        if child.target.id in self.declared:
                            value[position] = ast.copy_location(ast.Assign([child.target], child.value), child)
                            changed = True
                        self.declared.add(child.target.id)
                setattr(node, field, value)
        return ast.unparse(ast.fix_missing_locations(tree)) if changed else statement

    def keeps_locals(self, kinds_and_names: Iterable[tuple[str, str]]) -> bool:
        """Whether an operation using these names can keep its fields as locals: all inlined, no value needing ctx."""
        for key in kinds_and_names:
            found = self.inlined.get(key)
            if found is None or (found.value is not None and _local_form(found.value, "eval")[1]):
                return False
        return True

    def effect(self, out: _Writer, name: str) -> None:
        if ("effect", name) in self.inlined:
            self.statements(out, "effect", name)
        else:
            out.line(f"{python_name('effect', name)}(ctx)")

    def has_statements(self, kind: str, name: str) -> bool:
        found = self.inlined.get((kind, name))
        return found is not None and bool(found.statements)

    def context_fields(self, kind: str, name: str) -> frozenset[str] | None:
        """The fields of ``ctx`` the inlined ``kind`` ``name`` reads or writes; ``None`` if that is not known.

        Not known when the implementation is called (not inlined), hands
        ``ctx`` itself to a function, or writes anything but a field of
        ``ctx`` or a local of its own (an attribute or item of another object).
        """
        found = self.inlined.get((kind, name))
        if found is None:
            return None
        fields: set[str] = set()
        for source in (*found.statements, *(() if found.value is None else (found.value,))):
            tree = ast.parse(source)
            if _hands_on(tree):
                return None  # ctx handed on: anything may be read or written
            for node in ast.walk(tree):
                is_field = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                if is_field and node.value.id == "ctx":  # type: ignore[attr-defined]
                    fields.add(node.attr)  # type: ignore[attr-defined]
                elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
                    return None  # writes another object
        return frozenset(fields)


# --------------------------------------------------------------------------- the generated code


def _state_groups(table: Table, op: str, phase: str) -> list[tuple[tuple[str, ...], tuple[Row, ...]]]:
    """The run states grouped by the rows they select, in the table's state order."""
    groups: dict[tuple[str, ...], list[str]] = {}
    rows_of: dict[tuple[str, ...], tuple[Row, ...]] = {}
    for state in table.run_states:
        rows = table.rows_for(op, phase, state)
        key = tuple(r.id for r in rows)
        groups.setdefault(key, []).append(state)
        rows_of[key] = rows
    return [(tuple(states), rows_of[key]) for key, states in groups.items()]


def _emit_rows(out: _Writer, table: Table, rows: tuple[Row, ...], code: _Code) -> None:
    """An ``if``/``elif`` chain: the first row whose guard holds fires.

    A guard inlined with statements of its own is evaluated in an ``else:``
    branch of the previous guard (its statements first), so guards are still
    evaluated one by one, in table order, until one holds.
    """
    if not rows:
        out.line("pass  # no row: on to the next phase")
        return
    depth = out.depth
    opening = True  # the next guard opens an ``if`` (else it continues the chain with ``elif``)
    for position, row in enumerate(rows):
        if row.guard is None:
            if not opening:
                out.line("else:")
                out.indent()
            _emit_firing(out, table, row, code)
            skipped = rows[position + 1 :]
            if skipped:
                out.line(f"# never reached: {', '.join(_comment(r.id) for r in skipped)} (an earlier row always fires)")
            break
        if not opening and code.has_statements("guard", row.guard):
            out.line("else:")  # the guard's statements run only if no earlier guard held
            out.indent()
            opening = True
        condition = code.statements(out, "guard", row.guard)
        out.line(f"{'if' if opening else 'elif'} {condition}:")
        out.indent()
        _emit_firing(out, table, row, code)
        out.dedent()
        opening = False
    out.depth = depth


def _emit_firing(out: _Writer, table: Table, row: Row, code: _Code) -> None:
    out.line(f"# {_comment(row.id)}" + (f"  ({', '.join(row.catalogue)})" if row.catalogue else ""))
    out.line("if trace is not None:")
    out.line(f"    trace.append({row.id!r})")
    for effect in row.effects:
        code.effect(out, effect)
    if len(row.to) == 1:
        _emit_move(out, code, repr(row.to[0]))
    elif row.to_by is not None:
        out.line(f"target = {code.statements(out, 'target', row.to_by)}")
        out.line(f"if target not in {row.to!r}:")
        out.line(f"    raise spec_error('illegal_transition', operation={row.op!r}, state=target)")
        _emit_move(out, code, "target")
    commits = row_commits(table, row)
    result = row.result
    field = "ctx." if code.fields is None else ""  # the context's fields: on the object, or the locals
    install = "install(ctx)" if code.fields is None else "install_fields(closure, draft, staged_call)"
    if result is None:
        if commits:
            out.line(f"{install}  # the commit takes effect: one assignment")
        out.line("# no result: on to the next phase")
        return
    if result.kind == "reject":
        call_id = f"{field}call_id" if result.call_id == "argument" else "None"
        observed = code.statements(out, "observed", result.observed) if result.observed is not None else "None"
        out.line(f"return reject(closure, {field}reject_generation, {result.name!r}, {call_id}, {observed})")
    elif result.kind == "return" and commits:
        value = code.statements(out, "result", result.name)
        out.line(f"result = {value}  # built from the draft, before the install")
        out.line(f"{install}  # the commit takes effect: one assignment, after everything that can fail")
        out.line("return result")
    elif result.kind == "return":
        out.line(f"return {code.statements(out, 'result', result.name)}")
    else:
        out.line(f"raise spec_error({result.name!r})")


def _emit_move(out: _Writer, code: _Code, target: str) -> None:
    """The draft run moves to ``target`` (made on first use; installed with the rest of the commit)."""
    if code.fields is None:
        out.line(f"draft_of(ctx).state = {target}  # the draft: installed with the rest of the commit")
        return
    out.line("if draft is None:  # the draft: made on first use, installed with the rest of the commit")
    out.line("    draft = draft_from(closure)")
    out.line(f"draft.state = {target}")


def row_commits(table: Table, row: Row) -> bool:
    """A row commits (ends with ``install``) when it moves the run or one of its effects writes it."""
    return bool(row.to) or any(table.effects[name].writes != "none" for name in row.effects)


def _segments(table: Table, op: str) -> list[tuple[bool, list[str]]]:
    """The operation's phases grouped into runs of the same lock status, in order."""
    segments: list[tuple[bool, list[str]]] = []
    for phase in table.operations[op].phases:
        locked = table.phases[phase]
        if segments and segments[-1][0] == locked:
            segments[-1][1].append(phase)
        else:
            segments.append((locked, [phase]))
    return segments


# What is known, at a point of one acquisition, of the run states that reach it: the states it may be in
# (the keys) and, for each, the guards found false in it since the acquisition began (see _emit_phase).
_Facts = dict[str, frozenset[str]]


def _emit_phase(
    out: _Writer,
    table: Table,
    op: str,
    phase: str,
    locked: bool,
    code: _Code,
    held: bool = False,
    facts: _Facts | None = None,
) -> _Facts | None:
    """Emit one phase; return what is known after it (``facts`` in, ``None``: nothing known).

    Within one acquisition the compiler keeps, per run state, the guards a
    phase found false (all of a state's rows were guarded and none held, so
    the operation went on).  Nothing can change them before the lock is
    released unless something is written: a later phase of the same
    acquisition omits a row whose guard is known false in its state, and a
    state in which an earlier phase always ended the operation gets no
    branch.  So the recheck of a call normalized under the lock (one
    acquisition, spec §14) evaluates nothing admission has already found
    false.  What is written in between ends what is known: a row that fires
    and goes on, an unlocked phase run under the lock whose effects write the
    run or a field of ``ctx`` a known guard reads (from the inlined bodies;
    anything not inlined, or not known, ends it all).
    """
    if held:
        label = "unlocked, run under the lock here: it runs no caller code for this call"
    else:
        label = "locked" if locked else "unlocked: caller code may run"
    out.line(f"# --- phase {_comment(phase)} ({label})")
    if not locked:  # the same rows in every state (the validator requires it)
        rows = table.rows_for(op, phase, table.initial_run_state)
        _emit_rows(out, table, rows, code)
        return _facts_after_unlocked(table, rows, code, facts) if held else None
    if facts is None:
        groups = _state_groups(table, op, phase)
    else:
        groups = _known_state_groups(table, op, phase, facts)
        if all(not rows for _, rows in groups):
            out.line("# nothing to evaluate: every row's guard was found false earlier in this acquisition, in every")
            out.line("# state that reaches here, and nothing has been written since")
            return facts
        unreachable = [state for state in table.run_states if state not in facts]
        if unreachable:
            out.line(
                f"# not reached in state {', '.join(unreachable)}: an earlier phase of this acquisition ended there"
            )
    if len(groups) == 1:  # the same rows in every state that can reach here
        _emit_rows(out, table, groups[0][1], code)
    else:
        out.line("run = closure._run")
        out.line('state = run.state if run is not None else "none"')
        for position, (states, rows) in enumerate(groups):
            keyword = "if" if position == 0 else "elif"
            test = f"state == {states[0]!r}" if len(states) == 1 else f"state in {states!r}"
            out.line(f"{keyword} {test}:")
            out.indent()
            _emit_rows(out, table, rows, code)
            out.dedent()
    return _facts_after_locked(table, op, phase, code, facts)


def _known_state_groups(
    table: Table, op: str, phase: str, facts: _Facts
) -> list[tuple[tuple[str, ...], tuple[Row, ...]]]:
    """The reachable states grouped by their rows, each without the rows whose guard is known false in it."""
    groups: dict[tuple[str, ...], list[str]] = {}
    rows_of: dict[tuple[str, ...], tuple[Row, ...]] = {}
    for state in table.run_states:
        if state not in facts:
            continue
        rows = tuple(row for row in table.rows_for(op, phase, state) if row.guard not in facts[state])
        key = tuple(row.id for row in rows)
        groups.setdefault(key, []).append(state)
        rows_of[key] = rows
    return [(tuple(states), rows_of[key]) for key, states in groups.items()]


def _facts_after_locked(table: Table, op: str, phase: str, code: _Code, facts: _Facts | None) -> _Facts | None:
    """After a locked phase: the states in which it went on, each with every guard it found false."""
    after: _Facts = {}
    for state in table.run_states if facts is None else facts:
        known = frozenset() if facts is None else facts[state]
        rows = tuple(row for row in table.rows_for(op, phase, state) if row.guard not in known)
        if any(row.result is None for row in rows):
            return None  # a row that fires and goes on: what it wrote is not followed
        if any(row.guard is None for row in rows):
            continue  # a row always fires in this state, and ends the operation
        guards = [row.guard for row in rows if row.guard is not None]
        after[state] = known | {guard for guard in guards if code.context_fields("guard", guard) is not None}
    return after


def _facts_after_unlocked(table: Table, rows: tuple[Row, ...], code: _Code, facts: _Facts | None) -> _Facts | None:
    """After an unlocked phase run under the lock: the facts its effects do not touch (one row, always firing)."""
    if facts is None or len(rows) != 1 or rows[0].guard is not None or rows[0].result is not None:
        return None
    touched: set[str] = set()
    for effect in rows[0].effects:
        fields = code.context_fields("effect", effect)
        if fields is None or table.effects[effect].writes != "none":
            return None
        touched |= fields
    untouched = {guard for guards in facts.values() for guard in guards if not touched & _known(code, guard)}
    return {state: guards & untouched for state, guards in facts.items()}


def _known(code: _Code, guard: str) -> frozenset[str]:
    fields = code.context_fields("guard", guard)
    assert fields is not None, "only guards whose fields are known are kept as facts"
    return fields


def _emit_locked(out: _Writer, table: Table, op: str, phases: list[tuple[str, bool]], code: _Code) -> None:
    """One acquisition of the lock around ``phases`` (name, locked); the reentry check first."""
    names = ", ".join(_comment(phase) for phase, _ in phases)
    out.line(f"# --- {'phase' if len(phases) == 1 else 'phases'} {names}: under the lock, in one acquisition")
    out.line("lock = closure._lock")
    out.line("if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase")
    out.line(f"    raise reentry_error({op!r})")
    out.line("with lock:")
    out.indent()
    facts: _Facts | None = {state: frozenset() for state in table.run_states}  # every state; nothing known yet
    for phase, locked in phases:
        facts = _emit_phase(out, table, op, phase, locked, code, held=not locked, facts=facts)
    out.dedent()


def _checked_effects(table: Table, op: str, phases: list[str], code: _Code) -> list[str] | None:
    """The effects of unlocked ``phases`` if every one has a no-caller-code check (else ``None``)."""
    effects = [
        effect
        for phase in phases
        for row in table.rows_for(op, phase, table.initial_run_state)
        for effect in row.effects
        if table.effects[effect].caller_code
    ]
    return effects if effects and all(effect in code.checked for effect in effects) else None


def _names_used(table: Table, op: str, code: _Code) -> set[tuple[str, str]]:
    """Every (kind, name) the rows of ``op`` use, the no-caller-code checks of its effects included."""
    used: set[tuple[str, str]] = set()
    for phase in table.operations[op].phases:
        for state in table.run_states:
            for row in table.rows_for(op, phase, state):
                if row.guard is not None:
                    used.add(("guard", row.guard))
                used.update(("effect", effect) for effect in row.effects)
                used.update(("no_caller_code", effect) for effect in row.effects if effect in code.checked)
                if row.to_by is not None:
                    used.add(("target", row.to_by))
                if row.result is not None and row.result.kind == "return":
                    used.add(("result", row.result.name))
                if row.result is not None and row.result.observed is not None:
                    used.add(("observed", row.result.observed))
    return used


def _emit_operation(out: _Writer, table: Table, op: str, code: _Code, fields: _Fields | None) -> None:
    """``enter_<op>``: the phases in order, each run of locked phases under one acquisition of the lock.

    An unlocked run of phases between two locked ones whose caller-code
    effects all have a no-caller-code check is emitted twice: under one
    acquisition with the runs around it when every check holds for the call,
    and as three segments otherwise.

    With ``fields`` (the operation's context fields), the operation takes the
    inputs as parameters and keeps every field in a local variable when
    every name it uses is inlined (the shipped semantics): no context object
    is built, except by :meth:`_Fields.spill` for an inlined statement that
    hands ``ctx`` on (read back after it).  Otherwise it builds the context
    from its parameters and runs on the object.  ``run_<op>(ctx)`` runs it on
    a context's fields.  Without ``fields`` (the outline), ``run_<op>(ctx)``
    is the operation itself.
    """
    spec = table.operations[op]
    clash = fields is not None and bool(set(fields.names) & (_GENERATED_LOCALS | _HELPERS | set(code.modules)))
    keeps = fields is not None and not clash and code.keeps_locals(_names_used(table, op, code))
    code.fields = fields if keeps else None
    code.declared = set()
    if fields is None:
        out.line(f"def run_{op}(ctx):")
    else:
        returns = " -> Any" if code.typed else ""
        out.line(f"def enter_{op}({fields.parameters(code.typed)}){returns}:")
    out.indent()
    out.line(_docstring(f"{op}: {' -> '.join(spec.phases)}."))
    if fields is None:
        out.line("closure = ctx.closure")
    elif keeps:
        out.line(f"# the fields of a {fields.context}, as locals: the parameters, and what the phases compute")
        for name, source in fields.working:
            out.line(fields.declaration(name, source, code.typed))
        if code.typed:
            _emit_declarations(out, table, op, code)
    else:
        out.line(f"ctx = {fields.context}({fields.arguments()})  # a name it uses is called: it reads the object")
    out.line("trace = closure._trace  # a list while the rows that fire are recorded (coverage), else None")
    segments = _segments(table, op)
    position = 0
    while position < len(segments):
        locked, phases = segments[position]
        window = segments[position : position + 3]
        checked = None
        if locked and len(window) == 3 and not window[1][0] and window[2][0]:
            checked = _checked_effects(table, op, window[1][1], code)
        if checked is not None:
            out.line("# the unlocked phase between runs no caller code for this call: one acquisition for all three")
            conditions = [code.statements(out, "no_caller_code", effect) for effect in checked]
            out.line(f"if {' and '.join(conditions)}:")
            out.indent()
            held = [(p, True) for p in phases] + [(p, False) for p in window[1][1]] + [(p, True) for p in window[2][1]]
            _emit_locked(out, table, op, held, code)
            out.dedent()
            out.line("else:")
            out.indent()
            _emit_locked(out, table, op, [(p, True) for p in phases], code)
            for phase in window[1][1]:
                _emit_phase(out, table, op, phase, False, code)
            _emit_locked(out, table, op, [(p, True) for p in window[2][1]], code)
            out.dedent()
            position += 3
            continue
        if locked:
            _emit_locked(out, table, op, [(p, True) for p in phases], code)
        else:
            for phase in phases:
                _emit_phase(out, table, op, phase, False, code)
        position += 1
    out.line("# no row ended the operation: the table's default")
    out.line("run = closure._run")
    out.line(
        f'raise spec_error({table.default_error!r}, operation={op!r}, state=run.state if run is not None else "none")'
    )
    out.dedent()
    code.fields = None
    if fields is None:
        return
    out.line("")
    out.line("")
    out.line(f"def run_{op}(ctx: {fields.context}) -> Any:" if code.typed else f"def run_{op}(ctx):")
    out.line(f'    """{op} on a context object: enter_{op} of its inputs."""')
    out.line(f"    return enter_{op}({fields.arguments('ctx.')})")


def _emit_declarations(out: _Writer, table: Table, op: str, code: _Code) -> None:
    """The annotated locals of the bodies inlined into ``op``, declared once (a body may be written twice)."""
    declared: dict[str, str] = {}
    for key in sorted(_names_used(table, op, code)):
        found = code.inlined.get(key)
        declared.update(found.annotations if found is not None else ())
    if declared:
        out.line("# the annotated locals of the inlined bodies")
    for name, annotation in declared.items():
        out.line(f"{name}: {annotation}")


def _emit_spill(out: _Writer, fields: _Fields, typed: bool) -> None:
    """``spill_<Context>``: a context holding a compiled operation's locals, for a step that reads the object."""
    names = ("closure", "method", *fields.names)
    if typed:
        parameters = ", ".join(f"{name}: {fields.types.get(name, 'Any')}" for name in names)
        out.line(f"def spill_{fields.context}({parameters}) -> {fields.context}:")
    else:
        out.line(f"def spill_{fields.context}({', '.join(names)}):")
    out.line(f'    """A {fields.context} holding the fields a compiled operation keeps as locals."""')
    out.line(f"    ctx = {fields.context}({fields.arguments()})")
    if fields.working:
        working = [name for name, _ in fields.working]
        out.line(f"    {', '.join(f'ctx.{name}' for name in working)} = {', '.join(working)}")
    out.line("    return ctx")


def generate_source(
    table: Table,
    implementations: Mapping[str, Mapping[str, Callable[..., Any]]],
    contexts: Mapping[str, type] | None = None,
) -> str:
    """The Python source of the compiled table.

    ``implementations`` (kind -> the table's name -> function) decides what is
    inlined (:func:`inline`) and what is called.  With ``contexts`` (operation
    -> its context class) the source has ``enter_<op>(closure, method,
    inputs…)`` per operation, an ``ENTRIES`` map of them, and ``run_<op>(ctx)``
    in ``OPERATIONS``; without, ``run_<op>(ctx)`` only, each running on the
    context object (the outline).
    """
    return _generate(table, _Code(implementations), contexts)


_NAMES_NOTE: Final = """Names: guard_X / effect_X / result_X / observed_X / target_X are the semantics of the table's X,
called; a body marked 'inlined from' is that function's body, its locals prefixed and its globals
read from its module (semantics_...); reject(closure, generation, reason, call_id, observed) records
the diagnostic and returns the Rejection; the draft is the run a commit builds aside (draft_of(ctx),
or draft_from(closure) into the local draft), install puts it in place with one assignment; each run
of locked phases holds the instance's lock once (reentry from the thread holding it raises
reentry_error instead of waiting on itself).  enter_<op> keeps the operation's context fields as
local variables (ctx.X is written X) when every name it uses is inlined."""


def _generate(table: Table, code: _Code, contexts: Mapping[str, type] | None, head: str | None = None) -> str:
    out = _Writer()
    if head is not None:
        out.block(head)
        _emit_body(out, table, code, contexts)
        return "\n".join(out.lines) + "\n"
    out.line(_docstring(f"The transition table {table.version}, compiled: one function per operation.")[:-3])
    out.line("")
    out.line("Generated from spec/machine.json by tool_call_closure.machine.compiler; do not edit.")
    out.line("Names: guard_X / effect_X / result_X / observed_X / target_X are the semantics of the table's X,")
    out.line("called; a body marked 'inlined from' is that function's body, its locals prefixed and its globals")
    out.line("read from its module (semantics_...); reject(closure, generation, reason, call_id, observed) records")
    out.line("the diagnostic and returns the Rejection; the draft is the run a commit builds aside (draft_of(ctx),")
    out.line("or draft_from(closure) into the local draft), install puts it in place with one assignment; each run")
    out.line("of locked phases holds the instance's lock once (reentry from the thread holding it raises")
    out.line("reentry_error instead of waiting on itself).  enter_<op> keeps the operation's context fields as")
    out.line("local variables (ctx.X is written X) when every name it uses is inlined.")
    out.line('"""')
    _emit_body(out, table, code, contexts)
    return "\n".join(out.lines) + "\n"


def _emit_body(out: _Writer, table: Table, code: _Code, contexts: Mapping[str, type] | None) -> None:
    """The functions (spills, then one operation after another) and the maps of them."""
    spilled: set[str] = set()
    for op in table.operations:
        fields = None if contexts is None else context_fields(contexts[op])
        if fields is not None and fields.context not in spilled:
            spilled.add(fields.context)
            out.line("")
            out.line("")
            _emit_spill(out, fields, code.typed)
        out.line("")
        out.line("")
        _emit_operation(out, table, op, code, fields)
    out.line("")
    out.line("")
    operations = ", ".join(f"{op!r}: run_{op}" for op in table.operations)
    typed = code.typed
    out.line(f"OPERATIONS{': Final[Mapping[str, Callable[[Any], Any]]]' if typed else ''} = {{{operations}}}")
    if contexts is not None:
        entries = ", ".join(f"{op!r}: enter_{op}" for op in table.operations)
        out.line(f"ENTRIES{': Final[Mapping[str, Callable[..., Any]]]' if typed else ''} = {{{entries}}}")


def compile_operations(
    table: Table,
    implementations: Mapping[str, Mapping[str, Callable[..., Any]]],
    helpers: Mapping[str, Any],
    contexts: Mapping[str, type],
) -> tuple[str, Mapping[str, Operation], Mapping[str, Callable[..., Any]]]:
    """Generate, compile and bind the table's operations.

    ``implementations`` maps each kind (guard, effect, result, observed,
    target) to the table's names for it and their functions; ``helpers`` holds
    the mechanisms the generated code shares with the walk (``reentry_error``,
    ``reject``, ``spec_error``, ``draft_of``, ``draft_from``, ``install``,
    ``install_fields``, ``ABSENT``); ``contexts`` each operation's context
    class.  Returns the source, ``{op: run_<op>}`` (on a context object) and
    ``{op: enter_<op>}`` (on the inputs: what the public class calls).
    """
    code = _Code(implementations)
    source = _generate(table, code, contexts)
    namespace: dict[str, Any] = {"__builtins__": __builtins__, **helpers}
    namespace.update({context.__name__: context for context in contexts.values()})
    for alias, module_name in code.modules.items():  # the globals of inlined bodies are read from their module
        namespace[alias] = sys.modules[module_name]
    for kind in _KINDS:
        for name, function in implementations[kind].items():
            identifier = python_name(kind, name)
            if namespace.get(identifier, function) is not function:
                raise TableError(
                    f"invalid transition table: {kind} {name!r} clashes with another name as {identifier!r}",
                    code="table_invalid",
                )
            namespace[identifier] = function
    filename = GENERATED_FILENAME.format(digest=hashlib.sha256(source.encode()).hexdigest()[:12])
    # Registered so tracebacks and debuggers show the generated lines.
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    exec(compile(source, filename, "exec"), namespace)  # the source is generated from the validated table
    operations: Mapping[str, Operation] = namespace["OPERATIONS"]
    entries: Mapping[str, Callable[..., Any]] = namespace["ENTRIES"]
    return source, operations, entries


# --------------------------------------------------------------------------- the checked-in module

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

    The same functions :func:`generate_source` writes, with the parameters
    and working fields annotated as the context classes declare them, the
    helpers and the modules inlined bodies read imported by name, and every
    called implementation bound from its own module.  Unwrapped: the
    checked-in file is this text formatted (``machine.regenerate``).
    """
    code = _Code(implementations)
    code.typed = True
    imports: dict[str, set[str]] = {"typing": {"Any", "Final"}, "collections.abc": {"Callable", "Mapping"}}
    aliases = [f"import {module} as {alias}" for alias, module in sorted(code.modules.items())]
    body = ast.parse(_generate(table, code, contexts, head=""))
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
            for identifier in _IDENTIFIER.findall(annotation):
                origin = _annotation_origin(context, identifier)
                if origin is not None:
                    imports.setdefault(origin, set()).add(identifier)
    for kind in _KINDS:
        for name, function in implementations.get(kind, {}).items():
            if (kind, name) not in code.inlined:
                module, attribute = _origin(function)
                imports.setdefault(module, set()).add(f"{attribute} as {python_name(kind, name)}")
    doc = _MODULE_DOC.format(version=table.version, names=_NAMES_NOTE)
    # The table's default (no row ended the operation) is written after rows that may always end it.
    lines = ["# mypy: warn-unreachable=false", doc, "", "from __future__ import annotations", ""]
    standard = sorted(module for module in imports if module.partition(".")[0] in sys.stdlib_module_names)
    for group in (standard, sorted(set(imports) - set(standard))):
        lines += [f"from {module} import {', '.join(sorted(imports[module]))}" for module in group]
        lines += [*(aliases if group is not standard else ()), ""]
    lines += ["# What this module was generated from: the table's text, and the sources of the semantics, the contexts"]
    lines += ["# and the compiler (sha256; see tool_call_closure.machine.interpreter.checked_in_module)."]
    lines += [f'TABLE_SHA256: Final = "{digests[0]}"', f'SOURCES_SHA256: Final = "{digests[1]}"']
    return _generate(table, code, contexts, head="\n".join(lines))


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
