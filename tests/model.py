"""An independent, executable model of ``spec/README.md``: the oracle of ``test_stateful.py``.

Theory of operation
-------------------
This module is a second statement of the specification, written from the
prose of ``spec/README.md`` (and the error texts, default texts and option
names of ``spec/machine.json``), *not* from the implementation in ``src/``.
It deliberately does not interpret the transition table: every rule is
written out as straight-line Python, in the order the prose gives it, so a
defect of the table or of the interpreter shows up as a disagreement.

State is plain data:

* ``_generation`` — the counter (starts at 0, +1 per successful ``begin``);
* ``_run`` — the current generation or ``None``: its number, its handle (a
  fresh :class:`Handle` object whose *identity* is the capability), its run
  state (``open`` / ``complete`` / ``error`` / ``cancelled``), its calls in
  announcement order (id, name, state, settlement) and its close reason;
* ``_diagnostics`` — one list, for the current generation, capped at
  ``max_diagnostics`` (§9);
* ``_produced`` — the snapshots this instance produced, by identity (§13).

Operations follow the phases of §2 literally: *prepare* (read arguments;
caller code may run), *admit* (guards, in the precedence stale > closed >
unknown > duplicate), *normalize* (build the stored value; caller code may
run and may call this model again), *recheck* (the guards again, after
caller code: a nested begin, close or settlement wins), *commit*.  Reading
the current state afresh after each unlocked phase is what makes nested
operations behave as the spec says; the model has no lock because it is only
ever driven from one thread.

Caller values are read as §3 says: a mapping by key, any other *object* by
attribute, a ``KeyError`` / ``AttributeError`` meaning "absent"; ``MISSING``
is JavaScript's ``undefined`` (an argument not passed, a property not there)
and ``None`` is ``null``; both are "absent" except where §3 says otherwise.

The ECMAScript primitives the spec delegates to (``String(value)``,
``JSON.stringify``, ``truncateUtf8``) are taken from
:mod:`tool_call_closure.ecma`, which is tested against Node separately;
byte counting and the blank test are restated here from §3.

Errors are :class:`ModelError` with the spec's permanent ``code``, ``kind``
(``TypeError`` / ``RangeError``) and message, filled from the ``errors``
templates of ``spec/machine.json``.  Exceptions raised by caller code
propagate unchanged.
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from tool_call_closure.ecma import to_js_string, truncate_utf8
from tool_call_closure.ecma_json import json_stringify
from tool_call_closure.errors import ToolCallClosureError

__all__ = [
    "MISSING",
    "Accepted",
    "BeginResult",
    "CallView",
    "CloseReason",
    "Diagnostic",
    "Handle",
    "Model",
    "ModelError",
    "Rejection",
    "Settlement",
    "Snapshot",
    "TurnToken",
    "is_object",
    "read_property",
]

SPEC: Final[dict[str, Any]] = json.loads(
    (Path(__file__).resolve().parents[1] / "spec" / "machine.json").read_text(encoding="utf-8")
)
ERRORS: Final[dict[str, dict[str, Any]]] = {entry["code"]: entry for entry in SPEC["errors"]}
TEXTS: Final[dict[str, str]] = SPEC["texts"]
#: (spec name, Python keyword, default) in the order §4 validates them.
OPTIONS: Final[list[tuple[str, str, int]]] = [
    (o["id"], o["python"], o["default"]) for o in SPEC["options"] if o.get("kind", "limit") == "limit"
]
#: The flag options (D26), validated after the limits: true or false, absent or None the default.  A flag changes
#: only what a result made of content parts records (media_moved), and this model has no content parts.
FLAGS: Final[list[tuple[str, str, bool]]] = [
    (o["id"], o["python"], o["default"]) for o in SPEC["options"] if o.get("kind") == "flag"
]
MAX_SAFE_INTEGER: Final = 2**53 - 1
CLOSED_STATES: Final = frozenset({"complete", "error", "cancelled"})
SETTLED_STATUSES: Final = frozenset({"success", "error", "cancelled"})
CLOSE_STATUSES: Final = frozenset({"error", "cancelled"})
SIDE_EFFECT_STATES: Final = frozenset({"unknown", "not_started"})
#: §3 "Strings": exactly what JavaScript's trim() removes.
JS_WHITESPACE: Final = (
    "\u0009\u000a\u000b\u000c\u000d\u0020\u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


class _Missing:
    """JavaScript's ``undefined``: an argument that was not passed, a property that is not there."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


MISSING: Final = _Missing()


class ModelError(Exception):
    """An error the spec names: ``code`` and ``kind`` from ``spec/machine.json``, the message filled in."""

    def __init__(self, code: str, /, **params: Any) -> None:
        entry = ERRORS[code]
        self.code = code
        self.kind: str = entry["kind"]
        self.message: str = entry["message"].format(**params)
        super().__init__(self.message)


# --------------------------------------------------------------------------- values the model returns
#
# Each has a __json__ giving the canonical JSON form of §13 (key order and the
# variant-dependent key sets), so `to_json` renders model values and
# implementation values alike and the two texts can be compared byte for byte.


@dataclass(frozen=True, eq=False)
class Handle:
    """The capability for one generation: only this very object is current (compared by identity)."""

    generation: int

    def __json__(self) -> dict[str, Any]:
        return {"generation": self.generation}


@dataclass(frozen=True)
class TurnToken:
    """§5.1 (D20): the generation counter when a model turn was requested; plain data, compared by value."""

    generation: int

    def __json__(self) -> dict[str, Any]:
        return {"generation": self.generation}


@dataclass(frozen=True)
class Settlement:
    """A call's terminal outcome (§13 gives the three key sets)."""

    status: str
    provenance: str
    content: str | None = None
    code: str | None = None
    message: str | None = None
    side_effect_state: str | None = None

    def __json__(self) -> dict[str, Any]:
        if self.status == "success":
            return {"status": self.status, "content": self.content, "provenance": self.provenance}
        result: dict[str, Any] = {
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "provenance": self.provenance,
        }
        if self.provenance == "synthetic":
            result["sideEffectState"] = self.side_effect_state
        return result


@dataclass(frozen=True)
class CloseReason:
    """``{status: complete}`` or ``{status, code, message, sideEffectState}``."""

    status: str
    code: str | None = None
    message: str | None = None
    side_effect_state: str | None = None

    def __json__(self) -> dict[str, Any]:
        if self.status == "complete":
            return {"status": "complete"}
        return {
            "status": self.status,
            "code": self.code,
            "message": self.message,
            "sideEffectState": self.side_effect_state,
        }


@dataclass(frozen=True)
class CallView:
    """One call as a snapshot shows it."""

    id: str
    name: str
    state: str
    settlement: Settlement | None

    def __json__(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "state": self.state, "settlement": self.settlement}


@dataclass(frozen=True)
class Diagnostic:
    """A rejection without ``accepted`` (§9)."""

    reason: str
    call_id: str | None
    generation: int | None
    observed_status: str | None

    def __json__(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "callId": self.call_id,
            "generation": self.generation,
            "observedStatus": self.observed_status,
        }


@dataclass(frozen=True)
class Rejection:
    """``{accepted: false, reason, callId, generation, observedStatus}`` (§2)."""

    reason: str
    call_id: str | None
    generation: int | None
    observed_status: str | None
    accepted: bool = field(default=False, init=False)

    def __json__(self) -> dict[str, Any]:
        return {
            "accepted": False,
            "reason": self.reason,
            "callId": self.call_id,
            "generation": self.generation,
            "observedStatus": self.observed_status,
        }


@dataclass(frozen=True)
class Accepted:
    """``{accepted: true, generation, callId, settlement}`` (§6 step 5)."""

    generation: int
    call_id: str
    settlement: Settlement
    accepted: bool = field(default=True, init=False)

    def __json__(self) -> dict[str, Any]:
        return {"accepted": True, "generation": self.generation, "callId": self.call_id, "settlement": self.settlement}


@dataclass(frozen=True)
class Snapshot:
    """``{generation, closed, closeReason, calls, diagnostics}``: deeply immutable (tuples of frozen values)."""

    generation: int
    closed: bool
    close_reason: CloseReason | None
    calls: tuple[CallView, ...]
    diagnostics: tuple[Diagnostic, ...]

    def __json__(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "closed": self.closed,
            "closeReason": self.close_reason,
            "calls": list(self.calls),
            "diagnostics": list(self.diagnostics),
        }


@dataclass(frozen=True)
class BeginResult:
    """``{generation, handle, superseded}`` (§5 step 3)."""

    generation: int
    handle: Handle
    superseded: Snapshot | None

    def __json__(self) -> dict[str, Any]:
        return {"generation": self.generation, "handle": self.handle, "superseded": self.superseded}


@dataclass
class _Call:
    """A call of the current run (mutable; snapshots copy it into a :class:`CallView`)."""

    id: str
    name: str
    state: str = "pending"
    settlement: Settlement | None = None


@dataclass
class _Run:
    """The current generation."""

    generation: int
    handle: Handle
    calls: list[_Call]
    state: str = "open"
    close_reason: CloseReason | None = None

    def call(self, call_id: str) -> _Call | None:
        """The announced call with this id (exact string equality), or None."""
        return next((call for call in self.calls if call.id == call_id), None)


# --------------------------------------------------------------------------- §3: reading caller values


def is_object(value: object) -> bool:
    """§3 *Objects*: a mapping, or an instance that is not None, a number, a string, bytes, a list,
    a tuple, a set or a callable.

    SPEC GAP: the reference also treats ``range`` and ``memoryview`` as non-objects (and
    ``bytearray``/``frozenset``/``complex``, which "bytes", "a set" and "a number" arguably
    cover); §3 does not list ``range`` or ``memoryview``.  The model follows the reference there
    so the machine can run; ``test_stateful.py`` does not generate those values.
    """
    if isinstance(value, Mapping):
        return True
    if value is None or value is MISSING:
        return False
    not_objects = (numbers.Number, str, bytes, bytearray, memoryview, list, tuple, set, frozenset, range)
    return not isinstance(value, not_objects) and not callable(value)


def read_property(value: object, key: str) -> Any:
    """§3: a mapping by key, another object by attribute; KeyError/AttributeError mean absent."""
    if isinstance(value, Mapping):
        try:
            return value[key]
        except KeyError:
            return MISSING
    if is_object(value):
        try:
            return getattr(value, key)
        except AttributeError:
            return MISSING
    return MISSING


def _absent(value: object) -> bool:
    """``undefined`` or ``null`` (§3: both are absent almost everywhere)."""
    return value is MISSING or value is None


def _plain(value: object) -> str | None:
    """A string's plain value (a str subclass counts with its plain value, D5), else None."""
    return str.__str__(value) if isinstance(value, str) else None


def _member(value: object, allowed: frozenset[str]) -> str | None:
    text = _plain(value)
    return text if text is not None and text in allowed else None


def utf8_length(text: str) -> int:
    """§3 *Bytes*: UTF-8 bytes of the UTF-16 form (a lone surrogate 3, a surrogate pair 4)."""
    utf16 = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    return len(utf16.encode("utf-8", "surrogatepass"))


def _bounded(value: object, limit: int, argument: str) -> str:
    """§3 *Strings*: a non-blank ``str`` within ``limit`` bytes, stored verbatim (its plain value)."""
    text = _plain(value)
    if text is None or not text.strip(JS_WHITESPACE):
        raise ModelError("string_empty", argument=argument)
    if utf8_length(text) > limit:
        raise ModelError("string_too_long", argument=argument, limit=limit)
    return text


def _safe_integer(value: object) -> bool:
    """§3 *Safe integers*: an int (not a bool) in 1..2**53-1."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_SAFE_INTEGER


def _message(value: object, default: str, limit: int) -> str:
    """§6/§11/§12: absent → the default; anything else ``String(value)``; then truncated."""
    return truncate_utf8(default if _absent(value) else to_js_string(value), limit)


def _content(value: object, limit: int) -> str:
    """§10: a string as is; an absent value raises; anything else its JSON text; then the byte limit."""
    if value is MISSING:
        raise ModelError("content_not_serializable")
    text = _plain(value)
    if text is None:
        try:
            text = json_stringify(value, limit)  # D18: the limit is a budget; what lies past it is not reached
        except ToolCallClosureError as exc:  # the ECMAScript helper's own refusal, restated as the spec's error
            if exc.code == "content_too_large":
                raise ModelError("content_too_large", limit=limit) from None
            raise ModelError(exc.code) from None
    if utf8_length(text) > limit:
        raise ModelError("content_too_large", limit=limit)
    return text


def _export_content(settlement: Settlement) -> str:
    """§13 ADP-5: an export item's content: a success's stored text, else ``{error: {code, message[, side_effect_state]}}``."""
    if settlement.status == "success":
        assert settlement.content is not None
        return settlement.content
    error: dict[str, Any] = {"code": settlement.code, "message": settlement.message}
    if settlement.provenance == "synthetic":
        error["side_effect_state"] = settlement.side_effect_state
    return json_stringify({"error": error})


# --------------------------------------------------------------------------- the model


class Model:
    """The spec as a small sequential program (see the module docstring)."""

    def __init__(self, **options: Any) -> None:
        """§4: the seven limits, validated in table order; absent or None takes the default."""
        known = {python for _, python, _ in OPTIONS} | {python for _, python, _ in FLAGS}
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"unexpected keyword argument {unknown[0]!r}")
        limits: dict[str, int] = {}
        self.flags: Final[dict[str, bool]] = {}
        for spec_name, python, default in OPTIONS:
            value = options.get(python)
            if value is None:
                limits[python] = default
            elif _safe_integer(value):
                limits[python] = value
            else:
                raise ModelError("option_invalid", option=spec_name)
        for spec_name, python, flag_default in FLAGS:
            flag = options.get(python)
            if flag is not None and type(flag) is not bool:
                raise ModelError("option_not_flag", option=spec_name)
            self.flags[python] = flag_default if flag is None else flag
        self.limits: Final = limits
        self._generation = 0
        self._run: _Run | None = None
        self._diagnostics: list[Diagnostic] = []
        self._produced: dict[int, Snapshot] = {}  # id -> the snapshot itself (kept alive: identity stays unique)

    # ------------------------------------------------------------------ reads

    @property
    def active_generation(self) -> int | None:
        """GEN-1: the current generation's number, None before the first begin."""
        return None if self._run is None else self._run.generation

    def turn_token(self) -> TurnToken:
        """§5.1 (D20): the generation counter as a turn token, 0 before the first begin; changes nothing."""
        return TurnToken(self._generation)

    def snapshot(self) -> Snapshot | None:
        """§13 SNAP-1..5: None before the first begin, else a new registered immutable snapshot."""
        return None if self._run is None else self._take_snapshot()

    @property
    def run_state(self) -> str:
        """The current run state: ``none`` before the first begin, else ``open`` or a closed state."""
        return "none" if self._run is None else self._run.state

    def call_ids(self, *, pending_only: bool = False) -> list[str]:
        """The current run's call ids in announcement order (only the pending ones if asked)."""
        if self._run is None:
            return []
        return [call.id for call in self._run.calls if not pending_only or call.state == "pending"]

    def produced(self, candidate: object) -> bool:
        """True iff ``candidate`` is, by identity, a snapshot this instance produced."""
        return candidate is not None and self._produced.get(id(candidate)) is candidate

    # ------------------------------------------------------------------ §5 begin

    def begin(self, calls: Any, turn: Any = None) -> BeginResult | Rejection:
        start = self._generation
        token = self._turn_generation(turn)  # §5 step 1: the turn token first (D20); it runs no caller code
        validated = self._validate_calls(calls)  # prepare: caller code may run (nested operations)
        # §5.1 recheck: with a token, a compare-and-set, before generation_changed; nothing else changes.
        if token is not None and self._generation != token:
            return self._reject("stale_turn", None, token if token > 0 else None, None)
        if self._generation != start:  # recheck: a nested begin ran
            raise ModelError("generation_changed")
        superseded = None  # commit
        if self._run is not None and self._run.state == "open":
            reason = CloseReason(
                "cancelled",
                TEXTS["superseded_code"],
                truncate_utf8(TEXTS["superseded_message"], self.limits["max_message_bytes"]),
                "unknown",
            )
            self._close_run(reason)
            superseded = self._take_snapshot()  # before the generation number changes: old diagnostics
        self._generation += 1
        handle = Handle(self._generation)
        self._run = _Run(self._generation, handle, [_Call(call_id, name) for call_id, name in validated])
        self._diagnostics = []
        return BeginResult(self._generation, handle, superseded)

    @staticmethod
    def _turn_generation(turn: Any) -> int | None:
        """§5 step 1 (D20): absent/None is no guard; else a turn token whose generation is a safe integer >= 0."""
        if turn is None or turn is MISSING:
            return None
        generation = turn.generation if isinstance(turn, TurnToken) else None
        if isinstance(generation, int) and not isinstance(generation, bool) and 0 <= generation <= MAX_SAFE_INTEGER:
            return int(generation)
        raise ModelError("turn_invalid")

    def _validate_calls(self, calls: Any) -> list[tuple[str, str]]:
        """§5 step 1 (BEG-1..4, BEG-7): array, length, then each entry fully before the next."""
        if not isinstance(calls, (list, tuple)):
            raise ModelError("calls_not_array")
        if len(calls) > self.limits["max_calls"]:
            raise ModelError("calls_exceed_max", limit=self.limits["max_calls"])
        validated: list[tuple[str, str]] = []
        seen: set[str] = set()
        for index in range(len(calls)):
            entry = calls[index]
            if not is_object(entry):
                raise ModelError("call_not_object", index=index)
            call_id = _bounded(read_property(entry, "id"), self.limits["max_id_bytes"], f"calls[{index}].id")
            if call_id in seen:
                raise ModelError("duplicate_call_id", id=call_id)
            seen.add(call_id)
            name = _bounded(read_property(entry, "name"), self.limits["max_name_bytes"], f"calls[{index}].name")
            validated.append((call_id, name))
        return validated

    # ------------------------------------------------------------------ §6 settle and its forms

    def settle(self, handle: Any, call_id: Any, outcome: Any) -> Accepted | Rejection:
        return self._settle("settle", handle, call_id, outcome)

    def succeed(self, handle: Any, call_id: Any, content: Any = MISSING) -> Accepted | Rejection:
        return self._settle("succeed", handle, call_id, content)

    def fail(self, handle: Any, call_id: Any, error: Any = MISSING, code: Any = None) -> Accepted | Rejection:
        return self._settle("fail", handle, call_id, error, code)

    def cancel(self, handle: Any, call_id: Any, message: Any = None, code: Any = None) -> Accepted | Rejection:
        return self._settle("cancel", handle, call_id, message, code)

    def _settle(self, form: str, handle: Any, call_id: Any, value: Any, code: Any = None) -> Accepted | Rejection:
        # prepare (SET-1..3): callId first, whatever the handle; then the handle's generation; then the preview.
        call_id = _bounded(call_id, self.limits["max_id_bytes"], "callId")
        generation = self._handle_generation(handle)
        preview = self._preview(form, value)
        # admit, in the precedence stale > closed > unknown > duplicate
        run = self._run
        if run is None or handle is not run.handle:
            return self._reject("stale_generation", call_id, generation, preview)
        if run.state in CLOSED_STATES:
            return self._reject("run_closed", call_id, generation, preview)
        call = run.call(call_id)
        if call is None:
            return self._reject("unknown_call", call_id, generation, None)
        if call.state != "pending":
            return self._reject("duplicate_settlement", call_id, generation, None)
        # normalize: caller code may run; a raise leaves the call pending
        settlement = self._normalize_outcome(form, value, code)
        # recheck (SET-9): observedStatus is the normalized status
        run = self._run
        assert run is not None
        if handle is not run.handle:
            return self._reject("stale_generation", call_id, generation, settlement.status)
        if run.state in CLOSED_STATES:
            return self._reject("run_closed", call_id, generation, settlement.status)
        call = run.call(call_id)
        assert call is not None, "the handle is still current, so the run is the one that announced the id"
        if call.state != "pending":
            return self._reject("duplicate_settlement", call_id, generation, settlement.status)
        # commit (SET-10)
        call.state = settlement.status
        call.settlement = settlement
        return Accepted(run.generation, call_id, settlement)

    @staticmethod
    def _preview(form: str, value: Any) -> str | None:
        """§8 ``preview``: the outcome's status as first read; for the forms, the form's status."""
        if form != "settle":
            return {"succeed": "success", "fail": "error", "cancel": "cancelled"}[form]
        status = read_property(value, "status")
        if _absent(status):
            return None
        return _member(status, SETTLED_STATUSES) or "invalid"

    def _normalize_outcome(self, form: str, value: Any, code: Any) -> Settlement:
        """§6 step 3 (SET-8, NORM-1..8, CONV-1..3, D3)."""
        limits = self.limits
        if form == "succeed":
            return Settlement("success", "reported", content=_content(value, limits["max_result_bytes"]))
        if form == "settle":
            outcome = value
            if not is_object(outcome):
                raise ModelError("outcome_not_object")
            _unknown_keys(outcome, OUTCOME_KEYS, "outcome_key_unknown")  # D10
            status = _member(read_property(outcome, "status"), SETTLED_STATUSES)  # the second read (18.8)
            if status is None:
                raise ModelError("outcome_status_invalid")
            if status == "success":
                content = _content(read_property(outcome, "content"), limits["max_result_bytes"])
                return Settlement("success", "reported", content=content)
            raw_code = read_property(outcome, "code")
            stored_code = status if _absent(raw_code) else _bounded(raw_code, limits["max_code_bytes"], "outcome.code")
            message = _message(
                read_property(outcome, "message"), self._settle_default(status), limits["max_message_bytes"]
            )
            return Settlement(status, "reported", code=stored_code, message=message)
        # fail / cancel: the code is checked before the message is converted
        status = "error" if form == "fail" else "cancelled"
        default_code = TEXTS["fail_code"] if form == "fail" else TEXTS["cancel_code"]
        stored_code = default_code if _absent(code) else _bounded(code, limits["max_code_bytes"], "outcome.code")
        if form == "fail" and isinstance(value, BaseException):
            text = str(value)  # its text, never its traceback; D11: no text names the class
            message = truncate_utf8(text or type(value).__name__, limits["max_message_bytes"])
        else:
            message = _message(value, self._settle_default(status), limits["max_message_bytes"])
        return Settlement(status, "reported", code=stored_code, message=message)

    @staticmethod
    def _settle_default(status: str) -> str:
        return TEXTS["settle_error_message"] if status == "error" else TEXTS["cancel_message"]

    # ------------------------------------------------------------------ §7 close and seal

    def close(self, handle: Any, reason: Any = None) -> Snapshot | Rejection:
        generation = self._handle_generation(handle)  # prepare
        run = self._run  # admit
        if run is None or handle is not run.handle:
            return self._reject("stale_generation", None, generation, None)  # CLO-1: the reason is not read
        if run.state in CLOSED_STATES:
            return self._take_snapshot()  # CLO-2: idempotent, the reason is not read
        normalized = self._close_reason(reason)  # normalize: caller code may run
        run = self._run  # recheck
        assert run is not None
        if handle is not run.handle:
            return self._reject("stale_generation", None, generation, None)
        if run.state in CLOSED_STATES:
            return self._take_snapshot()
        self._close_run(normalized)  # commit (CLO-6)
        return self._take_snapshot()

    def _close_reason(self, reason: Any) -> CloseReason:
        """§7 CLO-3/CLO-4: status, code, sideEffectState (both spellings), message; the first failure raises."""
        limits = self.limits
        if _absent(reason):
            reason = {}  # D1
        elif not is_object(reason):
            raise ModelError("reason_not_object")  # D2
        _unknown_keys(reason, REASON_KEYS, "reason_key_unknown")  # D10
        raw_status = read_property(reason, "status")
        status = "cancelled" if _absent(raw_status) else _member(raw_status, CLOSE_STATUSES)
        if status is None:
            raise ModelError("close_status_invalid")
        raw_code = read_property(reason, "code")
        code = status if _absent(raw_code) else _bounded(raw_code, limits["max_code_bytes"], "reason.code")
        camel = read_property(reason, "sideEffectState")
        snake = read_property(reason, "side_effect_state")  # D7
        if not _absent(camel) and not _absent(snake):
            plain_camel, plain_snake = _plain(camel), _plain(snake)
            if plain_camel is None or plain_camel != plain_snake:
                raise ModelError("side_effect_state_conflict")
        raw_state = snake if _absent(camel) else camel
        side_effect_state = "unknown" if _absent(raw_state) else _member(raw_state, SIDE_EFFECT_STATES)
        if side_effect_state is None:
            raise ModelError("side_effect_state_invalid")
        default = TEXTS["close_error_message"] if status == "error" else TEXTS["cancel_message"]
        message = _message(read_property(reason, "message"), default, limits["max_message_bytes"])
        return CloseReason(status, code, message, side_effect_state)

    def seal(self, handle: Any) -> Snapshot | Rejection:
        generation = self._handle_generation(handle)  # prepare
        run = self._run  # admit
        if run is None or handle is not run.handle:
            return self._reject("stale_generation", None, generation, None)  # SEAL-1
        if run.state in CLOSED_STATES:
            return self._take_snapshot()  # SEAL-2
        if any(call.state == "pending" for call in run.calls):
            return self._reject("pending_calls", None, generation, None)  # SEAL-3
        run.close_reason = CloseReason("complete")  # commit (SEAL-4)
        run.state = "complete"
        return self._take_snapshot()

    # ------------------------------------------------------------------ §13 exports

    def to_openai_chat_completions(self, snapshot: Any = None) -> list[dict[str, Any]]:
        closed = self._export_source(snapshot)
        return [
            {"role": "tool", "tool_call_id": call.id, "content": _export_content(self._settled(call))}
            for call in closed.calls
        ]

    def to_openai_responses(self, snapshot: Any = None) -> list[dict[str, Any]]:
        closed = self._export_source(snapshot)
        return [
            {"type": "function_call_output", "call_id": call.id, "output": _export_content(self._settled(call))}
            for call in closed.calls
        ]

    def to_anthropic_tool_results(self, snapshot: Any = None) -> list[dict[str, Any]]:
        closed = self._export_source(snapshot)
        payload: list[dict[str, Any]] = []
        for call in closed.calls:
            item: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": call.id,
                "content": _export_content(self._settled(call)),
            }
            if call.state != "success":
                item["is_error"] = True
            payload.append(item)
        return payload

    def _export_source(self, snapshot: Any) -> Snapshot:
        """ADP-1..3: default a fresh snapshot (None is absent, D1); refuse by identity before reading; refuse open."""
        if snapshot is None:
            snapshot = self.snapshot()
        if not self.produced(snapshot):
            raise ModelError("snapshot_foreign")
        if not snapshot.closed:
            raise ModelError("snapshot_open")
        return snapshot  # type: ignore[no-any-return]

    @staticmethod
    def _settled(call: CallView) -> Settlement:
        assert call.settlement is not None, "I5: a closed snapshot has no pending call"
        return call.settlement

    # ------------------------------------------------------------------ shared steps

    def _handle_generation(self, handle: Any) -> int | None:
        """SET-2: ``handle.generation`` if it is a safe integer > 0, else None (reading may run caller code)."""
        generation = read_property(handle, "generation")
        return generation if _safe_integer(generation) else None

    def _reject(self, reason: str, call_id: str | None, generation: int | None, observed: str | None) -> Rejection:
        """§2/§9: a rejection, recorded as a diagnostic while there is room."""
        if len(self._diagnostics) < self.limits["max_diagnostics"]:
            self._diagnostics.append(Diagnostic(reason, call_id, generation, observed))
        return Rejection(reason, call_id, generation, observed)

    def _close_run(self, reason: CloseReason) -> None:
        """CLO-6 / SUP-1..3: every pending call gets the synthetic settlement; the run takes the reason's status."""
        run = self._run
        assert run is not None
        assert run.state == "open"
        synthetic = Settlement(
            reason.status,
            "synthetic",
            code=reason.code,
            message=reason.message,
            side_effect_state=reason.side_effect_state,
        )
        for call in run.calls:
            if call.state == "pending":
                call.state = reason.status
                call.settlement = synthetic
        run.close_reason = reason
        run.state = reason.status

    def _take_snapshot(self) -> Snapshot:
        run = self._run
        assert run is not None
        snapshot = Snapshot(
            run.generation,
            run.state in CLOSED_STATES,
            run.close_reason,
            tuple(CallView(call.id, call.name, call.state, call.settlement) for call in run.calls),
            tuple(self._diagnostics),
        )
        self._produced[id(snapshot)] = snapshot
        return snapshot


OUTCOME_KEYS = frozenset({"status", "content", "code", "message", "provenance", "sideEffectState", "side_effect_state"})
REASON_KEYS = frozenset({"status", "code", "message", "sideEffectState", "side_effect_state"})


def _unknown_keys(value: Any, known: frozenset[str], code: str) -> None:
    """D10: a mapping with a key the spec does not define is refused, naming the first such key."""
    if isinstance(value, Mapping):
        for key in value:
            if not (isinstance(key, str) and str.__str__(key) in known):
                raise ModelError(code, key=truncate_utf8(to_js_string(key), 128))
