"""The asyncio runner: real tasks, real cancellation, every call exactly one outcome, nothing late exported.

No mocks: the tools are real coroutines that sleep, block on events, raise,
ignore their cancellation or supersede the batch, and the tests read the
closure's own snapshot and exports.  Nothing asserts on elapsed time: every
wait is bounded by an event the test controls or by the runner's own
deadline, and the assertions are about which outcome each call got.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tool_call_closure import LimitError, Snapshot, ToolCallClosure, UsageError, to_json
from tool_call_closure.providers.calls import ToolCall
from tool_call_closure.providers.result_text import result_text
from tool_call_closure.runners import AbortSignal, BatchRun, LateResult, run_tool_calls

NEVER = 60.0  # a bound that a correct run never reaches; it only keeps a broken one from hanging


def call(call_id: str, name: str, **arguments: Any) -> ToolCall:
    return ToolCall(call_id, name, arguments, json.dumps(arguments))


def error_of(snapshot: Snapshot, call_id: str) -> dict[str, Any]:
    """The ``{"code", "message", "side_effect_state"?}`` the model reads for a failed call (ADP-5)."""
    (entry,) = [c for c in snapshot.calls if c.id == call_id]
    assert entry.settlement is not None
    error: dict[str, Any] = json.loads(result_text(entry.settlement))["error"]
    return error


async def run(closure: ToolCallClosure, *args: Any, **kwargs: Any) -> BatchRun:
    return await asyncio.wait_for(run_tool_calls(closure, *args, **kwargs), NEVER)


def outcome(snapshot: Snapshot, call_id: str) -> tuple[str, str | None, str | None]:
    (entry,) = [c for c in snapshot.calls if c.id == call_id]
    assert entry.settlement is not None
    return entry.state, entry.settlement.code, entry.settlement.side_effect_state


def test_a_batch_whose_tools_all_return_is_sealed_with_their_results() -> None:
    async def add(a: int, b: int) -> int:
        await asyncio.sleep(0)
        return a + b

    async def main() -> BatchRun:
        return await run(ToolCallClosure(), [call("c1", "add", a=1, b=2), call("c2", "add", a=3, b=4)], {"add": add})

    report = asyncio.run(main())
    assert report.ending == "completed"
    assert report.snapshot is not None
    assert report.snapshot.close_reason is not None
    assert report.snapshot.close_reason.status == "complete"
    assert [c.settlement.content for c in report.snapshot.calls if c.settlement] == ["3", "7"]
    assert report.started == ("c1", "c2")
    assert report.late == ()
    assert report.still_running == ()


def test_one_dispatcher_function_receives_each_tool_call() -> None:
    seen: list[ToolCall] = []

    async def dispatch(tool_call: ToolCall) -> str:
        seen.append(tool_call)
        return tool_call.name.upper()

    calls = [call("c1", "alpha"), call("c2", "beta")]
    report = asyncio.run(run(ToolCallClosure(), calls, dispatch))
    assert seen == calls
    assert report.snapshot is not None
    assert [c.settlement.content for c in report.snapshot.calls if c.settlement] == ["ALPHA", "BETA"]


def test_a_sibling_that_raises_becomes_an_error_outcome_with_its_text_and_the_others_keep_their_results() -> None:
    async def ok(n: int) -> dict[str, int]:
        await asyncio.sleep(0.01)
        return {"n": n}

    async def broken(n: int) -> None:
        raise RuntimeError(f"sensor {n} offline")

    calls = [call("c1", "ok", n=1), call("c2", "broken", n=2), call("c3", "ok", n=3)]
    report = asyncio.run(run(ToolCallClosure(), calls, {"ok": ok, "broken": broken}))
    assert report.ending == "completed"
    assert report.snapshot is not None
    assert outcome(report.snapshot, "c1") == ("success", None, None)
    assert outcome(report.snapshot, "c3") == ("success", None, None)
    assert error_of(report.snapshot, "c2") == {"code": "tool_error", "message": "sensor 2 offline"}
    assert "Traceback" not in json.dumps([c.settlement.__json__() for c in report.snapshot.calls if c.settlement])


def test_a_per_call_timeout_is_the_outcome_the_tool_is_cancelled_and_the_runner_goes_on() -> None:
    async def main() -> tuple[BatchRun, bool]:
        was_cancelled = False

        async def hang() -> str:
            nonlocal was_cancelled
            try:
                await asyncio.sleep(NEVER)
            except asyncio.CancelledError:
                was_cancelled = True
                raise
            return "unreachable"

        async def quick() -> str:
            return "done"

        report = await run(
            ToolCallClosure(),
            [call("c1", "hang"), call("c2", "quick")],
            {"hang": hang, "quick": quick},
            call_timeout=0.05,
        )
        return report, was_cancelled

    report, was_cancelled = asyncio.run(main())
    assert was_cancelled
    assert report.ending == "completed"
    assert report.snapshot is not None
    assert error_of(report.snapshot, "c1") == {
        "code": "tool_timeout",
        "message": "Tool 'hang' timed out after 0.05 seconds.",
    }
    assert outcome(report.snapshot, "c2") == ("success", None, None)


def stubborn_and_sibling() -> dict[str, Callable[[], Awaitable[str]]]:
    """A tool that times out, ignores its cancellation and returns anyway (a real result after its call's outcome),
    and a sibling that returns only after it did, so the batch is still open when the late result arrives.

    With max_concurrency=1 the sibling starts when the stubborn call times out (a timed-out call frees its slot
    at once), so its own call_timeout runs from then, while the stubborn tool needs one loop iteration more.
    """
    returned = asyncio.Event()

    async def stubborn() -> str:
        try:
            await asyncio.sleep(NEVER)
        except asyncio.CancelledError:
            await asyncio.sleep(0)  # ignores the cancellation and finishes anyway, a loop iteration later
        returned.set()
        return "LATE-RESULT"

    async def sibling() -> str:
        await returned.wait()
        await asyncio.sleep(0)  # the stubborn tool's late result is delivered first
        return "sibling result"

    return {"stubborn": stubborn, "sibling": sibling}


def test_a_real_result_after_its_timeout_is_fenced_reported_late_and_never_exported() -> None:
    """Scenario 2 (vercel/ai PR#8605, TanStack/ai#1214): the synthetic error stays, the late result is ignored."""

    async def main() -> tuple[ToolCallClosure, BatchRun]:
        closure = ToolCallClosure()
        calls = [call("c1", "stubborn"), call("c2", "sibling")]
        return closure, await run(closure, calls, stubborn_and_sibling(), call_timeout=0.02, max_concurrency=1)

    closure, report = asyncio.run(main())
    assert report.ending == "completed"
    assert report.snapshot is not None
    assert error_of(report.snapshot, "c1")["code"] == "tool_timeout"
    assert outcome(report.snapshot, "c2") == ("success", None, None)
    [late] = report.late
    assert (late.call_id, late.kind, late.value, late.rejection.reason) == (
        "c1",
        "result",
        "LATE-RESULT",
        "duplicate_settlement",
    )
    for export in (closure.to_openai_chat_completions, closure.to_openai_responses, closure.to_anthropic_tool_results):
        payload = json.dumps(export(report.snapshot))
        assert "LATE-RESULT" not in payload
        assert payload.count('"c1"') == 1
    assert [d.reason for d in report.snapshot.diagnostics] == ["duplicate_settlement"]


def test_a_result_over_max_result_bytes_becomes_an_explicit_error_instead_of_a_pending_call() -> None:
    async def big() -> str:
        return "x" * 200

    closure = ToolCallClosure(max_result_bytes=100)
    probe = ToolCallClosure(max_result_bytes=100)
    handle = probe.begin([{"id": "p", "name": "big"}]).handle
    with pytest.raises(LimitError):  # what the bare primitive does: the call stays pending
        probe.succeed(handle, "p", "x" * 200)
    report = asyncio.run(run(closure, [call("c1", "big")], {"big": big}))
    assert report.ending == "completed"
    assert report.snapshot is not None
    error = error_of(report.snapshot, "c1")
    assert error["code"] == "result_too_large"
    assert error["message"] == "result content exceeds maxResultBytes (100)"  # the limit's own message


def test_a_result_that_is_not_json_compatible_becomes_an_invalid_result_error() -> None:
    async def weird() -> object:
        return {1, 2}

    report = asyncio.run(run(ToolCallClosure(), [call("c1", "weird")], {"weird": weird}))
    assert report.snapshot is not None
    assert error_of(report.snapshot, "c1")["code"] == "invalid_result"


def test_a_call_with_a_problem_or_an_unknown_tool_is_never_run_and_gets_an_explicit_error() -> None:
    invoked: list[str] = []

    async def tool(**arguments: Any) -> str:
        invoked.append(json.dumps(arguments))
        return "ran"

    calls = [
        ToolCall(
            "c1", "tool", None, '{"city": "Par', problem="The arguments are not valid JSON.", provider="openai_chat"
        ),
        call("c2", "nothing_by_that_name"),
        ToolCall("c3", "tool", [1, 2], "[1, 2]"),
        call("c4", "tool", city="Paris"),
    ]
    report = asyncio.run(run(ToolCallClosure(), calls, {"tool": tool}))
    assert invoked == ['{"city": "Paris"}']
    assert report.snapshot is not None
    assert report.started == ("c4",)
    assert error_of(report.snapshot, "c1") == {
        "code": "invalid_tool_call",
        "message": "The arguments are not valid JSON.",
    }
    assert error_of(report.snapshot, "c2") == {
        "code": "unknown_tool",
        "message": "No tool named 'nothing_by_that_name' is available.",
    }
    assert error_of(report.snapshot, "c3")["code"] == "invalid_tool_call"


def test_the_deadline_closes_started_calls_as_unknown_and_calls_that_never_started_as_not_started() -> None:
    """max_concurrency=1: the first call starts and hangs, the other two never start."""
    entered: list[str] = []

    async def hang(tag: str) -> str:
        entered.append(tag)
        await asyncio.sleep(NEVER)
        return tag

    calls = [call("c1", "hang", tag="a"), call("c2", "hang", tag="b"), call("c3", "hang", tag="c")]
    report = asyncio.run(run(ToolCallClosure(), calls, {"hang": hang}, deadline=0.05, max_concurrency=1))
    assert entered == ["a"]
    assert report.ending == "deadline_exceeded"
    assert report.started == ("c1",)
    assert report.snapshot is not None
    assert report.snapshot.close_reason is not None
    assert report.snapshot.close_reason.status == "error"
    assert report.snapshot.close_reason.code == "deadline_exceeded"
    assert outcome(report.snapshot, "c1") == ("error", "deadline_exceeded", "unknown")
    message = "The tool batch did not finish within its deadline of 0.05 seconds."
    assert error_of(report.snapshot, "c1") == {
        "code": "deadline_exceeded",
        "message": message,
        "side_effect_state": "unknown",
    }
    for never in ("c2", "c3"):
        assert error_of(report.snapshot, never) == {
            "code": "deadline_exceeded",
            "message": message + " The call never started.",
        }


def test_an_abort_before_any_call_started_closes_them_all_as_not_started() -> None:
    abort = AbortSignal()
    abort.abort("The user pressed stop.")
    entered: list[str] = []

    async def tool() -> str:
        entered.append("x")
        return "x"

    report = asyncio.run(run(ToolCallClosure(), [call("c1", "tool"), call("c2", "tool")], {"tool": tool}, abort=abort))
    assert entered == []
    assert report.ending == "aborted"
    assert report.started == ()
    assert report.snapshot is not None
    for call_id in ("c1", "c2"):
        assert outcome(report.snapshot, call_id) == ("cancelled", "run_aborted", "not_started")
        assert error_of(report.snapshot, call_id)["message"] == "The user pressed stop. The call never started."


def test_an_abort_from_another_thread_midway_gives_one_real_result_and_two_explicit_cancellations() -> None:
    """Scenario 1 (claude-code#746, pydantic-ai#7977): one call done, one running, one not started."""
    abort = AbortSignal()

    async def main() -> BatchRun:
        running = asyncio.Event()

        async def done() -> str:
            return "real result"

        async def slow() -> str:
            running.set()
            await asyncio.sleep(NEVER)
            return "never"

        async def trigger() -> None:
            await running.wait()
            thread = threading.Thread(target=abort.abort)
            thread.start()
            thread.join()

        calls = [call("c1", "done"), call("c2", "slow"), call("c3", "done")]
        runner = asyncio.create_task(
            run(ToolCallClosure(), calls, {"done": done, "slow": slow}, max_concurrency=2, abort=abort)
        )
        await trigger()
        return await runner

    report = asyncio.run(main())
    assert report.ending == "aborted"
    assert report.snapshot is not None
    states = [outcome(report.snapshot, i) for i in ("c1", "c2", "c3")]
    assert states[0] == ("success", None, None)
    assert states[1] == ("cancelled", "run_aborted", "unknown")
    # c3 ran after c1 freed the slot if the loop got there before the abort; either way it has one outcome
    assert states[2] in (("success", None, None), ("cancelled", "run_aborted", None))


def test_cancelling_the_awaiting_task_closes_the_batch_and_propagates_cancelled_error() -> None:
    closure = ToolCallClosure()

    async def main() -> None:
        started = asyncio.Event()

        async def slow() -> str:
            started.set()
            await asyncio.sleep(NEVER)
            return "never"

        task = asyncio.create_task(
            run_tool_calls(closure, [call("c1", "slow"), call("c2", "slow")], {"slow": slow}, max_concurrency=1)
        )
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert task.cancelled()

    asyncio.run(main())
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.closed
    assert outcome(snapshot, "c1") == ("cancelled", "run_cancelled", "unknown")
    assert outcome(snapshot, "c2")[:2] == ("cancelled", "run_cancelled")


def test_inside_asyncio_timeout_the_batch_is_closed_and_the_caller_gets_timeout_error() -> None:
    closure = ToolCallClosure()

    async def slow() -> str:
        await asyncio.sleep(NEVER)
        return "never"

    async def main() -> None:
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.05):
                await run_tool_calls(closure, [call("c1", "slow")], {"slow": slow})
        assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]  # the timeout was uncancelled

    asyncio.run(main())
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.closed
    assert outcome(snapshot, "c1") == ("cancelled", "run_cancelled", "unknown")


def test_inside_a_task_group_a_failing_sibling_cancels_the_run_which_closes_and_the_group_reports_the_sibling() -> None:
    closure = ToolCallClosure()

    async def slow() -> str:
        await asyncio.sleep(NEVER)
        return "never"

    async def failing_sibling() -> None:
        await asyncio.sleep(0.02)
        raise KeyError("sibling")

    async def main() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(run_tool_calls(closure, [call("c1", "slow")], {"slow": slow}))
            group.create_task(failing_sibling())

    with pytest.raises(ExceptionGroup) as caught:
        asyncio.run(main())
    assert [type(e) for e in caught.value.exceptions] == [KeyError]
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.closed
    assert outcome(snapshot, "c1") == ("cancelled", "run_cancelled", "unknown")


def test_a_tool_using_its_own_task_group_and_timeout_is_cancelled_cleanly_by_the_deadline() -> None:
    cleaned: list[str] = []

    async def fan_out() -> str:
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(3):
                    group.create_task(asyncio.sleep(NEVER))
        finally:
            cleaned.append("task group unwound")
        return "never"

    async def own_timeout() -> str:
        async with asyncio.timeout(0.01):
            await asyncio.sleep(NEVER)
        return "never"

    report = asyncio.run(
        run(
            ToolCallClosure(),
            [call("c1", "fan_out"), call("c2", "own_timeout")],
            {"fan_out": fan_out, "own_timeout": own_timeout},
            deadline=0.1,
        )
    )
    assert cleaned == ["task group unwound"]
    assert report.snapshot is not None
    assert report.still_running == ()
    assert outcome(report.snapshot, "c1") == ("error", "deadline_exceeded", "unknown")
    assert outcome(report.snapshot, "c2")[:2] == ("error", "tool_error")  # its own TimeoutError is a tool error


def test_a_tool_that_raises_cancelled_error_without_being_cancelled_gets_a_tool_error() -> None:
    async def confused() -> str:
        raise asyncio.CancelledError

    async def fine() -> str:
        return "ok"

    report = asyncio.run(
        run(ToolCallClosure(), [call("c1", "confused"), call("c2", "fine")], {"confused": confused, "fine": fine})
    )
    assert report.ending == "completed"
    assert report.snapshot is not None
    assert outcome(report.snapshot, "c1")[:2] == ("error", "tool_error")
    assert outcome(report.snapshot, "c2") == ("success", None, None)


def test_supersession_by_a_new_user_turn_stops_the_run_and_fences_what_arrives_after() -> None:
    """Scenario 4 (azure-sdk-for-python#45875): a new begin while calls are pending supersedes them."""
    closure = ToolCallClosure()

    async def main() -> tuple[BatchRun, Snapshot | None]:
        release = asyncio.Event()
        superseded: list[Snapshot | None] = []

        async def waits() -> str:
            await release.wait()
            return "stale result"

        async def user_turn() -> None:
            await asyncio.sleep(0.01)
            superseded.append(closure.begin([{"id": "next_1", "name": "next"}]).superseded)
            release.set()

        turn = asyncio.create_task(user_turn())
        report = await run(closure, [call("c1", "waits"), call("c2", "waits")], {"waits": waits})
        await turn
        return report, superseded[0]

    report, old = asyncio.run(main())
    assert report.ending == "superseded"
    assert old is not None
    assert report.snapshot is old  # the superseded generation's final snapshot, as the later begin returned it
    assert [outcome(old, i)[1] for i in ("c1", "c2")] == ["superseded", "superseded"]
    assert {late.rejection.reason for late in report.late} == {"stale_generation"}
    assert closure.snapshot() is not None
    assert closure.snapshot().generation == 2


def test_a_task_ignoring_cancellation_past_the_grace_is_reported_still_running_and_its_result_goes_to_on_late() -> None:
    late: list[LateResult] = []

    async def main() -> BatchRun:
        release = asyncio.Event()

        async def deaf() -> str:
            while True:
                try:
                    await release.wait()
                    return "after everything"
                except asyncio.CancelledError:
                    continue

        report = await run(
            ToolCallClosure(),
            [call("c1", "deaf")],
            {"deaf": deaf},
            deadline=0.02,
            cancel_grace=0.02,
            on_late=late.append,
        )
        assert report.still_running == ("c1",)
        assert report.late == ()
        release.set()
        for _ in range(100):
            if late:
                break
            await asyncio.sleep(0.01)
        return report

    report = asyncio.run(main())
    assert report.snapshot is not None
    assert outcome(report.snapshot, "c1") == ("error", "deadline_exceeded", "unknown")
    assert [(x.call_id, x.value, x.rejection.reason) for x in late] == [("c1", "after everything", "run_closed")]


class OnLateError(RuntimeError):
    """What the tests' ``on_late`` raises."""


def _stubborn_and_sibling(
    on_late: Callable[[LateResult], None], closure: ToolCallClosure | None = None
) -> tuple[ToolCallClosure, BatchRun, list[Any]]:
    """c1 times out, then returns anyway while c2 has yet to run: its late result reaches ``on_late`` mid-run.

    Returns the closure, the report and every context the loop's exception handler received.
    """

    target = ToolCallClosure() if closure is None else closure

    async def main() -> tuple[ToolCallClosure, BatchRun, list[Any]]:
        contexts: list[Any] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, context: contexts.append(context))
        calls = [call("c1", "stubborn"), call("c2", "sibling")]
        report = await run(target, calls, stubborn_and_sibling(), call_timeout=0.02, max_concurrency=1, on_late=on_late)
        return target, report, contexts

    return asyncio.run(main())


def test_an_on_late_that_raises_mid_run_goes_to_the_loop_exception_handler_and_changes_no_outcome() -> None:
    """The exception is reported once, through ``loop.call_exception_handler``; the run and its state are as without it."""
    seen: list[LateResult] = []
    raised: list[OnLateError] = []

    def broken_on_late(late: LateResult) -> None:
        seen.append(late)
        raised.append(OnLateError("on_late broke"))
        raise raised[-1]

    closure, report, contexts = _stubborn_and_sibling(broken_on_late)
    _, reference, reference_contexts = _stubborn_and_sibling(lambda late: None)

    assert reference_contexts == []
    assert report.ending == reference.ending == "completed"
    assert report.snapshot is not None
    assert reference.snapshot is not None
    assert to_json(report.snapshot) == to_json(reference.snapshot)  # the same closed state, byte for byte
    assert error_of(report.snapshot, "c1")["code"] == "tool_timeout"
    assert outcome(report.snapshot, "c2") == ("success", None, None)
    assert [d.reason for d in report.snapshot.diagnostics] == ["duplicate_settlement"]
    assert report.late == tuple(seen)
    assert [(x.call_id, x.kind, x.value, x.rejection.reason) for x in seen] == [
        ("c1", "result", "LATE-RESULT", "duplicate_settlement")
    ]
    assert report.still_running == ()
    for export in (closure.to_openai_chat_completions, closure.to_openai_responses, closure.to_anthropic_tool_results):
        payload = json.dumps(export(report.snapshot))
        assert "LATE-RESULT" not in payload
        assert payload.count('"c1"') == 1
    [context] = contexts
    assert set(context) == {"message", "exception", "task"}
    assert context["message"] == "on_late raised on the late result of tool call 'c1' ('stubborn')"
    assert context["exception"] is raised[0]
    assert isinstance(context["task"], asyncio.Task)
    assert context["task"].done()
    assert not context["task"].cancelled()
    assert context["task"].exception() is None  # the tool task itself finished normally


def test_a_system_exit_from_on_late_propagates_out_of_the_loop_as_from_an_asyncio_callback() -> None:
    """Raised, not reported, as asyncio raises it from a callback; ``asyncio.run`` then cancels the run, which closes."""
    closure = ToolCallClosure()

    def exits(late: LateResult) -> None:
        raise SystemExit(3)

    with pytest.raises(SystemExit) as caught:
        _stubborn_and_sibling(exits, closure)
    assert caught.value.code == 3
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.closed
    assert error_of(snapshot, "c1")["code"] == "tool_timeout"
    # the sibling had started (the timed-out call freed its slot) and waited for the late result: unknown
    assert outcome(snapshot, "c2") == ("cancelled", "run_cancelled", "unknown")
    assert [d.reason for d in snapshot.diagnostics] == ["duplicate_settlement"]


def test_an_on_late_raising_after_the_run_returned_goes_to_the_loop_exception_handler_per_late_result() -> None:
    """Two tasks that outlive the run: each late result reaches ``on_late``, each exception the handler, once."""
    seen: list[LateResult] = []

    def broken_on_late(late: LateResult) -> None:
        seen.append(late)
        raise OnLateError(f"on_late broke on {late.call_id}")

    async def main() -> tuple[BatchRun, list[Any]]:
        contexts: list[Any] = []
        asyncio.get_running_loop().set_exception_handler(lambda _, context: contexts.append(context))
        release = asyncio.Event()

        async def deaf(tag: str) -> str:
            while True:
                try:
                    await release.wait()
                    return f"after everything {tag}"
                except asyncio.CancelledError:
                    continue

        report = await run(
            ToolCallClosure(),
            [call("c1", "deaf", tag="a"), call("c2", "deaf", tag="b")],
            {"deaf": deaf},
            deadline=0.02,
            cancel_grace=0.02,
            on_late=broken_on_late,
        )
        assert report.still_running == ("c1", "c2")
        assert report.late == ()
        assert contexts == []
        release.set()
        for _ in range(100):
            if len(contexts) == 2 and all(c["task"].done() for c in contexts):
                break
            await asyncio.sleep(0.01)
        return report, contexts

    report, contexts = asyncio.run(main())
    assert report.ending == "deadline_exceeded"
    assert report.snapshot is not None
    for call_id in ("c1", "c2"):
        assert outcome(report.snapshot, call_id) == ("error", "deadline_exceeded", "unknown")
    assert sorted((x.call_id, x.value, x.rejection.reason) for x in seen) == [
        ("c1", "after everything a", "run_closed"),
        ("c2", "after everything b", "run_closed"),
    ]
    assert sorted((c["message"], str(c["exception"])) for c in contexts) == [
        ("on_late raised on the late result of tool call 'c1' ('deaf')", "on_late broke on c1"),
        ("on_late raised on the late result of tool call 'c2' ('deaf')", "on_late broke on c2"),
    ]
    assert all(type(c["exception"]) is OnLateError for c in contexts)
    assert all(c["task"].done() and not c["task"].cancelled() and c["task"].exception() is None for c in contexts)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("call_timeout", 0, "call_timeout must be a finite number of seconds > 0, got 0"),
        ("deadline", float("inf"), "deadline must be a finite number of seconds > 0, got inf"),
        ("deadline", "1", "deadline must be a number of seconds or None, got str"),
        ("max_concurrency", 0, "max_concurrency must be an int >= 1 or None, got 0"),
        ("max_concurrency", True, "max_concurrency must be an int >= 1 or None, got True"),
        ("cancel_grace", -1, "cancel_grace must be a finite number of seconds >= 0, got -1"),
    ],
)
def test_a_bad_option_raises_naming_it_and_announces_nothing(option: str, value: object, message: str) -> None:
    closure = ToolCallClosure()

    async def tool() -> str:
        return "x"

    with pytest.raises(UsageError) as caught:
        asyncio.run(run_tool_calls(closure, [call("c1", "tool")], {"tool": tool}, **{option: value}))
    assert str(caught.value) == message
    assert closure.snapshot() is None


@pytest.mark.parametrize(
    ("calls", "tools", "message"),
    [
        ("c1", {}, "calls must be a sequence of ToolCall, got str"),
        (iter([]), {}, "calls must be a sequence of ToolCall, got list_iterator"),
        ([], 42, "tools must be a mapping of tool name to function, or one function, got int"),
    ],
)
def test_bad_calls_or_tools_raise_naming_them_and_announce_nothing(calls: Any, tools: Any, message: str) -> None:
    closure = ToolCallClosure()
    with pytest.raises(UsageError) as caught:
        asyncio.run(run_tool_calls(closure, calls, tools))
    assert str(caught.value) == message
    assert closure.snapshot() is None


def test_an_ingested_turn_passed_whole_is_refused_with_a_hint() -> None:
    from tool_call_closure.providers import Ingested

    closure = ToolCallClosure()
    with pytest.raises(UsageError, match=r"calls must be a sequence of ToolCall \(for an Ingested, pass its \.calls\)"):
        asyncio.run(run_tool_calls(closure, Ingested(()), {}))  # type: ignore[arg-type]
    assert closure.snapshot() is None


def test_calls_that_are_not_tool_calls_are_refused_before_anything_is_announced() -> None:
    closure = ToolCallClosure()

    async def tool() -> str:
        return "x"

    with pytest.raises(UsageError, match=r"calls\[0\] must be a ToolCall, got dict"):
        asyncio.run(run_tool_calls(closure, [{"id": "c1", "name": "tool"}], {"tool": tool}))  # type: ignore[list-item]
    assert closure.snapshot() is None


# -- hundreds of calls, cancellation at random points ------------------------------------------------------------


async def _random_batch(
    seed: int, stop: str
) -> tuple[ToolCallClosure, BatchRun | None, dict[str, str], list[LateResult]]:
    """300 calls with random durations; some ignore their cancellation; the run is stopped at a random moment.

    Each tool records what happened to it ("returned", "swallowed" then
    returned late, "cancelled"); a tool never entered has no record.
    """
    rng = random.Random(seed)
    closure = ToolCallClosure()
    fate: dict[str, str] = {}
    late: list[LateResult] = []

    def tool_for(call_id: str, seconds: float, deaf: bool) -> Callable[[ToolCall], Awaitable[str]]:
        async def tool(_: ToolCall) -> str:
            fate[call_id] = "entered"
            try:
                await asyncio.sleep(seconds)
            except asyncio.CancelledError:
                if not deaf:
                    fate[call_id] = "cancelled"
                    raise
                fate[call_id] = "swallowed"
                return f"late-{call_id}"
            fate[call_id] = "returned"
            return f"value-{call_id}"

        return tool

    calls = [call(f"call_{i:03d}", "work") for i in range(300)]
    tools = {c.id: tool_for(c.id, rng.uniform(0, 0.2), rng.random() < 0.15) for c in calls}

    async def dispatch(tool_call: ToolCall) -> str:
        return await tools[tool_call.id](tool_call)

    concurrency = rng.choice([None, 7, 50])
    at = rng.uniform(0.001, 0.25)
    if stop == "deadline":
        report = await run(closure, calls, dispatch, deadline=at, max_concurrency=concurrency, on_late=late.append)
        return closure, report, fate, late
    if stop == "abort":
        abort = AbortSignal()
        asyncio.get_running_loop().call_later(at, abort.abort)
        report = await run(closure, calls, dispatch, max_concurrency=concurrency, abort=abort, on_late=late.append)
        return closure, report, fate, late
    task = asyncio.create_task(
        run_tool_calls(closure, calls, dispatch, max_concurrency=concurrency, on_late=late.append)
    )
    asyncio.get_running_loop().call_later(at, task.cancel)
    try:
        return closure, await task, fate, late
    except asyncio.CancelledError:
        return closure, None, fate, late


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("stop", ["cancel", "abort", "deadline"])
def test_hundreds_of_calls_stopped_at_a_random_point_each_get_exactly_one_outcome_and_nothing_late_is_exported(
    seed: int, stop: str
) -> None:
    closure, report, fate, late = asyncio.run(_random_batch(seed, stop))
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.closed
    assert len(snapshot.calls) == 300
    ids = [c.id for c in snapshot.calls]
    for export, key in (
        (closure.to_openai_chat_completions, "tool_call_id"),
        (closure.to_openai_responses, "call_id"),
        (closure.to_anthropic_tool_results, "tool_use_id"),
    ):
        payload = export(snapshot)
        assert [item[key] for item in payload] == ids  # every call exactly once, in announcement order
        assert "late-" not in json.dumps(payload)
    for entry in snapshot.calls:
        settlement = entry.settlement
        assert settlement is not None
        assert entry.state != "pending"
        happened = fate.get(entry.id)
        if happened == "returned":
            assert settlement.content == f"value-{entry.id}"
        elif happened is None:  # never entered: never started, no side effects
            assert settlement.status != "success"
            assert settlement.side_effect_state == "not_started" or (settlement.message or "").endswith(
                "The call never started."
            )
        else:  # entered and interrupted: side effects unknown
            assert settlement.status != "success"
            assert settlement.side_effect_state == "unknown"
    swallowed = {call_id for call_id, what in fate.items() if what == "swallowed"}
    assert {x.call_id for x in late} == swallowed
    assert all(x.rejection.reason == "run_closed" and x.value == f"late-{x.call_id}" for x in late)
    if report is not None:
        assert set(report.started) == set(fate)
        assert report.still_running == ()


def test_a_tool_that_is_not_callable_is_refused_before_anything_is_announced() -> None:
    closure = ToolCallClosure()

    async def fine() -> int:
        return 1

    with pytest.raises(UsageError, match=r"^tools\['broken'\] must be a function, got int$"):
        asyncio.run(run(closure, [call("c1", "fine")], {"fine": fine, "broken": 5}))
    assert closure.snapshot() is None  # nothing begun: no batch left open with pending calls


def test_a_plain_function_tool_keeps_the_value_it_returned_and_is_warned_about() -> None:
    """It has already run (on the loop): its value is its outcome, never an error that would invite a second run."""
    ran: list[int] = []

    def plain(x: int) -> dict[str, int]:
        ran.append(x)
        return {"x": x}

    closure = ToolCallClosure()
    with pytest.warns(RuntimeWarning, match=r"^tool 'plain' returned dict, not an awaitable: it ran on the event loop"):
        report = asyncio.run(run(closure, [call("c1", "plain", x=7)], {"plain": plain}))
    assert ran == [7]
    assert report.ending == "completed"
    (entry,) = report.snapshot.calls
    assert entry.state == "success"
    assert entry.settlement is not None
    assert entry.settlement.content == '{"x":7}'
