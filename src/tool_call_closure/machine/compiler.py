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

Inlining (:mod:`.inliner`).  A call costs more than most of the steps the table names, so the
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

import hashlib
import linecache
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

from tool_call_closure.errors import TableError
from tool_call_closure.machine.inliner import (
    GENERATED_LOCALS,
    HELPER_NAMES,
    KINDS,
    Code,
    Fields,
    Inlined,
    Writer,
    comment_text,
    context_fields,
    docstring_line,
    inline,
    module_alias,
    python_name,
)
from tool_call_closure.machine.table import Row, Table

__all__ = [
    "GENERATED_FILENAME",
    "NAMES_NOTE",
    "Inlined",
    "Operation",
    "compile_operations",
    "context_fields",
    "generate",
    "generate_source",
    "inline",
    "module_alias",
    "python_name",
    "row_commits",
]

Operation = Callable[[Any], Any]
"""A compiled operation: takes the operation's context, returns its result or raises."""

GENERATED_FILENAME: Final = "<tool-call-closure machine {digest}>"


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


def _emit_rows(out: Writer, table: Table, rows: tuple[Row, ...], code: Code) -> None:
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
                never = ", ".join(comment_text(r.id) for r in skipped)
                out.line(f"# never reached: {never} (an earlier row always fires)")
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


def _emit_firing(out: Writer, table: Table, row: Row, code: Code) -> None:
    out.line(f"# {comment_text(row.id)}" + (f"  ({', '.join(row.catalogue)})" if row.catalogue else ""))
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


def _emit_move(out: Writer, code: Code, target: str) -> None:
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
    out: Writer,
    table: Table,
    op: str,
    phase: str,
    locked: bool,
    code: Code,
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
    out.line(f"# --- phase {comment_text(phase)} ({label})")
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


def _facts_after_locked(table: Table, op: str, phase: str, code: Code, facts: _Facts | None) -> _Facts | None:
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


def _facts_after_unlocked(table: Table, rows: tuple[Row, ...], code: Code, facts: _Facts | None) -> _Facts | None:
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


def _known(code: Code, guard: str) -> frozenset[str]:
    fields = code.context_fields("guard", guard)
    assert fields is not None, "only guards whose fields are known are kept as facts"
    return fields


def _emit_locked(out: Writer, table: Table, op: str, phases: list[tuple[str, bool]], code: Code) -> None:
    """One acquisition of the lock around ``phases`` (name, locked); the reentry check first."""
    names = ", ".join(comment_text(phase) for phase, _ in phases)
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


def _checked_effects(table: Table, op: str, phases: list[str], code: Code) -> list[str] | None:
    """The effects of unlocked ``phases`` if every one has a no-caller-code check (else ``None``)."""
    effects = [
        effect
        for phase in phases
        for row in table.rows_for(op, phase, table.initial_run_state)
        for effect in row.effects
        if table.effects[effect].caller_code
    ]
    return effects if effects and all(effect in code.checked for effect in effects) else None


def _names_used(table: Table, op: str, code: Code) -> set[tuple[str, str]]:
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


def _emit_operation(out: Writer, table: Table, op: str, code: Code, fields: Fields | None) -> None:
    """``enter_<op>``: the phases in order, each run of locked phases under one acquisition of the lock.

    An unlocked run of phases between two locked ones whose caller-code
    effects all have a no-caller-code check is emitted twice: under one
    acquisition with the runs around it when every check holds for the call,
    and as three segments otherwise.

    With ``fields`` (the operation's context fields), the operation takes the
    inputs as parameters and keeps every field in a local variable when
    every name it uses is inlined (the shipped semantics): no context object
    is built, except by :meth:`Fields.spill` for an inlined statement that
    hands ``ctx`` on (read back after it).  Otherwise it builds the context
    from its parameters and runs on the object.  ``run_<op>(ctx)`` runs it on
    a context's fields.  Without ``fields`` (the outline), ``run_<op>(ctx)``
    is the operation itself.
    """
    clash = fields is not None and bool(set(fields.names) & (GENERATED_LOCALS | HELPER_NAMES | set(code.modules)))
    keeps = fields is not None and not clash and code.keeps_locals(_names_used(table, op, code))
    code.fields = fields if keeps else None
    code.declared = set()
    _emit_opening(out, table, op, code, fields, keeps)
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


def _emit_opening(out: Writer, table: Table, op: str, code: Code, fields: Fields | None, keeps: bool) -> None:
    """The ``def`` line, the docstring, the fields (locals, or the context object) and ``trace``; indents."""
    if fields is None:
        out.line(f"def run_{op}(ctx):")
    else:
        returns = " -> Any" if code.typed else ""
        out.line(f"def enter_{op}({fields.parameters(code.typed)}){returns}:")
    out.indent()
    out.line(docstring_line(f"{op}: {' -> '.join(table.operations[op].phases)}."))
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


def _emit_declarations(out: Writer, table: Table, op: str, code: Code) -> None:
    """The annotated locals of the bodies inlined into ``op``, declared once (a body may be written twice)."""
    declared: dict[str, str] = {}
    for key in sorted(_names_used(table, op, code)):
        found = code.inlined.get(key)
        declared.update(found.annotations if found is not None else ())
    if declared:
        out.line("# the annotated locals of the inlined bodies")
    for name, annotation in declared.items():
        out.line(f"{name}: {annotation}")


def _emit_spill(out: Writer, fields: Fields, typed: bool) -> None:
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
    return generate(table, Code(implementations), contexts)


NAMES_NOTE: Final = """Names: guard_X / effect_X / result_X / observed_X / target_X are the semantics of the table's X,
called; a body marked 'inlined from' is that function's body, its locals prefixed and its globals
read from its module (semantics_...); reject(closure, generation, reason, call_id, observed) records
the diagnostic and returns the Rejection; the draft is the run a commit builds aside (draft_of(ctx),
or draft_from(closure) into the local draft), install puts it in place with one assignment; each run
of locked phases holds the instance's lock once (reentry from the thread holding it raises
reentry_error instead of waiting on itself).  enter_<op> keeps the operation's context fields as
local variables (ctx.X is written X) when every name it uses is inlined."""


def generate(table: Table, code: Code, contexts: Mapping[str, type] | None, head: str | None = None) -> str:
    out = Writer()
    if head is not None:
        out.block(head)
        _emit_body(out, table, code, contexts)
        return "\n".join(out.lines) + "\n"
    out.line(docstring_line(f"The transition table {table.version}, compiled: one function per operation.")[:-3])
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


def _emit_body(out: Writer, table: Table, code: Code, contexts: Mapping[str, type] | None) -> None:
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
    code = Code(implementations)
    source = generate(table, code, contexts)
    namespace: dict[str, Any] = {"__builtins__": __builtins__, **helpers}
    namespace.update({context.__name__: context for context in contexts.values()})
    for alias, module_name in code.modules.items():  # the globals of inlined bodies are read from their module
        namespace[alias] = sys.modules[module_name]
    for kind in KINDS:
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
