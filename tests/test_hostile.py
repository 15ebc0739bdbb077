"""Hostile values at every public entry point.

The recipes, the hostile objects built from them and the checks run after every operation are in
``tests/hostile.py`` (read its docstring first).  In short, after every operation — top level or run by caller
code re-entering the closure — the outcome must be a value of the documented type, a ``UsageError`` /
``LimitError``, or the caller's own exception (a ``CallerBoom``), never an internal error; an operation that
raised changed nothing but what its nested operations did; and I1, I3, I5, I6, I7, I8 hold.

The tests at the end pin three defects this fuzzing found, now fixed: exceptions whose ``__str__`` returns a
``str`` subclass (BUG-1), objects whose ``__class__`` claims a built-in type (BUG-2), and a non-callable
``__json__`` (BUG-3); the generated values do not include them.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any
from unittest.mock import NonCallableMock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tool_call_closure.machine.interpreter as machine_module
import tool_call_closure.machine.semantics as semantics
from hostile import (
    NO_ACT,
    OMIT,
    Act,
    CallerBoom,
    Env,
    Recipe,
    choice,
    lit,
    node_utf8_length,
    operations,
)
from tool_call_closure import (
    Accepted,
    BatchHandle,
    LimitError,
    Rejection,
    Snapshot,
    ToolCallClosure,
    ToolCallClosureError,
    UsageError,
    to_json,
)
from tool_call_closure.machine.context import SnapshotRecord
from tool_call_closure.values import call_views

LONG = os.environ.get("HYPOTHESIS_PROFILE") == "long"
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much, HealthCheck.large_base_example]
LIMIT_NAMES = (
    "max_calls",
    "max_diagnostics",
    "max_result_bytes",
    "max_message_bytes",
    "max_id_bytes",
    "max_name_bytes",
    "max_code_bytes",
)


def start_op(count: int = 3) -> Recipe:
    """A well-formed begin of up to three calls ``a``, ``b``, ``c``."""
    ids = ("a", "b", "c")[:count]
    return ("begin", ("list", tuple(("dict", ((lit("id"), lit(i)), (lit("name"), lit("t")))) for i in ids)))


def assert_clean(env: Env) -> None:
    assert env.violations == [], "\n".join(env.violations[:20])


# --------------------------------------------------------------------------- the fuzzer

fuzz_limits = st.fixed_dictionaries(
    {
        "max_calls": st.sampled_from((1, 2, 3, 1000)),
        "max_diagnostics": st.sampled_from((1, 2, 3, 100)),
        "max_result_bytes": st.sampled_from((1, 8, 64, 1_048_576)),
        "max_message_bytes": st.sampled_from((1, 2, 3, 4, 8, 4096)),
        "max_id_bytes": st.sampled_from((1, 2, 512)),
        "max_name_bytes": st.sampled_from((1, 3, 512)),
        "max_code_bytes": st.sampled_from((1, 3, 128)),
    }
)


@settings(suppress_health_check=HEALTH)
@given(
    limits=fuzz_limits,
    start=st.sampled_from((True, True, True, False)),
    ops=st.lists(operations(2, LONG), min_size=1, max_size=20),
)
def test_hostile_operations_never_fail_internally_and_keep_the_invariants(
    limits: dict[str, Any], start: bool, ops: list[Recipe]
) -> None:
    env = Env(ToolCallClosure(**limits))
    if start:
        env.execute(start_op(limits["max_calls"]))
    for op in ops:
        env.execute(op)
    assert_clean(env)


# --------------------------------------------------------------------------- constructor limits


class LyingInt(int):
    """An int whose every override lies; the limit must be its plain value."""

    def __index__(self) -> int:
        raise CallerBoom("__index__")

    def __int__(self) -> int:
        raise CallerBoom("__int__")

    def __eq__(self, other: object) -> bool:
        raise CallerBoom("__eq__")

    def __hash__(self) -> int:
        raise CallerBoom("__hash__")

    def __lt__(self, other: object) -> bool:
        raise CallerBoom("__lt__")

    def __le__(self, other: object) -> bool:
        raise CallerBoom("__le__")

    def __gt__(self, other: object) -> bool:
        raise CallerBoom("__gt__")

    def __ge__(self, other: object) -> bool:
        raise CallerBoom("__ge__")

    def __bool__(self) -> bool:
        raise CallerBoom("__bool__")

    def __repr__(self) -> str:
        return f"LyingInt({int.__repr__(self)})"


limit_values = choice(
    st.integers(-3, 3),
    st.sampled_from((2**53 - 1, 2**53, 2**64, -(2**53), 10**30)),
    st.integers(1, 2**53 - 1),
    st.integers(-3, 2**54).map(LyingInt),
    st.sampled_from((True, False, None, 1.0, 1.5, float("nan"), float("inf"), "1", b"1", [1], {"v": 1}, 1j)),
    st.builds(NonCallableMock),
    st.builds(object),
)


@settings(suppress_health_check=HEALTH)
@given(st.dictionaries(st.sampled_from(LIMIT_NAMES), limit_values))
def test_hostile_limits_are_validated_in_order_without_running_caller_code(given: dict[str, Any]) -> None:
    defaults = {"max_calls": 1000, "max_diagnostics": 100, "max_result_bytes": 1_048_576, "max_message_bytes": 4096,
                "max_id_bytes": 512, "max_name_bytes": 512, "max_code_bytes": 128}  # fmt: skip
    camel = {name: "max" + "".join(part.title() for part in name.split("_")[1:]) for name in LIMIT_NAMES}
    expected_error = None
    expected: dict[str, int] = {}
    for name in LIMIT_NAMES:  # OPT-5: validated in this order, the first invalid one raises
        value = given.get(name)
        if value is None:
            expected[name] = defaults[name]
        elif isinstance(value, int) and not isinstance(value, bool) and 1 <= int.__index__(value) <= 2**53 - 1:
            expected[name] = int.__index__(value)
        else:
            expected_error = f"{camel[name]} must be a positive safe integer"
            break
    if expected_error is not None:
        with pytest.raises(UsageError) as info:
            ToolCallClosure(**given)
        assert type(info.value) is UsageError
        assert (info.value.code, str(info.value)) == ("option_invalid", expected_error)
        return
    closure = ToolCallClosure(**given)
    for name in LIMIT_NAMES:
        stored = getattr(closure.limits, name)
        assert type(stored) is int
        assert stored == expected[name]
    # the instance works with its limits
    env = Env(closure)
    env.execute(start_op(min(3, closure.limits.max_calls)))
    env.execute(("succeed", ("h", "current"), lit("a"), lit("x" * 40)))
    env.execute(("close", ("h", "current"), OMIT))
    assert_clean(env)


def test_an_unknown_option_is_pythons_own_type_error() -> None:
    options: dict[str, Any] = {"max_call": 3}
    with pytest.raises(TypeError, match="unexpected keyword") as info:
        ToolCallClosure(**options)
    assert not isinstance(info.value, ToolCallClosureError)


# --------------------------------------------------------------------------- re-entrance at every caller-code point


def boom_after(nested: Recipe) -> Act:
    return ((nested,), "CallerBoom")


NESTED: dict[str, Recipe] = {
    "settle_same": ("settle", ("h", "current"), lit("a"), ("dict", ((lit("status"), lit("success")), (lit("content"), lit("nested"))))),
    "succeed_other": ("succeed", ("h", "current"), lit("b"), lit("nested")),
    "fail_same": ("fail", ("h", "current"), lit("a"), lit("nested"), OMIT),
    "cancel_same": ("cancel", ("h", "current"), lit("a"), lit("nested"), OMIT),
    "close": ("close", ("h", "current"), OMIT),
    "close_error": ("close", ("h", "current"), ("dict", ((lit("status"), lit("error")), (lit("code"), lit("nested"))))),
    "begin": start_op(3),
    "seal": ("seal", ("h", "current")),
    "snapshot": ("snapshot",),
    "active_generation": ("active_generation",),
    "export_default": ("export", "to_openai_chat_completions", OMIT),
    "export_latest": ("export", "to_anthropic_tool_results", ("s", "latest")),
    "to_json_latest": ("to_json", ("s", "latest")),
}  # fmt: skip

CURRENT = ("h", "current")
SUCCESS_OUTCOME = ("dict", ((lit("status"), lit("success")), (lit("content"), lit(1))))


def _entry(call_id: str) -> Recipe:
    return ("dict", ((lit("id"), lit(call_id)), (lit("name"), lit("t"))))


def _obj(attrs: tuple[tuple[str, Recipe, Act], ...] = (), getattr_act: Act | None = None, str_spec: Any = None,
         json_spec: Any = None, dump_spec: Any = None) -> Recipe:  # fmt: skip
    return ("obj", attrs, getattr_act, str_spec, json_spec, dump_spec)


def _reason_with(field: str, act: Act) -> Recipe:
    values = {"status": lit("error"), "code": lit("E1"), "sideEffectState": lit("not_started"),
              "side_effect_state": lit("not_started"), "message": lit("why")}  # fmt: skip
    return _obj(tuple((name, value, act if name == field else NO_ACT) for name, value in values.items()))


# Every point where the closure runs caller code, as an operation whose hook runs `act`.
POINTS: dict[str, Callable[[Act], Recipe]] = {
    "begin: calls[i]['id'] (Mapping)": lambda act: ("begin", ("list", (("mapping", (("id", lit("a"), act), ("name", lit("t"), NO_ACT)), ()), _entry("b")))),
    "begin: calls[i].name (property)": lambda act: ("begin", ("list", (_entry("a"), _obj((("id", lit("b"), NO_ACT), ("name", lit("t"), act)))))),
    "begin: calls[i].id (__getattr__ absent)": lambda act: ("begin", ("list", (_entry("a"), _obj(getattr_act=act)))),
    "begin: calls[i] dict key __eq__": lambda act: ("begin", ("list", (("dict", ((("sub", "str", "id", (("__eq__", "base", act),)), lit("a")), (lit("name"), lit("t")))),))),
    "begin: calls[i] dataclass field": lambda act: ("begin", ("list", (("dc", (("id", lit("a"), act), ("name", lit("t"), NO_ACT))),))),
    "settle: handle.generation (look-alike)": lambda act: ("settle", ("h", "obj", lit(1), act), lit("a"), SUCCESS_OUTCOME),
    "settle: outcome['status'] (read twice)": lambda act: ("settle", CURRENT, lit("a"), ("mapping", (("status", lit("success"), act), ("content", lit(1), NO_ACT)), ())),
    "settle: outcome.content.__json__": lambda act: ("settle", CURRENT, lit("a"), ("dict", ((lit("status"), lit("success")), (lit("content"), _obj(json_spec=(act, lit(1))))))),
    "settle: content Mapping.items": lambda act: ("settle", CURRENT, lit("a"), ("dict", ((lit("status"), lit("success")), (lit("content"), ("mapping", (("k", lit(1), NO_ACT),), (("items", act),)))))),
    "settle: content Mapping['k']": lambda act: ("settle", CURRENT, lit("a"), ("dict", ((lit("status"), lit("success")), (lit("content"), ("mapping", (("k", lit(1), act),), ()))))),
    "settle: content dataclass field": lambda act: ("settle", CURRENT, lit("a"), ("dict", ((lit("status"), lit("success")), (lit("content"), ("dc", (("f", lit(1), act),)))))),
    "settle: content model_dump": lambda act: ("settle", CURRENT, lit("a"), ("dict", ((lit("status"), lit("success")), (lit("content"), _obj(dump_spec=(act, lit({"x": 1}))))))),
    "settle: outcome.code (property)": lambda act: ("settle", CURRENT, lit("a"), _obj((("status", lit("error"), NO_ACT), ("code", lit("E1"), act)))),
    "settle: outcome.message.__str__": lambda act: ("settle", CURRENT, lit("a"), ("dict", ((lit("status"), lit("cancelled")), (lit("message"), _obj(str_spec=(act, "m")))))),
    "settle: outcome __getattr__ (absent code)": lambda act: ("settle", CURRENT, lit("a"), _obj((("status", lit("error"), NO_ACT),), getattr_act=act)),
    "succeed: content.__json__": lambda act: ("succeed", CURRENT, lit("a"), _obj(json_spec=(act, lit([1, 2])))),
    "succeed: content 1000 deep, hook at the bottom": lambda act: ("succeed", CURRENT, lit("a"), ("deep", "mixed", 1000, _obj(json_spec=(act, lit(1))))),
    "fail: error.__str__ (exception)": lambda act: ("fail", CURRENT, lit("a"), ("exc", "RuntimeError", "boom", act), OMIT),
    "fail: error.__str__ (object)": lambda act: ("fail", CURRENT, lit("a"), _obj(str_spec=(act, "m")), OMIT),
    "cancel: message.__str__": lambda act: ("cancel", CURRENT, lit("a"), _obj(str_spec=(act, "m")), OMIT),
    "cancel: message list element __str__": lambda act: ("cancel", CURRENT, lit("a"), ("list", (lit("x"), _obj(str_spec=(act, "y")))), OMIT),
    "cancel: message exception __str__": lambda act: ("cancel", CURRENT, lit("a"), ("exc", "KeyError", "k", act), OMIT),
    "close: handle.generation (look-alike)": lambda act: ("close", ("h", "obj", lit(1), act), OMIT),
    "close: reason.status": lambda act: ("close", CURRENT, _reason_with("status", act)),
    "close: reason.code": lambda act: ("close", CURRENT, _reason_with("code", act)),
    "close: reason.sideEffectState": lambda act: ("close", CURRENT, _reason_with("sideEffectState", act)),
    "close: reason.side_effect_state": lambda act: ("close", CURRENT, _reason_with("side_effect_state", act)),
    "close: reason.message": lambda act: ("close", CURRENT, _reason_with("message", act)),
    "close: reason.message.__str__": lambda act: ("close", CURRENT, ("dict", ((lit("message"), _obj(str_spec=(act, "m"))),))),
    "close: reason Mapping['status']": lambda act: ("close", CURRENT, ("mapping", (("status", lit("error"), act),), ())),
    "seal: handle.generation (look-alike)": lambda act: ("seal", ("h", "obj", lit(1), act)),
    "to_json: value.__json__": lambda act: ("to_json", _obj(json_spec=(act, lit({"a": [1]})))),
}  # fmt: skip


@pytest.mark.parametrize("point", list(POINTS))
def test_every_caller_code_point_can_reenter_every_operation(point: str) -> None:
    """At each point where caller code runs, re-enter with each operation (then return, or raise CallerBoom)."""
    for name, nested in NESTED.items():
        for act in (((nested,), None), boom_after(nested)):
            env = Env(ToolCallClosure())
            env.execute(start_op())
            env.execute(POINTS[point](act))
            env.execute(POINTS[point](act))  # again, in whatever state the first left
            assert_clean(env)
            assert env.nested_ops >= 1, f"{point} never ran caller code (nested {name})"


# --------------------------------------------------------------------------- depth, size, forgery


DEPTHS = [
    ("list", 10_000),
    ("tuple", 10_000),
    ("dict", 10_000),
    ("mixed", 10_000),
    pytest.param("list", 100_000, marks=pytest.mark.slow),
    pytest.param("mixed", 100_000, marks=pytest.mark.slow),
]
if LONG:
    DEPTHS += [("tuple", 100_000), ("dict", 100_000)]


@pytest.mark.parametrize(("shape", "depth"), DEPTHS)
def test_deeply_nested_values_work_at_any_depth(shape: str, depth: int) -> None:
    """Serialization and String() are iterative: no RecursionError at any depth, and caller code at the bottom
    of a 10**5-deep value can still re-enter."""
    env = Env(ToolCallClosure(max_result_bytes=1_048_576))
    env.execute(start_op())
    deep = ("deep", shape, depth, lit("leaf"))
    text = env.execute(("to_json", deep)).value
    assert type(text) is str
    assert "leaf" in text
    accepted = env.execute(("succeed", CURRENT, lit("a"), deep)).value
    assert type(accepted) is Accepted
    assert accepted.settlement.content == text
    message = env.execute(("cancel", CURRENT, lit("b"), deep, OMIT)).value
    assert type(message) is Accepted
    assert message.settlement.message == ("leaf" if shape in ("list", "tuple") else "[object Object]")
    if depth <= 10_000 or LONG:
        small = Env(ToolCallClosure(max_result_bytes=1000))
        small.execute(start_op())
        too_large = small.execute(("succeed", CURRENT, lit("a"), deep))
        assert type(too_large.error) is LimitError
        circular = env.execute(("succeed", CURRENT, lit("c"), ("deep", shape, depth, ("cycle", "list"))))
        assert type(circular.error) is UsageError
        assert circular.error.code == "content_circular"
        assert_clean(small)
    # a hook at the bottom re-enters and closes the generation: the settlement is fenced
    hook = _obj(json_spec=(((NESTED["close"],), None), lit(1)))
    late = env.execute(("succeed", CURRENT, lit("c"), ("deep", shape, depth, hook)))
    assert type(late.value) is Rejection
    assert late.value.reason == "run_closed"
    assert_clean(env)


def test_huge_strings_respect_every_limit() -> None:
    closure = ToolCallClosure()
    big_id = "é" * 257  # 514 bytes
    for bad_calls in (
        [{"id": big_id, "name": "t"}],
        [{"id": "a", "name": "\ud800" * 171}],
        [{"id": "a", "name": "t"}] * 1001,
    ):
        with pytest.raises(LimitError):
            closure.begin(bad_calls)
    assert closure.snapshot() is None
    assert closure.active_generation is None
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}, {"id": "c", "name": "t"}]).handle
    with pytest.raises(LimitError):
        closure.succeed(handle, "x" * 513, 1)
    with pytest.raises(LimitError):
        closure.succeed(handle, "a", "\ud800" * 349_526)  # 1048578 bytes
    with pytest.raises(LimitError):
        closure.fail(handle, "a", "m", "c" * 129)
    with pytest.raises(LimitError):
        closure.close(handle, {"code": "\U0001f600" * 33})
    result = closure.fail(handle, "a", "\ud800" * 10**6)
    assert type(result) is Accepted
    message = result.settlement.message
    assert type(message) is str
    assert node_utf8_length(message) <= 4096
    assert message.endswith("...")
    result = closure.succeed(handle, "b", "\ud800" * 349_525)  # 1048575 bytes: fits
    assert type(result) is Accepted
    assert result.settlement.content == "\ud800" * 349_525
    snapshot = closure.close(handle, {"message": "😀" * 10**6})
    assert type(snapshot) is Snapshot
    assert snapshot.close_reason is not None
    assert snapshot.close_reason.message is not None
    assert node_utf8_length(snapshot.close_reason.message) <= 4096
    assert '"\\ud800' in to_json(snapshot)  # lone surrogates stay escaped in JSON


def test_forged_handles_never_change_anything() -> None:
    closure = ToolCallClosure()
    other = ToolCallClosure()
    other_handle = other.begin([{"id": "a", "name": "t"}]).handle
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    forged: list[Any] = [
        BatchHandle(generation=1),
        dataclasses.replace(handle),
        {"generation": 1},
        other_handle,
        NonCallableMock(generation=1),
        1,
        "handle",
        None,
        BatchHandle(generation="1"),  # type: ignore[arg-type]
        BatchHandle(generation=2**53),
    ]
    before = to_json(closure.snapshot())
    for index, fake in enumerate(forged):
        for answer in (
            closure.settle(fake, "a", {"status": "success", "content": 1}),
            closure.succeed(fake, "a", 1),
            closure.fail(fake, "a", "x"),
            closure.cancel(fake, "a"),
            closure.close(fake, {"status": "error"}),
            closure.seal(fake),
        ):
            assert type(answer) is Rejection, (index, answer)
            assert answer.reason == "stale_generation", (index, answer)
    after = closure.snapshot()
    assert after is not None
    assert to_json(after) != before
    assert after.calls[0].state == "pending"
    assert not after.closed
    assert closure.active_generation == 1
    assert {d.reason for d in after.diagnostics} == {"stale_generation"}
    untouched = other.snapshot()
    assert untouched is not None
    assert untouched.calls[0].state == "pending"


def test_forged_snapshots_are_refused_unread() -> None:
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    closed = closure.close(handle)
    assert type(closed) is Snapshot
    other = ToolCallClosure()
    other_snapshot = other.close(other.begin([{"id": "a", "name": "t"}]).handle)
    reads: list[str] = []

    class Counting:
        def __getattribute__(self, name: str) -> Any:
            reads.append(name)
            return True if name == "closed" else object.__getattribute__(self, name)

    forged: list[Any] = [dataclasses.replace(closed), other_snapshot, Counting(), closure.fail(handle, "a"),
                         NonCallableMock(spec=Snapshot, closed=True), {"closed": True}]  # fmt: skip
    before = to_json(closure.snapshot())
    for export in (closure.to_openai_chat_completions, closure.to_openai_responses, closure.to_anthropic_tool_results):
        assert len(export(closed)) == 1
        for fake in forged:
            with pytest.raises(UsageError) as info:
                export(fake)
            assert info.value.code == "snapshot_foreign"
    assert reads == []
    assert to_json(closure.snapshot()) == before


# --------------------------------------------------------------------------- the checks can fail (mutants)


def _run_script(closure: ToolCallClosure, ops: list[Recipe]) -> Env:
    env = Env(closure)
    for op in ops:
        env.execute(op)
    return env


def test_checker_catches_a_closure_that_exceeds_max_diagnostics(monkeypatch: pytest.MonkeyPatch) -> None:
    from tool_call_closure.closure import _closure_with_machine

    original = machine_module.Machine._reject

    def unbounded(ctx: Any, compiled: Any) -> Rejection:
        result = original(ctx, compiled)
        ctx.closure._diagnostics.append(ctx.closure._diagnostics[-1])
        return result

    monkeypatch.setattr(machine_module.Machine, "_reject", staticmethod(unbounded))
    walking = _closure_with_machine(machine_module.Machine(machine_module.TABLE, walk=True), max_diagnostics=2)
    env = _run_script(walking, [start_op(), *[("seal", ("h", "forged_current"))] * 3])  # the bug is in the walk
    assert any("maxDiagnostics (I8)" in v for v in env.violations)


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
def test_checker_catches_a_closure_that_wraps_caller_exceptions(monkeypatch: pytest.MonkeyPatch) -> None:
    original = semantics.read_key

    def wrapping(value: object, key: str) -> Any:
        try:
            return original(value, key)
        except CallerBoom as exc:
            raise RuntimeError("wrapped") from exc

    monkeypatch.setattr(semantics, "read_key", wrapping)
    outcome = ("mapping", (("status", lit("success"), ((), "CallerBoom")),), ())
    env = _run_script(ToolCallClosure(), [start_op(), ("settle", CURRENT, lit("a"), outcome)])
    assert any("internal error RuntimeError" in v for v in env.violations)


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
def test_checker_catches_snapshots_that_change_later(monkeypatch: pytest.MonkeyPatch) -> None:
    class LiveCalls(Sequence[Any]):
        """The run's calls as they are *now*, at every read: a snapshot that is not a copy."""

        def __init__(self, run: Any) -> None:
            self.run = run

        def __getitem__(self, index: Any) -> Any:
            return call_views(self.run.calls)[index]

        def __len__(self) -> int:
            return len(self.run.calls)

    def live(closure: ToolCallClosure, run: Any = None) -> Snapshot:
        run = closure._run if run is None else run
        assert run is not None
        snapshot = Snapshot(run.generation, run.state in closure._machine.closed, None,
                            LiveCalls(run), ())  # type: ignore[arg-type]  # fmt: skip
        closure._records[id(snapshot)] = SnapshotRecord(snapshot, snapshot.closed, tuple(run.calls), closure._records)
        return snapshot

    monkeypatch.setattr(semantics, "take_snapshot", live)
    env = _run_script(ToolCallClosure(), [start_op(), ("snapshot",), ("succeed", CURRENT, lit("a"), lit(1))])
    assert any("(I3)" in v for v in env.violations)


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
def test_checker_catches_a_raising_operation_that_changed_the_state(monkeypatch: pytest.MonkeyPatch) -> None:
    closure = ToolCallClosure()
    original = semantics.bounded_string

    def leaky(value: object, limit: int, argument: str, index: int = -1) -> str:
        if argument == "name" and closure._run is not None:
            closure._diagnostics.append(("run_closed", None, None, None))  # a diagnostic record
        return original(value, limit, argument, index)

    monkeypatch.setattr(semantics, "bounded_string", leaky)  # the blank name below is checked by it, and refused
    bad = ("begin", ("list", (("dict", ((lit("id"), lit("x")), (lit("name"), lit("")))),)))
    env = _run_script(closure, [start_op(), bad])
    assert any("raised UsageError and changed the state" in v for v in env.violations)


@pytest.mark.pure_machine  # patches the semantics or steps through Python frames (see conftest.py)
def test_checker_catches_caller_code_run_under_the_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    closure = ToolCallClosure()
    original = semantics.read_key

    def locked(value: object, key: str) -> Any:
        with closure._lock:
            return original(value, key)

    monkeypatch.setattr(semantics, "read_key", locked)
    outcome = ("mapping", (("status", lit("success"), NO_ACT), ("content", lit(1), NO_ACT)), ())
    env = _run_script(closure, [start_op(), ("settle", CURRENT, lit("a"), outcome)])
    assert any("lock was held" in v for v in env.violations)


# --------------------------------------------------------------------------- defects found by this fuzzing, now fixed


class Lying(str):
    """A str subclass that claims to be short ASCII whatever it holds."""

    def isascii(self) -> bool:
        return True

    def __len__(self) -> int:
        return 0


def test_fail_stores_the_plain_bounded_text_of_an_exception_whose_str_returns_a_subclass() -> None:
    closure = ToolCallClosure(max_message_bytes=8)
    handle = closure.begin([{"id": "a", "name": "t"}]).handle

    class Hostile(Exception):  # noqa: N818 - a caller's exception class
        def __str__(self) -> str:
            return Lying("x" * 100_000)

    result = closure.fail(handle, "a", Hostile())
    assert type(result) is Accepted
    message = result.settlement.message
    assert type(message) is str
    assert node_utf8_length(message) <= 8


def test_cancel_stores_the_plain_bounded_name_of_an_exception_with_empty_text() -> None:
    closure = ToolCallClosure(max_message_bytes=8)
    handle = closure.begin([{"id": "a", "name": "t"}]).handle

    class Nameless(Exception):  # noqa: N818 - a caller's exception class
        def __str__(self) -> str:
            return ""

    Nameless.__name__ = Lying("N" * 1000)
    result = closure.cancel(handle, "a", Nameless())
    assert type(result) is Accepted
    assert type(result.settlement.message) is str
    assert node_utf8_length(result.settlement.message) <= 8


class Spoof:
    """Claims a built-in class through ``__class__`` (as ``unittest.mock`` specs do); it is none of them."""

    def __init__(self, claimed: type) -> None:
        self._claimed = claimed

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        claimed: type = object.__getattribute__(self, "_claimed")
        return claimed


def _spoof_cases() -> Iterator[Any]:
    def case(name: str, action: Callable[[ToolCallClosure, BatchHandle], object]) -> Any:
        return pytest.param(action, id=name)

    yield case("callId claims str", lambda c, h: c.succeed(h, Spoof(str), 1))
    yield case("callId is Mock(spec=str)", lambda c, h: c.succeed(h, NonCallableMock(spec=str), 1))
    yield case("calls[0].id claims str", lambda c, h: c.begin([{"id": Spoof(str), "name": "t"}]))
    yield case("calls claims list", lambda c, h: c.begin(Spoof(list)))
    yield case("calls[0] claims dict", lambda c, h: c.begin([Spoof(dict)]))
    yield case("outcome.status claims str", lambda c, h: c.settle(h, "a", {"status": Spoof(str)}))
    yield case("outcome claims dict", lambda c, h: c.settle(h, "a", Spoof(dict)))
    yield case("content claims int", lambda c, h: c.succeed(h, "a", Spoof(int)))
    yield case("content claims list", lambda c, h: c.succeed(h, "a", Spoof(list)))
    yield case("content claims dict", lambda c, h: c.succeed(h, "a", Spoof(dict)))
    yield case("message claims str", lambda c, h: c.cancel(h, "a", Spoof(str)))
    yield case("message claims int", lambda c, h: c.cancel(h, "a", Spoof(int)))
    yield case("message claims tuple", lambda c, h: c.cancel(h, "a", Spoof(tuple)))
    yield case("reason claims dict", lambda c, h: c.close(h, Spoof(dict)))
    yield case("reason.code claims str", lambda c, h: c.close(h, {"code": Spoof(str)}))
    spoofed_int: Any = Spoof(int)
    yield case("look-alike handle generation claims int", lambda c, h: c.settle(BatchHandle(spoofed_int), "a", {}))
    yield case("limit claims int", lambda c, h: ToolCallClosure(max_calls=Spoof(int)))  # type: ignore[arg-type]
    yield case("to_json value claims str", lambda c, h: to_json(Spoof(str)))


@pytest.mark.parametrize("action", list(_spoof_cases()))
def test_an_object_claiming_a_builtin_class_is_never_an_internal_error(
    action: Callable[[ToolCallClosure, BatchHandle], object],
) -> None:
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    before = to_json(closure.snapshot())
    error: ToolCallClosureError | None = None
    try:
        action(closure, handle)
    except ToolCallClosureError as exc:
        error = exc
    # any other exception fails the test: it is neither documented nor raised by caller code
    assert error is None or type(error) in (UsageError, LimitError)
    assert error is None or to_json(closure.snapshot()) == before


def test_a_non_callable_json_attribute_is_not_an_internal_error() -> None:
    class NotAHook:
        __json__ = "not callable"

    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    for action in (lambda: to_json(NotAHook()), lambda: closure.succeed(handle, "a", NotAHook())):
        error: ToolCallClosureError | None = None
        try:
            action()
        except ToolCallClosureError as exc:
            error = exc
        assert error is None or type(error) is UsageError


# --------------------------------------------------------------------------- misc


def test_mappings_that_raise_key_and_attribute_errors_are_read_by_the_documented_rule() -> None:
    """§3: a KeyError from a mapping / an AttributeError from an attribute means absent; the other way round
    (and every other exception) propagates unchanged."""
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle

    class Raising(Mapping[str, Any]):
        def __init__(self, error: BaseException) -> None:
            self.error = error

        def __getitem__(self, key: str) -> Any:
            if key == "status":
                return "error"
            raise self.error

        def __iter__(self) -> Iterator[str]:
            return iter(["status"])

        def __len__(self) -> int:
            return 1

    class Attributes:
        status = "error"

        def __init__(self, error: BaseException) -> None:
            self.error = error

        def __getattr__(self, name: str) -> Any:
            raise object.__getattribute__(self, "error")

    from hostile import CallerAttributeError, CallerKeyError

    absent = closure.settle(handle, "a", Raising(CallerKeyError("code")))
    assert type(absent) is Accepted
    assert absent.settlement.code == "error"
    with pytest.raises(CallerAttributeError):
        closure.settle(handle, "b", Raising(CallerAttributeError("code")))
    with pytest.raises(CallerKeyError):
        closure.settle(handle, "b", Attributes(CallerKeyError("code")))
    accepted = closure.settle(handle, "b", Attributes(CallerAttributeError("code")))
    assert type(accepted) is Accepted
    assert accepted.settlement.message == "Tool call failed."


def test_hooks_in_another_thread_do_not_see_the_lock_held() -> None:
    """The fuzzer's lock check is meaningful only if the lock is really free while caller code runs."""
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}]).handle
    seen: list[bool] = []

    class Message:
        def __str__(self) -> str:
            seen.append(closure._lock._is_owned())
            worker = threading.Thread(target=closure.snapshot)
            worker.start()
            worker.join(timeout=10)
            seen.append(worker.is_alive())
            return "m"

    assert type(closure.cancel(handle, "a", Message())) is Accepted
    assert seen == [False, False]
