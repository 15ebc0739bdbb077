"""The public API: :class:`ToolCallClosure` and its factory.

Theory of operation
-------------------
Every method is a thin shell: it passes its arguments — the inputs of its
operation's context (:mod:`.machine.context`) — to the compiled operation,
which keeps the context's fields as local variables.  For the shipped table
that is a function of the checked-in :mod:`.machine.generated`
(``generated.enter_settle``), called directly with its parameters by
position; for any other machine (another table, ``TCC_MACHINE=walk``, a
stale generated module) it is the machine's ``entries``.  Legality, precedence
and state changes are decided by ``spec/machine.json``; the meaning of each
step lives in :mod:`.machine.semantics`.

Exports.  The table names each export method's *format*; this class binds
the format to its provider's renderer (:data:`.providers.RENDERERS`) and hands
it to the operation, so the machine never imports a provider.  A result made
of content parts (``parts.content()``, deviation D22) is rendered by each
export in its provider's native shape (:mod:`.providers.parts_render`: the
table of parts per export and the documented fallbacks); two exports take
an option for what a model family refuses: ``to_bedrock_tool_results(…,
media=False)`` and ``to_gemini_function_responses(…, family="gemini-2")``.

Threading model.  Each instance owns one lock (a ``threading.RLock``, used
for its owner check only).  Every operation is atomic: its decision and its
commit happen under the lock, in one acquisition.  Caller code — ``__str__``, properties, ``__json__`` hooks,
custom mappings — runs only in the unlocked ``prepare`` and ``normalize``
phases, so it can call back into the closure without deadlocking.  Another
thread's operation that lands while this one runs caller code is treated
exactly like a nested operation: the recheck sees it, and the first terminal
result wins.  A finalizer, signal handler or weakref callback that calls in
while its own thread holds the lock gets ``UsageError`` ``reentrant_call``
instead of a deadlock.

Reliability.  A commit takes effect as one step (invariant I9, see
:mod:`.machine.context`): an exception of any kind that lands while an
operation holds the lock leaves the instance as it was.  An instance cannot
be copied or pickled (a copy would share its lock, run and registry).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, cast, final, overload

from tool_call_closure.absent import ABSENT
from tool_call_closure.ecma import truncate_utf8
from tool_call_closure.ecma_json import json_stringify
from tool_call_closure.errors import TableError, UsageError, spec_error
from tool_call_closure.inputs import CallInput, CloseReasonInput, Outcome
from tool_call_closure.machine.context import (
    OwnedLock,
    Renderer,
    Run,
    SnapshotRecord,
)
from tool_call_closure.machine.interpreter import MACHINE, Machine
from tool_call_closure.machine.reading import MAX_SAFE_INTEGER
from tool_call_closure.machine.table import TABLE
from tool_call_closure.providers import RENDERERS
from tool_call_closure.providers.parts_render import GeminiFamily, bedrock_media, gemini_family
from tool_call_closure.providers.sdk_types import (
    AnthropicToolResultBlockParam,
    BedrockContentBlock,
    ChatCompletionToolMessageParam,
    GeminiPart,
    ResponsesFunctionCallOutput,
)
from tool_call_closure.values import (
    BatchHandle,
    BeginResult,
    CallRecord,
    DiagnosticRecord,
    Limits,
    Rejection,
    SettlementResult,
    Snapshot,
    TurnToken,
)

if TYPE_CHECKING:  # its signatures; at run time the module the shipped machine runs: compiled, or this one
    from tool_call_closure.machine import generated
else:
    generated = MACHINE.module

__all__ = ["GenerationEnd", "OnGenerationEnd", "ToolCallClosure", "create_tool_call_closure", "to_json"]

GenerationEnd: TypeAlias = Literal["superseded", "closed", "sealed"]
"""How a generation ended: a later ``begin`` superseded it, ``close`` closed it, or ``seal`` sealed it."""

_LOGGER: Final = logging.getLogger("tool_call_closure")

OnGenerationEnd: TypeAlias = Callable[["Snapshot", GenerationEnd], None]
"""``begin``'s ``on_end``: called once with the generation's final (closed) snapshot and how it ended."""


def _limit(value: object, name: str, default: int) -> int:
    """OPT-3/OPT-4: ``None`` means the default; otherwise an int in 1..2**53-1 (bool excluded)."""
    if value is None:
        return default
    if type(value) is int or (issubclass(type(value), int) and not issubclass(type(value), bool)):
        number = int.__index__(value)  # type: ignore[arg-type]  # an int subclass: its plain value
        if 1 <= number <= MAX_SAFE_INTEGER:
            return number
    raise spec_error("option_invalid", option=name)


def _flag(value: object, name: str, default: bool) -> bool:
    """A flag option (deviation D26): ``None`` means the default; otherwise ``True`` or ``False`` exactly."""
    if value is None:
        return default
    if type(value) is bool:
        return value
    raise spec_error("option_not_flag", option=name)


@final
class ToolCallClosure:
    """Gives every announced tool call exactly one terminal outcome.

    ``begin`` announces a generation of calls and returns its handle;
    ``settle`` (or ``succeed``/``fail``/``cancel``) records each real result
    once; ``close`` gives every call still pending an explicit synthetic error
    or cancellation; ``seal`` closes a generation whose calls all reported.
    Results for an older generation, a look-alike handle or an already settled
    call are *rejected*, never applied; so is a model turn requested before a
    newer ``begin``, when its calls are begun with the ``turn_token()`` taken
    for it (deviation D20).  Closed snapshots export to OpenAI
    Chat Completions, OpenAI Responses, Anthropic Messages, Gemini and Bedrock
    Converse payloads, typed as each SDK's own parameter type.

    Limits are keyword-only; ``None`` means the default.  Every limit must be
    an ``int`` in 1..2**53-1.  ``text_only_tool_results=True`` says the
    exports this closure feeds carry text only in a tool result (OpenAI Chat,
    Mistral): an accepted success whose content parts hold media then records
    a ``media_moved`` diagnostic on the snapshot (deviation D26).
    """

    __slots__ = (
        "__weakref__",
        "_end_watch",
        "_exporters",
        "_limits",
        "_lock",
        "_machine",
        "_no_run_diagnostics",
        "_records",
        "_run",
        "_superseded_message",
        "_trace",
    )

    def __init__(
        self,
        *,
        max_calls: int | None = 1000,
        max_diagnostics: int | None = 100,
        max_result_bytes: int | None = 1_048_576,
        max_message_bytes: int | None = 4096,
        max_id_bytes: int | None = 512,
        max_name_bytes: int | None = 512,
        max_code_bytes: int | None = 128,
        text_only_tool_results: bool | None = False,
    ) -> None:
        given = {
            "max_calls": max_calls,
            "max_diagnostics": max_diagnostics,
            "max_result_bytes": max_result_bytes,
            "max_message_bytes": max_message_bytes,
            "max_id_bytes": max_id_bytes,
            "max_name_bytes": max_name_bytes,
            "max_code_bytes": max_code_bytes,
        }
        # Validated in the table's order; the first invalid one raises (OPT-5).
        limits: dict[str, Any] = {o.python: _limit(given[o.python], o.id, o.default) for o in TABLE.options}
        given_flags = {"text_only_tool_results": text_only_tool_results}  # then the flags (deviation D26)
        flags = {f.python: _flag(given_flags[f.python], f.id, f.default) for f in TABLE.flags}
        self._limits = Limits(**limits, **flags)
        # An RLock only because it knows its owner: the machine refuses reentry (checked before every
        # acquisition, never taken twice), so a finalizer of the thread holding it cannot deadlock it.
        self._lock: OwnedLock = cast(OwnedLock, threading.RLock())  # typeshed omits RLock._is_owned
        # The whole committed state: generation counter, calls, state, close reason and diagnostics.
        # A commit replaces it (or one call record in it) with one assignment (machine.context.install).
        self._run: Run | None = None
        self._no_run_diagnostics: list[DiagnosticRecord] = []  # rejections before the first begin (cleared by it)
        # id(snapshot) -> the instance's own record of it, for as long as the handed-out view lives: also the
        # identity registry exports consult (a record is a weak reference to its view; SNAP-5, JS-12).
        self._records: dict[int, SnapshotRecord] = {}
        # When a list, the id of every row that fires is appended (coverage of the table by tests and vectors).
        self._trace: list[str] | None = None
        self._end_watch = _EndWatch()  # begin's on_end callbacks (an observer of the shell, not part of the table)
        self._use_machine(MACHINE)

    def _use_machine(self, machine: Machine) -> None:
        self._machine = machine
        self._exporters = _EXPORTERS if machine is MACHINE else _bind_renderers(machine)
        self._superseded_message = truncate_utf8(machine.texts["superseded_message"], self._limits.max_message_bytes)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        raise spec_error("closure_final")

    # A copy would share the lock, the run and the registry with the original (it would settle the
    # original's calls and export its snapshots) while disagreeing on the generation: refused.
    def __copy__(self) -> ToolCallClosure:
        raise spec_error("closure_not_copyable", operation="copy.copy")

    def __deepcopy__(self, memo: object) -> ToolCallClosure:
        raise spec_error("closure_not_copyable", operation="copy.deepcopy")

    def __reduce_ex__(self, protocol: object) -> Any:
        raise spec_error("closure_not_copyable", operation="pickling")

    def __reduce__(self) -> Any:
        raise spec_error("closure_not_copyable", operation="pickling")

    @property
    def _generation(self) -> int:
        """The generation counter: the installed run's number (0 before the first begin)."""
        run = self._run
        return 0 if run is None else run.generation

    @property
    def _diagnostics(self) -> list[DiagnosticRecord]:
        """The current generation's diagnostics (before the first begin, a list begin discards)."""
        run = self._run
        return self._no_run_diagnostics if run is None else run.diagnostics

    def __repr__(self) -> str:
        run = self._run
        state = "none" if run is None else f"generation {run.generation} {run.state}"
        return f"<ToolCallClosure {state}>"

    def _committed_state(self) -> tuple[Run | None, tuple[CallRecord, ...], tuple[DiagnosticRecord, ...]]:
        """The committed state at one instant, for an image (``durable.image``): the run, its calls, the diagnostics.

        Read under the lock, so no commit lands between the reads.  The
        records are plain tuples; the ``Run`` is the installed one (not to be changed).
        """
        with self._lock:
            run = self._run
            return run, (() if run is None else tuple(run.calls)), tuple(self._diagnostics)

    def _with_committed_state(self, run: Run | None, diagnostics: list[DiagnosticRecord]) -> None:
        """Install a restored state (``durable.image``) into a new instance no operation has touched yet."""
        with self._lock:
            self._run = run
            self._no_run_diagnostics = diagnostics if run is None else []

    @property
    def limits(self) -> Limits:
        """The limits this instance was created with."""
        return self._limits

    @property
    def active_generation(self) -> int | None:
        """The generation of the most recent successful ``begin`` (``None`` before the first)."""
        if self._machine is _SHIPPED:
            return generated.enter_active_generation(self, "active_generation")  # type: ignore[no-any-return]
        result: int | None = self._machine.entries["active_generation"](self, "active_generation")
        return result

    def turn_token(self) -> TurnToken:
        """The generation now, as a :class:`~.TurnToken` for ``begin(calls, turn=token)`` (deviation D20).

        Take it just before requesting a model turn; when the turn's calls
        arrive, ``begin(calls, turn=token)`` starts them only if no other
        ``begin`` happened in between.  The generation is 0 before the first ``begin``.
        """
        if self._machine is _SHIPPED:
            return generated.enter_turn_token(self, "turn_token")  # type: ignore[no-any-return]
        result: TurnToken = self._machine.entries["turn_token"](self, "turn_token")
        return result

    @overload
    def begin(
        self, calls: Sequence[CallInput], *, turn: None = None, on_end: OnGenerationEnd | None = None
    ) -> BeginResult: ...

    @overload
    def begin(
        self, calls: Sequence[CallInput], *, turn: TurnToken, on_end: OnGenerationEnd | None = None
    ) -> BeginResult | Rejection: ...

    def begin(
        self, calls: Sequence[CallInput], *, turn: TurnToken | None = None, on_end: OnGenerationEnd | None = None
    ) -> BeginResult | Rejection:
        """Announce a new generation of calls (a list or tuple of ``{"id", "name"}`` mappings).

        An open generation is closed first, its pending calls cancelled with
        code ``superseded``; its final snapshot is the result's ``superseded``.
        Raises :class:`~.UsageError` or :class:`~.LimitError` for invalid
        calls, changing nothing.

        With ``turn`` (a :class:`~.TurnToken` from :meth:`turn_token`, taken
        before the model turn was requested) the begin is a compare-and-set
        (deviation D20): it commits only if the generation is still the
        token's; otherwise it returns a ``stale_turn`` :class:`~.Rejection`
        (recorded as a diagnostic) and changes nothing else: the newer batch
        stays current and no generation number is used.  Invalid calls still
        raise first; a ``turn`` that is not a ``TurnToken`` raises ``UsageError``.

        ``on_end(snapshot, how)`` (deviation D21) is called exactly once when
        the new generation ends — superseded by a later ``begin``, closed or
        sealed, by anyone — with its final closed snapshot, in the thread whose
        operation ended it, after that operation and outside the lock.  An
        exception it raises is logged (logger ``tool_call_closure``) and changes nothing.
        """
        if on_end is None and self._machine is _SHIPPED:
            result: BeginResult | Rejection = generated.method_begin(self, calls, turn)
        elif on_end is None:
            result = self._machine.entries["begin"](self, "begin", calls, turn)
        else:
            result = self._end_watch.begin_watched(
                lambda: self._machine.entries["begin"](self, "begin", calls, turn), on_end
            )
        # The watch first: reading ``superseded`` builds the snapshot (values.BeginResult), needed only for on_end.
        if self._end_watch.active and isinstance(result, BeginResult) and result.superseded is not None:
            self._end_watch.ended(result.superseded, "superseded")
        return result

    def settle(self, handle: BatchHandle, call_id: str, outcome: Outcome) -> SettlementResult:
        """Record the terminal outcome of ``call_id``: ``{"status": "success", "content": …}`` or
        ``{"status": "error" | "cancelled", "code"?: str, "message"?: …}``.

        Returns :class:`~.Accepted` once per call; a stale handle, a closed
        generation, an unknown id or a second settlement returns a
        :class:`~.Rejection` and changes nothing (apart from recording it as a
        diagnostic).  Invalid arguments raise for a current, open, pending call.
        """
        if self._machine is _SHIPPED:
            return generated.method_settle(self, handle, call_id, outcome)  # type: ignore[no-any-return]
        result: SettlementResult = self._machine.entries["settle"](self, "settle", handle, call_id, outcome=outcome)
        return result

    def succeed(self, handle: BatchHandle, call_id: str, content: Any = ABSENT) -> SettlementResult:
        """``settle`` with status success; ``content`` is a string (stored as is) or a JSON-compatible value.

        Or parts (deviation D22): ``succeed(handle, id, content([...]))``, text,
        images, files and JSON, recorded as they are (``max_result_bytes`` bounds
        their ``size``) and rendered natively by each export.
        """
        if self._machine is _SHIPPED:  # the checked-in machine: succeed's own entry point (generated.METHODS)
            return generated.method_succeed(self, handle, call_id, content)  # type: ignore[no-any-return]
        result: SettlementResult = self._machine.entries["settle"](
            self, "succeed", handle, call_id, fixed_status="success", content=content
        )
        return result

    def fail(
        self, handle: BatchHandle, call_id: str, error: BaseException | object = ABSENT, code: str | None = None
    ) -> SettlementResult:
        """``settle`` with status error; an exception contributes its text, never its traceback."""
        if self._machine is _SHIPPED:
            return generated.method_fail(self, handle, call_id, error, code)  # type: ignore[no-any-return]
        result: SettlementResult = self._machine.entries["settle"](
            self,
            "fail",
            handle,
            call_id,
            fixed_status="error",
            message=error,
            message_is_error=True,
            code=code,
            default_code=self._machine.texts["fail_code"],
        )
        return result

    def cancel(
        self, handle: BatchHandle, call_id: str, message: object = None, code: str | None = None
    ) -> SettlementResult:
        """``settle`` with status cancelled."""
        if self._machine is _SHIPPED:
            return generated.method_cancel(self, handle, call_id, message, code)  # type: ignore[no-any-return]
        result: SettlementResult = self._machine.entries["settle"](
            self,
            "cancel",
            handle,
            call_id,
            fixed_status="cancelled",
            message=message,
            code=code,
            default_code=self._machine.texts["cancel_code"],
        )
        return result

    def close(self, handle: BatchHandle, reason: CloseReasonInput | None = None) -> Snapshot | Rejection:
        """Close the current generation: every pending call gets a synthetic outcome.

        ``reason`` is ``{"status": "error" | "cancelled", "code"?, "message"?,
        "sideEffectState"?: "unknown" | "not_started"}`` (``side_effect_state``
        is accepted too); every field is optional.  Idempotent: on a closed
        generation it returns a fresh snapshot without reading ``reason``.
        """
        if self._machine is _SHIPPED:
            result: Snapshot | Rejection = generated.method_close(self, handle, reason)
        else:
            result = self._machine.entries["close"](self, "close", handle, reason)
        if self._end_watch.active and isinstance(result, Snapshot):
            self._end_watch.ended(result, "closed")
        return result

    def seal(self, handle: BatchHandle) -> Snapshot | Rejection:
        """Close a generation whose calls were all reported (``pending_calls`` rejection otherwise)."""
        if self._machine is _SHIPPED:
            result: Snapshot | Rejection = generated.enter_seal(self, "seal", handle)
        else:
            result = self._machine.entries["seal"](self, "seal", handle)
        if self._end_watch.active and isinstance(result, Snapshot):
            sealed = result.close_reason is not None and result.close_reason.status == "complete"
            self._end_watch.ended(result, "sealed" if sealed else "closed")
        return result

    def snapshot(self) -> Snapshot | None:
        """An immutable view of the current generation (``None`` before the first ``begin``)."""
        if self._machine is _SHIPPED:
            return generated.enter_snapshot(self, "snapshot")  # type: ignore[no-any-return]
        result: Snapshot | None = self._machine.entries["snapshot"](self, "snapshot")
        return result

    # Exports.  A snapshot argument typed ``Snapshot | Rejection | None`` lets ``close()``'s result be passed
    # as is: a Rejection is not a snapshot this instance produced, so it is refused (snapshot_foreign).

    def to_openai_chat_completions(
        self, snapshot: Snapshot | Rejection | None = None
    ) -> list[ChatCompletionToolMessageParam]:
        """``[{"role": "tool", "tool_call_id", "content"}]`` for a closed snapshot (default: a fresh one).

        A tool message is text only: a result made of parts (D22) gives its
        text and a note per media part; ``openai_chat.next_messages(…,
        media_from=snapshot)`` sends the media in a user message after them.
        """
        payload: list[ChatCompletionToolMessageParam] = self._export("to_openai_chat_completions", snapshot)
        return payload

    def to_openai_responses(self, snapshot: Snapshot | Rejection | None = None) -> list[ResponsesFunctionCallOutput]:
        """``[{"type": "function_call_output", "call_id", "output"}]`` for a closed snapshot.

        A result made of parts (D22): ``output`` is a list of ``input_text``,
        ``input_image`` and ``input_file`` items.
        """
        payload: list[ResponsesFunctionCallOutput] = self._export("to_openai_responses", snapshot)
        return payload

    def to_anthropic_tool_results(
        self, snapshot: Snapshot | Rejection | None = None
    ) -> list[AnthropicToolResultBlockParam]:
        """``[{"type": "tool_result", "tool_use_id", "content", "is_error"?}]`` for a closed snapshot.

        A result made of parts (D22): ``content`` is a list of ``text``,
        ``image`` and ``document`` blocks.
        """
        payload: list[AnthropicToolResultBlockParam] = self._export("to_anthropic_tool_results", snapshot)
        return payload

    def to_gemini_function_responses(
        self, snapshot: Snapshot | Rejection | None = None, *, family: GeminiFamily = "gemini-3"
    ) -> list[GeminiPart]:
        """``[{"function_response": {"id"?, "name", "response": {"output"} | {"error"}}}]`` for a closed snapshot.

        Send them all in one ``Content(role="user")``; a call Gemini sent
        without an id is answered without one (see :mod:`.providers.gemini`).
        A success made of parts (D22) puts its media in the function
        response's ``parts`` for ``family="gemini-3"``; ``family="gemini-2"``
        (no media in a function response) writes a note for each instead.
        """
        renderer = (
            None
            if gemini_family(family) == "gemini-3"
            else functools.partial(cast(Any, self._exporters[_GEMINI]), family=family)
        )
        payload: list[GeminiPart] = self._export(_GEMINI, snapshot, renderer)
        return payload

    def to_bedrock_tool_results(
        self, snapshot: Snapshot | Rejection | None = None, *, media: bool = True
    ) -> list[BedrockContentBlock]:
        """``[{"toolResult": {"toolUseId", "content": [{"text"}], "status"?: "error"}}]`` for a closed snapshot.

        A success made of parts (D22) has ``text``, ``json``, ``image`` and
        ``document`` blocks; ``media=False``, for a model that refuses media in
        a tool result, writes a note for each image and PDF instead.
        """
        renderer = (
            None if bedrock_media(media) else functools.partial(cast(Any, self._exporters[_BEDROCK]), media=False)
        )
        payload: list[BedrockContentBlock] = self._export(_BEDROCK, snapshot, renderer)
        return payload

    def _export(self, method: str, snapshot: Any, renderer: Renderer | None = None) -> Any:
        if renderer is None:
            renderer = self._exporters[method]
        if self._machine is _SHIPPED:
            return generated.enter_export(self, method, snapshot, renderer)
        result: list[dict[str, Any]] = self._machine.entries["export"](self, method, snapshot, renderer)
        return result


@final
class _EndWatch:
    """``begin``'s ``on_end`` callbacks: who waits for which generation to end, and ends not yet claimed.

    Generations end in the public methods' shells, after the compiled
    operation returned (``begin`` superseding, ``close``, ``seal``), never
    under the instance's lock: a callback is caller code.  The one race is
    a generation ended by another thread *between* the commit of the
    ``begin`` that announced it and the registration of its callback.  So a
    watched ``begin`` counts itself in flight before its commit, and while
    any is in flight every end is kept (``pending``); the registration
    claims its generation's end if it already happened.  Nothing is kept once
    no watched ``begin`` is in flight, so memory is bounded by the callbacks
    of generations still open (at most one per instance: the current one).
    """

    __slots__ = ("active", "callbacks", "in_flight", "lock", "pending")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.callbacks: dict[int, OnGenerationEnd] = {}
        self.pending: dict[int, tuple[Snapshot, GenerationEnd]] = {}
        self.in_flight = 0
        self.active = False  # callbacks or in_flight: read without the lock by the shells' fast path

    def begin_watched(self, begin: Callable[[], BeginResult | Rejection], on_end: object) -> BeginResult | Rejection:
        if not callable(on_end):
            raise UsageError(f"on_end must be a function or None, got {type(on_end).__name__}", code="on_end_invalid")
        with self.lock:
            self.in_flight += 1
            self.active = True
        try:
            result = begin()
        except BaseException:
            self._leave(None, on_end)
            raise
        claimed = self._leave(result.generation if isinstance(result, BeginResult) else None, on_end)
        if claimed is not None:
            _call_on_end(cast(OnGenerationEnd, on_end), *claimed)  # checked callable above
        return result

    def _leave(self, generation: int | None, on_end: object) -> tuple[Snapshot, GenerationEnd] | None:
        """A watched begin is no longer in flight: register its callback, or claim the end that came first."""
        with self.lock:
            self.in_flight -= 1
            claimed = None
            if generation is not None:
                claimed = self.pending.pop(generation, None)
                if claimed is None:
                    self.callbacks[generation] = cast(OnGenerationEnd, on_end)  # checked callable by the caller
            if self.in_flight == 0:
                self.pending.clear()
            self.active = bool(self.callbacks) or self.in_flight > 0
        return claimed

    def ended(self, snapshot: Snapshot, how: GenerationEnd) -> None:
        """Generation ``snapshot.generation`` ended (or was found closed again): call its callback once."""
        with self.lock:
            callback = self.callbacks.pop(snapshot.generation, None)
            if callback is None and self.in_flight > 0:
                self.pending.setdefault(snapshot.generation, (snapshot, how))
            self.active = bool(self.callbacks) or self.in_flight > 0
        if callback is not None:
            _call_on_end(callback, snapshot, how)


def _call_on_end(callback: OnGenerationEnd, snapshot: Snapshot, how: GenerationEnd) -> None:
    """The operation that ended the generation has committed: an exception here must not look like its failure.

    So it is logged and ignored, as ``concurrent.futures`` does with an
    exception raised by a done callback (``SystemExit``, ``KeyboardInterrupt``
    and other non-``Exception`` exceptions propagate).
    """
    try:
        callback(snapshot, how)
    except Exception:  # no caller to reach: logged
        _LOGGER.exception("exception calling on_end of generation %d (%s)", snapshot.generation, how)


def _bind_renderers(machine: Machine) -> Mapping[str, Renderer]:
    """Export method -> the renderer of the format the table names for it; a format no provider renders is refused."""
    unknown = sorted(set(machine.export_format.values()) - set(RENDERERS))
    if unknown:
        raise TableError(
            f"invalid transition table: export format {unknown[0]!r} has no renderer", code="table_invalid"
        )
    return {method: RENDERERS[format_] for method, format_ in machine.export_format.items()}


_EXPORTERS: Final = _bind_renderers(MACHINE)  # the shipped table's formats all have renderers, checked at import

# The shipped machine when it runs the checked-in module (machine/generated.py, or its compiled build): the methods
# call its functions directly, positionally.  None when that module is stale or TCC_MACHINE=walk: every call goes
# through entries.
_SHIPPED: Final = MACHINE if MACHINE.module is not None else None
_GEMINI: Final = "to_gemini_function_responses"
_BEDROCK: Final = "to_bedrock_tool_results"


def create_tool_call_closure(**options: Any) -> ToolCallClosure:
    """``ToolCallClosure(**options)``."""
    return ToolCallClosure(**options)


def to_json(value: object) -> str:
    """The canonical JSON text of any value the closure returns (or any JSON-compatible value).

    Identical to the original's ``JSON.stringify`` of the same value: camelCase
    keys in the original's order, a handle as ``{"generation": n}``,
    ECMAScript number formatting.
    """
    return json_stringify(value)


def _closure_with_machine(machine: Machine, **options: Any) -> ToolCallClosure:
    """A closure driven by another compiled table (for table experiments and tests)."""
    closure = ToolCallClosure(**options)
    closure._use_machine(machine)
    return closure
