"""One running batch: who started, who settled, and how the batch ends — shared by both runners.

Theory of operation
-------------------
A runner announces the calls with :meth:`~tool_call_closure.ToolCallClosure.begin`
and then drives every call to exactly one outcome *through the closure's own
API*: ``succeed``, ``fail``, ``settle``, ``close`` and ``seal``.  The closure
is the only arbiter: when two outcomes race (a result and a timeout, a result
and a close), the first one the closure accepts is the call's outcome and the
other is a :class:`~tool_call_closure.Rejection`.  :class:`RunningBatch` only
keeps the runner's bookkeeping beside it:

* ``started`` — the tool was invoked.  A call starts under the batch lock and
  only while the run goes on, so once the runner concludes (or learns it must
  stop) the set of started calls is final: a call that never started never will.
* ``settled`` — the call has its outcome (the closure accepted one of the
  runner's, or refused one as ``duplicate_settlement``: someone else's came first).
* ``final`` — the generation's final snapshot, whoever ended it.  The batch
  registers ``begin``'s ``on_end``, so the closure tells it, once, when the
  generation ends: superseded by a later ``begin``, closed or sealed, by the
  runner or by anyone else.  That is how a run whose tools hang learns that it
  was superseded or closed elsewhere, and what its report's ``snapshot`` is.

How each path settles a call (codes and messages: :mod:`.outcomes`):

==============================  ==========================================================
event                           outcome
==============================  ==========================================================
call has a ``problem``          ``fail`` ``invalid_tool_call`` before anything runs
no tool of that name            ``fail`` ``unknown_tool`` before anything runs
arguments do not bind           ``fail`` ``invalid_tool_call`` before anything runs
tool returns a value            ``succeed``; over ``max_result_bytes`` → ``result_too_large``;
                                not JSON-compatible, or its conversion raised → ``invalid_result``
tool raises (anything)          ``fail`` ``tool_error`` with the exception's text
tool raises ``ToolCallError``   ``fail`` with its own code and message
per-call timeout                ``fail`` ``tool_timeout`` (the tool is then cancelled)
the executor cannot run it      ``fail`` ``executor_failed`` (threads; the tool never started)
deadline / abort / cancellation ``close`` (see below)
==============================  ==========================================================

Every path above gives the closure plain data it cannot fail to read: the
runner computes an exception's text itself (a ``__str__`` that raises gives
the class name), and a value whose conversion raises is an explicit error.
So no outcome is lost to caller code, and an operation of the closure can only
raise for a limit the runner checked before ``begin`` (:func:`check_closure`).

Closing.  A close reason carries one ``sideEffectState`` for every call still
pending, but a call whose tool started may have had side effects
(``unknown``) while a call that never started had none (``not_started``).  So
:meth:`RunningBatch.close` settles the two groups apart:

* if no pending call has started, one ``close`` with ``not_started`` settles them all;
* otherwise the calls that never started are first settled one by one with
  ``settle`` (same status and code, the message saying that the call never
  started), and then one ``close`` with ``unknown`` settles the started ones.

How the run ended is read from the final snapshot, not assumed (:meth:`RunningBatch.conclude`):
a generation superseded before the runner's own ``close``/``seal`` took
effect ended ``superseded``; one whose close reason is not the runner's was
``closed_elsewhere``.  So ``ending`` always agrees with ``snapshot``.

Late results.  A value or an exception that arrives after its call has its
outcome is still offered to the closure, which fences it
(``duplicate_settlement``, ``run_closed`` or ``stale_generation``) and records
it as a diagnostic; the runner reports it as a :class:`.outcomes.LateResult`
and it never reaches an export.

``on_late``.  Every late result is also passed to the caller's ``on_late``,
in the worker that delivered it (a tool task, a pool thread), after the
closure fenced it and the batch recorded it, with no lock held.  So an
exception from ``on_late`` cannot change any outcome: the call already has
its one outcome and the result is already fenced.  It is not the tool's
outcome either, and it has no caller to reach — the run may have returned
long ago — so the batch catches it and hands it to the runner's reporter,
which reports it the way its concurrency model reports an exception that has
nowhere to go: the asyncio runner through ``loop.call_exception_handler``
(as asyncio does for a callback; ``SystemExit`` and ``KeyboardInterrupt``
propagate, as there), the thread runner through ``threading.excepthook`` (as
threading does for an exception that ends a thread).  The worker then
carries on as if ``on_late`` had returned, and later late results still
reach ``on_late``.

Checkpoints.  ``checkpoint(label)`` is called between the steps of the batch
that touch the closure.  The runners pass a function that does nothing; the
deterministic simulation of the runners (``proofs/runner_sim.py``) passes
one that lets other actors — another thread's ``begin`` or ``close``, an
abort — act exactly there.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal, TypeVar, final

from tool_call_closure.closure import GenerationEnd, ToolCallClosure
from tool_call_closure.ecma import truncate_utf8, utf8_length
from tool_call_closure.errors import LimitError, UsageError
from tool_call_closure.inputs import CloseReasonInput, FailureOutcome
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.runners.options import no_checkpoint
from tool_call_closure.runners.outcomes import (
    CANCELLED_MESSAGE,
    RUNNER_CODES,
    BatchRun,
    Ending,
    LateResult,
    RunnerCode,
    StaleTurn,
    ToolCallError,
    arguments_not_bound_message,
    arguments_not_object_message,
    conversion_failed_message,
    exception_text,
    executor_failed_message,
    never_started_message,
    unknown_tool_message,
    unrecorded_message,
)
from tool_call_closure.values import (
    Accepted,
    BeginResult,
    CloseReason,
    Rejection,
    SettlementResult,
    Snapshot,
    TurnToken,
)

__all__ = ["RunningBatch", "StopReason", "check_closure", "check_tools", "plan_calls"]

R = TypeVar("R")

StopReason = Literal["aborted", "superseded", "closed_elsewhere"]

_CLOSING: Final[dict[str, tuple[Literal["error", "cancelled"], RunnerCode]]] = {
    "deadline_exceeded": ("error", "deadline_exceeded"),
    "aborted": ("cancelled", "run_aborted"),
    "cancelled": ("cancelled", "run_cancelled"),
}
"""The endings the runner closes the batch for: the close reason's status and code."""


@final
class RunningBatch:
    """The runner's bookkeeping for one announced generation; every method is thread-safe."""

    __slots__ = (
        "_checkpoint",
        "_concluding",
        "_final",
        "_how",
        "_late",
        "_lock",
        "_notify",
        "_on_late",
        "_own_reason",
        "_report_late_error",
        "_returned",
        "_settled",
        "_started",
        "_started_at",
        "begin",
        "calls",
        "closure",
        "stop_reason",
    )

    begin: BeginResult
    """What ``begin`` returned for the batch (set by :meth:`announce`)."""

    def __init__(
        self,
        closure: ToolCallClosure,
        calls: object,  # checked here: what the caller passed as the calls
        *,
        notify: Callable[[], None],
        on_late: Callable[[LateResult], None] | None,
        report_late_error: Callable[[BaseException, LateResult], None],
        checkpoint: Callable[[str], None] = no_checkpoint,
    ) -> None:
        check_closure(closure)
        if not isinstance(calls, Sequence) or isinstance(calls, str | bytes):
            hint = " (for an Ingested, pass its .calls)" if hasattr(calls, "calls") else ""
            raise UsageError(f"calls must be a sequence of ToolCall{hint}, got {type(calls).__name__}")
        self.closure = closure
        self.calls: tuple[ToolCall, ...] = tuple(calls)
        for index, call in enumerate(self.calls):
            if not isinstance(call, ToolCall):
                raise UsageError(f"calls[{index}] must be a ToolCall, got {type(call).__name__}")
        # Everything the on_end callback touches exists before begin: it may be called before begin returns.
        self._lock = threading.Lock()
        self._notify = notify
        self._on_late = on_late
        self._report_late_error = report_late_error
        self._checkpoint = checkpoint
        self._started: set[int] = set()
        self._started_at: dict[int, float] = {}
        self._settled: set[int] = set()
        self._late: list[LateResult] = []
        self._concluding = False  # the runner is ending the batch: no call starts any more
        self._returned = False
        self._final: Snapshot | None = None
        self._how: GenerationEnd | None = None
        self._own_reason: CloseReason | None = None
        self.stop_reason: StopReason | None = None

    def announce(self, turn: TurnToken | None) -> StaleTurn | None:
        """``begin`` the calls, watching the generation's end; with ``turn``, only if it is still current.

        Returns :class:`~.outcomes.StaleTurn` (nothing announced, the batch is
        not to be run) when the closure refuses the turn as stale.
        """
        calls = list(self.calls)
        if turn is None:
            begun: BeginResult | Rejection = self.closure.begin(calls, on_end=self._generation_ended)
        else:
            begun = self.closure.begin(calls, turn=turn, on_end=self._generation_ended)
        if isinstance(begun, Rejection):
            return StaleTurn(begun, tuple(call.id for call in self.calls))
        self.begin = begun
        return None

    # -- the generation's end, whoever caused it -----------------------------------------------------------

    def _generation_ended(self, snapshot: Snapshot, how: GenerationEnd) -> None:
        """``begin``'s ``on_end``: called once, by the operation that ended the generation (any thread)."""
        with self._lock:
            self._final = snapshot
            self._how = how
            if not self._concluding and self.stop_reason is None:
                self.stop_reason = "superseded" if how == "superseded" else "closed_elsewhere"
        self._notify()

    @property
    def final(self) -> Snapshot | None:
        """The generation's final snapshot, once it ended."""
        return self._final

    # -- starting ---------------------------------------------------------------------------------------------

    def try_start(self, index: int, now: float) -> bool:
        """Mark the call started and return True, unless the run is ending or must stop."""
        with self._lock:
            if self._concluding or self.stop_reason is not None:
                return False
            self._started.add(index)
            self._started_at[index] = now
            return True

    def started_at(self) -> dict[int, float]:
        """When each started call started (a copy)."""
        with self._lock:
            return dict(self._started_at)

    @property
    def concluding(self) -> bool:
        return self._concluding

    # -- settling ---------------------------------------------------------------------------------------------

    def reject_unrunnable(self, index: int, code: RunnerCode, message: str) -> None:
        """Give a call that must not run (a ``problem``, an unknown tool) its error outcome; it never starts."""
        self._checkpoint("reject")
        self._record(index, self._fail(index, message, code), None)

    def deliver_value(self, index: int, value: object) -> None:
        """The tool returned ``value``: ``succeed``, or an explicit error when the closure refuses the value."""
        self._checkpoint("deliver")
        call_id = self.calls[index].id
        try:
            result = self.closure.succeed(self.begin.handle, call_id, value)
        except LimitError as exc:  # over max_result_bytes: an explicit outcome instead of a pending call
            result = self._fail(index, str(exc), "result_too_large")
        except UsageError as exc:  # not JSON-compatible (a set, bytes …)
            result = self._fail(index, str(exc), "invalid_result")
        except BaseException as exc:  # the value's own code raised while it was converted (__json__, a property …)
            self._record(index, self._fail(index, conversion_failed_message(exc), "invalid_result"), ("result", value))
            if isinstance(exc, KeyboardInterrupt | SystemExit):
                raise
            return
        self._record(index, result, ("result", value))

    def deliver_error(self, index: int, error: BaseException) -> None:
        """The tool raised: ``fail`` with the exception's text (never its traceback); a :class:`.ToolCallError`
        with its own code and message."""
        self._checkpoint("deliver")
        if isinstance(error, ToolCallError):
            text, code = error.message, error.code
        else:
            text, code = exception_text(error), "tool_error"
        self._record(index, self._fail(index, text, code), ("error", text))

    def time_out(self, index: int, message: str) -> bool:
        """A per-call timeout: ``fail`` with ``tool_timeout`` unless the call has its outcome or the run is ending.

        Returns True when the timeout is the call's outcome (the tool is then to be cancelled).
        """
        with self._lock:
            if index in self._settled or self._concluding:
                return False
        self._checkpoint("time_out")
        result = self._fail(index, message, "tool_timeout")
        self._record(index, result, None)
        return result.accepted

    def executor_failed(self, index: int, error: BaseException | None) -> None:
        """The executor could not run the call's work item (it raised, or its future failed or was cancelled).

        The tool never started, so its outcome says so; a call that already has
        its outcome (closed while queued) is left as it is.
        """
        with self._lock:
            if index in self._settled or index in self._started:
                return
        self._record(index, self._fail(index, executor_failed_message(error), "executor_failed"), None)

    def tool_over(self, index: int, error: BaseException) -> None:
        """A started call's work ended with ``error`` escaping the runner's own delivery (an allocation failure, an
        exception landing mid-step): if the call has no outcome yet, it gets ``tool_error`` saying so."""
        with self._lock:
            if index not in self._started or index in self._settled or self._concluding:
                return
        self._record(index, self._fail(index, unrecorded_message(error), "tool_error"), None)

    def _fail(self, index: int, message: str, code: RunnerCode) -> SettlementResult:
        return self.closure.fail(self.begin.handle, self.calls[index].id, message, code)

    def _record(
        self, index: int, result: SettlementResult, offered: tuple[Literal["result", "error"], object] | None
    ) -> None:
        if isinstance(result, Accepted) or result.reason == "duplicate_settlement":
            with self._lock:  # the call has its outcome: this one, or one that came first
                newly = index not in self._settled
                self._settled.add(index)
            if newly:
                self._notify()
            if isinstance(result, Accepted):
                return
        if offered is None:  # the runner's own timeout or close lost the race: nothing of the tool to report
            return
        late = LateResult(self.calls[index].id, self.calls[index].name, offered[0], offered[1], result)
        with self._lock:
            if not self._returned:
                self._late.append(late)
        if self._on_late is not None:
            try:
                self._on_late(late)
            except BaseException as exc:  # noqa: BLE001  # not the call's outcome, and no caller to reach: reported
                self._report_late_error(exc, late)

    def all_settled(self) -> bool:
        with self._lock:
            return len(self._settled) == len(self.calls)

    def stop(self, reason: StopReason) -> None:
        """Ask the run to end (an abort); the first reason wins."""
        with self._lock:
            if self.stop_reason is None and not self._concluding:
                self.stop_reason = reason
        self._notify()

    # -- closing ----------------------------------------------------------------------------------------------

    def close(self, status: Literal["error", "cancelled"], code: RunnerCode, message: str) -> None:
        """Close the batch: each pending call gets one outcome, ``unknown`` if it started, else ``not_started``."""
        with self._lock:
            self._concluding = True  # from here on no call starts
            started = set(self._started)
            settled = set(self._settled)
        pending = [i for i in range(len(self.calls)) if i not in settled]
        never_started = [i for i in pending if i not in started]
        handle = self.begin.handle
        close_message = message if len(never_started) < len(pending) else never_started_message(message)
        if len(never_started) < len(pending):
            for index in never_started:
                self._checkpoint("close_never_started")
                outcome: FailureOutcome = {"status": status, "code": code, "message": never_started_message(message)}
                self._record(index, self.closure.settle(handle, self.calls[index].id, outcome), None)
        side_effect_state: Literal["unknown", "not_started"] = (
            "unknown" if len(never_started) < len(pending) else "not_started"
        )
        reason: CloseReasonInput = {
            "status": status,
            "code": code,
            "message": close_message,
            "sideEffectState": side_effect_state,
        }
        stored = truncate_utf8(close_message, self.closure.limits.max_message_bytes)
        with self._lock:  # what the snapshot's close reason is when this close is the one that ends the generation
            self._own_reason = CloseReason(status, code, stored, side_effect_state)
        self._checkpoint("close")
        self.closure.close(handle, reason)
        with self._lock:
            self._settled.update(pending)

    def conclude(self, ending: Ending, message: str | None) -> Ending:
        """End the batch as the supervisor decided, and return how it really ended (read from the final snapshot).

        ``completed`` seals; ``deadline_exceeded``, ``aborted`` and ``cancelled``
        close with ``message``; ``superseded`` and ``closed_elsewhere`` have
        nothing left to do.  A generation superseded or closed by someone else
        before the runner's own operation took effect ended that way instead.
        """
        with self._lock:
            self._concluding = True
            ended = self._final is not None
        if not ended:
            if ending == "completed":
                self._checkpoint("seal")
                self.closure.seal(self.begin.handle)
            elif ending in _CLOSING:
                status, code = _CLOSING[ending]
                self.close(status, code, CANCELLED_MESSAGE if message is None else message)
        return self.ending_as_decided(ending)

    def ending_as_decided(self, decided: Ending) -> Ending:
        """How the generation ended, given what the runner decided; ``decided`` until the generation has ended."""
        with self._lock:
            how, final, own = self._how, self._final, self._own_reason
        if final is None:
            return decided
        if how == "superseded":
            return "superseded"
        if how == "sealed":
            return "completed" if decided == "completed" else "closed_elsewhere"
        if decided in _CLOSING and final.close_reason == own:
            return decided
        return "closed_elsewhere"

    def abandon(self) -> None:
        """The supervisor raised (an interrupt): end the batch now — sealed if every call reported, else closed
        ``run_cancelled`` — unless it has ended already.  Never raises for a closure refusal."""
        with self._lock:
            self._concluding = True
            ended = self._final is not None
            all_settled = len(self._settled) == len(self.calls)
        if ended:
            return
        if all_settled and isinstance(self.closure.seal(self.begin.handle), Snapshot):
            return
        self.close("cancelled", "run_cancelled", CANCELLED_MESSAGE)

    def report(self, ending: Ending, still_running: Sequence[int]) -> BatchRun:
        """The run's report, after :meth:`conclude` and once :attr:`final` is known."""
        with self._lock:
            self._returned = True
            late = tuple(self._late)
            started = tuple(call.id for i, call in enumerate(self.calls) if i in self._started)
            final = self._final
        if final is None:  # the runners wait for the end before they report
            raise AssertionError("a run reported before its generation ended")
        running = tuple(self.calls[i].id for i in sorted(still_running))
        return BatchRun(self.begin, final, ending, started, late, running)


def check_closure(closure: object) -> None:
    """Refuse, before anything is announced, a closure that is not one, or whose ``max_code_bytes`` is too
    small for the runner's own codes (every outcome the runner gives must be one the closure accepts)."""
    if not isinstance(closure, ToolCallClosure):
        raise UsageError(f"closure must be a ToolCallClosure, got {type(closure).__name__}")
    longest = max(RUNNER_CODES, key=utf8_length)
    if closure.limits.max_code_bytes < utf8_length(longest):
        raise UsageError(
            f"the closure's max_code_bytes ({closure.limits.max_code_bytes}) is smaller than the runner's longest "
            f"code {longest!r} ({utf8_length(longest)} bytes): the runners need max_code_bytes >= "
            f"{utf8_length(longest)}"
        )


def check_tools(tools: object) -> None:
    """Refuse, before anything is announced, a ``tools`` that is neither a mapping nor a function, or a mapping
    with a tool that is not callable (found while the calls run, it would leave the batch open)."""
    if not isinstance(tools, Mapping) and not callable(tools):
        raise UsageError(
            f"tools must be a mapping of tool name to function, or one function, got {type(tools).__name__}"
        )
    if isinstance(tools, Mapping):
        for name, tool in tools.items():
            if not callable(tool):
                raise UsageError(f"tools[{name!r}] must be a function, got {type(tool).__name__}")


def _binding_problem(tool: Callable[..., object], arguments: Mapping[str, object]) -> str | None:
    """Why ``tool(**arguments)`` would not bind (Python's own words, which do not name the function), or None."""
    try:
        signature = inspect.signature(tool)
    except (TypeError, ValueError):  # no signature to check (some builtins): the call itself will tell
        return None
    try:
        signature.bind(**arguments)
    except TypeError as exc:
        return str(exc)
    return None


def plan_calls(
    batch: RunningBatch, tools: Mapping[str, Callable[..., R]] | Callable[[ToolCall], R]
) -> list[tuple[int, Callable[[], R]]]:
    """Settle the calls that must not run and return, for the others, how to invoke each one.

    ``tools`` is either a mapping from tool name to a function called with the
    arguments as keyword arguments, or one function called with the
    :class:`ToolCall`.  Nothing is invoked here.  Arguments that do not bind
    to the function's parameters make an invalid call (the model's mistake,
    which it can fix), not a tool failure, and the message does not show the
    function's Python name.
    """
    planned: list[tuple[int, Callable[[], R]]] = []
    for index, call in enumerate(batch.calls):
        if call.problem is not None:
            batch.reject_unrunnable(index, "invalid_tool_call", call.problem)
        elif not isinstance(tools, Mapping):
            planned.append((index, functools.partial(tools, call)))
        elif call.name not in tools:
            batch.reject_unrunnable(index, "unknown_tool", unknown_tool_message(call.name))
        elif not isinstance(call.arguments, Mapping):
            batch.reject_unrunnable(index, "invalid_tool_call", arguments_not_object_message(call.name))
        else:
            tool = tools[call.name]
            problem = _binding_problem(tool, call.arguments)
            if problem is not None:
                batch.reject_unrunnable(index, "invalid_tool_call", arguments_not_bound_message(call.name, problem))
            else:
                planned.append((index, functools.partial(tool, **call.arguments)))
    return planned
