"""CrossHair contracts: the value helpers and the invariants I1–I8, stated locally.

Run with ``python proofs/run_crosshair.py`` (see ``proofs/README.md`` §8).  Every public function
here wraps one piece of the reference and carries PEP 316 docstring contracts: ``pre:``
lines restrict the inputs, and each ``post:`` line is one contract that CrossHair checks on
its own (``__return__`` is the result; a trailing ``# comment`` names the contract in the
runner's report).  CrossHair evaluates the *source text* of each condition line in this
module's namespace, one line per condition: a backslash escape written in a docstring is read
there as it is in the source, not as the docstring's value shows it, so the conditions call
the ``_spec_*`` and ``_is_*`` predicates below instead of spelling out literals.

PEP 316 rather than ``assert`` statements (``--analysis_kind=asserts``): every ``post:`` line
is analysed and reported separately, with its own line number and time budget, which is
what lets the runner report per invariant; and preconditions are explicit, so CrossHair says
"Unable to meet precondition" when they are unsatisfiable (the runner's vacuity guard).

Two kinds of contract
---------------------
*Symbolic* (the value helpers, the call machine): CrossHair executes the shipped helper on
symbolic strings, ints, floats and enums and, where the path space is finite, confirms the
condition over all paths.  Each helper is compared with an **independent** definition written
here from the spec (a code-point loop for Node's byte count, a character-granular greedy
truncation, the whitespace set by code point, ``json.loads`` for JSON text), never with a
copy of its own algorithm.

*Concrete steps* (the guards and the interpreter step): CrossHair chooses an arbitrary
:class:`~crosshair_model.AbstractState` and :class:`~crosshair_model.Operation` (factories in
``crosshair_plugin.py``; ``pre:`` keeps the states the public API can reach), and the step
then runs the real closure — built and driven through the public API only — with CrossHair's
tracing switched off: every input is already concrete, so tracing the interpreter would add
cost and no paths.  Here CrossHair acts as a systematic, never-repeating explorer of the
abstract state × operation space, and the result is a bounded check (the space is far too
large to exhaust in a CI budget).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from crosshair import NoTracing, realize
from crosshair_model import (
    CLOSED_RUNS,
    HANDLE_OPS,
    MAX_DIAGNOSTICS,  # noqa: F401  (used by a docstring contract)
    SETTLE_OPS,
    AbstractState,
    Call,
    HandleKind,
    Operation,
    OpKind,
    RunState,
    Status,
    Step,
    abstract,  # noqa: F401  (used by a docstring contract)
    call_id,
    guard_values,
    step,
)

from tool_call_closure import ToolCallClosureError
from tool_call_closure.ecma import is_blank, number_to_string, truncate_utf8, utf8_length
from tool_call_closure.ecma_json import json_stringify
from tool_call_closure.machine.interpreter import MACHINE
from tool_call_closure.machine.semantics import bounded_string, safe_positive_int

MAX_SAFE_INTEGER: Final = 2**53 - 1
MAX_TEXT: Final = 6  # bound on symbolic string lengths (code points)
MAX_PROVEN_TEXT: Final = 2  # a bound small enough for CrossHair to exhaust every path within the CI budget

# --------------------------------------------------------------------------- independent definitions

# ECMAScript WhiteSpace and LineTerminator code points (ECMA-262 §12.2, §12.3): what trim() strips.
JS_WHITESPACE: Final = frozenset(
    {0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF}
    | set(range(0x2000, 0x200B))
)
REPLACEMENT: Final = chr(0xFFFD)
ELLIPSIS: Final = "..."


def _is_high(ch: str) -> bool:
    return 0xD800 <= ord(ch) <= 0xDBFF


def _is_low(ch: str) -> bool:
    return 0xDC00 <= ord(ch) <= 0xDFFF


def _has_surrogate(text: str) -> bool:
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in text)


def _scalar_bytes(code_point: int) -> int:
    """UTF-8 length of one code point (a lone surrogate is written as U+FFFD: 3 bytes)."""
    if code_point < 0x80:
        return 1
    if code_point < 0x800:
        return 2
    if code_point < 0x10000:
        return 3
    return 4


def _spec_node_chars(text: str) -> str:
    """What Node's ``Buffer.from(text)`` encodes: surrogate pairs joined, lone surrogates as U+FFFD."""
    return "".join(REPLACEMENT if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in _spec_utf16_view(text))


def _spec_utf16_view(text: str) -> str:
    """``text`` with adjacent high+low surrogate code points joined (lone surrogates kept)."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if _is_high(ch) and i + 1 < len(text) and _is_low(text[i + 1]):
            out.append(chr(0x10000 + ((ord(ch) - 0xD800) << 10) + (ord(text[i + 1]) - 0xDC00)))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _spec_byte_length(text: str) -> int:
    """Node's ``Buffer.byteLength(text)``, code point by code point."""
    return sum(_scalar_bytes(ord(ch)) for ch in _spec_node_chars(text))


def _spec_truncate(text: str, limit: int) -> str:
    """NORM-7 restated per character: the longest prefix of Node's characters that fits, then the suffix."""
    if _spec_byte_length(text) <= limit:
        return text
    suffix = ELLIPSIS if limit >= 3 else ""
    budget = limit - len(suffix)
    kept = []
    used = 0
    for ch in _spec_node_chars(text):
        size = _scalar_bytes(ord(ch))
        if used + size > budget:
            break
        kept.append(ch)
        used += size
    return "".join(kept) + suffix


def _is_js_blank(text: str) -> bool:
    return all(ord(ch) in JS_WHITESPACE for ch in text)


# Number::toString's shape: no '+' but in 'e+', no leading zeros (except "0."), no trailing zeros
# in a fraction, an exponent without padding, one digit before the point in exponent form.
_NUMBER_SHAPE: Final = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?")
_EXPONENT_SHAPE: Final = re.compile(r"-?[1-9](\.[0-9]*[1-9])?e[+-][1-9][0-9]*")


def _significant_digits(text: str) -> str:
    """The significant digits of a decimal numeral (sign, point, exponent and zero padding removed)."""
    mantissa = text.lower().partition("e")[0].lstrip("-").replace(".", "")
    return mantissa.strip("0") or "0"


def _number_shape_ok(x: float, text: str) -> bool:
    """Plain decimal iff 1e-6 <= |x| < 1e21 (or x == 0), exponent form otherwise, both without padding."""
    plain = x == 0 or 1e-6 <= abs(x) < 1e21
    if plain:
        return _NUMBER_SHAPE.fullmatch(text) is not None
    return _EXPONENT_SHAPE.fullmatch(text) is not None


def _outside_strings(text: str) -> str:
    """``text`` (JSON) with every string literal removed."""
    out = []
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        else:
            out.append(ch)
    return "".join(out)


def _json_compact(text: str) -> bool:
    """No whitespace between tokens, no raw control character, no surrogate code point anywhere."""
    between = _outside_strings(text)
    return (
        not any(ch in " \t\n\r" for ch in between)
        and not any(ord(ch) < 0x20 for ch in text)
        and not _has_surrogate(text)
    )


def _spec_json_value(value: Any) -> Any:
    """What ``json.loads`` must give back: strings in their UTF-16 view, non-finite floats as None."""
    if isinstance(value, str):
        return _spec_utf16_view(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, list):
        return [_spec_json_value(item) for item in value]
    if isinstance(value, dict):
        return {_spec_utf16_view(k): _spec_json_value(v) for k, v in value.items()}
    return value


def _is_array_index(key: str) -> bool:
    return key.isascii() and key.isdigit() and (key == "0" or key[0] != "0") and int(key) <= 4294967294


def _keys_in_ecmascript_order(text: str) -> bool:
    """Every object's keys: array-index keys first, ascending, then the others (checked on the parsed text)."""
    ok = True

    def check(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal ok
        keys = [k for k, _ in pairs]
        indices = [k for k in keys if _is_array_index(k)]
        ok = ok and keys[: len(indices)] == sorted(indices, key=int)
        return dict(pairs)

    json.loads(text, object_pairs_hook=check)
    return ok


# --------------------------------------------------------------------------- CrossHair's codec model


def _sound(text: str) -> str:
    """``text``, made concrete if it holds a surrogate code point.

    CrossHair 0.0.113 models ``str.encode("utf-8")`` on a *symbolic* string in pure Python and
    writes a surrogate code point as three bytes instead of raising ``UnicodeEncodeError`` as
    CPython does (measured: it made ``utf8_length`` count a surrogate pair as 6 bytes, a false
    counterexample).  The helpers take their fast path through that call, so a string with a
    surrogate is realized here and runs through CPython's real codec; surrogate-free strings
    stay symbolic.  (Outside CrossHair ``realize`` returns its argument.)
    """
    return realize(text) if _has_surrogate(text) else text


def _byte_length(text: str) -> int:
    """``utf8_length`` of ``text``, sound under CrossHair (for use inside conditions)."""
    return utf8_length(_sound(text))


# --------------------------------------------------------------------------- utf8_length (JS-2)


def byte_length(text: str) -> int:
    """Node's ``Buffer.byteLength`` (``utf8_length``) of text without surrogates.

    pre: len(text) <= MAX_PROVEN_TEXT
    pre: not _has_surrogate(text)
    post: len(text) <= __return__ <= 4 * len(text)  # bounds
    post: __return__ == len(text.encode("utf-8"))  # equals-encode
    post: __return__ == _spec_byte_length(text)  # spec
    """
    return utf8_length(text)


def byte_length_with_surrogates(text: str) -> int:
    """``utf8_length`` of text with surrogates: a pair counts 4 bytes, a lone surrogate 3 (U+FFFD).

    pre: len(text) <= MAX_TEXT
    pre: _has_surrogate(text)
    post: __return__ == _spec_byte_length(text)  # spec
    """
    return utf8_length(_sound(text))


def byte_length_of_concatenation(left: str, right: str) -> int:
    """Byte counts add up, except where a high surrogate meets a low one: two 3-byte halves become one 4-byte pair.

    pre: len(left) <= 3 and len(right) <= 3
    post: __return__ == _byte_length(left) + _byte_length(right) - (2 if _pair_at_seam(left, right) else 0)  # additive
    """
    return utf8_length(_sound(left + right))


def _pair_at_seam(left: str, right: str) -> bool:
    return left[-1:] != "" and right[:1] != "" and _is_high(left[-1]) and _is_low(right[0])


# --------------------------------------------------------------------------- truncate_utf8 (NORM-7, JS-3)


def truncate(text: str, limit: int) -> str:
    """The original's ``truncateUtf8``.

    pre: 0 <= limit <= 12
    pre: len(text) <= MAX_TEXT
    post: _spec_byte_length(__return__) <= limit  # fits-limit
    post: (__return__ == text) == (_spec_byte_length(text) <= limit)  # unchanged-iff-fits
    post: __return__ == _spec_truncate(text, limit)  # spec
    """
    return truncate_utf8(_sound(text), limit)


# --------------------------------------------------------------------------- is_blank (JS-1)


def blank(text: str) -> bool:
    """JavaScript ``text.trim() === ''``.

    pre: len(text) <= MAX_TEXT
    post: __return__ == _is_js_blank(text)  # spec
    """
    return is_blank(text)


# --------------------------------------------------------------------------- number_to_string (JS-5)


def float_to_string(x: float) -> tuple[float, str]:
    """ECMAScript ``Number::toString`` of a finite double; returns ``(x, text)`` with ``x`` made concrete.

    CrossHair can reason about a symbolic float as a real number: a condition comparing the
    symbolic ``x`` with a double parsed from the text reported ``float_to_string(1e+22)`` as a
    counterexample that does not fail when run (a real near, but not equal to, 1e22).  The
    helper makes the value concrete anyway (``float.__repr__``), so the conditions read the
    concrete double that was converted.

    pre: math.isfinite(x)
    post: float(__return__[1]) == __return__[0]  # round-trip
    post: _number_shape_ok(*__return__)  # layout
    post: _significant_digits(__return__[1]) == _significant_digits(repr(abs(__return__[0])))  # shortest-digits
    """
    x = realize(x)
    return x, number_to_string(x)


def decimal_to_string(digits: int, exponent: int, negative: bool) -> tuple[float, str]:
    """``Number::toString`` of ``x``, the double nearest ``±digits × 10**exponent``; returns ``(x, text)``.

    A symbolic ``float`` argument is explored with small values (CrossHair tried -65.25 … 17.0
    in one run); building the double from a decimal exponent reaches both layout boundaries
    (1e-6 and 1e21), subnormals and the largest doubles.

    pre: 0 < digits < 10**17
    pre: -340 < exponent < 310
    post: math.isinf(__return__[0]) or float(__return__[1]) == __return__[0]  # round-trip
    post: math.isinf(__return__[0]) or _number_shape_ok(*__return__)  # layout
    """
    x = _decimal(digits, exponent, negative)
    return x, number_to_string(x)


def _decimal(digits: int, exponent: int, negative: bool) -> float:
    return float(f"{'-' if negative else ''}{digits}e{exponent}")


def special_float_to_string(x: float) -> str:
    """NaN and the infinities.

    pre: not math.isfinite(x)
    post: __return__ == ("NaN" if math.isnan(x) else "Infinity" if x > 0 else "-Infinity")  # spec
    """
    return number_to_string(x)


def int_to_string(n: int) -> str:
    """An int keeps all its digits (no double rounding).

    post: __return__ == str(n)  # exact
    """
    return number_to_string(n)


# --------------------------------------------------------------------------- json_stringify (NORM-8, JS-4)


def json_text(key: str, text: str, number: int, ratio: float, flag: bool, items: list[int]) -> tuple[Any, str]:
    """``JSON.stringify`` of a JSON-compatible tree built from symbolic leaves; returns ``(tree, text)``.

    (The float leaf is made concrete, for the reason given at :func:`float_to_string`.)

    pre: len(key) <= 3 and len(text) <= 4 and len(items) <= 2
    post: json.loads(__return__[1]) == _spec_json_value(__return__[0])  # round-trip
    post: _json_compact(__return__[1])  # compact
    post: _keys_in_ecmascript_order(__return__[1])  # key-order
    """
    tree = _tree(_sound(key), _sound(text), number, realize(ratio), flag, items)
    return tree, json_stringify(tree)


def _tree(key: str, text: str, number: int, ratio: float, flag: bool, items: list[int]) -> dict[str, Any]:
    return {"t": text, key: [number, ratio, flag, None, items], "7": {"nested": [text, {}], "1": []}}


# --------------------------------------------------------------------------- validation helpers (§3)


def bounded(value: str | int | bytes | None, limit: int) -> str:
    """``bounded_string``: a non-blank ``str`` within ``limit`` Node bytes comes back unchanged, else it raises.

    pre: 1 <= limit <= 8
    pre: not isinstance(value, str) or len(value) <= MAX_TEXT
    post: _bounded_ok(value, limit, __return__)  # spec
    """
    try:
        return "ok:" + bounded_string(_sound(value) if isinstance(value, str) else value, limit, "callId")
    except ToolCallClosureError as exc:
        return f"raised:{exc.code}:{exc.message}"


def _bounded_ok(value: object, limit: int, result: str) -> bool:
    if not isinstance(value, str) or _is_js_blank(value):
        return result == "raised:string_empty:callId must be a non-empty string"
    if _spec_byte_length(value) > limit:
        return result == f"raised:string_too_long:callId exceeds its byte limit ({limit})"
    return result == "ok:" + value


def safe_int(value: int | bool | float | str | None) -> int | None:
    """``safe_positive_int``: an int (not a bool) in 1..2**53-1 comes back unchanged, anything else is None.

    post: __return__ == (value if type(value) is int and 1 <= value <= MAX_SAFE_INTEGER else None)  # spec
    post: __return__ is None or type(__return__) is int  # exact-int
    """
    return safe_positive_int(value)


# --------------------------------------------------------------------------- the call machine (I1)

CALL_EVENTS: Final = ("report_success", "report_error", "report_cancelled", "synthesize_error", "synthesize_cancelled")


def call_event(state: Call, event_index: int) -> str:
    """``Machine.apply_call_event``: the state a call record moves to, or the error the call default raises.

    ``state`` gives the record's state (its provenance is irrelevant to the call machine).

    pre: 0 <= event_index < len(CALL_EVENTS)
    post: state is Call.PENDING or __return__ == "raised:illegal_transition"  # I1-terminal-sticky
    post: state is not Call.PENDING or __return__ == CALL_EVENTS[event_index].partition("_")[2]  # pending-moves
    """
    event = CALL_EVENTS[event_index]
    record = ("c0", "tool", state.state, None)  # a call record: (id, name, state, settlement)
    settlement = (event.partition("_")[2], "reported", "x", None, None, None)  # a settlement record
    try:
        return MACHINE.apply_call_event(record, event, settlement)[2]  # [2]: the state
    except ToolCallClosureError as exc:
        return f"raised:{exc.code}"


# --------------------------------------------------------------------------- guards


def guards(state: AbstractState, op: Operation) -> dict[str, bool]:
    """The table's guards, evaluated by the shipped guard functions, mean what the spec says.

    pre: state.reachable() and op.applicable(state)
    post: __return__ == _expected_guards(state, op)  # meaning
    """
    with NoTracing():  # type: ignore[no-untyped-call]
        return guard_values(state, op)


def _expected_guards(state: AbstractState, op: Operation) -> dict[str, bool]:
    expected = {"handle_not_current": state.generation == 0 or op.handle is not HandleKind.CURRENT}
    expected.update(turn_stale=False, turn_stale_other=True, no_turn=False)  # D20: stale iff not the counter's
    if state.generation == 0:
        return expected
    known = 0 <= op.call < len(state.calls)
    expected["call_unknown"] = not known
    if known:
        expected["call_not_pending"] = state.calls[op.call] is not Call.PENDING
    expected["has_pending_calls"] = Call.PENDING in state.calls
    expected["generation_changed"] = False
    expected["snapshot_foreign"] = False
    expected["snapshot_open"] = state.run is RunState.OPEN
    expected["copy_foreign"] = True
    return expected


# --------------------------------------------------------------------------- one interpreter step (I1–I8)


def interpreter_step(state: AbstractState, op: Operation) -> Step:
    """One real operation on a real closure in an arbitrary reachable state.

    pre: state.reachable() and op.applicable(state)
    post: _terminal_calls_unchanged(__return__)  # I1
    post: _fenced(op, __return__)  # I2
    post: _turn_fenced(op, __return__)  # I2-turns
    post: not __return__.outcome.startswith("raised:") or __return__.after == __return__.before  # I4
    post: _closed_has_no_pending(__return__)  # I5
    post: op.kind not in (OpKind.SNAPSHOT, OpKind.EXPORT) or _pure_read(op, __return__)  # I6
    post: _generation_step(__return__)  # I7
    post: len(__return__.after.diagnostics) <= MAX_DIAGNOSTICS  # I8
    post: _exactly_once(state, op, __return__)  # exactly-once
    post: abstract(__return__.after).consistent()  # inductive
    """
    with NoTracing():  # type: ignore[no-untyped-call]
        return step(state, op)


def _generation_step(st: Step) -> bool:
    """I7: the generation counter moves only on a successful begin, by exactly one."""
    return st.after.generation - st.before.generation == (1 if st.outcome == "begin" else 0)


def _terminal_calls_unchanged(st: Step) -> bool:
    """I1: every call that was terminal before has the same record (state and settlement) after."""
    before = st.before.calls
    return len(st.old_calls) == len(before) and all(
        st.old_calls[i] == call for i, call in enumerate(before) if call.state != "pending"
    )


def _fenced(op: Operation, st: Step) -> bool:
    """I2: a non-current handle changes no call, run state or generation; it adds at most one diagnostic."""
    if op.kind not in HANDLE_OPS or op.handle is HandleKind.CURRENT:
        return True
    grown = len(st.after.diagnostics) - len(st.before.diagnostics)
    return (
        st.after.core() == st.before.core()
        and grown in (0, 1)
        and st.after.diagnostics[: len(st.before.diagnostics)] == st.before.diagnostics
    )


def _turn_fenced(op: Operation, st: Step) -> bool:
    """Fencing covers turns (D20): a begin whose token is not the counter's is rejected as stale_turn and changes no
    call, run state or generation (at most one diagnostic); invalid calls raise first; a current token (or none)
    begins."""
    if op.kind is not OpKind.TURN_BEGIN:
        return True
    if op.status in (Status.INVALID, Status.ABSENT) and op.call >= 1:  # the list repeats its first id
        return st.outcome == "raised:duplicate_call_id" and st.after == st.before
    if op.handle in (HandleKind.CURRENT, HandleKind.MISSING):
        return st.outcome == "begin"
    grown = len(st.after.diagnostics) - len(st.before.diagnostics)
    return (
        st.outcome == "rejected:stale_turn"
        and st.after.core() == st.before.core()
        and grown in (0, 1)
        and st.after.diagnostics[: len(st.before.diagnostics)] == st.before.diagnostics
    )


def _closed_has_no_pending(st: Step) -> bool:
    """I5: a closed generation has no pending call and stays closed; so has a generation a begin superseded."""
    after, before = st.after, st.before
    if after.run in CLOSED_RUNS and any(c.state == "pending" for c in after.calls):
        return False
    if after.generation == before.generation and before.run in CLOSED_RUNS and after.run != before.run:
        return False
    return after.generation == before.generation or all(c.state != "pending" for c in st.old_calls)


def _pure_read(op: Operation, st: Step) -> bool:
    """I6 (and SNAP): snapshot and export change nothing; an export succeeds exactly on a closed generation."""
    if st.after != st.before:
        return False
    if op.kind is OpKind.EXPORT:
        return (st.outcome == "payload") == (st.before.run in CLOSED_RUNS)
    return True


_REPORTED_STATUS: Final = {OpKind.SUCCEED: "success", OpKind.FAIL: "error", OpKind.CANCEL: "cancelled"}


def _exactly_once(state: AbstractState, op: Operation, st: Step) -> bool:
    """An accepted settlement moves exactly the named call from pending to its reported outcome, and only then.

    Conversely a settlement for a terminal call of the current, open generation (current handle,
    valid id) is rejected as ``duplicate_settlement``, and one for a pending call with a valid
    outcome is accepted.
    """
    if op.kind not in SETTLE_OPS:
        return not st.outcome.startswith("accepted:")
    addressed = op.handle is HandleKind.CURRENT and state.run is RunState.OPEN and 0 <= op.call < len(state.calls)
    if st.outcome.startswith("accepted:"):
        if not addressed or st.outcome != "accepted:" + call_id(op.call):
            return False
        changed = [i for i, (a, b) in enumerate(zip(st.before.calls, st.after.calls, strict=True)) if a != b]
        moved = st.after.calls[op.call]
        return (
            moved.state == _REPORTED_STATUS.get(op.kind, op.status.value)
            and changed == [op.call]
            and st.before.calls[op.call].state == "pending"
            and moved.settlement is not None
            and moved.settlement.provenance == "reported"
            and moved.state == moved.settlement.status
            and st.after.run == st.before.run
        )
    if addressed and state.calls[op.call] is not Call.PENDING:
        return st.outcome == "rejected:duplicate_settlement"
    # a valid outcome for a pending call of the current open generation must be accepted
    return not (addressed and op.status in (Status.SUCCESS, Status.ERROR, Status.CANCELLED))
