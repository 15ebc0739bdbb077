# mypy: warn-unreachable=false
"""The transition table 1.0.0, compiled: one function per operation.

Theory of operation
-------------------
Generated: do not edit.  This is the machine that runs.  ``tool_call_closure.machine.compiler``
writes the table (``spec/machine.json``) out as Python: each operation's
phases in order, each phase's rows as an ``if``/``elif`` chain, the bodies
of the semantics (``machine/semantics.py``) inlined.  The public class calls
``enter_<op>`` here; the definitional walk (``Machine.walk``) is its oracle
on every vector and every step the bounded model check reaches, and
``TCC_MACHINE=walk`` runs the walk instead (breakpoints in the semantics fire).

Regenerate after changing the table, the semantics, the contexts or the
compiler (``tests/test_generated.py`` fails until you do)::

    python -m tool_call_closure.machine.regenerate

The two digests below name what this was generated from; when either does
not match the files present, the interpreter ignores this module and
generates the machine at import, as it does for any other table.

Names: guard_X / effect_X / result_X / observed_X / target_X are the semantics of the table's X,
called; a body marked 'inlined from' is that function's body, its locals prefixed and its globals
read from its module (semantics_...); reject(closure, generation, reason, call_id, observed) records
the diagnostic and returns the Rejection; the draft is the run a commit builds aside (draft_of(ctx),
or draft_from(closure) into the local draft), install puts it in place with one assignment; each run
of locked phases holds the instance's lock once (reentry from the thread holding it raises
reentry_error instead of waiting on itself).  enter_<op> keeps the operation's context fields as
local variables (ctx.X is written X) when every name it uses is inlined.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import tool_call_closure.machine.semantics as semantics_
from tool_call_closure.absent import ABSENT
from tool_call_closure.errors import spec_error
from tool_call_closure.machine.context import (
    BeginContext,
    CloseContext,
    ExportContext,
    Instance,
    ReadContext,
    Renderer,
    SealContext,
    SettleContext,
    draft_from,
    install_fields,
    reentry_error,
)
from tool_call_closure.machine.context import record_rejection as reject
from tool_call_closure.machine.run import Run
from tool_call_closure.values import CallRecord, CloseReasonRecord, SettlementRecord, SnapshotSource

# What this module was generated from: the table's text, and the sources of the semantics, the contexts
# and the code generator (sha256; see tool_call_closure.machine.interpreter.checked_in_module).
TABLE_SHA256: Final = "b8d68afc2f119447ffbe9719d74c29385f68843e3171756e29e9f22e4950b518"
SOURCES_SHA256: Final = "b35c77f270c4907655dda62e7f81264a44aa1b4961076a88f7918853c4df1ee2"


def spill_BeginContext(
    closure: Instance,
    method: str,
    calls_arg: object,
    turn: object,
    draft: Run | None,
    staged_call: tuple[int, CallRecord] | None,
    reject_generation: int | None,
    start_generation: Any,
    turn_generation: int | None,
    validated: list[CallRecord],
    index: dict[str, int],
    superseded: SnapshotSource | None,
) -> BeginContext:
    """A BeginContext holding the fields a compiled operation keeps as locals."""
    ctx = BeginContext(closure, method, calls_arg, turn)
    (
        ctx.draft,
        ctx.staged_call,
        ctx.reject_generation,
        ctx.start_generation,
        ctx.turn_generation,
        ctx.validated,
        ctx.index,
        ctx.superseded,
    ) = draft, staged_call, reject_generation, start_generation, turn_generation, validated, index, superseded
    return ctx


def enter_begin(closure: Instance, method: str, calls_arg: object, turn: object = None) -> Any:
    """begin: prepare -> recheck -> commit."""
    # the fields of a BeginContext, as locals: the parameters, and what the phases compute
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    reject_generation: int | None = None
    start_generation: Any = 0 if closure._run is None else closure._run.generation
    turn_generation: int | None = None
    validated: list[CallRecord] = []
    index: dict[str, int] = {}
    superseded: SnapshotSource | None = None
    trace = closure._trace  # a list while the rows that fire are recorded (coverage), else None
    # --- phase prepare (unlocked: caller code may run)
    # begin.prepare.validate  (BEG-1, BEG-2, BEG-3, BEG-4, BEG-6, BEG-7, D20)
    if trace is not None:
        trace.append("begin.prepare.validate")
    # effect validate_turn: inlined from tool_call_closure.machine.semantics.validate_turn
    effect_validate_turn__turn = turn
    if effect_validate_turn__turn is not None:
        effect_validate_turn__generation: object = (
            getattr(effect_validate_turn__turn, "generation")
            if type(effect_validate_turn__turn) is semantics_.TurnToken
            else None
        )
        if (
            type(effect_validate_turn__generation) is not int
            and issubclass(type(effect_validate_turn__generation), int)
            and (type(effect_validate_turn__generation) is not bool)
        ):
            effect_validate_turn__generation = int.__index__(semantics_.cast(int, effect_validate_turn__generation))
        if (
            type(effect_validate_turn__generation) is not int
            or not 0 <= effect_validate_turn__generation <= semantics_.MAX_SAFE_INTEGER
        ):
            raise semantics_.spec_error("turn_invalid")
        turn_generation = effect_validate_turn__generation
        reject_generation = effect_validate_turn__generation or None
    # effect validate_calls: inlined from tool_call_closure.machine.semantics.validate_calls
    effect_validate_calls__calls = calls_arg
    effect_validate_calls__limits = closure._limits
    if issubclass(type(effect_validate_calls__calls), list):
        effect_validate_calls__length: semantics_.Callable[[semantics_.Any], int] = list.__len__
        effect_validate_calls__item: semantics_.Callable[[semantics_.Any, int], semantics_.Any] = list.__getitem__
    elif issubclass(type(effect_validate_calls__calls), tuple):
        effect_validate_calls__length, effect_validate_calls__item = (tuple.__len__, tuple.__getitem__)
    else:
        raise semantics_.spec_error("calls_not_array")
    effect_validate_calls__count = effect_validate_calls__length(effect_validate_calls__calls)
    if effect_validate_calls__count > effect_validate_calls__limits.max_calls:
        raise semantics_.spec_error("calls_exceed_max", limit=effect_validate_calls__limits.max_calls)
    effect_validate_calls__max_id, effect_validate_calls__max_name = (
        effect_validate_calls__limits.max_id_bytes,
        effect_validate_calls__limits.max_name_bytes,
    )
    effect_validate_calls__pending = closure._machine.initial_call_state
    effect_validate_calls__seen: dict[str, int] = {}
    effect_validate_calls__validated: list[semantics_.CallRecord] = []
    effect_validate_calls__absent, effect_validate_calls__whitespace = (
        semantics_.ABSENT,
        semantics_.ASCII_JS_WHITESPACE,
    )
    effect_validate_calls__entries = (
        iter(effect_validate_calls__calls)
        if type(effect_validate_calls__calls) is list or type(effect_validate_calls__calls) is tuple
        else None
    )
    for effect_validate_calls__index in range(effect_validate_calls__count):
        if effect_validate_calls__entries is not None:
            effect_validate_calls__call = next(effect_validate_calls__entries, None)
        else:
            effect_validate_calls__call = (
                effect_validate_calls__item(effect_validate_calls__calls, effect_validate_calls__index)
                if effect_validate_calls__index < effect_validate_calls__length(effect_validate_calls__calls)
                else None
            )
        if type(effect_validate_calls__call) is dict:
            effect_validate_calls__call_id = effect_validate_calls__call.get("id", effect_validate_calls__absent)
            if not (
                type(effect_validate_calls__call_id) is str
                and effect_validate_calls__call_id.isascii()
                and (len(effect_validate_calls__call_id) <= effect_validate_calls__max_id)
                and (
                    effect_validate_calls__call_id >= "!"
                    or effect_validate_calls__call_id.strip(effect_validate_calls__whitespace)
                )
            ):
                effect_validate_calls__call_id = semantics_.bounded_string(
                    effect_validate_calls__call_id, effect_validate_calls__max_id, "id", effect_validate_calls__index
                )
            if effect_validate_calls__call_id in effect_validate_calls__seen:
                raise semantics_.spec_error("duplicate_call_id", id=effect_validate_calls__call_id)
            effect_validate_calls__seen[effect_validate_calls__call_id] = effect_validate_calls__index
            effect_validate_calls__name = effect_validate_calls__call.get("name", effect_validate_calls__absent)
            if not (
                type(effect_validate_calls__name) is str
                and effect_validate_calls__name.isascii()
                and (len(effect_validate_calls__name) <= effect_validate_calls__max_name)
                and (
                    effect_validate_calls__name >= "!"
                    or effect_validate_calls__name.strip(effect_validate_calls__whitespace)
                )
            ):
                effect_validate_calls__name = semantics_.bounded_string(
                    effect_validate_calls__name, effect_validate_calls__max_name, "name", effect_validate_calls__index
                )
            effect_validate_calls__validated.append(
                (effect_validate_calls__call_id, effect_validate_calls__name, effect_validate_calls__pending, None)
            )
            if "call_id" in effect_validate_calls__call:
                semantics_._refuse_misread_pairing_id(
                    effect_validate_calls__call, effect_validate_calls__call_id, effect_validate_calls__index
                )
            continue
        if not semantics_.is_object(effect_validate_calls__call):
            raise semantics_.spec_error("call_not_object", index=effect_validate_calls__index)
        effect_validate_calls__call_id = semantics_.bounded_string(
            semantics_.read_key(effect_validate_calls__call, "id"),
            effect_validate_calls__max_id,
            "id",
            effect_validate_calls__index,
        )
        if effect_validate_calls__call_id in effect_validate_calls__seen:
            raise semantics_.spec_error("duplicate_call_id", id=effect_validate_calls__call_id)
        effect_validate_calls__seen[effect_validate_calls__call_id] = effect_validate_calls__index
        effect_validate_calls__validated.append(
            (
                effect_validate_calls__call_id,
                semantics_.bounded_string(
                    semantics_.read_key(effect_validate_calls__call, "name"),
                    effect_validate_calls__max_name,
                    "name",
                    effect_validate_calls__index,
                ),
                effect_validate_calls__pending,
                None,
            )
        )
        semantics_._refuse_misread_pairing_id(
            effect_validate_calls__call, effect_validate_calls__call_id, effect_validate_calls__index
        )
    validated = effect_validate_calls__validated
    index = effect_validate_calls__seen
    # no result: on to the next phase
    # --- phases recheck, commit: under the lock, in one acquisition
    lock = closure._lock
    if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
        raise reentry_error("begin")
    with lock:
        # --- phase recheck (locked)
        # guard turn_stale: inlined from tool_call_closure.machine.semantics.turn_stale
        guard_turn_stale__turn = turn_generation
        guard_turn_stale__run = closure._run
        if (
            guard_turn_stale__turn is not None
            and (0 if guard_turn_stale__run is None else guard_turn_stale__run.generation) != guard_turn_stale__turn
        ):
            # begin.recheck.stale_turn  (D20)
            if trace is not None:
                trace.append("begin.recheck.stale_turn")
            # observed none: inlined from tool_call_closure.machine.semantics._observed_none
            return reject(closure, reject_generation, "stale_turn", None, None)
        else:
            # guard generation_changed: inlined from tool_call_closure.machine.semantics.generation_changed
            guard_generation_changed__run = closure._run
            if (
                0 if guard_generation_changed__run is None else guard_generation_changed__run.generation
            ) != start_generation:
                # begin.recheck.generation_changed  (BEG-5, RE-10)
                if trace is not None:
                    trace.append("begin.recheck.generation_changed")
                raise spec_error("generation_changed")
        # --- phase commit (locked)
        run = closure._run
        state = run.state if run is not None else "none"
        if state in ("none", "complete", "error", "cancelled"):
            # begin.commit.start  (SUP-4, SUP-5, SUP-6, GEN-1)
            if trace is not None:
                trace.append("begin.commit.start")
            # effect start_generation: inlined from tool_call_closure.machine.semantics.start_generation
            effect_start_generation__run = closure._run
            effect_start_generation__generation = (
                0 if effect_start_generation__run is None else effect_start_generation__run.generation
            ) + 1
            draft = semantics_.Run(
                effect_start_generation__generation,
                semantics_.BatchHandle(effect_start_generation__generation),
                validated,
                index,
                [],
            )
            if draft is None:  # the draft: made on first use, installed with the rest of the commit
                draft = draft_from(closure)
            draft.state = "open"
            # result begin_result: inlined from tool_call_closure.machine.semantics._begin_result
            result_begin_result__run = draft if draft is not None else semantics_._run(closure)
            result_begin_result__superseded = superseded
            # built from the draft, before the install
            result = (
                semantics_.new_begin_result(result_begin_result__run.generation, result_begin_result__run.handle, None)
                if result_begin_result__superseded is None
                else semantics_.superseding_begin_result(
                    result_begin_result__run.generation,
                    result_begin_result__run.handle,
                    result_begin_result__superseded,
                )
            )
            # the commit takes effect: one assignment, after everything that can fail
            install_fields(closure, draft, staged_call)
            return result
        elif state == "open":
            # begin.commit.supersede  (SUP-1, SUP-2, SUP-3, SUP-5, SUP-6)
            if trace is not None:
                trace.append("begin.commit.supersede")
            # effect supersede: inlined from tool_call_closure.machine.semantics.supersede
            effect_supersede__closure = closure
            effect_supersede__machine = effect_supersede__closure._machine
            effect_supersede__run = effect_supersede__closure._run
            assert effect_supersede__run is not None
            effect_supersede__status = effect_supersede__machine.effect_run_to["supersede"]
            effect_supersede__texts = effect_supersede__machine.texts
            effect_supersede__reason: semantics_.CloseReasonRecord = (
                effect_supersede__status,
                effect_supersede__texts["superseded_code"],
                effect_supersede__closure._superseded_message,
                "unknown",
            )
            effect_supersede__event = effect_supersede__machine.call_events["supersede"][effect_supersede__status]
            effect_supersede__pending = effect_supersede__machine.initial_call_state
            effect_supersede__target = effect_supersede__machine.effect_call_next["supersede"].get(
                (effect_supersede__pending, effect_supersede__status)
            )
            effect_supersede__calls = tuple(effect_supersede__run.calls)
            if effect_supersede__target is None:
                semantics_._close_calls(
                    effect_supersede__machine,
                    effect_supersede__run.draft(),
                    effect_supersede__reason,
                    effect_supersede__event,
                )
            effect_supersede__closed = effect_supersede__status in effect_supersede__machine.closed
            effect_supersede__diagnostics = tuple(effect_supersede__run.diagnostics)
            superseded = (
                semantics_.superseded_snapshot,
                (
                    effect_supersede__closure._records,
                    effect_supersede__run.generation,
                    effect_supersede__closed,
                    effect_supersede__reason,
                    effect_supersede__pending,
                    effect_supersede__target,
                    effect_supersede__calls,
                    effect_supersede__diagnostics,
                ),
            )
            # effect start_generation: inlined from tool_call_closure.machine.semantics.start_generation
            effect_start_generation__run = closure._run
            effect_start_generation__generation = (
                0 if effect_start_generation__run is None else effect_start_generation__run.generation
            ) + 1
            draft = semantics_.Run(
                effect_start_generation__generation,
                semantics_.BatchHandle(effect_start_generation__generation),
                validated,
                index,
                [],
            )
            if draft is None:  # the draft: made on first use, installed with the rest of the commit
                draft = draft_from(closure)
            draft.state = "open"
            # result begin_result: inlined from tool_call_closure.machine.semantics._begin_result
            result_begin_result__run = draft if draft is not None else semantics_._run(closure)
            result_begin_result__superseded = superseded
            # built from the draft, before the install
            result = (
                semantics_.new_begin_result(result_begin_result__run.generation, result_begin_result__run.handle, None)
                if result_begin_result__superseded is None
                else semantics_.superseding_begin_result(
                    result_begin_result__run.generation,
                    result_begin_result__run.handle,
                    result_begin_result__superseded,
                )
            )
            # the commit takes effect: one assignment, after everything that can fail
            install_fields(closure, draft, staged_call)
            return result
    # no row ended the operation: the table's default
    run = closure._run
    raise spec_error("illegal_transition", operation="begin", state=run.state if run is not None else "none")


def run_begin(ctx: BeginContext) -> Any:
    """begin on a context object: enter_begin of its inputs."""
    return enter_begin(ctx.closure, ctx.method, ctx.calls_arg, ctx.turn)


def spill_SettleContext(
    closure: Instance,
    method: str,
    handle: object,
    call_id: Any,
    outcome: Any,
    fixed_status: str | None,
    content: Any,
    message: Any,
    message_is_error: bool,
    code: Any,
    default_code: str,
    draft: Run | None,
    staged_call: tuple[int, CallRecord] | None,
    reject_generation: int | None,
    preview: str | None,
    settlement: SettlementRecord | None,
) -> SettleContext:
    """A SettleContext holding the fields a compiled operation keeps as locals."""
    ctx = SettleContext(
        closure, method, handle, call_id, outcome, fixed_status, content, message, message_is_error, code, default_code
    )
    ctx.draft, ctx.staged_call, ctx.reject_generation, ctx.preview, ctx.settlement = (
        draft,
        staged_call,
        reject_generation,
        preview,
        settlement,
    )
    return ctx


def enter_settle(
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
) -> Any:
    """settle: prepare -> admit -> normalize -> recheck -> commit."""
    # the fields of a SettleContext, as locals: the parameters, and what the phases compute
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    reject_generation: int | None = None
    preview: str | None = None
    settlement: SettlementRecord | None = None
    # the annotated locals of the inlined bodies
    effect_normalize_outcome__settlement: semantics_.SettlementRecord
    trace = closure._trace  # a list while the rows that fire are recorded (coverage), else None
    # --- phase prepare (unlocked: caller code may run)
    # settle.prepare.read  (SET-1, SET-2, SET-3)
    if trace is not None:
        trace.append("settle.prepare.read")
    # effect validate_call_id: inlined from tool_call_closure.machine.semantics.validate_call_id
    effect_validate_call_id__call_id: object = call_id
    effect_validate_call_id__run = closure._run
    if not (
        type(effect_validate_call_id__call_id) is str
        and effect_validate_call_id__run is not None
        and (effect_validate_call_id__call_id in effect_validate_call_id__run.index)
    ):
        effect_validate_call_id__call_id = semantics_.bounded_string(
            effect_validate_call_id__call_id, closure._limits.max_id_bytes, "callId"
        )
    call_id = effect_validate_call_id__call_id
    # effect read_handle_generation: inlined from tool_call_closure.machine.semantics.read_handle_generation
    effect_read_handle_generation__handle = handle
    effect_read_handle_generation__untyped: semantics_.Any = effect_read_handle_generation__handle
    effect_read_handle_generation__generation: object = (
        effect_read_handle_generation__untyped.generation
        if type(effect_read_handle_generation__handle) is semantics_.BatchHandle
        else semantics_.read_key(effect_read_handle_generation__handle, "generation")
    )
    if (
        type(effect_read_handle_generation__generation) is int
        and 0 < effect_read_handle_generation__generation <= semantics_.MAX_SAFE_INTEGER
    ):
        reject_generation = effect_read_handle_generation__generation
    else:
        reject_generation = semantics_.safe_positive_int(effect_read_handle_generation__generation)
    # effect read_status_preview: inlined from tool_call_closure.machine.semantics.read_status_preview
    effect_read_status_preview__status = fixed_status
    preview = (
        effect_read_status_preview__status
        if effect_read_status_preview__status is not None
        else semantics_.observed_status(semantics_.read_key(outcome, "status"))
    )
    # no result: on to the next phase
    # the unlocked phase between runs no caller code for this call: one acquisition for all three
    # no_caller_code normalize_outcome: inlined from
    # tool_call_closure.machine.semantics.normalize_outcome_runs_no_caller_code
    check_normalize_outcome__status = fixed_status
    check_normalize_outcome__content = content
    if check_normalize_outcome__status == "success" and type(check_normalize_outcome__content) is not str:
        check_normalize_outcome__content = semantics_.plain_json_text(
            check_normalize_outcome__content, closure._limits.max_result_bytes
        )
        if check_normalize_outcome__content is not None:
            content = check_normalize_outcome__content
    check_normalize_outcome__plain_content = (
        check_normalize_outcome__status == "success" and type(check_normalize_outcome__content) is str
    )
    if check_normalize_outcome__plain_content or (
        check_normalize_outcome__status in ("error", "cancelled")
        and semantics_._plain_text_or_absent(code)
        and semantics_._plain_text_or_absent(message)
    ):
        # --- phases admit, normalize, recheck, commit: under the lock, in one acquisition
        lock = closure._lock
        if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
            raise reentry_error("settle")
        with lock:
            # --- phase admit (locked)
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                # settle.admit.no_run  (SET-4, DIAG-2)
                if trace is not None:
                    trace.append("settle.admit.no_run")
                # observed preview: inlined from tool_call_closure.machine.semantics._observed_preview
                return reject(closure, reject_generation, "stale_generation", call_id, preview)
            elif state == "open":
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # settle.admit.stale  (SET-4, DIAG-3)
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    # observed preview: inlined from tool_call_closure.machine.semantics._observed_preview
                    return reject(closure, reject_generation, "stale_generation", call_id, preview)
                else:
                    # guard call_unknown: inlined from tool_call_closure.machine.semantics.call_unknown
                    guard_call_unknown__run = closure._run
                    assert guard_call_unknown__run is not None
                    if call_id not in guard_call_unknown__run.index:
                        # settle.admit.unknown  (SET-6)
                        if trace is not None:
                            trace.append("settle.admit.unknown")
                        # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                        return reject(closure, reject_generation, "unknown_call", call_id, None)
                    else:
                        # guard call_not_pending: inlined from tool_call_closure.machine.semantics.call_not_pending
                        guard_call_not_pending__run = closure._run
                        assert guard_call_not_pending__run is not None
                        if (
                            guard_call_not_pending__run.calls[guard_call_not_pending__run.index[call_id]][
                                semantics_.CALL_STATE
                            ]
                            != closure._machine.initial_call_state
                        ):
                            # settle.admit.duplicate  (SET-7)
                            if trace is not None:
                                trace.append("settle.admit.duplicate")
                            # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                            return reject(closure, reject_generation, "duplicate_settlement", call_id, None)
            elif state in ("complete", "error", "cancelled"):
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # settle.admit.stale  (SET-4, DIAG-3)
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    # observed preview: inlined from tool_call_closure.machine.semantics._observed_preview
                    return reject(closure, reject_generation, "stale_generation", call_id, preview)
                else:
                    # settle.admit.closed  (SET-5, CLO-7, CONV-4)
                    if trace is not None:
                        trace.append("settle.admit.closed")
                    # observed preview: inlined from tool_call_closure.machine.semantics._observed_preview
                    return reject(closure, reject_generation, "run_closed", call_id, preview)
            # --- phase normalize (unlocked, run under the lock here: it runs no caller code for this call)
            # settle.normalize.outcome  (SET-8)
            if trace is not None:
                trace.append("settle.normalize.outcome")
            # effect normalize_outcome: inlined from tool_call_closure.machine.semantics.normalize_outcome
            effect_normalize_outcome__limits = closure._limits
            effect_normalize_outcome__status = fixed_status
            if effect_normalize_outcome__status == "success":
                effect_normalize_outcome__content = content
                if not (
                    type(effect_normalize_outcome__content) is str
                    and effect_normalize_outcome__content.isascii()
                    and (len(effect_normalize_outcome__content) <= effect_normalize_outcome__limits.max_result_bytes)
                ):
                    effect_normalize_outcome__content = semantics_.serialize_content(
                        effect_normalize_outcome__content, effect_normalize_outcome__limits.max_result_bytes
                    )
                effect_normalize_outcome__settlement = (
                    "success",
                    "reported",
                    effect_normalize_outcome__content,
                    None,
                    None,
                    None,
                )
            elif effect_normalize_outcome__status is None:
                effect_normalize_outcome__outcome = outcome
                if not semantics_.is_object(effect_normalize_outcome__outcome):
                    raise semantics_.spec_error("outcome_not_object")
                semantics_.refuse_unknown_keys(
                    effect_normalize_outcome__outcome, semantics_._OUTCOME_KEYS, "outcome_key_unknown"
                )
                effect_normalize_outcome__status = semantics_._member(
                    semantics_.read_key(effect_normalize_outcome__outcome, "status"), semantics_._SETTLED_STATUSES
                )
                if effect_normalize_outcome__status is None:
                    raise semantics_.spec_error("outcome_status_invalid")
                if effect_normalize_outcome__status == "success":
                    effect_normalize_outcome__content = semantics_.serialize_content(
                        semantics_.read_key(effect_normalize_outcome__outcome, "content"),
                        effect_normalize_outcome__limits.max_result_bytes,
                    )
                    effect_normalize_outcome__settlement = (
                        "success",
                        "reported",
                        effect_normalize_outcome__content,
                        None,
                        None,
                        None,
                    )
                else:
                    effect_normalize_outcome__code: object = semantics_.read_key(
                        effect_normalize_outcome__outcome, "code"
                    )
                    effect_normalize_outcome__code = (
                        effect_normalize_outcome__status
                        if semantics_._absent(effect_normalize_outcome__code)
                        else semantics_.bounded_string(
                            effect_normalize_outcome__code,
                            effect_normalize_outcome__limits.max_code_bytes,
                            "outcome.code",
                        )
                    )
                    effect_normalize_outcome__default = semantics_._default_message(
                        closure._machine.texts, effect_normalize_outcome__status
                    )
                    effect_normalize_outcome__message = semantics_.message_text(
                        semantics_.read_key(effect_normalize_outcome__outcome, "message"),
                        effect_normalize_outcome__default,
                        effect_normalize_outcome__limits.max_message_bytes,
                    )
                    effect_normalize_outcome__settlement = (
                        effect_normalize_outcome__status,
                        "reported",
                        None,
                        effect_normalize_outcome__code,
                        effect_normalize_outcome__message,
                        None,
                    )
            else:
                effect_normalize_outcome__code = code
                effect_normalize_outcome__code = (
                    default_code
                    if semantics_._absent(effect_normalize_outcome__code)
                    else semantics_.bounded_string(
                        effect_normalize_outcome__code, effect_normalize_outcome__limits.max_code_bytes, "outcome.code"
                    )
                )
                effect_normalize_outcome__default = semantics_._default_message(
                    closure._machine.texts, effect_normalize_outcome__status
                )
                if message_is_error:
                    effect_normalize_outcome__message = semantics_.error_message_text(
                        message, effect_normalize_outcome__default, effect_normalize_outcome__limits.max_message_bytes
                    )
                else:
                    effect_normalize_outcome__message = semantics_.message_text(
                        message, effect_normalize_outcome__default, effect_normalize_outcome__limits.max_message_bytes
                    )
                effect_normalize_outcome__settlement = (
                    effect_normalize_outcome__status,
                    "reported",
                    None,
                    effect_normalize_outcome__code,
                    effect_normalize_outcome__message,
                    None,
                )
            settlement = effect_normalize_outcome__settlement
            # no result: on to the next phase
            # --- phase recheck (locked)
            # nothing to evaluate: every row's guard was found false earlier in this acquisition, in every
            # state that reaches here, and nothing has been written since
            # --- phase commit (locked)
            # not reached in state none, complete, error, cancelled: an earlier phase of this acquisition ended there
            # guard moves_media: inlined from tool_call_closure.machine.semantics.moves_media
            guard_moves_media__settlement = settlement
            if (
                closure._limits.text_only_tool_results
                and guard_moves_media__settlement is not None
                and semantics_._has_media(guard_moves_media__settlement[semantics_.CONTENT])
            ):
                # settle.commit.media_moved  (SET-10, RE-5, D26)
                if trace is not None:
                    trace.append("settle.commit.media_moved")
                # effect record_settlement: inlined from tool_call_closure.machine.semantics.record_settlement
                effect_record_settlement__machine = closure._machine
                effect_record_settlement__run = closure._run
                assert effect_record_settlement__run is not None
                effect_record_settlement__settlement = settlement
                assert effect_record_settlement__settlement is not None
                effect_record_settlement__position = effect_record_settlement__run.index[call_id]
                effect_record_settlement__call = effect_record_settlement__run.calls[effect_record_settlement__position]
                (
                    effect_record_settlement__identifier,
                    effect_record_settlement__name,
                    effect_record_settlement__state,
                    effect_record_settlement___before,
                ) = effect_record_settlement__call
                effect_record_settlement__status = effect_record_settlement__settlement[semantics_.STATUS]
                effect_record_settlement__target = effect_record_settlement__machine.effect_call_next[
                    "record_settlement"
                ].get((effect_record_settlement__state, effect_record_settlement__status))
                if effect_record_settlement__target is None:
                    effect_record_settlement__call = effect_record_settlement__machine.apply_call_event(
                        effect_record_settlement__call,
                        effect_record_settlement__machine.call_events["record_settlement"][
                            effect_record_settlement__status
                        ],
                        effect_record_settlement__settlement,
                    )
                else:
                    effect_record_settlement__call = (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__target,
                        effect_record_settlement__settlement,
                    )
                staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                # effect record_media_moved: inlined from tool_call_closure.machine.semantics.record_media_moved
                effect_record_media_moved__staged = staged_call
                assert effect_record_media_moved__staged is not None
                effect_record_media_moved__aside = draft if draft is not None else (draft := draft_from(closure))
                effect_record_media_moved__aside.calls[effect_record_media_moved__staged[0]] = (
                    effect_record_media_moved__staged[1]
                )
                effect_record_media_moved__diagnostics = effect_record_media_moved__aside.diagnostics
                if len(effect_record_media_moved__diagnostics) < closure._limits.max_diagnostics:
                    effect_record_media_moved__aside.diagnostics = [
                        *effect_record_media_moved__diagnostics,
                        ("media_moved", call_id, effect_record_media_moved__aside.generation, "success"),
                    ]
                staged_call = None
                # result accepted: inlined from tool_call_closure.machine.semantics._accepted
                assert settlement is not None
                assert reject_generation is not None
                result_accepted__view: semantics_.Any = semantics_.ACCEPTED_TWIN()
                result_accepted__view.generation = reject_generation
                result_accepted__view.call_id = call_id
                result_accepted__view._deferred = settlement
                result_accepted__view.__class__ = semantics_.Accepted
                result_accepted__accepted: semantics_.Accepted = result_accepted__view
                result = result_accepted__accepted  # built from the draft, before the install
                # the commit takes effect: one assignment, after everything that can fail
                install_fields(closure, draft, staged_call)
                return result
            else:
                # settle.commit.record  (SET-10, RE-5)
                if trace is not None:
                    trace.append("settle.commit.record")
                # effect record_settlement: inlined from tool_call_closure.machine.semantics.record_settlement
                effect_record_settlement__machine = closure._machine
                effect_record_settlement__run = closure._run
                assert effect_record_settlement__run is not None
                effect_record_settlement__settlement = settlement
                assert effect_record_settlement__settlement is not None
                effect_record_settlement__position = effect_record_settlement__run.index[call_id]
                effect_record_settlement__call = effect_record_settlement__run.calls[effect_record_settlement__position]
                (
                    effect_record_settlement__identifier,
                    effect_record_settlement__name,
                    effect_record_settlement__state,
                    effect_record_settlement___before,
                ) = effect_record_settlement__call
                effect_record_settlement__status = effect_record_settlement__settlement[semantics_.STATUS]
                effect_record_settlement__target = effect_record_settlement__machine.effect_call_next[
                    "record_settlement"
                ].get((effect_record_settlement__state, effect_record_settlement__status))
                if effect_record_settlement__target is None:
                    effect_record_settlement__call = effect_record_settlement__machine.apply_call_event(
                        effect_record_settlement__call,
                        effect_record_settlement__machine.call_events["record_settlement"][
                            effect_record_settlement__status
                        ],
                        effect_record_settlement__settlement,
                    )
                else:
                    effect_record_settlement__call = (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__target,
                        effect_record_settlement__settlement,
                    )
                staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                # result accepted: inlined from tool_call_closure.machine.semantics._accepted
                assert settlement is not None
                assert reject_generation is not None
                result_accepted__view = semantics_.ACCEPTED_TWIN()
                result_accepted__view.generation = reject_generation
                result_accepted__view.call_id = call_id
                result_accepted__view._deferred = settlement
                result_accepted__view.__class__ = semantics_.Accepted
                result_accepted__accepted = result_accepted__view
                result = result_accepted__accepted  # built from the draft, before the install
                # the commit takes effect: one assignment, after everything that can fail
                install_fields(closure, draft, staged_call)
                return result
    else:
        # --- phase admit: under the lock, in one acquisition
        lock = closure._lock
        if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
            raise reentry_error("settle")
        with lock:
            # --- phase admit (locked)
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                # settle.admit.no_run  (SET-4, DIAG-2)
                if trace is not None:
                    trace.append("settle.admit.no_run")
                # observed preview: inlined from tool_call_closure.machine.semantics._observed_preview
                return reject(closure, reject_generation, "stale_generation", call_id, preview)
            elif state == "open":
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # settle.admit.stale  (SET-4, DIAG-3)
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    # observed preview: inlined from tool_call_closure.machine.semantics._observed_preview
                    return reject(closure, reject_generation, "stale_generation", call_id, preview)
                else:
                    # guard call_unknown: inlined from tool_call_closure.machine.semantics.call_unknown
                    guard_call_unknown__run = closure._run
                    assert guard_call_unknown__run is not None
                    if call_id not in guard_call_unknown__run.index:
                        # settle.admit.unknown  (SET-6)
                        if trace is not None:
                            trace.append("settle.admit.unknown")
                        # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                        return reject(closure, reject_generation, "unknown_call", call_id, None)
                    else:
                        # guard call_not_pending: inlined from tool_call_closure.machine.semantics.call_not_pending
                        guard_call_not_pending__run = closure._run
                        assert guard_call_not_pending__run is not None
                        if (
                            guard_call_not_pending__run.calls[guard_call_not_pending__run.index[call_id]][
                                semantics_.CALL_STATE
                            ]
                            != closure._machine.initial_call_state
                        ):
                            # settle.admit.duplicate  (SET-7)
                            if trace is not None:
                                trace.append("settle.admit.duplicate")
                            # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                            return reject(closure, reject_generation, "duplicate_settlement", call_id, None)
            elif state in ("complete", "error", "cancelled"):
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # settle.admit.stale  (SET-4, DIAG-3)
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    # observed preview: inlined from tool_call_closure.machine.semantics._observed_preview
                    return reject(closure, reject_generation, "stale_generation", call_id, preview)
                else:
                    # settle.admit.closed  (SET-5, CLO-7, CONV-4)
                    if trace is not None:
                        trace.append("settle.admit.closed")
                    # observed preview: inlined from tool_call_closure.machine.semantics._observed_preview
                    return reject(closure, reject_generation, "run_closed", call_id, preview)
        # --- phase normalize (unlocked: caller code may run)
        # settle.normalize.outcome  (SET-8)
        if trace is not None:
            trace.append("settle.normalize.outcome")
        # effect normalize_outcome: inlined from tool_call_closure.machine.semantics.normalize_outcome
        effect_normalize_outcome__limits = closure._limits
        effect_normalize_outcome__status = fixed_status
        if effect_normalize_outcome__status == "success":
            effect_normalize_outcome__content = content
            if not (
                type(effect_normalize_outcome__content) is str
                and effect_normalize_outcome__content.isascii()
                and (len(effect_normalize_outcome__content) <= effect_normalize_outcome__limits.max_result_bytes)
            ):
                effect_normalize_outcome__content = semantics_.serialize_content(
                    effect_normalize_outcome__content, effect_normalize_outcome__limits.max_result_bytes
                )
            effect_normalize_outcome__settlement = (
                "success",
                "reported",
                effect_normalize_outcome__content,
                None,
                None,
                None,
            )
        elif effect_normalize_outcome__status is None:
            effect_normalize_outcome__outcome = outcome
            if not semantics_.is_object(effect_normalize_outcome__outcome):
                raise semantics_.spec_error("outcome_not_object")
            semantics_.refuse_unknown_keys(
                effect_normalize_outcome__outcome, semantics_._OUTCOME_KEYS, "outcome_key_unknown"
            )
            effect_normalize_outcome__status = semantics_._member(
                semantics_.read_key(effect_normalize_outcome__outcome, "status"), semantics_._SETTLED_STATUSES
            )
            if effect_normalize_outcome__status is None:
                raise semantics_.spec_error("outcome_status_invalid")
            if effect_normalize_outcome__status == "success":
                effect_normalize_outcome__content = semantics_.serialize_content(
                    semantics_.read_key(effect_normalize_outcome__outcome, "content"),
                    effect_normalize_outcome__limits.max_result_bytes,
                )
                effect_normalize_outcome__settlement = (
                    "success",
                    "reported",
                    effect_normalize_outcome__content,
                    None,
                    None,
                    None,
                )
            else:
                effect_normalize_outcome__code = semantics_.read_key(effect_normalize_outcome__outcome, "code")
                effect_normalize_outcome__code = (
                    effect_normalize_outcome__status
                    if semantics_._absent(effect_normalize_outcome__code)
                    else semantics_.bounded_string(
                        effect_normalize_outcome__code, effect_normalize_outcome__limits.max_code_bytes, "outcome.code"
                    )
                )
                effect_normalize_outcome__default = semantics_._default_message(
                    closure._machine.texts, effect_normalize_outcome__status
                )
                effect_normalize_outcome__message = semantics_.message_text(
                    semantics_.read_key(effect_normalize_outcome__outcome, "message"),
                    effect_normalize_outcome__default,
                    effect_normalize_outcome__limits.max_message_bytes,
                )
                effect_normalize_outcome__settlement = (
                    effect_normalize_outcome__status,
                    "reported",
                    None,
                    effect_normalize_outcome__code,
                    effect_normalize_outcome__message,
                    None,
                )
        else:
            effect_normalize_outcome__code = code
            effect_normalize_outcome__code = (
                default_code
                if semantics_._absent(effect_normalize_outcome__code)
                else semantics_.bounded_string(
                    effect_normalize_outcome__code, effect_normalize_outcome__limits.max_code_bytes, "outcome.code"
                )
            )
            effect_normalize_outcome__default = semantics_._default_message(
                closure._machine.texts, effect_normalize_outcome__status
            )
            if message_is_error:
                effect_normalize_outcome__message = semantics_.error_message_text(
                    message, effect_normalize_outcome__default, effect_normalize_outcome__limits.max_message_bytes
                )
            else:
                effect_normalize_outcome__message = semantics_.message_text(
                    message, effect_normalize_outcome__default, effect_normalize_outcome__limits.max_message_bytes
                )
            effect_normalize_outcome__settlement = (
                effect_normalize_outcome__status,
                "reported",
                None,
                effect_normalize_outcome__code,
                effect_normalize_outcome__message,
                None,
            )
        settlement = effect_normalize_outcome__settlement
        # no result: on to the next phase
        # --- phases recheck, commit: under the lock, in one acquisition
        lock = closure._lock
        if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
            raise reentry_error("settle")
        with lock:
            # --- phase recheck (locked)
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass  # no row: on to the next phase
            elif state == "open":
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # settle.recheck.stale  (SET-9, RE-3)
                    if trace is not None:
                        trace.append("settle.recheck.stale")
                    # observed normalized: inlined from tool_call_closure.machine.semantics._observed_normalized
                    return reject(
                        closure,
                        reject_generation,
                        "stale_generation",
                        call_id,
                        settlement[semantics_.STATUS] if settlement is not None else None,
                    )
                else:
                    # guard call_not_pending: inlined from tool_call_closure.machine.semantics.call_not_pending
                    guard_call_not_pending__run = closure._run
                    assert guard_call_not_pending__run is not None
                    if (
                        guard_call_not_pending__run.calls[guard_call_not_pending__run.index[call_id]][
                            semantics_.CALL_STATE
                        ]
                        != closure._machine.initial_call_state
                    ):
                        # settle.recheck.duplicate  (SET-9, RE-1, RE-6)
                        if trace is not None:
                            trace.append("settle.recheck.duplicate")
                        # observed normalized: inlined from tool_call_closure.machine.semantics._observed_normalized
                        return reject(
                            closure,
                            reject_generation,
                            "duplicate_settlement",
                            call_id,
                            settlement[semantics_.STATUS] if settlement is not None else None,
                        )
            elif state in ("complete", "error", "cancelled"):
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # settle.recheck.stale  (SET-9, RE-3)
                    if trace is not None:
                        trace.append("settle.recheck.stale")
                    # observed normalized: inlined from tool_call_closure.machine.semantics._observed_normalized
                    return reject(
                        closure,
                        reject_generation,
                        "stale_generation",
                        call_id,
                        settlement[semantics_.STATUS] if settlement is not None else None,
                    )
                else:
                    # settle.recheck.closed  (SET-9, RE-2, RE-8)
                    if trace is not None:
                        trace.append("settle.recheck.closed")
                    # observed normalized: inlined from tool_call_closure.machine.semantics._observed_normalized
                    return reject(
                        closure,
                        reject_generation,
                        "run_closed",
                        call_id,
                        settlement[semantics_.STATUS] if settlement is not None else None,
                    )
            # --- phase commit (locked)
            # not reached in state complete, error, cancelled: an earlier phase of this acquisition ended there
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass  # no row: on to the next phase
            elif state == "open":
                # guard moves_media: inlined from tool_call_closure.machine.semantics.moves_media
                guard_moves_media__settlement = settlement
                if (
                    closure._limits.text_only_tool_results
                    and guard_moves_media__settlement is not None
                    and semantics_._has_media(guard_moves_media__settlement[semantics_.CONTENT])
                ):
                    # settle.commit.media_moved  (SET-10, RE-5, D26)
                    if trace is not None:
                        trace.append("settle.commit.media_moved")
                    # effect record_settlement: inlined from tool_call_closure.machine.semantics.record_settlement
                    effect_record_settlement__machine = closure._machine
                    effect_record_settlement__run = closure._run
                    assert effect_record_settlement__run is not None
                    effect_record_settlement__settlement = settlement
                    assert effect_record_settlement__settlement is not None
                    effect_record_settlement__position = effect_record_settlement__run.index[call_id]
                    effect_record_settlement__call = effect_record_settlement__run.calls[
                        effect_record_settlement__position
                    ]
                    (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__state,
                        effect_record_settlement___before,
                    ) = effect_record_settlement__call
                    effect_record_settlement__status = effect_record_settlement__settlement[semantics_.STATUS]
                    effect_record_settlement__target = effect_record_settlement__machine.effect_call_next[
                        "record_settlement"
                    ].get((effect_record_settlement__state, effect_record_settlement__status))
                    if effect_record_settlement__target is None:
                        effect_record_settlement__call = effect_record_settlement__machine.apply_call_event(
                            effect_record_settlement__call,
                            effect_record_settlement__machine.call_events["record_settlement"][
                                effect_record_settlement__status
                            ],
                            effect_record_settlement__settlement,
                        )
                    else:
                        effect_record_settlement__call = (
                            effect_record_settlement__identifier,
                            effect_record_settlement__name,
                            effect_record_settlement__target,
                            effect_record_settlement__settlement,
                        )
                    staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                    # effect record_media_moved: inlined from tool_call_closure.machine.semantics.record_media_moved
                    effect_record_media_moved__staged = staged_call
                    assert effect_record_media_moved__staged is not None
                    effect_record_media_moved__aside = draft if draft is not None else (draft := draft_from(closure))
                    effect_record_media_moved__aside.calls[effect_record_media_moved__staged[0]] = (
                        effect_record_media_moved__staged[1]
                    )
                    effect_record_media_moved__diagnostics = effect_record_media_moved__aside.diagnostics
                    if len(effect_record_media_moved__diagnostics) < closure._limits.max_diagnostics:
                        effect_record_media_moved__aside.diagnostics = [
                            *effect_record_media_moved__diagnostics,
                            ("media_moved", call_id, effect_record_media_moved__aside.generation, "success"),
                        ]
                    staged_call = None
                    # result accepted: inlined from tool_call_closure.machine.semantics._accepted
                    assert settlement is not None
                    assert reject_generation is not None
                    result_accepted__view = semantics_.ACCEPTED_TWIN()
                    result_accepted__view.generation = reject_generation
                    result_accepted__view.call_id = call_id
                    result_accepted__view._deferred = settlement
                    result_accepted__view.__class__ = semantics_.Accepted
                    result_accepted__accepted = result_accepted__view
                    result = result_accepted__accepted  # built from the draft, before the install
                    # the commit takes effect: one assignment, after everything that can fail
                    install_fields(closure, draft, staged_call)
                    return result
                else:
                    # settle.commit.record  (SET-10, RE-5)
                    if trace is not None:
                        trace.append("settle.commit.record")
                    # effect record_settlement: inlined from tool_call_closure.machine.semantics.record_settlement
                    effect_record_settlement__machine = closure._machine
                    effect_record_settlement__run = closure._run
                    assert effect_record_settlement__run is not None
                    effect_record_settlement__settlement = settlement
                    assert effect_record_settlement__settlement is not None
                    effect_record_settlement__position = effect_record_settlement__run.index[call_id]
                    effect_record_settlement__call = effect_record_settlement__run.calls[
                        effect_record_settlement__position
                    ]
                    (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__state,
                        effect_record_settlement___before,
                    ) = effect_record_settlement__call
                    effect_record_settlement__status = effect_record_settlement__settlement[semantics_.STATUS]
                    effect_record_settlement__target = effect_record_settlement__machine.effect_call_next[
                        "record_settlement"
                    ].get((effect_record_settlement__state, effect_record_settlement__status))
                    if effect_record_settlement__target is None:
                        effect_record_settlement__call = effect_record_settlement__machine.apply_call_event(
                            effect_record_settlement__call,
                            effect_record_settlement__machine.call_events["record_settlement"][
                                effect_record_settlement__status
                            ],
                            effect_record_settlement__settlement,
                        )
                    else:
                        effect_record_settlement__call = (
                            effect_record_settlement__identifier,
                            effect_record_settlement__name,
                            effect_record_settlement__target,
                            effect_record_settlement__settlement,
                        )
                    staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                    # result accepted: inlined from tool_call_closure.machine.semantics._accepted
                    assert settlement is not None
                    assert reject_generation is not None
                    result_accepted__view = semantics_.ACCEPTED_TWIN()
                    result_accepted__view.generation = reject_generation
                    result_accepted__view.call_id = call_id
                    result_accepted__view._deferred = settlement
                    result_accepted__view.__class__ = semantics_.Accepted
                    result_accepted__accepted = result_accepted__view
                    result = result_accepted__accepted  # built from the draft, before the install
                    # the commit takes effect: one assignment, after everything that can fail
                    install_fields(closure, draft, staged_call)
                    return result
    # no row ended the operation: the table's default
    run = closure._run
    raise spec_error("illegal_transition", operation="settle", state=run.state if run is not None else "none")


def run_settle(ctx: SettleContext) -> Any:
    """settle on a context object: enter_settle of its inputs."""
    return enter_settle(
        ctx.closure,
        ctx.method,
        ctx.handle,
        ctx.call_id,
        ctx.outcome,
        ctx.fixed_status,
        ctx.content,
        ctx.message,
        ctx.message_is_error,
        ctx.code,
        ctx.default_code,
    )


def spill_CloseContext(
    closure: Instance,
    method: str,
    handle: object,
    reason: object,
    draft: Run | None,
    staged_call: tuple[int, CallRecord] | None,
    reject_generation: int | None,
    close_reason: CloseReasonRecord | None,
) -> CloseContext:
    """A CloseContext holding the fields a compiled operation keeps as locals."""
    ctx = CloseContext(closure, method, handle, reason)
    ctx.draft, ctx.staged_call, ctx.reject_generation, ctx.close_reason = (
        draft,
        staged_call,
        reject_generation,
        close_reason,
    )
    return ctx


def enter_close(closure: Instance, method: str, handle: object, reason: object) -> Any:
    """close: prepare -> admit -> normalize -> recheck -> commit."""
    # the fields of a CloseContext, as locals: the parameters, and what the phases compute
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    reject_generation: int | None = None
    close_reason: CloseReasonRecord | None = None
    trace = closure._trace  # a list while the rows that fire are recorded (coverage), else None
    # --- phase prepare (unlocked: caller code may run)
    # close.prepare.read  (CLO-1)
    if trace is not None:
        trace.append("close.prepare.read")
    # effect read_handle_generation: inlined from tool_call_closure.machine.semantics.read_handle_generation
    effect_read_handle_generation__handle = handle
    effect_read_handle_generation__untyped: semantics_.Any = effect_read_handle_generation__handle
    effect_read_handle_generation__generation: object = (
        effect_read_handle_generation__untyped.generation
        if type(effect_read_handle_generation__handle) is semantics_.BatchHandle
        else semantics_.read_key(effect_read_handle_generation__handle, "generation")
    )
    if (
        type(effect_read_handle_generation__generation) is int
        and 0 < effect_read_handle_generation__generation <= semantics_.MAX_SAFE_INTEGER
    ):
        reject_generation = effect_read_handle_generation__generation
    else:
        reject_generation = semantics_.safe_positive_int(effect_read_handle_generation__generation)
    # no result: on to the next phase
    # the unlocked phase between runs no caller code for this call: one acquisition for all three
    # no_caller_code normalize_close_reason: inlined from
    # tool_call_closure.machine.semantics.normalize_close_reason_runs_no_caller_code
    check_normalize_close_reason__reason = reason
    if type(check_normalize_close_reason__reason) is dict:
        check_normalize_close_reason__reason = dict(check_normalize_close_reason__reason)
    check_normalize_close_reason__items = (
        check_normalize_close_reason__reason.items() if type(check_normalize_close_reason__reason) is dict else ()
    )
    check_normalize_close_reason__plain = type(check_normalize_close_reason__reason) is dict and all(
        (
            type(check_normalize_close_reason__k) is str
            and semantics_._plain_text_or_absent(check_normalize_close_reason__v)
            for check_normalize_close_reason__k, check_normalize_close_reason__v in check_normalize_close_reason__items
        )
    )
    if check_normalize_close_reason__plain:
        reason = check_normalize_close_reason__reason
    if (
        check_normalize_close_reason__reason is None
        or check_normalize_close_reason__reason is semantics_.ABSENT
        or check_normalize_close_reason__plain
    ):
        # --- phases admit, normalize, recheck, commit: under the lock, in one acquisition
        lock = closure._lock
        if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
            raise reentry_error("close")
        with lock:
            # --- phase admit (locked)
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                # close.admit.no_run  (CLO-1)
                if trace is not None:
                    trace.append("close.admit.no_run")
                # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                return reject(closure, reject_generation, "stale_generation", None, None)
            elif state == "open":
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # close.admit.stale  (CLO-1)
                    if trace is not None:
                        trace.append("close.admit.stale")
                    # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                    return reject(closure, reject_generation, "stale_generation", None, None)
            elif state in ("complete", "error", "cancelled"):
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # close.admit.stale  (CLO-1)
                    if trace is not None:
                        trace.append("close.admit.stale")
                    # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                    return reject(closure, reject_generation, "stale_generation", None, None)
                else:
                    # close.admit.idempotent  (CLO-2)
                    if trace is not None:
                        trace.append("close.admit.idempotent")
                    # result snapshot: inlined from tool_call_closure.machine.semantics._snapshot
                    return semantics_.take_snapshot(closure, draft)
            # --- phase normalize (unlocked, run under the lock here: it runs no caller code for this call)
            # close.normalize.reason  (CLO-3, CLO-4)
            if trace is not None:
                trace.append("close.normalize.reason")
            # effect normalize_close_reason: inlined from tool_call_closure.machine.semantics.normalize_close_reason
            effect_normalize_close_reason__limits = closure._limits
            effect_normalize_close_reason__texts = closure._machine.texts
            effect_normalize_close_reason__record = semantics_.plain_close_reason(
                reason, effect_normalize_close_reason__limits, effect_normalize_close_reason__texts
            )
            close_reason = (
                semantics_.read_close_reason(
                    reason, effect_normalize_close_reason__limits, effect_normalize_close_reason__texts
                )
                if effect_normalize_close_reason__record is None
                else effect_normalize_close_reason__record
            )
            # no result: on to the next phase
            # --- phase recheck (locked)
            # nothing to evaluate: every row's guard was found false earlier in this acquisition, in every
            # state that reaches here, and nothing has been written since
            # --- phase commit (locked)
            # not reached in state none, complete, error, cancelled: an earlier phase of this acquisition ended there
            # close.commit.close  (CLO-6, CLO-7)
            if trace is not None:
                trace.append("close.commit.close")
            # effect synthesize_pending: inlined from tool_call_closure.machine.semantics.synthesize_pending
            effect_synthesize_pending__machine = closure._machine
            effect_synthesize_pending__reason = close_reason
            assert effect_synthesize_pending__reason is not None
            semantics_._close_calls(
                effect_synthesize_pending__machine,
                draft if draft is not None else (draft := draft_from(closure)),
                effect_synthesize_pending__reason,
                effect_synthesize_pending__machine.call_events["synthesize_pending"][
                    effect_synthesize_pending__reason[semantics_.STATUS]
                ],
            )
            # effect record_close_reason: inlined from tool_call_closure.machine.semantics.record_close_reason
            (draft if draft is not None else (draft := draft_from(closure))).close_reason = close_reason
            # target reason.status: inlined from tool_call_closure.machine.semantics._target_reason_status
            assert close_reason is not None, "normalize_close_reason ran before the commit"
            target = close_reason[semantics_.STATUS]
            if target not in ("error", "cancelled"):
                raise spec_error("illegal_transition", operation="close", state=target)
            if draft is None:  # the draft: made on first use, installed with the rest of the commit
                draft = draft_from(closure)
            draft.state = target
            # result snapshot: inlined from tool_call_closure.machine.semantics._snapshot
            result = semantics_.take_snapshot(closure, draft)  # built from the draft, before the install
            # the commit takes effect: one assignment, after everything that can fail
            install_fields(closure, draft, staged_call)
            return result
    else:
        # --- phase admit: under the lock, in one acquisition
        lock = closure._lock
        if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
            raise reentry_error("close")
        with lock:
            # --- phase admit (locked)
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                # close.admit.no_run  (CLO-1)
                if trace is not None:
                    trace.append("close.admit.no_run")
                # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                return reject(closure, reject_generation, "stale_generation", None, None)
            elif state == "open":
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # close.admit.stale  (CLO-1)
                    if trace is not None:
                        trace.append("close.admit.stale")
                    # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                    return reject(closure, reject_generation, "stale_generation", None, None)
            elif state in ("complete", "error", "cancelled"):
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # close.admit.stale  (CLO-1)
                    if trace is not None:
                        trace.append("close.admit.stale")
                    # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                    return reject(closure, reject_generation, "stale_generation", None, None)
                else:
                    # close.admit.idempotent  (CLO-2)
                    if trace is not None:
                        trace.append("close.admit.idempotent")
                    # result snapshot: inlined from tool_call_closure.machine.semantics._snapshot
                    return semantics_.take_snapshot(closure, draft)
        # --- phase normalize (unlocked: caller code may run)
        # close.normalize.reason  (CLO-3, CLO-4)
        if trace is not None:
            trace.append("close.normalize.reason")
        # effect normalize_close_reason: inlined from tool_call_closure.machine.semantics.normalize_close_reason
        effect_normalize_close_reason__limits = closure._limits
        effect_normalize_close_reason__texts = closure._machine.texts
        effect_normalize_close_reason__record = semantics_.plain_close_reason(
            reason, effect_normalize_close_reason__limits, effect_normalize_close_reason__texts
        )
        close_reason = (
            semantics_.read_close_reason(
                reason, effect_normalize_close_reason__limits, effect_normalize_close_reason__texts
            )
            if effect_normalize_close_reason__record is None
            else effect_normalize_close_reason__record
        )
        # no result: on to the next phase
        # --- phases recheck, commit: under the lock, in one acquisition
        lock = closure._lock
        if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
            raise reentry_error("close")
        with lock:
            # --- phase recheck (locked)
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass  # no row: on to the next phase
            elif state == "open":
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # close.recheck.stale  (CLO-5, RE-9)
                    if trace is not None:
                        trace.append("close.recheck.stale")
                    # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                    return reject(closure, reject_generation, "stale_generation", None, None)
            elif state in ("complete", "error", "cancelled"):
                # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
                guard_handle_not_current__run = closure._run
                if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                    # close.recheck.stale  (CLO-5, RE-9)
                    if trace is not None:
                        trace.append("close.recheck.stale")
                    # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                    return reject(closure, reject_generation, "stale_generation", None, None)
                else:
                    # close.recheck.closed  (CLO-5, RE-9)
                    if trace is not None:
                        trace.append("close.recheck.closed")
                    # result snapshot: inlined from tool_call_closure.machine.semantics._snapshot
                    return semantics_.take_snapshot(closure, draft)
            # --- phase commit (locked)
            # not reached in state complete, error, cancelled: an earlier phase of this acquisition ended there
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass  # no row: on to the next phase
            elif state == "open":
                # close.commit.close  (CLO-6, CLO-7)
                if trace is not None:
                    trace.append("close.commit.close")
                # effect synthesize_pending: inlined from tool_call_closure.machine.semantics.synthesize_pending
                effect_synthesize_pending__machine = closure._machine
                effect_synthesize_pending__reason = close_reason
                assert effect_synthesize_pending__reason is not None
                semantics_._close_calls(
                    effect_synthesize_pending__machine,
                    draft if draft is not None else (draft := draft_from(closure)),
                    effect_synthesize_pending__reason,
                    effect_synthesize_pending__machine.call_events["synthesize_pending"][
                        effect_synthesize_pending__reason[semantics_.STATUS]
                    ],
                )
                # effect record_close_reason: inlined from tool_call_closure.machine.semantics.record_close_reason
                (draft if draft is not None else (draft := draft_from(closure))).close_reason = close_reason
                # target reason.status: inlined from tool_call_closure.machine.semantics._target_reason_status
                assert close_reason is not None, "normalize_close_reason ran before the commit"
                target = close_reason[semantics_.STATUS]
                if target not in ("error", "cancelled"):
                    raise spec_error("illegal_transition", operation="close", state=target)
                if draft is None:  # the draft: made on first use, installed with the rest of the commit
                    draft = draft_from(closure)
                draft.state = target
                # result snapshot: inlined from tool_call_closure.machine.semantics._snapshot
                result = semantics_.take_snapshot(closure, draft)  # built from the draft, before the install
                # the commit takes effect: one assignment, after everything that can fail
                install_fields(closure, draft, staged_call)
                return result
    # no row ended the operation: the table's default
    run = closure._run
    raise spec_error("illegal_transition", operation="close", state=run.state if run is not None else "none")


def run_close(ctx: CloseContext) -> Any:
    """close on a context object: enter_close of its inputs."""
    return enter_close(ctx.closure, ctx.method, ctx.handle, ctx.reason)


def spill_SealContext(
    closure: Instance,
    method: str,
    handle: object,
    draft: Run | None,
    staged_call: tuple[int, CallRecord] | None,
    reject_generation: int | None,
) -> SealContext:
    """A SealContext holding the fields a compiled operation keeps as locals."""
    ctx = SealContext(closure, method, handle)
    ctx.draft, ctx.staged_call, ctx.reject_generation = draft, staged_call, reject_generation
    return ctx


def enter_seal(closure: Instance, method: str, handle: object) -> Any:
    """seal: prepare -> admit -> commit."""
    # the fields of a SealContext, as locals: the parameters, and what the phases compute
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    reject_generation: int | None = None
    trace = closure._trace  # a list while the rows that fire are recorded (coverage), else None
    # --- phase prepare (unlocked: caller code may run)
    # seal.prepare.read  (SEAL-1)
    if trace is not None:
        trace.append("seal.prepare.read")
    # effect read_handle_generation: inlined from tool_call_closure.machine.semantics.read_handle_generation
    effect_read_handle_generation__handle = handle
    effect_read_handle_generation__untyped: semantics_.Any = effect_read_handle_generation__handle
    effect_read_handle_generation__generation: object = (
        effect_read_handle_generation__untyped.generation
        if type(effect_read_handle_generation__handle) is semantics_.BatchHandle
        else semantics_.read_key(effect_read_handle_generation__handle, "generation")
    )
    if (
        type(effect_read_handle_generation__generation) is int
        and 0 < effect_read_handle_generation__generation <= semantics_.MAX_SAFE_INTEGER
    ):
        reject_generation = effect_read_handle_generation__generation
    else:
        reject_generation = semantics_.safe_positive_int(effect_read_handle_generation__generation)
    # no result: on to the next phase
    # --- phases admit, commit: under the lock, in one acquisition
    lock = closure._lock
    if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
        raise reentry_error("seal")
    with lock:
        # --- phase admit (locked)
        run = closure._run
        state = run.state if run is not None else "none"
        if state == "none":
            # seal.admit.no_run  (SEAL-1)
            if trace is not None:
                trace.append("seal.admit.no_run")
            # observed none: inlined from tool_call_closure.machine.semantics._observed_none
            return reject(closure, reject_generation, "stale_generation", None, None)
        elif state == "open":
            # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
            guard_handle_not_current__run = closure._run
            if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                # seal.admit.stale  (SEAL-1)
                if trace is not None:
                    trace.append("seal.admit.stale")
                # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                return reject(closure, reject_generation, "stale_generation", None, None)
            else:
                # guard has_pending_calls: inlined from tool_call_closure.machine.semantics.has_pending_calls
                guard_has_pending_calls__pending = closure._machine.initial_call_state
                if any(
                    (
                        guard_has_pending_calls__call[semantics_.CALL_STATE] == guard_has_pending_calls__pending
                        for guard_has_pending_calls__call in semantics_._run(closure).calls
                    )
                ):
                    # seal.admit.pending  (SEAL-3, DIAG-1)
                    if trace is not None:
                        trace.append("seal.admit.pending")
                    # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                    return reject(closure, reject_generation, "pending_calls", None, None)
        elif state in ("complete", "error", "cancelled"):
            # guard handle_not_current: inlined from tool_call_closure.machine.semantics.handle_not_current
            guard_handle_not_current__run = closure._run
            if guard_handle_not_current__run is None or handle is not guard_handle_not_current__run.handle:
                # seal.admit.stale  (SEAL-1)
                if trace is not None:
                    trace.append("seal.admit.stale")
                # observed none: inlined from tool_call_closure.machine.semantics._observed_none
                return reject(closure, reject_generation, "stale_generation", None, None)
            else:
                # seal.admit.idempotent  (SEAL-2)
                if trace is not None:
                    trace.append("seal.admit.idempotent")
                # result snapshot: inlined from tool_call_closure.machine.semantics._snapshot
                return semantics_.take_snapshot(closure, draft)
        # --- phase commit (locked)
        # not reached in state none, complete, error, cancelled: an earlier phase of this acquisition ended there
        # seal.commit.seal  (SEAL-4)
        if trace is not None:
            trace.append("seal.commit.seal")
        # effect record_complete: inlined from tool_call_closure.machine.semantics.record_complete
        (draft if draft is not None else (draft := draft_from(closure))).close_reason = semantics_.COMPLETE_RECORD
        if draft is None:  # the draft: made on first use, installed with the rest of the commit
            draft = draft_from(closure)
        draft.state = "complete"
        # result snapshot: inlined from tool_call_closure.machine.semantics._snapshot
        result = semantics_.take_snapshot(closure, draft)  # built from the draft, before the install
        # the commit takes effect: one assignment, after everything that can fail
        install_fields(closure, draft, staged_call)
        return result
    # no row ended the operation: the table's default
    run = closure._run
    raise spec_error("illegal_transition", operation="seal", state=run.state if run is not None else "none")


def run_seal(ctx: SealContext) -> Any:
    """seal on a context object: enter_seal of its inputs."""
    return enter_seal(ctx.closure, ctx.method, ctx.handle)


def spill_ReadContext(
    closure: Instance, method: str, draft: Run | None, staged_call: tuple[int, CallRecord] | None
) -> ReadContext:
    """A ReadContext holding the fields a compiled operation keeps as locals."""
    ctx = ReadContext(closure, method)
    ctx.draft, ctx.staged_call = draft, staged_call
    return ctx


def enter_snapshot(closure: Instance, method: str) -> Any:
    """snapshot: commit."""
    # the fields of a ReadContext, as locals: the parameters, and what the phases compute
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    trace = closure._trace  # a list while the rows that fire are recorded (coverage), else None
    # --- phase commit: under the lock, in one acquisition
    lock = closure._lock
    if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
        raise reentry_error("snapshot")
    with lock:
        # --- phase commit (locked)
        run = closure._run
        state = run.state if run is not None else "none"
        if state == "none":
            # snapshot.commit.none  (SNAP-1)
            if trace is not None:
                trace.append("snapshot.commit.none")
            # result null: inlined from tool_call_closure.machine.semantics._null
            return None
        elif state in ("open", "complete", "error", "cancelled"):
            # snapshot.commit.take  (SNAP-2, SNAP-3, SNAP-4, SNAP-5)
            if trace is not None:
                trace.append("snapshot.commit.take")
            # result snapshot: inlined from tool_call_closure.machine.semantics._snapshot
            return semantics_.take_snapshot(closure, draft)
    # no row ended the operation: the table's default
    run = closure._run
    raise spec_error("illegal_transition", operation="snapshot", state=run.state if run is not None else "none")


def run_snapshot(ctx: ReadContext) -> Any:
    """snapshot on a context object: enter_snapshot of its inputs."""
    return enter_snapshot(ctx.closure, ctx.method)


def enter_active_generation(closure: Instance, method: str) -> Any:
    """active_generation: commit."""
    # the fields of a ReadContext, as locals: the parameters, and what the phases compute
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    trace = closure._trace  # a list while the rows that fire are recorded (coverage), else None
    # --- phase commit: under the lock, in one acquisition
    lock = closure._lock
    if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
        raise reentry_error("active_generation")
    with lock:
        # --- phase commit (locked)
        run = closure._run
        state = run.state if run is not None else "none"
        if state == "none":
            # active_generation.commit.none  (GEN-1)
            if trace is not None:
                trace.append("active_generation.commit.none")
            # result null: inlined from tool_call_closure.machine.semantics._null
            return None
        elif state in ("open", "complete", "error", "cancelled"):
            # active_generation.commit.current  (GEN-1, GEN-2)
            if trace is not None:
                trace.append("active_generation.commit.current")
            # result generation: inlined from tool_call_closure.machine.semantics._generation
            return semantics_._run(closure).generation
    # no row ended the operation: the table's default
    run = closure._run
    raise spec_error(
        "illegal_transition", operation="active_generation", state=run.state if run is not None else "none"
    )


def run_active_generation(ctx: ReadContext) -> Any:
    """active_generation on a context object: enter_active_generation of its inputs."""
    return enter_active_generation(ctx.closure, ctx.method)


def enter_turn_token(closure: Instance, method: str) -> Any:
    """turn_token: commit."""
    # the fields of a ReadContext, as locals: the parameters, and what the phases compute
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    trace = closure._trace  # a list while the rows that fire are recorded (coverage), else None
    # --- phase commit: under the lock, in one acquisition
    lock = closure._lock
    if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
        raise reentry_error("turn_token")
    with lock:
        # --- phase commit (locked)
        # turn_token.commit.take  (D20)
        if trace is not None:
            trace.append("turn_token.commit.take")
        # result turn_token: inlined from tool_call_closure.machine.semantics._turn_token
        return semantics_.TurnToken(closure._generation)
    # no row ended the operation: the table's default
    run = closure._run
    raise spec_error("illegal_transition", operation="turn_token", state=run.state if run is not None else "none")


def run_turn_token(ctx: ReadContext) -> Any:
    """turn_token on a context object: enter_turn_token of its inputs."""
    return enter_turn_token(ctx.closure, ctx.method)


def spill_ExportContext(
    closure: Instance,
    method: str,
    snapshot_arg: object,
    renderer: Renderer,
    draft: Run | None,
    staged_call: tuple[int, CallRecord] | None,
    payload: list[dict[str, Any]],
) -> ExportContext:
    """A ExportContext holding the fields a compiled operation keeps as locals."""
    ctx = ExportContext(closure, method, snapshot_arg, renderer)
    ctx.draft, ctx.staged_call, ctx.payload = draft, staged_call, payload
    return ctx


def enter_export(closure: Instance, method: str, snapshot_arg: object, renderer: Renderer) -> Any:
    """export: prepare -> admit -> commit."""
    # the fields of a ExportContext, as locals: the parameters, and what the phases compute
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    payload: list[dict[str, Any]] = []
    trace = closure._trace  # a list while the rows that fire are recorded (coverage), else None
    # --- phase prepare (unlocked: caller code may run)
    # export.prepare.default  (ADP-1)
    if trace is not None:
        trace.append("export.prepare.default")
    # effect default_snapshot: inlined from tool_call_closure.machine.semantics.default_snapshot
    if semantics_._absent(snapshot_arg):
        snapshot_arg = closure.snapshot()
    # no result: on to the next phase
    # --- phases admit, commit: under the lock, in one acquisition
    lock = closure._lock
    if lock._is_owned():  # a finalizer or signal handler of this thread, inside a locked phase
        raise reentry_error("export")
    with lock:
        # --- phase admit (locked)
        # guard snapshot_foreign: inlined from tool_call_closure.machine.semantics.snapshot_foreign
        if semantics_.record_of(closure, snapshot_arg) is None:
            # export.admit.foreign  (ADP-1, ADP-2)
            if trace is not None:
                trace.append("export.admit.foreign")
            raise spec_error("snapshot_foreign")
        else:
            # guard snapshot_open: inlined from tool_call_closure.machine.semantics.snapshot_open
            guard_snapshot_open__record = semantics_.record_of(closure, snapshot_arg)
            assert guard_snapshot_open__record is not None
            if not guard_snapshot_open__record.closed:
                # export.admit.open  (ADP-1, ADP-3)
                if trace is not None:
                    trace.append("export.admit.open")
                raise spec_error("snapshot_open")
        # --- phase commit (locked)
        # export.commit.render  (ADP-4, ADP-5, ADP-6)
        if trace is not None:
            trace.append("export.commit.render")
        # effect render_payload: inlined from tool_call_closure.machine.semantics.render_payload
        effect_render_payload__record = semantics_.record_of(closure, snapshot_arg)
        assert effect_render_payload__record is not None
        payload = renderer(effect_render_payload__record.calls, effect_render_payload__record.memo)
        # result payload: inlined from tool_call_closure.machine.semantics._payload
        return payload
    # no row ended the operation: the table's default
    run = closure._run
    raise spec_error("illegal_transition", operation="export", state=run.state if run is not None else "none")


def run_export(ctx: ExportContext) -> Any:
    """export on a context object: enter_export of its inputs."""
    return enter_export(ctx.closure, ctx.method, ctx.snapshot_arg, ctx.renderer)


OPERATIONS: Final[Mapping[str, Callable[[Any], Any]]] = {
    "begin": run_begin,
    "settle": run_settle,
    "close": run_close,
    "seal": run_seal,
    "snapshot": run_snapshot,
    "active_generation": run_active_generation,
    "turn_token": run_turn_token,
    "export": run_export,
}
ENTRIES: Final[Mapping[str, Callable[..., Any]]] = {
    "begin": enter_begin,
    "settle": enter_settle,
    "close": enter_close,
    "seal": enter_seal,
    "snapshot": enter_snapshot,
    "active_generation": enter_active_generation,
    "turn_token": enter_turn_token,
    "export": enter_export,
}


def method_begin(closure: Instance, calls_arg: object, turn: object = None) -> Any:
    """begin as begin calls it: enter_begin, simplified (machine.specialize).

    Fixed: method='begin'.
    """
    draft: Run | None = None
    reject_generation: int | None = None
    start_generation: Any = 0 if closure._run is None else closure._run.generation
    turn_generation: int | None = None
    validated: list[CallRecord] = []
    index: dict[str, int] = {}
    superseded: SnapshotSource | None = None
    trace = closure._trace
    if trace is not None:
        trace.append("begin.prepare.validate")
    if turn is not None:
        effect_validate_turn__generation: object = (
            getattr(turn, "generation") if type(turn) is semantics_.TurnToken else None
        )
        if (
            type(effect_validate_turn__generation) is not int
            and issubclass(type(effect_validate_turn__generation), int)
            and (type(effect_validate_turn__generation) is not bool)
        ):
            effect_validate_turn__generation = int.__index__(semantics_.cast(int, effect_validate_turn__generation))
        if (
            type(effect_validate_turn__generation) is not int
            or not 0 <= effect_validate_turn__generation <= 9007199254740991
        ):
            raise semantics_.spec_error("turn_invalid")
        turn_generation = effect_validate_turn__generation
        reject_generation = effect_validate_turn__generation or None
    effect_validate_calls__limits = closure._limits
    if issubclass(type(calls_arg), list):
        effect_validate_calls__length: semantics_.Callable[[semantics_.Any], int] = list.__len__
        effect_validate_calls__item: semantics_.Callable[[semantics_.Any, int], semantics_.Any] = list.__getitem__
    elif issubclass(type(calls_arg), tuple):
        effect_validate_calls__length, effect_validate_calls__item = (tuple.__len__, tuple.__getitem__)
    else:
        raise semantics_.spec_error("calls_not_array")
    effect_validate_calls__count = effect_validate_calls__length(calls_arg)
    if effect_validate_calls__count > effect_validate_calls__limits.max_calls:
        raise semantics_.spec_error("calls_exceed_max", limit=effect_validate_calls__limits.max_calls)
    effect_validate_calls__max_id, effect_validate_calls__max_name = (
        effect_validate_calls__limits.max_id_bytes,
        effect_validate_calls__limits.max_name_bytes,
    )
    effect_validate_calls__seen: dict[str, int] = {}
    effect_validate_calls__validated: list[semantics_.CallRecord] = []
    effect_validate_calls__absent, effect_validate_calls__whitespace = (
        semantics_.ABSENT,
        semantics_.ASCII_JS_WHITESPACE,
    )
    effect_validate_calls__entries = iter(calls_arg) if type(calls_arg) is list or type(calls_arg) is tuple else None
    for effect_validate_calls__index in range(effect_validate_calls__count):
        if effect_validate_calls__entries is not None:
            effect_validate_calls__call = next(effect_validate_calls__entries, None)
        else:
            effect_validate_calls__call = (
                effect_validate_calls__item(calls_arg, effect_validate_calls__index)
                if effect_validate_calls__index < effect_validate_calls__length(calls_arg)
                else None
            )
        if type(effect_validate_calls__call) is dict:
            effect_validate_calls__call_id = effect_validate_calls__call.get("id", effect_validate_calls__absent)
            if not (
                type(effect_validate_calls__call_id) is str
                and effect_validate_calls__call_id.isascii()
                and (len(effect_validate_calls__call_id) <= effect_validate_calls__max_id)
                and (
                    effect_validate_calls__call_id >= "!"
                    or effect_validate_calls__call_id.strip(effect_validate_calls__whitespace)
                )
            ):
                effect_validate_calls__call_id = semantics_.bounded_string(
                    effect_validate_calls__call_id, effect_validate_calls__max_id, "id", effect_validate_calls__index
                )
            if effect_validate_calls__call_id in effect_validate_calls__seen:
                raise semantics_.spec_error("duplicate_call_id", id=effect_validate_calls__call_id)
            effect_validate_calls__seen[effect_validate_calls__call_id] = effect_validate_calls__index
            effect_validate_calls__name = effect_validate_calls__call.get("name", effect_validate_calls__absent)
            if not (
                type(effect_validate_calls__name) is str
                and effect_validate_calls__name.isascii()
                and (len(effect_validate_calls__name) <= effect_validate_calls__max_name)
                and (
                    effect_validate_calls__name >= "!"
                    or effect_validate_calls__name.strip(effect_validate_calls__whitespace)
                )
            ):
                effect_validate_calls__name = semantics_.bounded_string(
                    effect_validate_calls__name, effect_validate_calls__max_name, "name", effect_validate_calls__index
                )
            effect_validate_calls__validated.append(
                (effect_validate_calls__call_id, effect_validate_calls__name, "pending", None)
            )
            if "call_id" in effect_validate_calls__call:
                semantics_._refuse_misread_pairing_id(
                    effect_validate_calls__call, effect_validate_calls__call_id, effect_validate_calls__index
                )
            continue
        if not semantics_.is_object(effect_validate_calls__call):
            raise semantics_.spec_error("call_not_object", index=effect_validate_calls__index)
        effect_validate_calls__call_id = semantics_.bounded_string(
            semantics_.read_key(effect_validate_calls__call, "id"),
            effect_validate_calls__max_id,
            "id",
            effect_validate_calls__index,
        )
        if effect_validate_calls__call_id in effect_validate_calls__seen:
            raise semantics_.spec_error("duplicate_call_id", id=effect_validate_calls__call_id)
        effect_validate_calls__seen[effect_validate_calls__call_id] = effect_validate_calls__index
        effect_validate_calls__validated.append(
            (
                effect_validate_calls__call_id,
                semantics_.bounded_string(
                    semantics_.read_key(effect_validate_calls__call, "name"),
                    effect_validate_calls__max_name,
                    "name",
                    effect_validate_calls__index,
                ),
                "pending",
                None,
            )
        )
        semantics_._refuse_misread_pairing_id(
            effect_validate_calls__call, effect_validate_calls__call_id, effect_validate_calls__index
        )
    lock = closure._lock
    if lock._is_owned():
        raise reentry_error("begin")
    with lock:
        guard_turn_stale__run = closure._run
        if (
            turn_generation is not None
            and (0 if guard_turn_stale__run is None else guard_turn_stale__run.generation) != turn_generation
        ):
            if trace is not None:
                trace.append("begin.recheck.stale_turn")
            return reject(closure, reject_generation, "stale_turn", None, None)
        else:
            guard_generation_changed__run = closure._run
            if (
                0 if guard_generation_changed__run is None else guard_generation_changed__run.generation
            ) != start_generation:
                if trace is not None:
                    trace.append("begin.recheck.generation_changed")
                raise spec_error("generation_changed")
        run = closure._run
        state = run.state if run is not None else "none"
        if state in ("none", "complete", "error", "cancelled"):
            if trace is not None:
                trace.append("begin.commit.start")
            effect_start_generation__generation = (0 if run is None else run.generation) + 1
            draft = semantics_.Run(
                effect_start_generation__generation,
                semantics_.BatchHandle(effect_start_generation__generation),
                effect_validate_calls__validated,
                effect_validate_calls__seen,
                [],
            )
            if draft is None:
                draft = draft_from(closure)
            draft.state = "open"
            result_begin_result__run = draft if draft is not None else semantics_._run(closure)
            result = semantics_.new_begin_result(
                result_begin_result__run.generation, result_begin_result__run.handle, None
            )
            install_fields(closure, draft, None)
            return result
        elif state == "open":
            if trace is not None:
                trace.append("begin.commit.supersede")
            assert run is not None
            effect_supersede__reason: semantics_.CloseReasonRecord = (
                "cancelled",
                "superseded",
                closure._superseded_message,
                "unknown",
            )
            effect_supersede__calls = tuple(run.calls)
            effect_supersede__diagnostics = tuple(run.diagnostics)
            superseded = (
                semantics_.superseded_snapshot,
                (
                    closure._records,
                    run.generation,
                    True,
                    effect_supersede__reason,
                    "pending",
                    "cancelled",
                    effect_supersede__calls,
                    effect_supersede__diagnostics,
                ),
            )
            effect_start_generation__generation = (0 if run is None else run.generation) + 1
            draft = semantics_.Run(
                effect_start_generation__generation,
                semantics_.BatchHandle(effect_start_generation__generation),
                effect_validate_calls__validated,
                effect_validate_calls__seen,
                [],
            )
            if draft is None:
                draft = draft_from(closure)
            draft.state = "open"
            result_begin_result__run = draft if draft is not None else semantics_._run(closure)
            result = semantics_.superseding_begin_result(
                result_begin_result__run.generation, result_begin_result__run.handle, superseded
            )
            install_fields(closure, draft, None)
            return result
    run = closure._run
    raise spec_error("illegal_transition", operation="begin", state=run.state if run is not None else "none")


def method_settle(closure: Instance, handle: object, call_id: Any, outcome: Any = ABSENT) -> Any:
    """settle as settle calls it: enter_settle, simplified (machine.specialize).

    Fixed: method='settle', fixed_status=None, content=ABSENT, message=ABSENT, message_is_error=False,
    code=ABSENT, default_code=''.
    """
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    reject_generation: int | None = None
    preview: str | None = None
    effect_normalize_outcome__settlement: semantics_.SettlementRecord
    trace = closure._trace
    if trace is not None:
        trace.append("settle.prepare.read")
    effect_validate_call_id__call_id: object = call_id
    effect_validate_call_id__run = closure._run
    if not (
        type(effect_validate_call_id__call_id) is str
        and effect_validate_call_id__run is not None
        and (effect_validate_call_id__call_id in effect_validate_call_id__run.index)
    ):
        effect_validate_call_id__call_id = semantics_.bounded_string(
            effect_validate_call_id__call_id, closure._limits.max_id_bytes, "callId"
        )
    effect_read_handle_generation__untyped: semantics_.Any = handle
    effect_read_handle_generation__generation: object = (
        effect_read_handle_generation__untyped.generation
        if type(handle) is semantics_.BatchHandle
        else semantics_.read_key(handle, "generation")
    )
    if (
        type(effect_read_handle_generation__generation) is int
        and 0 < effect_read_handle_generation__generation <= 9007199254740991
    ):
        reject_generation = effect_read_handle_generation__generation
    else:
        reject_generation = semantics_.safe_positive_int(effect_read_handle_generation__generation)
    preview = semantics_.observed_status(semantics_.read_key(outcome, "status"))
    lock = closure._lock
    if lock._is_owned():
        raise reentry_error("settle")
    with lock:
        run = closure._run
        state = run.state if run is not None else "none"
        if state == "none":
            if trace is not None:
                trace.append("settle.admit.no_run")
            return reject(closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, preview)
        elif state == "open":
            if run is None or handle is not run.handle:
                if trace is not None:
                    trace.append("settle.admit.stale")
                return reject(closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, preview)
            else:
                assert run is not None
                if effect_validate_call_id__call_id not in run.index:
                    if trace is not None:
                        trace.append("settle.admit.unknown")
                    return reject(closure, reject_generation, "unknown_call", effect_validate_call_id__call_id, None)
                else:
                    assert run is not None
                    if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                        if trace is not None:
                            trace.append("settle.admit.duplicate")
                        return reject(
                            closure, reject_generation, "duplicate_settlement", effect_validate_call_id__call_id, None
                        )
        elif state in ("complete", "error", "cancelled"):
            if run is None or handle is not run.handle:
                if trace is not None:
                    trace.append("settle.admit.stale")
                return reject(closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, preview)
            else:
                if trace is not None:
                    trace.append("settle.admit.closed")
                return reject(closure, reject_generation, "run_closed", effect_validate_call_id__call_id, preview)
    if trace is not None:
        trace.append("settle.normalize.outcome")
    effect_normalize_outcome__limits = closure._limits
    effect_normalize_outcome__status = None
    if not semantics_.is_object(outcome):
        raise semantics_.spec_error("outcome_not_object")
    semantics_.refuse_unknown_keys(outcome, semantics_._OUTCOME_KEYS, "outcome_key_unknown")
    effect_normalize_outcome__status = semantics_._member(
        semantics_.read_key(outcome, "status"), semantics_._SETTLED_STATUSES
    )
    if effect_normalize_outcome__status is None:
        raise semantics_.spec_error("outcome_status_invalid")
    if effect_normalize_outcome__status == "success":
        effect_normalize_outcome__content = semantics_.serialize_content(
            semantics_.read_key(outcome, "content"), effect_normalize_outcome__limits.max_result_bytes
        )
        effect_normalize_outcome__settlement = (
            "success",
            "reported",
            effect_normalize_outcome__content,
            None,
            None,
            None,
        )
    else:
        effect_normalize_outcome__code = semantics_.read_key(outcome, "code")
        effect_normalize_outcome__code = (
            effect_normalize_outcome__status
            if semantics_._absent(effect_normalize_outcome__code)
            else semantics_.bounded_string(
                effect_normalize_outcome__code, effect_normalize_outcome__limits.max_code_bytes, "outcome.code"
            )
        )
        effect_normalize_outcome__default = semantics_._default_message(
            closure._machine.texts, effect_normalize_outcome__status
        )
        effect_normalize_outcome__message = semantics_.message_text(
            semantics_.read_key(outcome, "message"),
            effect_normalize_outcome__default,
            effect_normalize_outcome__limits.max_message_bytes,
        )
        effect_normalize_outcome__settlement = (
            effect_normalize_outcome__status,
            "reported",
            None,
            effect_normalize_outcome__code,
            effect_normalize_outcome__message,
            None,
        )
    lock = closure._lock
    if lock._is_owned():
        raise reentry_error("settle")
    with lock:
        run = closure._run
        state = run.state if run is not None else "none"
        if state == "none":
            pass
        elif state == "open":
            if run is None or handle is not run.handle:
                if trace is not None:
                    trace.append("settle.recheck.stale")
                return reject(
                    closure,
                    reject_generation,
                    "stale_generation",
                    effect_validate_call_id__call_id,
                    effect_normalize_outcome__settlement[0]
                    if effect_normalize_outcome__settlement is not None
                    else None,
                )
            else:
                assert run is not None
                if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                    if trace is not None:
                        trace.append("settle.recheck.duplicate")
                    return reject(
                        closure,
                        reject_generation,
                        "duplicate_settlement",
                        effect_validate_call_id__call_id,
                        effect_normalize_outcome__settlement[0]
                        if effect_normalize_outcome__settlement is not None
                        else None,
                    )
        elif state in ("complete", "error", "cancelled"):
            if run is None or handle is not run.handle:
                if trace is not None:
                    trace.append("settle.recheck.stale")
                return reject(
                    closure,
                    reject_generation,
                    "stale_generation",
                    effect_validate_call_id__call_id,
                    effect_normalize_outcome__settlement[0]
                    if effect_normalize_outcome__settlement is not None
                    else None,
                )
            else:
                if trace is not None:
                    trace.append("settle.recheck.closed")
                return reject(
                    closure,
                    reject_generation,
                    "run_closed",
                    effect_validate_call_id__call_id,
                    effect_normalize_outcome__settlement[0]
                    if effect_normalize_outcome__settlement is not None
                    else None,
                )
        run = closure._run
        state = run.state if run is not None else "none"
        if state == "none":
            pass
        elif state == "open":
            if (
                closure._limits.text_only_tool_results
                and effect_normalize_outcome__settlement is not None
                and semantics_._has_media(effect_normalize_outcome__settlement[2])
            ):
                if trace is not None:
                    trace.append("settle.commit.media_moved")
                assert run is not None
                assert effect_normalize_outcome__settlement is not None
                effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                effect_record_settlement__call = run.calls[effect_record_settlement__position]
                (
                    effect_record_settlement__identifier,
                    effect_record_settlement__name,
                    effect_record_settlement__state,
                    effect_record_settlement___before,
                ) = effect_record_settlement__call
                effect_record_settlement__status = effect_normalize_outcome__settlement[0]
                effect_record_settlement__target = closure._machine.effect_call_next["record_settlement"].get(
                    (effect_record_settlement__state, effect_record_settlement__status)
                )
                if effect_record_settlement__target is None:
                    effect_record_settlement__call = closure._machine.apply_call_event(
                        effect_record_settlement__call,
                        closure._machine.call_events["record_settlement"][effect_record_settlement__status],
                        effect_normalize_outcome__settlement,
                    )
                else:
                    effect_record_settlement__call = (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__target,
                        effect_normalize_outcome__settlement,
                    )
                staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                effect_record_media_moved__aside = draft if draft is not None else (draft := draft_from(closure))
                effect_record_media_moved__aside.calls[staged_call[0]] = staged_call[1]
                effect_record_media_moved__diagnostics = effect_record_media_moved__aside.diagnostics
                if len(effect_record_media_moved__diagnostics) < closure._limits.max_diagnostics:
                    effect_record_media_moved__aside.diagnostics = [
                        *effect_record_media_moved__diagnostics,
                        (
                            "media_moved",
                            effect_validate_call_id__call_id,
                            effect_record_media_moved__aside.generation,
                            "success",
                        ),
                    ]
                assert effect_normalize_outcome__settlement is not None
                assert reject_generation is not None
                result_accepted__view = semantics_.ACCEPTED_TWIN()
                result_accepted__view.generation = reject_generation
                result_accepted__view.call_id = effect_validate_call_id__call_id
                result_accepted__view._deferred = effect_normalize_outcome__settlement
                result_accepted__view.__class__ = semantics_.Accepted
                install_fields(closure, draft, None)
                return result_accepted__view
            else:
                if trace is not None:
                    trace.append("settle.commit.record")
                assert run is not None
                assert effect_normalize_outcome__settlement is not None
                effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                effect_record_settlement__call = run.calls[effect_record_settlement__position]
                (
                    effect_record_settlement__identifier,
                    effect_record_settlement__name,
                    effect_record_settlement__state,
                    effect_record_settlement___before,
                ) = effect_record_settlement__call
                effect_record_settlement__status = effect_normalize_outcome__settlement[0]
                effect_record_settlement__target = closure._machine.effect_call_next["record_settlement"].get(
                    (effect_record_settlement__state, effect_record_settlement__status)
                )
                if effect_record_settlement__target is None:
                    effect_record_settlement__call = closure._machine.apply_call_event(
                        effect_record_settlement__call,
                        closure._machine.call_events["record_settlement"][effect_record_settlement__status],
                        effect_normalize_outcome__settlement,
                    )
                else:
                    effect_record_settlement__call = (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__target,
                        effect_normalize_outcome__settlement,
                    )
                assert effect_normalize_outcome__settlement is not None
                assert reject_generation is not None
                result_accepted__view = semantics_.ACCEPTED_TWIN()
                result_accepted__view.generation = reject_generation
                result_accepted__view.call_id = effect_validate_call_id__call_id
                result_accepted__view._deferred = effect_normalize_outcome__settlement
                result_accepted__view.__class__ = semantics_.Accepted
                run.calls[effect_record_settlement__position] = effect_record_settlement__call
                return result_accepted__view
    run = closure._run
    raise spec_error("illegal_transition", operation="settle", state=run.state if run is not None else "none")


def method_succeed(closure: Instance, handle: object, call_id: Any, content: Any = ABSENT) -> Any:
    """settle as succeed calls it: enter_settle, simplified (machine.specialize).

    Fixed: method='succeed', outcome=ABSENT, fixed_status='success', message=ABSENT,
    message_is_error=False, code=ABSENT, default_code=''.
    """
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    reject_generation: int | None = None
    effect_normalize_outcome__settlement: semantics_.SettlementRecord
    trace = closure._trace
    if trace is not None:
        trace.append("settle.prepare.read")
    effect_validate_call_id__call_id: object = call_id
    effect_validate_call_id__run = closure._run
    if not (
        type(effect_validate_call_id__call_id) is str
        and effect_validate_call_id__run is not None
        and (effect_validate_call_id__call_id in effect_validate_call_id__run.index)
    ):
        effect_validate_call_id__call_id = semantics_.bounded_string(
            effect_validate_call_id__call_id, closure._limits.max_id_bytes, "callId"
        )
    effect_read_handle_generation__untyped: semantics_.Any = handle
    effect_read_handle_generation__generation: object = (
        effect_read_handle_generation__untyped.generation
        if type(handle) is semantics_.BatchHandle
        else semantics_.read_key(handle, "generation")
    )
    if (
        type(effect_read_handle_generation__generation) is int
        and 0 < effect_read_handle_generation__generation <= 9007199254740991
    ):
        reject_generation = effect_read_handle_generation__generation
    else:
        reject_generation = semantics_.safe_positive_int(effect_read_handle_generation__generation)
    check_normalize_outcome__content = content
    if type(check_normalize_outcome__content) is not str:
        check_normalize_outcome__content = semantics_.plain_json_text(
            check_normalize_outcome__content, closure._limits.max_result_bytes
        )
        if check_normalize_outcome__content is not None:
            content = check_normalize_outcome__content
    check_normalize_outcome__plain_content = type(check_normalize_outcome__content) is str
    if check_normalize_outcome__plain_content:
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("settle")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                if trace is not None:
                    trace.append("settle.admit.no_run")
                return reject(
                    closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "success"
                )
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "success"
                    )
                else:
                    assert run is not None
                    if effect_validate_call_id__call_id not in run.index:
                        if trace is not None:
                            trace.append("settle.admit.unknown")
                        return reject(
                            closure, reject_generation, "unknown_call", effect_validate_call_id__call_id, None
                        )
                    else:
                        assert run is not None
                        if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                            if trace is not None:
                                trace.append("settle.admit.duplicate")
                            return reject(
                                closure,
                                reject_generation,
                                "duplicate_settlement",
                                effect_validate_call_id__call_id,
                                None,
                            )
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "success"
                    )
                else:
                    if trace is not None:
                        trace.append("settle.admit.closed")
                    return reject(closure, reject_generation, "run_closed", effect_validate_call_id__call_id, "success")
            if trace is not None:
                trace.append("settle.normalize.outcome")
            effect_normalize_outcome__limits = closure._limits
            effect_normalize_outcome__content = content
            if not (
                type(effect_normalize_outcome__content) is str
                and effect_normalize_outcome__content.isascii()
                and (len(effect_normalize_outcome__content) <= effect_normalize_outcome__limits.max_result_bytes)
            ):
                effect_normalize_outcome__content = semantics_.serialize_content(
                    effect_normalize_outcome__content, effect_normalize_outcome__limits.max_result_bytes
                )
            effect_normalize_outcome__settlement = (
                "success",
                "reported",
                effect_normalize_outcome__content,
                None,
                None,
                None,
            )
            if closure._limits.text_only_tool_results and semantics_._has_media(
                effect_normalize_outcome__settlement[2]
            ):
                if trace is not None:
                    trace.append("settle.commit.media_moved")
                assert run is not None
                effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                effect_record_settlement__call = run.calls[effect_record_settlement__position]
                (
                    effect_record_settlement__identifier,
                    effect_record_settlement__name,
                    effect_record_settlement__state,
                    effect_record_settlement___before,
                ) = effect_record_settlement__call
                effect_record_settlement__target = "success" if effect_record_settlement__state == "pending" else None
                if effect_record_settlement__target is None:
                    effect_record_settlement__call = closure._machine.apply_call_event(
                        effect_record_settlement__call, "report_success", effect_normalize_outcome__settlement
                    )
                else:
                    effect_record_settlement__call = (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__target,
                        effect_normalize_outcome__settlement,
                    )
                staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                effect_record_media_moved__aside = draft if draft is not None else (draft := draft_from(closure))
                effect_record_media_moved__aside.calls[staged_call[0]] = staged_call[1]
                effect_record_media_moved__diagnostics = effect_record_media_moved__aside.diagnostics
                if len(effect_record_media_moved__diagnostics) < closure._limits.max_diagnostics:
                    effect_record_media_moved__aside.diagnostics = [
                        *effect_record_media_moved__diagnostics,
                        (
                            "media_moved",
                            effect_validate_call_id__call_id,
                            effect_record_media_moved__aside.generation,
                            "success",
                        ),
                    ]
                assert reject_generation is not None
                result_accepted__view: semantics_.Any = semantics_.ACCEPTED_TWIN()
                result_accepted__view.generation = reject_generation
                result_accepted__view.call_id = effect_validate_call_id__call_id
                result_accepted__view._deferred = effect_normalize_outcome__settlement
                result_accepted__view.__class__ = semantics_.Accepted
                install_fields(closure, draft, None)
                return result_accepted__view
            else:
                if trace is not None:
                    trace.append("settle.commit.record")
                assert run is not None
                effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                effect_record_settlement__call = run.calls[effect_record_settlement__position]
                (
                    effect_record_settlement__identifier,
                    effect_record_settlement__name,
                    effect_record_settlement__state,
                    effect_record_settlement___before,
                ) = effect_record_settlement__call
                effect_record_settlement__target = "success" if effect_record_settlement__state == "pending" else None
                if effect_record_settlement__target is None:
                    effect_record_settlement__call = closure._machine.apply_call_event(
                        effect_record_settlement__call, "report_success", effect_normalize_outcome__settlement
                    )
                else:
                    effect_record_settlement__call = (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__target,
                        effect_normalize_outcome__settlement,
                    )
                assert reject_generation is not None
                result_accepted__view = semantics_.ACCEPTED_TWIN()
                result_accepted__view.generation = reject_generation
                result_accepted__view.call_id = effect_validate_call_id__call_id
                result_accepted__view._deferred = effect_normalize_outcome__settlement
                result_accepted__view.__class__ = semantics_.Accepted
                run.calls[effect_record_settlement__position] = effect_record_settlement__call
                return result_accepted__view
    else:
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("settle")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                if trace is not None:
                    trace.append("settle.admit.no_run")
                return reject(
                    closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "success"
                )
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "success"
                    )
                else:
                    assert run is not None
                    if effect_validate_call_id__call_id not in run.index:
                        if trace is not None:
                            trace.append("settle.admit.unknown")
                        return reject(
                            closure, reject_generation, "unknown_call", effect_validate_call_id__call_id, None
                        )
                    else:
                        assert run is not None
                        if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                            if trace is not None:
                                trace.append("settle.admit.duplicate")
                            return reject(
                                closure,
                                reject_generation,
                                "duplicate_settlement",
                                effect_validate_call_id__call_id,
                                None,
                            )
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "success"
                    )
                else:
                    if trace is not None:
                        trace.append("settle.admit.closed")
                    return reject(closure, reject_generation, "run_closed", effect_validate_call_id__call_id, "success")
        if trace is not None:
            trace.append("settle.normalize.outcome")
        effect_normalize_outcome__limits = closure._limits
        effect_normalize_outcome__content = content
        if not (
            type(effect_normalize_outcome__content) is str
            and effect_normalize_outcome__content.isascii()
            and (len(effect_normalize_outcome__content) <= effect_normalize_outcome__limits.max_result_bytes)
        ):
            effect_normalize_outcome__content = semantics_.serialize_content(
                effect_normalize_outcome__content, effect_normalize_outcome__limits.max_result_bytes
            )
        effect_normalize_outcome__settlement = (
            "success",
            "reported",
            effect_normalize_outcome__content,
            None,
            None,
            None,
        )
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("settle")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.recheck.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "success"
                    )
                else:
                    assert run is not None
                    if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                        if trace is not None:
                            trace.append("settle.recheck.duplicate")
                        return reject(
                            closure,
                            reject_generation,
                            "duplicate_settlement",
                            effect_validate_call_id__call_id,
                            "success",
                        )
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.recheck.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "success"
                    )
                else:
                    if trace is not None:
                        trace.append("settle.recheck.closed")
                    return reject(closure, reject_generation, "run_closed", effect_validate_call_id__call_id, "success")
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass
            elif state == "open":
                if closure._limits.text_only_tool_results and semantics_._has_media(
                    effect_normalize_outcome__settlement[2]
                ):
                    if trace is not None:
                        trace.append("settle.commit.media_moved")
                    assert run is not None
                    effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                    effect_record_settlement__call = run.calls[effect_record_settlement__position]
                    (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__state,
                        effect_record_settlement___before,
                    ) = effect_record_settlement__call
                    effect_record_settlement__target = (
                        "success" if effect_record_settlement__state == "pending" else None
                    )
                    if effect_record_settlement__target is None:
                        effect_record_settlement__call = closure._machine.apply_call_event(
                            effect_record_settlement__call, "report_success", effect_normalize_outcome__settlement
                        )
                    else:
                        effect_record_settlement__call = (
                            effect_record_settlement__identifier,
                            effect_record_settlement__name,
                            effect_record_settlement__target,
                            effect_normalize_outcome__settlement,
                        )
                    staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                    effect_record_media_moved__aside = draft if draft is not None else (draft := draft_from(closure))
                    effect_record_media_moved__aside.calls[staged_call[0]] = staged_call[1]
                    effect_record_media_moved__diagnostics = effect_record_media_moved__aside.diagnostics
                    if len(effect_record_media_moved__diagnostics) < closure._limits.max_diagnostics:
                        effect_record_media_moved__aside.diagnostics = [
                            *effect_record_media_moved__diagnostics,
                            (
                                "media_moved",
                                effect_validate_call_id__call_id,
                                effect_record_media_moved__aside.generation,
                                "success",
                            ),
                        ]
                    assert reject_generation is not None
                    result_accepted__view = semantics_.ACCEPTED_TWIN()
                    result_accepted__view.generation = reject_generation
                    result_accepted__view.call_id = effect_validate_call_id__call_id
                    result_accepted__view._deferred = effect_normalize_outcome__settlement
                    result_accepted__view.__class__ = semantics_.Accepted
                    install_fields(closure, draft, None)
                    return result_accepted__view
                else:
                    if trace is not None:
                        trace.append("settle.commit.record")
                    assert run is not None
                    effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                    effect_record_settlement__call = run.calls[effect_record_settlement__position]
                    (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__state,
                        effect_record_settlement___before,
                    ) = effect_record_settlement__call
                    effect_record_settlement__target = (
                        "success" if effect_record_settlement__state == "pending" else None
                    )
                    if effect_record_settlement__target is None:
                        effect_record_settlement__call = closure._machine.apply_call_event(
                            effect_record_settlement__call, "report_success", effect_normalize_outcome__settlement
                        )
                    else:
                        effect_record_settlement__call = (
                            effect_record_settlement__identifier,
                            effect_record_settlement__name,
                            effect_record_settlement__target,
                            effect_normalize_outcome__settlement,
                        )
                    assert reject_generation is not None
                    result_accepted__view = semantics_.ACCEPTED_TWIN()
                    result_accepted__view.generation = reject_generation
                    result_accepted__view.call_id = effect_validate_call_id__call_id
                    result_accepted__view._deferred = effect_normalize_outcome__settlement
                    result_accepted__view.__class__ = semantics_.Accepted
                    run.calls[effect_record_settlement__position] = effect_record_settlement__call
                    return result_accepted__view
    run = closure._run
    raise spec_error("illegal_transition", operation="settle", state=run.state if run is not None else "none")


def method_fail(closure: Instance, handle: object, call_id: Any, message: Any = ABSENT, code: Any = ABSENT) -> Any:
    """settle as fail calls it: enter_settle, simplified (machine.specialize).

    Fixed: method='fail', outcome=ABSENT, fixed_status='error', content=ABSENT, message_is_error=True,
    default_code='tool_error'.
    """
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    reject_generation: int | None = None
    effect_normalize_outcome__settlement: semantics_.SettlementRecord
    trace = closure._trace
    if trace is not None:
        trace.append("settle.prepare.read")
    effect_validate_call_id__call_id: object = call_id
    effect_validate_call_id__run = closure._run
    if not (
        type(effect_validate_call_id__call_id) is str
        and effect_validate_call_id__run is not None
        and (effect_validate_call_id__call_id in effect_validate_call_id__run.index)
    ):
        effect_validate_call_id__call_id = semantics_.bounded_string(
            effect_validate_call_id__call_id, closure._limits.max_id_bytes, "callId"
        )
    effect_read_handle_generation__untyped: semantics_.Any = handle
    effect_read_handle_generation__generation: object = (
        effect_read_handle_generation__untyped.generation
        if type(handle) is semantics_.BatchHandle
        else semantics_.read_key(handle, "generation")
    )
    if (
        type(effect_read_handle_generation__generation) is int
        and 0 < effect_read_handle_generation__generation <= 9007199254740991
    ):
        reject_generation = effect_read_handle_generation__generation
    else:
        reject_generation = semantics_.safe_positive_int(effect_read_handle_generation__generation)
    if semantics_._plain_text_or_absent(code) and semantics_._plain_text_or_absent(message):
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("settle")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                if trace is not None:
                    trace.append("settle.admit.no_run")
                return reject(closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "error")
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "error"
                    )
                else:
                    assert run is not None
                    if effect_validate_call_id__call_id not in run.index:
                        if trace is not None:
                            trace.append("settle.admit.unknown")
                        return reject(
                            closure, reject_generation, "unknown_call", effect_validate_call_id__call_id, None
                        )
                    else:
                        assert run is not None
                        if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                            if trace is not None:
                                trace.append("settle.admit.duplicate")
                            return reject(
                                closure,
                                reject_generation,
                                "duplicate_settlement",
                                effect_validate_call_id__call_id,
                                None,
                            )
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "error"
                    )
                else:
                    if trace is not None:
                        trace.append("settle.admit.closed")
                    return reject(closure, reject_generation, "run_closed", effect_validate_call_id__call_id, "error")
            if trace is not None:
                trace.append("settle.normalize.outcome")
            effect_normalize_outcome__limits = closure._limits
            effect_normalize_outcome__code = code
            effect_normalize_outcome__code = (
                "tool_error"
                if semantics_._absent(code)
                else semantics_.bounded_string(code, effect_normalize_outcome__limits.max_code_bytes, "outcome.code")
            )
            effect_normalize_outcome__default = semantics_._default_message(closure._machine.texts, "error")
            effect_normalize_outcome__message = semantics_.error_message_text(
                message, effect_normalize_outcome__default, effect_normalize_outcome__limits.max_message_bytes
            )
            effect_normalize_outcome__settlement = (
                "error",
                "reported",
                None,
                effect_normalize_outcome__code,
                effect_normalize_outcome__message,
                None,
            )
            if closure._limits.text_only_tool_results and semantics_._has_media(None):
                if trace is not None:
                    trace.append("settle.commit.media_moved")
                assert run is not None
                effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                effect_record_settlement__call = run.calls[effect_record_settlement__position]
                (
                    effect_record_settlement__identifier,
                    effect_record_settlement__name,
                    effect_record_settlement__state,
                    effect_record_settlement___before,
                ) = effect_record_settlement__call
                effect_record_settlement__target = "error" if effect_record_settlement__state == "pending" else None
                if effect_record_settlement__target is None:
                    effect_record_settlement__call = closure._machine.apply_call_event(
                        effect_record_settlement__call, "report_error", effect_normalize_outcome__settlement
                    )
                else:
                    effect_record_settlement__call = (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__target,
                        effect_normalize_outcome__settlement,
                    )
                staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                effect_record_media_moved__aside = draft if draft is not None else (draft := draft_from(closure))
                effect_record_media_moved__aside.calls[staged_call[0]] = staged_call[1]
                effect_record_media_moved__diagnostics = effect_record_media_moved__aside.diagnostics
                if len(effect_record_media_moved__diagnostics) < closure._limits.max_diagnostics:
                    effect_record_media_moved__aside.diagnostics = [
                        *effect_record_media_moved__diagnostics,
                        (
                            "media_moved",
                            effect_validate_call_id__call_id,
                            effect_record_media_moved__aside.generation,
                            "success",
                        ),
                    ]
                assert reject_generation is not None
                result_accepted__view: semantics_.Any = semantics_.ACCEPTED_TWIN()
                result_accepted__view.generation = reject_generation
                result_accepted__view.call_id = effect_validate_call_id__call_id
                result_accepted__view._deferred = effect_normalize_outcome__settlement
                result_accepted__view.__class__ = semantics_.Accepted
                install_fields(closure, draft, None)
                return result_accepted__view
            else:
                if trace is not None:
                    trace.append("settle.commit.record")
                assert run is not None
                effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                effect_record_settlement__call = run.calls[effect_record_settlement__position]
                (
                    effect_record_settlement__identifier,
                    effect_record_settlement__name,
                    effect_record_settlement__state,
                    effect_record_settlement___before,
                ) = effect_record_settlement__call
                effect_record_settlement__target = "error" if effect_record_settlement__state == "pending" else None
                if effect_record_settlement__target is None:
                    effect_record_settlement__call = closure._machine.apply_call_event(
                        effect_record_settlement__call, "report_error", effect_normalize_outcome__settlement
                    )
                else:
                    effect_record_settlement__call = (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__target,
                        effect_normalize_outcome__settlement,
                    )
                assert reject_generation is not None
                result_accepted__view = semantics_.ACCEPTED_TWIN()
                result_accepted__view.generation = reject_generation
                result_accepted__view.call_id = effect_validate_call_id__call_id
                result_accepted__view._deferred = effect_normalize_outcome__settlement
                result_accepted__view.__class__ = semantics_.Accepted
                run.calls[effect_record_settlement__position] = effect_record_settlement__call
                return result_accepted__view
    else:
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("settle")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                if trace is not None:
                    trace.append("settle.admit.no_run")
                return reject(closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "error")
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "error"
                    )
                else:
                    assert run is not None
                    if effect_validate_call_id__call_id not in run.index:
                        if trace is not None:
                            trace.append("settle.admit.unknown")
                        return reject(
                            closure, reject_generation, "unknown_call", effect_validate_call_id__call_id, None
                        )
                    else:
                        assert run is not None
                        if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                            if trace is not None:
                                trace.append("settle.admit.duplicate")
                            return reject(
                                closure,
                                reject_generation,
                                "duplicate_settlement",
                                effect_validate_call_id__call_id,
                                None,
                            )
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "error"
                    )
                else:
                    if trace is not None:
                        trace.append("settle.admit.closed")
                    return reject(closure, reject_generation, "run_closed", effect_validate_call_id__call_id, "error")
        if trace is not None:
            trace.append("settle.normalize.outcome")
        effect_normalize_outcome__limits = closure._limits
        effect_normalize_outcome__code = code
        effect_normalize_outcome__code = (
            "tool_error"
            if semantics_._absent(code)
            else semantics_.bounded_string(code, effect_normalize_outcome__limits.max_code_bytes, "outcome.code")
        )
        effect_normalize_outcome__default = semantics_._default_message(closure._machine.texts, "error")
        effect_normalize_outcome__message = semantics_.error_message_text(
            message, effect_normalize_outcome__default, effect_normalize_outcome__limits.max_message_bytes
        )
        effect_normalize_outcome__settlement = (
            "error",
            "reported",
            None,
            effect_normalize_outcome__code,
            effect_normalize_outcome__message,
            None,
        )
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("settle")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.recheck.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "error"
                    )
                else:
                    assert run is not None
                    if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                        if trace is not None:
                            trace.append("settle.recheck.duplicate")
                        return reject(
                            closure,
                            reject_generation,
                            "duplicate_settlement",
                            effect_validate_call_id__call_id,
                            "error",
                        )
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.recheck.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "error"
                    )
                else:
                    if trace is not None:
                        trace.append("settle.recheck.closed")
                    return reject(closure, reject_generation, "run_closed", effect_validate_call_id__call_id, "error")
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass
            elif state == "open":
                if closure._limits.text_only_tool_results and semantics_._has_media(None):
                    if trace is not None:
                        trace.append("settle.commit.media_moved")
                    assert run is not None
                    effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                    effect_record_settlement__call = run.calls[effect_record_settlement__position]
                    (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__state,
                        effect_record_settlement___before,
                    ) = effect_record_settlement__call
                    effect_record_settlement__target = "error" if effect_record_settlement__state == "pending" else None
                    if effect_record_settlement__target is None:
                        effect_record_settlement__call = closure._machine.apply_call_event(
                            effect_record_settlement__call, "report_error", effect_normalize_outcome__settlement
                        )
                    else:
                        effect_record_settlement__call = (
                            effect_record_settlement__identifier,
                            effect_record_settlement__name,
                            effect_record_settlement__target,
                            effect_normalize_outcome__settlement,
                        )
                    staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                    effect_record_media_moved__aside = draft if draft is not None else (draft := draft_from(closure))
                    effect_record_media_moved__aside.calls[staged_call[0]] = staged_call[1]
                    effect_record_media_moved__diagnostics = effect_record_media_moved__aside.diagnostics
                    if len(effect_record_media_moved__diagnostics) < closure._limits.max_diagnostics:
                        effect_record_media_moved__aside.diagnostics = [
                            *effect_record_media_moved__diagnostics,
                            (
                                "media_moved",
                                effect_validate_call_id__call_id,
                                effect_record_media_moved__aside.generation,
                                "success",
                            ),
                        ]
                    assert reject_generation is not None
                    result_accepted__view = semantics_.ACCEPTED_TWIN()
                    result_accepted__view.generation = reject_generation
                    result_accepted__view.call_id = effect_validate_call_id__call_id
                    result_accepted__view._deferred = effect_normalize_outcome__settlement
                    result_accepted__view.__class__ = semantics_.Accepted
                    install_fields(closure, draft, None)
                    return result_accepted__view
                else:
                    if trace is not None:
                        trace.append("settle.commit.record")
                    assert run is not None
                    effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                    effect_record_settlement__call = run.calls[effect_record_settlement__position]
                    (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__state,
                        effect_record_settlement___before,
                    ) = effect_record_settlement__call
                    effect_record_settlement__target = "error" if effect_record_settlement__state == "pending" else None
                    if effect_record_settlement__target is None:
                        effect_record_settlement__call = closure._machine.apply_call_event(
                            effect_record_settlement__call, "report_error", effect_normalize_outcome__settlement
                        )
                    else:
                        effect_record_settlement__call = (
                            effect_record_settlement__identifier,
                            effect_record_settlement__name,
                            effect_record_settlement__target,
                            effect_normalize_outcome__settlement,
                        )
                    assert reject_generation is not None
                    result_accepted__view = semantics_.ACCEPTED_TWIN()
                    result_accepted__view.generation = reject_generation
                    result_accepted__view.call_id = effect_validate_call_id__call_id
                    result_accepted__view._deferred = effect_normalize_outcome__settlement
                    result_accepted__view.__class__ = semantics_.Accepted
                    run.calls[effect_record_settlement__position] = effect_record_settlement__call
                    return result_accepted__view
    run = closure._run
    raise spec_error("illegal_transition", operation="settle", state=run.state if run is not None else "none")


def method_cancel(closure: Instance, handle: object, call_id: Any, message: Any = ABSENT, code: Any = ABSENT) -> Any:
    """settle as cancel calls it: enter_settle, simplified (machine.specialize).

    Fixed: method='cancel', outcome=ABSENT, fixed_status='cancelled', content=ABSENT,
    message_is_error=False, default_code='cancelled'.
    """
    draft: Run | None = None
    staged_call: tuple[int, CallRecord] | None = None
    reject_generation: int | None = None
    effect_normalize_outcome__settlement: semantics_.SettlementRecord
    trace = closure._trace
    if trace is not None:
        trace.append("settle.prepare.read")
    effect_validate_call_id__call_id: object = call_id
    effect_validate_call_id__run = closure._run
    if not (
        type(effect_validate_call_id__call_id) is str
        and effect_validate_call_id__run is not None
        and (effect_validate_call_id__call_id in effect_validate_call_id__run.index)
    ):
        effect_validate_call_id__call_id = semantics_.bounded_string(
            effect_validate_call_id__call_id, closure._limits.max_id_bytes, "callId"
        )
    effect_read_handle_generation__untyped: semantics_.Any = handle
    effect_read_handle_generation__generation: object = (
        effect_read_handle_generation__untyped.generation
        if type(handle) is semantics_.BatchHandle
        else semantics_.read_key(handle, "generation")
    )
    if (
        type(effect_read_handle_generation__generation) is int
        and 0 < effect_read_handle_generation__generation <= 9007199254740991
    ):
        reject_generation = effect_read_handle_generation__generation
    else:
        reject_generation = semantics_.safe_positive_int(effect_read_handle_generation__generation)
    if semantics_._plain_text_or_absent(code) and semantics_._plain_text_or_absent(message):
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("settle")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                if trace is not None:
                    trace.append("settle.admit.no_run")
                return reject(
                    closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "cancelled"
                )
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "cancelled"
                    )
                else:
                    assert run is not None
                    if effect_validate_call_id__call_id not in run.index:
                        if trace is not None:
                            trace.append("settle.admit.unknown")
                        return reject(
                            closure, reject_generation, "unknown_call", effect_validate_call_id__call_id, None
                        )
                    else:
                        assert run is not None
                        if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                            if trace is not None:
                                trace.append("settle.admit.duplicate")
                            return reject(
                                closure,
                                reject_generation,
                                "duplicate_settlement",
                                effect_validate_call_id__call_id,
                                None,
                            )
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "cancelled"
                    )
                else:
                    if trace is not None:
                        trace.append("settle.admit.closed")
                    return reject(
                        closure, reject_generation, "run_closed", effect_validate_call_id__call_id, "cancelled"
                    )
            if trace is not None:
                trace.append("settle.normalize.outcome")
            effect_normalize_outcome__limits = closure._limits
            effect_normalize_outcome__code = code
            effect_normalize_outcome__code = (
                "cancelled"
                if semantics_._absent(code)
                else semantics_.bounded_string(code, effect_normalize_outcome__limits.max_code_bytes, "outcome.code")
            )
            effect_normalize_outcome__default = semantics_._default_message(closure._machine.texts, "cancelled")
            effect_normalize_outcome__message = semantics_.message_text(
                message, effect_normalize_outcome__default, effect_normalize_outcome__limits.max_message_bytes
            )
            effect_normalize_outcome__settlement = (
                "cancelled",
                "reported",
                None,
                effect_normalize_outcome__code,
                effect_normalize_outcome__message,
                None,
            )
            if closure._limits.text_only_tool_results and semantics_._has_media(None):
                if trace is not None:
                    trace.append("settle.commit.media_moved")
                assert run is not None
                effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                effect_record_settlement__call = run.calls[effect_record_settlement__position]
                (
                    effect_record_settlement__identifier,
                    effect_record_settlement__name,
                    effect_record_settlement__state,
                    effect_record_settlement___before,
                ) = effect_record_settlement__call
                effect_record_settlement__target = "cancelled" if effect_record_settlement__state == "pending" else None
                if effect_record_settlement__target is None:
                    effect_record_settlement__call = closure._machine.apply_call_event(
                        effect_record_settlement__call, "report_cancelled", effect_normalize_outcome__settlement
                    )
                else:
                    effect_record_settlement__call = (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__target,
                        effect_normalize_outcome__settlement,
                    )
                staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                effect_record_media_moved__aside = draft if draft is not None else (draft := draft_from(closure))
                effect_record_media_moved__aside.calls[staged_call[0]] = staged_call[1]
                effect_record_media_moved__diagnostics = effect_record_media_moved__aside.diagnostics
                if len(effect_record_media_moved__diagnostics) < closure._limits.max_diagnostics:
                    effect_record_media_moved__aside.diagnostics = [
                        *effect_record_media_moved__diagnostics,
                        (
                            "media_moved",
                            effect_validate_call_id__call_id,
                            effect_record_media_moved__aside.generation,
                            "success",
                        ),
                    ]
                assert reject_generation is not None
                result_accepted__view: semantics_.Any = semantics_.ACCEPTED_TWIN()
                result_accepted__view.generation = reject_generation
                result_accepted__view.call_id = effect_validate_call_id__call_id
                result_accepted__view._deferred = effect_normalize_outcome__settlement
                result_accepted__view.__class__ = semantics_.Accepted
                install_fields(closure, draft, None)
                return result_accepted__view
            else:
                if trace is not None:
                    trace.append("settle.commit.record")
                assert run is not None
                effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                effect_record_settlement__call = run.calls[effect_record_settlement__position]
                (
                    effect_record_settlement__identifier,
                    effect_record_settlement__name,
                    effect_record_settlement__state,
                    effect_record_settlement___before,
                ) = effect_record_settlement__call
                effect_record_settlement__target = "cancelled" if effect_record_settlement__state == "pending" else None
                if effect_record_settlement__target is None:
                    effect_record_settlement__call = closure._machine.apply_call_event(
                        effect_record_settlement__call, "report_cancelled", effect_normalize_outcome__settlement
                    )
                else:
                    effect_record_settlement__call = (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__target,
                        effect_normalize_outcome__settlement,
                    )
                assert reject_generation is not None
                result_accepted__view = semantics_.ACCEPTED_TWIN()
                result_accepted__view.generation = reject_generation
                result_accepted__view.call_id = effect_validate_call_id__call_id
                result_accepted__view._deferred = effect_normalize_outcome__settlement
                result_accepted__view.__class__ = semantics_.Accepted
                run.calls[effect_record_settlement__position] = effect_record_settlement__call
                return result_accepted__view
    else:
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("settle")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                if trace is not None:
                    trace.append("settle.admit.no_run")
                return reject(
                    closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "cancelled"
                )
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "cancelled"
                    )
                else:
                    assert run is not None
                    if effect_validate_call_id__call_id not in run.index:
                        if trace is not None:
                            trace.append("settle.admit.unknown")
                        return reject(
                            closure, reject_generation, "unknown_call", effect_validate_call_id__call_id, None
                        )
                    else:
                        assert run is not None
                        if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                            if trace is not None:
                                trace.append("settle.admit.duplicate")
                            return reject(
                                closure,
                                reject_generation,
                                "duplicate_settlement",
                                effect_validate_call_id__call_id,
                                None,
                            )
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.admit.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "cancelled"
                    )
                else:
                    if trace is not None:
                        trace.append("settle.admit.closed")
                    return reject(
                        closure, reject_generation, "run_closed", effect_validate_call_id__call_id, "cancelled"
                    )
        if trace is not None:
            trace.append("settle.normalize.outcome")
        effect_normalize_outcome__limits = closure._limits
        effect_normalize_outcome__code = code
        effect_normalize_outcome__code = (
            "cancelled"
            if semantics_._absent(code)
            else semantics_.bounded_string(code, effect_normalize_outcome__limits.max_code_bytes, "outcome.code")
        )
        effect_normalize_outcome__default = semantics_._default_message(closure._machine.texts, "cancelled")
        effect_normalize_outcome__message = semantics_.message_text(
            message, effect_normalize_outcome__default, effect_normalize_outcome__limits.max_message_bytes
        )
        effect_normalize_outcome__settlement = (
            "cancelled",
            "reported",
            None,
            effect_normalize_outcome__code,
            effect_normalize_outcome__message,
            None,
        )
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("settle")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.recheck.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "cancelled"
                    )
                else:
                    assert run is not None
                    if run.calls[run.index[effect_validate_call_id__call_id]][2] != "pending":
                        if trace is not None:
                            trace.append("settle.recheck.duplicate")
                        return reject(
                            closure,
                            reject_generation,
                            "duplicate_settlement",
                            effect_validate_call_id__call_id,
                            "cancelled",
                        )
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("settle.recheck.stale")
                    return reject(
                        closure, reject_generation, "stale_generation", effect_validate_call_id__call_id, "cancelled"
                    )
                else:
                    if trace is not None:
                        trace.append("settle.recheck.closed")
                    return reject(
                        closure, reject_generation, "run_closed", effect_validate_call_id__call_id, "cancelled"
                    )
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass
            elif state == "open":
                if closure._limits.text_only_tool_results and semantics_._has_media(None):
                    if trace is not None:
                        trace.append("settle.commit.media_moved")
                    assert run is not None
                    effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                    effect_record_settlement__call = run.calls[effect_record_settlement__position]
                    (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__state,
                        effect_record_settlement___before,
                    ) = effect_record_settlement__call
                    effect_record_settlement__target = (
                        "cancelled" if effect_record_settlement__state == "pending" else None
                    )
                    if effect_record_settlement__target is None:
                        effect_record_settlement__call = closure._machine.apply_call_event(
                            effect_record_settlement__call, "report_cancelled", effect_normalize_outcome__settlement
                        )
                    else:
                        effect_record_settlement__call = (
                            effect_record_settlement__identifier,
                            effect_record_settlement__name,
                            effect_record_settlement__target,
                            effect_normalize_outcome__settlement,
                        )
                    staged_call = (effect_record_settlement__position, effect_record_settlement__call)
                    effect_record_media_moved__aside = draft if draft is not None else (draft := draft_from(closure))
                    effect_record_media_moved__aside.calls[staged_call[0]] = staged_call[1]
                    effect_record_media_moved__diagnostics = effect_record_media_moved__aside.diagnostics
                    if len(effect_record_media_moved__diagnostics) < closure._limits.max_diagnostics:
                        effect_record_media_moved__aside.diagnostics = [
                            *effect_record_media_moved__diagnostics,
                            (
                                "media_moved",
                                effect_validate_call_id__call_id,
                                effect_record_media_moved__aside.generation,
                                "success",
                            ),
                        ]
                    assert reject_generation is not None
                    result_accepted__view = semantics_.ACCEPTED_TWIN()
                    result_accepted__view.generation = reject_generation
                    result_accepted__view.call_id = effect_validate_call_id__call_id
                    result_accepted__view._deferred = effect_normalize_outcome__settlement
                    result_accepted__view.__class__ = semantics_.Accepted
                    install_fields(closure, draft, None)
                    return result_accepted__view
                else:
                    if trace is not None:
                        trace.append("settle.commit.record")
                    assert run is not None
                    effect_record_settlement__position = run.index[effect_validate_call_id__call_id]
                    effect_record_settlement__call = run.calls[effect_record_settlement__position]
                    (
                        effect_record_settlement__identifier,
                        effect_record_settlement__name,
                        effect_record_settlement__state,
                        effect_record_settlement___before,
                    ) = effect_record_settlement__call
                    effect_record_settlement__target = (
                        "cancelled" if effect_record_settlement__state == "pending" else None
                    )
                    if effect_record_settlement__target is None:
                        effect_record_settlement__call = closure._machine.apply_call_event(
                            effect_record_settlement__call, "report_cancelled", effect_normalize_outcome__settlement
                        )
                    else:
                        effect_record_settlement__call = (
                            effect_record_settlement__identifier,
                            effect_record_settlement__name,
                            effect_record_settlement__target,
                            effect_normalize_outcome__settlement,
                        )
                    assert reject_generation is not None
                    result_accepted__view = semantics_.ACCEPTED_TWIN()
                    result_accepted__view.generation = reject_generation
                    result_accepted__view.call_id = effect_validate_call_id__call_id
                    result_accepted__view._deferred = effect_normalize_outcome__settlement
                    result_accepted__view.__class__ = semantics_.Accepted
                    run.calls[effect_record_settlement__position] = effect_record_settlement__call
                    return result_accepted__view
    run = closure._run
    raise spec_error("illegal_transition", operation="settle", state=run.state if run is not None else "none")


def method_close(closure: Instance, handle: object, reason: object) -> Any:
    """close as close calls it: enter_close, simplified (machine.specialize).

    Fixed: method='close'.
    """
    draft: Run | None = None
    reject_generation: int | None = None
    close_reason: CloseReasonRecord | None = None
    trace = closure._trace
    if trace is not None:
        trace.append("close.prepare.read")
    effect_read_handle_generation__untyped: semantics_.Any = handle
    effect_read_handle_generation__generation: object = (
        effect_read_handle_generation__untyped.generation
        if type(handle) is semantics_.BatchHandle
        else semantics_.read_key(handle, "generation")
    )
    if (
        type(effect_read_handle_generation__generation) is int
        and 0 < effect_read_handle_generation__generation <= 9007199254740991
    ):
        reject_generation = effect_read_handle_generation__generation
    else:
        reject_generation = semantics_.safe_positive_int(effect_read_handle_generation__generation)
    check_normalize_close_reason__reason = reason
    if type(check_normalize_close_reason__reason) is dict:
        check_normalize_close_reason__reason = dict(check_normalize_close_reason__reason)
    check_normalize_close_reason__items = (
        check_normalize_close_reason__reason.items() if type(check_normalize_close_reason__reason) is dict else ()
    )
    check_normalize_close_reason__plain = type(check_normalize_close_reason__reason) is dict and all(
        (
            type(check_normalize_close_reason__k) is str
            and semantics_._plain_text_or_absent(check_normalize_close_reason__v)
            for check_normalize_close_reason__k, check_normalize_close_reason__v in check_normalize_close_reason__items
        )
    )
    if check_normalize_close_reason__plain:
        reason = check_normalize_close_reason__reason
    if (
        check_normalize_close_reason__reason is None
        or check_normalize_close_reason__reason is semantics_.ABSENT
        or check_normalize_close_reason__plain
    ):
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("close")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                if trace is not None:
                    trace.append("close.admit.no_run")
                return reject(closure, reject_generation, "stale_generation", None, None)
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("close.admit.stale")
                    return reject(closure, reject_generation, "stale_generation", None, None)
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("close.admit.stale")
                    return reject(closure, reject_generation, "stale_generation", None, None)
                else:
                    if trace is not None:
                        trace.append("close.admit.idempotent")
                    return semantics_.take_snapshot(closure, None)
            if trace is not None:
                trace.append("close.normalize.reason")
            effect_normalize_close_reason__limits = closure._limits
            effect_normalize_close_reason__record = semantics_.plain_close_reason(
                reason, effect_normalize_close_reason__limits, closure._machine.texts
            )
            close_reason = (
                semantics_.read_close_reason(reason, effect_normalize_close_reason__limits, closure._machine.texts)
                if effect_normalize_close_reason__record is None
                else effect_normalize_close_reason__record
            )
            if trace is not None:
                trace.append("close.commit.close")
            assert close_reason is not None
            semantics_._close_calls(
                closure._machine,
                draft if draft is not None else (draft := draft_from(closure)),
                close_reason,
                closure._machine.call_events["synthesize_pending"][close_reason[0]],
            )
            (draft if draft is not None else (draft := draft_from(closure))).close_reason = close_reason
            assert close_reason is not None, "normalize_close_reason ran before the commit"
            target = close_reason[0]
            if target not in ("error", "cancelled"):
                raise spec_error("illegal_transition", operation="close", state=target)
            if draft is None:
                draft = draft_from(closure)
            draft.state = target
            result = semantics_.take_snapshot(closure, draft)
            install_fields(closure, draft, None)
            return result
    else:
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("close")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                if trace is not None:
                    trace.append("close.admit.no_run")
                return reject(closure, reject_generation, "stale_generation", None, None)
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("close.admit.stale")
                    return reject(closure, reject_generation, "stale_generation", None, None)
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("close.admit.stale")
                    return reject(closure, reject_generation, "stale_generation", None, None)
                else:
                    if trace is not None:
                        trace.append("close.admit.idempotent")
                    return semantics_.take_snapshot(closure, None)
        if trace is not None:
            trace.append("close.normalize.reason")
        effect_normalize_close_reason__limits = closure._limits
        effect_normalize_close_reason__record = semantics_.plain_close_reason(
            reason, effect_normalize_close_reason__limits, closure._machine.texts
        )
        close_reason = (
            semantics_.read_close_reason(reason, effect_normalize_close_reason__limits, closure._machine.texts)
            if effect_normalize_close_reason__record is None
            else effect_normalize_close_reason__record
        )
        lock = closure._lock
        if lock._is_owned():
            raise reentry_error("close")
        with lock:
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass
            elif state == "open":
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("close.recheck.stale")
                    return reject(closure, reject_generation, "stale_generation", None, None)
            elif state in ("complete", "error", "cancelled"):
                if run is None or handle is not run.handle:
                    if trace is not None:
                        trace.append("close.recheck.stale")
                    return reject(closure, reject_generation, "stale_generation", None, None)
                else:
                    if trace is not None:
                        trace.append("close.recheck.closed")
                    return semantics_.take_snapshot(closure, None)
            run = closure._run
            state = run.state if run is not None else "none"
            if state == "none":
                pass
            elif state == "open":
                if trace is not None:
                    trace.append("close.commit.close")
                assert close_reason is not None
                semantics_._close_calls(
                    closure._machine,
                    draft if draft is not None else (draft := draft_from(closure)),
                    close_reason,
                    closure._machine.call_events["synthesize_pending"][close_reason[0]],
                )
                (draft if draft is not None else (draft := draft_from(closure))).close_reason = close_reason
                assert close_reason is not None, "normalize_close_reason ran before the commit"
                target = close_reason[0]
                if target not in ("error", "cancelled"):
                    raise spec_error("illegal_transition", operation="close", state=target)
                if draft is None:
                    draft = draft_from(closure)
                draft.state = target
                result = semantics_.take_snapshot(closure, draft)
                install_fields(closure, draft, None)
                return result
    run = closure._run
    raise spec_error("illegal_transition", operation="close", state=run.state if run is not None else "none")


# public method -> its fast entry point (the public class calls them by name)
METHODS: Final[Mapping[str, Callable[..., Any]]] = {
    "begin": method_begin,
    "settle": method_settle,
    "succeed": method_succeed,
    "fail": method_fail,
    "cancel": method_cancel,
    "close": method_close,
}
