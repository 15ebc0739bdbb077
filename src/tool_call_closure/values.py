"""The frozen value types the closure returns.

Theory of operation
-------------------
Everything the closure hands out is immutable: handles, begin results,
settlement results, rejections, snapshots and everything inside a snapshot.
Immutability is what lets a snapshot share its call records with later
snapshots and with the live run without copying them: a call record is
replaced, never modified, when its call settles (invariant I3).

Each type has a *canonical JSON form*, the exact text the original's
``JSON.stringify`` gives for its value: camelCase keys, keys in the original's
order, and the variant-dependent key sets of settlements and close reasons.
``__json__`` returns that form as plain Python data; :func:`~tool_call_closure.closure.to_json`
turns it into text.

Records.  The instance keeps its own state as plain tuples — a
:data:`CallRecord` per call, a :data:`SettlementRecord` per outcome, a
:data:`DiagnosticRecord` per rejection and a :data:`CloseReasonRecord` — and
never hands them out: what a caller gets is a *view* built from them
(:func:`call_views`, :func:`snapshot_view` …).  A tuple of strings and
numbers cannot be changed by anyone, not even with ``object.__setattr__``,
so what an export renders (from the records) is what the instance recorded,
whatever is done to a view.  The views are built without the dataclass
``__init__`` (:func:`_builder`), which costs a field assignment each.  The
nested views of a :class:`Snapshot` (its calls and diagnostics) and of an
:class:`Accepted` (its settlement) are built when first read
(:func:`_deferring`): an export renders the records and never needs them.
So is a :class:`BeginResult`'s superseded snapshot (:func:`_deferred_field`),
from records frozen when ``begin`` committed: an agent loop that begins batch
after batch rarely reads it.

Two identity rules matter:

* a :class:`BatchHandle` is a capability: it compares equal only to itself
  (``eq=False``), and the closure accepts only the very object ``begin``
  returned, never a look-alike with the same generation number;
* a :class:`Snapshot` compares by value, but exports accept only the very
  objects this instance produced (an identity registry, ``ToolCallClosure._records``).

A :class:`TurnToken` is the opposite of a handle: plain data (a generation
number) that compares by value.  It grants nothing; ``begin`` only compares
its number with the generation counter (deviation D20).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, TypeAlias, TypeVar, cast, final

from tool_call_closure.errors import FrozenValueError
from tool_call_closure.parts import ToolContent

__all__ = [
    "ACCEPTED_TWIN",
    "CALL_SETTLEMENT",
    "CALL_STATE",
    "CODE",
    "COMPLETE",
    "COMPLETE_RECORD",
    "CONTENT",
    "MESSAGE",
    "PROVENANCE",
    "SIDE_EFFECT_STATE",
    "STATUS",
    "Accepted",
    "BatchHandle",
    "BeginResult",
    "CallRecord",
    "CallSnapshot",
    "CallState",
    "CloseReason",
    "CloseReasonRecord",
    "Diagnostic",
    "DiagnosticReason",
    "DiagnosticRecord",
    "Limits",
    "ObservedStatus",
    "Rejection",
    "RejectionReason",
    "Settlement",
    "SettlementRecord",
    "SettlementResult",
    "SideEffectState",
    "Snapshot",
    "SnapshotSource",
    "TurnToken",
    "call_records",
    "call_views",
    "close_reason_view",
    "diagnostic_views",
    "new_begin_result",
    "new_rejection",
    "settlement_record",
    "snapshot_view",
    "superseding_begin_result",
]

_T = TypeVar("_T", bound=type)


def _sealed(cls: _T) -> _T:
    """Make every attribute write raise FrozenInstanceError, not only writes of fields.

    A frozen, slotted dataclass refuses to assign its fields, but (CPython
    gh-105936) assigning any *other* name fails with an unrelated TypeError.
    The values promise FrozenInstanceError for every write: a
    :class:`~.errors.FrozenValueError`, which is one, under the library's root.
    """

    def refuse_assignment(self: object, name: str, value: object) -> None:
        raise FrozenValueError(f"cannot assign to field {name!r}")

    def refuse_deletion(self: object, name: str) -> None:
        raise FrozenValueError(f"cannot delete field {name!r}")

    cls.__setattr__ = refuse_assignment  # type: ignore[assignment]
    cls.__delattr__ = refuse_deletion  # type: ignore[assignment]
    return cls


class _Deferred:
    """The hidden slot of a view whose nested views are built when first read (see :func:`_deferring`).

    ``_deferred`` holds the records the nested views are built from, until
    they are built; then ``None``.  It is a slot of a base class, not a
    field: it takes no part in ``fields()``, equality, ``repr`` or ``replace``.
    """

    __slots__ = ("_deferred",)


class _DeferredReferable(_Deferred):
    """:class:`_Deferred` with a weak-reference slot, for a view the instance keeps a weak reference to.

    The slot sits in the base, not among the dataclass's own slots, so a view
    can still be built on a twin class and given its real class (CPython
    assigns ``__class__`` only between identical layouts, which a
    ``__weakref__`` after the fields rules out).
    """

    __slots__ = ("__weakref__",)


# Held while a deferred view's fields are built and set, so every reader of a view sees the same objects.
# Reentrant: a signal handler of the building thread may read another view (or this one, see below).
_BUILDING: Final = threading.RLock()


def _deferring(*names: str) -> Callable[[_T], _T]:
    """Build the fields ``names`` of a view on first read, from its ``_deferred`` records.

    A snapshot's call views, its diagnostics and an ``Accepted``'s settlement
    view are often never read (an agent loop passes the snapshot to an
    export, which renders the instance's records, not the view).  The view
    is handed out with those slots unset; the first read of one misses the
    slot and reaches ``__getattr__``, which builds every deferred field from
    the records with the class's ``_build_deferred`` and sets them, once.
    Nothing else changes: the fields are new objects of their own either way,
    built from immutable records, so building them later shows the same
    values.  ``__getattr__`` is set on the class after its definition, so
    type checkers still refuse a misspelt attribute.
    """

    def decorate(cls: _T) -> _T:
        deferred = frozenset(names)
        build: Callable[[Any], tuple[Any, ...]] = cls.__dict__["_build_deferred"]

        def read_deferred(self: Any, name: str) -> Any:  # __getattr__: reached only when the normal lookup failed
            if name in deferred and _deferred_source(self) is not None:
                with _BUILDING:
                    source = _deferred_source(self)
                    if source is not None:  # else another thread built them meanwhile
                        values = build(source)
                        # This thread may have built them meanwhile too (a signal handler reading the view).
                        if _deferred_source(self) is not None:
                            for field, value in zip(names, values, strict=True):
                                object.__setattr__(self, field, value)
                            object.__setattr__(self, "_deferred", None)
                return object.__getattribute__(self, name)
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self)

        cls.__getattr__ = read_deferred  # type: ignore[attr-defined]
        return cls

    return decorate


def _deferred_field(name: str) -> Callable[[_T], _T]:
    """Build the one field ``name`` of a view on first read, from its ``_deferred`` source, through a descriptor.

    :func:`_deferring` for a view whose other fields are read on every use
    (a :class:`BeginResult`'s ``handle``): a class with ``__getattr__`` makes
    *every* attribute read of its instances take the slow generic path
    (CPython cannot specialize the read), while this descriptor costs only
    reads of ``name``.  It wraps the slot's own descriptor: a set slot is
    returned as is; an unset one is built, once, under ``_BUILDING``, as
    :func:`_deferring` does.  ``fields()``, equality, ``repr``, ``replace``
    and pickling read the field like any other, and see the built value.
    """

    def decorate(cls: _T) -> _T:
        slot: Any = cls.__dict__[name]  # the member descriptor dataclass(slots=True) made for the field
        build: Callable[[Any], tuple[Any]] = cls.__dict__["_build_deferred"]

        class DeferredField:
            __slots__ = ()

            def __get__(self, view: object, owner: type | None = None) -> Any:
                if view is None:
                    return slot  # read on the class: the slot's descriptor, as without this wrapper
                try:
                    return slot.__get__(view, owner)
                except AttributeError:
                    pass
                with _BUILDING:
                    source = _deferred_source(view)
                    if source is not None:  # else another thread built it meanwhile (or the view has none)
                        (value,) = build(source)
                        # This thread may have built it meanwhile too (a signal handler reading the view).
                        if _deferred_source(view) is not None:
                            slot.__set__(view, value)
                            object.__setattr__(view, "_deferred", None)
                return slot.__get__(view, owner)  # raises the slot's own AttributeError for a view without one

            def __set__(self, view: object, value: object) -> None:
                slot.__set__(view, value)  # reached only through object.__setattr__: the class refuses writes

            def __delete__(self, view: object) -> None:
                slot.__delete__(view)

        DeferredField.__qualname__ = f"{cls.__qualname__}.{name}"
        setattr(cls, name, DeferredField())
        return cls

    return decorate


def _deferred_source(view: object) -> Any:
    """The records a view's deferred fields are built from; ``None`` once built (or for a view made otherwise)."""
    try:
        return object.__getattribute__(view, "_deferred")
    except AttributeError:  # a view built by its __init__ (every field given) or by object.__new__
        return None


CallState: TypeAlias = Literal["pending", "success", "error", "cancelled"]
SettledStatus: TypeAlias = Literal["success", "error", "cancelled"]
SideEffectState: TypeAlias = Literal["unknown", "not_started"]
RejectionReason: TypeAlias = Literal[
    "stale_generation", "run_closed", "unknown_call", "duplicate_settlement", "pending_calls", "stale_turn"
]
DiagnosticReason: TypeAlias = RejectionReason | Literal["media_moved"]  # media_moved: D26 (Diagnostic)
ObservedStatus: TypeAlias = Literal["success", "error", "cancelled", "invalid"] | None


@final
@_sealed
@dataclass(frozen=True, slots=True, eq=False, weakref_slot=True)
class BatchHandle:
    """The capability for one generation, returned by ``begin``.

    Keep it next to the work launched for that batch and pass it back to
    ``settle``/``close``/``seal``.  Only the object ``begin`` returned is
    accepted; constructing ``BatchHandle(generation=n)`` yourself makes a
    look-alike that is always answered ``stale_generation``.
    """

    generation: int

    def __json__(self) -> dict[str, Any]:
        return {"generation": self.generation}


@final
@_sealed
@dataclass(frozen=True, slots=True)
class TurnToken:
    """The generation that was current when a model turn was requested, returned by ``turn_token()``.

    Take it *before* requesting the model turn and pass it to
    ``begin(calls, turn=token)``: the turn's calls then begin only if no
    other ``begin`` happened in between (compare-and-set; otherwise a
    ``stale_turn`` rejection, and nothing changes).  Unlike a handle it is
    plain data, not a capability: it only names a generation number
    (0 before the first ``begin``), and equal tokens are interchangeable.
    """

    generation: int

    def __json__(self) -> dict[str, Any]:
        return {"generation": self.generation}


@final
@_sealed
@dataclass(frozen=True, slots=True)
class Settlement:
    """A call's terminal outcome.

    Three variants, told apart by ``status`` and ``provenance``:

    * reported success: ``content`` is the stored text, or the parts
      ``content()`` built (a :class:`~tool_call_closure.parts.ToolContent`,
      deviation D22); ``code``, ``message`` and ``side_effect_state`` are ``None``;
    * reported error/cancelled: ``code`` and ``message``; no ``content``;
    * synthetic error/cancelled (made by close or supersession): ``code``,
      ``message`` and ``side_effect_state``.
    """

    status: SettledStatus
    provenance: Literal["reported", "synthetic"]
    content: str | ToolContent | None = None
    code: str | None = None
    message: str | None = None
    side_effect_state: SideEffectState | None = None

    def __json__(self) -> dict[str, Any]:
        if self.status == "success":
            return {"status": self.status, "content": self.content, "provenance": self.provenance}
        if self.provenance == "reported":
            return {"status": self.status, "code": self.code, "message": self.message, "provenance": self.provenance}
        return {
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "provenance": self.provenance,
            "sideEffectState": self.side_effect_state,
        }


@final
@_sealed
@dataclass(frozen=True, slots=True)
class CloseReason:
    """Why a generation closed: ``complete`` (sealed), or an error/cancelled close."""

    status: Literal["complete", "error", "cancelled"]
    code: str | None = None
    message: str | None = None
    side_effect_state: SideEffectState | None = None

    def __json__(self) -> dict[str, Any]:
        if self.status == "complete":
            return {"status": "complete"}
        return {
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "sideEffectState": self.side_effect_state,
        }


COMPLETE: Final = CloseReason("complete")


@final
@_sealed
@dataclass(frozen=True, slots=True)
class CallSnapshot:
    """One announced call: its id, tool name, state and (once terminal) settlement."""

    id: str
    name: str
    state: CallState
    settlement: Settlement | None

    def __json__(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "state": self.state, "settlement": self.settlement}


@final
@_sealed
@dataclass(frozen=True, slots=True)
class Diagnostic:
    """The record a rejection leaves in its generation's diagnostics: the rejection without ``accepted``.

    With ``text_only_tool_results`` an accepted success whose content parts
    hold media leaves one too: reason ``media_moved``, observed status
    ``success`` (deviation D26).
    """

    reason: DiagnosticReason
    call_id: str | None
    generation: int | None
    observed_status: ObservedStatus

    def __json__(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "callId": self.call_id,
            "generation": self.generation,
            "observedStatus": self.observed_status,
        }


@final
@_sealed
@dataclass(frozen=True, slots=True)
class Rejection:
    """A refused operation, returned instead of raising; it is also recorded as a :class:`Diagnostic`.

    ``call_id`` is the caller's id for the settle family and ``None`` for
    close, seal and begin; ``generation`` is the handle's generation when that
    is a safe integer > 0, else ``None`` (for begin's ``stale_turn``, the turn
    token's generation, deviation D20); ``observed_status`` is described in
    ``spec/README.md`` ("Observed status").
    """

    accepted: ClassVar[Literal[False]] = False
    reason: RejectionReason
    call_id: str | None
    generation: int | None
    observed_status: ObservedStatus

    def __json__(self) -> dict[str, Any]:
        return {
            "accepted": False,
            "reason": self.reason,
            "callId": self.call_id,
            "generation": self.generation,
            "observedStatus": self.observed_status,
        }


@final
@_sealed
@_deferring("settlement")
@dataclass(frozen=True, slots=True)
class Accepted(_Deferred):
    """A settlement that was committed: this call's one terminal outcome."""

    accepted: ClassVar[Literal[True]] = True
    generation: int
    call_id: str
    settlement: Settlement

    @staticmethod
    def _build_deferred(record: SettlementRecord) -> tuple[Settlement]:
        return (_new_settlement(*record),)

    def __json__(self) -> dict[str, Any]:
        return {"accepted": True, "generation": self.generation, "callId": self.call_id, "settlement": self.settlement}


SettlementResult: TypeAlias = Accepted | Rejection


@final
@_sealed
@_deferring("calls", "diagnostics")
@dataclass(frozen=True, slots=True)
class Snapshot(_DeferredReferable):
    """An immutable, detached view of one generation.

    ``calls`` are in announcement order; ``diagnostics`` are the rejections
    recorded since the generation began (at most ``max_diagnostics``).
    """

    generation: int
    closed: bool
    close_reason: CloseReason | None
    calls: tuple[CallSnapshot, ...]
    diagnostics: tuple[Diagnostic, ...]

    @staticmethod
    def _build_deferred(
        records: tuple[tuple[CallRecord, ...], tuple[DiagnosticRecord, ...]],
    ) -> tuple[tuple[CallSnapshot, ...], tuple[Diagnostic, ...]]:
        calls, diagnostics = records
        return call_views(calls), diagnostic_views(diagnostics)

    def __json__(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "closed": self.closed,
            "closeReason": self.close_reason,
            "calls": list(self.calls),
            "diagnostics": list(self.diagnostics),
        }


SnapshotSource: TypeAlias = tuple[Callable[..., Snapshot], tuple[Any, ...]]
"""``(build, arguments)``: ``build(*arguments)`` makes (and registers) a snapshot, from records frozen beforehand."""


@final
@_sealed
@_deferred_field("superseded")
@dataclass(frozen=True, slots=True)
class BeginResult(_Deferred):
    """What ``begin`` returns: the new generation, its handle, and the superseded snapshot (or ``None``).

    The superseded snapshot is built when first read (:data:`superseding_begin_result`):
    its records are frozen when ``begin`` commits, so the view is the same
    whenever it is built.
    """

    generation: int
    handle: BatchHandle
    superseded: Snapshot | None

    @staticmethod
    def _build_deferred(source: SnapshotSource) -> tuple[Snapshot]:
        build, arguments = source
        return (build(*arguments),)

    def __json__(self) -> dict[str, Any]:
        return {"generation": self.generation, "handle": self.handle, "superseded": self.superseded}


@final
@_sealed
@dataclass(frozen=True, slots=True)
class Limits:
    """The validated limits of one instance (see the options table in ``spec/machine.json``)."""

    max_calls: int
    max_diagnostics: int
    max_result_bytes: int
    max_message_bytes: int
    max_id_bytes: int
    max_name_bytes: int
    max_code_bytes: int
    text_only_tool_results: bool = False  # a flag, not a limit: media successes record media_moved (D26)


# --------------------------------------------------------------------------- the instance's own records

SettlementRecord: TypeAlias = tuple[str, str, str | ToolContent | None, str | None, str | None, str | None]
"""``(status, provenance, content, code, message, side_effect_state)``: a :class:`Settlement`'s fields, in order."""

CallRecord: TypeAlias = tuple[str, str, str, SettlementRecord | None]
"""``(id, name, state, settlement)``: a :class:`CallSnapshot`'s fields, the settlement as its record."""

DiagnosticRecord: TypeAlias = tuple[str, str | None, int | None, str | None]
"""``(reason, call_id, generation, observed_status)``: a :class:`Diagnostic`'s fields, in order."""

CloseReasonRecord: TypeAlias = tuple[str, str | None, str | None, str | None]
"""``(status, code, message, side_effect_state)``: a :class:`CloseReason`'s fields, in order."""

COMPLETE_RECORD: Final[CloseReasonRecord] = ("complete", None, None, None)

# Positions in the records (each record's fields are its value type's, in declaration order).
CALL_STATE: Final = 2  # in a CallRecord: (id, name, state, settlement)
CALL_SETTLEMENT: Final = 3
STATUS: Final = 0  # in a SettlementRecord and a CloseReasonRecord: the status comes first
PROVENANCE: Final = 1  # in a SettlementRecord: (status, provenance, content, code, message, side_effect_state)
CONTENT: Final = 2
CODE: Final = 3
MESSAGE: Final = 4
SIDE_EFFECT_STATE: Final = 5

_V = TypeVar("_V")


def _fields(cls: type) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(cls))


def _twin(cls: type) -> type:
    """An unfrozen class with the bases and slots of the frozen dataclass ``cls``: the identical layout."""
    return type(f"_{cls.__name__}Builder", cls.__bases__, {"__slots__": cls.__dict__["__slots__"]})


def _compiled(source: str, name: str, namespace: dict[str, Any]) -> Any:
    # The source is built from the classes' own field names; the file name says whose code it is.
    exec(compile(source, f"<tool-call-closure view builder {name}>", "exec"), namespace)
    function = namespace[name]
    function.__qualname__ = name
    return function


def _builder(cls: type[_V], deferred: tuple[str, ...] = ()) -> Callable[..., _V]:
    """``make(*fields)``: an instance of the frozen dataclass ``cls``, built without its ``__init__``.

    A frozen dataclass's ``__init__`` writes each field through
    ``object.__setattr__``, about four times the cost of a plain slot write.
    ``make`` fills the same slots on an instance of an unfrozen twin with the
    identical layout (:func:`_twin`), then gives it the class ``cls``: the
    result is an ordinary, sealed ``cls`` instance.  Only the views below use
    it, always with every field given in declaration order.

    With ``deferred`` (a :func:`_deferring` class), ``make(*other_fields,
    records)`` leaves those fields unset and keeps ``records`` (what the
    class's ``_build_deferred`` builds them from) in the hidden ``_deferred``
    slot until their first read.
    """
    fields = tuple(field for field in _fields(cls) if field not in deferred)
    name = f"new_{cls.__name__}"
    parameters = ", ".join((*fields, "records") if deferred else fields)
    source = (
        f"def {name}({parameters}):\n"
        "    view = twin()  # object.__new__ and __init__, through the type: cheaper than object.__new__(twin)\n"
        + "".join(f"    view.{field} = {field}\n" for field in fields)
        + (f"    view._deferred = records  # {', '.join(deferred)}: built on first read\n" if deferred else "")
        + "    view.__class__ = cls\n"
        "    return view\n"
    )
    twin = _twin(cls)
    # twin() runs nothing of the class's: object's own __new__ and __init__ (neither is overridden in the bases).
    assert all("__init__" not in vars(base) and "__new__" not in vars(base) for base in twin.__mro__[:-1])
    return cast(Callable[..., _V], _compiled(source, name, {"twin": twin, "cls": cls}))


_new_settlement: Final = _builder(Settlement)
_new_call: Final = _builder(CallSnapshot)
_new_diagnostic: Final = _builder(Diagnostic)
_new_close_reason: Final = _builder(CloseReason)
new_rejection: Final[Callable[[str, str | None, int | None, str | None], Rejection]] = _builder(Rejection)
new_begin_result: Final[Callable[[int, BatchHandle, None], BeginResult]] = _builder(BeginResult)
"""``new_begin_result(generation, handle, None)``: a :class:`BeginResult` that superseded nothing."""
superseding_begin_result: Final[Callable[[int, BatchHandle, SnapshotSource], BeginResult]] = _builder(
    BeginResult, ("superseded",)
)
"""``superseding_begin_result(generation, handle, source)``: a :class:`BeginResult` whose superseded snapshot is
built from ``source`` on first read (most of a superseding ``begin``'s cost, rarely read).  ``source`` holds only
records frozen at commit time, so the later snapshot is the one an eager build would have made; its view is
registered for exports when it is built, and only then can anyone hold it."""
ACCEPTED_TWIN: Final[type] = _twin(Accepted)
"""An unfrozen class with :class:`Accepted`'s layout: the machine's ``accepted`` result builds an :class:`Accepted`
with it in place, as :func:`_builder` builds the other views (an instance, its ``generation``, ``call_id`` and
``_deferred`` slots, then the class), so that the generated operations make no call for it."""
_new_snapshot: Final = _builder(Snapshot, ("calls", "diagnostics"))


def snapshot_view(
    generation: int,
    closed: bool,
    close_reason: CloseReasonRecord | None,
    calls: tuple[CallRecord, ...],
    diagnostics: tuple[DiagnosticRecord, ...],
) -> Snapshot:
    """A :class:`Snapshot` of these records; its call and diagnostic views are built on first read."""
    return _new_snapshot(generation, closed, close_reason_view(close_reason), (calls, diagnostics))


def settlement_record(settlement: Settlement) -> SettlementRecord:
    """The record of a :class:`Settlement` (for rendering a snapshot built outside an instance)."""
    return (
        settlement.status,
        settlement.provenance,
        settlement.content,
        settlement.code,
        settlement.message,
        settlement.side_effect_state,
    )


def call_views(records: Sequence[CallRecord]) -> tuple[CallSnapshot, ...]:
    """New :class:`CallSnapshot` views of ``records``; one new :class:`Settlement` per distinct settlement record.

    (A close gives all its pending calls one shared settlement record; their
    views share one settlement view, as their records do.)
    """
    settlements: dict[int, Settlement] = {}
    views: list[CallSnapshot] = []
    for call_id, name, state, record in records:
        if record is None:
            views.append(_new_call(call_id, name, state, None))
            continue
        view = settlements.get(id(record))  # the records are alive for the whole loop: ids are stable
        if view is None:
            view = settlements[id(record)] = _new_settlement(*record)
        views.append(_new_call(call_id, name, state, view))
    return tuple(views)


def call_records(snapshot: Snapshot) -> tuple[CallRecord, ...]:
    """The records of a snapshot's calls (for rendering a snapshot built outside an instance)."""
    return tuple(
        (
            call.id,
            call.name,
            call.state,
            None if call.settlement is None else settlement_record(call.settlement),
        )
        for call in snapshot.calls
    )


def diagnostic_views(records: Sequence[DiagnosticRecord]) -> tuple[Diagnostic, ...]:
    """New :class:`Diagnostic` views of ``records``."""
    return tuple(_new_diagnostic(*record) for record in records)


def close_reason_view(record: CloseReasonRecord | None) -> CloseReason | None:
    """A :class:`CloseReason` view of ``record`` (``COMPLETE`` for the complete record)."""
    if record is None:
        return None
    if record is COMPLETE_RECORD:
        return COMPLETE
    return _new_close_reason(*record)
