"""Run a batch's synchronous tools on a thread pool, every call ending in exactly one outcome.

Theory of operation
-------------------
The same batch rules as the asyncio runner (:mod:`.batch`), with threads:
:func:`run_tool_calls_in_threads` announces the calls, settles the ones that
must not run, and submits one work item per runnable call to a
``concurrent.futures`` executor.  A work item *starts* (recorded by the batch,
only while the batch is open), calls the tool and hands what it returns or
raises to the batch, which settles the call through the closure.  A tool that
returns an awaitable (an ``async def`` given to this runner) did not run: its
outcome is an error saying so, naming :func:`~.asyncio_runner.run_tool_calls`,
and the coroutine is closed unawaited.  The closure is thread-safe and the first outcome it accepts wins, so a worker's
result racing the supervisor's timeout or close needs no other arbitration.

The supervisor is the calling thread.  It waits on a condition that every
settlement, abort and end of the generation by someone else (``begin``'s
``on_end``) notifies, and wakes for the earliest per-call timeout or the
batch deadline (in slices of at most :data:`threading.TIMEOUT_MAX`, so any
finite deadline is one):

* a started call past ``call_timeout`` is settled ``tool_timeout``;
* every call has its outcome → the batch is sealed (``completed``);
* the deadline passed → ``close`` with ``deadline_exceeded``;
* the abort signal fired → ``close`` with ``run_aborted``;
* the generation was superseded or closed elsewhere → nothing left to settle.

An exception in the supervising thread itself (``KeyboardInterrupt``), at
any point after ``begin`` returned — while planning, creating the pool,
submitting, supervising or concluding — ends the batch before it propagates:
sealed if every call has reported, else closed with ``run_cancelled``.

The executor.  A work item the executor cannot run — ``submit`` raises (a
pool already shut down), or its future fails or is cancelled before the work
started — gives its call the outcome ``executor_failed``: the tool never
started.  A ``ProcessPoolExecutor`` is refused before anything is announced:
the runner's work items are closures over the batch, which cannot cross a
process boundary.

A thread cannot be stopped.  A call that timed out, or that was running when
the batch closed, keeps its thread until the tool returns; the run does not
wait for it (``still_running``), and what it delivers is fenced and passed to
``on_late``.  Work items that had not started when the batch closed return at
once without calling their tool.  With no ``executor`` the runner makes one of
``max_concurrency`` threads (default: one per runnable call) and shuts it down
without waiting; a caller's executor is left running, and ``max_concurrency``
then must be ``None`` (its size is the bound).

The platform.  Everything the runner takes from the operating system — the
clock, the condition it waits on, the pool it creates, and the checkpoints
between its steps — comes from one :class:`ThreadPlatform`.  The runners use
:data:`SYSTEM`; the deterministic simulation (``proofs/runner_sim.py``) runs
the same code on a virtual clock with threads it schedules itself.

``on_late``.  Every late result — during the run or after it returned — is
passed to ``on_late``, in the worker thread that delivered it.  An exception
``on_late`` raises is reported as threading reports an exception that ends a
thread: ``threading.excepthook`` is called with the exception and that
worker thread (the default hook prints ``Exception in thread …`` and the
traceback to stderr).  It changes nothing else: the call keeps its outcome,
the run returns its report as it would have, the worker finishes normally,
and later late results still reach ``on_late``.  (Left to propagate, it
would end the work item and sit in a future nobody reads.)
"""

from __future__ import annotations

import inspect
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, final, overload

from tool_call_closure.closure import ToolCallClosure
from tool_call_closure.errors import UsageError
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.runners.batch import RunningBatch, check_tools, plan_calls
from tool_call_closure.runners.options import DEFAULTS, RunOptions, no_checkpoint
from tool_call_closure.runners.outcomes import (
    AbortSignal,
    BatchRun,
    Ending,
    LateResult,
    StaleTurn,
    timeout_message,
)
from tool_call_closure.values import TurnToken

__all__ = ["SYSTEM", "SyncTools", "ThreadPlatform", "run_in_threads", "run_tool_calls_in_threads"]

SyncTools = Mapping[str, Callable[..., object]] | Callable[[ToolCall], object]
"""Tool name → function called with the arguments as keyword arguments, or one function taking the call."""


class Condition(Protocol):
    """What the runner uses of a :class:`threading.Condition`."""

    def __enter__(self) -> object: ...
    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> object: ...
    def wait(self, timeout: float | None = None) -> bool: ...
    def notify_all(self) -> None: ...


def _thread_pool(workers: int) -> Executor:
    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tool-call")


@final
@dataclass(frozen=True, slots=True)
class ThreadPlatform:
    """What the thread runner takes from the operating system."""

    monotonic: Callable[[], float]
    condition: Callable[[], Condition]
    thread_pool: Callable[[int], Executor]
    checkpoint: Callable[[str], None]
    timeout_max: float
    """The longest single wait the condition accepts (longer waits are taken in slices)."""


SYSTEM = ThreadPlatform(time.monotonic, threading.Condition, _thread_pool, no_checkpoint, threading.TIMEOUT_MAX)
"""The real clock, real conditions, a real thread pool, no checkpoints."""


@overload
def run_tool_calls_in_threads(
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    tools: SyncTools,
    *,
    turn: None = None,
    call_timeout: float | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    abort: AbortSignal | None = None,
    executor: Executor | None = None,
    on_late: Callable[[LateResult], None] | None = None,
) -> BatchRun: ...


@overload
def run_tool_calls_in_threads(
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    tools: SyncTools,
    *,
    turn: TurnToken,
    call_timeout: float | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    abort: AbortSignal | None = None,
    executor: Executor | None = None,
    on_late: Callable[[LateResult], None] | None = None,
) -> BatchRun | StaleTurn: ...


def run_tool_calls_in_threads(
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    tools: SyncTools,
    *,
    turn: TurnToken | None = None,
    call_timeout: float | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    abort: AbortSignal | None = None,
    executor: Executor | None = None,
    on_late: Callable[[LateResult], None] | None = None,
) -> BatchRun | StaleTurn:
    """Announce ``calls`` on ``closure``, run their tools on threads, and return the closed batch's report.

    The options mean what they mean for :func:`~.asyncio_runner.run_tool_calls`;
    ``executor`` is a ``concurrent.futures.Executor`` of threads to use instead
    of a private pool.  ``on_late`` is called in the worker thread that
    delivered the late result; an exception it raises goes to
    ``threading.excepthook`` (with that thread) and changes no outcome and
    not the report.
    """
    options = RunOptions.checked(call_timeout, deadline, max_concurrency, 0, abort, on_late)
    return run_in_threads(SYSTEM, closure, calls, tools, turn=turn, options=options, executor=executor)


def run_in_threads(
    platform: ThreadPlatform,
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    tools: SyncTools,
    *,
    turn: TurnToken | None = None,
    options: RunOptions = DEFAULTS,
    executor: Executor | None = None,
) -> BatchRun | StaleTurn:
    """:func:`run_tool_calls_in_threads` with its options checked, on a given platform (the simulation's, or
    :data:`SYSTEM`).  ``options.cancel_grace`` is not used: a thread cannot be cancelled."""
    check_tools(tools)
    _check_executor(executor, options)
    changed = platform.condition()

    def notify() -> None:
        with changed:
            changed.notify_all()

    batch = RunningBatch(
        closure,
        calls,
        notify=notify,
        on_late=options.on_late,
        report_late_error=_report_late_error,
        checkpoint=platform.checkpoint,
    )
    stale = batch.announce(turn)
    if stale is not None:
        return stale
    dispatch: _Dispatch | None = None
    unsubscribe: Callable[[], None] | None = None
    try:
        platform.checkpoint("plan")
        planned = plan_calls(batch, tools)
        pool = executor
        if pool is None and planned:
            pool = platform.thread_pool(len(planned))  # threads start as work is dispatched, up to the limit
        dispatch = _Dispatch(batch, changed, platform, pool, planned, options.max_concurrency)
        abort = options.abort
        unsubscribe = None if abort is None else abort.subscribe(lambda: batch.stop("aborted"))
        decided = _supervise(batch, changed, options, platform, dispatch)
        platform.checkpoint("conclude")
        batch.conclude(decided, options.close_message(decided))
        _until_ended(batch, changed, platform)
    except BaseException:  # KeyboardInterrupt in the supervising thread, at any step: end the batch, then propagate
        batch.abandon()
        raise
    finally:
        if unsubscribe is not None:
            unsubscribe()
        if dispatch is not None and executor is None and dispatch.pool is not None:
            dispatch.pool.shutdown(wait=False, cancel_futures=True)
    assert dispatch is not None
    return batch.report(batch.ending_as_decided(decided), dispatch.still_running())


@final
class _Dispatch:
    """Which work items are submitted, which hold a concurrency slot, which are over.

    With ``max_concurrency`` the supervisor submits a call only while fewer
    than that many calls are in progress.  A call is in progress from its
    submission until its work item is over — or until it times out: a thread
    cannot be stopped, and a timed-out tool that never returns is abandoned
    (``still_running``) rather than left to keep the calls queued behind it
    from ever starting.  Without a limit every call is submitted at once (to
    the caller's executor, whose size is then the bound, or to a pool of one
    thread per call).  Every field is read and written under ``changed``.
    """

    __slots__ = ("batch", "busy", "changed", "finished", "limit", "platform", "pool", "queue", "work_items")

    def __init__(
        self,
        batch: RunningBatch,
        changed: Condition,
        platform: ThreadPlatform,
        pool: Executor | None,
        planned: list[tuple[int, Callable[[], object]]],
        limit: int | None,
    ) -> None:
        self.batch = batch
        self.changed = changed
        self.platform = platform
        self.pool = pool
        self.queue = list(planned)  # not yet submitted, in announcement order
        self.work_items = [index for index, _ in planned]
        self.limit = limit
        self.busy: set[int] = set()  # submitted and in progress
        self.finished: set[int] = set()  # work items that are over (ran, returned at once, or failed to run)

    def due(self) -> list[tuple[int, Callable[[], object]]]:
        """Under ``changed``: the calls to submit now (none once the run is ending), marked in progress."""
        if self.batch.concluding or self.batch.stop_reason is not None:
            return []
        room = len(self.queue) if self.limit is None else max(0, self.limit - len(self.busy))
        taken, self.queue = self.queue[:room], self.queue[room:]
        self.busy.update(index for index, _ in taken)
        return taken

    def submit(self, index: int, invoke: Callable[[], object]) -> None:
        """Outside ``changed``: hand one call to the executor; one it cannot take ends ``executor_failed``."""
        self.platform.checkpoint("submit")
        assert self.pool is not None
        try:
            future = self.pool.submit(self._work, index, invoke)
        except Exception as exc:  # noqa: BLE001  # e.g. a pool already shut down: this call cannot start
            self.batch.executor_failed(index, exc)
            self._over(index)
            return
        future.add_done_callback(lambda future: self._done(index, future))

    def free(self, index: int) -> None:
        """The call timed out: its slot goes to the next call, whatever its thread does."""
        with self.changed:
            self.busy.discard(index)
            self.changed.notify_all()

    def still_running(self) -> list[int]:
        """Started calls whose work item is not over (a call still queued in an executor never started)."""
        started = self.batch.started_at()
        with self.changed:
            return [index for index in self.work_items if index in started and index not in self.finished]

    def _work(self, index: int, invoke: Callable[[], object]) -> None:
        batch = self.batch
        try:
            if batch.try_start(index, self.platform.monotonic()):
                with self.changed:
                    self.changed.notify_all()  # the supervisor now has this call's timeout to wake for
                try:
                    value = invoke()
                except BaseException as exc:  # noqa: BLE001  # a worker thread has no cancellation: any exception is the outcome
                    batch.deliver_error(index, exc)
                else:
                    if inspect.isawaitable(value):  # an async tool: nothing of it ran, nothing may be recorded as run
                        batch.deliver_error(index, _not_run(batch.calls[index].name, value))
                    else:
                        batch.deliver_value(index, value)
        finally:
            self._over(index)

    def _done(self, index: int, future: Future[None]) -> None:
        """The work item's future is done: if the executor failed it before it ran, or it ran and what it raised
        escaped the delivery of its outcome, the call gets its outcome now (else nothing)."""
        error = None if future.cancelled() else future.exception()
        if future.cancelled() or error is not None:
            self.batch.executor_failed(index, error)  # nothing if the work item ran
        if error is not None:
            self.batch.tool_over(index, error)  # nothing unless it ran and its outcome was never recorded
        self._over(index)

    def _over(self, index: int) -> None:
        with self.changed:
            self.finished.add(index)
            self.busy.discard(index)
            self.changed.notify_all()


def _check_executor(executor: object, options: RunOptions) -> None:
    if executor is None:
        return
    if not isinstance(executor, Executor):
        raise UsageError(f"executor must be a concurrent.futures.Executor or None, got {type(executor).__name__}")
    if isinstance(executor, ProcessPoolExecutor):
        raise UsageError(
            "executor must run work items on threads, got a ProcessPoolExecutor: the runner's work items settle "
            "calls on this closure, in this process"
        )
    if options.max_concurrency is not None:
        raise UsageError("max_concurrency must be None when an executor is given (the executor's size is the bound)")


def _not_run(name: str, awaitable: object) -> TypeError:
    """The outcome of an async tool given to the thread runner: it returned an awaitable, and none of it ran."""
    if inspect.iscoroutine(awaitable):
        awaitable.close()  # never to be awaited: closed, so it is not reported as "never awaited"
    return TypeError(
        f"tool {name!r} returned {type(awaitable).__name__}, an awaitable, and did not run: "
        "run_tool_calls_in_threads calls plain functions; run async tools with run_tool_calls"
    )


def _report_late_error(error: BaseException, late: LateResult) -> None:
    """An exception from ``on_late`` in a worker thread: to ``threading.excepthook``, as if it ended the thread."""
    threading.excepthook(
        threading.ExceptHookArgs([type(error), error, error.__traceback__, threading.current_thread()])
    )


def _supervise(
    batch: RunningBatch, changed: Condition, options: RunOptions, platform: ThreadPlatform, dispatch: _Dispatch
) -> Ending:
    """Wait until every call has its outcome, the deadline passes or the run must stop; on the way, submit calls
    as concurrency slots free up and time calls out.

    The checks and the wait happen under ``changed``, which every notification
    takes, so no change is missed between them; submissions and timeouts are
    made outside it.
    """
    ends_at = None if options.deadline is None else platform.monotonic() + options.deadline
    timed_out: set[int] = set()
    while True:
        expired: list[int] = []
        with changed:
            if batch.all_settled():
                return "completed"
            if batch.stop_reason is not None:
                return batch.stop_reason
            now = platform.monotonic()
            if ends_at is not None and now >= ends_at:
                return "deadline_exceeded"
            due = dispatch.due()
            wake_at = ends_at
            if options.call_timeout is not None:
                for index, started in batch.started_at().items():
                    expires = started + options.call_timeout
                    if index in timed_out:
                        continue
                    if expires <= now:
                        expired.append(index)
                    elif wake_at is None or expires < wake_at:
                        wake_at = expires
            if not expired and not due:
                changed.wait(None if wake_at is None else min(max(0.0, wake_at - now), platform.timeout_max))
        for index, invoke in due:
            dispatch.submit(index, invoke)
        for index in expired:
            timed_out.add(index)
            assert options.call_timeout is not None
            if batch.time_out(index, timeout_message(batch.calls[index].name, options.call_timeout)):
                dispatch.free(index)


def _until_ended(batch: RunningBatch, changed: Condition, platform: ThreadPlatform) -> None:
    """Wait for the generation's final snapshot: at once after the runner's own seal or close; when another
    thread's ``begin`` superseded the generation first, that thread delivers it right after its commit."""
    with changed:
        while batch.final is None:
            changed.wait(platform.timeout_max)
