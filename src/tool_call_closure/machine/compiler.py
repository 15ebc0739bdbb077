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
* consecutive locked phases become one *segment* function, which the
  operation hands to ``Machine.run_locked`` — the same lock plumbing the walk
  uses (reentry refused, lock taken, owner recorded and always cleared); in
  it each phase reads the run state afresh and branches on it, one branch per
  group of states that have the same rows;
* within a branch the rows become an ``if``/``elif`` chain in table order,
  the guard of each row its condition (a row without a guard ends the chain:
  the rows after it can never fire in that state);
* a firing row appends its id to ``closure._trace`` when tracing, calls its
  effects, moves the draft run's state (checking a dynamic target against the
  row's allowed targets), and ends the operation with its result — a
  committing row builds its result first and then installs the draft with one
  assignment — or falls through to the next phase;
* an operation that runs out of phases raises the table's default error.

Nothing in the generated code is written by hand: every state, row id, guard,
effect, result, error code and rejection reason comes from the table, and the
names are bound to the same :mod:`.semantics` functions the walk uses (the
semantics are called, never copied, so a change to a guard or an effect
changes both paths).  The source is built by :func:`generate_source`,
compiled with :func:`compile`, and registered with :mod:`linecache` so a
traceback through it shows the generated lines.  ``tool-call-closure table
--emit-python`` prints it: it is also a readable rendering of the table for
port authors.

The tests keep the walk as the oracle: the compiled functions and the walk
must agree on every vector and on every step the bounded model check reaches
(``tests/test_compiler.py``).
"""

from __future__ import annotations

import hashlib
import linecache
import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from tool_call_closure.errors import TableError
from tool_call_closure.machine.table import Row, Table

__all__ = [
    "GENERATED_FILENAME",
    "Operation",
    "compile_operations",
    "generate_source",
    "python_name",
    "row_commits",
]

Operation = Callable[[Any], Any]
"""A compiled operation: takes the operation's context, returns its result or raises."""

GENERATED_FILENAME: Final = "<tool-call-closure machine {digest}>"

_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KINDS: Final = ("guard", "effect", "result", "observed", "target")


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


class _Writer:
    """Indented lines of source."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def line(self, text: str = "") -> None:
        self.lines.append(("    " * self.depth + text) if text else "")

    def indent(self) -> None:
        self.depth += 1

    def dedent(self) -> None:
        self.depth -= 1


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


def _emit_rows(out: _Writer, table: Table, rows: tuple[Row, ...]) -> None:
    """An ``if``/``elif`` chain: the first row whose guard holds fires."""
    if not rows:
        out.line("pass  # no row: on to the next phase")
        return
    for position, row in enumerate(rows):
        if row.guard is None:
            if position:
                out.line("else:")
                out.indent()
            _emit_firing(out, table, row)
            if position:
                out.dedent()
            skipped = rows[position + 1 :]
            if skipped:
                out.line(f"# never reached: {', '.join(_comment(r.id) for r in skipped)} (an earlier row always fires)")
            return
        keyword = "if" if position == 0 else "elif"
        out.line(f"{keyword} {python_name('guard', row.guard)}(ctx):")
        out.indent()
        _emit_firing(out, table, row)
        out.dedent()


def _emit_firing(out: _Writer, table: Table, row: Row) -> None:
    out.line(f"# {_comment(row.id)}" + (f"  ({', '.join(row.catalogue)})" if row.catalogue else ""))
    out.line("if closure._trace is not None:")
    out.line(f"    closure._trace.append({row.id!r})")
    for effect in row.effects:
        out.line(f"{python_name('effect', effect)}(ctx)")
    if len(row.to) == 1:
        out.line(f"draft_of(ctx).state = {row.to[0]!r}  # the draft: installed with the rest of the commit")
    elif row.to_by is not None:
        out.line(f"target = {python_name('target', row.to_by)}(ctx)")
        out.line(f"if target not in {row.to!r}:")
        out.line(f"    raise spec_error('illegal_transition', operation={row.op!r}, state=target)")
        out.line("draft_of(ctx).state = target  # the draft: installed with the rest of the commit")
    commits = row_commits(table, row)
    result = row.result
    if result is None:
        if commits:
            out.line("install(ctx)  # the commit takes effect: one assignment")
        out.line("# no result: on to the next phase")
        return
    if result.kind == "reject":
        call_id = "ctx.call_id" if result.call_id == "argument" else "None"
        observed = f"{python_name('observed', result.observed)}(ctx)" if result.observed is not None else "None"
        out.line(f"return reject(ctx, {result.name!r}, {call_id}, {observed})")
    elif result.kind == "return" and commits:
        out.line(f"result = {python_name('result', result.name)}(ctx)  # built from the draft, before the install")
        out.line("install(ctx)  # the commit takes effect: one assignment, after everything that can fail")
        out.line("return result")
    elif result.kind == "return":
        out.line(f"return {python_name('result', result.name)}(ctx)")
    else:
        out.line(f"raise spec_error({result.name!r})")


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


def _emit_phase(out: _Writer, table: Table, op: str, phase: str, locked: bool) -> None:
    out.line(f"# --- phase {_comment(phase)} ({'locked' if locked else 'unlocked: caller code may run'})")
    if not locked:  # the same rows in every state (the validator requires it)
        _emit_rows(out, table, table.rows_for(op, phase, table.initial_run_state))
        return
    groups = _state_groups(table, op, phase)
    if len(groups) == 1:
        _emit_rows(out, table, groups[0][1])
        return
    out.line("run = closure._run")
    out.line('state = run.state if run is not None else "none"')
    for position, (states, rows) in enumerate(groups):
        keyword = "if" if position == 0 else "elif"
        test = f"state == {states[0]!r}" if len(states) == 1 else f"state in {states!r}"
        out.line(f"{keyword} {test}:")
        out.indent()
        _emit_rows(out, table, rows)
        out.dedent()


def _emit_operation(out: _Writer, table: Table, op: str) -> None:
    """``run_<op>``, then one ``locked_<op>_<k>`` function per lock segment (run by ``run_locked``)."""
    spec = table.operations[op]
    segments = _segments(table, op)
    out.line(f"def run_{op}(ctx):")
    out.indent()
    out.line(_docstring(f"{op}: {' -> '.join(spec.phases)}."))
    out.line("closure = ctx.closure")
    locked_functions: list[tuple[str, list[str]]] = []
    for locked, phases in segments:
        if not locked:
            for phase in phases:
                _emit_phase(out, table, op, phase, locked)
            continue
        name = f"locked_{op}_{len(locked_functions) + 1}"
        locked_functions.append((name, phases))
        label = "phase" if len(phases) == 1 else "phases"
        out.line(f"# --- {label} {', '.join(_comment(p) for p in phases)}: under the lock, in {name}")
        out.line(f"outcome = run_locked({op!r}, ctx, {name})")
        out.line("if outcome is not NEXT:")
        out.line("    return outcome")
    out.line("# no row ended the operation: the table's default")
    out.line("run = closure._run")
    out.line(
        f'raise spec_error({table.default_error!r}, operation={op!r}, state=run.state if run is not None else "none")'
    )
    out.dedent()
    for name, phases in locked_functions:
        out.line("")
        out.line("")
        out.line(f"def {name}(ctx):")
        out.indent()
        out.line(_docstring(f"{op}, under the lock: {' -> '.join(phases)}; NEXT if no row ended it."))
        out.line("closure = ctx.closure")
        for phase in phases:
            _emit_phase(out, table, op, phase, True)
        out.line("return NEXT")
        out.dedent()


def generate_source(table: Table) -> str:
    """The Python source of the compiled table: ``run_<op>(ctx)`` per operation and an ``OPERATIONS`` map."""
    out = _Writer()
    out.line(_docstring(f"The transition table {table.version}, compiled: one function per operation.")[:-3])
    out.line("")
    out.line("Generated from spec/machine.json by tool_call_closure.machine.compiler; do not edit.")
    out.line("Names: guard_X / effect_X / result_X / observed_X / target_X are the semantics of the table's X;")
    out.line("reject(ctx, reason, call_id, observed) records the diagnostic and returns the Rejection;")
    out.line("draft_of(ctx) is the run a commit builds aside, install(ctx) puts it in place with one assignment;")
    out.line("run_locked(op, ctx, segment) runs segment(ctx) under the instance's lock (Machine.run_locked, shared")
    out.line("with the walk: reentry refused, owner recorded and cleared); NEXT means no row ended the operation.")
    out.line('"""')
    for op in table.operations:
        out.line("")
        out.line("")
        _emit_operation(out, table, op)
    out.line("")
    out.line("")
    entries = ", ".join(f"{op!r}: run_{op}" for op in table.operations)
    out.line(f"OPERATIONS = {{{entries}}}")
    return "\n".join(out.lines) + "\n"


def compile_operations(
    table: Table, implementations: Mapping[str, Mapping[str, Callable[..., Any]]], helpers: Mapping[str, Any]
) -> tuple[str, Mapping[str, Operation]]:
    """Generate, compile and bind the table's operations.

    ``implementations`` maps each kind (guard, effect, result, observed,
    target) to the table's names for it and their functions; ``helpers`` holds
    the mechanisms the generated code shares with the walk (``run_locked``,
    ``NEXT``, ``reject``, ``spec_error``, ``draft_of``, ``install``).  Returns the source and ``{op: function}``.
    """
    source = generate_source(table)
    namespace: dict[str, Any] = {"__builtins__": __builtins__, **helpers}
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
    return source, operations
