"""Per-method fast entry points: ``enter_<op>`` with the arguments a public method fixes folded in.

Theory of operation
-------------------
``enter_settle`` takes every input any of ``settle``, ``succeed``, ``fail``
and ``cancel`` gives, and decides at run time which one called it
(``fixed_status == "success"``, ``message_is_error`` …).  A public method
knows that when the module is generated: ``succeed`` always passes
``fixed_status="success"`` and no ``outcome``, ``code`` or ``message``.  So
:func:`method_functions` writes, for each public method of an operation the
table lists, a copy of the generated ``enter_<op>`` named
``method_<python name>`` whose parameters are only what the method passes
on, the rest bound to the values it fixes, and simplifies the copy by
rules that keep its meaning (each one a textbook compiler step, applied
until nothing changes):

* a parameter bound to a constant, or a local assigned once (outside any
  loop) from a constant or from a name that is itself never reassigned, is
  replaced by what it holds;
* a comparison or boolean of constants is computed, an ``if`` or
  conditional expression on a constant keeps its taken branch, an
  ``assert`` of a true constant goes;
* what the table fixes of the machine is read from the table
  (:mod:`.table_facts`): its texts and initial call state, a call's move
  for a status the method fixes; and a field of a record the copy has just
  built is that record's element;
* inside the lock, ``closure._run`` is the run read at the start of the
  phase (``run``): nothing can write it there before the commit installs,
  so re-reading it is a load the copy leaves out;
* an assignment of a constant or a name to a local nobody reads goes;
* a settlement's commit, ``install_fields(closure, None, (position, call))``,
  is ``run.calls[position] = call``: the one item assignment
  ``install_fields`` performs for it, without the frame, the tuple and the
  two tests.  It is still one step (I9): the fault sweep
  (``proofs/faults.py``) counts the install done once that assignment's
  opcode has run.

The copies carry no comments: every row that fires still says its id in
its ``trace.append`` line, and ``enter_<op>`` above them is the commented
reading.  The public class calls the copies (``METHODS``); ``enter_<op>``
stays the entry of the walk's comparisons, of ``run_<op>`` and of any
method without a copy.  The vectors, the bounded model check and the
fault sweep (I9) run through the public class, so through the copies.
"""

from __future__ import annotations

import ast
import copy
import textwrap
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from tool_call_closure.machine.table import Table
from tool_call_closure.machine.table_facts import is_closure_read, is_machine_read, record_fields, table_facts

__all__ = ["METHOD_ARGUMENTS", "method_functions"]

# What each public method passes on to its operation's entry (after ``closure``), by parameter name; every other
# parameter of the entry takes its default, except those below (the method fixes them: from the table's method
# entry, ``status`` and ``default_code``, or, for a Python-only distinction, here).
METHOD_ARGUMENTS: Final[Mapping[str, tuple[str, ...]]] = {
    "begin": ("calls_arg", "turn"),
    "settle": ("handle", "call_id", "outcome"),
    "succeed": ("handle", "call_id", "content"),
    "fail": ("handle", "call_id", "message", "code"),
    "cancel": ("handle", "call_id", "message", "code"),
    "close": ("handle", "reason"),
}
_PYTHON_FIXED: Final[Mapping[str, Mapping[str, str | bool]]] = {"fail": {"message_is_error": True}}


def method_functions(table: Table, source: str) -> tuple[list[str], dict[str, str]]:
    """The ``method_<name>`` functions for the generated ``source``, and public method -> function name."""
    tree = ast.parse(source)
    entries = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    functions: list[str] = []
    names: dict[str, str] = {}
    for operation in table.operations.values():
        entry = entries.get(f"enter_{operation.id}")
        for method in operation.methods:
            python = method["python"]
            if entry is None or python not in METHOD_ARGUMENTS:
                continue
            fixed: dict[str, str | bool] = {"method": python}
            status = method.get("status")
            if status is not None and "." not in status:  # "outcome.status": read from the outcome at run time
                fixed["fixed_status"] = status
            if "default_code" in method:
                fixed["default_code"] = table.texts[method["default_code"]]
            fixed.update(_PYTHON_FIXED.get(python, {}))
            function = _specialized(table, entry, f"method_{python}", METHOD_ARGUMENTS[python], fixed)
            functions.append(ast.unparse(function))
            names[python] = function.name
    return functions, names


def _specialized(
    table: Table, entry: ast.FunctionDef, name: str, passed: tuple[str, ...], fixed: Mapping[str, str | bool]
) -> ast.FunctionDef:
    function = copy.deepcopy(entry)
    function.name = name
    arguments = function.args
    with_defaults = [a.arg for a in arguments.args][len(arguments.args) - len(arguments.defaults) :]
    defaults = dict(zip(with_defaults, arguments.defaults, strict=True))
    bound: dict[str, ast.expr] = {}
    kept: list[ast.arg] = []
    for argument in arguments.args:
        if argument.arg == "closure" or argument.arg in passed:
            kept.append(argument)
        elif argument.arg in fixed:
            bound[argument.arg] = ast.Constant(fixed[argument.arg])
        else:
            bound[argument.arg] = defaults[argument.arg]
    missing = set(passed) - {a.arg for a in kept}
    assert not missing, f"{name}: no parameter {sorted(missing)}"
    arguments.args, arguments.defaults = kept, [d for a, d in defaults.items() if a in {k.arg for k in kept}]
    original = ast.get_docstring(entry) or ""
    settings = ", ".join(f"{key}={ast.unparse(value)}" for key, value in bound.items())
    settings_text = textwrap.fill(f"Fixed: {settings}.", 100, subsequent_indent="    ")
    doc = f"{original.split(':')[0]} as {name[7:]} calls it: {entry.name}, simplified (machine.specialize).\n\n    "
    doc += settings_text + "\n    "
    body = [statement for statement in function.body if not _is_docstring(statement)]
    function.body = [ast.Expr(ast.Constant(doc)), *_substitute(body, bound)]
    facts = table_facts(table)
    for _ in range(20):  # each round can only remove: it ends well before this
        before = ast.dump(function)
        facts.visit(function)
        function.body = _simplify_block(function.body, function)
        function.body = _hoist_runs(function.body)
        function.body = _propagate(function)
        function.body = _forward_records(function.body)
        function.body = _drop_dead_stores(function)
        function.body = _inline_settlement_install(function.body)
        if ast.dump(function) == before:
            break
    return ast.fix_missing_locations(function)


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)


class _Replace(ast.NodeTransformer):
    def __init__(self, values: Mapping[str, ast.expr]) -> None:
        self.values = values

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if isinstance(node.ctx, ast.Load) and node.id in self.values:
            return ast.copy_location(copy.deepcopy(self.values[node.id]), node)
        return node


def _substitute(body: list[ast.stmt], values: Mapping[str, ast.expr]) -> list[ast.stmt]:
    replacer = _Replace(values)
    return [replacer.visit(statement) for statement in body]


# --------------------------------------------------------------------------- folding


def _constant(node: ast.expr) -> tuple[bool, Any]:
    if isinstance(node, ast.Constant):
        return True, node.value
    return False, None


def _fold(node: ast.expr) -> ast.expr:
    """``node`` with its constant comparisons, booleans and conditionals computed (bottom up)."""
    for field, value in ast.iter_fields(node):
        if isinstance(value, ast.expr):
            setattr(node, field, _fold(value))
        elif isinstance(value, list):
            setattr(node, field, [_fold(item) if isinstance(item, ast.expr) else item for item in value])
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        known_left, left = _constant(node.left)
        right = node.comparators[0]
        known_right, right_value = _constant(right)
        if isinstance(right, ast.Tuple) and all(isinstance(e, ast.Constant) for e in right.elts):
            known_right, right_value = True, tuple(e.value for e in right.elts)  # type: ignore[attr-defined]
        if known_left and known_right:
            computed = _compare(node.ops[0], left, right_value)
            if computed is not None:
                return ast.copy_location(ast.Constant(computed), node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        known, value = _constant(node.operand)
        if known:
            return ast.copy_location(ast.Constant(not value), node)
    if isinstance(node, ast.BoolOp):
        return _fold_boolean(node)
    if isinstance(node, ast.IfExp):
        known, value = _constant(node.test)
        if known:
            return node.body if value else node.orelse
    return node


def _compare(op: ast.cmpop, left: Any, right: Any) -> bool | None:
    simple = (str, int, bool, type(None))
    if isinstance(op, (ast.In, ast.NotIn)):
        if not isinstance(right, tuple) or not all(isinstance(v, simple) for v in (left, *right)):
            return None
        return (left in right) == isinstance(op, ast.In)
    if not (isinstance(left, simple) and isinstance(right, simple)):
        return None
    if type(left) is not type(right) and left is not None and right is not None:
        return None  # 1 == True: left to Python
    if isinstance(op, ast.Eq):
        return bool(left == right)
    if isinstance(op, ast.NotEq):
        return bool(left != right)
    if isinstance(op, ast.Is) and (left is None or right is None or isinstance(left, bool)):
        return left is right
    if isinstance(op, ast.IsNot) and (left is None or right is None or isinstance(left, bool)):
        return left is not right
    return None


def _fold_boolean(node: ast.BoolOp) -> ast.expr:
    """``a and b …`` / ``a or b …`` with constant operands dropped where the outcome does not depend on them.

    An operand is dropped only when it is a constant that does not end the chain; a constant that ends it
    ends the chain there (its value is the result when it is the last operand evaluated).
    """
    is_and = isinstance(node.op, ast.And)
    kept: list[ast.expr] = []
    for position, operand in enumerate(node.values):
        known, value = _constant(operand)
        last = position == len(node.values) - 1
        if known and not last and bool(value) == is_and:
            continue  # true in an ``and`` (false in an ``or``) and not the last: evaluation goes on
        kept.append(operand)
        if known and bool(value) != is_and:
            break  # false in an ``and`` (true in an ``or``): the result, whatever follows
    if len(kept) == 1:
        return kept[0]
    node.values = kept
    return node


def _truth(test: ast.expr) -> ast.expr:
    """A condition's trailing constants that cannot change its truth dropped (``x or False`` is as true as ``x``)."""
    if isinstance(test, ast.BoolOp) and len(test.values) > 1:
        known, value = _constant(test.values[-1])
        if known and bool(value) == isinstance(test.op, ast.And):
            test.values = test.values[:-1]
            return _truth(test.values[0] if len(test.values) == 1 else test)
    return test


def _simplify_block(body: list[ast.stmt], function: ast.FunctionDef) -> list[ast.stmt]:
    """Fold every expression; keep the taken branch of a constant ``if``; drop what follows a ``return``/``raise``."""
    out: list[ast.stmt] = []
    for statement in body:
        for field, value in ast.iter_fields(statement):
            if isinstance(value, ast.expr):
                setattr(statement, field, _fold(value))
            elif isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(statement, field, _simplify_block(value, function))
            elif isinstance(value, list):
                setattr(statement, field, [_fold(v) if isinstance(v, ast.expr) else v for v in value])
        if isinstance(statement, ast.If):
            statement.test = _truth(statement.test)
            known, value = _constant(statement.test)
            if known:
                out.extend(statement.body if value else statement.orelse)
                if out and isinstance(out[-1], (ast.Return, ast.Raise)):
                    break
                continue
            if not statement.body:
                statement.body = [ast.Pass()]
        if isinstance(statement, ast.Assert):
            known, value = _constant(statement.test)
            if known and value:
                continue
        if isinstance(statement, ast.Pass) and (out or len(body) > 1):
            continue
        out.append(statement)
        if isinstance(statement, (ast.Return, ast.Raise)):
            break
    return out or [ast.Pass()]


# --------------------------------------------------------------------------- the run, read once under the lock


def _is_run_read(node: ast.AST) -> bool:
    return is_closure_read(node, "_run")


def _may_install(statement: ast.stmt) -> bool:
    """Whether ``statement`` may write ``closure._run``: it installs, or hands the context or closure on."""
    for node in ast.walk(statement):
        if isinstance(node, ast.Assign) and any(_is_run_target(t) for t in node.targets):
            return True
        if isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else ""
            if name.startswith(("install", "run_", "effect_")):
                return True
            if any(isinstance(a, ast.Name) and a.id == "ctx" for a in node.args):
                return True
    return False


def _is_run_target(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "_run" and isinstance(node.value, ast.Name)


class _RunReads(ast.NodeTransformer):
    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        if _is_run_read(node):
            return ast.copy_location(ast.Name("run", ast.Load()), node)
        return self.generic_visit(node)


def _hoist_runs(body: list[ast.stmt]) -> list[ast.stmt]:
    """In each ``with lock:`` block, ``closure._run`` after ``run = closure._run`` is ``run`` (until a commit)."""
    for statement in body:
        for _field, value in ast.iter_fields(statement):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                _hoist_runs(value)
        if isinstance(statement, ast.With) and _is_lock(statement):
            _hoist_in(statement.body, active=False)
    return body


def _is_lock(statement: ast.With) -> bool:
    item = statement.items[0].context_expr
    return isinstance(item, ast.Name) and item.id == "lock"


def _hoist_in(body: list[ast.stmt], active: bool) -> bool:
    """Rewrite reads in ``body`` while ``run`` holds the run; return whether it still does at the end."""
    for position, statement in enumerate(body):
        if _assigns_run(statement):
            active = True
            continue
        if not active:
            continue
        if isinstance(statement, ast.If):
            statement.test = _RunReads().visit(statement.test)
            # A branch that ends the operation (return, raise) leaves nothing after the if to protect.
            still = [_hoist_in(branch, True) or _exits(branch) for branch in (statement.body, statement.orelse)]
            if not all(still):
                return False
            continue
        if _may_install(statement):
            return False
        body[position] = _RunReads().visit(statement)
        if any(isinstance(n, ast.Name) and n.id == "run" and isinstance(n.ctx, ast.Store) for n in ast.walk(statement)):
            return False
    return active


def _exits(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


def _assigns_run(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
        and statement.targets[0].id == "run"
        and _is_run_read(statement.value)
    )


# --------------------------------------------------------------------------- propagation and dead stores


def _propagate(function: ast.FunctionDef) -> list[ast.stmt]:
    """Forward substitution, block by block: after ``x = c`` (a constant or a name), ``x`` is read as ``c``.

    Within the statements that follow in the same block, up to the first one
    that writes ``x`` or the name ``c`` (that one still reads ``c`` in an
    ``if``'s condition or an assignment's value, evaluated before its write).
    A name ``c`` must be a local or a parameter (a global is read where it is).
    """
    assigned = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    locals_ = assigned | {a.arg for a in function.args.args}
    return _forward(function.body, locals_)


def _forward(body: list[ast.stmt], locals_: set[str]) -> list[ast.stmt]:
    for position, statement in enumerate(body):
        for _field, value in ast.iter_fields(statement):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                _forward(value, locals_)
        target, source = _simple_assignment(statement)
        if target is None or source is None:
            continue
        names = {target}  # (``closure._machine`` is never written: only the target ends it)
        if isinstance(source, ast.Name):
            if source.id == target or source.id not in locals_:
                continue
            names.add(source.id)
        _substitute_until_written(body[position + 1 :], {target: source}, names)
    return body


def _substitute_until_written(
    block: list[ast.stmt], values: dict[str, ast.expr], names: set[str], rewrite: ast.NodeTransformer | None = None
) -> bool:
    """Read ``values`` into ``block`` in place, up to the first statement that writes one of ``names``.

    ``rewrite``, when given, replaces the reading of ``values`` (and carries into branches as a constant does).

    A constant is also carried into the branches of an ``if`` and the body of a
    ``with`` that write it in some branch only: each branch up to its own write
    (the branches exclude each other, a ``with`` body runs once).  Returns True
    if the block wrote one of the names.
    """
    constant = rewrite is not None or all(isinstance(value, ast.Constant) for value in values.values())
    replace = rewrite if rewrite is not None else _Replace(values)
    for index, following in enumerate(block):
        if not any(_writes(following, name) for name in names):
            block[index] = replace.visit(following)
            continue
        if isinstance(following, ast.If) and constant:
            # (A name is not put in a condition that narrows it for the branch's own write: the type
            # checker narrows the name the condition tests.)
            if not any(_writes(ast.Expr(following.test), name) for name in names):
                following.test = replace.visit(following.test)
                _substitute_until_written(following.body, values, names, rewrite)
                _substitute_until_written(following.orelse, values, names, rewrite)
        elif isinstance(following, ast.With) and constant and not any(_writes_items(following, n) for n in names):
            _substitute_until_written(following.body, values, names, rewrite)
        elif (
            isinstance(following, (ast.Assign, ast.AnnAssign))
            and following.value is not None
            and _no_walrus(following.value)
        ):
            following.value = replace.visit(following.value)
        return True
    return False


def _forward_records(body: list[ast.stmt]) -> list[ast.stmt]:
    """After ``x = (…)`` (a tuple display), ``x[k]`` is its element k where that is a constant, and x is not None.

    Block by block, up to the first statement that writes ``x``, as :func:`_forward` carries a constant.
    """
    for position, statement in enumerate(body):
        for _field, value in ast.iter_fields(statement):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                _forward_records(value)
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, record = statement.targets[0], statement.value
            if isinstance(target, ast.Name) and isinstance(record, ast.Tuple):
                rewrite = record_fields(target.id, record)
                _substitute_until_written(body[position + 1 :], {}, {target.id}, rewrite)
    return body


def _writes_items(statement: ast.With, name: str) -> bool:
    return any(_writes(ast.Expr(item.context_expr), name) or item.optional_vars is not None for item in statement.items)


def _no_walrus(value: ast.expr) -> bool:
    return not any(isinstance(n, ast.NamedExpr) for n in ast.walk(value))


def _writes(statement: ast.stmt, name: str) -> bool:
    return any(
        isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load) for n in ast.walk(statement)
    )


def _statements(body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
    for statement in body:
        yield statement
        for _field, value in ast.iter_fields(statement):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                yield from _statements(value)


def _simple_assignment(statement: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
        target, value = statement.targets[0], statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.value is not None and not _is_any(statement.annotation):
        target, value = statement.target, statement.value
    else:  # (a copy annotated Any is kept: read through it, a value escapes the narrowing of a type test)
        return None, None
    if isinstance(target, ast.Name) and (isinstance(value, (ast.Constant, ast.Name)) or is_machine_read(value)):
        return target.id, value
    return None, None


def _is_any(annotation: ast.expr) -> bool:
    return (isinstance(annotation, ast.Name) and annotation.id == "Any") or (
        isinstance(annotation, ast.Attribute) and annotation.attr == "Any"
    )


def _pure(value: ast.expr | None) -> bool:
    if value is None:
        return False  # a bare annotation: nothing runs, and it keeps the type of the local's other assignments
    if isinstance(value, (ast.Constant, ast.Name)) or is_machine_read(value):
        return True
    return isinstance(value, ast.Tuple) and all(_pure(e) for e in value.elts)


def _drop_dead_stores(function: ast.FunctionDef) -> list[ast.stmt]:
    """Remove assignments of constants, names and tuples of them to locals that are never read.

    Never read anywhere in the function, or never read after the store in a block that then ends the
    operation on every path (:func:`_ends`; no ``break`` or ``continue`` to leave it otherwise, and no ``try``
    in the function whose handler could read the local after an exception).
    """
    loads = {n.id for n in ast.walk(function) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    if not any(isinstance(n, ast.Try) for n in ast.walk(function)):
        _drop_stores_read_no_more(function.body)

    def keep(statement: ast.stmt) -> bool:
        value: ast.expr | None
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign):
            target, value = statement.target, statement.value
        else:
            return True
        return not (isinstance(target, ast.Name) and target.id not in loads and _pure(value))

    return _filtered(function.body, keep)


def _drop_stores_read_no_more(body: list[ast.stmt]) -> None:
    for statement in body:
        for _field, value in ast.iter_fields(statement):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                _drop_stores_read_no_more(value)
    if not _ends(body):
        return
    if any(isinstance(n, (ast.Break, ast.Continue)) for statement in body for n in ast.walk(statement)):
        return
    for position in range(len(body) - 1, -1, -1):
        statement = body[position]
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1 and _pure(statement.value)):
            continue
        target = statement.targets[0]
        if isinstance(target, ast.Name) and not any(_reads(later, target.id) for later in body[position + 1 :]):
            del body[position]


def _ends(body: list[ast.stmt]) -> bool:
    """Every path through ``body`` ends the operation: a ``return`` or ``raise`` last, or an ``if`` whose
    branches both end it, or a ``with lock:`` whose body does (the lock's exit lets every exception through)."""
    last = body[-1] if body else None
    if isinstance(last, ast.If):
        return _ends(last.body) and _ends(last.orelse)
    if isinstance(last, ast.With):
        return _is_lock(last) and _ends(last.body)
    return isinstance(last, (ast.Return, ast.Raise))


def _reads(statement: ast.stmt, name: str) -> bool:
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(statement))


def _filtered(body: list[ast.stmt], keep: Callable[[ast.stmt], bool]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for statement in body:
        if not keep(statement):
            continue
        for field, value in ast.iter_fields(statement):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(statement, field, _filtered(value, keep) or [ast.Pass()])
        out.append(statement)
    return out


# --------------------------------------------------------------------------- a settlement's install


def _inline_settlement_install(body: list[ast.stmt]) -> list[ast.stmt]:
    """``install_fields(closure, None, (position, call))`` -> ``closure._run.calls[position] = call``.

    The staged call is also recognized as a local assigned that tuple earlier in the same block.
    """
    staged_tuples: dict[str, ast.Tuple] = {}
    for position, statement in enumerate(body):
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target = statement.targets[0]
            if isinstance(target, ast.Name) and isinstance(statement.value, ast.Tuple):
                staged_tuples[target.id] = statement.value
            elif isinstance(target, ast.Name):
                staged_tuples.pop(target.id, None)
        for _field, value in ast.iter_fields(statement):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                _inline_settlement_install(value)
        call = statement.value if isinstance(statement, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "install_fields"):
            continue
        if len(call.args) != 3:
            continue
        draft, staged = call.args[1], call.args[2]
        if isinstance(staged, ast.Name) and staged.id in staged_tuples:
            staged = staged_tuples[staged.id]
        if not (isinstance(draft, ast.Constant) and draft.value is None and isinstance(staged, ast.Tuple)):
            continue
        if len(staged.elts) != 2 or not all(isinstance(e, (ast.Name, ast.Constant)) for e in staged.elts):
            continue
        index, record = staged.elts
        run = ast.Attribute(ast.Name("closure", ast.Load()), "_run", ast.Load())
        calls = ast.Attribute(run, "calls", ast.Load())
        install = ast.Assign([ast.Subscript(calls, index, ast.Store())], record)  # (read as run.calls: _hoist_runs)
        body[position] = ast.copy_location(install, statement)
    return body
