"""One running batch: who started, who settled, and how the batch ends — shared by both runners.

Theory of operation
-------------------
A runner announces the calls with :meth:`~tool_call_closure.ToolCallClosure.begin`
and then drives every call to exactly one outcome *through the closure's own
API*: ``succeed``, ``fail``, ``settle`` and ``close``.  The closure is the only
arbiter: when two outcomes race (a result and a timeout, a result and a
close), the first one the closure accepts is the call's outcome and the other
is a :class:`~tool_call_closure.Rejection`.  :class:`RunningBatch` only keeps
the runner's bookkeeping beside it:

* ``started`` — the tool was invoked.  A call is started under the batch lock
  and only while the batch is open, so once the batch is closed by the runner
  the set of started calls is final: a call that never started never will.
* ``settled`` — the closure accepted an outcome for the call.

How each path settles a call (codes and messages: :mod:`.outcomes`):

==============================  ==========================================================
event                           outcome
==============================  ==========================================================
call has a ``problem``          ``fail`` ``invalid_tool_call`` before anything runs
no tool of that name            ``fail`` ``unknown_tool`` before anything runs
tool returns a value            ``succeed``; over ``max_result_bytes`` → ``fail``
                                ``result_too_large``; not JSON-compatible → ``fail``
                                ``invalid_result``
tool raises                     ``fail`` ``tool_error`` with the exception's text
per-call timeout                ``fail`` ``tool_timeout`` (the tool is then cancelled)
deadline / abort / cancellation ``close`` (see below)
==============================  ==========================================================

Closing.  A close reason carries one ``sideEffectState`` for every call still
pending, but a call whose tool started may have had side effects
(``unknown``) while a call that never started had none (``not_started``).  So
:meth:`RunningBatch.close` settles the two groups apart:

* if no pending call has started, one ``close`` with ``not_started`` settles them all;
* otherwise the calls that never started are first settled one by one with
  ``settle`` (same status and code, the message saying that the call never
  started), and then one ``close`` with ``unknown`` settles the started ones.

Either way each call gets one outcome, from one closure operation.

Late results.  A value or an exception that arrives after its call was settled
(after a timeout, or after the batch closed) is still offered to the closure,
which fences it (``duplicate_settlement``, ``run_closed`` or
``stale_generation``) and records it as a diagnostic; the runner reports it as
a :class:`.outcomes.LateResult` and it never reaches an export.  A fence that
the runner did not cause — the generation was superseded by a later ``begin``,
or closed by someone else — stops the run.

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
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Final, Literal, TypeVar, final

from tool_call_closure.closure import ToolCallClosure
from tool_call_closure.errors import LimitError, UsageError
from tool_call_closure.inputs import CloseReasonInput, FailureOutcome
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.runners.outcomes import (
    BatchRun,
    Ending,
    LateResult,
    RunnerCode,
    arguments_not_object_message,
    exception_text,
    never_started_message,
    unknown_tool_message,
)
from tool_call_closure.values import Accepted, BeginResult, Rejection, SettlementResult, Snapshot

__all__ = ["RunningBatch", "StopReason", "check_tools", "plan_calls"]

R = TypeVar("R")

StopReason = Literal["aborted", "superseded", "closed_elsewhere"]

_LOST: Final[dict[str, StopReason]] = {"stale_generation": "superseded", "run_closed": "closed_elsewhere"}


@final
class RunningBatch:
    """The runner's bookkeeping for one announced generation; every method is thread-safe."""

    __slots__ = (
        "_closed_by_runner",
        "_late",
        "_lock",
        "_notify",
        "_on_late",
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

    def __init__(
        self,
        closure: ToolCallClosure,
        calls: object,  # checked here: what the caller passed as the calls
        *,
        notify: Callable[[], None],
        on_late: Callable[[LateResult], None] | None,
        report_late_error: Callable[[BaseException, LateResult], None],
    ) -> None:
        if not isinstance(closure, ToolCallClosure):
            raise UsageError(f"closure must be a ToolCallClosure, got {type(closure).__name__}")
        if not isinstance(calls, Sequence) or isinstance(calls, str | bytes):
            hint = " (for an Ingested, pass its .calls)" if hasattr(calls, "calls") else ""
            raise UsageError(f"calls must be a sequence of ToolCall{hint}, got {type(calls).__name__}")
        self.closure = closure
        self.calls: tuple[ToolCall, ...] = tuple(calls)
        for index, call in enumerate(self.calls):
            if not isinstance(call, ToolCall):
                raise UsageError(f"calls[{index}] must be a ToolCall, got {type(call).__name__}")
        self.begin: BeginResult = closure.begin(list(self.calls))
        self._lock = threading.Lock()
        self._notify = notify
        self._on_late = on_late
        self._report_late_error = report_late_error
        self._started: set[int] = set()
        self._started_at: dict[int, float] = {}
        self._settled: set[int] = set()
        self._late: list[LateResult] = []
        self._closed_by_runner = False
        self._returned = False
        self.stop_reason: StopReason | None = None

    # -- starting ---------------------------------------------------------------------------------------------

    def try_start(self, index: int, now: float) -> bool:
        """Mark the call started and return True, unless the runner already closed the batch or stopped."""
        with self._lock:
            if self._closed_by_runner or self.stop_reason is not None:
                return False
            self._started.add(index)
            self._started_at[index] = now
            return True

    def started_at(self) -> dict[int, float]:
        """When each started call started (a copy)."""
        with self._lock:
            return dict(self._started_at)

    # -- settling ---------------------------------------------------------------------------------------------

    def reject_unrunnable(self, index: int, code: RunnerCode, message: str) -> None:
        """Give a call that must not run (a ``problem``, an unknown tool) its error outcome; it never starts."""
        self._record(index, self.closure.fail(self.begin.handle, self.calls[index].id, message, code), None)

    def deliver_value(self, index: int, value: object) -> None:
        """The tool returned ``value``: ``succeed``, or an explicit error when the closure refuses the value."""
        call_id = self.calls[index].id
        handle = self.begin.handle
        try:
            result = self.closure.succeed(handle, call_id, value)
        except LimitError as exc:  # over max_result_bytes: an explicit outcome instead of a pending call
            result = self.closure.fail(handle, call_id, str(exc), "result_too_large")
        except UsageError as exc:  # not JSON-compatible (a set, bytes …)
            result = self.closure.fail(handle, call_id, str(exc), "invalid_result")
        self._record(index, result, ("result", value))

    def deliver_error(self, index: int, error: BaseException) -> None:
        """The tool raised: ``fail`` with the exception's text (never its traceback)."""
        result = self.closure.fail(self.begin.handle, self.calls[index].id, error, "tool_error")
        self._record(index, result, ("error", exception_text(error)))

    def time_out(self, index: int, message: str) -> bool:
        """A per-call timeout: ``fail`` with ``tool_timeout`` unless the call already has its outcome."""
        with self._lock:
            if index in self._settled:
                return False
        result = self.closure.fail(self.begin.handle, self.calls[index].id, message, "tool_timeout")
        self._record(index, result, None)
        return result.accepted

    def _record(
        self, index: int, result: SettlementResult, offered: tuple[Literal["result", "error"], object] | None
    ) -> None:
        if isinstance(result, Accepted):
            with self._lock:
                self._settled.add(index)
            self._notify()
            return
        if offered is None:  # a timeout that lost the race to a real outcome: nothing to report
            return
        late = LateResult(self.calls[index].id, self.calls[index].name, offered[0], offered[1], result)
        with self._lock:
            if not self._returned:
                self._late.append(late)
            lost = _LOST.get(result.reason) if not self._closed_by_runner else None
            if lost is not None and self.stop_reason is None:
                self.stop_reason = lost
        if lost is not None:
            self._notify()
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
            if self.stop_reason is None:
                self.stop_reason = reason
        self._notify()

    # -- closing ----------------------------------------------------------------------------------------------

    def close(self, status: Literal["error", "cancelled"], code: RunnerCode, message: str) -> None:
        """Close the batch: each pending call gets one outcome, ``unknown`` if it started, else ``not_started``."""
        with self._lock:
            self._closed_by_runner = True  # from here on no call starts
            started = set(self._started)
            settled = set(self._settled)
        pending = [i for i in range(len(self.calls)) if i not in settled]
        never_started = [i for i in pending if i not in started]
        handle = self.begin.handle
        if len(never_started) < len(pending):
            for index in never_started:
                outcome: FailureOutcome = {"status": status, "code": code, "message": never_started_message(message)}
                self._record(index, self.closure.settle(handle, self.calls[index].id, outcome), None)
            reason: CloseReasonInput = {
                "status": status,
                "code": code,
                "message": message,
                "sideEffectState": "unknown",
            }
        else:
            reason = {
                "status": status,
                "code": code,
                "message": never_started_message(message),
                "sideEffectState": "not_started",
            }
        self.closure.close(handle, reason)
        with self._lock:
            self._settled.update(pending)

    def conclude(self, ending: Ending, message: str | None) -> None:
        """End the batch as the run ended: seal a completed one, close one that ran out of time or was stopped.

        ``message`` is the close message (the deadline's or the abort's).  A
        superseded batch, or one closed elsewhere, has nothing left to settle.
        """
        if ending == "completed":
            with self._lock:
                self._closed_by_runner = True
            sealed = self.closure.seal(self.begin.handle)
            if isinstance(sealed, Rejection) and sealed.reason == "pending_calls":  # cannot happen: all settled
                raise AssertionError("a completed batch has a pending call")
        elif ending == "deadline_exceeded":
            assert message is not None
            self.close("error", "deadline_exceeded", message)
        elif ending in ("aborted", "cancelled"):
            assert message is not None
            self.close("cancelled", "run_aborted" if ending == "aborted" else "run_cancelled", message)
        else:
            with self._lock:
                self._closed_by_runner = True

    def report(self, ending: Ending, still_running: Sequence[int]) -> BatchRun:
        """The run's report, after :meth:`conclude`; a superseded batch has no snapshot here."""
        snapshot: Snapshot | None = None
        if ending != "superseded":
            current = self.closure.close(self.begin.handle)  # closed already: idempotent, a fresh snapshot
            snapshot = current if isinstance(current, Snapshot) else None
        with self._lock:
            self._returned = True
            late = tuple(self._late)
            started = tuple(call.id for i, call in enumerate(self.calls) if i in self._started)
        running = tuple(self.calls[i].id for i in sorted(still_running))
        return BatchRun(self.begin, snapshot, ending, started, late, running)


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


def plan_calls(
    batch: RunningBatch, tools: Mapping[str, Callable[..., R]] | Callable[[ToolCall], R]
) -> list[tuple[int, Callable[[], R]]]:
    """Settle the calls that must not run and return, for the others, how to invoke each one.

    ``tools`` is either a mapping from tool name to a function called with the
    arguments as keyword arguments, or one function called with the
    :class:`ToolCall`.  Nothing is invoked here.
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
            planned.append((index, functools.partial(tools[call.name], **call.arguments)))
    return planned
