"""The validated transition table as frozen Python values (what :func:`~.table.parse_table` returns).

Theory of operation
-------------------
Each class is one kind of member of ``spec/machine.json``, checked: an
option, an error, an operation with its phases and method forms, an effect
with what it writes, a row with its states, guard, effects, targets and
result, a call transition, and the whole :class:`Table`.  Every collection is
immutable, so the compiled machine and the proofs can share one table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "CallTransition",
    "EffectSpec",
    "ErrorSpec",
    "FlagSpec",
    "OperationSpec",
    "OptionSpec",
    "Row",
    "RowResult",
    "Table",
]


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """A limit: a positive safe integer (OPT-4)."""

    id: str
    python: str
    default: int


@dataclass(frozen=True, slots=True)
class FlagSpec:
    """A flag option (``"kind": "flag"``): true or false, validated after every limit (deviation D26)."""

    id: str
    python: str
    default: bool


@dataclass(frozen=True, slots=True)
class ErrorSpec:
    code: str
    kind: str
    message: str
    match: str


@dataclass(frozen=True, slots=True)
class OperationSpec:
    id: str
    phases: tuple[str, ...]
    methods: tuple[Mapping[str, str], ...]


@dataclass(frozen=True, slots=True)
class EffectSpec:
    id: str
    caller_code: bool
    runs_operation: bool  # it performs an operation of its own, which takes the lock
    writes: str  # "current_run" | "new_run" | "none"
    run_to: str | None
    call_event: str | None
    errors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RowResult:
    """What a firing row ends the operation with; ``kind`` is reject, raise or return."""

    kind: str
    name: str
    call_id: str | None = None  # reject only: "argument" | "none"
    observed: str | None = None  # reject only: an id from the observed list


@dataclass(frozen=True, slots=True)
class Row:
    id: str
    op: str
    phase: str
    from_states: tuple[str, ...]
    guard: str | None
    effects: tuple[str, ...]
    to: tuple[str, ...]  # () unchanged; one state; or the allowed targets of a dynamic move
    to_by: str | None
    result: RowResult | None
    catalogue: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CallTransition:
    id: str
    from_state: str
    event: str
    to: str


@dataclass(frozen=True, slots=True)
class Table:
    """The validated table; every collection is immutable."""

    version: str
    options: tuple[OptionSpec, ...]  # the limits, in the table's order
    texts: Mapping[str, str]
    run_states: tuple[str, ...]
    initial_run_state: str
    closed_run_states: frozenset[str]
    call_states: tuple[str, ...]
    initial_call_state: str
    terminal_call_states: frozenset[str]
    call_events: Mapping[str, str]  # event id -> provenance
    call_event_status: Mapping[str, str]  # event id -> the call state it gives
    call_transitions: tuple[CallTransition, ...]
    phases: Mapping[str, bool]  # phase id -> locked
    operations: Mapping[str, OperationSpec]
    guards: tuple[str, ...]
    effects: Mapping[str, EffectSpec]
    results: tuple[str, ...]
    reasons: tuple[str, ...]
    observed: tuple[str, ...]
    errors: Mapping[str, ErrorSpec]
    default_error: str
    call_default_error: str
    defaulted: frozenset[tuple[str, str]]
    transitions: tuple[Row, ...]
    invariants: Mapping[str, str]
    flags: tuple[FlagSpec, ...] = ()  # the flag options, in the table's order (after the limits)

    def effect_run_targets(self) -> dict[str, str]:
        """Effect id -> the run state it moves the run to, for the effects that move it (``supersede`` …)."""
        return {e.id: e.run_to for e in self.effects.values() if e.run_to}

    def effect_call_events(self) -> dict[str, dict[str, str]]:
        """Effect id -> {call status -> the call event it applies}, for the effects that move calls.

        ``"report_<status>"`` names one event per status; a plain event name (``"synthesize_cancelled"``) is the
        same event for every status.
        """
        return {
            e.id: {
                status: e.call_event.replace("<status>", status)
                for status in self.call_states
                if e.call_event.replace("<status>", status) in self.call_events
            }
            for e in self.effects.values()
            if e.call_event
        }

    def effect_call_moves(self) -> dict[str, dict[tuple[str, str], str]]:
        """Effect id -> {(call state, call status) -> the call state its event moves to}; a move it lacks is absent.

        The call machine resolved once for the table: the compiled machine looks a settlement's move up with one
        read, and the method copies (``machine.specialize``) fold it where the status is fixed.
        """
        moves = {(t.from_state, t.event): t.to for t in self.call_transitions}
        return {
            effect: {
                (state, status): moves[state, event]
                for status, event in events.items()
                for state in self.call_states
                if (state, event) in moves
            }
            for effect, events in self.effect_call_events().items()
        }

    def rows_for(self, op: str, phase: str, state: str) -> tuple[Row, ...]:
        """The rows of ``op`` in ``phase`` that apply to run state ``state``, in table order."""
        return tuple(r for r in self.transitions if r.op == op and r.phase == phase and state in r.from_states)
