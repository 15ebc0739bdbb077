"""The method copies fold what the table fixes (machine/table_facts.py), and mean what they meant.

Each test writes a small ``enter_x`` that reads the machine as the generated
operations do, specializes it as ``machine.specialize`` writes a method copy,
and checks two things: the read is gone from the copy's text, and the copy,
run on a real instance, returns what the unfolded program returns.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

import pytest

from tool_call_closure import create_tool_call_closure
from tool_call_closure.machine import generated, semantics, table_facts
from tool_call_closure.machine.specialize import _specialized
from tool_call_closure.machine.table import TABLE


def _both(program: str, bound: dict[str, Any], arguments: tuple[str, ...]) -> tuple[str, Any, Any]:
    """(the copy's text, the program's function, the copy's function)."""
    entry = ast.parse(program).body[0]
    assert isinstance(entry, ast.FunctionDef)
    copy = _specialized(TABLE, entry, "method_x", arguments, bound)  # type: ignore[arg-type]
    original: dict[str, Any] = {}
    exec(program, original)
    folded: dict[str, Any] = {}
    exec(compile(ast.Module([copy], []), "<test>", "exec"), folded)
    return ast.unparse(copy), original["enter_x"], folded["method_x"]


def test_the_machine_s_constants_are_read_from_the_table() -> None:
    program = (
        "def enter_x(closure, status=None):\n"
        "    machine = closure._machine\n"
        "    return (machine.initial_call_state, machine.texts['superseded_code'], machine.effect_run_to['supersede'],\n"
        "            machine.call_events['record_settlement'][status], status in machine.closed, 'open' in machine.closed)\n"
    )
    closure = create_tool_call_closure()
    for status in ("success", "error", "cancelled"):
        text, original, copy = _both(program, {"status": status}, ())
        assert "_machine" not in text, text
        assert copy(closure) == original(closure, status)


@pytest.mark.parametrize("effect", sorted(TABLE.effect_call_moves()))
def test_a_call_s_move_for_a_fixed_status_is_the_table_s_one_move(effect: str) -> None:
    """``effect_call_next[e].get((state, status))``: the same answer as the machine's, for every state and status."""
    program = (
        "def enter_x(closure, state, status=None):\n"
        f"    return closure._machine.effect_call_next[{effect!r}].get((state, status))\n"
    )
    closure = create_tool_call_closure()
    for status in TABLE.call_states:
        text, original, copy = _both(program, {"status": status}, ("state",))
        moves = [source for (source, given) in TABLE.effect_call_moves()[effect] if given == status]
        if len(moves) <= 1:
            assert "effect_call_next" not in text, text
        for state in (*TABLE.call_states, "no such state"):
            assert copy(closure, state) == original(closure, state, status), (effect, status, state)


def test_what_the_table_lacks_is_read_at_run_time_as_before() -> None:
    program = (
        "def enter_x(closure, status=None):\n"
        "    return (closure._machine.texts['no_such_text'], closure._machine.call_events['no_such_effect'][status])\n"
    )
    text, _original, _copy = _both(program, {"status": "success"}, ())
    assert "closure._machine.texts['no_such_text']" in text
    assert "closure._machine.call_events['no_such_effect']['success']" in text


def test_a_field_of_a_record_just_built_is_its_element_and_the_record_is_not_none() -> None:
    program = (
        "def enter_x(closure, content, status=None):\n"
        "    settlement = (status, 'reported', content)\n"
        "    first = (settlement[0], settlement[1], settlement[2], settlement is not None, settlement is None)\n"
        "    settlement = len(content)\n"
        "    return (first, settlement is None)\n"
    )
    text, original, copy = _both(program, {"status": "success"}, ("content",))
    assert "('success', 'reported', settlement[2], True, False)" in text, text
    assert "return (first, settlement is None)" in text  # after its write, the name is read again
    assert copy(None, "ok") == original(None, "ok", "success")


def test_the_semantics_integers_are_the_values_the_copies_fold() -> None:
    read = {name for name in table_facts._INTEGERS if hasattr(semantics, name)}
    assert {"CALL_STATE", "STATUS", "CONTENT", "MAX_SAFE_INTEGER"} <= read
    for name in read:
        assert getattr(semantics, name) == table_facts._INTEGERS[name], name


def test_the_settlement_copies_read_no_move_and_no_machine_local_at_run_time() -> None:
    for name in ("method_succeed", "method_fail", "method_cancel"):
        source = inspect.getsource(getattr(generated, name))
        assert "effect_call_next" not in source, name
        assert "= closure._machine\n" not in source, name
        assert "semantics_.STATUS" not in source, name


def test_a_local_holding_one_of_the_machine_s_attributes_is_read_as_it() -> None:
    program = (
        "def enter_x(closure, status=None):\n"
        "    texts = closure._machine.texts\n"
        "    return (texts['superseded_code'], status)\n"
    )
    text, original, copy = _both(program, {"status": "success"}, ())
    assert "_machine" not in text, text
    assert "texts" not in text, text
    assert copy(create_tool_call_closure()) == original(create_tool_call_closure(), "success")
