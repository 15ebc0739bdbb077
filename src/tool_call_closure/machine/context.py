"""What an operation works on: the instance it runs against, and its own typed context.

Theory of operation
-------------------
The interpreter runs one operation at a time against one *instance* (a
:class:`~tool_call_closure.ToolCallClosure`).  It reads the instance only
through :class:`Instance`, a protocol that names exactly the members the
machine uses, so this layer never imports the public class above it.

Each operation gets a fresh, small context object that holds its arguments and
what its phases compute.  There is one context class per operation shape, and
each guard, effect, result, observed kind and target rule of
:mod:`.semantics` declares the context class it reads in its signature.  When
the table is compiled the interpreter checks that every name a row uses
accepts the context of that row's operation (:data:`OPERATION_CONTEXTS`), so a
table that asks ``close`` for a call id fails to compile instead of failing at
run time.

::

    Context                      closure, method
    ├── ReadContext              snapshot, active_generation, turn_token
    ├── ExportContext            export: snapshot argument, renderer, payload
    └── RejectContext            the generation a rejection reports (an operation with reject rows)
        ├── BeginContext         begin: calls, turn token, validated calls, start generation, superseded records
        └── HandleContext        handle
            ├── SettleContext    settle/succeed/fail/cancel: call id, outcome parts, preview, settlement
            ├── CloseContext     close: reason argument, normalized close reason
            └── SealContext      seal

:class:`Run` is the record of the current generation and the whole committed
state of the instance (the generation counter and the diagnostics are read
from it).  It never leaves the instance; everything handed out is a frozen
value of :mod:`tool_call_closure.values`.

Commit as one step (invariant I9).  A commit never writes the installed
state field by field.  Its effects write a *draft* (:func:`draft_of`, or a
new ``Run`` for a new generation, in ``ctx.draft``) or stage the one call
record a settlement replaces (``ctx.staged_call``); the interpreter builds
the result from the draft, then :func:`install` puts everything in place
with one assignment.  A rejection's one write is :func:`install_diagnostic`.
An exception that lands before the install changes nothing.

Exports read :class:`SnapshotRecord`, the instance's own record of a
snapshot it handed out, never the object handed out.  A superseded
generation's snapshot is registered when it is first read
(:func:`registered_snapshot`, from records frozen at the commit).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final, Protocol

from tool_call_closure import _compiled
from tool_call_closure.absent import ABSENT
from tool_call_closure.errors import spec_error
from tool_call_closure.machine.run import Run
from tool_call_closure.values import (
    CALL_STATE,
    CallRecord,
    CloseReasonRecord,
    DiagnosticRecord,
    Limits,
    Rejection,
    SettlementRecord,
    Snapshot,
    SnapshotSource,
    new_rejection,
    snapshot_view,
)

__all__ = [
    "OPERATION_CONTEXTS",
    "BeginContext",
    "CloseContext",
    "Context",
    "ExportContext",
    "HandleContext",
    "Instance",
    "MachineView",
    "OwnedLock",
    "ReadContext",
    "RejectContext",
    "Renderer",
    "Run",
    "SealContext",
    "SettleContext",
    "SnapshotRecord",
    "draft_from",
    "draft_of",
    "install",
    "install_diagnostic",
    "install_fields",
    "record_rejection",
    "reentry_error",
    "registered_snapshot",
    "superseded_snapshot",
]

if not TYPE_CHECKING:
    # One Run class per process: the compiled one exactly when the compiled machine runs (its code accepts no
    # other), else this package's own (tool_call_closure._compiled.run_class).
    Run = _compiled.run_class(Run)

Renderer = Callable[[Sequence[CallRecord], dict[str, Any]], list[dict[str, Any]]]
"""A provider format: a closed snapshot's call records and the renderers' memo for it to its payload (bound by the
public class; the memo is kept with the snapshot's record, for all its exports)."""


class SnapshotRecord(weakref.ref):  # type: ignore[type-arg]
    """The instance's own, never handed out, record of one snapshot it produced.

    A weak reference to the handed-out *view* (``record()`` is the view, or
    ``None`` once it is gone), carrying what exports read: ``closed`` and
    ``calls``, the call records of the snapshot (plain tuples nobody can
    change).  Nothing a caller does to the view or anything inside it — not
    even ``object.__setattr__`` — reaches what exports render, and exports
    never read an object the caller holds.  When the view dies, the record
    removes itself from ``records`` (the instance's ``_records``), so records
    live exactly as long as views.
    """

    __slots__ = ("calls", "closed", "key", "memo", "records")

    def __new__(
        cls, view: Snapshot, closed: bool, calls: tuple[CallRecord, ...], records: dict[int, SnapshotRecord]
    ) -> SnapshotRecord:
        return super().__new__(cls, view, _forget_record)

    def __init__(
        self, view: Snapshot, closed: bool, calls: tuple[CallRecord, ...], records: dict[int, SnapshotRecord]
    ) -> None:
        self.closed = closed  # (the reference itself was made by __new__)
        self.calls = calls
        self.memo: dict[str, Any] = {}  # the renderers' memo for all exports of this snapshot (ADP-5)
        self.key = id(view)
        self.records = records


def registered_snapshot(
    records: dict[int, SnapshotRecord],
    generation: int,
    closed: bool,
    close_reason: CloseReasonRecord | None,
    calls: tuple[CallRecord, ...],
    diagnostics: tuple[DiagnosticRecord, ...],
) -> Snapshot:
    """``take_snapshot``'s view and registration (semantics.py), of records frozen at a commit.

    Called on the first read of ``BeginResult.superseded``, outside the
    instance's lock: it reads nothing but its arguments, and the registration
    is one dictionary item (as the registry's weak-reference callbacks are).
    """
    view = snapshot_view(generation, closed, close_reason, calls, diagnostics)
    records[id(view)] = SnapshotRecord(view, closed, calls, records)  # SNAP-5, as take_snapshot registers
    return view


def superseded_snapshot(
    records: dict[int, SnapshotRecord],
    generation: int,
    closed: bool,
    reason: CloseReasonRecord,
    pending: str,
    target: str | None,
    calls: tuple[CallRecord, ...],
    diagnostics: tuple[DiagnosticRecord, ...],
) -> Snapshot:
    """:func:`registered_snapshot` of a generation ``begin`` superseded (``semantics.supersede``), built on first read.

    Its calls as frozen at the commit, every ``pending`` one moved to ``target`` with one shared synthetic
    settlement of ``reason``: the records a close of that generation writes, as a draft would have held them.
    """
    if target is not None:
        status, code, message, side_effect_state = reason
        settlement: SettlementRecord = (status, "synthetic", None, code, message, side_effect_state)  # one, shared
        calls = tuple((call[0], call[1], target, settlement) if call[CALL_STATE] == pending else call for call in calls)
    return registered_snapshot(records, generation, closed, reason, calls, diagnostics)


def _forget_record(record: SnapshotRecord) -> None:
    """The view of ``record`` is gone: drop the record (unless its key already names a newer one)."""
    records = record.records
    if records.get(record.key) is record:
        del records[record.key]


class OwnedLock(Protocol):
    """The instance's lock: a ``threading.RLock``, for its ``_is_owned()`` (the calling thread holds it)."""

    def __enter__(self) -> bool: ...
    def __exit__(self, *exc_info: object) -> None: ...
    def _is_owned(self) -> bool: ...
    def acquire(self) -> bool: ...  # (the compiled build's copy of a ``with lock:``, machine.build_compiled)
    def release(self) -> None: ...


class MachineView(Protocol):
    """What the semantics read of the compiled machine (:class:`.interpreter.Machine` provides it)."""

    @property
    def closed(self) -> frozenset[str]: ...
    @property
    def initial_call_state(self) -> str: ...
    @property
    def effect_run_to(self) -> Mapping[str, str]: ...
    @property
    def texts(self) -> Mapping[str, str]: ...

    @property
    def call_events(self) -> Mapping[str, Mapping[str, str]]: ...  # effect -> {call status -> call event}
    @property
    def effect_call_next(self) -> Mapping[str, dict[tuple[str, str], str]]: ...  # effect -> {(state, status) -> to}
    def apply_call_event(self, call: CallRecord, event: str, settlement: SettlementRecord) -> CallRecord: ...


class Instance(Protocol):
    """The members of an instance that the interpreter and the semantics read and write.

    ``_run`` is the whole committed state of the instance: the generation
    counter (``_generation``) and the current diagnostics (``_diagnostics``)
    are read from it, so installing a new ``Run`` is one assignment.
    ``_lock`` is a ``threading.RLock`` only so that ``_lock._is_owned()``
    tells whether the calling thread holds it (reentry is refused, never
    allowed: the machine checks before every acquisition).
    """

    _lock: OwnedLock
    _run: Run | None
    _records: dict[int, SnapshotRecord]  # id(view) -> its record: the snapshots this instance produced
    _trace: list[str] | None
    _superseded_message: str

    @property
    def _generation(self) -> int: ...
    @property
    def _diagnostics(self) -> list[DiagnosticRecord]: ...
    @property
    def _limits(self) -> Limits: ...
    @property
    def _machine(self) -> MachineView: ...

    def snapshot(self) -> Snapshot | None: ...


class Context:
    """The part every operation has: the instance, the name of the method called, and what its commit builds.

    ``draft`` is the new :class:`Run` a commit builds aside and ``staged_call``
    the one ``(position, call record)`` a settlement writes; :func:`install`
    puts either in place with one assignment, after the result is built.

    Every slot is either an *input* — a parameter of ``__init__``, given by
    the caller (after ``closure`` and ``method``) — or a *working* field, one
    of ``WORKING``: what the phases compute, starting from the value its
    expression gives (``closure`` in scope).  The compiled operations keep the
    fields as local variables, with the inputs as their parameters, in this
    order and with these defaults (:mod:`.compiler`), and build a context only
    for code that needs the object; the walk builds one per operation.

    Each subclass sets every slot, its bases' included, in its own
    ``__init__`` instead of calling ``super().__init__`` (one call is cheaper
    than a chain); ``tests/test_compiler.py`` holds ``__init__`` to ``WORKING``.
    """

    __slots__ = ("closure", "draft", "method", "staged_call")
    WORKING: ClassVar[Mapping[str, str]] = {"draft": "None", "staged_call": "None"}

    def __init__(self, closure: Instance, method: str) -> None:
        self.closure = closure
        self.method = method
        self.draft: Run | None = None
        self.staged_call: tuple[int, CallRecord] | None = None


class ReadContext(Context):
    """``snapshot``, ``active_generation`` and ``turn_token``: nothing but the instance."""

    __slots__ = ()


class RejectContext(Context):
    """An operation that may reject (its table rows may have a ``reject`` result): the generation it reports.

    ``reject_generation`` is the ``generation`` of the rejection and its
    diagnostic: the handle's generation for settle, close and seal (SET-2), the
    turn token's for begin (deviation D20); a safe integer > 0, or ``None``.
    """

    __slots__ = ("reject_generation",)
    WORKING: ClassVar[Mapping[str, str]] = {**Context.WORKING, "reject_generation": "None"}

    def __init__(self, closure: Instance, method: str) -> None:
        self.closure = closure
        self.method = method
        self.draft = None
        self.staged_call = None
        self.reject_generation: int | None = None


class BeginContext(RejectContext):
    """``begin``: the call list as given, the turn token (if any), the validated calls (as pending records, and
    their index), the superseded snapshot's source (its records, frozen at the commit: see ``BeginResult``).

    ``turn`` is the argument as given (``None``: no turn guard); ``turn_generation``
    is the generation of a valid token, which the recheck compares with the
    counter (``None``: no guard), set by ``validate_turn`` (deviation D20).
    """

    __slots__ = ("calls_arg", "index", "start_generation", "superseded", "turn", "turn_generation", "validated")
    WORKING: ClassVar[Mapping[str, str]] = {
        **RejectContext.WORKING,
        # BEG-5: a nested begin changes it (the counter, read from the run: closure._generation without its call)
        "start_generation": "0 if closure._run is None else closure._run.generation",
        "turn_generation": "None",
        "validated": "[]",
        "index": "{}",
        "superseded": "None",
    }

    def __init__(self, closure: Instance, method: str, calls_arg: object, turn: object = None) -> None:
        self.closure = closure
        self.method = method
        self.draft = None
        self.staged_call = None
        self.reject_generation = None
        self.calls_arg = calls_arg
        self.turn = turn
        self.start_generation = closure._generation  # BEG-5: a nested begin changes it
        self.turn_generation: int | None = None
        self.validated: list[CallRecord] = []
        self.index: dict[str, int] = {}
        self.superseded: SnapshotSource | None = None  # the superseded snapshot, frozen; built on first read


class HandleContext(RejectContext):
    """Operations on a handle (settle, close, seal): the handle (whose generation a rejection reports)."""

    __slots__ = ("handle",)

    def __init__(self, closure: Instance, method: str, handle: object) -> None:
        self.closure = closure
        self.method = method
        self.draft = None
        self.staged_call = None
        self.handle = handle
        self.reject_generation = None


class SettleContext(HandleContext):
    """``settle`` and its convenience forms.

    ``fixed_status`` is the status a convenience form implies (``None`` for
    ``settle``, whose status comes from ``outcome``); ``content``, ``message``
    and ``code`` are the convenience forms' arguments; ``default_code`` is the
    code ``fail``/``cancel`` use when none is given.
    """

    __slots__ = (
        "call_id",
        "code",
        "content",
        "default_code",
        "fixed_status",
        "message",
        "message_is_error",
        "outcome",
        "preview",
        "settlement",
    )
    WORKING: ClassVar[Mapping[str, str]] = {**HandleContext.WORKING, "preview": "None", "settlement": "None"}

    def __init__(
        self,
        closure: Instance,
        method: str,
        handle: object,
        call_id: Any,
        outcome: Any = ABSENT,
        fixed_status: str | None = None,
        content: Any = ABSENT,
        message: Any = ABSENT,
        message_is_error: bool = False,
        code: Any = ABSENT,
        default_code: str = "",
    ) -> None:
        self.closure = closure
        self.method = method
        self.draft = None
        self.staged_call = None
        self.handle = handle
        self.reject_generation = None
        self.call_id: str = call_id  # validated (a plain str) by validate_call_id before anything reads it
        self.outcome: Any = outcome
        self.fixed_status: str | None = fixed_status
        self.content: Any = content
        self.message: Any = message
        self.message_is_error = message_is_error
        self.code: Any = code
        self.default_code = default_code
        self.preview: str | None = None
        self.settlement: SettlementRecord | None = None


class CloseContext(HandleContext):
    """``close``: the reason as given and its normalized form."""

    __slots__ = ("close_reason", "reason")
    WORKING: ClassVar[Mapping[str, str]] = {**HandleContext.WORKING, "close_reason": "None"}

    def __init__(self, closure: Instance, method: str, handle: object, reason: object) -> None:
        self.closure = closure
        self.method = method
        self.draft = None
        self.staged_call = None
        self.handle = handle
        self.reject_generation = None
        self.reason = reason
        self.close_reason: CloseReasonRecord | None = None


class SealContext(HandleContext):
    """``seal``: nothing beyond the handle."""

    __slots__ = ()


class ExportContext(Context):
    """An export: the snapshot argument, the renderer of the method's format, the rendered payload."""

    __slots__ = ("payload", "renderer", "snapshot_arg")
    WORKING: ClassVar[Mapping[str, str]] = {**Context.WORKING, "payload": "[]"}

    def __init__(self, closure: Instance, method: str, snapshot_arg: object, renderer: Renderer) -> None:
        self.closure = closure
        self.method = method
        self.draft = None
        self.staged_call = None
        self.snapshot_arg = snapshot_arg
        self.renderer = renderer
        self.payload: list[dict[str, Any]] = []


def draft_of(ctx: Context) -> Run:
    """The run this commit builds aside: a draft of the installed run, made on first use."""
    draft = ctx.draft
    if draft is None:
        draft = ctx.draft = draft_from(ctx.closure)
    return draft


def install(ctx: Context) -> None:
    """:func:`install_fields` of a context's draft and staged call."""
    install_fields(ctx.closure, ctx.draft, ctx.staged_call)


def install_fields(closure: Instance, draft: Run | None, staged_call: tuple[int, CallRecord] | None) -> None:
    """The one step at which a commit takes effect: a single assignment, after everything that can fail.

    A commit builds everything aside (the draft run, the settled call record,
    the result and its snapshot), then calls this.  An exception that lands
    before it — ``RecursionError``, ``MemoryError``, ``KeyboardInterrupt``,
    any asynchronous exception — leaves the instance exactly as it was and
    consumes no generation number; nothing that can raise runs after it.
    """
    if draft is not None:
        closure._run = draft  # a new generation, or this one closed: counter, calls, state, reason at once
        return
    if staged_call is not None:
        run = closure._run
        assert run is not None
        run.calls[staged_call[0]] = staged_call[1]  # a settlement: one call record replaced


def draft_from(closure: Instance) -> Run:
    """:func:`draft_of` for an operation that keeps its draft in a local (the compiled operations)."""
    run = closure._run
    assert run is not None, "the table only writes the run while a generation exists"
    return run.draft()


def install_diagnostic(closure: Instance, diagnostic: DiagnosticRecord) -> None:
    """A rejection's one write: its diagnostic appended, while there is room (DIAG-1); built before, nothing after."""
    diagnostics = closure._diagnostics
    if len(diagnostics) < closure._limits.max_diagnostics:
        diagnostics.append(diagnostic)


def record_rejection(
    closure: Instance, generation: int | None, reason: str, call_id: str | None, observed: str | None
) -> Rejection:
    """A rejection row's result: record the diagnostic (up to the limit) and return the :class:`Rejection`.

    ``generation`` is the operation's ``reject_generation``.  Shared by the walk and the compiled operations
    (the name ``reject`` in the generated code).
    """
    # Both values are built before the one write (the append), so an exception changes nothing.
    rejection = new_rejection(reason, call_id, generation, observed)
    install_diagnostic(closure, (reason, call_id, generation, observed))
    return rejection


def reentry_error(operation: str) -> Exception:
    """The error for an operation entered while its own thread already holds the instance's lock.

    Only a finalizer (``__del__``), a signal handler or a weakref callback
    can do that — they run wherever the interpreter happens to be, including
    inside a locked phase.  Waiting for the lock would deadlock the thread on
    itself; a clear ``UsageError`` (``reentrant_call``) is raised instead.
    The check asks the lock whether the *calling* thread owns it
    (``RLock._is_owned()``), so another thread holding the lock never
    triggers it: that thread's operation is simply waited for.
    """
    return spec_error("reentrant_call", operation=operation)


OPERATION_CONTEXTS: Final[Mapping[str, type[Context]]] = {
    "begin": BeginContext,
    "settle": SettleContext,
    "close": CloseContext,
    "seal": SealContext,
    "snapshot": ReadContext,
    "active_generation": ReadContext,
    "turn_token": ReadContext,
    "export": ExportContext,
}
"""The context class each operation of the table runs with (checked against the semantics' signatures)."""
