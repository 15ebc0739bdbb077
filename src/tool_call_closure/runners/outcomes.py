"""What runners report: the codes and messages they settle calls with, the run's report, and the abort signal.

Theory of operation
-------------------
Every outcome a runner gives a call is an ordinary closure outcome, so the
model reads it in the provider payload as ``{"error": {"code", "message"}}``
(plus ``side_effect_state`` for the outcomes that ``close`` made).  The codes
(:data:`RunnerCode`) are part of the API: they are stable, and the model and
the caller may both branch on them.

==========================  ==========  =====================================================================
code                        status      when
==========================  ==========  =====================================================================
``tool_error``              error       the tool raised; the message is the exception's text (never a traceback);
                                        a :class:`ToolCallError` gives its own message (and may choose
                                        ``invalid_tool_call`` or ``unknown_tool``)
``tool_timeout``            error       the call ran longer than ``call_timeout``:
                                        ``Tool '<name>' timed out after <t> seconds.``
``result_too_large``        error       the result is over ``max_result_bytes`` (the limit's message)
``invalid_result``          error       the result is not JSON-compatible (the refusal's message), or its
                                        conversion raised (``__json__``, a property …: the exception's text)
``invalid_tool_call``       error       the call has a ``problem`` (bad JSON arguments, truncated stream), or its
                                        arguments are not a JSON object, or do not bind to the tool's
                                        parameters (names missing or unknown); never run
``unknown_tool``            error       no tool of that name: ``No tool named '<name>' is available.``; never run
``executor_failed``         error       the thread runner's executor could not run the call (its future failed
                                        or was cancelled, or ``submit`` raised); never run
``deadline_exceeded``       error       the batch ran past ``deadline``; pending calls closed
``run_aborted``             cancelled   the :class:`AbortSignal` fired; pending calls closed
``run_cancelled``           cancelled   the task running the batch was cancelled (asyncio); pending calls closed
==========================  ==========  =====================================================================

A call that was pending when the batch closed and had never started carries
the close message followed by ``The call never started.`` and, in the
structure, ``side_effect_state`` ``not_started`` when it was closed by
``close`` (see :mod:`.batch`); a started one carries ``unknown``.

The per-call timeout text is the one openai-agents uses for
``timeout_behavior="error_as_result"``; unlike there, a result that arrives
after the timeout is *not* used: the timeout is the call's outcome and the
result is reported late (the closure fences it).
"""

from __future__ import annotations

import threading
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Literal, TypeAlias, final

from tool_call_closure.errors import UsageError
from tool_call_closure.values import BeginResult, Rejection, Snapshot

__all__ = [
    "CANCELLED_MESSAGE",
    "NEVER_STARTED",
    "RUNNER_CODES",
    "AbortSignal",
    "BatchRun",
    "Ending",
    "LateResult",
    "RunnerCode",
    "StaleTurn",
    "ToolCallError",
    "arguments_not_bound_message",
    "arguments_not_object_message",
    "conversion_failed_message",
    "deadline_message",
    "exception_text",
    "executor_failed_message",
    "never_started_message",
    "on_late_error_message",
    "timeout_message",
    "unknown_tool_message",
    "unrecorded_message",
]

RunnerCode: TypeAlias = Literal[
    "tool_error",
    "tool_timeout",
    "result_too_large",
    "invalid_result",
    "invalid_tool_call",
    "unknown_tool",
    "executor_failed",
    "deadline_exceeded",
    "run_aborted",
    "run_cancelled",
]

RUNNER_CODES: Final[tuple[RunnerCode, ...]] = typing.get_args(RunnerCode)
"""Every code a runner settles a call with (the closure's ``max_code_bytes`` must admit the longest)."""

Ending: TypeAlias = Literal["completed", "deadline_exceeded", "aborted", "cancelled", "superseded", "closed_elsewhere"]
"""How a run ended: every call reported (``completed``, then sealed); the deadline passed, the abort signal fired
or the awaiting task was cancelled (the runner closed the batch; a cancelled run re-raises instead of reporting);
a later ``begin`` superseded the generation, or someone else closed it."""

NEVER_STARTED: Final = "The call never started."
CANCELLED_MESSAGE: Final = "The run was cancelled before this tool call completed."
_ABORTED_MESSAGE: Final = "The run was aborted before this tool call completed."


def _seconds(value: float) -> str:
    return f"{value:g}"


def timeout_message(name: str, seconds: float) -> str:
    return f"Tool '{name}' timed out after {_seconds(seconds)} seconds."


def deadline_message(seconds: float) -> str:
    return f"The tool batch did not finish within its deadline of {_seconds(seconds)} seconds."


def unknown_tool_message(name: str) -> str:
    return f"No tool named '{name}' is available."


def arguments_not_object_message(name: str) -> str:
    return f"The arguments of tool '{name}' must be a JSON object to be passed as keyword arguments."


def arguments_not_bound_message(name: str, problem: str) -> str:
    """Python's binding error says what is wrong (``missing a required argument: 'city'``) without the function's
    name; the message names the tool as the model knows it."""
    return f"The arguments of tool '{name}' do not match its parameters: {problem}."


def conversion_failed_message(error: BaseException) -> str:
    return f"The tool's result could not be converted to JSON: {exception_text(error)}"


def executor_failed_message(error: BaseException | None) -> str:
    cause = "its work item was cancelled" if error is None else exception_text(error)
    return f"The executor could not run the tool ({cause}). {NEVER_STARTED}"


def unrecorded_message(error: BaseException) -> str:
    return f"The tool ran, but the runner could not record its outcome ({exception_text(error)})."


def never_started_message(message: str) -> str:
    return f"{message} {NEVER_STARTED}"


def on_late_error_message(late: LateResult) -> str:
    """What a runner reports with an exception raised by ``on_late`` (never the late value itself)."""
    return f"on_late raised on the late {late.kind} of tool call {late.call_id!r} ({late.name!r})"


def exception_text(error: BaseException) -> str:
    """The text an exception contributes: ``str(error)``, or its class name when that is empty or cannot be had.

    ``str()`` runs the exception's own ``__str__``, which may raise anything
    (``KeyboardInterrupt`` included, if that is what it raises): the outcome
    must not be lost to it, so the class name stands in.
    """
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001  # a broken __str__ must not lose the outcome
        text = ""
    return text or type(error).__name__


class ToolCallError(Exception):
    """Raised by a tool to give its call an error outcome with a chosen code and text, as they are.

    The runners settle it with ``code`` (``tool_error`` unless said otherwise;
    ``invalid_tool_call`` and ``unknown_tool`` when the tool itself found the
    call malformed or unknown) and ``message`` verbatim — the text a remote
    tool (an MCP server) gave, not a fixed string.  ``structured`` is the
    structured value that came with the error, if any (kept for the caller:
    the MCP runner adds its JSON to the message the model reads).
    """

    code: Final[RunnerCode]
    message: Final[str]
    structured: Final[object]

    def __init__(self, message: str, *, code: RunnerCode = "tool_error", structured: object = None) -> None:
        if not isinstance(message, str):
            raise UsageError(f"message must be a str, got {type(message).__name__}")
        if code not in ("tool_error", "invalid_tool_call", "unknown_tool"):
            raise UsageError(f"code must be 'tool_error', 'invalid_tool_call' or 'unknown_tool', got {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.structured = structured


@final
@dataclass(frozen=True, slots=True)
class LateResult:
    """A value or an error that arrived after its call had its outcome: fenced by the closure, never exported."""

    call_id: str
    name: str
    kind: Literal["result", "error"]
    value: object
    """The tool's return value, or the exception's text."""
    rejection: Rejection
    """How the closure fenced it (``duplicate_settlement``, ``run_closed`` or ``stale_generation``)."""


@final
@dataclass(frozen=True, slots=True)
class BatchRun:
    """The report of one run: the generation, its closed snapshot, and what happened on the way."""

    begin: BeginResult
    """What ``begin`` returned for the batch (its handle; the snapshot it superseded, if any)."""
    snapshot: Snapshot
    """The generation's final, closed snapshot, ready to export — whoever ended it: the runner, a later ``begin``
    that superseded it (then it is that ``begin``'s ``superseded``), or another ``close``."""
    ending: Ending
    """How the generation ended; it always agrees with ``snapshot`` (``superseded`` exactly when a later
    ``begin`` ended it, ``closed_elsewhere`` when the close reason is not the runner's)."""
    started: tuple[str, ...]
    """Ids of the calls whose tool was invoked, in announcement order."""
    late: tuple[LateResult, ...]
    """Results that arrived after their call's outcome, up to the moment the run returned."""
    still_running: tuple[str, ...]
    """Ids of the calls whose tool had not finished when the run returned (a thread cannot be stopped; a coroutine
    may ignore cancellation).  What they produce later is fenced and passed to ``on_late``."""


@final
@dataclass(frozen=True, slots=True)
class StaleTurn:
    """What a runner returns when it was given a ``turn`` token that is no longer current (deviation D20).

    The model turn was requested while another generation was current, and
    since then a later ``begin`` (a newer turn) happened: the closure refused
    this turn's ``begin`` with a ``stale_turn`` rejection, so nothing was
    announced, no tool ran, and no call of this turn may be answered.  Drop
    the model response it came from; the newer turn owns the closure.
    """

    rejection: Rejection
    """The closure's ``stale_turn`` rejection (also recorded as a diagnostic of the current generation)."""
    call_ids: tuple[str, ...]
    """The ids of the calls that were not announced."""


@final
class AbortSignal:
    """A thread-safe, one-shot request to abort a run, for either runner.

    ``abort()`` may be called from any thread, before or during the run; the
    runner closes the batch with ``run_aborted`` (status cancelled) and
    ``message`` when given.
    """

    __slots__ = ("_listeners", "_lock", "_message")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._message: str | None = None
        self._listeners: list[Callable[[], None]] = []

    def abort(self, message: str | None = None) -> None:
        if message is not None and not isinstance(message, str):
            raise UsageError(f"message must be a str or None, got {type(message).__name__}")
        with self._lock:
            if self.aborted:
                return
            self._message = _ABORTED_MESSAGE if message is None else message
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    @property
    def aborted(self) -> bool:
        return self._message is not None

    @property
    def message(self) -> str | None:
        """The close message the abort asked for (``None`` while not aborted)."""
        return self._message

    def subscribe(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` once on abort (at once if already aborted); returns the unsubscribe function."""
        with self._lock:
            fire = self.aborted
            if not fire:
                self._listeners.append(listener)
        if fire:
            listener()

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe
