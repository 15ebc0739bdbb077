"""The thread-pool runner: real threads, real races, every call exactly one outcome, nothing late exported.

No mocks: the tools run on ``concurrent.futures`` worker threads, block on
``threading.Event``\\ s the test controls, raise, and return after their
timeout.  Nothing asserts on elapsed time.
"""

from __future__ import annotations

import _thread
import gc
import json
import random
import signal
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from tool_call_closure import Snapshot, ToolCallClosure, UsageError
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.providers.result_text import result_text
from tool_call_closure.runners import AbortSignal, LateResult, run_tool_calls_in_threads

NEVER = 60.0  # a bound a correct run never reaches; it only keeps a broken one from hanging


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments, json.dumps(arguments))


def outcome(snapshot: Snapshot, call_id: str) -> tuple[str, str | None, str | None]:
    (entry,) = [c for c in snapshot.calls if c.id == call_id]
    assert entry.settlement is not None
    return entry.state, entry.settlement.code, entry.settlement.side_effect_state


def error_of(snapshot: Snapshot, call_id: str) -> dict[str, Any]:
    (entry,) = [c for c in snapshot.calls if c.id == call_id]
    assert entry.settlement is not None
    error: dict[str, Any] = json.loads(result_text(entry.settlement))["error"]
    return error


def test_tools_run_on_worker_threads_and_their_results_are_sealed() -> None:
    threads: set[str] = set()
    barrier = threading.Barrier(3, timeout=NEVER)  # all three must be running at once

    def where(n: int) -> int:
        barrier.wait()
        threads.add(threading.current_thread().name)
        return n * 10

    report = run_tool_calls_in_threads(
        ToolCallClosure(), [call(f"c{n}", "where", n=n) for n in range(3)], {"where": where}
    )
    assert report.ending == "completed"
    assert report.snapshot is not None
    assert [c.settlement.content for c in report.snapshot.calls if c.settlement] == ["0", "10", "20"]
    assert len(threads) == 3
    assert threading.current_thread().name not in threads


def test_an_exception_in_a_thread_becomes_a_tool_error_with_its_text() -> None:
    def broken() -> None:
        raise OSError("disk full")

    def fine() -> str:
        return "ok"

    report = run_tool_calls_in_threads(
        ToolCallClosure(), [call("c1", "broken"), call("c2", "fine")], {"broken": broken, "fine": fine}
    )
    assert report.snapshot is not None
    assert error_of(report.snapshot, "c1") == {"code": "tool_error", "message": "disk full"}
    assert outcome(report.snapshot, "c2") == ("success", None, None)


def test_a_thread_past_its_timeout_is_settled_tool_timeout_and_its_real_result_is_fenced_late() -> None:
    """Scenario 2: a thread cannot be stopped; its result arrives after the timeout and is never exported."""
    release = threading.Event()
    late: list[LateResult] = []
    delivered = threading.Event()

    def blocked() -> str:
        release.wait(NEVER)
        return "REAL-BUT-LATE"

    def on_late(result: LateResult) -> None:
        late.append(result)
        delivered.set()

    closure = ToolCallClosure()
    report = run_tool_calls_in_threads(
        closure, [call("c1", "blocked")], {"blocked": blocked}, call_timeout=0.05, on_late=on_late
    )
    assert report.ending == "completed"
    assert report.still_running == ("c1",)
    assert report.snapshot is not None
    assert error_of(report.snapshot, "c1") == {
        "code": "tool_timeout",
        "message": "Tool 'blocked' timed out after 0.05 seconds.",
    }
    release.set()
    assert delivered.wait(NEVER)
    assert [(x.call_id, x.value, x.rejection.reason) for x in late] == [("c1", "REAL-BUT-LATE", "run_closed")]
    assert "REAL-BUT-LATE" not in json.dumps(closure.to_openai_responses(report.snapshot))


class OnLateError(RuntimeError):
    """What the tests' ``on_late`` raises."""


def test_an_on_late_that_raises_mid_run_goes_to_threading_excepthook_with_its_worker_and_changes_no_outcome(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """c1 times out and returns once its timeout is recorded; c2 (which starts when c1's timeout frees the one
    concurrency slot) returns only after c1's ``on_late`` raised and was reported, so the late result arrives while the batch is open."""
    hooked: list[threading.ExceptHookArgs] = []
    on_late_reported = threading.Event()

    def hook(args: threading.ExceptHookArgs) -> None:
        hooked.append(args)
        on_late_reported.set()

    monkeypatch.setattr(threading, "excepthook", hook)
    closure = ToolCallClosure()
    seen: list[tuple[LateResult, str]] = []
    raised: list[OnLateError] = []

    def slow() -> str:
        for _ in range(int(NEVER / 0.005)):  # returns only once the supervisor has timed the call out
            snapshot = closure.snapshot()
            if snapshot is not None and snapshot.calls[0].state != "pending":
                break
            threading.Event().wait(0.005)
        return "REAL-BUT-LATE"

    def quick() -> str:
        on_late_reported.wait(NEVER)
        return "quick result"

    def broken_on_late(late: LateResult) -> None:
        seen.append((late, threading.current_thread().name))
        raised.append(OnLateError("on_late broke"))
        raise raised[-1]

    report = run_tool_calls_in_threads(
        closure,
        [call("c1", "slow"), call("c2", "quick")],
        {"slow": slow, "quick": quick},
        call_timeout=0.2,
        max_concurrency=1,
        on_late=broken_on_late,
    )
    assert report.ending == "completed"
    assert report.started == ("c1", "c2")
    assert report.snapshot is not None
    assert error_of(report.snapshot, "c1") == {
        "code": "tool_timeout",
        "message": "Tool 'slow' timed out after 0.2 seconds.",
    }
    assert outcome(report.snapshot, "c2") == ("success", None, None)
    assert [d.reason for d in report.snapshot.diagnostics] == ["duplicate_settlement"]
    [(late, worker)] = seen
    assert report.late == (late,)
    assert (late.call_id, late.value, late.rejection.reason) == ("c1", "REAL-BUT-LATE", "duplicate_settlement")
    assert "REAL-BUT-LATE" not in json.dumps(closure.to_openai_chat_completions(report.snapshot))
    [args] = hooked
    assert args.exc_type is OnLateError
    assert args.exc_value is raised[0]
    assert args.exc_traceback is raised[0].__traceback__
    assert args.thread is not None
    assert args.thread.name == worker
    assert worker.startswith("tool-call")  # the worker thread that delivered it, not the caller's


def test_an_on_late_that_raises_after_the_run_returned_goes_to_threading_excepthook_for_each_late_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hooked: list[threading.ExceptHookArgs] = []
    both = threading.Semaphore(0)

    def hook(args: threading.ExceptHookArgs) -> None:
        hooked.append(args)
        both.release()

    monkeypatch.setattr(threading, "excepthook", hook)
    release = threading.Event()
    seen: list[LateResult] = []

    def blocked(tag: str) -> str:
        release.wait(NEVER)
        return f"late {tag}"

    def broken_on_late(late: LateResult) -> None:
        seen.append(late)
        raise OnLateError(f"on_late broke on {late.call_id}")

    closure = ToolCallClosure()
    report = run_tool_calls_in_threads(
        closure,
        [call("c1", "blocked", tag="a"), call("c2", "blocked", tag="b")],
        {"blocked": blocked},
        call_timeout=0.05,
        on_late=broken_on_late,
    )
    assert report.ending == "completed"
    assert report.still_running == ("c1", "c2")
    assert report.late == ()
    assert hooked == []
    release.set()
    assert both.acquire(timeout=NEVER)
    assert both.acquire(timeout=NEVER)
    assert report.snapshot is not None
    assert [outcome(report.snapshot, i)[:2] for i in ("c1", "c2")] == [("error", "tool_timeout")] * 2
    assert sorted((x.call_id, x.value, x.rejection.reason) for x in seen) == [
        ("c1", "late a", "run_closed"),
        ("c2", "late b", "run_closed"),
    ]
    assert sorted(str(args.exc_value) for args in hooked) == ["on_late broke on c1", "on_late broke on c2"]
    assert all(args.exc_type is OnLateError for args in hooked)
    assert all(args.thread is not None and args.thread.name.startswith("tool-call") for args in hooked)
    after = closure.snapshot()
    assert after is not None
    assert after.calls == report.snapshot.calls  # the outcomes stay; the closure kept the two fences as diagnostics
    assert sorted((d.call_id, d.reason) for d in after.diagnostics) == [("c1", "run_closed"), ("c2", "run_closed")]


def test_the_deadline_closes_running_threads_as_unknown_and_queued_calls_as_never_started() -> None:
    release = threading.Event()
    entered: list[str] = []

    def blocked(tag: str) -> str:
        entered.append(tag)
        release.wait(NEVER)
        return tag

    calls = [call("c1", "blocked", tag="a"), call("c2", "blocked", tag="b"), call("c3", "blocked", tag="c")]
    try:
        report = run_tool_calls_in_threads(
            ToolCallClosure(), calls, {"blocked": blocked}, deadline=0.05, max_concurrency=1
        )
    finally:
        release.set()
    assert entered == ["a"]
    assert report.ending == "deadline_exceeded"
    assert report.started == ("c1",)
    assert report.snapshot is not None
    assert outcome(report.snapshot, "c1") == ("error", "deadline_exceeded", "unknown")
    message = "The tool batch did not finish within its deadline of 0.05 seconds."
    assert error_of(report.snapshot, "c2") == {
        "code": "deadline_exceeded",
        "message": message + " The call never started.",
    }
    assert outcome(report.snapshot, "c3")[:2] == ("error", "deadline_exceeded")


def test_an_abort_from_another_thread_closes_the_batch_run_aborted() -> None:
    abort = AbortSignal()
    running = threading.Event()
    release = threading.Event()

    def blocked() -> str:
        running.set()
        release.wait(NEVER)
        return "never exported"

    def trigger() -> None:
        running.wait(NEVER)
        abort.abort("The user pressed stop.")

    threading.Thread(target=trigger).start()
    try:
        report = run_tool_calls_in_threads(
            ToolCallClosure(), [call("c1", "blocked")], {"blocked": blocked}, abort=abort
        )
    finally:
        release.set()
    assert report.ending == "aborted"
    assert report.snapshot is not None
    assert outcome(report.snapshot, "c1") == ("cancelled", "run_aborted", "unknown")
    assert error_of(report.snapshot, "c1")["message"] == "The user pressed stop."


def test_a_caller_executor_is_used_and_left_running_and_max_concurrency_must_then_be_none() -> None:
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="callers-pool") as pool:
        names: list[str] = []

        def which() -> str:
            names.append(threading.current_thread().name)
            return "ok"

        report = run_tool_calls_in_threads(ToolCallClosure(), [call("c1", "which")], {"which": which}, executor=pool)
        assert report.ending == "completed"
        assert names[0].startswith("callers-pool")
        assert pool.submit(lambda: "still running").result(NEVER) == "still running"
        closure = ToolCallClosure()
        with pytest.raises(UsageError, match="max_concurrency must be None when an executor is given"):
            run_tool_calls_in_threads(
                closure, [call("c1", "which")], {"which": which}, executor=pool, max_concurrency=1
            )
        assert closure.snapshot() is None


@pytest.mark.parametrize("seed", range(6))
def test_hundreds_of_threaded_calls_aborted_at_a_random_point_each_get_exactly_one_outcome(seed: int) -> None:
    """200 calls on 8 threads, random durations, an abort from a timer thread at a random moment."""
    rng = random.Random(seed)
    closure = ToolCallClosure()
    lock = threading.Lock()
    fate: dict[str, str] = {}
    late: list[LateResult] = []
    durations = {f"call_{i:03d}": rng.uniform(0, 0.01) for i in range(200)}
    stop = threading.Event()

    def work(tool_call: ToolCall) -> str:
        with lock:
            fate[tool_call.id] = "entered"
        stop.wait(durations[tool_call.id])
        with lock:
            fate[tool_call.id] = "returned"
        return f"value-{tool_call.id}"

    def record_late(result: LateResult) -> None:
        with lock:
            late.append(result)

    abort = AbortSignal()
    timer = threading.Timer(rng.uniform(0.001, 0.15), abort.abort)
    timer.start()
    calls = [call(call_id, "work") for call_id in durations]
    with ThreadPoolExecutor(max_workers=8) as pool:
        report = run_tool_calls_in_threads(closure, calls, work, abort=abort, executor=pool, on_late=record_late)
    timer.cancel()  # the pool has drained: every tool has returned, every late result was offered
    snapshot = report.snapshot
    assert snapshot is not None
    assert snapshot.closed
    assert len(snapshot.calls) == 200
    ids = [c.id for c in snapshot.calls]
    for export, key in (
        (closure.to_openai_chat_completions, "tool_call_id"),
        (closure.to_openai_responses, "call_id"),
        (closure.to_anthropic_tool_results, "tool_use_id"),
    ):
        payload = export(snapshot)
        assert [item[key] for item in payload] == ids
    late_ids = {x.call_id for x in late}
    for entry in snapshot.calls:
        settlement = entry.settlement
        assert settlement is not None
        happened = fate.get(entry.id)
        if settlement.status == "success":
            assert happened == "returned"
            assert settlement.content == f"value-{entry.id}"
            assert entry.id not in late_ids
        elif happened is None:  # never entered: the batch closed before its turn
            assert entry.id not in report.started
            assert settlement.side_effect_state == "not_started" or (settlement.message or "").endswith(
                "The call never started."
            )
        else:  # it was running when the abort closed the batch; what it returned afterwards is late
            assert settlement.side_effect_state == "unknown"
            assert happened == "returned"  # the pool drained
            assert entry.id in late_ids
    assert set(report.started) == set(fate)
    assert all(x.rejection.reason == "run_closed" for x in late)


def test_an_interrupt_of_the_supervising_thread_closes_the_batch_run_cancelled_and_propagates() -> None:
    """Ctrl-C while the run waits (a real SIGINT-style interrupt of the main thread): close first, then re-raise."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("interrupt_main reaches the main thread only")
    # interrupt_main calls whatever SIGINT handler is installed (a leaked asyncio.Runner's, say, which only cancels
    # its task) and does nothing under SIG_IGN: this test is about Python's own handler, so it installs that one.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    closure = ToolCallClosure()
    release = threading.Event()

    def interrupts() -> str:
        _thread.interrupt_main()
        release.wait(NEVER)
        return "never exported"

    try:
        with pytest.raises(KeyboardInterrupt):
            run_tool_calls_in_threads(
                closure,
                [call("c1", "interrupts"), call("c2", "interrupts")],
                {"interrupts": interrupts},
                max_concurrency=1,
            )
    finally:
        release.set()
        signal.signal(signal.SIGINT, previous)
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.closed
    assert outcome(snapshot, "c1") == ("cancelled", "run_cancelled", "unknown")
    assert error_of(snapshot, "c2") == {
        "code": "run_cancelled",
        "message": "The run was cancelled before this tool call completed. The call never started.",
    }


def test_a_tool_that_is_not_callable_is_refused_before_anything_is_announced() -> None:
    closure = ToolCallClosure()
    with pytest.raises(UsageError, match=r"^tools\['broken'\] must be a function, got str$"):
        run_tool_calls_in_threads(closure, [call("c1", "fine")], {"fine": lambda: 1, "broken": "x"})
    assert closure.snapshot() is None


def test_an_async_tool_given_to_the_thread_runner_did_not_run_and_says_so() -> None:
    """It returned a coroutine, and none of it ran: an error naming the runner to use, the coroutine closed."""
    ran: list[int] = []

    async def asynchronous(x: int) -> int:
        ran.append(x)
        return x

    closure = ToolCallClosure()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a coroutine left unawaited would warn when collected
        report = run_tool_calls_in_threads(closure, [call("c1", "asynchronous", x=1)], {"asynchronous": asynchronous})
        gc.collect()
    assert ran == []
    assert outcome(report.snapshot, "c1") == ("error", "tool_error", None)
    assert error_of(report.snapshot, "c1")["message"] == (
        "tool 'asynchronous' returned coroutine, an awaitable, and did not run: "
        "run_tool_calls_in_threads calls plain functions; run async tools with run_tool_calls"
    )
