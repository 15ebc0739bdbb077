"""Run a batch's tool coroutines concurrently under asyncio, every call ending in exactly one outcome.

Theory of operation
-------------------
:func:`run_tool_calls` announces the calls (``closure.begin``), settles the
ones that must not run, and starts one task per runnable call.  A task waits
for the concurrency limiter, *starts* (recorded by the batch, and only while
the batch is open), invokes the tool and hands what it returns or raises to
the batch, which settles the call through the closure (:mod:`.batch`).
A tool that returns a value instead of an awaitable is a plain function that
has already run, on the loop: its value is its outcome (an error would tell
the model it failed, and invite a second run of what it did), with a
``RuntimeWarning`` that it blocked the loop and could not be timed out.

A per-call timeout is a timer on the loop: when it fires, the call is settled
``tool_timeout`` first and its task cancelled second, so the timeout is the
outcome whatever the tool does with the cancellation.  Once the run is
ending, timers do nothing: every tool is cancelled at most once.

A tool coroutine may ask for its :class:`RunningCall` (:func:`running_call`):
``reset_timeout`` restarts its timer (what progress from a remote tool
does), and ``deliver`` offers a value that arrives after the tool's task
ended — the outcome if the call has none, else fenced and reported late.

Whatever a tool raises is its outcome (``tool_error``), ``BaseException``
subclasses included; ``KeyboardInterrupt`` and ``SystemExit`` are then let
out of the loop, as asyncio lets them out of any task.

The supervisor (the coroutine the caller awaits) sleeps until something
changes — a settlement, the abort signal, the end of the generation by
someone else (``begin``'s ``on_end``) — or until the batch deadline, and
then decides how the run ends:

* every call has its outcome → the batch is sealed (``completed``);
* the deadline passed → ``close`` with ``deadline_exceeded``;
* the abort signal fired → ``close`` with ``run_aborted``;
* the generation was superseded or closed elsewhere → nothing left to settle.

Closing happens synchronously, before any task is cancelled, so no result can
slip in between the decision and the close.  The tasks still running are then
cancelled — also when the run was superseded or closed elsewhere: the model
has been told those calls were cancelled — and given ``cancel_grace`` seconds
to finish; what they deliver is fenced and reported late; a task that
ignores its cancellation past the grace is left to finish on its own
(``still_running``), and what it delivers later goes to ``on_late``.  The
report's ``ending`` is read from the final snapshot (:mod:`.batch`), so it
agrees with ``snapshot`` even when another thread superseded or closed the
generation while the runner was closing it.

``on_late``.  Every late result — in the grace or after the run returned —
is passed to ``on_late``, in the tool task that delivered it, on the loop.
An exception ``on_late`` raises is reported as asyncio reports an exception
in a callback: ``loop.call_exception_handler`` with a ``message`` naming the
call, the ``exception`` and the tool ``task``.  It changes nothing else: the
call keeps its outcome, the run returns its report as it would have, the
task finishes normally, and later late results still reach ``on_late``.
``SystemExit`` and ``KeyboardInterrupt`` propagate, as from any asyncio
callback.

Cancellation.  The runner never cancels the task that awaits it.  When *that*
task is cancelled — ``task.cancel()``, an enclosing ``asyncio.timeout`` or a
failing sibling in an ``asyncio.TaskGroup`` — the batch is closed with
``run_cancelled`` at once, the tool tasks are cancelled and given the grace,
and the ``CancelledError`` is re-raised, so ``asyncio.timeout`` still turns it
into ``TimeoutError`` and the ``TaskGroup`` still reports its sibling's error.
A tool that raises ``CancelledError`` without having been cancelled gets an
ordinary ``tool_error`` outcome.  Any other exception that leaves the
supervisor (``KeyboardInterrupt`` from a tool, an error of the runner itself)
ends the batch first — sealed if every call reported, else closed
``run_cancelled`` — and asks every tool to stop, then propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final, final, overload

from tool_call_closure.closure import ToolCallClosure
from tool_call_closure.errors import UsageError
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.runners.batch import RunningBatch, check_tools, plan_calls
from tool_call_closure.runners.options import DEFAULTS, RunOptions, no_checkpoint
from tool_call_closure.runners.outcomes import (
    CANCELLED_MESSAGE,
    AbortSignal,
    BatchRun,
    Ending,
    LateResult,
    StaleTurn,
    on_late_error_message,
    timeout_message,
)
from tool_call_closure.values import TurnToken

__all__ = ["AsyncTools", "RunningCall", "run_on_loop", "run_tool_calls", "running_call"]

AsyncTools = Mapping[str, Callable[..., Awaitable[object]]] | Callable[[ToolCall], Awaitable[object]]
"""Tool name → ``async def`` called with the arguments as keyword arguments, or one ``async def`` taking the call."""

_LINGERING: Final[set[asyncio.Task[None]]] = set()
"""Tool tasks that outlived their run (they ignored cancellation): kept referenced until they finish."""

_CURRENT: Final[contextvars.ContextVar[RunningCall | None]] = contextvars.ContextVar("tcc_running_call", default=None)


@final
class RunningCall:
    """The call a tool coroutine is running for, as :func:`running_call` gives it (on the loop only).

    A tool that talks to another process (an MCP server) uses it to restart
    its timeout when the work reports progress, and to offer what arrives
    after the tool's task ended: :meth:`deliver` makes it the call's outcome
    if the call has none yet, and otherwise the closure fences it and it is
    reported late (``on_late``), like a value a cancelled tool still returns.
    """

    __slots__ = ("_batch", "_fired", "_index", "_loop", "_release", "_running", "_seconds", "_task", "_timer")

    def __init__(
        self,
        batch: RunningBatch,
        index: int,
        task: asyncio.Task[Any],
        seconds: float | None,
        release: Callable[[], None],
    ) -> None:
        self._batch, self._index, self._task, self._seconds, self._release = batch, index, task, seconds, release
        self._loop = asyncio.get_running_loop()
        self._timer: asyncio.TimerHandle | None = None
        self._running = True
        self._fired = False
        self._arm()

    @property
    def call(self) -> ToolCall:
        return self._batch.calls[self._index]

    def _arm(self) -> None:
        if self._seconds is not None:
            self._timer = self._loop.call_later(self._seconds, self._fire, self._seconds)

    def _fire(self, seconds: float) -> None:
        self._fired = True
        _expire(self._batch, self._index, self._task, seconds, self._release)

    def reset_timeout(self) -> None:
        """Give the call its whole ``call_timeout`` again from now (the batch deadline still bounds it).

        Nothing happens once the timeout fired, the call has its outcome, the
        run is ending, or the tool returned.
        """
        if self._running and self._timer is not None and not self._fired and not self._batch.concluding:
            self._timer.cancel()
            self._arm()

    def deliver(self, value: object) -> None:
        """Offer ``value`` as the tool's result: the outcome if the call has none yet, else fenced and late."""
        self._batch.deliver_value(self._index, value)

    def deliver_error(self, error: BaseException) -> None:
        """Offer ``error`` as what the tool raised: the outcome if the call has none yet, else fenced and late."""
        self._batch.deliver_error(self._index, error)

    def _finish(self) -> None:
        self._running = False
        if self._timer is not None:
            self._timer.cancel()


def running_call() -> RunningCall:
    """The call the current tool coroutine runs for; only inside a tool run by :func:`run_tool_calls`."""
    current = _CURRENT.get()
    if current is None:
        raise UsageError("running_call() is only available inside a tool coroutine run by run_tool_calls")
    return current


@overload
async def run_tool_calls(
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    tools: AsyncTools,
    *,
    turn: None = None,
    call_timeout: float | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    abort: AbortSignal | None = None,
    cancel_grace: float = 1.0,
    on_late: Callable[[LateResult], None] | None = None,
) -> BatchRun: ...


@overload
async def run_tool_calls(
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    tools: AsyncTools,
    *,
    turn: TurnToken,
    call_timeout: float | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    abort: AbortSignal | None = None,
    cancel_grace: float = 1.0,
    on_late: Callable[[LateResult], None] | None = None,
) -> BatchRun | StaleTurn: ...


async def run_tool_calls(
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    tools: AsyncTools,
    *,
    turn: TurnToken | None = None,
    call_timeout: float | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    abort: AbortSignal | None = None,
    cancel_grace: float = 1.0,
    on_late: Callable[[LateResult], None] | None = None,
) -> BatchRun | StaleTurn:
    """Announce ``calls`` on ``closure``, run their tools concurrently, and return the closed batch's report.

    ``turn`` is the :class:`~tool_call_closure.TurnToken` taken before the
    model turn was requested: when another ``begin`` happened since, nothing
    is announced or run and the result is a :class:`.StaleTurn`.
    ``call_timeout`` bounds each call (seconds, from the moment it starts);
    ``deadline`` bounds the whole batch (seconds from now); ``max_concurrency``
    bounds how many calls are in progress at once; ``abort`` closes the batch
    on request; ``cancel_grace`` is how long cancelled tools may take to
    finish; ``on_late`` is called with every late result (fenced after its
    call's outcome, during the run or after it returned), in the tool's task;
    an exception it raises goes to ``loop.call_exception_handler`` and
    changes no outcome and not the report (``SystemExit`` and
    ``KeyboardInterrupt`` propagate).
    """
    options = RunOptions.checked(call_timeout, deadline, max_concurrency, cancel_grace, abort, on_late)
    return await run_on_loop(no_checkpoint, closure, calls, tools, turn=turn, options=options)


async def run_on_loop(
    checkpoint: Callable[[str], None],
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    tools: AsyncTools,
    *,
    turn: TurnToken | None = None,
    options: RunOptions = DEFAULTS,
) -> BatchRun | StaleTurn:
    """:func:`run_tool_calls` with its options checked and the batch's checkpoints given (the deterministic
    simulation lets other actors act at them; the runner passes a function that does nothing)."""
    check_tools(tools)
    abort = options.abort
    loop = asyncio.get_running_loop()
    wake = asyncio.Event()

    def notify() -> None:  # settlements and the generation's end may come from any thread
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run is long over, nobody waits
            loop.call_soon_threadsafe(wake.set)

    def report_late_error(error: BaseException, late: LateResult) -> None:  # on the loop: called in a tool task
        if isinstance(error, SystemExit | KeyboardInterrupt):
            raise error
        context: dict[str, object] = {"message": on_late_error_message(late), "exception": error}
        task = asyncio.current_task(loop)
        if task is not None:
            context["task"] = task
        loop.call_exception_handler(context)

    batch = RunningBatch(
        closure,
        calls,
        notify=notify,
        on_late=options.on_late,
        report_late_error=report_late_error,
        checkpoint=checkpoint,
    )
    stale = batch.announce(turn)
    if stale is not None:
        return stale
    tasks: dict[asyncio.Task[None], int] = {}
    try:
        limiter = None if options.max_concurrency is None else asyncio.Semaphore(options.max_concurrency)
        for index, invoke in plan_calls(batch, tools):
            tasks[loop.create_task(_run_call(batch, index, invoke, options.call_timeout, limiter))] = index
        unsubscribe = abort.subscribe(lambda: batch.stop("aborted")) if abort is not None else None
        try:
            decided = await _supervise(batch, wake, loop, options.deadline)
        finally:
            if unsubscribe is not None:
                unsubscribe()
        batch.conclude(decided, options.close_message(decided))
        await _until_ended(batch, wake)
    except asyncio.CancelledError:
        # The awaiting task was cancelled (while supervising, or while waiting for another thread's end of the
        # generation): the batch is closed before anything else can run, then the tools are stopped.
        batch.conclude("cancelled", CANCELLED_MESSAGE)
        with contextlib.suppress(asyncio.CancelledError):  # cancelled again while cleaning up: stop waiting
            await _stop(list(tasks), options.cancel_grace)
        raise
    except BaseException:
        batch.abandon()  # an interrupt, or an error of the runner itself: no call is left without an outcome
        _cancel_without_waiting(list(tasks))
        raise
    left = await _stop(list(tasks), options.cancel_grace)  # a cancellation here finds the batch ended
    return batch.report(batch.ending_as_decided(decided), [tasks[task] for task in left])


async def _until_ended(batch: RunningBatch, wake: asyncio.Event) -> None:
    """Wait for the generation's final snapshot.

    The runner's own ``seal`` or ``close`` ends the generation and delivers
    it at once; only when another thread's ``begin`` superseded it first is
    the end still on its way (that thread tells it right after its commit).
    """
    while batch.final is None:
        wake.clear()
        if batch.final is None:
            await wake.wait()


async def _supervise(
    batch: RunningBatch, wake: asyncio.Event, loop: asyncio.AbstractEventLoop, deadline: float | None
) -> Ending:
    """Sleep until every call has its outcome, the deadline passes or the run must stop; say which."""
    ends_at = None if deadline is None else loop.time() + deadline
    while True:
        wake.clear()
        if batch.all_settled():
            return "completed"
        if batch.stop_reason is not None:
            return batch.stop_reason
        remaining = None if ends_at is None else ends_at - loop.time()
        if remaining is not None and remaining <= 0:
            return "deadline_exceeded"
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(remaining):
                await wake.wait()


async def _run_call(
    batch: RunningBatch,
    index: int,
    invoke: Callable[[], Awaitable[object]],
    call_timeout: float | None,
    limiter: asyncio.Semaphore | None,
) -> None:
    """One call's task: wait for a concurrency slot, then run the tool.

    The slot is held while the call is in progress: until the tool finishes,
    or until the call times out — a timed-out tool that ignores its
    cancellation is abandoned (``still_running``) and must not keep the
    calls queued behind it from ever starting.
    """
    release = _nothing
    if limiter is not None:
        await limiter.acquire()
        held = True

        def release() -> None:
            nonlocal held
            if held:
                held = False
                limiter.release()

    try:
        await _execute(batch, index, invoke, call_timeout, release)
    except asyncio.CancelledError:
        raise  # the task was cancelled: the run closes the call (or the tool raised it: delivered as its outcome)
    except BaseException as exc:
        batch.tool_over(index, exc)  # nothing unless the tool ran and what escaped kept its outcome from being recorded
        raise
    finally:
        release()


def _nothing() -> None:
    pass


async def _execute(
    batch: RunningBatch,
    index: int,
    invoke: Callable[[], Awaitable[object]],
    call_timeout: float | None,
    release: Callable[[], None],
) -> None:
    loop = asyncio.get_running_loop()
    if not batch.try_start(index, loop.time()):
        return  # the run ended while this call waited: it never starts
    task = asyncio.current_task()
    assert task is not None
    current = RunningCall(batch, index, task, call_timeout, release)
    token = _CURRENT.set(current)
    try:
        returned = invoke()
        value = await returned if inspect.isawaitable(returned) else _ran_on_the_loop(batch, index, returned)
    except asyncio.CancelledError as exc:
        if task.cancelling() == 0:  # raised by the tool itself, not a cancellation of this task
            batch.deliver_error(index, exc)
        raise
    except BaseException as exc:  # whatever the tool raises is its outcome
        batch.deliver_error(index, exc)
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise  # recorded first; then out of the loop, as asyncio lets these out of any task
    else:
        batch.deliver_value(index, value)
    finally:
        current._finish()
        _CURRENT.reset(token)


def _ran_on_the_loop(batch: RunningBatch, index: int, value: object) -> object:
    """A tool that returned a value, not an awaitable: a plain function, which has already run, on the loop.

    Its value is its outcome — it ran, and recording an error would tell the
    model it failed (and invite a second run of whatever it did).  But it ran
    on the event loop, blocking every other tool, and ``call_timeout`` could
    not interrupt it: a ``RuntimeWarning`` says so.
    """
    name = batch.calls[index].name
    warnings.warn(
        f"tool {name!r} returned {type(value).__name__}, not an awaitable: it ran on the event loop, blocking it, "
        "and call_timeout cannot interrupt it; make it async, or run plain functions with run_tool_calls_in_threads",
        RuntimeWarning,
        stacklevel=2,
    )
    return value


def _expire(
    batch: RunningBatch, index: int, task: asyncio.Task[Any], seconds: float, release: Callable[[], None]
) -> None:
    """The per-call timer: settle first, free the call's slot, cancel last, so the timeout is the outcome.

    Once the run is ending the timer does nothing: the tool was (or is about
    to be) cancelled once by the run, and a second cancellation would cut
    short the cleanup in which it may still deliver a late value.
    """
    if batch.time_out(index, timeout_message(batch.calls[index].name, seconds)):
        release()
        if task.cancelling() == 0:
            task.cancel()


async def _stop(tasks: list[asyncio.Task[None]], grace: float) -> list[asyncio.Task[None]]:
    """Cancel the tool tasks still running, wait up to ``grace`` seconds, return those that did not finish.

    A task is cancelled at most once: one that timed out was cancelled by its
    timer, and what it still delivers in the grace is reported late.  Tasks
    still running when this returns — or when the wait itself is cancelled —
    are kept referenced until they finish, so what they deliver still reaches
    ``on_late``.
    """
    running = [task for task in tasks if not task.done()]
    for task in running:
        if task.cancelling() == 0:  # each tool is asked to stop once
            task.cancel()
    try:
        if running:
            await asyncio.wait(running, timeout=grace)
    finally:
        _linger([task for task in running if not task.done()])
        for task in tasks:
            if task.done() and not task.cancelled():
                task.exception()  # retrieved: what a tool raised is its outcome (or late), not an error lost
    return [task for task in running if not task.done()]


def _cancel_without_waiting(tasks: list[asyncio.Task[None]]) -> None:
    """The run is leaving by an exception: ask every tool to stop once, and keep the tasks referenced.

    The loop may already be closed (the runner's coroutine closed by the
    garbage collector after its loop ended): then there is nothing to cancel.
    """
    running = [task for task in tasks if not task.done()]
    with contextlib.suppress(RuntimeError):
        for task in running:
            if task.cancelling() == 0:
                task.cancel()
    _linger(running)


def _linger(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        _LINGERING.add(task)
        task.add_done_callback(_LINGERING.discard)
