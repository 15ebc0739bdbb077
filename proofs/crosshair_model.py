"""The abstract state space the CrossHair step contracts explore, and its concretization.

Theory of operation
-------------------
CrossHair explores only values it can build.  A :class:`~tool_call_closure.ToolCallClosure`
built through its own ``__init__`` is always *fresh* (no generation yet), so a contract over
the closure itself would only ever see that one state.  Instead the contracts in
``contracts.py`` take an :class:`AbstractState` — a small record of finite-domain fields
(generation number, run state, one :class:`Call` per announced call, number of diagnostics)
— and an :class:`Operation`, both made by factories that ``crosshair_plugin.py`` registers
with ``crosshair.register_type``.  :meth:`AbstractState.reachable` says which abstract states
the public API can produce; every contract requires it (``pre:``).

:func:`build` turns an abstract state into a real closure **through the public API only**
(``begin``, ``settle``, ``close``, ``seal``, and rejected ``settle`` calls for diagnostics),
:func:`perform` runs one real operation on it, and :func:`view` reads the result back through
``snapshot()`` and ``active_generation``; :func:`step` does all three and checks that the
public API really produced the state asked for.  So every state a contract sees is one a
caller can produce, and every check runs the shipped interpreter over the shipped table.
(Only :func:`guard_values` reaches inside: it evaluates the table's guard functions on an
operation context, which is what a guard *is*.)

:func:`abstract` maps a :class:`View` back to an :class:`AbstractState`; a contract that
requires the *after* state to be reachable again checks that the reachable set is closed
under every operation (an inductive step).

The domains are deliberately small (``MAX_GENERATION``, ``MAX_CALLS``, ``MAX_DIAGNOSTICS``):
the properties do not depend on the numbers, and small domains let CrossHair cover more
combinations of run state, call states, handle and outcome within its time budget.
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from tool_call_closure import (
    BatchHandle,
    CallSnapshot,
    Diagnostic,
    Rejection,
    Snapshot,
    ToolCallClosure,
    ToolCallClosureError,
    TurnToken,
)
from tool_call_closure.machine.context import BeginContext, ExportContext, SettleContext
from tool_call_closure.machine.semantics import GUARDS

__all__ = [
    "CLOSED_RUNS",
    "MAX_CALLS",
    "MAX_DIAGNOSTICS",
    "MAX_GENERATION",
    "AbstractState",
    "Call",
    "HandleKind",
    "OpKind",
    "Operation",
    "RunState",
    "Status",
    "Step",
    "View",
    "abstract",
    "build",
    "call_id",
    "guard_values",
    "operations",
    "perform",
    "reachable_states",
    "step",
    "view",
]

MAX_GENERATION: Final = 3
MAX_CALLS: Final = 3
MAX_DIAGNOSTICS: Final = 2  # the closure under test is built with max_diagnostics=2 (I8 is then reachable)


class _Named(enum.Enum):
    """An enum whose repr is the expression that names it (counterexamples can be pasted back)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class RunState(_Named):
    """The run state of the current generation (``none`` before the first ``begin``)."""

    NONE = "none"
    OPEN = "open"
    COMPLETE = "complete"
    ERROR = "error"
    CANCELLED = "cancelled"


CLOSED_RUNS: Final = frozenset({"complete", "error", "cancelled"})


class Call(_Named):
    """A call of the current generation: its state and, when terminal, how it got there."""

    PENDING = "pending"
    REPORTED_SUCCESS = "reported success"
    REPORTED_ERROR = "reported error"
    REPORTED_CANCELLED = "reported cancelled"
    SYNTHETIC_ERROR = "synthetic error"
    SYNTHETIC_CANCELLED = "synthetic cancelled"

    @property
    def state(self) -> str:
        return self.value.rpartition(" ")[2]

    @property
    def synthetic(self) -> bool:
        return self.value.startswith("synthetic")


class OpKind(_Named):
    """The one public operation a step runs."""

    BEGIN = "begin"
    TURN_BEGIN = "begin with a turn token"  # deviation D20: the handle kind chooses the token (see _turn)
    SETTLE = "settle"
    SUCCEED = "succeed"
    FAIL = "fail"
    CANCEL = "cancel"
    CLOSE = "close"
    SEAL = "seal"
    SNAPSHOT = "snapshot"
    EXPORT = "export"


HANDLE_OPS: Final = frozenset({OpKind.SETTLE, OpKind.SUCCEED, OpKind.FAIL, OpKind.CANCEL, OpKind.CLOSE, OpKind.SEAL})
SETTLE_OPS: Final = frozenset({OpKind.SETTLE, OpKind.SUCCEED, OpKind.FAIL, OpKind.CANCEL})


class HandleKind(_Named):
    """Which handle an operation passes."""

    CURRENT = "current"  # the handle the latest begin returned
    STALE = "stale"  # the handle of an older generation (needs generation >= 2)
    LOOKALIKE = "lookalike"  # BatchHandle(generation=<current>) made by the caller: same number, other object
    MISSING = "missing"  # None


class Status(_Named):
    """The outcome (or close reason) status an operation passes; INVALID and ABSENT make it raise when admitted."""

    SUCCESS = "success"
    ERROR = "error"
    CANCELLED = "cancelled"
    INVALID = "invalid"
    ABSENT = "absent"


@dataclass(frozen=True)
class AbstractState:
    """An abstract closure state: the current generation as the public API shows it.

    Any combination of field values can be *made* (the plugin's factory makes arbitrary ones);
    :meth:`reachable` says which of them the public API can produce, and every contract
    filters its inputs with ``pre: state.reachable()``.  (A class ``inv:`` would not do:
    CrossHair enforces invariants only on instances it builds through ``__init__``, not on
    those a ``register_type`` factory returns — measured with 0.0.113.)
    """

    generation: int
    run: RunState
    calls: tuple[Call, ...]
    diagnostics: int

    def consistent(self) -> bool:
        """The structural rules of reachable states (whatever the bounds).

        * no generation ⇔ run state ``none``, and then no calls and no diagnostics
          (diagnostics made before the first begin are never visible);
        * an open generation has no synthetic settlements (only close and supersession make them);
        * a sealed (``complete``) generation has only reported, terminal calls (SEAL-3);
        * a generation closed as ``error``/``cancelled`` has no pending call (I5), and its
          synthetic settlements carry the close status.
        """
        calls = self.calls
        if (self.generation == 0) != (self.run is RunState.NONE):
            return False
        if self.generation == 0:
            return calls == () and self.diagnostics == 0
        if self.run is RunState.OPEN:
            return not any(c.synthetic for c in calls)
        if self.run is RunState.COMPLETE:
            return all(c is not Call.PENDING and not c.synthetic for c in calls)
        return all(c is not Call.PENDING and (not c.synthetic or c.state == self.run.value) for c in calls)

    def in_bounds(self) -> bool:
        """The small domains the contracts explore."""
        return (
            0 <= self.generation <= MAX_GENERATION
            and len(self.calls) <= MAX_CALLS
            and 0 <= self.diagnostics <= MAX_DIAGNOSTICS
        )

    def reachable(self) -> bool:
        """Can :func:`build` produce this state? (consistent and in bounds)."""
        return self.in_bounds() and self.consistent()

    def __repr__(self) -> str:
        return (
            f"AbstractState(generation={self.generation}, run={self.run!r}, calls={self.calls!r}, "
            f"diagnostics={self.diagnostics})"
        )


@dataclass(frozen=True)
class Operation:
    """One operation: its kind, the handle it passes, the call it names and the status it claims.

    ``call`` is an index into the current generation's calls: ``>= len(calls)`` names an
    unknown id, ``-1`` a blank id (which raises).  For ``begin`` it is the number of calls to
    announce, and a status of INVALID or ABSENT makes the list invalid (a duplicate id).
    """

    kind: OpKind
    handle: HandleKind
    call: int
    status: Status

    def applicable(self, state: AbstractState) -> bool:
        """Can this operation be formed in ``state``? (A current handle needs a generation, a stale one two.)"""
        if not -1 <= self.call <= MAX_CALLS:
            return False
        if self.handle is HandleKind.CURRENT:
            return state.generation >= 1
        if self.handle is HandleKind.STALE:
            return state.generation >= 2
        return True

    def __repr__(self) -> str:
        return f"Operation(kind={self.kind!r}, handle={self.handle!r}, call={self.call}, status={self.status!r})"


@dataclass(frozen=True)
class View:
    """A closure as its public API shows it: the state before or after a step."""

    generation: int
    run: str
    calls: tuple[CallSnapshot, ...]
    diagnostics: tuple[Diagnostic, ...]

    def core(self) -> tuple[int, str, tuple[CallSnapshot, ...]]:
        """Everything but the diagnostics: the generation counter, the run state and every call record."""
        return (self.generation, self.run, self.calls)


@dataclass(frozen=True)
class Step:
    """What one step did: the views before and after, and how the operation ended.

    ``outcome`` is ``raised:<error code>``, ``rejected:<reason>``, ``accepted:<call id>``,
    ``begin``, ``snapshot`` (close/seal/snapshot returned a snapshot), ``none`` or ``payload``.
    ``old_calls`` are the calls of the generation current *before* the step, as they are
    *after* it (from ``superseded`` when a begin closed it).
    """

    before: View
    after: View
    outcome: str
    old_calls: tuple[CallSnapshot, ...]

    def __repr__(self) -> str:
        return f"Step(outcome={self.outcome!r}, after={abstract(self.after)!r})"


def reachable_states() -> Iterator[AbstractState]:
    """Every reachable abstract state within the bounds (for the exhaustive sweep; CrossHair uses the factory)."""
    for count in range(MAX_CALLS + 1):
        for calls in itertools.product(Call, repeat=count):
            for generation in range(MAX_GENERATION + 1):
                for run in RunState:
                    for diagnostics in range(MAX_DIAGNOSTICS + 1):
                        state = AbstractState(generation, run, calls, diagnostics)
                        if state.reachable():
                            yield state


def operations() -> Iterator[Operation]:
    """Every operation the factory can make (whether it applies to a state is :meth:`Operation.applicable`)."""
    for kind in OpKind:
        for handle in HandleKind:
            for index in range(-1, MAX_CALLS + 1):
                for status in Status:
                    yield Operation(kind, handle, index, status)


def call_id(index: int) -> str:
    """The id of the ``index``-th announced call; ``-1`` gives a blank id."""
    return "  " if index < 0 else f"c{index}"


_OUTCOME: Final[dict[Call, dict[str, Any]]] = {
    Call.REPORTED_SUCCESS: {"status": "success", "content": {"ok": True}},
    Call.REPORTED_ERROR: {"status": "error", "code": "E_TOOL", "message": "tool failed"},
    Call.REPORTED_CANCELLED: {"status": "cancelled", "message": "stopped"},
}


def build(state: AbstractState) -> tuple[ToolCallClosure, list[BatchHandle]]:
    """A real closure in ``state``, made through the public API; also every handle begin returned."""
    closure = ToolCallClosure(max_diagnostics=MAX_DIAGNOSTICS)
    handles: list[BatchHandle] = []
    for generation in range(1, state.generation + 1):
        calls = (
            [{"id": call_id(i), "name": "tool"} for i in range(len(state.calls))]
            if generation == state.generation
            else []
        )
        handles.append(closure.begin(calls).handle)
    if not handles:
        return closure, handles
    handle = handles[-1]
    for index, call in enumerate(state.calls):
        if call in _OUTCOME:
            closure.settle(handle, call_id(index), _OUTCOME[call])
    if state.run is RunState.COMPLETE:
        closure.seal(handle)
    elif state.run in (RunState.ERROR, RunState.CANCELLED):
        closure.close(handle, {"status": state.run.value, "code": "E_CLOSE"})
    for _ in range(state.diagnostics):
        closure.settle(handle, "never-announced", {"status": "success"})  # unknown_call or run_closed
    return closure, handles


def view(closure: ToolCallClosure) -> View:
    """The public state of ``closure``."""
    generation = closure.active_generation
    snap = closure.snapshot()
    if snap is None:
        return View(0 if generation is None else generation, "none", (), ())
    run = "open" if snap.close_reason is None else snap.close_reason.status
    return View(generation if generation is not None else -1, run, snap.calls, snap.diagnostics)


def abstract(v: View) -> AbstractState:
    """The abstract state of a view (the inverse of :func:`build` on reachable states)."""
    calls = []
    for c in v.calls:
        if c.settlement is None:
            calls.append(Call.PENDING)
        else:
            calls.append(Call(f"{c.settlement.provenance} {c.state}"))
    return AbstractState(v.generation, RunState(v.run), tuple(calls), len(v.diagnostics))


def _handle(closure: ToolCallClosure, handles: list[BatchHandle], kind: HandleKind) -> BatchHandle | None:
    if kind is HandleKind.CURRENT:
        return handles[-1]
    if kind is HandleKind.STALE:
        return handles[0]
    if kind is HandleKind.LOOKALIKE:
        return BatchHandle(closure.active_generation or 1)
    return None


def _turn(closure: ToolCallClosure, kind: HandleKind) -> TurnToken | None:
    """A turn token by kind: CURRENT the counter's (it commits), STALE an older generation's, LOOKALIKE one this
    instance has not reached (both stale), MISSING none at all (a plain begin)."""
    generation = closure.active_generation or 0
    if kind is HandleKind.CURRENT:
        return TurnToken(generation)
    if kind is HandleKind.STALE:
        return TurnToken(generation - 1)
    if kind is HandleKind.LOOKALIKE:
        return TurnToken(generation + 1)
    return None


def _outcome(status: Status) -> dict[str, Any]:
    if status is Status.SUCCESS:
        return {"status": "success", "content": ["done", 1]}
    if status is Status.ERROR:
        return {"status": "error", "code": "E_LATE", "message": "late failure"}
    if status is Status.CANCELLED:
        return {"status": "cancelled"}
    if status is Status.INVALID:
        return {"status": "finished"}
    return {"content": "no status"}


def _close_reason(status: Status) -> dict[str, Any] | None:
    if status in (Status.ERROR, Status.CANCELLED):
        return {"status": status.value, "message": "closing"}
    if status is Status.INVALID:
        return {"status": "success"}  # close_status_invalid
    return None  # the default reason


def _run(closure: ToolCallClosure, handles: list[BatchHandle], op: Operation) -> Any:
    kind = op.kind
    handle = _handle(closure, handles, op.handle)
    cid = call_id(op.call)
    valid = op.status not in (Status.INVALID, Status.ABSENT)
    if kind in (OpKind.BEGIN, OpKind.TURN_BEGIN):
        count = max(op.call, 0)
        calls = [{"id": call_id(i), "name": "next"} for i in range(count)]
        if not valid:
            calls.append({"id": call_id(0), "name": "duplicate"})
        if kind is OpKind.TURN_BEGIN:
            return closure.begin(calls, turn=_turn(closure, op.handle))
        return closure.begin(calls)
    if kind is OpKind.SETTLE:
        return closure.settle(handle, cid, _outcome(op.status))
    if kind is OpKind.SUCCEED:
        return closure.succeed(handle, cid, {"n": 1} if valid else {1, 2})  # a set is not serializable
    if kind is OpKind.FAIL:
        return closure.fail(handle, cid, "boom", None if valid else " ")  # a blank code raises
    if kind is OpKind.CANCEL:
        return closure.cancel(handle, cid, "stop", None if valid else "")
    if kind is OpKind.CLOSE:
        return closure.close(handle, _close_reason(op.status))
    if kind is OpKind.SEAL:
        return closure.seal(handle)
    if kind is OpKind.SNAPSHOT:
        return closure.snapshot()
    return closure.to_openai_chat_completions()


def perform(closure: ToolCallClosure, handles: list[BatchHandle], op: Operation) -> tuple[str, Any]:
    """Run ``op``; return ``(outcome, result)`` (see :class:`Step`). Only the closure's own errors are caught."""
    try:
        result = _run(closure, handles, op)
    except ToolCallClosureError as exc:
        return f"raised:{exc.code}", None
    if isinstance(result, Rejection):
        return f"rejected:{result.reason}", result
    if op.kind in SETTLE_OPS:
        return f"accepted:{result.call_id}", result
    if op.kind in (OpKind.BEGIN, OpKind.TURN_BEGIN):
        return "begin", result
    if isinstance(result, Snapshot):
        return "snapshot", result
    if result is None:
        return "none", result
    return "payload", result


def step(state: AbstractState, op: Operation) -> Step:
    """Build ``state``, run ``op`` once through the public API, and report both views."""
    closure, handles = build(state)
    before = view(closure)
    if abstract(before) != state:
        # The public API did not produce the state it was driven to: the model or the reference is wrong.
        raise AssertionError(f"build({state!r}) produced {abstract(before)!r}")
    outcome, result = perform(closure, handles, op)
    after = view(closure)
    if after.generation == before.generation:
        old_calls = after.calls
    elif outcome == "begin" and result.superseded is not None:
        old_calls = result.superseded.calls
    else:
        old_calls = before.calls  # a closed generation a begin left behind: nothing can reach it any more
    return Step(before, after, outcome, old_calls)


def guard_values(state: AbstractState, op: Operation) -> dict[str, bool]:
    """Evaluate the table's guards, as the interpreter binds them, for ``op``'s handle and call id in ``state``.

    The guards are pure reads of an operation's context; this builds the context a ``settle``
    would have after its prepare phase (a begin's and an export's for their guards).  Only
    ``handle_not_current`` is asked before the first begin (the table asks the others only
    while a generation exists), and ``call_not_pending`` only for a known call.
    """
    closure, handles = build(state)
    ctx = SettleContext(closure, "settle", _handle(closure, handles, op.handle), call_id(op.call))
    begin_ctx = BeginContext(closure, "begin", [])
    begin_ctx.start_generation = state.generation  # what begin records before its unlocked phase
    values = {"handle_not_current": GUARDS["handle_not_current"](ctx)}
    # turn_stale (D20) with a token of the counter, of another generation, and with none; asked in every state.
    for name, turn in (("turn_stale", state.generation), ("turn_stale_other", state.generation + 1), ("no_turn", None)):
        begin_ctx.turn_generation = turn
        values[name] = GUARDS["turn_stale"](begin_ctx)
    begin_ctx.turn_generation = None
    if state.generation == 0:
        return values
    values["call_unknown"] = GUARDS["call_unknown"](ctx)
    if not values["call_unknown"]:
        values["call_not_pending"] = GUARDS["call_not_pending"](ctx)
    values["has_pending_calls"] = GUARDS["has_pending_calls"](ctx)
    values["generation_changed"] = GUARDS["generation_changed"](begin_ctx)
    snap = closure.snapshot()
    if snap is None:
        raise AssertionError("a closure with a generation has a snapshot")
    method = "to_openai_chat_completions"
    export_ctx = ExportContext(closure, method, snap, closure._exporters[method])
    values["snapshot_foreign"] = GUARDS["snapshot_foreign"](export_ctx)
    values["snapshot_open"] = GUARDS["snapshot_open"](export_ctx)
    export_ctx.snapshot_arg = dataclasses.replace(snap)  # an equal copy: not one this instance produced
    values["copy_foreign"] = GUARDS["snapshot_foreign"](export_ctx)
    return values
