"""Planted bugs in the runners, each one a defect the runners had (or could have): the simulation must find them.

Theory of operation
-------------------
A checker that finds nothing proves nothing until it is shown to find
something.  Each mutant here replaces one function of the runners with a
version that reintroduces one specific defect, named after the behaviour it
breaks; ``runner_sim.py --mutant NAME`` applies it before exploring, and
``tests/test_runner_sim.py`` requires a violation for every one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from tool_call_closure.errors import LimitError, UsageError
from tool_call_closure.runners import asyncio_runner, batch, outcomes, thread_runner
from tool_call_closure.runners.batch import RunningBatch

__all__ = ["MUTANTS", "apply"]


def _end_not_a_stop() -> None:
    """The generation's end is recorded but does not stop the run: a superseded run whose tool hangs waits on."""

    def generation_ended(self: RunningBatch, snapshot: Any, how: Any) -> None:
        with self._lock:
            self._final = snapshot
            self._how = how
        self._notify()

    RunningBatch._generation_ended = generation_ended  # type: ignore[method-assign]


def _conversion_escapes() -> None:
    """Only the closure's own refusals are caught: a ``__json__`` that raises leaves the call without an outcome."""

    def deliver_value(self: RunningBatch, index: int, value: object) -> None:
        call_id = self.calls[index].id
        try:
            result = self.closure.succeed(self.begin.handle, call_id, value)
        except LimitError as exc:
            result = self._fail(index, str(exc), "result_too_large")
        except UsageError as exc:
            result = self._fail(index, str(exc), "invalid_result")
        self._record(index, result, ("result", value))

    RunningBatch.deliver_value = deliver_value  # type: ignore[method-assign]


def _str_escapes() -> None:
    """The exception's text is taken with a plain ``str()``: a ``__str__`` that raises loses the outcome."""
    batch.exception_text = lambda error: str(error) or type(error).__name__  # type: ignore[attr-defined]


def _base_exception_escapes() -> None:
    """The asyncio runner catches ``Exception`` only: a tool raising ``GeneratorExit`` leaves its call pending."""

    async def execute(
        running: RunningBatch,
        index: int,
        invoke: Callable[[], Any],
        call_timeout: float | None,
        release: Callable[[], None],
    ) -> None:
        loop = asyncio.get_running_loop()
        if not running.try_start(index, loop.time()):
            return
        task = asyncio.current_task()
        assert task is not None
        timer = None
        if call_timeout is not None:
            timer = loop.call_later(call_timeout, asyncio_runner._expire, running, index, task, call_timeout, release)
        try:
            value = await invoke()
        except asyncio.CancelledError as exc:
            if task.cancelling() == 0:
                running.deliver_error(index, exc)
            raise
        except Exception as exc:  # noqa: BLE001
            running.deliver_error(index, exc)
        else:
            running.deliver_value(index, value)
        finally:
            if timer is not None:
                timer.cancel()

    asyncio_runner._execute = execute  # type: ignore[assignment]


def _no_abandon() -> None:
    """An exception in the supervising thread propagates without ending the batch: its calls stay pending."""
    RunningBatch.abandon = lambda self: None  # type: ignore[method-assign]


def _timer_cancels_twice() -> None:
    """The per-call timer cancels the tool even after the run ended: a value delivered in cleanup is lost."""

    def expire(
        running: RunningBatch, index: int, task: asyncio.Task[Any], seconds: float, release: Callable[[], None]
    ) -> None:
        running.time_out(index, outcomes.timeout_message(running.calls[index].name, seconds))
        release()
        task.cancel()

    asyncio_runner._expire = expire


def _ending_as_decided() -> None:
    """The report says what the supervisor decided, even when another thread ended the generation first."""
    RunningBatch.ending_as_decided = lambda self, decided: decided  # type: ignore[method-assign]


def _slot_kept() -> None:
    """A timed-out tool that ignores cancellation keeps its concurrency slot: the calls behind it never start."""

    def expire(
        running: RunningBatch, index: int, task: asyncio.Task[Any], seconds: float, release: Callable[[], None]
    ) -> None:
        timed_out = running.time_out(index, outcomes.timeout_message(running.calls[index].name, seconds))
        if timed_out and task.cancelling() == 0:
            task.cancel()

    asyncio_runner._expire = expire


def _executor_failure_ignored() -> None:
    """A work item the executor fails before it runs is ignored: its call never gets an outcome."""
    thread_runner._Dispatch._done = lambda self, index, future: self._over(index)  # type: ignore[method-assign]


def _still_running_from_planned() -> None:
    """``still_running`` lists every planned call whose work is not over, queued ones that never started too."""

    def still_running(self: Any) -> list[int]:
        with self.changed:
            return [index for index in self.work_items if index not in self.finished]

    thread_runner._Dispatch.still_running = still_running  # type: ignore[method-assign]


MUTANTS: dict[str, tuple[Callable[[], None], str]] = {
    "end-not-a-stop": (_end_not_a_stop, "issue 18 items 1, 2"),
    "conversion-escapes": (_conversion_escapes, "item 3"),
    "str-escapes": (_str_escapes, "item 3"),
    "base-exception-escapes": (_base_exception_escapes, "item 4"),
    "no-abandon": (_no_abandon, "item 5"),
    "timer-cancels-twice": (_timer_cancels_twice, "item 10"),
    "ending-as-decided": (_ending_as_decided, "item 7"),
    "slot-kept": (_slot_kept, "found by the simulation"),
    "executor-failure-ignored": (_executor_failure_ignored, "item 9"),
    "still-running-from-planned": (_still_running_from_planned, "found while writing the simulation"),
}
"""name -> (how to plant it, where the defect comes from)."""


def apply(name: str) -> None:
    MUTANTS[name][0]()
