"""The generic interpreter: compiles the table once and runs operations by it.

Theory of operation
-------------------
An operation (``begin``, ``settle``, ``close`` …) is a fixed sequence of
*phases* declared by the table.  In each phase the interpreter looks up the
rows of (operation, phase, current run state) and fires the first whose guard
holds (a row without a guard always holds):

* its effects run, in order;
* its ``to`` moves the current generation to a new run state;
* its ``result`` ends the operation — *reject* (return a :class:`Rejection`
  and record it as a diagnostic), *raise* (a spec error) or *return* (a named
  value such as the snapshot).  A row without a result moves on to the next
  phase.

When no row fires the operation moves on; when the last phase ends with no
result the operation takes the table's default (it raises
``illegal_transition`` and changes nothing).  The current state is read again
at every phase, because caller code in an unlocked phase may have changed it:
that is how a nested close or a newer generation "wins" (catalogue §13).

Two ways to run the same table.  :meth:`Machine.walk` is the definition: it
walks the compiled rows exactly as described here.  :meth:`Machine.run`, what
the public class calls, executes the same walk written out as Python code
when the table is loaded (:mod:`.compiler`: one generated function per
operation, printed by ``tool-call-closure table --emit-python``), so the
per-phase lookups, loops, row records and most calls cost nothing at run
time: the bodies of the semantics are written into it.  Both bind the same
semantics and share the same mechanisms (the lock segment's shape,
``draft_of``, ``install``, :func:`record_rejection`); the tests hold them to
the same answers on every vector and every step the bounded model check
reaches.

Locking.  Phases marked ``locked`` run while holding the instance's lock;
consecutive locked phases share one acquisition, so a recheck and its commit
are atomic, and every read of the state happens under the lock.  Rows of
unlocked phases apply in every state and have no guard (the validator
requires it), so an unlocked phase never looks at a generation another thread
is in the middle of changing.  Unlocked phases (``prepare``, ``normalize``) are where caller code
runs — ``__str__``, properties, ``__json__`` hooks — so caller code never runs
while the lock is held, and a hook that calls back into the closure cannot
deadlock.  Nothing in a locked phase calls caller code; a finalizer, signal
handler or weakref callback that enters the instance from inside one (on the
thread holding the lock) is refused with ``reentrant_call``.

Committing.  A row that writes (an effect with ``writes``, or a target) runs
its effects against a draft, moves the draft, builds its result, and only
then installs the draft with one assignment (:func:`.context.install`), so
an exception anywhere before that changes nothing (invariant I9).

Nothing here knows what a guard or an effect *means*: the names are bound to
functions from :mod:`.semantics` when the table is compiled.  Compilation
refuses a table that names a guard, effect or result with no implementation,
an implementation the table never names, or one whose signature does not
accept the context of the operation that names it (:mod:`.context`).  No
per-state branching lives in code: legality is decided by the table alone.

Export formats are names in the table; the renderer of each format is bound
above the machine, by the public class, which hands it to the operation in its
:class:`~.context.ExportContext`.  The machine never imports a provider.
"""

from __future__ import annotations

import functools
import inspect
import os
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, cast

from tool_call_closure import _compiled
from tool_call_closure.absent import ABSENT
from tool_call_closure.errors import TableError, spec_error
from tool_call_closure.machine import compiler as compiler_module
from tool_call_closure.machine import context as context_module
from tool_call_closure.machine import inliner as inliner_module
from tool_call_closure.machine import module_form as module_form_module
from tool_call_closure.machine import run as run_module
from tool_call_closure.machine import semantics as sem
from tool_call_closure.machine import specialize as specialize_module
from tool_call_closure.machine import table_facts as table_facts_module
from tool_call_closure.machine import table_types as table_types_module
from tool_call_closure.machine.compiler import Operation, compile_operations, row_commits
from tool_call_closure.machine.context import (
    OPERATION_CONTEXTS,
    Context,
    Instance,
    RejectContext,
    SettleContext,
    draft_from,
    draft_of,
    install,
    install_fields,
    record_rejection,
    reentry_error,
)
from tool_call_closure.machine.module_form import digest_sources
from tool_call_closure.machine.table import TABLE, TABLE_TEXT, Row, Table
from tool_call_closure.values import CallRecord, Rejection, SettlementRecord

__all__ = [
    "GENERATED_FROM",
    "HELPERS",
    "MACHINE",
    "MACHINE_CHOICES",
    "MACHINE_SWITCH",
    "CompiledRow",
    "Machine",
    "checked_in_module",
    "implementations",
    "record_rejection",
]


_NEXT: Final = object()  # a phase's answer when no row ended the operation

Guard = Callable[[Context], bool]
Effect = Callable[[Context], None]
Producer = Callable[[Context], Any]


@dataclass(frozen=True, slots=True)
class CompiledRow:
    row: Row
    guard: Guard | None
    effects: tuple[Effect, ...]
    to: str | None  # a fixed target, or None
    to_by: Callable[[Context], str] | None  # a dynamic target
    allowed: tuple[str, ...]
    reject: str | None
    reject_call_id: bool
    observed: Callable[[Context], str | None] | None
    raise_code: str | None
    produce: Producer | None
    moves: bool  # the row has a target (fixed or dynamic)
    commits: bool  # an effect writes the run, or the row moves it: the row ends with install()


class Machine:
    """A table compiled into dispatch tuples: ``plans[op]`` is the operation's phases, grouped into lock segments."""

    __slots__ = (
        "call_events",
        "call_next",
        "closed",
        "effect_call_next",
        "effect_run_to",
        "entries",
        "export_format",
        "implementations",
        "initial_call_state",
        "module",
        "operations",
        "origin",
        "plans",
        "source",
        "table",
        "texts",
    )

    def __init__(
        self,
        table: Table,
        checked_in: types.ModuleType | None = None,
        walk: bool = False,
        compiled: types.ModuleType | None = None,
    ) -> None:
        """Compile ``table``; ``checked_in``: its generated module, already checked fresh (:func:`checked_in_module`);
        ``walk``: every operation answered by :meth:`walk` (the ``TCC_MACHINE=walk`` switch); ``compiled``: the
        compiled build of ``checked_in`` (:mod:`tool_call_closure._compiled`), whose operations then run."""
        _check_bindings(table, sem.GUARDS, sem.EFFECTS, sem.RESULTS, sem.OBSERVED, sem.TARGETS, sem.TEXTS)
        _check_contexts(table)
        self.table = table
        self.texts: Mapping[str, str] = table.texts
        self.closed: frozenset[str] = table.closed_run_states
        self.initial_call_state: str = table.initial_call_state
        self.call_next: Mapping[tuple[str, str], str] = {(t.from_state, t.event): t.to for t in table.call_transitions}
        self.effect_run_to: Mapping[str, str] = table.effect_run_targets()
        # effect id -> {call status -> call event}, and -> {(call state, call status) -> the call state it moves to}:
        # the call machine's move resolved when the table is compiled, so a settlement looks it up once.
        self.call_events: Mapping[str, Mapping[str, str]] = table.effect_call_events()
        self.effect_call_next: Mapping[str, dict[tuple[str, str], str]] = table.effect_call_moves()
        for j, m in enumerate(table.operations["export"].methods):
            if "format" not in m:
                raise TableError(
                    f"invalid transition table: operations.export.methods[{j}]: missing field 'format'",
                    code="table_invalid",
                )
        # method name -> export format; the public class binds each format to a provider's renderer.
        self.export_format: Mapping[str, str] = {m["python"]: m["format"] for m in table.operations["export"].methods}
        self.plans = _plans(table)
        self.operations: Mapping[str, Operation]
        # What the table's names are bound to, by kind (what the compiler inlines or calls).
        self.implementations: Mapping[str, Mapping[str, Callable[..., Any]]] = implementations()
        # The same table written out as Python (see .compiler); ``run`` executes it on a context, and the
        # public class calls ``entries`` (the compiled operations on their inputs: no context object built).
        # The shipped table's is checked in (machine/generated.py), used while it matches what it was generated
        # from; any other table, or a stale module, is generated here.
        self.origin = "generated at import"
        # The module whose enter_<op> functions the public class calls directly (None: it calls ``entries``).
        self.module: types.ModuleType | None = None
        if checked_in is not None:
            self.source = inspect.getsource(checked_in)  # the pure module's: a compiled one has no source
            self.module = checked_in if compiled is None else compiled
            self.operations, self.entries = self.module.OPERATIONS, self.module.ENTRIES
            self.origin = "checked in" if compiled is None else "compiled"
        else:
            self.source, self.operations, self.entries = compile_operations(
                table, self.implementations, HELPERS, OPERATION_CONTEXTS
            )
        if walk:
            self.entries = self.walking_entries()
            self.operations = {op: functools.partial(self.walk, op) for op in self.operations}
            self.origin = "walk"
            self.module = None

    def run(self, op: str, ctx: Context) -> Any:
        """Run operation ``op`` on ``ctx`` (an ``OPERATION_CONTEXTS[op]``); return its result or raise.

        Runs the compiled form of the table (:mod:`.compiler`); :meth:`walk` is the same table walked row by row.
        """
        return self.operations[op](ctx)

    def walking_entries(self) -> Mapping[str, Callable[..., Any]]:
        """``entries`` that run each operation by :meth:`walk` (for tests that plant a probe in the walk)."""

        def entry(op: str) -> Callable[..., Any]:
            def walked(closure: Instance, method: str, *inputs: Any, **named: Any) -> Any:
                return self.walk(op, OPERATION_CONTEXTS[op](closure, method, *inputs, **named))

            return walked

        return {op: entry(op) for op in self.operations}

    def walk(self, op: str, ctx: Context) -> Any:
        """Run operation ``op`` by walking the table's rows: the definition the compiled operations follow.

        A lock segment (consecutive locked phases) has one shape, which is what
        makes it safe under any exception; the compiled operations have it exactly:

        1. the reentry check first: a finalizer, signal handler or weakref
           callback of *this* thread entering while it holds the lock
           (``lock._is_owned()``: the instance's lock is a ``threading.RLock``,
           which knows its owner) raises :func:`~.context.reentry_error`
           instead of deadlocking on itself; the lock is never taken twice;
        2. ``with lock:`` (a C-level lock: acquiring it and registering its
           release are one step, so an asynchronous exception cannot leak it,
           and there is no owner bookkeeping an exception could leave stale).
        """
        closure = ctx.closure
        for locked, phases in self.plans[op]:
            if not locked:
                # Unlocked phases do not depend on the state (the validator requires it), so they never
                # observe a generation another thread is in the middle of changing.
                for rows in phases:
                    outcome = self._fire(ctx, rows["*"])
                    if outcome is not _NEXT:
                        return outcome
                continue
            lock = closure._lock
            if lock._is_owned():
                raise reentry_error(op)
            with lock:
                for by_state in phases:
                    run = closure._run
                    outcome = self._fire(ctx, by_state[run.state if run is not None else "none"])
                    if outcome is not _NEXT:
                        return outcome
        raise spec_error(self.table.default_error, operation=op, state=_state_name(closure))

    def _fire(self, ctx: Context, rows: tuple[CompiledRow, ...]) -> Any:
        """Fire the first row whose guard holds; its result, or ``_NEXT`` to go on to the next phase.

        A committing row (one whose effects write or that moves the run)
        builds everything aside — effects write the draft, the move sets the
        draft's state, the result (with its snapshot) is built from the draft
        — and only then :func:`~.context.install` puts it in place with one
        assignment.  Nothing that can raise runs after the install.
        """
        for compiled in rows:
            if compiled.guard is not None and not compiled.guard(ctx):
                continue
            trace = ctx.closure._trace
            if trace is not None:
                trace.append(compiled.row.id)
            for effect in compiled.effects:
                effect(ctx)
            if compiled.moves:
                self._move(ctx, compiled)
            if compiled.reject is not None:
                return self._reject(ctx, compiled)
            if compiled.produce is not None:
                result = compiled.produce(ctx)
                if compiled.commits:
                    install(ctx)
                return result
            if compiled.raise_code is not None:
                raise spec_error(compiled.raise_code)
            if compiled.commits:
                install(ctx)
            return _NEXT
        return _NEXT

    def apply_call_event(self, call: CallRecord, event: str, settlement: SettlementRecord) -> CallRecord:
        """The call machine: the record ``call`` (id, name, state, settlement) becomes after ``event``, or raise."""
        call_id, name, state, _ = call
        target = self.call_next.get((state, event))
        if target is None:
            raise spec_error(self.table.call_default_error, operation=event, state=state)
        return (call_id, name, target, settlement)

    @staticmethod
    def _move(ctx: Context, compiled: CompiledRow) -> None:
        target = compiled.to if compiled.to is not None else compiled.to_by(ctx)  # type: ignore[misc]
        if target not in compiled.allowed:
            raise spec_error("illegal_transition", operation=compiled.row.op, state=target)
        draft_of(ctx).state = target  # the draft: installed with the rest of the commit

    @staticmethod
    def _reject(ctx: Context, compiled: CompiledRow) -> Rejection:
        # _check_contexts: only operations with a RejectContext reject, and only settle names its call id.
        assert compiled.reject is not None
        call_id = cast(SettleContext, ctx).call_id if compiled.reject_call_id else None
        observed = compiled.observed(ctx) if compiled.observed is not None else None
        reject_ctx = cast(RejectContext, ctx)
        return record_rejection(reject_ctx.closure, reject_ctx.reject_generation, compiled.reject, call_id, observed)


Plan = tuple[tuple[bool, tuple[Mapping[str, tuple[CompiledRow, ...]], ...]], ...]
"""An operation's phases as the walk runs them: runs of the same lock status, each phase's rows by run state."""


def _plans(table: Table) -> dict[str, Plan]:
    """Each operation's :data:`Plan` (an unlocked phase's rows are the same in every state: under ``"*"``)."""
    plans: dict[str, Plan] = {}
    for op_id, op in table.operations.items():
        segments: list[tuple[bool, list[Mapping[str, tuple[CompiledRow, ...]]]]] = []
        for phase in op.phases:
            locked = table.phases[phase]
            by_state: Mapping[str, tuple[CompiledRow, ...]]
            if locked:
                by_state = {
                    state: tuple(_compile_row(row, table) for row in table.rows_for(op_id, phase, state))
                    for state in table.run_states
                }
            else:  # the same rows in every state ("*")
                rows = table.rows_for(op_id, phase, table.initial_run_state)
                by_state = {"*": tuple(_compile_row(row, table) for row in rows)}
            if segments and segments[-1][0] == locked:
                segments[-1][1].append(by_state)
            else:
                segments.append((locked, [by_state]))
        plans[op_id] = tuple((locked, tuple(phases)) for locked, phases in segments)
    return plans


def _state_name(closure: Instance) -> str:
    run = closure._run
    return run.state if run is not None else "none"


def _compile_row(row: Row, table: Table) -> CompiledRow:
    result = row.result
    return CompiledRow(
        row=row,
        guard=sem.GUARDS[row.guard] if row.guard is not None else None,
        effects=tuple(sem.EFFECTS[name] for name in row.effects),
        to=row.to[0] if len(row.to) == 1 else None,
        to_by=sem.TARGETS[row.to_by] if row.to_by is not None else None,
        allowed=row.to,
        reject=result.name if result is not None and result.kind == "reject" else None,
        reject_call_id=result is not None and result.call_id == "argument",
        observed=sem.OBSERVED[result.observed] if result is not None and result.observed is not None else None,
        raise_code=result.name if result is not None and result.kind == "raise" else None,
        produce=sem.RESULTS[result.name] if result is not None and result.kind == "return" else None,
        moves=bool(row.to) or row.to_by is not None,
        commits=row_commits(table, row),
    )


def _accepts(implementation: Callable[..., Any]) -> type[Context]:
    """The context class an implementation declares for its one parameter."""
    hints = typing.get_type_hints(implementation)
    hints.pop("return", None)
    declared = next(iter(hints.values()), None)
    if not (isinstance(declared, type) and issubclass(declared, Context)):
        name = getattr(implementation, "__name__", repr(implementation))
        raise TableError(
            f"invalid transition table: implementation {name!r} does not declare the context it reads",
            code="table_invalid",
        )
    return declared


def _check_contexts(table: Table) -> None:
    """Every name a row uses must accept the context its operation runs with (see :mod:`.context`)."""
    for row in table.transitions:
        given = OPERATION_CONTEXTS.get(row.op)
        if given is None:
            raise TableError(
                f"invalid transition table: operations.{row.op}: no context class for this operation",
                code="table_invalid",
            )
        result = row.result
        named: list[tuple[str, str, Callable[..., Any]]] = []
        if row.guard is not None:
            named.append(("guard", row.guard, sem.GUARDS[row.guard]))
        named += [("effect", name, sem.EFFECTS[name]) for name in row.effects]
        named += [("no-caller-code check", n, sem.NO_CALLER_CODE[n]) for n in row.effects if n in sem.NO_CALLER_CODE]
        if row.to_by is not None:
            named.append(("target rule", row.to_by, sem.TARGETS[row.to_by]))
        if result is not None and result.kind == "return":
            named.append(("result", result.name, sem.RESULTS[result.name]))
        if result is not None and result.observed is not None:
            named.append(("observed kind", result.observed, sem.OBSERVED[result.observed]))
        needs = [(what, name, _accepts(impl)) for what, name, impl in named]
        if result is not None and result.kind == "reject":
            needs.append(("rejection", result.name, RejectContext))
            if result.call_id == "argument":
                needs.append(("rejection's call id", result.name, SettleContext))
        for what, name, wanted in needs:
            if not issubclass(given, wanted):
                raise TableError(
                    f"invalid transition table: transitions.{row.id}: {what} {name!r} reads a {wanted.__name__}, "
                    f"but operation {row.op!r} runs with a {given.__name__}",
                    code="table_invalid",
                )


def _check_bindings(
    table: Table,
    guards: Mapping[str, Guard],
    effects: Mapping[str, Effect],
    results: Mapping[str, Producer],
    observed: Mapping[str, Any],
    targets: Mapping[str, Any],
    texts: frozenset[str],
) -> None:
    pairs = (
        ("guard", set(table.guards), set(guards)),
        ("effect", set(table.effects), set(effects)),
        ("result", set(table.results), set(results)),
        ("observed kind", set(table.observed), set(observed)),
        ("target rule", {r.to_by for r in table.transitions if r.to_by is not None}, set(targets)),
    )
    for what, named, implemented in pairs:
        missing = sorted(named - implemented)
        if missing:
            raise TableError(
                f"invalid transition table: {what} {missing[0]!r} has no implementation", code="table_invalid"
            )
        unused = sorted(implemented - named)
        if unused:
            raise TableError(
                f"invalid transition table: implemented {what} {unused[0]!r} is not named by the table",
                code="table_invalid",
            )
    # A no-caller-code check is for an effect the table marks caller_code: the one kind of effect that may need it.
    for name in sorted(sem.NO_CALLER_CODE):
        effect = table.effects.get(name)
        if effect is None or not effect.caller_code:
            raise TableError(
                f"invalid transition table: implemented no-caller-code check {name!r} is not for an effect the "
                "table marks caller_code",
                code="table_invalid",
            )
    # Texts run the other way: the semantics read them and the table supplies them.
    unsupplied = sorted(texts - set(table.texts))
    if unsupplied:
        raise TableError(
            f"invalid transition table: texts.{unsupplied[0]}: missing (the semantics read it)", code="table_invalid"
        )
    unread = sorted(set(table.texts) - texts)
    if unread:
        raise TableError(f"invalid transition table: texts.{unread[0]}: nothing reads this text", code="table_invalid")


def implementations() -> dict[str, Mapping[str, Callable[..., Any]]]:
    """What the table's names are bound to, by kind: the semantics' maps (what the compiler inlines or calls)."""
    return {
        "guard": dict(sem.GUARDS),
        "effect": dict(sem.EFFECTS),
        "result": dict(sem.RESULTS),
        "observed": dict(sem.OBSERVED),
        "target": dict(sem.TARGETS),
        "no_caller_code": dict(sem.NO_CALLER_CODE),
    }


HELPERS: Final[Mapping[str, Any]] = {
    "reentry_error": reentry_error,
    "reject": record_rejection,
    "spec_error": spec_error,
    "draft_of": draft_of,
    "draft_from": draft_from,
    "install": install,
    "install_fields": install_fields,
    "ABSENT": ABSENT,
}
"""The mechanisms the generated code shares with the walk, by the name the generated code calls them."""

GENERATED_FROM: Final = (
    sem,
    context_module,
    run_module,
    inliner_module,
    compiler_module,
    module_form_module,
    specialize_module,
    table_facts_module,
    table_types_module,
)
"""The modules whose source the generated machine depends on, besides the table (their digest is its header's)."""


def checked_in_module() -> types.ModuleType | None:
    """``machine/generated.py`` if it was generated from the table and the sources present, else ``None``."""
    try:
        from tool_call_closure.machine import generated
    except ImportError:  # pragma: no cover - a source tree without it (before the first regeneration)
        return None
    try:
        digests = digest_sources(TABLE_TEXT, GENERATED_FROM)
    except (OSError, TypeError):  # pragma: no cover - sources not available (a frozen or compiled install)
        return None
    fresh = digests == (generated.TABLE_SHA256, generated.SOURCES_SHA256)
    return generated if fresh else None


MACHINE_SWITCH: Final = _compiled.SWITCH
"""The environment variable that chooses how the shipped machine runs: unset (or ``generated``) runs the compiled
build when it is present and fresh (:mod:`tool_call_closure._compiled`), else the checked-in generated module;
``compiled`` the compiled build (an error when it is missing or stale); ``pure`` the checked-in generated module in
Python; ``walk`` walks the table row by row (:meth:`Machine.walk`): breakpoints in the semantics fire."""

MACHINE_CHOICES: Final = ("generated", "compiled", "pure", "walk")


def _shipped_machine() -> Machine:
    how = os.environ.get(MACHINE_SWITCH, "generated")
    if how not in MACHINE_CHOICES:
        choices = ", ".join(MACHINE_CHOICES)
        raise TableError(f"{MACHINE_SWITCH} must be one of {choices}, got {how!r}", code="table_invalid")
    checked_in = checked_in_module()
    compiled = None
    if how in _compiled.RUNS_COMPILED and checked_in is not None:
        compiled, why = _compiled.load(context_module.Run)
        if compiled is None and how == "compiled":
            raise TableError(f"{MACHINE_SWITCH}=compiled: the compiled build is {why}", code="table_invalid")
    elif how == "compiled":
        raise TableError(
            f"{MACHINE_SWITCH}=compiled: machine/generated.py is stale, regenerate it", code="table_invalid"
        )
    return Machine(TABLE, checked_in, walk=how == "walk", compiled=compiled)


MACHINE: Final = _shipped_machine()
