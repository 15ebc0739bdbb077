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
``__json__`` returns that form as plain Python data; :func:`to_json` (in
:mod:`._canonical`) turns it into text.

Two identity rules matter:

* a :class:`BatchHandle` is a capability: it compares equal only to itself
  (``eq=False``), and the closure accepts only the very object ``begin``
  returned, never a look-alike with the same generation number;
* a :class:`Snapshot` compares by value, but exports accept only the very
  objects this instance produced (an identity registry, see ``_machine``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, TypeAlias, TypeVar, final

from tool_call_closure.errors import FrozenValueError

__all__ = [
    "COMPLETE",
    "Accepted",
    "BatchHandle",
    "BeginResult",
    "CallSnapshot",
    "CallState",
    "CloseReason",
    "Diagnostic",
    "Limits",
    "ObservedStatus",
    "Rejection",
    "RejectionReason",
    "Settlement",
    "SettlementResult",
    "SideEffectState",
    "Snapshot",
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


CallState: TypeAlias = Literal["pending", "success", "error", "cancelled"]
SettledStatus: TypeAlias = Literal["success", "error", "cancelled"]
SideEffectState: TypeAlias = Literal["unknown", "not_started"]
RejectionReason: TypeAlias = Literal[
    "stale_generation", "run_closed", "unknown_call", "duplicate_settlement", "pending_calls"
]
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
class Settlement:
    """A call's terminal outcome.

    Three variants, told apart by ``status`` and ``provenance``:

    * reported success: ``content`` is the stored text; ``code``, ``message``
      and ``side_effect_state`` are ``None``;
    * reported error/cancelled: ``code`` and ``message``; no ``content``;
    * synthetic error/cancelled (made by close or supersession): ``code``,
      ``message`` and ``side_effect_state``.
    """

    status: SettledStatus
    provenance: Literal["reported", "synthetic"]
    content: str | None = None
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
    """The record a rejection leaves in its generation's diagnostics: the rejection without ``accepted``."""

    reason: RejectionReason
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
    close and seal; ``generation`` is the handle's generation when that is a
    safe integer > 0, else ``None``; ``observed_status`` is described in
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
@dataclass(frozen=True, slots=True)
class Accepted:
    """A settlement that was committed: this call's one terminal outcome."""

    accepted: ClassVar[Literal[True]] = True
    generation: int
    call_id: str
    settlement: Settlement

    def __json__(self) -> dict[str, Any]:
        return {"accepted": True, "generation": self.generation, "callId": self.call_id, "settlement": self.settlement}


SettlementResult: TypeAlias = Accepted | Rejection


@final
@_sealed
@dataclass(frozen=True, slots=True, weakref_slot=True)
class Snapshot:
    """An immutable, detached view of one generation.

    ``calls`` are in announcement order; ``diagnostics`` are the rejections
    recorded since the generation began (at most ``max_diagnostics``).
    """

    generation: int
    closed: bool
    close_reason: CloseReason | None
    calls: tuple[CallSnapshot, ...]
    diagnostics: tuple[Diagnostic, ...]

    def __json__(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "closed": self.closed,
            "closeReason": self.close_reason,
            "calls": list(self.calls),
            "diagnostics": list(self.diagnostics),
        }


@final
@_sealed
@dataclass(frozen=True, slots=True)
class BeginResult:
    """What ``begin`` returns: the new generation, its handle, and the superseded snapshot (or ``None``)."""

    generation: int
    handle: BatchHandle
    superseded: Snapshot | None

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
