"""The kit's generic linearizability checker (conformance/linearizability.py) on hand-made histories.

Models here are small and classical (a register, a compare-and-set register, a set of tokens) so each history's
answer can be checked by hand; the table's own model is tested in tests/test_agents.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tool_call_closure.conformance.linearizability import Model, Operation, check, cut, overlapping


def register_step(state: int, operation: Operation) -> tuple[int, Any]:
    kind, value = operation.op
    if kind == "write":
        return value, None
    if kind == "cas":
        expected, new = value
        return (new, True) if state == expected else (state, False)
    return state, state  # read


REGISTER = Model.deterministic(0, register_step)


def op(
    agent: int, invoke: float, response: float | None, kind: str, value: Any = None, answer: Any = None
) -> Operation:
    return Operation(agent, invoke, response, (kind, value), answer)


def test_a_sequential_history_is_linearizable_with_its_own_order_as_witness() -> None:
    history = [op(0, 0, 1, "write", 1), op(1, 2, 3, "read", answer=1), op(0, 4, 5, "write", 2)]
    result = check(history, REGISTER)
    assert result.verdict == "linearizable"
    assert result.ok
    assert result.order == (0, 1, 2)


def test_overlapping_operations_may_go_in_either_order() -> None:
    # the read overlaps the write: it may see the old value or the new one
    for seen in (0, 1):
        history = [op(0, 0, 10, "write", 1), op(1, 1, 9, "read", answer=seen)]
        assert check(history, REGISTER).ok, seen


def test_real_time_order_is_kept() -> None:
    # the read starts after the write responded: it must see 1
    history = [op(0, 0, 1, "write", 1), op(1, 2, 3, "read", answer=0)]
    result = check(history, REGISTER)
    assert result.verdict == "violation"
    assert result.order == (0,)  # the write could be placed, then the read had no explanation
    assert result.stuck == (1,)
    assert result.minimal_prefix == 2
    assert "no order explains" in result.message


def test_the_classic_non_linearizable_register_history() -> None:
    # two reads overlap one write: the first sees the new value, the later one (after it) the old one
    history = [
        op(0, 0, 10, "write", 1),
        op(1, 1, 2, "read", answer=1),
        op(2, 3, 4, "read", answer=0),
    ]
    assert check(history, REGISTER).verdict == "violation"


def test_an_unobserved_operation_may_have_taken_effect_or_not() -> None:
    pending_write = op(0, 0, None, "write", 7)
    assert check([pending_write, op(1, 1, 2, "read", answer=7)], REGISTER).ok
    assert check([pending_write, op(1, 1, 2, "read", answer=0)], REGISTER).ok
    # but it cannot have taken effect before it was invoked
    late_write = op(0, 2, None, "write", 7)
    assert check([op(1, 0, 1, "read", answer=7), late_write], REGISTER).verdict == "violation"
    # and its recorded answer (if a log kept one) is ignored
    assert check([Operation(0, 0, None, ("read", None), "garbage")], REGISTER).ok


def test_an_unobserved_operation_takes_effect_at_most_once() -> None:
    history = [
        op(0, 0, None, "cas", (0, 1)),
        op(1, 1, 2, "cas", (0, 5), answer=True),
        op(1, 3, 4, "read", answer=1),  # only the pending cas could write 1, but 5 was written after 0 was seen
    ]
    assert check(history, REGISTER).verdict == "violation"


def test_a_nondeterministic_model_may_answer_several_ways() -> None:
    def steps(state: frozenset[str], operation: Operation) -> list[tuple[frozenset[str], Any]]:
        if operation.op == "take":  # takes any token
            return [(state - {token}, token) for token in sorted(state)] or [(state, None)]
        return [(state | {operation.op}, None)]

    tokens = Model(frozenset({"a", "b"}), steps)
    history = [Operation(0, 0, 1, "take", "b"), Operation(1, 2, 3, "take", "a"), Operation(0, 4, 5, "take", None)]
    assert check(history, tokens).ok
    twice = [Operation(0, 0, 1, "take", "b"), Operation(1, 2, 3, "take", "b")]
    assert check(twice, tokens).verdict == "violation"


def test_a_budget_that_runs_out_is_unknown_never_a_pass() -> None:
    # many concurrent writes and a read that no order explains: refuting it needs the whole search
    history = [op(i, 0, 100, "write", i + 1) for i in range(12)] + [op(99, 200, 201, "read", answer=42)]
    result = check(history, REGISTER, budget=50)
    assert result.verdict == "unknown"
    assert not result.ok
    assert "budget of 50" in result.message
    assert result.steps <= 50
    full = check(history, REGISTER)
    assert full.verdict == "violation"  # the cache keeps the full search small: 2**12 sets, not 12! orders
    assert full.minimal_prefix == len(history)


def test_memoization_keeps_wide_histories_cheap() -> None:
    # 16 overlapping writes of the same value, then a read: without the cache 16! orders, with it 2**16 states
    history = [op(i, 0, 100, "write", 1) for i in range(16)] + [op(99, 200, 201, "read", answer=1)]
    result = check(history, REGISTER)
    assert result.ok
    assert result.steps < 1000  # one state per set of placed writes along the first path


def test_a_hopeless_hook_prunes_and_the_shortest_prefix_ignores_it() -> None:
    calls: list[int] = []

    def hopeless(state: int, placed: int) -> bool:
        calls.append(placed)
        return state == 1  # claims (wrongly, on purpose) that no continuation of a state 1 succeeds

    pruned = Model(0, lambda state, operation: (register_step(state, operation),), hopeless=hopeless)
    history = [op(0, 0, 1, "write", 1), op(1, 2, 3, "read", answer=1)]
    result = check(history, pruned)
    assert result.verdict == "violation"  # the hook is trusted: it must only say True when it is sure
    assert calls
    assert result.minimal_prefix is None or result.minimal_prefix >= 1
    assert check(history, REGISTER).ok


def test_cut_makes_later_responses_unobserved() -> None:
    history = [op(0, 0, 10, "write", 1), op(1, 5, 6, "read", answer=0), op(2, 7, 8, "read", answer=1)]
    prefix = cut(history, 2)
    assert [o.response for o in prefix] == [None, None]
    assert cut(history, 3)[1].response == 6
    assert check(history, REGISTER).ok


def test_invalid_times_are_refused() -> None:
    with pytest.raises(ValueError, match="precedes its invocation"):
        check([op(0, 5, 1, "read", answer=0)], REGISTER)


def test_empty_and_all_unobserved_histories_are_linearizable() -> None:
    assert check([], REGISTER).ok
    assert check([op(0, 0, None, "write", 3)], REGISTER).ok


def test_overlapping_counts_operations_that_overlap_another() -> None:
    history = [op(0, 0, 10, "write", 1), op(1, 5, 6, "read", answer=0), op(2, 20, 21, "read", answer=1)]
    assert overlapping(history) == 2
    assert overlapping([op(0, 0, 1, "read"), op(0, 2, None, "read")]) == 0
