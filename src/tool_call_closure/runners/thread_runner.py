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
settlement, fence and abort notifies, and wakes for the earliest per-call
timeout or the batch deadline:

* a started call past ``call_timeout`` is settled ``tool_timeout``;
* every call has its outcome → the batch is sealed (``completed``);
* the deadline passed → ``close`` with ``deadline_exceeded``;
* the abort signal fired → ``close`` with ``run_aborted``;
* the generation was superseded or closed elsewhere → nothing left to settle.

An exception in the supervising thread itself (``KeyboardInterrupt``) closes
the batch with ``run_cancelled`` before it propagates.

A thread cannot be stopped.  A call that timed out, or that was running when
the batch closed, keeps its thread until the tool returns; the run does not
wait for it (``still_running``), and what it delivers is fenced and passed to
``on_late``.  Work items that had not started when the batch closed return at
once without calling their tool.  With no ``executor`` the runner makes one of
``max_concurrency`` threads (default: one per runnable call) and shuts it down
without waiting; a caller's executor is left running, and ``max_concurrency``
then must be ``None`` (its size is the bound).

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
from concurrent.futures import Executor, ThreadPoolExecutor

from tool_call_closure.closure import ToolCallClosure
from tool_call_closure.errors import UsageError
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.runners.batch import RunningBatch, check_tools, plan_calls
from tool_call_closure.runners.options import RunOptions
from tool_call_closure.runners.outcomes import (
    CANCELLED_MESSAGE,
    AbortSignal,
    BatchRun,
    Ending,
    LateResult,
    deadline_message,
    timeout_message,
)

__all__ = ["SyncTools", "run_tool_calls_in_threads"]

SyncTools = Mapping[str, Callable[..., object]] | Callable[[ToolCall], object]
"""Tool name → function called with the arguments as keyword arguments, or one function taking the call."""


def run_tool_calls_in_threads(
    closure: ToolCallClosure,
    calls: Sequence[ToolCall],
    tools: SyncTools,
    *,
    call_timeout: float | None = None,
    deadline: float | None = None,
    max_concurrency: int | None = None,
    abort: AbortSignal | None = None,
    executor: Executor | None = None,
    on_late: Callable[[LateResult], None] | None = None,
) -> BatchRun:
    """Announce ``calls`` on ``closure``, run their tools on threads, and return the closed batch's report.

    The options mean what they mean for :func:`~.asyncio_runner.run_tool_calls`;
    ``executor`` is a ``concurrent.futures.Executor`` of threads to use instead
    of a private pool.  ``on_late`` is called in the worker thread that
    delivered the late result; an exception it raises goes to
    ``threading.excepthook`` (with that thread) and changes no outcome and
    not the report.
    """
    options = RunOptions.checked(call_timeout, deadline, max_concurrency, 0)
    check_tools(tools)
    if executor is not None and options.max_concurrency is not None:
        raise UsageError("max_concurrency must be None when an executor is given (the executor's size is the bound)")
    changed = threading.Condition()

    def notify() -> None:
        with changed:
            changed.notify_all()

    batch = RunningBatch(closure, calls, notify=notify, on_late=on_late, report_late_error=_report_late_error)
    planned = plan_calls(batch, tools)
    pool = executor
    if pool is None and planned:
        pool = ThreadPoolExecutor(max_workers=options.max_concurrency or len(planned), thread_name_prefix="tool-call")
    finished: set[int] = set()

    def work(index: int, invoke: Callable[[], object]) -> None:
        try:
            if batch.try_start(index, time.monotonic()):
                notify()  # the supervisor now has this call's timeout to wake for
                try:
                    value = invoke()
                except BaseException as exc:  # noqa: BLE001  # a worker thread has no cancellation: any exception is the outcome
                    batch.deliver_error(index, exc)
                else:
                    if inspect.isawaitable(
                        value
                    ):  # an async tool: nothing of it ran, so nothing may be recorded as run
                        batch.deliver_error(index, _not_run(batch.calls[index].name, value))
                    else:
                        batch.deliver_value(index, value)
        finally:
            with changed:
                finished.add(index)
                changed.notify_all()

    unsubscribe = abort.subscribe(lambda: batch.stop("aborted")) if abort is not None else None
    try:
        for index, invoke in planned:
            assert pool is not None
            pool.submit(work, index, invoke)
        ending = _supervise(batch, changed, options)
    except BaseException:  # KeyboardInterrupt in the supervising thread: close before it propagates
        batch.conclude("cancelled", CANCELLED_MESSAGE)
        raise
    finally:
        if unsubscribe is not None:
            unsubscribe()
        if pool is not None and executor is None:
            pool.shutdown(wait=False, cancel_futures=True)
    message = None
    if ending == "deadline_exceeded" and options.deadline is not None:
        message = deadline_message(options.deadline)
    elif ending == "aborted" and abort is not None:
        message = abort.message
    batch.conclude(ending, message)
    with changed:
        left = [index for index, _ in planned if index not in finished]
    return batch.report(ending, left)


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


def _supervise(batch: RunningBatch, changed: threading.Condition, options: RunOptions) -> Ending:
    """Wait until every call has its outcome, the deadline passes or the run must stop; time calls out on the way."""
    ends_at = None if options.deadline is None else time.monotonic() + options.deadline
    timed_out: set[int] = set()
    with changed:
        while True:
            if batch.all_settled():
                return "completed"
            if batch.stop_reason is not None:
                return batch.stop_reason
            now = time.monotonic()
            if ends_at is not None and now >= ends_at:
                return "deadline_exceeded"
            wake_at = ends_at
            if options.call_timeout is not None:
                for index, started in batch.started_at().items():
                    if index in timed_out:
                        continue
                    expires = started + options.call_timeout
                    if expires <= now:
                        timed_out.add(index)
                        batch.time_out(index, timeout_message(batch.calls[index].name, options.call_timeout))
                    elif wake_at is None or expires < wake_at:
                        wake_at = expires
                if batch.all_settled():
                    continue
            changed.wait(None if wake_at is None else max(0.0, wake_at - time.monotonic()))
