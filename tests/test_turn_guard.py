"""Deviation D20: a stale model turn does not supersede a newer batch (``turn_token`` and ``begin(…, turn=…)``).

The scenario of issue 18 item 19: in a chat UI the user edits the prompt while
tools run, the newer request's batch begins, and then the *older* request's
model response arrives.  Without the guard its ``begin`` supersedes the newer
batch.  With a token taken before the model turn was requested, that ``begin``
is a compare-and-set: it commits only if no other ``begin`` happened since,
and otherwise returns a ``stale_turn`` rejection and changes nothing else.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tool_call_closure import (
    BatchHandle,
    BeginResult,
    Rejection,
    Snapshot,
    ToolCallClosure,
    TurnToken,
    UsageError,
    to_json,
)

CALLS = [{"id": "a", "name": "t"}]


def _state(closure: ToolCallClosure) -> Any:
    """Everything but the diagnostics: what a stale turn must leave exactly as it was."""
    snapshot = closure.snapshot()
    if snapshot is None:
        return None
    return (snapshot.generation, snapshot.closed, snapshot.close_reason, snapshot.calls, closure.active_generation)


def _diagnostics(closure: ToolCallClosure) -> tuple[Any, ...]:
    snapshot = closure.snapshot()
    assert snapshot is not None
    return tuple(to_json(d) for d in snapshot.diagnostics)


# --------------------------------------------------------------------------- the token


def test_the_token_is_the_generation_counter_zero_before_the_first_begin() -> None:
    closure = ToolCallClosure()
    assert closure.turn_token() == TurnToken(0)
    closure.begin(CALLS)
    assert closure.turn_token() == TurnToken(1)
    closure.begin([])
    token = closure.turn_token()
    assert token == TurnToken(2)
    assert token.generation == closure.active_generation == 2
    assert to_json(token) == '{"generation":2}'


def test_the_token_is_a_frozen_value_that_compares_by_value() -> None:
    token = ToolCallClosure().turn_token()
    with pytest.raises(AttributeError):
        token.generation = 5  # type: ignore[misc]
    assert token == TurnToken(0)
    assert hash(token) == hash(TurnToken(0))
    assert not hasattr(token, "__dict__")  # slotted


def test_taking_a_token_changes_nothing_and_records_nothing() -> None:
    closure = ToolCallClosure()
    handle = closure.begin(CALLS).handle
    closure.succeed(handle, "zz", 1)  # one diagnostic
    before = (_state(closure), _diagnostics(closure))
    closure.turn_token()
    assert (_state(closure), _diagnostics(closure)) == before


# --------------------------------------------------------------------------- compare-and-set


def test_a_current_token_begins_as_begin_does_superseding_an_open_generation() -> None:
    closure = ToolCallClosure()
    first = closure.begin(CALLS)
    token = closure.turn_token()
    result = closure.begin([{"id": "b", "name": "t"}], turn=token)
    assert isinstance(result, BeginResult)
    assert result.generation == 2
    assert result.superseded is not None
    assert result.superseded.generation == 1
    late = closure.settle(first.handle, "a", {"status": "success", "content": 1})
    assert isinstance(late, Rejection)
    assert late.reason == "stale_generation"


def test_the_issue_scenario_the_older_turns_begin_does_not_supersede_the_newer_batch() -> None:
    """Request 1 is sent (token 0), the user edits the prompt: request 2 is sent (token 0 too), its response
    arrives first and begins; then request 1's response arrives: stale_turn, and request 2's batch runs on."""
    closure = ToolCallClosure()
    turn_1 = closure.turn_token()
    turn_2 = closure.turn_token()
    newer = closure.begin([{"id": "new_call", "name": "t"}], turn=turn_2)
    assert isinstance(newer, BeginResult)
    before = _state(closure)
    older = closure.begin([{"id": "old_call", "name": "t"}], turn=turn_1)
    assert isinstance(older, Rejection)
    assert (older.reason, older.call_id, older.generation, older.observed_status) == ("stale_turn", None, None, None)
    assert _state(closure) == before  # the newer batch is open, its calls pending, nothing superseded
    assert closure.succeed(newer.handle, "new_call", "ok").accepted


def test_a_stale_turn_is_rejected_after_another_begin_and_changes_nothing_but_one_diagnostic() -> None:
    closure = ToolCallClosure()
    closure.begin(CALLS)
    token = closure.turn_token()  # generation 1
    newer = closure.begin([{"id": "b", "name": "t"}])
    closure.succeed(newer.handle, "b", "done")
    before = _state(closure)
    rejected = closure.begin([{"id": "c", "name": "t"}], turn=token)
    assert isinstance(rejected, Rejection)
    assert (rejected.reason, rejected.generation) == ("stale_turn", 1)  # the token's generation
    assert rejected.accepted is False
    assert _state(closure) == before
    assert _diagnostics(closure) == ('{"reason":"stale_turn","callId":null,"generation":1,"observedStatus":null}',)


def test_a_stale_turn_consumes_no_generation_number() -> None:
    closure = ToolCallClosure()
    stale = closure.turn_token()
    closure.begin(CALLS)
    for _ in range(3):
        assert isinstance(closure.begin(CALLS, turn=stale), Rejection)
    assert closure.active_generation == 1
    assert closure.begin([]).generation == 2


def test_a_token_from_before_the_first_begin() -> None:
    """Before the first begin the token is generation 0: it commits the first begin, and only the first."""
    closure = ToolCallClosure()
    token = closure.turn_token()
    assert isinstance(closure.begin(CALLS, turn=token), BeginResult)
    again = closure.begin(CALLS, turn=token)
    assert isinstance(again, Rejection)
    assert (again.reason, again.generation) == ("stale_turn", None)  # generation 0 is reported as null


def test_a_stale_turn_before_the_first_begin_is_discarded_with_the_other_early_rejections() -> None:
    """A token of a generation this instance never had (another instance's) is stale; before the first begin its
    diagnostic goes where every rejection before the first begin goes, and begin clears it (DIAG-2)."""
    closure = ToolCallClosure()
    rejected = closure.begin(CALLS, turn=TurnToken(3))
    assert isinstance(rejected, Rejection)
    assert rejected.generation == 3
    assert closure.snapshot() is None
    assert closure.active_generation is None
    assert closure.begin([]).generation == 1
    assert _diagnostics(closure) == ()


def test_stale_turn_diagnostics_respect_max_diagnostics() -> None:
    closure = ToolCallClosure(max_diagnostics=2)
    stale = closure.turn_token()
    closure.begin(CALLS)
    results = [closure.begin(CALLS, turn=stale) for _ in range(5)]
    assert all(isinstance(r, Rejection) and r.reason == "stale_turn" for r in results)  # every one returned
    assert len(_diagnostics(closure)) == 2  # the first two recorded (DIAG-1)


def test_a_nested_begin_in_caller_code_makes_the_turn_stale_and_the_nested_generation_stays() -> None:
    """The check is in the recheck, after the calls' caller code ran: a begin made by that code wins."""
    closure = ToolCallClosure()
    token = closure.turn_token()

    class Entry:
        id = "outer"

        @property
        def name(self) -> str:
            closure.begin([{"id": "nested", "name": "t"}])
            return "t"

    rejected = closure.begin([Entry()], turn=token)
    assert isinstance(rejected, Rejection)
    assert rejected.reason == "stale_turn"
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert (snapshot.generation, [c.id for c in snapshot.calls]) == (1, ["nested"])
    assert [d.reason for d in snapshot.diagnostics] == ["stale_turn"]


def test_with_a_token_stale_turn_wins_over_generation_changed_and_without_one_begin_is_unchanged() -> None:
    def nesting(closure: ToolCallClosure) -> list[Any]:
        class Entry:
            id = "outer"

            @property
            def name(self) -> str:
                closure.begin([])
                return "t"

        return [Entry()]

    guarded = ToolCallClosure()
    rejected = guarded.begin(nesting(guarded), turn=guarded.turn_token())
    assert isinstance(rejected, Rejection)
    assert rejected.reason == "stale_turn"
    plain = ToolCallClosure()
    with pytest.raises(UsageError) as info:
        plain.begin(nesting(plain))
    assert info.value.code == "generation_changed"  # BEG-5, as before


def test_invalid_calls_raise_before_the_turn_is_compared() -> None:
    closure = ToolCallClosure()
    stale = closure.turn_token()
    closure.begin(CALLS)
    before = (_state(closure), _diagnostics(closure))
    with pytest.raises(UsageError) as info:
        closure.begin("not a list", turn=stale)  # type: ignore[call-overload]
    assert info.value.code == "calls_not_array"
    with pytest.raises(UsageError) as info:
        closure.begin([{"id": "x"}], turn=stale)  # type: ignore[list-item]
    assert info.value.code == "string_empty"
    assert (_state(closure), _diagnostics(closure)) == before  # no rejection recorded either


class _Generation(int):
    pass


def _forged(generation: object) -> TurnToken:
    token = TurnToken(0)
    object.__setattr__(token, "generation", generation)
    return token


_NOT_TOKENS: dict[str, Any] = {
    "a mapping": {"generation": 0},
    "a look-alike handle": BatchHandle(0),
    "a string": "0",
    "an int": 0,
    "an object": object(),
    "a negative generation": TurnToken(-1),
    "a generation past 2**53-1": TurnToken(2**53),
    "a bool generation": TurnToken(True),  # a bool is not an integer here (JS-7)
    "a float generation": TurnToken(1.0),  # type: ignore[arg-type]
    "no generation": TurnToken(None),  # type: ignore[arg-type]
    "a rewritten generation": _forged("1"),
}


@pytest.mark.parametrize("turn", list(_NOT_TOKENS))
def test_a_turn_that_is_not_a_token_raises_naming_turn_and_changes_nothing(turn: str) -> None:
    closure = ToolCallClosure()
    closure.begin(CALLS)
    closure.succeed(closure.begin(CALLS).handle, "zz", 1)
    before = (_state(closure), _diagnostics(closure))
    with pytest.raises(UsageError) as info:
        closure.begin([{"id": "b", "name": "t"}], turn=_NOT_TOKENS[turn])
    assert info.value.code == "turn_invalid"
    assert str(info.value) == "turn must be a turn token (the value turnToken() returns)"
    assert (_state(closure), _diagnostics(closure)) == before


def test_a_token_is_checked_before_the_calls_are_read() -> None:
    read: list[str] = []

    class Entry:
        @property
        def id(self) -> str:
            read.append("id")
            return "a"

        name = "t"

    with pytest.raises(UsageError, match=r"^turn must be"):
        ToolCallClosure().begin([Entry()], turn="stale")  # type: ignore[call-overload]
    assert read == []


def test_an_int_subclass_generation_counts_with_its_plain_value() -> None:
    closure = ToolCallClosure()
    assert isinstance(closure.begin(CALLS, turn=TurnToken(_Generation(0))), BeginResult)
    rejected = closure.begin(CALLS, turn=TurnToken(_Generation(0)))
    assert isinstance(rejected, Rejection)
    assert type(rejected.generation) is not _Generation


def test_an_explicit_none_turn_is_no_guard() -> None:
    closure = ToolCallClosure()
    closure.begin(CALLS)
    assert closure.begin(CALLS, turn=None).generation == 2


# --------------------------------------------------------------------------- threads


def test_another_threads_begin_during_validation_makes_the_turn_stale() -> None:
    """Another thread's begin that lands while this begin reads its calls is seen by the recheck, in the same
    acquisition of the lock as the commit: a true compare-and-set (the other thread is joined, no timing)."""
    closure = ToolCallClosure()
    token = closure.turn_token()
    landed: list[object] = []

    class Entry:
        id = "mine"

        @property
        def name(self) -> str:
            other = threading.Thread(target=lambda: landed.append(closure.begin([{"id": "theirs", "name": "t"}])))
            other.start()
            other.join(timeout=30)
            assert not other.is_alive()
            return "t"

    rejected = closure.begin([Entry()], turn=token)
    assert isinstance(landed[0], BeginResult)
    assert isinstance(rejected, Rejection)
    assert rejected.reason == "stale_turn"
    snapshot = closure.snapshot()
    assert isinstance(snapshot, Snapshot)
    assert [c.id for c in snapshot.calls] == ["theirs"]


def _race(closure: ToolCallClosure, token: TurnToken, count: int) -> list[object]:
    """``count`` threads released together, each calling ``begin`` with ``token``: their results."""
    barrier = threading.Barrier(count)
    results: list[object] = []
    lock = threading.Lock()

    def worker(index: int) -> None:
        barrier.wait()
        result = closure.begin([{"id": f"c{index}", "name": "t"}], turn=token)
        with lock:
            results.append(result)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    return results


def test_racing_begins_with_one_token_commit_exactly_once() -> None:
    """However the threads interleave, of 8 begins with the same token exactly one commits and the other seven
    are stale_turn rejections: never generation_changed (the turn is compared first in the recheck), never a
    second generation."""
    for _ in range(20):
        closure = ToolCallClosure(max_diagnostics=100)
        results = _race(closure, closure.turn_token(), 8)
        committed = [r for r in results if isinstance(r, BeginResult)]
        rejected = [r for r in results if isinstance(r, Rejection)]
        assert len(committed) == 1
        assert len(rejected) == 7
        assert {r.reason for r in rejected} == {"stale_turn"}
        assert closure.active_generation == 1
        assert committed[0].superseded is None
