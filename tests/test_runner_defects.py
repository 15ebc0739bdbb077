"""Each runner defect found by trying the runners as a user and as an attacker would (issue 18, items 1–11, 19).

Every test here failed on the runners before they were rebuilt on ``begin``'s
``on_end`` and checked by the simulation (``tests/test_runner_sim.py``); each
names its item.  No test depends on timing to pass: waits are bounded by
events the test controls, and a ``NEVER`` bound only keeps a broken runner
from hanging the suite.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from typing import Any

import pytest

from tool_call_closure import Snapshot, ToolCallClosure, UsageError
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.providers.result_text import result_text
from tool_call_closure.runners import (
    AbortSignal,
    BatchRun,
    LateResult,
    StaleTurn,
    run_tool_calls,
    run_tool_calls_in_threads,
)
from tool_call_closure.runners.asyncio_runner import run_on_loop
from tool_call_closure.runners.options import RunOptions
from tool_call_closure.runners.thread_runner import SYSTEM, ThreadPlatform, run_in_threads

NEVER = 60.0


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments, json.dumps(arguments))


def settled(snapshot: Snapshot, call_id: str) -> tuple[str, str | None, str]:
    """(state, code, the text the model reads) of one call."""
    (entry,) = [c for c in snapshot.calls if c.id == call_id]
    assert entry.settlement is not None
    return entry.state, entry.settlement.code, result_text(entry.settlement)


def in_thread(target: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Run ``target`` on its own thread (the thread runner blocks its caller); its result or exception lands in the list."""
    box: list[Any] = []

    def body() -> None:
        try:
            box.append(target())
        except BaseException as exc:  # noqa: BLE001  # handed to the test
            box.append(exc)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread, box


# ------------------------------------------------------------------------------- items 1, 2: the end reaches the run


def test_item_1_2_asyncio_a_superseded_run_returns_at_once_and_cancels_its_hanging_tool() -> None:
    closure = ToolCallClosure()
    cancelled = []

    async def hangs() -> str:
        try:
            await asyncio.sleep(NEVER)
        except asyncio.CancelledError:
            cancelled.append("cancelled")
            raise
        return "never"

    async def main() -> tuple[BatchRun, Snapshot | None]:
        started = asyncio.Event()

        async def tool() -> str:
            started.set()
            return await hangs()

        async def newer_turn() -> Snapshot | None:
            await started.wait()
            return closure.begin([{"id": "next", "name": "next"}]).superseded

        other = asyncio.create_task(newer_turn())
        report = await asyncio.wait_for(
            run_tool_calls(closure, [call("c1", "t")], {"t": tool}, call_timeout=NEVER), NEVER
        )
        return report, await other

    report, superseded = asyncio.run(main())
    assert report.ending == "superseded"
    assert report.snapshot is superseded
    assert cancelled == ["cancelled"]  # the model was told the call was cancelled: so was the tool
    assert settled(report.snapshot, "c1")[1] == "superseded"


def test_item_1_threads_a_run_closed_elsewhere_returns_while_its_tool_still_runs_and_the_late_value_reaches_on_late() -> (
    None
):
    closure = ToolCallClosure()
    started, release = threading.Event(), threading.Event()
    late: list[LateResult] = []

    def tool() -> str:
        started.set()
        release.wait(NEVER)
        return "after the close"

    thread, box = in_thread(
        lambda: run_tool_calls_in_threads(
            closure, [call("c1", "t")], {"t": tool}, call_timeout=NEVER, on_late=late.append
        )
    )
    assert started.wait(NEVER)
    assert closure._run is not None
    elsewhere = closure.close(closure._run.handle, {"status": "error", "code": "user_left", "message": "gone"})
    thread.join(NEVER)
    [report] = box
    assert isinstance(report, BatchRun)
    assert report.ending == "closed_elsewhere"
    assert isinstance(elsewhere, Snapshot)
    assert report.snapshot.close_reason == elsewhere.close_reason
    assert report.still_running == ("c1",)
    release.set()
    for _ in range(1000):
        if late:
            break
        threading.Event().wait(0.01)
    assert [(item.call_id, item.value, item.rejection.reason) for item in late] == [
        ("c1", "after the close", "run_closed")
    ]


# ------------------------------------------------------------------------------- item 3: values that fail to convert


class BadJson:
    def __json__(self) -> object:
        raise ValueError("cannot serialize this")


@dataclasses.dataclass
class WithBadField:
    field: object = dataclasses.field(default_factory=BadJson)


class BadItems(Mapping[str, object]):
    def __getitem__(self, key: str) -> object:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("items() is broken")

    def __len__(self) -> int:
        return 1


class BrokenStr(Exception):  # noqa: N818  # named for what it is to the test
    def __str__(self) -> str:
        raise RuntimeError("__str__ is broken")


UNCONVERTIBLE = {"__json__ raises": BadJson(), "a dataclass field raises": WithBadField(), "items() raises": BadItems()}


@pytest.mark.parametrize("value", UNCONVERTIBLE.values(), ids=UNCONVERTIBLE.keys())
@pytest.mark.parametrize("runner", ["asyncio", "threads"])
def test_item_3_a_value_whose_conversion_raises_is_an_invalid_result(runner: str, value: object) -> None:
    closure = ToolCallClosure()
    report = _run_one(runner, closure, lambda: value)
    assert report.ending == "completed"
    state, code, text = settled(report.snapshot, "c1")
    assert (state, code) == ("error", "invalid_result")
    assert "could not be converted to JSON" in text


@pytest.mark.parametrize("runner", ["asyncio", "threads"])
def test_item_3_an_exception_whose_str_raises_is_a_tool_error_named_by_its_class(runner: str) -> None:
    def raises() -> object:
        raise BrokenStr

    report = _run_one(runner, ToolCallClosure(), raises)
    state, code, text = settled(report.snapshot, "c1")
    assert (state, code) == ("error", "tool_error")
    assert "BrokenStr" in text


def _run_one(runner: str, closure: ToolCallClosure, body: Callable[[], object]) -> BatchRun:
    """One call to a tool that does ``body`` (as a coroutine for asyncio)."""
    if runner == "threads":
        return run_tool_calls_in_threads(closure, [call("c1", "t")], {"t": body}, deadline=NEVER)

    async def tool() -> object:
        return body()

    return asyncio.run(run_tool_calls(closure, [call("c1", "t")], {"t": tool}, deadline=NEVER))


# ------------------------------------------------------------------------------- item 4: BaseException from a tool


class CustomBase(BaseException):
    pass


@pytest.mark.parametrize("error", [GeneratorExit("closing"), CustomBase("custom")], ids=["GeneratorExit", "custom"])
def test_item_4_asyncio_a_tool_raising_a_base_exception_gets_a_tool_error_like_the_thread_runner(
    error: BaseException,
) -> None:
    def raises() -> object:
        raise error

    for runner in ("asyncio", "threads"):
        report = _run_one(runner, ToolCallClosure(), raises)
        assert report.ending == "completed"
        assert settled(report.snapshot, "c1")[:2] == ("error", "tool_error")


# ------------------------------------------------------------------------------- item 5: interrupts (threads)


def _interrupting(at: str) -> ThreadPlatform:
    def checkpoint(label: str) -> None:
        if label == at:
            raise KeyboardInterrupt(f"at {label}")

    def pool(workers: int) -> Executor:
        if at == "pool":
            raise KeyboardInterrupt("while creating the pool")
        return SYSTEM.thread_pool(workers)

    return ThreadPlatform(SYSTEM.monotonic, SYSTEM.condition, pool, checkpoint, SYSTEM.timeout_max)


@pytest.mark.parametrize("at", ["plan", "pool", "submit", "conclude", "seal"])
def test_item_5_threads_an_interrupt_at_any_step_ends_the_batch_before_it_propagates(at: str) -> None:
    closure = ToolCallClosure()
    with pytest.raises(KeyboardInterrupt):
        run_in_threads(
            _interrupting(at),
            closure,
            [call("c1", "t"), call("c2", "t")],
            {"t": lambda: "ok"},
            options=RunOptions.checked(deadline=NEVER),
        )
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.closed
    assert all(c.settlement is not None for c in snapshot.calls)
    reason = snapshot.close_reason
    assert reason is not None
    assert reason.status == "complete" or reason.code == "run_cancelled"


def test_item_5_threads_an_exception_escaping_the_delivery_in_a_worker_still_gives_the_call_an_outcome() -> None:
    """Not the supervising thread's interrupt but the worker's: what escapes the runner's own delivery step."""
    closure = ToolCallClosure()
    report = run_in_threads(
        _interrupting("deliver"),
        closure,
        [call("c1", "t")],
        {"t": lambda: "ok"},
        options=RunOptions.checked(deadline=NEVER),
    )
    assert report.ending == "completed"
    state, code, text = settled(report.snapshot, "c1")
    assert (state, code) == ("error", "tool_error")
    assert "could not record its outcome (at deliver)" in text


# ------------------------------------------------------------------------------- item 6: large but finite seconds


@pytest.mark.parametrize("runner", ["asyncio", "threads"])
def test_item_6_a_deadline_of_1e10_seconds_is_a_deadline(runner: str) -> None:
    closure = ToolCallClosure()
    if runner == "threads":
        report = run_tool_calls_in_threads(
            closure, [call("c1", "t")], {"t": lambda: "fast"}, deadline=1e10, call_timeout=1e10
        )
    else:

        async def fast() -> str:
            return "fast"

        report = asyncio.run(run_tool_calls(closure, [call("c1", "t")], {"t": fast}, deadline=1e10, call_timeout=1e10))
    assert report.ending == "completed"
    assert settled(report.snapshot, "c1")[0] == "success"


@pytest.mark.parametrize("option", ["deadline", "call_timeout"])
def test_item_6_a_number_of_seconds_too_large_for_a_float_is_a_usage_error_naming_it(option: str) -> None:
    closure = ToolCallClosure()
    with pytest.raises(UsageError, match=f"{option} must be a finite number of seconds"):
        run_tool_calls_in_threads(closure, [call("c1", "t")], {"t": lambda: 1}, **{option: 2**1100})
    assert closure.active_generation is None


# ------------------------------------------------------------------------------- item 7: ending agrees with the snapshot


def test_item_7_asyncio_superseded_while_the_runner_closes_reports_superseded_with_the_superseded_snapshot() -> None:
    closure = ToolCallClosure()
    superseded: list[Snapshot | None] = []

    def checkpoint(label: str) -> None:
        if label == "close" and not superseded:  # another thread's begin lands between the decision and the close
            superseded.append(closure.begin([{"id": "next", "name": "next"}]).superseded)

    async def hangs() -> str:
        await asyncio.sleep(NEVER)
        return "never"

    report = asyncio.run(
        run_on_loop(
            checkpoint,
            closure,
            [call("c1", "t")],
            {"t": hangs},
            options=RunOptions.checked(deadline=0.01, cancel_grace=0),
        )
    )
    assert isinstance(report, BatchRun)
    assert report.ending == "superseded"
    assert report.snapshot is superseded[0]


def test_item_7_threads_closed_elsewhere_while_the_runner_seals_reports_closed_elsewhere() -> None:
    closure = ToolCallClosure()

    def checkpoint(label: str) -> None:
        if label == "seal" and closure._run is not None and closure._run.state == "open":
            closure.close(closure._run.handle, {"status": "cancelled", "code": "elsewhere"})

    platform = ThreadPlatform(SYSTEM.monotonic, SYSTEM.condition, SYSTEM.thread_pool, checkpoint, SYSTEM.timeout_max)
    report = run_in_threads(platform, closure, [call("c1", "t")], {"t": lambda: "ok"})
    assert isinstance(report, BatchRun)
    assert report.ending == "closed_elsewhere"
    assert report.snapshot.close_reason is not None
    assert report.snapshot.close_reason.code == "elsewhere"


# ------------------------------------------------------------------------------- item 8: small max_code_bytes


def test_item_8_a_closure_whose_max_code_bytes_cannot_hold_the_runner_codes_is_refused_before_begin() -> None:
    closure = ToolCallClosure(max_code_bytes=8)
    with pytest.raises(UsageError, match=r"max_code_bytes \(8\) is smaller than the runner's longest code .* >= 17"):
        run_tool_calls_in_threads(closure, [call("c1", "t")], {"t": lambda: 1})

    async def tool() -> int:
        return 1

    with pytest.raises(UsageError, match="max_code_bytes"):
        asyncio.run(run_tool_calls(closure, [call("c1", "t")], {"t": tool}))
    assert closure.active_generation is None


# ------------------------------------------------------------------------------- item 9: executors


def test_item_9_a_process_pool_is_refused_before_anything_is_announced() -> None:
    closure = ToolCallClosure()
    with ProcessPoolExecutor(max_workers=1) as pool, pytest.raises(UsageError, match="ProcessPoolExecutor"):
        run_tool_calls_in_threads(closure, [call("c1", "t")], {"t": lambda: 1}, executor=pool)
    assert closure.active_generation is None


class FailingExecutor(Executor):
    """Fails every work item without running it (as a process pool does with what it cannot pickle)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        future.set_exception(TypeError("cannot pickle 'function' object"))
        return future


class ShutDownExecutor(Executor):
    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        raise RuntimeError("cannot schedule new futures after shutdown")


@pytest.mark.parametrize("executor", [FailingExecutor(), ShutDownExecutor()], ids=["future fails", "submit raises"])
def test_item_9_a_work_item_the_executor_cannot_run_ends_executor_failed_and_the_run_returns(
    executor: Executor,
) -> None:
    ran = []
    report = run_tool_calls_in_threads(
        ToolCallClosure(), [call("c1", "t")], {"t": lambda: ran.append(1)}, executor=executor, deadline=NEVER
    )
    assert report.ending == "completed"
    state, code, text = settled(report.snapshot, "c1")
    assert (state, code) == ("error", "executor_failed")
    assert "The call never started." in text
    assert ran == []
    assert report.started == ()


# ------------------------------------------------------------------------------- item 10: one cancellation per tool


def test_item_10_after_an_abort_the_call_timeout_does_not_cut_the_tools_cleanup_short() -> None:
    late: list[LateResult] = []
    cancellations = []
    abort = AbortSignal()

    async def cleans_up() -> str:
        try:
            await asyncio.sleep(NEVER)
        except asyncio.CancelledError:
            cancellations.append(1)
            await asyncio.sleep(0.05)  # the call timeout (0.01 after it started) passes during this cleanup
            return "cleaned up"
        return "never"

    async def main() -> BatchRun:
        async def trigger() -> None:
            await asyncio.sleep(0)
            abort.abort()

        asyncio.get_running_loop().create_task(trigger())
        return await run_tool_calls(
            ToolCallClosure(), [call("c1", "t")], {"t": cleans_up}, call_timeout=0.01, abort=abort, cancel_grace=NEVER,
            on_late=late.append,
        )  # fmt: skip

    report = asyncio.run(main())
    assert report.ending == "aborted"
    assert cancellations == [1]
    assert [(item.call_id, item.value) for item in late] == [("c1", "cleaned up")]


# ------------------------------------------------------------------------------- item 11: arguments that do not bind


@pytest.mark.parametrize("runner", ["asyncio", "threads"])
def test_item_11_arguments_that_do_not_bind_are_an_invalid_call_without_the_function_name(runner: str) -> None:
    ran = []

    def _internal_weather_impl(city: str) -> str:
        ran.append(city)
        return city

    async def _internal_async_weather_impl(city: str) -> str:
        ran.append(city)
        return city

    tool = _internal_weather_impl if runner == "threads" else _internal_async_weather_impl
    calls = [call("c1", "get_weather", cty="Paris")]
    closure = ToolCallClosure()
    if runner == "threads":
        report = run_tool_calls_in_threads(closure, calls, {"get_weather": tool})
    else:
        report = asyncio.run(run_tool_calls(closure, calls, {"get_weather": tool}))  # type: ignore[dict-item]
    state, code, text = settled(report.snapshot, "c1")
    assert (state, code) == ("error", "invalid_tool_call")
    assert "The arguments of tool 'get_weather' do not match its parameters" in text
    assert "_internal" not in text
    assert ran == []
    assert report.started == ()


# ------------------------------------------------------------------------------- item 19: stale model turns


@pytest.mark.parametrize("runner", ["asyncio", "threads"])
def test_item_19_a_stale_turn_announces_nothing_and_runs_nothing(runner: str) -> None:
    closure = ToolCallClosure()
    token = closure.turn_token()  # taken before the (older) model request
    newer = closure.begin([{"id": "newer", "name": "t"}])  # the newer request's batch begins first
    ran = []
    if runner == "threads":
        result = run_tool_calls_in_threads(closure, [call("c1", "t")], {"t": lambda: ran.append(1)}, turn=token)
    else:

        async def tool() -> None:
            ran.append(1)

        result = asyncio.run(run_tool_calls(closure, [call("c1", "t")], {"t": tool}, turn=token))
    assert isinstance(result, StaleTurn)
    assert result.rejection.reason == "stale_turn"
    assert result.call_ids == ("c1",)
    assert ran == []
    assert closure.active_generation == newer.generation
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert not snapshot.closed  # the newer batch goes on


def test_item_19_a_current_turn_runs_as_without_a_token() -> None:
    closure = ToolCallClosure()
    report = run_tool_calls_in_threads(closure, [call("c1", "t")], {"t": lambda: "ok"}, turn=closure.turn_token())
    assert isinstance(report, BatchRun)
    assert report.ending == "completed"


# ------------------------------------------------------------------------------- begin's on_end (deviation D21)


def test_on_end_is_called_once_per_generation_with_its_final_snapshot_and_how_it_ended() -> None:
    closure = ToolCallClosure()
    ends: list[tuple[int, bool, str]] = []

    def record(snapshot: Snapshot, how: str) -> None:
        ends.append((snapshot.generation, snapshot.closed, how))

    first = closure.begin([{"id": "a", "name": "t"}], on_end=record)
    second = closure.begin([{"id": "b", "name": "t"}], on_end=record)  # supersedes the first
    closure.succeed(second.handle, "b", "ok")
    closure.seal(second.handle)
    closure.close(second.handle)  # idempotent: not a second end
    third = closure.begin([{"id": "c", "name": "t"}], on_end=record)
    closure.close(third.handle, {"status": "error"})
    assert first.generation == 1
    assert ends == [(1, True, "superseded"), (2, True, "sealed"), (3, True, "closed")]


def test_on_end_of_a_generation_ended_between_its_commit_and_the_registration_is_still_called() -> None:
    """The race on_end is built for: another thread supersedes the new generation before begin registers it."""
    closure = ToolCallClosure()
    ends: list[tuple[int, str]] = []
    superseded: list[Snapshot | None] = []
    machine_begin = closure._machine.entries["begin"]

    def begin_then_another_thread_begins() -> Any:
        result = machine_begin(closure, "begin", [{"id": "a", "name": "t"}], None)
        superseded.append(closure.begin([{"id": "b", "name": "t"}]).superseded)  # lands before registration
        return result

    closure._end_watch.begin_watched(begin_then_another_thread_begins, lambda s, how: ends.append((s.generation, how)))
    assert ends == [(1, "superseded")]
    assert superseded[0] is not None
    assert closure._end_watch.pending == {}
    assert closure._end_watch.callbacks == {}


def test_on_end_that_raises_is_logged_and_the_ending_operation_still_returns(caplog: pytest.LogCaptureFixture) -> None:
    closure = ToolCallClosure()

    def broken(snapshot: Snapshot, how: str) -> None:
        raise RuntimeError("on_end broke")

    begun = closure.begin([{"id": "a", "name": "t"}], on_end=broken)
    with caplog.at_level(logging.ERROR, logger="tool_call_closure"):
        closed = closure.close(begun.handle)
    assert isinstance(closed, Snapshot)
    assert closed.closed
    assert "exception calling on_end of generation 1 (closed)" in caplog.text
    assert "on_end broke" in caplog.text


def test_on_end_that_is_not_callable_is_refused_and_nothing_is_announced() -> None:
    closure = ToolCallClosure()
    with pytest.raises(UsageError, match="on_end must be a function or None, got str"):
        closure.begin([{"id": "a", "name": "t"}], on_end="later")  # type: ignore[arg-type]
    assert closure.active_generation is None
