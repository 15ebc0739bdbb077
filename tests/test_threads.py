"""Threads: every operation is atomic, exactly-once holds under contention, caller code never holds the lock."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from tool_call_closure import Accepted, Rejection, Snapshot, ToolCallClosure

THREADS = 8


@pytest.fixture(autouse=True)
def _frequent_thread_switches() -> Iterator[None]:
    """Switch threads every microsecond so operations really interleave."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(interval)


def _run_threads(target: Any, count: int = THREADS) -> None:
    barrier = threading.Barrier(count)
    errors: list[BaseException] = []

    def body(index: int) -> None:
        try:
            barrier.wait()
            target(index)
        except BaseException as exc:  # noqa: BLE001 - surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive(), "a thread is stuck (deadlock?)"
    assert errors == []


def test_exactly_one_settlement_per_call_wins_under_contention() -> None:
    closure = ToolCallClosure(max_calls=200, max_diagnostics=5000)
    ids = [f"c{i}" for i in range(200)]
    handle = closure.begin([{"id": i, "name": "t"} for i in ids]).handle
    results: list[tuple[int, str, Any]] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        for call_id in ids:
            result = closure.succeed(handle, call_id, {"by": index})
            with lock:
                results.append((index, call_id, result))

    _run_threads(worker)
    accepted = Counter(call_id for _, call_id, r in results if isinstance(r, Accepted))
    assert accepted == Counter(ids)  # each call exactly once
    snapshot = closure.snapshot()
    assert snapshot is not None
    winners = {call_id: index for index, call_id, r in results if isinstance(r, Accepted)}
    for call in snapshot.calls:
        assert call.state == "success"
        assert call.settlement is not None
        assert call.settlement.content == f'{{"by":{winners[call.id]}}}'
    rejected = [r for _, _, r in results if isinstance(r, Rejection)]
    assert len(rejected) == 200 * (THREADS - 1)
    assert {r.reason for r in rejected} == {"duplicate_settlement"}


def test_close_racing_settlements_leaves_every_call_terminal_once() -> None:
    closure = ToolCallClosure(max_calls=100, max_diagnostics=10_000)
    ids = [f"c{i}" for i in range(100)]
    handle = closure.begin([{"id": i, "name": "t"} for i in ids]).handle
    outcomes: list[Any] = []

    def worker(index: int) -> None:
        if index == 0:
            outcomes.append(closure.close(handle, {"status": "error", "code": "deadline"}))
            return
        for call_id in ids[index :: THREADS - 1]:
            outcomes.append(closure.fail(handle, call_id, RuntimeError("tool broke")))

    _run_threads(worker)
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert snapshot.closed
    assert all(call.state == "error" for call in snapshot.calls)
    reported = {r.call_id for r in outcomes if isinstance(r, Accepted)}
    for call in snapshot.calls:
        assert call.settlement is not None
        expected = "reported" if call.id in reported else "synthetic"
        assert call.settlement.provenance == expected
    late = [r for r in outcomes if isinstance(r, Rejection)]
    assert all(r.reason == "run_closed" for r in late)


def test_racing_begins_each_get_their_own_generation_or_fail_cleanly() -> None:
    """A begin whose validation overlaps another thread's begin raises generation_changed (BEG-5), exactly as
    if its caller code had begun that generation; it changes nothing. Every begin that succeeds gets its own
    number, and a stale handle never settles."""
    from tool_call_closure import UsageError

    closure = ToolCallClosure(max_diagnostics=100_000)
    handles = []
    failures = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        for round_number in range(50):
            try:
                result = closure.begin([{"id": f"t{index}", "name": "t"}])
            except UsageError as exc:
                with lock:
                    failures.append(exc.code)
                continue
            with lock:
                handles.append(result.handle)
            outcome = closure.succeed(result.handle, f"t{index}", round_number)
            if isinstance(outcome, Accepted):
                assert outcome.generation == result.generation
            else:
                assert outcome.reason in ("stale_generation", "run_closed")
            closure.close(result.handle)

    _run_threads(worker)
    assert set(failures) <= {"generation_changed"}
    assert len(handles) + len(failures) == THREADS * 50
    assert closure.active_generation == len(handles)  # every successful begin got its own number
    assert len({h.generation for h in handles}) == len(handles)


def test_caller_code_runs_without_the_lock() -> None:
    """A __str__ that waits for another thread's operation would deadlock if the lock were held."""
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    seen: list[Any] = []

    class Message:
        def __str__(self) -> str:
            other = threading.Thread(target=lambda: seen.append(closure.succeed(handle, "b", "other thread")))
            other.start()
            other.join(timeout=10)
            assert not other.is_alive(), "the other thread could not get the lock"
            return "cancelled by caller"

    result = closure.cancel(handle, "a", Message())
    assert isinstance(result, Accepted)
    assert isinstance(seen[0], Accepted)
    snapshot = closure.snapshot()
    assert isinstance(snapshot, Snapshot)
    assert [c.state for c in snapshot.calls] == ["cancelled", "success"]


def test_another_threads_close_during_caller_code_wins_like_a_nested_close() -> None:
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle

    class Content:
        def __json__(self) -> object:
            other = threading.Thread(target=lambda: closure.close(handle, {"code": "elsewhere"}))
            other.start()
            other.join(timeout=10)
            return {"late": True}

    result = closure.succeed(handle, "a", Content())
    assert isinstance(result, Rejection)
    assert (result.reason, result.observed_status) == ("run_closed", "success")
