# mypy: implicit-reexport
# (The generated machine reads this module's globals through it, imported ones included: semantics_.spec_error.)
"""What the table's names mean: guards, effects, results, observed kinds, targets.

Theory of operation
-------------------
``spec/machine.json`` says *when* each step happens; this module says *what*
each named step does.  Each function takes the operation's context and
nothing else, and its signature names the context class it reads
(:mod:`.context`): ``handle_not_current`` reads a ``HandleContext``, so it may
guard settle, close and seal, while ``call_unknown`` reads a
``SettleContext``.  The interpreter checks those signatures against the
table when it compiles it.  The registries at the bottom
(``GUARDS``, ``EFFECTS``, ``RESULTS``, ``OBSERVED``, ``TARGETS``) are what the
interpreter binds the table's names to; compiling a table that names
something missing here, or leaves something here unnamed, fails.

Guards are pure reads.  Effects marked ``caller_code`` in the table run in
unlocked phases and may run caller code; all other effects run under the lock
and never call caller code.  Validation effects raise spec errors (see the
``errors`` of each effect in the table) and change nothing when they do.

Reading caller values follows one rule, :func:`~.reading.read_key` (the
Python form of a JavaScript property read; :mod:`.reading`), as do the
conversions every normalization shares (bounded strings, content, messages);
they are imported here, so the generated machine reads them through this
module (``semantics_.read_key``) and a monkeypatch here reaches both paths.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, cast

from tool_call_closure.absent import ABSENT
from tool_call_closure.ecma import (
    ASCII_JS_WHITESPACE,
)
from tool_call_closure.ecma_plain import plain_json_text
from tool_call_closure.errors import spec_error
from tool_call_closure.machine.context import (
    BeginContext,
    CloseContext,
    Context,
    ExportContext,
    HandleContext,
    Instance,
    MachineView,
    Run,
    SettleContext,
    SnapshotRecord,
    draft_of,
    superseded_snapshot,
)
from tool_call_closure.machine.reading import CLOSE_STATUSES as _CLOSE_STATUSES
from tool_call_closure.machine.reading import (
    MAX_SAFE_INTEGER,
    bounded_string,
    error_message_text,
    is_object,
    message_text,
    observed_status,
    plain_close_reason,
    read_key,
    refuse_unknown_keys,
    safe_positive_int,
    serialize_content,
)
from tool_call_closure.machine.reading import REASON_KEYS as _REASON_KEYS
from tool_call_closure.machine.reading import SETTLED_STATUSES as _SETTLED_STATUSES
from tool_call_closure.machine.reading import SIDE_EFFECT_STATES as _SIDE_EFFECT_STATES
from tool_call_closure.machine.reading import absent as _absent
from tool_call_closure.machine.reading import member as _member
from tool_call_closure.machine.reading import refuse_misread_pairing_id as _refuse_misread_pairing_id
from tool_call_closure.machine.reading import same_plain_string as _same_plain_string
from tool_call_closure.parts import ToolContent
from tool_call_closure.values import (
    ACCEPTED_TWIN,
    CALL_STATE,
    COMPLETE_RECORD,
    CONTENT,
    STATUS,
    Accepted,
    BatchHandle,
    BeginResult,
    CallRecord,
    CloseReasonRecord,
    Limits,
    SettlementRecord,
    Snapshot,
    TurnToken,
    new_begin_result,
    snapshot_view,
    superseding_begin_result,
)

__all__ = [
    "EFFECTS",
    "GUARDS",
    "NO_CALLER_CODE",
    "OBSERVED",
    "RESULTS",
    "TARGETS",
    "TEXTS",
    "bounded_string",
    "is_object",
    "read_key",
    "safe_positive_int",
]

# An outcome's keys are those of a settlement (so a returned settlement may be passed back as an outcome).
_OUTCOME_KEYS: Final = frozenset(
    {"status", "content", "code", "message", "provenance", "sideEffectState", "side_effect_state"}
)


# --------------------------------------------------------------------------- guards


def _run(closure: Instance) -> Run:
    run = closure._run
    assert run is not None, "the table only asks this while a generation exists"
    return run


def handle_not_current(ctx: HandleContext) -> bool:
    run = ctx.closure._run
    return run is None or ctx.handle is not run.handle


# The settle path's guards and commit read the run inline (not through _run()): they run on every
# settlement, and one call less each keeps the settle loop as fast as it was before I9's bookkeeping.


def call_unknown(ctx: SettleContext) -> bool:
    run = ctx.closure._run
    assert run is not None
    return ctx.call_id not in run.index


def call_not_pending(ctx: SettleContext) -> bool:
    run = ctx.closure._run
    assert run is not None
    return run.calls[run.index[ctx.call_id]][CALL_STATE] != ctx.closure._machine.initial_call_state


def moves_media(ctx: SettleContext) -> bool:
    # Deviation D26: only with the flag, and only a success recorded as content parts holding media (parts.is_media).
    settlement = ctx.settlement
    return ctx.closure._limits.text_only_tool_results and settlement is not None and _has_media(settlement[CONTENT])


def _has_media(content: object) -> bool:
    return type(content) is ToolContent and content.has_media


def has_pending_calls(ctx: Context) -> bool:
    # Counted, not read from a stored counter: no interrupted commit can leave a count stale.
    pending = ctx.closure._machine.initial_call_state
    return any(call[CALL_STATE] == pending for call in _run(ctx.closure).calls)


def generation_changed(ctx: BeginContext) -> bool:
    run = ctx.closure._run  # the counter (closure._generation) read from the run: no property call on the hot path
    return (0 if run is None else run.generation) != ctx.start_generation


def turn_stale(ctx: BeginContext) -> bool:
    # Deviation D20: compare-and-set.  Asked under the lock, in the acquisition that commits, so no begin of any
    # thread (or of this begin's own caller code) can land between this comparison and the commit.
    turn = ctx.turn_generation
    run = ctx.closure._run
    return turn is not None and (0 if run is None else run.generation) != turn


def snapshot_foreign(ctx: ExportContext) -> bool:
    # Identity only: id() and `is` never run caller code, so a forged object is refused unread.
    return record_of(ctx.closure, ctx.snapshot_arg) is None


def snapshot_open(ctx: ExportContext) -> bool:
    # Asked after snapshot_foreign; read from the instance's own record, never from the argument.
    record = record_of(ctx.closure, ctx.snapshot_arg)
    assert record is not None
    return not record.closed


def record_of(closure: Instance, candidate: object) -> SnapshotRecord | None:
    """The instance's record of ``candidate`` if it is, by identity, a snapshot this instance handed out.

    A record is a weak reference to its view, removed when the view dies: an
    object that later takes a dead view's address finds no record, or one
    whose view is not the candidate.
    """
    record = closure._records.get(id(candidate))
    if record is None or record() is not candidate:
        return None
    return record


# --------------------------------------------------------------------------- prepare / normalize effects


def validate_calls(ctx: BeginContext) -> None:
    calls = ctx.calls_arg
    limits = ctx.closure._limits
    # The base class's methods read a list/tuple subclass without running its overrides.
    if issubclass(type(calls), list):
        length: Callable[[Any], int] = list.__len__
        item: Callable[[Any, int], Any] = list.__getitem__
    elif issubclass(type(calls), tuple):
        length, item = tuple.__len__, tuple.__getitem__
    else:
        raise spec_error("calls_not_array")
    count = length(calls)
    if count > limits.max_calls:
        raise spec_error("calls_exceed_max", limit=limits.max_calls)
    max_id, max_name = limits.max_id_bytes, limits.max_name_bytes
    pending = ctx.closure._machine.initial_call_state
    # The records the new generation will hold, and id -> position (each entry is appended or refused, so a
    # record's position is its entry's index): built here, once, for start_generation to install.
    seen: dict[str, int] = {}
    validated: list[CallRecord] = []
    absent, whitespace = ABSENT, ASCII_JS_WHITESPACE  # read once: the loop below is begin's hot path
    # An exact list or tuple is read through its own iterator (no override can run), which reads live as the
    # general read does: an entry at an index past the current length is None (call_not_object below).
    entries = iter(calls) if type(calls) is list or type(calls) is tuple else None
    for index in range(count):
        # Read live, as the original does: caller code run by an earlier entry may have shortened the list.
        if entries is not None:  # noqa: SIM108 (the two reads, side by side)
            call = next(entries, None)
        else:
            call = item(calls, index) if index < length(calls) else None
        if type(call) is dict:
            # The common entry, decided as the general path below decides it, in the same order: a plain
            # ASCII str within the limit that is not blank is what bounded_string returns unchanged.
            call_id = call.get("id", absent)
            # (A first character past " " is not JS whitespace: a cheaper "not blank" than the strip, when it holds.)
            if not (type(call_id) is str and call_id.isascii() and len(call_id) <= max_id
                    and (call_id >= "!" or call_id.strip(whitespace))):  # fmt: skip
                call_id = bounded_string(call_id, max_id, "id", index)
            if call_id in seen:
                raise spec_error("duplicate_call_id", id=call_id)
            seen[call_id] = index
            name = call.get("name", absent)
            if not (type(name) is str and name.isascii() and len(name) <= max_name
                    and (name >= "!" or name.strip(whitespace))):  # fmt: skip
                name = bounded_string(name, max_name, "name", index)
            validated.append((call_id, name, pending, None))
            if "call_id" in call:  # without the key there is nothing to compare
                _refuse_misread_pairing_id(call, call_id, index)
            continue
        if not is_object(call):
            raise spec_error("call_not_object", index=index)
        call_id = bounded_string(read_key(call, "id"), max_id, "id", index)
        if call_id in seen:
            raise spec_error("duplicate_call_id", id=call_id)
        seen[call_id] = index
        validated.append((call_id, bounded_string(read_key(call, "name"), max_name, "name", index), pending, None))
        _refuse_misread_pairing_id(call, call_id, index)
    ctx.validated = validated
    ctx.index = seen


def validate_turn(ctx: BeginContext) -> None:
    # Deviation D20.  No caller code runs: the token is judged by type() and read through its slot (TurnToken is
    # final and slotted), so a look-alike object is refused unread, and so is a token whose generation is not a
    # safe integer >= 0 (one built by hand, or rewritten with object.__setattr__).  None means no turn guard.
    turn = ctx.turn
    if turn is not None:
        generation: object = getattr(turn, "generation") if type(turn) is TurnToken else None  # noqa: B009 (untyped)
        if type(generation) is not int and issubclass(type(generation), int) and type(generation) is not bool:
            generation = int.__index__(cast(int, generation))  # an int subclass: its plain value (D5)
        if type(generation) is not int or not 0 <= generation <= MAX_SAFE_INTEGER:
            raise spec_error("turn_invalid")
        ctx.turn_generation = generation
        ctx.reject_generation = generation or None  # a stale_turn rejection reports a generation > 0 (else null)


def validate_call_id(ctx: SettleContext) -> None:
    call_id: object = ctx.call_id  # a caller's value until validated here
    run = ctx.closure._run
    # A plain str that is a key of an installed run's index passed this very check when begin announced it
    # (same rule, same limit: the limits never change), so the answer is the same without running it again.
    # The index of a run never changes, and reading the installed run is one atomic read: no lock needed.
    if not (type(call_id) is str and run is not None and call_id in run.index):
        call_id = bounded_string(call_id, ctx.closure._limits.max_id_bytes, "callId")
    ctx.call_id = call_id


def read_handle_generation(ctx: HandleContext) -> None:
    handle = ctx.handle
    # Read untyped, through a name the type test does not narrow: a handle's generation is a caller's value until
    # checked (object.__setattr__ can forge it), and compiled (mypyc) a read typed int is a check that raises
    # TypeError where the rules answer a rejection.
    untyped: Any = handle
    generation: object = untyped.generation if type(handle) is BatchHandle else read_key(handle, "generation")
    if type(generation) is int and 0 < generation <= MAX_SAFE_INTEGER:
        ctx.reject_generation = generation  # the common case, decided as safe_positive_int decides it
    else:
        ctx.reject_generation = safe_positive_int(generation)


def read_status_preview(ctx: SettleContext) -> None:
    status = ctx.fixed_status
    ctx.preview = status if status is not None else observed_status(read_key(ctx.outcome, "status"))


def normalize_outcome(ctx: SettleContext) -> None:
    # One assignment at the end and no early return: the compiler writes this body into the settle operation.
    limits = ctx.closure._limits
    status = ctx.fixed_status
    settlement: SettlementRecord
    if status == "success":  # succeed
        content = ctx.content  # a plain ASCII str within the limit is stored as is: serialize_content's answer
        if not (type(content) is str and content.isascii() and len(content) <= limits.max_result_bytes):
            content = serialize_content(content, limits.max_result_bytes)
        settlement = ("success", "reported", content, None, None, None)
    elif status is None:  # settle: read the outcome object
        outcome = ctx.outcome
        if not is_object(outcome):
            raise spec_error("outcome_not_object")
        refuse_unknown_keys(outcome, _OUTCOME_KEYS, "outcome_key_unknown")
        status = _member(read_key(outcome, "status"), _SETTLED_STATUSES)
        if status is None:
            raise spec_error("outcome_status_invalid")
        if status == "success":
            content = serialize_content(read_key(outcome, "content"), limits.max_result_bytes)
            settlement = ("success", "reported", content, None, None, None)
        else:
            code: object = read_key(outcome, "code")
            code = status if _absent(code) else bounded_string(code, limits.max_code_bytes, "outcome.code")
            default = _default_message(ctx.closure._machine.texts, status)
            message = message_text(read_key(outcome, "message"), default, limits.max_message_bytes)
            settlement = (status, "reported", None, code, message, None)
    else:  # fail or cancel: the code is checked before the message is converted (NORM-5)
        code = ctx.code
        code = ctx.default_code if _absent(code) else bounded_string(code, limits.max_code_bytes, "outcome.code")
        default = _default_message(ctx.closure._machine.texts, status)
        if ctx.message_is_error:
            message = error_message_text(ctx.message, default, limits.max_message_bytes)
        else:
            message = message_text(ctx.message, default, limits.max_message_bytes)
        settlement = (status, "reported", None, code, message, None)
    ctx.settlement = settlement


def _default_message(texts: Mapping[str, str], status: str) -> str:
    return texts["settle_error_message"] if status == "error" else texts["cancel_message"]


def normalize_close_reason(ctx: CloseContext) -> None:
    limits = ctx.closure._limits
    texts = ctx.closure._machine.texts
    # The common reason (none, or a plain dict of known keys and str or None values) is read directly; the
    # record is the one read_close_reason makes of it (tests/test_close_reason.py), which reads every other.
    record = plain_close_reason(ctx.reason, limits, texts)
    ctx.close_reason = read_close_reason(ctx.reason, limits, texts) if record is None else record


def read_close_reason(reason: object, limits: Limits, texts: Mapping[str, str]) -> CloseReasonRecord:
    """The close reason's record, read from any caller value by the general rules (read_key, D1, D2, D10)."""
    if _absent(reason):
        reason = {}  # deviation D1: None is the absent reason
    elif not is_object(reason):
        raise spec_error("reason_not_object")  # deviation D2
    refuse_unknown_keys(reason, _REASON_KEYS, "reason_key_unknown")
    raw_status = read_key(reason, "status")
    status = "cancelled" if _absent(raw_status) else _member(raw_status, _CLOSE_STATUSES)
    if status is None:
        raise spec_error("close_status_invalid")
    raw_code = read_key(reason, "code")
    code = status if _absent(raw_code) else bounded_string(raw_code, limits.max_code_bytes, "reason.code")
    camel = read_key(reason, "sideEffectState")
    snake = read_key(reason, "side_effect_state")
    if not _absent(camel) and not _absent(snake) and not _same_plain_string(camel, snake):
        raise spec_error("side_effect_state_conflict")
    raw_state = snake if _absent(camel) else camel
    side_effect_state = "unknown" if _absent(raw_state) else _member(raw_state, _SIDE_EFFECT_STATES)
    if side_effect_state is None:
        raise spec_error("side_effect_state_invalid")
    default = texts["close_error_message"] if status == "error" else texts["cancel_message"]
    message = message_text(read_key(reason, "message"), default, limits.max_message_bytes)
    return (status, code, message, side_effect_state)


def default_snapshot(ctx: ExportContext) -> None:
    if _absent(ctx.snapshot_arg):
        # The original's default parameter: a snapshot operation of its own (it takes the lock itself).
        ctx.snapshot_arg = ctx.closure.snapshot()


# --------------------------------------------------------------------------- commit effects (under the lock)


def _close_calls(machine: MachineView, run: Run, reason: CloseReasonRecord, event: str) -> None:
    status, code, message, side_effect_state = reason
    settlement: Any = (status, "synthetic", None, code, message, side_effect_state)  # one, shared: Any, so compiled too
    pending = machine.initial_call_state
    calls = run.calls  # the draft's own list: the installed run is not touched
    for position, call in enumerate(calls):
        if call[CALL_STATE] == pending:
            calls[position] = machine.apply_call_event(call, event, settlement)


def supersede(ctx: BeginContext) -> None:
    closure = ctx.closure
    machine = closure._machine
    run = closure._run  # the superseded generation: the new run replaces it at install; it is not written
    assert run is not None
    status = machine.effect_run_to["supersede"]
    texts = machine.texts
    reason: CloseReasonRecord = (status, texts["superseded_code"], closure._superseded_message, "unknown")
    event = machine.call_events["supersede"][status]
    pending = machine.initial_call_state
    # Its pending calls are closed in its snapshot, the one place they are seen again: the call machine's move is
    # resolved now, one for all of them (they share the pending state), and applied when the snapshot is built.
    target = machine.effect_call_next["supersede"].get((pending, status))
    calls = tuple(run.calls)  # frozen before the generation number changes (SUP-3); the view is built on first read
    if target is None:
        _close_calls(machine, run.draft(), reason, event)  # raises the table's error if a call is pending
    closed = status in machine.closed
    diagnostics = tuple(run.diagnostics)
    ctx.superseded = (
        superseded_snapshot,
        (closure._records, run.generation, closed, reason, pending, target, calls, diagnostics),
    )


def start_generation(ctx: BeginContext) -> None:
    run = ctx.closure._run
    generation = (0 if run is None else run.generation) + 1  # the installed run's counter: moves at install
    # The validated calls, all pending, and their index: built by validate_calls, this operation's own.
    ctx.draft = Run(generation, BatchHandle(generation), ctx.validated, ctx.index, [])  # fresh diagnostics (DIAG-2)


def record_settlement(ctx: SettleContext) -> None:
    machine = ctx.closure._machine
    run = ctx.closure._run
    assert run is not None
    settlement = ctx.settlement
    assert settlement is not None
    position = run.index[ctx.call_id]
    call = run.calls[position]
    identifier, name, state, _before = call
    status = settlement[STATUS]
    # The call machine's move, resolved when the table was compiled (one lookup); a move the table lacks goes
    # through apply_call_event, which raises the table's error for it.
    target = machine.effect_call_next["record_settlement"].get((state, status))
    if target is None:
        call = machine.apply_call_event(call, machine.call_events["record_settlement"][status], settlement)
    else:
        call = (identifier, name, target, settlement)
    ctx.staged_call = (position, call)  # installed as one list-item assignment


def record_media_moved(ctx: SettleContext) -> None:
    # Deviation D26, after record_settlement: the staged call goes into the draft run, with a new copy of the
    # generation's diagnostics holding one more while there is room (DIAG-1); the draft is installed with one
    # assignment (I9), the installed run untouched until then.
    staged = ctx.staged_call
    assert staged is not None
    aside = draft_of(ctx)
    aside.calls[staged[0]] = staged[1]
    diagnostics = aside.diagnostics
    if len(diagnostics) < ctx.closure._limits.max_diagnostics:
        aside.diagnostics = [*diagnostics, ("media_moved", ctx.call_id, aside.generation, "success")]
    ctx.staged_call = None  # the draft holds it


def synthesize_pending(ctx: CloseContext) -> None:
    machine = ctx.closure._machine
    reason = ctx.close_reason
    assert reason is not None
    _close_calls(machine, draft_of(ctx), reason, machine.call_events["synthesize_pending"][reason[STATUS]])


def record_close_reason(ctx: CloseContext) -> None:
    draft_of(ctx).close_reason = ctx.close_reason


def record_complete(ctx: Context) -> None:
    draft_of(ctx).close_reason = COMPLETE_RECORD


def render_payload(ctx: ExportContext) -> None:
    # The instance's own record of the snapshot (snapshot_foreign refused everything else): the
    # argument is never read, so nothing done to it, and no caller code, reaches the payload.
    record = record_of(ctx.closure, ctx.snapshot_arg)
    assert record is not None
    ctx.payload = ctx.renderer(record.calls, record.memo)  # a new list of new items on every export (ADP-4)


# --------------------------------------------------------------------------- results


def take_snapshot(closure: Instance, run: Run | None = None) -> Snapshot:
    """A snapshot of ``run`` (default: the installed run): a new view, and the instance's own record of it.

    The record keeps the run's call records (plain tuples: nobody can change
    them); the view handed out is built from them, every object in it new
    (:func:`~tool_call_closure.values.snapshot_view`: its call and diagnostic
    views when first read), so nothing done to the view or to anything in it
    reaches what exports render.  Both are registered
    before the commit installs anything; a registration of a snapshot that is
    never returned is unobservable (nobody holds the view, and the entry goes
    with it).
    """
    if run is None:
        run = closure._run
    assert run is not None
    calls = tuple(run.calls)
    closed = run.state in closure._machine.closed
    view = snapshot_view(run.generation, closed, run.close_reason, calls, tuple(run.diagnostics))
    # The identity registry exports consult (SNAP-5): the record is a weak reference to the view.
    closure._records[id(view)] = SnapshotRecord(view, closed, calls, closure._records)
    return view


def _begin_result(ctx: BeginContext) -> BeginResult:
    run = ctx.draft if ctx.draft is not None else _run(ctx.closure)
    superseded = ctx.superseded  # its snapshot is built on first read (values.superseding_begin_result)
    return (
        new_begin_result(run.generation, run.handle, None)
        if superseded is None
        else superseding_begin_result(run.generation, run.handle, superseded)
    )


def _accepted(ctx: SettleContext) -> Accepted:
    assert ctx.settlement is not None
    assert ctx.reject_generation is not None
    # A view of its own: the caller may do anything to it without reaching the record.  Built in place, as
    # values._builder builds views (its settlement view: on first read), so the generated code makes no call.
    view: Any = ACCEPTED_TWIN()
    view.generation = ctx.reject_generation
    view.call_id = ctx.call_id
    view._deferred = ctx.settlement
    view.__class__ = Accepted
    accepted: Accepted = view
    return accepted


def _snapshot(ctx: Context) -> Snapshot:
    return take_snapshot(ctx.closure, ctx.draft)


def _null(ctx: Context) -> None:
    return None


def _generation(ctx: Context) -> int:
    return _run(ctx.closure).generation


def _turn_token(ctx: Context) -> TurnToken:
    return TurnToken(ctx.closure._generation)  # the counter: 0 before the first begin (deviation D20)


def _payload(ctx: ExportContext) -> list[dict[str, Any]]:
    return ctx.payload


# --------------------------------------------------------------------------- registries

GUARDS: Final[Mapping[str, Callable[[Any], bool]]] = {
    "handle_not_current": handle_not_current,
    "call_unknown": call_unknown,
    "call_not_pending": call_not_pending,
    "has_pending_calls": has_pending_calls,
    "moves_media": moves_media,
    "generation_changed": generation_changed,
    "turn_stale": turn_stale,
    "snapshot_foreign": snapshot_foreign,
    "snapshot_open": snapshot_open,
}

EFFECTS: Final[Mapping[str, Callable[[Any], None]]] = {
    "validate_turn": validate_turn,
    "validate_calls": validate_calls,
    "validate_call_id": validate_call_id,
    "read_handle_generation": read_handle_generation,
    "read_status_preview": read_status_preview,
    "normalize_outcome": normalize_outcome,
    "normalize_close_reason": normalize_close_reason,
    "default_snapshot": default_snapshot,
    "supersede": supersede,
    "start_generation": start_generation,
    "record_settlement": record_settlement,
    "record_media_moved": record_media_moved,
    "synthesize_pending": synthesize_pending,
    "record_close_reason": record_close_reason,
    "record_complete": record_complete,
    "render_payload": render_payload,
}

RESULTS: Final[Mapping[str, Callable[[Any], Any]]] = {
    "begin_result": _begin_result,
    "accepted": _accepted,
    "snapshot": _snapshot,
    "null": _null,
    "generation": _generation,
    "turn_token": _turn_token,
    "payload": _payload,
}


def _observed_preview(ctx: SettleContext) -> str | None:
    return ctx.preview


def _observed_normalized(ctx: SettleContext) -> str | None:
    return ctx.settlement[STATUS] if ctx.settlement is not None else None


def _observed_none(ctx: Context) -> None:
    return None


OBSERVED: Final[Mapping[str, Callable[[Any], str | None]]] = {
    "preview": _observed_preview,
    "normalized": _observed_normalized,
    "none": _observed_none,
}

# The table's ``texts`` that the semantics (and ``_closure``) read: default messages and codes.
TEXTS: Final = frozenset(
    {
        "settle_error_message",
        "cancel_message",
        "close_error_message",
        "superseded_message",
        "superseded_code",
        "fail_code",
        "cancel_code",
    }
)


def _target_reason_status(ctx: CloseContext) -> str:
    assert ctx.close_reason is not None, "normalize_close_reason ran before the commit"
    return ctx.close_reason[STATUS]


TARGETS: Final[Mapping[str, Callable[[Any], str]]] = {
    "reason.status": _target_reason_status,
}


# --------------------------------------------------------------------------- effects without caller code, per call
#
# An unlocked phase exists so that caller code never runs under the lock.  For many calls it runs none:
# a plain string is stored as is, a plain dict of strings is read without calling anything.  For such
# a call the compiled operation runs the phase inside the lock segments around it, which then are one
# acquisition (spec/README.md §14, "One acquisition"): the same rows fire, in the same order, and no
# other operation can land between the admission and the commit — one of the interleavings the spec
# allows anyway.  Each check answers True only when the effect provably reads nothing but plain values.


def _plain_text_or_absent(value: object) -> bool:
    return type(value) is str or value is None or value is ABSENT


def normalize_outcome_runs_no_caller_code(ctx: SettleContext) -> bool:
    # succeed: a plain str content is stored as is (NORM-8), and plain data (exact dicts, lists, strings,
    # safe numbers: ecma_plain.plain_json_text) is converted to its JSON text here, reading nothing of the caller's;
    # the text then takes the content's place, and normalize stores it as is: the same settlement, with the
    # same byte limit checked there.  fail or cancel: a plain str code and message (an exception's text would
    # run its __str__).  settle reads an outcome object (keys, getters): never.
    status = ctx.fixed_status
    content = ctx.content
    if status == "success" and type(content) is not str:
        content = plain_json_text(content, ctx.closure._limits.max_result_bytes)  # None: not plain, or too large
        if content is not None:
            ctx.content = content
    plain_content = status == "success" and type(content) is str
    return plain_content or (
        status in ("error", "cancelled") and _plain_text_or_absent(ctx.code) and _plain_text_or_absent(ctx.message)
    )


def normalize_close_reason_runs_no_caller_code(ctx: CloseContext) -> bool:
    # No reason, or a plain dict of plain str keys and plain str (or None) values: read without calling anything.
    # The dict is checked and normalized as this operation's own copy (a plain dict's copy runs no caller code),
    # which then takes its place: another thread that changes the caller's dict meanwhile reaches neither.
    reason = ctx.reason
    if type(reason) is dict:
        reason = dict(reason)
    items = reason.items() if type(reason) is dict else ()
    plain = type(reason) is dict and all(type(k) is str and _plain_text_or_absent(v) for k, v in items)
    if plain:
        ctx.reason = reason
    return reason is None or reason is ABSENT or plain


NO_CALLER_CODE: Final[Mapping[str, Callable[[Any], bool]]] = {
    "normalize_outcome": normalize_outcome_runs_no_caller_code,
    "normalize_close_reason": normalize_close_reason_runs_no_caller_code,
}
"""Effect (marked ``caller_code`` in the table) -> whether, for this call, it runs no caller code at all."""
