"""The lean generated code: the public methods' fast entry points and the shortcuts they take.

Theory of operation
-------------------
``machine/specialize.py`` writes each public method's entry point
(``generated.method_succeed`` …) as a simplified copy of its operation's
``enter_<op>``.  The vectors, the bounded model check and the fault sweep
run through the public class, so through these copies; here: that each
public method has its copy and the class calls it, that the simplifications
keep the meaning on small programs, and that the direct writer of an error's
export text gives ``JSON.stringify``'s text.
"""

from __future__ import annotations

import ast
import inspect
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tool_call_closure import create_tool_call_closure
from tool_call_closure.ecma_json import error_text, json_stringify
from tool_call_closure.machine import generated
from tool_call_closure.machine.specialize import METHOD_ARGUMENTS, _specialized
from tool_call_closure.machine.table import TABLE

_ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=()), max_size=12)


@given(code=_ANY_TEXT, message=_ANY_TEXT, state=st.one_of(st.none(), _ANY_TEXT, st.just("absent")))
def test_the_error_text_is_json_stringify_of_the_error_object(code: str, message: str, state: str | None) -> None:
    error: dict[str, object] = {"code": code, "message": message}
    if state != "absent":
        error["side_effect_state"] = state
    expected = json_stringify({"error": error})
    assert error_text(code, message, *(() if state == "absent" else (state,))) == expected


def test_the_error_text_declines_what_is_not_text() -> None:
    assert error_text(5, "m") is None
    assert error_text("c", "m", 1.5) is None


@pytest.mark.pure_machine  # it spies on the pure module's functions, which a compiled build does not call
def test_every_public_method_has_its_entry_point_and_the_class_calls_it(monkeypatch: object) -> None:
    assert set(generated.METHODS) == set(METHOD_ARGUMENTS)
    c = create_tool_call_closure()
    seen: list[str] = []
    for name, function in generated.METHODS.items():

        def spy(*args: object, _function: object = function, _name: str = name) -> object:
            seen.append(_name)
            return _function(*args)  # type: ignore[operator]

        monkeypatch.setattr(generated, function.__name__, spy)  # type: ignore[attr-defined]
    handle = c.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}, {"id": "c", "name": "t"}]).handle
    c.succeed(handle, "a", "ok")
    c.fail(handle, "b", "no")
    c.cancel(handle, "c")
    c.settle(handle, "c", {"status": "success", "content": "late"})
    c.close(handle)
    assert seen == ["begin", "succeed", "fail", "cancel", "settle", "close"]


def _run(source: str, bound: dict[str, object], **arguments: object) -> object:
    entry = ast.parse(source).body[0]
    assert isinstance(entry, ast.FunctionDef)
    function = _specialized(TABLE, entry, "method_x", tuple(arguments), bound)  # type: ignore[arg-type]
    namespace: dict[str, object] = {}
    exec(compile(ast.Module([function], []), "<test>", "exec"), namespace)
    return namespace["method_x"](None, *arguments.values())  # type: ignore[operator]


_PROGRAM = '''
def enter_x(closure, value, status=None, flag=False):
    """x: a program."""
    alias = status
    kind = "none"
    if alias == "success" and not flag:
        kind = "success"
    elif alias is None:
        kind = "read"
    copied = value
    value = copied + 1
    total = copied * 10 + value
    return (kind, total, flag or alias is None)
'''


def test_the_simplifications_keep_the_meaning_of_a_program() -> None:
    original: dict[str, object] = {}
    exec(_PROGRAM, original)
    for bound in ({"status": "success", "flag": False}, {"status": None, "flag": True}, {"status": "error"}):
        for value in (0, 4):
            expected = original["enter_x"](None, value, **bound)  # type: ignore[operator]
            assert _run(_PROGRAM, dict(bound), value=value) == expected


def _specialized_text(program: str, arguments: tuple[str, ...], bound: dict[str, object]) -> str:
    entry = ast.parse(program).body[0]
    assert isinstance(entry, ast.FunctionDef)
    return ast.unparse(_specialized(TABLE, entry, "method_x", arguments, bound))  # type: ignore[arg-type]


def test_a_constant_is_carried_into_each_branch_up_to_that_branchs_own_write() -> None:
    """A draft that only the media_moved row makes must not keep the record row off its inline install."""
    program = (
        "def enter_x(closure, value, flag=False):\n"
        "    draft = None\n"
        "    with closure:\n"
        "        if value:\n"
        "            seen = draft\n"
        "            draft = [value]\n"
        "            return (seen, draft)\n"
        "        else:\n"
        "            return (draft, install(draft))\n"
    )
    text = _specialized_text(program, ("value",), {"flag": False})
    assert "return (None, draft)" in text  # read before the branch's write: None; after it: the name again
    assert "return (None, install(None))" in text  # the other branch never writes it

    class Lock:
        def __enter__(self) -> None: ...
        def __exit__(self, *exc: object) -> None: ...

    namespace: dict[str, object] = {"install": lambda draft: ("installed", draft)}
    function = _specialized(TABLE, ast.parse(program).body[0], "method_x", ("value",), {"flag": False})  # type: ignore[arg-type]
    exec(compile(ast.Module([function], []), "<test>", "exec"), namespace)
    assert namespace["method_x"](Lock(), 3) == (None, [3])  # type: ignore[operator]
    assert namespace["method_x"](Lock(), 0) == (None, ("installed", None))  # type: ignore[operator]


def test_a_copy_annotated_any_is_kept_so_that_a_type_test_does_not_narrow_what_is_read_through_it() -> None:
    """read_handle_generation reads a handle's generation through ``untyped: Any = handle``.

    Substituted, the read would be ``handle.generation`` under ``type(handle) is BatchHandle``: narrowed to
    ``int``, which the compiled build checks (a forged float generation would raise TypeError where the rules
    answer a rejection). A plain copy is still substituted.
    """
    program = (
        "def enter_x(closure, handle):\n"
        "    copied = handle\n"
        "    untyped: Any = copied\n"
        "    return untyped.generation if type(copied) is Handle else None\n"
    )
    text = _specialized_text(program, ("handle",), {})
    assert "untyped: Any = handle" in text
    assert "return untyped.generation if type(handle) is Handle else None" in text
    shipped = inspect.getsource(generated)
    reads = re.findall(r"[\w.]*handle\w*\.generation\b", shipped)
    assert len(reads) == 8  # the entries of settle, close and seal; the methods of settle, succeed, fail, cancel, close
    assert set(reads) == {"effect_read_handle_generation__untyped.generation"}


def test_the_settle_entry_points_install_a_recorded_call_directly() -> None:
    source = inspect.getsource(generated.method_succeed)
    assert "run.calls[effect_record_settlement__position] = effect_record_settlement__call" in source
    assert "install_fields(closure, None" not in source  # (the media_moved row installs its draft)


def test_a_store_no_later_statement_reads_goes_only_where_the_block_then_ends_the_operation() -> None:
    program = (
        "def enter_x(closure, value, flag=False):\n"
        "    staged = None\n"
        "    for item in value:\n"
        "        staged = (item, 1)\n"
        "        if item:\n"
        "            continue\n"
        "        return 0\n"
        "    if len(value) > 2:\n"
        "        staged = (value, 2)\n"
        "        return len(value)\n"
        "    return staged\n"
    )
    text = _specialized_text(program, ("value",), {"flag": False})
    assert "staged = (value, 2)" not in text  # its block returns without reading it
    assert "staged = (item, 1)" in text  # in a loop's body that may continue, to the return that reads it: kept
    for value in ([], [0], [1], [1, 0], [1, 1, 1]):
        assert _run(program, {"flag": False}, value=value) == _run_original(program, value)


def _run_original(source: str, value: object) -> object:
    namespace: dict[str, object] = {}
    exec(source, namespace)
    return namespace["enter_x"](None, value)  # type: ignore[operator]


def test_a_block_ends_the_operation_when_every_path_through_it_does() -> None:
    program = (
        "def enter_x(closure, lock, value, flag=False):\n"
        "    staged = None\n"
        "    if value:\n"
        "        staged = (value, 2)\n"
        "        with lock:\n"
        "            if value > 1:\n"
        "                return 1\n"
        "            else:\n"
        "                raise ValueError(value)\n"
        "    return staged\n"
    )
    arguments = ("lock", "value")
    assert "staged = (value, 2)" not in _specialized_text(program, arguments, {"flag": False})
    # Any other with may swallow the exception and go on after it, to the return that reads the local.
    other = program.replace("with lock:", "with closure:")
    assert "staged = (value, 2)" in _specialized_text(other, arguments, {"flag": False})
    # An if that ends the operation on one branch only.
    one_branch = program.replace("            else:\n                raise ValueError(value)\n", "")
    assert "staged = (value, 2)" in _specialized_text(one_branch, arguments, {"flag": False})
