"""The parts of the code generator that read the semantics: names, the source writer, inlining, context fields.

Theory of operation
-------------------
:mod:`.compiler` writes the table out as Python; this module decides how each
name of the table is written there (:class:`Code`).  A call costs more than
most of the steps the table names, so the generator writes each
implementation's *body* in place of its call when the body qualifies
(:func:`inline`: one parameter, no nested scope, a value's only ``return`` at
its end, an effect without ``return``), and calls the function otherwise.
The body is copied mechanically, never by hand: its locals get a prefix of
their own (``effect_record_settlement__run``; ``check_…`` for a no-caller-code
check), and its globals are read from its module when it runs
(``semantics_.bounded_string``), so rebinding a module global — a monkeypatch,
a planted bug — changes the generated code exactly as it changes the walk's
call.  A local's annotation is kept aside for the typed module form
(:func:`.module_form.module_source`), which declares it once.

An operation's context fields become local variables of its compiled form
(:class:`Fields`, read from the context class: ``__init__``'s parameters, the
``WORKING`` fields and their annotations); :func:`local_form` rewrites an
inlined statement's ``ctx.field`` to ``field``.  :class:`Writer` holds
indented lines, wrapping a long comment to the project's line length.
"""

from __future__ import annotations

import ast
import builtins
import copy
import dataclasses
import functools
import inspect
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Any, Final

from tool_call_closure.absent import ABSENT
from tool_call_closure.errors import TableError
from tool_call_closure.machine.context import draft_of

__all__ = [
    "GENERATED_LOCALS",
    "HELPER_NAMES",
    "IDENTIFIER",
    "KINDS",
    "Code",
    "Fields",
    "Inlined",
    "Writer",
    "comment_text",
    "context_fields",
    "docstring_line",
    "hands_on",
    "inline",
    "local_form",
    "module_alias",
    "python_name",
]

IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KINDS: Final = ("guard", "effect", "result", "observed", "target", "no_caller_code")


def python_name(kind: str, name: str) -> str:
    """The identifier the generated code uses for the ``kind`` implementation the table calls ``name``."""
    identifier = f"{kind}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"
    if not IDENTIFIER.fullmatch(identifier):  # pragma: no cover - the substitution always yields one
        raise TableError(f"invalid transition table: {kind} {name!r} has no Python name", code="table_invalid")
    return identifier


def comment_text(text: str) -> str:
    """``text`` safe to put after ``#`` (a row id from the table could hold anything)."""
    return text if text.isprintable() else repr(text)


def docstring_line(text: str) -> str:
    """A docstring line for ``text``; names from the table that could end it or escape are shown as ``?``."""
    safe = "".join(c if c.isprintable() and c not in '\\"' else "?" for c in text)
    return f'"""{safe}"""'


WIDTH: Final = 120  # the project's line length


class Writer:
    """Indented lines of source."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def line(self, text: str = "") -> None:
        indent = "    " * self.depth
        if text.startswith("# ") and len(indent) + len(text) > WIDTH:  # a comment: wrapped to the line length
            for part in textwrap.wrap(text[2:], WIDTH - len(indent) - 2, break_long_words=False):
                self.lines.append(f"{indent}# {part}")
            return
        code, mark, comment = text.partition("  # ")
        if mark and len(indent) + len(text) > WIDTH and "'" not in comment and '"' not in comment:
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
GENERATED_LOCALS: Final = frozenset({"ctx", "closure", "trace", "run", "state", "result", "target", "lock"})
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
HELPER_NAMES: Final = frozenset(
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
    """:func:`_rewrite` of ``function``, remembered for the process (every table compiled reads the same bodies).

    The rewrite depends on the function's code and on what the names it reads
    are bound to in its module (a global or a builtin; ``draft_of`` the
    mechanism or a stand-in), so those bindings are part of the key: rebinding
    one (a monkeypatch, a planted bug) rewrites again.
    """
    code = getattr(function, "__code__", None)
    if code is None or not isinstance(getattr(function, "__globals__", None), dict):
        return _rewrite(kind, name, function, alias)
    bound = tuple(function.__globals__.get(read, _UNBOUND) for read in _names_read(code))
    key = (kind, name, function, code, alias, sys.modules.get(function.__module__), tuple(map(id, bound)))
    if key not in _REWRITTEN:
        if len(_REWRITTEN) >= _REWRITTEN_MAX:
            _REWRITTEN.clear()  # bounded: the shipped semantics need about 40 entries
        # the bound objects are kept with the entry, so no other object can take one's id while it is remembered
        _REWRITTEN[key] = (bound, _rewrite(kind, name, function, alias))
    return _REWRITTEN[key][1]


_UNBOUND: Final = object()
_REWRITTEN_MAX: Final = 4096
_REWRITTEN: dict[tuple[Any, ...], tuple[tuple[object, ...], Inlined | None]] = {}


def _names_read(code: CodeType) -> tuple[str, ...]:
    """Every name ``code`` and the code nested in it (comprehensions) read as a global or an attribute."""
    names = list(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            names.extend(_names_read(constant))
    return tuple(names)


def _rewrite(kind: str, name: str, function: Callable[..., Any], alias: str | None = None) -> Inlined | None:
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
    found = _plain_definition(function)
    if found is None:
        return None
    module, definition = found
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


def _plain_definition(function: Callable[..., Any]) -> tuple[ModuleType, ast.FunctionDef] | None:
    """The module and the parsed ``def`` of a plain module-level function of one parameter (else ``None``)."""
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
    return module, definition


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
        if not hasattr(builtins, node.id) or node.id in GENERATED_LOCALS:
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


def hands_on(tree: ast.AST) -> bool:
    """Whether ``tree`` uses the name ``ctx`` other than for one of its fields: it hands the object on."""
    bases = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    return any(isinstance(node, ast.Name) and node.id == "ctx" and id(node) not in bases for node in ast.walk(tree))


@functools.lru_cache(maxsize=4096)  # an inlined statement is asked about by each operation using it
def local_form(source: str, mode: str) -> tuple[str, bool]:
    """``source`` (``mode`` "exec": statements, "eval": a value) with the context's fields as locals, and
    whether it still hands ``ctx`` itself on."""
    tree = _Localizer().visit(ast.parse(source, mode=mode))
    return ast.unparse(tree), hands_on(tree)


@dataclass(frozen=True)
class Fields:
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


def context_fields(context: type) -> Fields:
    """The :class:`Fields` of a context class: its ``__init__`` parameters and its ``WORKING`` fields."""
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
    return Fields(context.__name__, inputs, working, _field_types(context))


def _field_types(context: type) -> dict[str, str]:
    """Each field's annotation, as written: ``__init__``'s parameters, and ``self.x: T = …`` in an ``__init__``.

    A parameter keeps its parameter's annotation (what a caller may pass, before validation): compiled, the
    generated ``enter_<op>`` checks its parameters' types, and a caller's wrong type must reach the validation
    that raises ``UsageError``, not a ``TypeError`` at the call."""
    types: dict[str, str] = {}
    for cls in reversed(context.__mro__):
        init = vars(cls).get("__init__")
        if not inspect.isfunction(init):
            continue
        parameters = set(inspect.signature(init).parameters)
        for parameter in inspect.signature(init).parameters.values():
            if isinstance(parameter.annotation, str):
                types[parameter.name] = parameter.annotation
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
        except (OSError, TypeError):  # pragma: no cover - the contexts are plain source
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Attribute)
                and node.target.attr not in parameters
            ):
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


class Code:
    """How the generated code names or inlines each implementation of the table's names."""

    def __init__(self, implementations: Mapping[str, Mapping[str, Callable[..., Any]]]) -> None:
        self.fields: Fields | None = None  # the operation being emitted keeps its context's fields as locals
        self.typed = False  # the module form: annotated signatures and working fields (see module_source)
        self.declared: set[str] = set()  # the module form: locals the operation being emitted has annotated
        self.inlined: dict[tuple[str, str], Inlined] = {}
        self.checked = frozenset(implementations.get("no_caller_code", {}))  # effects with a no-caller-code check
        self.modules: dict[str, str] = {}  # alias -> the module whose globals inlined bodies read through it
        reserved = {python_name(kind, name) for kind in KINDS for name in implementations.get(kind, {})}
        reserved |= GENERATED_LOCALS | HELPER_NAMES | set(dir(builtins))
        for kind in KINDS:
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

    def statements(self, out: Writer, kind: str, name: str) -> str:
        """Emit what runs before the value of ``kind`` ``name``; return the expression of its value (or a call)."""
        found = self.inlined.get((kind, name))
        if found is None:
            assert self.fields is None, "an operation with a name that is called keeps its context object"
            return f"{python_name(kind, name)}(ctx)"
        out.line(f"# {kind} {comment_text(name)}: inlined from {found.origin}")
        for statement in found.typed if self.typed else found.statements:
            statement = self._declare_once(statement) if self.typed else statement
            if self.fields is None:
                out.block(statement)
            elif local_form(statement, "exec")[1]:  # it needs the object: built from the locals, read back after
                out.line(self.fields.spill())
                out.block(statement)
                out.line(self.fields.reload())
            else:
                out.block(local_form(statement, "exec")[0])
        if found.value is None:
            return ""
        return found.value if self.fields is None else local_form(found.value, "eval")[0]

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
            if found is None or (found.value is not None and local_form(found.value, "eval")[1]):
                return False
        return True

    def effect(self, out: Writer, name: str) -> None:
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
            if hands_on(tree):
                return None  # ctx handed on: anything may be read or written
            for node in ast.walk(tree):
                is_field = isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                if is_field and node.value.id == "ctx":  # type: ignore[attr-defined]
                    fields.add(node.attr)  # type: ignore[attr-defined]
                elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
                    return None  # writes another object
        return frozenset(fields)
