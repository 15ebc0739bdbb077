"""Bounded serialization and the edges of the ECMAScript conversions (issue 10, issue 11).

* **Budgets.**  Content is serialized with ``max_result_bytes`` as a budget and messages with
  ``max_message_bytes``: the work stops at the first byte past the limit (content) or once the
  prefix that truncation keeps is known (messages).  The checks count work, never time: how
  often a leaf's caller code runs, how many bytes ``tracemalloc`` saw at the peak.  Each
  bounded result is compared with the unbounded definition (``truncate_utf8(to_js_string(v))``,
  ``json_stringify(v)`` then the byte check) on generated values.
* **The C json fast path** gives exactly the general walk's text, on generated values, and is
  taken for plain data (``_is_plain_json``); a Node sample pins it against ``JSON.stringify``.
* **The join stack** survives an exception at any point of a join (an injected one, and a real
  ``RecursionError`` near the stack's end).
* **Caller code that breaks Python's protocols** (a ``__str__`` returning a non-str, a mapping whose
  ``items()`` is not iterable) never surfaces as a bare built-in exception; a ``__class__``
  property is never consulted; a huge int converts to its digits in a message.
"""

from __future__ import annotations

import math
import sys
import tracemalloc
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tool_call_closure.ecma as ecma
import tool_call_closure.ecma_json as ecma_json
import tool_call_closure.ecma_plain as ecma_plain
from test_ecma import NODE, node_eval, requires_node, trees
from tool_call_closure import LimitError, ToolCallClosure, UsageError
from tool_call_closure.ecma import python_text, to_js_string, to_js_string_truncated, truncate_utf8
from tool_call_closure.ecma_json import json_stringify

TOO_LARGE = "result content exceeds maxResultBytes ({})"


def shared_pairs(leaf: object, depth: int) -> list[Any]:
    """A list holding one shared list twice, ``depth`` levels deep: 2**depth leaves from a few hundred bytes."""
    value: list[Any] = [leaf]
    for _ in range(depth):
        value = [value, value]
    return value


class CountingLeaf:
    """A leaf whose caller code counts how often it runs (``__json__`` and ``__str__``)."""

    runs = 0

    def __json__(self) -> str:
        CountingLeaf.runs += 1
        return "aaaaaaaaaa"

    def __str__(self) -> str:
        CountingLeaf.runs += 1
        return "aaaaaaaaaa"


@pytest.fixture
def leaf() -> CountingLeaf:
    CountingLeaf.runs = 0
    return CountingLeaf()


def one_call(**limits: int) -> tuple[ToolCallClosure, Any]:
    closure = ToolCallClosure(**limits)
    return closure, closure.begin([{"id": "a", "name": "t"}]).handle


def peak_bytes(action: Any) -> int:
    """The tracemalloc peak while ``action()`` runs (its exception, if any, is swallowed)."""
    tracemalloc.start()
    try:
        action()
    except (LimitError, UsageError):
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


# --------------------------------------------------------------------------- #
# content: the byte limit is a budget (NORM-8, deviation D18)
# --------------------------------------------------------------------------- #


def test_NORM_8_succeed_of_shared_pairs_stops_at_the_budget(leaf: CountingLeaf) -> None:
    """2**18 leaves would be written; a budget of 10,000 bytes admits at most 10,000 / 12 of them."""
    closure, handle = one_call(max_result_bytes=10_000)
    with pytest.raises(LimitError, match=TOO_LARGE.format(10_000).replace("(", r"\(").replace(")", r"\)")):
        closure.succeed(handle, "a", shared_pairs(leaf, 18))
    assert leaf.runs <= 10_000 // len('"aaaaaaaaaa"') + 1
    assert closure.snapshot().calls[0].state == "pending"  # type: ignore[union-attr]


def test_NORM_8_succeed_of_plain_shared_pairs_has_memory_bounded_by_the_limit() -> None:
    """The case of issue 10 (22 levels: 6 s and 1.2 GB before): the peak stays within a small multiple of the limit."""
    value = shared_pairs("a" * 10, 22)
    closure, handle = one_call(max_result_bytes=100_000)
    assert peak_bytes(lambda: closure.succeed(handle, "a", value)) < 2_000_000


def test_NORM_8_settle_success_content_is_budgeted_too(leaf: CountingLeaf) -> None:
    closure, handle = one_call(max_result_bytes=1_000)
    with pytest.raises(LimitError):
        closure.settle(handle, "a", {"status": "success", "content": shared_pairs(leaf, 16)})
    assert leaf.runs <= 1_000 // 12 + 1


def test_NORM_8_budget_counts_utf8_bytes_exactly() -> None:
    """The budget is the stored text's UTF-8 length: €-strings (3 bytes each) and surrogates (escape or pair)."""
    for value, size in (
        (["€€"], len('["€€"]'.encode())),
        ({"k": "\ud800"}, len('{"k":"\\ud800"}')),
        (["\ud83d\ude00", 1], len('["😀",1]'.encode())),
        ([[1, 2.5], {"x": None}], len('[[1,2.5],{"x":null}]')),
    ):
        assert json_stringify(value, size) == json_stringify(value)
        with pytest.raises(LimitError) as info:
            json_stringify(value, size - 1)
        assert info.value.code == "content_too_large"


def test_NORM_8_budget_stops_before_later_errors_and_hooks() -> None:
    """D18: parts past the first byte over the limit are not visited (the original serializes them first)."""

    class Later:
        def __json__(self) -> object:
            raise AssertionError("a hook past the budget ran")

    with pytest.raises(LimitError):
        json_stringify(["x" * 20, Later()], 10)
    with pytest.raises(LimitError):
        json_stringify(["x" * 20, {1, 2}], 10)  # a set would be content_not_serializable
    with pytest.raises(UsageError):
        json_stringify(["x" * 20, {1, 2}], 100)  # within the budget the error is reached as before


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees, st.integers(0, 80))
def test_NORM_8_budgeted_text_is_the_unbounded_text_or_too_large(value: Any, limit: int) -> None:
    text = json_stringify(value)
    if len(text.encode("utf-8")) <= limit:
        assert json_stringify(value, limit) == text
    else:
        with pytest.raises(LimitError):
            json_stringify(value, limit)
        with pytest.raises(LimitError):
            ecma_json._json_walk(value, limit, limit)  # the general walk alone, on the same budget


# --------------------------------------------------------------------------- #
# messages: only the prefix truncation keeps is computed (NORM-6, NORM-7, D18)
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("operation", ["fail", "cancel", "settle", "close"])
def test_NORM_6_message_of_shared_pairs_converts_only_the_kept_prefix(operation: str, leaf: CountingLeaf) -> None:
    closure, handle = one_call(max_message_bytes=100)
    message = shared_pairs(leaf, 18)
    if operation == "fail":
        result: Any = closure.fail(handle, "a", message)
    elif operation == "cancel":
        result = closure.cancel(handle, "a", message)
    elif operation == "settle":
        result = closure.settle(handle, "a", {"status": "error", "message": message})
    else:
        result = closure.close(handle, {"message": message})
    text = result.close_reason.message if operation == "close" else result.settlement.message
    assert text == ("aaaaaaaaaa," * 10)[:97] + "..."
    assert leaf.runs <= 100 // 11 + 2


def test_NORM_6_message_of_plain_shared_pairs_has_bounded_memory() -> None:
    closure, handle = one_call()
    assert peak_bytes(lambda: closure.fail(handle, "a", shared_pairs("a" * 10, 22))) < 200_000


message_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(),
        st.lists(st.sampled_from(["a", "é", "€", "😀", "\ud83d", "\ude00", "\ud800", ",", ""]), max_size=6).map(
            "".join
        ),
    ),
    lambda children: st.lists(children, max_size=5) | st.tuples(children, children),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_values, st.integers(0, 40))
def test_NORM_7_bounded_conversion_truncates_like_the_whole_text(value: Any, limit: int) -> None:
    """The prefix rule: truncating a prefix of at least limit + 2 characters equals truncating the whole text."""
    assert to_js_string_truncated(value, limit) == truncate_utf8(to_js_string(value), limit)


def test_NORM_7_prefix_cut_inside_a_surrogate_pair() -> None:
    """The character at the cut may be half of a pair: 😀 as two code points straddling limit + 2."""
    for limit in range(12):
        for pad in range(6):
            value = ["a" * pad + "\ud83d\ude00" * 4, "b"]
            assert to_js_string_truncated(value, limit) == truncate_utf8(to_js_string(value), limit)


def test_NORM_7_untruncated_message_is_kept_verbatim() -> None:
    """A text that fits is returned as is, lone surrogates included (18.7)."""
    assert to_js_string_truncated(["a\ud800", "b"], 10) == "a\ud800,b"
    text = "x\ud800y"
    assert to_js_string_truncated(text, 10) is text


def test_JS_9_huge_int_message_converts_to_its_leading_digits() -> None:
    """A 5,000-digit int as a message is its digits, truncated (it was "result content must be JSON-serializable")."""
    closure, handle = one_call()
    huge = 10**4999 * 7
    accepted: Any = closure.fail(handle, "a", huge)
    assert accepted.settlement.message == "7" + "0" * 4092 + "..."
    assert to_js_string_truncated(-huge, 5) == "-7..."
    assert to_js_string_truncated([1, huge], 8) == "1,700..."
    closure, handle = one_call(max_message_bytes=10_000)
    assert closure.cancel(handle, "a", huge).settlement.message == "7" + "0" * 4999  # type: ignore[union-attr]


def test_JS_9_huge_int_after_a_comma_at_the_cut_keeps_its_leading_digit() -> None:
    """Only the leading digits of a huge int are computed, and always at least one, at every cut point."""
    huge = 7 * 10**6000 + 123
    for limit in range(30):
        value = ["ab", huge, "c"]
        assert to_js_string_truncated(value, limit) == truncate_utf8(to_js_string(value), limit)


# --------------------------------------------------------------------------- #
# the join stack (JS-9): no exception can leave an array registered
# --------------------------------------------------------------------------- #


def test_JS_9_join_stack_survives_an_exception_before_the_walk_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception right after an array is registered (issue 10: a RecursionError there poisoned the thread)."""
    pair = ["a", "b"]
    real = ecma._sequence_iter
    calls = 0

    def failing_once(value: Any) -> Iterator[Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RecursionError("injected")
        return real(value)

    monkeypatch.setattr(ecma, "_sequence_iter", failing_once)
    with pytest.raises(RecursionError):
        to_js_string(pair)
    assert to_js_string(pair) == "a,b"
    calls = 1 - 2  # fail on the nested array this time (the second call)
    nested = ["x", pair]
    with pytest.raises(RecursionError):
        to_js_string(nested)
    assert to_js_string(nested) == "x,a,b"
    assert to_js_string(pair) == "a,b"
    assert not ecma._join_stack.active


def test_JS_9_join_stack_survives_recursion_errors_at_every_depth() -> None:
    """A real RecursionError near the end of the stack, at each depth in turn; afterwards fail stores 'a,b'."""
    pair = ["a", "b"]
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:

        def descend(depth: int) -> None:
            try:  # noqa: SIM105  (plain try: a context manager's __exit__ is one more call near the limit)
                to_js_string([pair, [pair]])
            except RecursionError:
                pass
            if depth:
                try:  # noqa: SIM105
                    descend(depth - 1)
                except RecursionError:
                    pass

        for start in range(0, 200, 7):
            try:  # noqa: SIM105
                descend(start)
            except RecursionError:
                pass
    finally:
        sys.setrecursionlimit(limit)
    assert not ecma._join_stack.active
    closure, handle = one_call()
    assert closure.fail(handle, "a", pair).settlement.message == "a,b"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- #
# no recursion limit at any depth (library side)
# --------------------------------------------------------------------------- #


def test_deep_content_message_and_args_through_the_closure() -> None:
    deep: Any = "leaf"
    for _ in range(20_000):
        deep = [deep]
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t", "arguments": deep}, {"id": "b", "name": "t"}]).handle
    assert closure.succeed(handle, "a", deep).settlement.content == "[" * 20_000 + '"leaf"' + "]" * 20_000  # type: ignore[union-attr]
    assert closure.fail(handle, "b", deep).settlement.message == "leaf"  # type: ignore[union-attr]


# --------------------------------------------------------------------------- #
# caller code that breaks Python's protocols
# --------------------------------------------------------------------------- #


class Returns:
    """An object whose ``__str__`` returns ``result`` (a non-str: Python's str() would raise TypeError)."""

    def __init__(self, result: object) -> None:
        self.result = result

    def __str__(self) -> str:
        return self.result  # type: ignore[return-value]


class NonStrTextError(Exception):
    def __str__(self) -> str:
        return 5  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Returns(5), "5"),
        (Returns(None), "null"),
        (Returns(True), "true"),
        (Returns(1e21), "1e+21"),
        (Returns([1, None, "x"]), "1,,x"),
        (Returns({"a": 1}), "[object Object]"),
        (Returns(Returns("inner")), "[object Object]"),  # its __str__ is not consulted again
        (NonStrTextError(), "NonStrTextError: 5"),
        (ValueError(Returns(7)), "ValueError: 7"),
    ],
)
def test_JS_9_str_returning_a_non_str_converts_its_result(value: object, expected: str) -> None:
    """JavaScript converts a primitive returned by toString in turn; Python would raise a bare TypeError."""
    assert to_js_string(value) == expected
    closure, handle = one_call()
    assert closure.cancel(handle, "a", value).settlement.message == expected  # type: ignore[union-attr]


def test_JS_9_a_str_returning_self_does_not_loop() -> None:
    class Selfish:
        def __str__(self) -> str:
            return self  # type: ignore[return-value]

    assert to_js_string(Selfish()) == "[object Object]"


def test_D3_fail_reads_the_text_of_an_exception_that_returns_a_non_str() -> None:
    closure = ToolCallClosure()
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    assert closure.fail(handle, "a", NonStrTextError()).settlement.message == "5"  # type: ignore[union-attr]
    assert closure.fail(handle, "b", ValueError(Returns(None))).settlement.message == "null"  # type: ignore[union-attr]
    assert python_text(RuntimeError()) == ""
    assert python_text(RuntimeError("a", 2)) == "('a', 2)"


def test_JS_9_a_non_callable_str_is_no_text_of_its_own() -> None:
    """``__str__ = None`` (str() would raise a bare TypeError): an object without a toString of its own."""

    class NoStr:
        __str__ = None

    class NoStrError(Exception):
        __str__ = None

    assert to_js_string(NoStr()) == "[object Object]"
    assert to_js_string(NoStrError("x")) == "NoStrError"
    assert python_text(NoStrError("x")) == ""


def test_caller_exceptions_from_str_still_propagate_unchanged() -> None:
    class Raises:
        def __str__(self) -> str:
            raise TypeError("the caller's own")

    closure, handle = one_call()
    with pytest.raises(TypeError, match="the caller's own") as info:
        closure.cancel(handle, "a", Raises())
    assert type(info.value) is TypeError
    with pytest.raises(TypeError, match="the caller's own"):
        closure.fail(handle, "a", ValueError(Raises()))


def _reprs() -> list[Any]:
    a: list[Any] = [1]
    a.append(a)
    d: dict[str, Any] = {}
    d["self"] = d
    t: tuple[list[Any]] = ([],)
    t[0].append(t)
    return [
        [1, [2, (3,)], {"a": (1, 2), 5: None, (1, "x"): [True, 1.5, -0.0]}],
        (),
        (1,),
        [],
        {},
        "it's",
        ["\ud800", "é", 'q"'],
        10**30,
        a,
        d,
        t,
    ]


@pytest.mark.parametrize("value", _reprs())
def test_D3_exception_text_of_containers_is_pythons_repr(value: Any) -> None:
    """fail's error text is str(error); for a container argument that is Python's repr, written iteratively."""
    for error in (ValueError(value), KeyError(value), RuntimeError(value, 2)):
        assert python_text(error) == str(error)
    assert python_text(value) == str(value)
    for limit in range(0, 40, 3):
        assert ecma.python_text_truncated(ValueError(value), limit) == truncate_utf8(str(ValueError(value)), limit)


def test_D3_exception_text_of_deep_and_shared_arguments_is_bounded() -> None:
    """ValueError(deep) made str() raise RecursionError; ValueError(shared pairs) expanded in full."""
    deep: Any = 1
    for _ in range(20_000):
        deep = [deep]
    closure = ToolCallClosure(max_message_bytes=20)
    handle = closure.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]).handle
    assert closure.fail(handle, "a", ValueError(deep)).settlement.message == "[" * 17 + "..."  # type: ignore[union-attr]
    ReprLeaf.runs = 0
    message = closure.fail(handle, "b", ValueError(shared_pairs(ReprLeaf(), 20))).settlement.message  # type: ignore[union-attr]
    assert message == "[" * 17 + "..."
    assert ReprLeaf.runs == 1  # of 2**20 leaves: only the first is reached before the kept prefix is known


class ReprLeaf:
    runs = 0

    def __repr__(self) -> str:
        ReprLeaf.runs += 1
        return "leaf"


def test_D3_huge_int_argument_converts_to_its_digits() -> None:
    closure, handle = one_call(max_message_bytes=10)
    assert closure.fail(handle, "a", ValueError(10**5000)).settlement.message == "1000000..."  # type: ignore[union-attr]


class ItemsNotIterable(Mapping[str, int]):
    def __getitem__(self, key: str) -> int:
        return 1

    def __iter__(self) -> Iterator[str]:
        return iter(["a"])

    def __len__(self) -> int:
        return 1

    def items(self) -> Any:
        return 42


def test_NORM_8_mapping_whose_items_is_not_iterable_is_not_serializable() -> None:
    closure, handle = one_call()
    with pytest.raises(UsageError, match="result content must be JSON-serializable or a string") as info:
        closure.succeed(handle, "a", {"m": ItemsNotIterable()})
    assert info.value.code == "content_not_serializable"
    assert "items() returning int" in " ".join(info.value.__notes__)


def test_NORM_8_items_raising_propagates_unchanged() -> None:
    class ItemsRaise(ItemsNotIterable):
        def items(self) -> Any:
            raise KeyError("caller")

    with pytest.raises(KeyError, match="caller"):
        json_stringify(ItemsRaise())


# --------------------------------------------------------------------------- #
# types by type() only (spec §3): a __class__ property is never consulted
# --------------------------------------------------------------------------- #


class Claims:
    """A plain object whose ``__class__`` property claims ValueError (and records that it ran)."""

    consulted = 0

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        Claims.consulted += 1
        return ValueError

    def __str__(self) -> str:
        return "plain object"


def test_JS_9_a_claimed_class_is_not_trusted_by_string_conversion() -> None:
    Claims.consulted = 0
    assert to_js_string(Claims()) == "plain object"  # not 'Claims: plain object'
    closure, handle = one_call()
    assert closure.cancel(handle, "a", Claims()).settlement.message == "plain object"  # type: ignore[union-attr]
    closure, handle = one_call()
    assert closure.fail(handle, "a", Claims()).settlement.message == "plain object"  # type: ignore[union-attr]
    assert Claims.consulted == 0


def test_NORM_8_a_claimed_class_is_not_trusted_by_serialization() -> None:
    Claims.consulted = 0
    with pytest.raises(UsageError):
        json_stringify([Claims()])
    assert Claims.consulted == 0


# --------------------------------------------------------------------------- #
# the C json fast path (issue 11): the same text as the general walk
# --------------------------------------------------------------------------- #


def _general(value: Any) -> str:
    return ecma_json._json_walk(value, sys.maxsize, None)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees)
def test_NORM_8_fast_path_and_general_walk_agree(value: Any) -> None:
    assert json_stringify(value) == _general(value)


plain_keys = st.text(min_size=0, max_size=6).filter(lambda key: not ("0" <= key < ":"))
plain_floats = (st.floats(1e-4, 1e15) | st.floats(-1e15, -1e-4)).filter(
    lambda x: "e" not in repr(x) and not repr(x).endswith(".0")  # nearly all of them: Python's plain layout
)
plain_trees = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**53) + 1, 2**53 - 1), plain_floats, st.text(max_size=8)),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(plain_keys, children, max_size=5),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain_trees)
def test_NORM_8_plain_data_takes_the_fast_path_with_the_same_text(value: Any) -> None:
    assert ecma_plain._is_plain_json(value, sys.maxsize)
    assert json_stringify(value) == _general(value)


@pytest.mark.parametrize(
    "value",
    [
        [1.0],  # JS writes 1
        [-0.0],  # JS writes 0
        [1e16],  # JS writes 10000000000000000
        [1e-7],  # JS writes 1e-7, Python 1e-07
        [math.nan],  # JS writes null
        {"1": 1, "a": 2},  # JS writes the array index key first
        {1: 2},  # not a str key
        [2**53],  # beyond the safe bound
        [True, {"a": [1, ...]}],  # not JSON data
        [[1]] * 2,  # a shared list
    ],
)
def test_NORM_8_fast_path_refuses_values_it_would_write_differently(value: Any) -> None:
    assert not ecma_plain._is_plain_json(value, sys.maxsize)


def test_NORM_8_fast_path_refuses_deep_nesting() -> None:
    deep: Any = 1
    for _ in range(ecma_plain._PLAIN_DEPTH + 1):
        deep = [deep]
    assert not ecma_plain._is_plain_json(deep, sys.maxsize)
    assert json_stringify(deep) == "[" * (ecma_plain._PLAIN_DEPTH + 1) + "1" + "]" * (ecma_plain._PLAIN_DEPTH + 1)


@requires_node
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(plain_trees, min_size=40, max_size=40))
def test_node_fast_path_matches_json_stringify(values: list[Any]) -> None:
    """A sample of plain data, all on the fast path, against Node's JSON.stringify."""
    assert NODE is not None
    assert all(ecma_plain._is_plain_json(value, sys.maxsize) for value in values)
    expected = node_eval([("json", value) for value in values])
    assert [json_stringify(value) for value in values] == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plain_trees)
def test_NORM_8_plain_json_text_is_the_walks_text_within_its_byte_budget(value: Any) -> None:
    """``plain_json_text``: the general walk's text for plain data; never a text past the budget.

    (At the exact budget it may still answer ``None``: its bound of the length is a lower bound counted
    per container, which json_stringify's walk then refines; ``None`` only says "not decided here".)
    """
    text = _general(value)
    size = len(text.encode("utf-8"))
    assert ecma_plain.plain_json_text(value, sys.maxsize) == text
    assert ecma_plain.plain_json_text(value, size) in (text, None)
    assert ecma_plain.plain_json_text(value, size - 1) is None
    if _written_in_one_pass(value, ecma_plain._OBJECT_TEXT_DEPTH):
        assert ecma_plain.plain_json_text(value, size) == text  # an object of scalars and such objects: decided


def _written_in_one_pass(value: Any, depth: int) -> bool:
    """Is ``value`` what ``ecma_plain._object_text`` writes: a dict of scalars (not floats) and, ``depth`` deep, such dicts?"""
    return type(value) is dict and all(
        type(member) not in (dict, list, tuple, float)
        or (type(member) is dict and depth > 0 and _written_in_one_pass(member, depth - 1))
        for member in value.values()
    )


def test_NORM_8_objects_of_objects_are_written_in_one_pass_down_to_a_depth() -> None:
    """A synthetic error's ``{"error": {…}}`` is decided in one pass; deeper nesting, or a cycle, goes on to the plain path."""
    error = {"error": {"code": "timeout", "message": "dead\u2028line", "side_effect_state": "unknown"}}
    assert ecma_plain._object_text(error, sys.maxsize) == json_stringify(error)
    deep: Any = {"leaf": 1}
    for level in range(ecma_plain._OBJECT_TEXT_DEPTH + 1):
        deep = {f"level{level}": deep}
    assert ecma_plain._object_text(deep, sys.maxsize) is None  # one level too deep for the one pass …
    assert ecma_plain.plain_json_text(deep, sys.maxsize) == _general(deep)  # … and still plain data
    circular: dict[str, Any] = {}
    circular["self"] = circular
    assert ecma_plain._object_text(circular, sys.maxsize) is None
    assert ecma_plain.plain_json_text(circular, sys.maxsize) is None
    size = len(json_stringify(error).encode("utf-8"))
    assert ecma_plain._object_text(error, size) is not None
    assert ecma_plain.plain_json_text(error, size - 1) is None  # the nested object is given what is left of the budget


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trees)
def test_NORM_8_plain_json_text_answers_the_walks_text_or_none(value: Any) -> None:
    found = ecma_plain.plain_json_text(value, sys.maxsize)
    assert found is None or found == _general(value)


def test_NORM_8_plain_json_text_runs_no_caller_code() -> None:
    """It decides by exact types only: a subclass or an object with hooks is refused unread."""
    touched: list[str] = []

    class Items(dict[str, Any]):
        def items(self) -> Any:
            touched.append("items")
            return super().items()

    class Hooked:
        def __json__(self) -> Any:
            touched.append("__json__")
            return 1

    class Text(str):
        def __str__(self) -> str:
            touched.append("__str__")
            return "x"

    for value in (Items(a=1), {"a": Hooked()}, [Text("t")], {"a": [1, {"b": Items()}]}):
        assert ecma_plain.plain_json_text(value, sys.maxsize) is None
    assert touched == []
