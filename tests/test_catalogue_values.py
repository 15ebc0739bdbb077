"""Catalogue rules NORM-1..8, CLO-1..7, RE-1..11 and JS-1..15, tested through the public API.

Every expected value is written by hand from the behaviour catalogue of the original
(``/work/shared/reference/seed-behavior.md``, sections 8, 9, 13 and 16) and was checked against the original
with ``node -e``.  The JavaScript examples are mapped as ``spec/README.md`` section 3 says: ``undefined`` is an
argument that is not passed, ``null`` is ``None``, objects are dicts, getters are properties or a custom
``Mapping`` whose ``__getitem__`` runs code (and counts reads), ``toString``/``Symbol.toPrimitive`` is
``__str__``, ``toJSON`` is ``__json__``, an ``Error`` is an exception and a JavaScript String object is a
``str`` subclass (deviation D5).  Where the reference deliberately differs (deviations D1..D7), the test
asserts the reference's documented behaviour and says so; ``tests/test_deviations.py`` shows the difference.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from tool_call_closure import (
    Accepted,
    BatchHandle,
    BeginResult,
    CallSnapshot,
    CloseReason,
    Diagnostic,
    LimitError,
    Rejection,
    Settlement,
    Snapshot,
    ToolCallClosure,
    ToolCallClosureError,
    UsageError,
    to_json,
)

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

# --------------------------------------------------------------------------- helpers


class Get:
    """A getter: the ``Getters`` member given as ``Get(fn)`` runs ``fn()`` on every read."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn


def sequence(*values: Any) -> Get:
    """A getter that answers ``values`` in turn, one per read."""
    answers = iter(values)
    return Get(lambda: next(answers))


class Getters(Mapping[str, Any]):
    """A JavaScript object with getters: a custom Mapping whose reads run code and are logged.

    ``log`` lists every key the implementation asked for, in order, present or not.
    """

    def __init__(self, **members: Any) -> None:
        self._members = members
        self.log: list[str] = []

    def __getitem__(self, key: str) -> Any:
        self.log.append(key)
        if key not in self._members:
            raise KeyError(key)
        value = self._members[key]
        return value.fn() if isinstance(value, Get) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def reads(self, key: str) -> int:
        return self.log.count(key)


class Str:
    """An object with a ``toString`` (``__str__``) that runs ``fn`` and counts its calls."""

    def __init__(self, fn: Callable[[], str]) -> None:
        self.fn = fn
        self.calls = 0

    def __str__(self) -> str:
        self.calls += 1
        text: str = self.fn()
        return text


class Json:
    """An object with a ``toJSON`` (``__json__``) that runs ``fn`` and counts its calls."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.calls = 0

    def __json__(self) -> Any:
        self.calls += 1
        return self.fn()


def record(sink: list[Any], value: object, answer: Any) -> Any:
    """Keep ``value`` (the result of a nested operation) in ``sink`` and answer ``answer`` to the caller."""
    sink.append(value)
    return answer


def begun(*ids: str, **limits: int) -> tuple[ToolCallClosure, BatchHandle]:
    """A closure with one open generation of calls ``ids`` (default ``a`` and ``b``), all named ``t``."""
    closure = ToolCallClosure(**limits)
    handle = closure.begin([{"id": i, "name": "t"} for i in (ids or ("a", "b"))]).handle
    return closure, handle


def raises(kind: type[ToolCallClosureError], code: str, message: str, action: Callable[[], object]) -> None:
    """``action()`` raises exactly ``kind`` with ``code`` and the exact ``message``."""
    with pytest.raises(kind) as info:
        action()
    assert type(info.value) is kind
    assert info.value.code == code
    assert str(info.value) == message


def snap(closure: ToolCallClosure) -> str:
    return to_json(closure.snapshot())


def pending(call_id: str) -> str:
    return '{"id":"' + call_id + '","name":"t","state":"pending","settlement":null}'


OPEN_AB = (
    '{"generation":1,"closed":false,"closeReason":null,"calls":['
    + pending("a")
    + ","
    + pending("b")
    + "]"
    + (',"diagnostics":[]}')
)
OPEN_A = '{"generation":1,"closed":false,"closeReason":null,"calls":[' + pending("a") + '],"diagnostics":[]}'
DEFAULT_CLOSE = (
    '{"status":"cancelled","code":"cancelled","message":"Tool call was cancelled.","sideEffectState":"unknown"}'
)
SYNTHETIC_DEFAULT = (
    '{"status":"cancelled","code":"cancelled","message":"Tool call was cancelled.","provenance":"synthetic",'
    '"sideEffectState":"unknown"}'
)
SUPERSEDED = (
    '{"status":"cancelled","code":"superseded","message":"Tool call was superseded by a newer generation.",'
    '"provenance":"synthetic","sideEffectState":"unknown"}'
)


def serve(*lines: str) -> list[str]:
    """Run ``python -m tool_call_closure serve`` over raw request lines; the response lines, split on \\n only."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    done = subprocess.run(
        [sys.executable, "-m", "tool_call_closure", "serve"],
        input="".join(line + "\n" for line in lines).encode("utf-8"),
        capture_output=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    out = done.stdout.decode("utf-8")
    assert out.endswith("\n")
    return out.split("\n")[:-1]


def same_responses(actual: list[str], expected: list[str]) -> bool:
    """Response lines equal: ``ok`` lines byte for byte; ``error`` lines as parsed JSON without the optional ``code``."""

    def key(line: str) -> Any:
        parsed = json.loads(line)
        if "error" not in parsed:
            return line
        parsed["error"].pop("code", None)
        return parsed

    return [key(line) for line in actual] == [key(line) for line in expected]


NEW = '{"id":0,"cmd":"new"}'
BEGIN_A = '{"id":1,"cmd":"call","method":"begin","args":[[{"id":"a","name":"t"}]]}'
BEGIN_A_OK = '{"id":1,"ok":{"generation":1,"handle":{"generation":1},"superseded":null}}'


# =========================================================================== NORM: outcome normalization


@pytest.mark.parametrize(
    "outcome",
    [
        # JS undefined: settle's outcome is a required Python parameter; undefined and null behave alike here
        # (both fail `!outcome`), so None stands for both (the protocol's $undefined is tested below).
        None,
        "x",
        [],
        (),  # a tuple is an array too (JS-10)
        lambda: None,  # a function
    ],
)
def test_NORM_1_outcome_must_be_an_object(outcome: object) -> None:
    c, h = begun()
    raises(UsageError, "outcome_not_object", "outcome must be an object", lambda: c.settle(h, "a", outcome))
    assert snap(c) == OPEN_AB  # SET-8: the call stays pending


def test_NORM_1_undefined_outcome_over_the_protocol() -> None:
    out = serve(NEW, BEGIN_A, '{"id":2,"cmd":"call","method":"settle","args":[{"$handle":1},"a",{"$undefined":true}]}')
    assert same_responses(out[2:], ['{"id":2,"error":{"kind":"TypeError","message":"outcome must be an object"}}'])


@pytest.mark.parametrize("outcome", [{}, {"status": "bogus"}, {"status": "SUCCESS"}, {"status": 5}, {"status": ""}])
def test_NORM_2_status_must_be_success_error_or_cancelled(outcome: dict[str, Any]) -> None:
    c, h = begun()
    raises(
        UsageError,
        "outcome_status_invalid",
        "outcome.status must be success, error, or cancelled",
        lambda: c.settle(h, "a", outcome),
    )
    assert snap(c) == OPEN_AB


def test_NORM_2_the_two_status_reads_can_disagree_bogus_then_success_is_accepted() -> None:
    c, h = begun()
    outcome = Getters(status=sequence("bogus", "success"), content=1)
    result = c.settle(h, "a", outcome)
    assert to_json(result) == (
        '{"accepted":true,"generation":1,"callId":"a",'
        '"settlement":{"status":"success","content":"1","provenance":"reported"}}'
    )
    assert outcome.reads("status") == 2


def test_NORM_2_the_two_status_reads_can_disagree_success_then_bogus_raises() -> None:
    c, h = begun()
    outcome = Getters(status=sequence("success", "bogus"), content=1)
    raises(
        UsageError,
        "outcome_status_invalid",
        "outcome.status must be success, error, or cancelled",
        lambda: c.settle(h, "a", outcome),
    )
    assert snap(c) == OPEN_AB


def test_NORM_3_success_reads_only_content_and_ignores_code_and_message() -> None:
    c, h = begun()

    def boom() -> Any:
        raise AssertionError("must not be read")

    outcome = Getters(status="success", content=Get(lambda: {"x": 1}), code=Get(boom), message=Get(boom))
    result = c.settle(h, "a", outcome)
    assert to_json(result) == (
        '{"accepted":true,"generation":1,"callId":"a",'
        '"settlement":{"status":"success","content":"{\\"x\\":1}","provenance":"reported"}}'
    )
    assert outcome.log == ["status", "status", "content"]
    assert isinstance(result, Accepted)
    assert result.settlement.code is None
    assert result.settlement.message is None


def test_NORM_3_success_with_code_and_message_keys_keeps_only_content() -> None:
    c, h = begun()
    result = c.settle(h, "a", {"status": "success", "content": "ok", "code": "E", "message": "m"})
    assert to_json(result) == (
        '{"accepted":true,"generation":1,"callId":"a",'
        '"settlement":{"status":"success","content":"ok","provenance":"reported"}}'
    )


@pytest.mark.parametrize("status", ["error", "cancelled"])
def test_NORM_4_failure_reads_code_then_message_and_ignores_the_rest(status: str) -> None:
    c, h = begun()

    def boom() -> Any:
        raise AssertionError("must not be read")

    outcome = Getters(
        status=status,
        code="E",
        message="m",
        content=Get(boom),
        sideEffectState="not_started",
        provenance="synthetic",
    )
    result = c.settle(h, "a", outcome)
    assert to_json(result) == (
        '{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"' + status + '","code":"E",'
        '"message":"m","provenance":"reported"}}'
    )
    assert outcome.log == ["status", "status", "code", "message"]
    assert snap(c) == (
        '{"generation":1,"closed":false,"closeReason":null,"calls":[{"id":"a","name":"t","state":"' + status + '",'
        '"settlement":{"status":"'
        + status
        + '","code":"E","message":"m","provenance":"reported"}},'
        + pending("b")
        + '],"diagnostics":[]}'
    )


@pytest.mark.parametrize(
    ("method", "expected"),
    [
        ("settle-error", "error"),
        ("settle-cancelled", "cancelled"),
        ("fail", "tool_error"),
        ("cancel", "cancelled"),
    ],
)
@pytest.mark.parametrize("explicit_none", [False, True])
def test_NORM_5_default_codes_ignore_max_code_bytes(method: str, expected: str, explicit_none: bool) -> None:
    c, h = begun(max_code_bytes=1)
    code: dict[str, Any] = {"code": None} if explicit_none else {}
    if method == "settle-error":
        result = c.settle(h, "a", {"status": "error", **code})
    elif method == "settle-cancelled":
        result = c.settle(h, "a", {"status": "cancelled", **code})
    elif method == "fail":
        result = c.fail(h, "a", "m", **code)
    else:
        result = c.cancel(h, "a", "m", **code)
    assert isinstance(result, Accepted)
    assert result.settlement.code == expected


@pytest.mark.parametrize(
    "code",
    [
        5,
        "",
        " ",
        True,
        {},
        # JS `new String('x')` is refused in the original; a str subclass is a string in the reference (D5,
        # tested in test_deviations.py).
    ],
)
@pytest.mark.parametrize("method", ["settle", "fail", "cancel"])
def test_NORM_5_supplied_code_must_be_a_non_empty_string(code: object, method: str) -> None:
    c, h = begun()
    if method == "settle":
        action: Callable[[], object] = lambda: c.settle(h, "a", {"status": "error", "code": code})  # noqa: E731
    elif method == "fail":
        action = lambda: c.fail(h, "a", "m", code)  # noqa: E731
    else:
        action = lambda: c.cancel(h, "a", "m", code)  # noqa: E731
    # The message names outcome.code even for fail's and cancel's code argument.
    raises(UsageError, "string_empty", "outcome.code must be a non-empty string", action)
    assert snap(c) == OPEN_AB


@pytest.mark.parametrize(
    ("method", "code"),
    [("settle", "error"), ("settle", "cancelled"), ("fail", "tool_error"), ("cancel", "cancelled"), ("settle", "ab")],
)
def test_NORM_5_supplied_code_over_max_code_bytes_is_a_range_error(method: str, code: str) -> None:
    c, h = begun(max_code_bytes=1)
    if method == "settle":
        action: Callable[[], object] = lambda: c.settle(h, "a", {"status": "error", "code": code})  # noqa: E731
    elif method == "fail":
        action = lambda: c.fail(h, "a", "m", code)  # noqa: E731
    else:
        action = lambda: c.cancel(h, "a", "m", code)  # noqa: E731
    raises(LimitError, "string_too_long", "outcome.code exceeds its byte limit (1)", action)
    assert snap(c) == OPEN_AB


def test_NORM_5_codes_are_not_trimmed() -> None:
    c, h = begun()
    result = c.settle(h, "a", {"status": "error", "code": " c "})
    assert isinstance(result, Accepted)
    assert result.settlement.code == " c "


def test_NORM_5_an_invalid_code_raises_before_the_message_is_read() -> None:
    c, h = begun()
    outcome = Getters(status="error", code="", message=Get(lambda: "m"))
    raises(UsageError, "string_empty", "outcome.code must be a non-empty string", lambda: c.settle(h, "a", outcome))
    assert outcome.reads("message") == 0
    message = Str(lambda: "m")
    raises(UsageError, "string_empty", "outcome.code must be a non-empty string", lambda: c.cancel(h, "a", message, 5))
    assert message.calls == 0
    assert snap(c) == OPEN_AB


@pytest.mark.parametrize(
    ("status", "message"),
    [("error", "Tool call failed."), ("cancelled", "Tool call was cancelled.")],
)
@pytest.mark.parametrize("given", [{}, {"message": None}])
def test_NORM_6_default_messages(status: str, message: str, given: dict[str, Any]) -> None:
    c, h = begun()
    result = c.settle(h, "a", {"status": status, **given})
    assert to_json(result) == (
        '{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"'
        + status
        + '","code":"'
        + status
        + '","message":"'
        + message
        + '","provenance":"reported"}}'
    )


class ToPrimitive:
    """JavaScript ``Symbol.toPrimitive`` (called with hint "string"): Python's ``__str__``."""

    def __str__(self) -> str:
        return "prim"


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (12.5, "12.5"),
        (True, "true"),
        ({"a": 1}, "[object Object]"),
        # [1,[2,3],null,undefined]: Python has no undefined list element; None (null) joins as "" too.
        ([1, [2, 3], None, None], "1,2,3,,"),
        (Str(lambda: "custom"), "custom"),
        (ToPrimitive(), "prim"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (0.1 + 0.2, "0.30000000000000004"),
        ("", ""),
        # Symbol('q') -> "Symbol(q)": Python has no Symbol.
        # Object.create(null) -> V8's "Cannot convert object to primitive value": no Python equivalent.
    ],
)
@pytest.mark.parametrize("status", ["error", "cancelled"])
def test_NORM_6_messages_are_converted_like_String(message: object, expected: str, status: str) -> None:
    c, h = begun()
    result = c.settle(h, "a", {"status": status, "message": message})
    assert isinstance(result, Accepted)
    assert result.settlement.message == expected
    assert type(result.settlement.message) is str


def test_NORM_6_converted_messages_are_truncated() -> None:
    c, h = begun(max_message_bytes=8)
    result = c.settle(h, "a", {"status": "error", "message": Str(lambda: "abcdefghij")})
    assert isinstance(result, Accepted)
    assert result.settlement.message == "abcde..."
    result = c.settle(h, "b", {"status": "error"})
    assert isinstance(result, Accepted)
    assert result.settlement.message == "Tool ..."  # built-in defaults are truncated too


@pytest.mark.parametrize(
    ("message", "limit", "expected"),
    [
        ("abcde", 5, "abcde"),
        ("abcdef", 5, "ab..."),
        ("abcd", 3, "..."),
        # The catalogue's "/4 -> a..." continues the 'abcdef' example: 'abcd' itself fits in 4 bytes.
        ("abcdef", 4, "a..."),
        ("abcd", 4, "abcd"),
        ("abcd", 2, "ab"),
        ("abcd", 1, "a"),
        ("€€€", 5, "..."),
        ("€€€", 6, "€..."),
        ("€€", 2, ""),
        ("éé", 1, ""),
        ("a😀😀", 7, "a..."),
        ("a😀😀", 8, "a😀..."),
        ("a\ud800b", 5, "a\ud800b"),
        ("a\ud800bcdefgh", 7, "a\ufffd..."),
        ("a\ud800bc", 5, "a..."),
    ],
)
def test_NORM_7_truncation_examples(message: str, limit: int, expected: str) -> None:
    c, h = begun(max_message_bytes=limit)
    result = c.settle(h, "a", {"status": "error", "message": message})
    assert isinstance(result, Accepted)
    assert result.settlement.message == expected
    result = c.cancel(h, "b", message)
    assert isinstance(result, Accepted)
    assert result.settlement.message == expected


def test_NORM_7_truncation_applies_to_close_messages() -> None:
    c, h = begun("a", max_message_bytes=5)
    closed = c.close(h, {"message": "abcdef"})
    assert to_json(closed) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"cancelled","code":"cancelled","message":"ab...",'
        '"sideEffectState":"unknown"},"calls":[{"id":"a","name":"t","state":"cancelled","settlement":'
        '{"status":"cancelled","code":"cancelled","message":"ab...","provenance":"synthetic",'
        '"sideEffectState":"unknown"}}],"diagnostics":[]}'
    )


@pytest.mark.parametrize(("content", "stored"), [("hello", "hello"), ("", ""), ('{"a":1}', '{"a":1}')])
def test_NORM_8_strings_are_stored_unquoted(content: str, stored: str) -> None:
    c, h = begun()
    result = c.succeed(h, "a", content)
    assert isinstance(result, Accepted)
    assert result.settlement.content == stored
    assert to_json(result) == (
        '{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"success","content":'
        + json.dumps(stored)
        + ',"provenance":"reported"}}'
    )


def _function() -> None:
    return None


@pytest.mark.parametrize(
    "action",
    [
        pytest.param(lambda c, h: c.succeed(h, "a"), id="succeed-without-content"),
        pytest.param(lambda c, h: c.settle(h, "a", {"status": "success"}), id="missing-content"),
        pytest.param(lambda c, h: c.succeed(h, "a", _function), id="function"),
        # A top-level toJSON returning undefined: the closest Python value that JSON.stringify turns into
        # undefined is a function returned by __json__.
        pytest.param(lambda c, h: c.succeed(h, "a", Json(lambda: _function)), id="json-hook-gives-a-function"),
        # Symbol content: Python has no Symbol.
    ],
)
def test_NORM_8_content_that_is_not_serializable(action: Callable[[ToolCallClosure, BatchHandle], object]) -> None:
    c, h = begun()
    raises(
        UsageError,
        "content_not_serializable",
        "result content must be JSON-serializable or a string",
        lambda: action(c, h),
    )
    assert snap(c) == OPEN_AB


def test_NORM_8_circular_content_raises_with_the_specified_prefix() -> None:
    c, h = begun()
    inner: dict[str, Any] = {}
    content = {"a": inner}
    inner["self"] = content
    with pytest.raises(UsageError) as info:
        c.succeed(h, "a", content)
    assert type(info.value) is UsageError
    assert info.value.code == "content_circular"
    assert str(info.value).startswith("Converting circular structure to JSON")
    looped: list[Any] = [1]
    looped.append(looped)
    with pytest.raises(UsageError, match=r"^Converting circular structure to JSON"):
        c.succeed(h, "a", looped)
    assert snap(c) == OPEN_AB
    # BigInt (V8's "Do not know how to serialize a BigInt"): Python ints are exact numbers (D5).


def test_NORM_8_an_exception_from_a_json_hook_propagates_unchanged() -> None:
    c, h = begun()
    error = ValueError("tj")  # the catalogue's RangeError: "tj"

    def throw() -> Any:
        raise error

    with pytest.raises(ValueError, match=r"^tj$") as info:
        c.succeed(h, "a", {"nested": Json(throw)})
    assert info.value is error
    assert snap(c) == OPEN_AB


@pytest.mark.parametrize(
    ("content", "limit", "fits"),
    [
        ({"a": 1}, 7, True),
        ({"a": 1}, 5, False),
        ({"a": 1}, 6, False),
        ("abcde", 5, True),  # a raw string is measured without quotes
        ("abcdef", 5, False),
        ("\ud800", 3, True),  # a lone surrogate string is 3 bytes, stored raw
        (["\ud800"], 10, True),  # inside JSON it becomes "\ud800" (8 bytes, plus the brackets)
        (["\ud800"], 9, False),
        ("€", 3, True),
        ("€", 2, False),
    ],
)
def test_NORM_8_byte_limit_is_measured_on_the_stored_text(content: object, limit: int, fits: bool) -> None:
    c, h = begun("a", max_result_bytes=limit)
    if fits:
        result = c.succeed(h, "a", content)
        assert isinstance(result, Accepted)
        assert result.settlement.content == (content if isinstance(content, str) else to_json(content))
    else:
        raises(
            LimitError,
            "content_too_large",
            f"result content exceeds maxResultBytes ({limit})",
            lambda: c.succeed(h, "a", content),
        )
        assert snap(c) == OPEN_A


def test_NORM_8_stored_lone_surrogate_string_is_raw() -> None:
    c, h = begun("a")
    result = c.succeed(h, "a", "\ud800")
    assert isinstance(result, Accepted)
    assert result.settlement.content == "\ud800"
    result2 = c.snapshot()
    assert result2 is not None
    assert result2.calls[0].settlement is not None
    assert result2.calls[0].settlement.content == "\ud800"


@pytest.mark.parametrize(
    ("content", "stored"),
    [
        (None, "null"),
        (True, "true"),
        (-0.0, "0"),
        (1.0, "1"),
        (float("nan"), "null"),
        (float("inf"), "null"),
        (float("-inf"), "null"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e16, "10000000000000000"),
        (1e-6, "0.000001"),
        (1e-7, "1e-7"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (123e-20, "1.23e-18"),
        (2.0**64, "18446744073709552000"),  # JS 2**64 is a double; a Python int 2**64 is exact (D5)
        (float(9007199254740993), "9007199254740992"),  # the JS literal 9007199254740993 is this double
        ([1, None, 3], "[1,null,3]"),  # sparse holes -> null: None entries in Python
        ({"a": [1, 2]}, '{"a":[1,2]}'),
        # Members that are undefined/functions/symbols are dropped in JS; in Python they are refused (D5).
        # Date, Map, Set, Error, RegExp, Uint8Array, class instances and toJSON(key): see D5 (projection rule).
    ],
)
def test_NORM_8_json_stringify_output(content: object, stored: str) -> None:
    c, h = begun()
    result = c.succeed(h, "a", content)
    assert isinstance(result, Accepted)
    assert result.settlement.content == stored


def test_NORM_8_array_index_keys_come_first() -> None:
    c, h = begun()
    content = {"b": 1, "a": 2, "1": 3, "0": 4, "-1": 5, "01": 6, "4294967294": 7, "4294967295": 8}
    result = c.succeed(h, "a", content)
    assert isinstance(result, Accepted)
    assert result.settlement.content == '{"0":4,"1":3,"4294967294":7,"b":1,"a":2,"-1":5,"01":6,"4294967295":8}'


def test_NORM_8_string_escaping() -> None:
    c, h = begun()
    text = 'é€😀\u2028\u2029\x7f\b\t\n\f\r\x00\x01\x1f/"\\\ud800'
    result = c.succeed(h, "a", {"s": text})
    assert isinstance(result, Accepted)
    expected = '{"s":"é€😀\u2028\u2029\x7f' + r"\b\t\n\f\r\u0000\u0001\u001f/\"\\\ud800" + '"}'
    assert result.settlement.content == expected


def test_NORM_8_content_getter_is_read_once_and_status_twice() -> None:
    c, h = begun()
    outcome = Getters(status=Get(lambda: "success"), content=Get(lambda: [1]))
    result = c.settle(h, "a", outcome)
    assert isinstance(result, Accepted)
    assert result.settlement.content == "[1]"
    assert outcome.reads("status") == 2
    assert outcome.reads("content") == 1


def test_NORM_8_status_is_read_once_on_the_stale_path() -> None:
    c, _h = begun()
    outcome = Getters(status=Get(lambda: "success"), content=Get(lambda: [1]))
    result = c.settle(BatchHandle(1), "a", outcome)
    assert to_json(result) == (
        '{"accepted":false,"reason":"stale_generation","callId":"a","generation":1,"observedStatus":"success"}'
    )
    assert outcome.log == ["status"]


def test_NORM_8_every_throw_leaves_the_call_pending() -> None:
    c, h = begun("a", max_result_bytes=3)
    for content in ({1, 2}, {"a": 1}):
        with pytest.raises(ToolCallClosureError):
            c.succeed(h, "a", content)
    assert snap(c) == OPEN_A
    result = c.succeed(h, "a", "ok")
    assert isinstance(result, Accepted)


# =========================================================================== CLO: close


def test_CLO_1_stale_handle_is_rejected_without_reading_the_reason() -> None:
    c, h1 = begun("a")
    h2 = c.begin([{"id": "b", "name": "t"}]).handle
    reason = Getters(status=Get(lambda: "bogus"))
    result = c.close(h1, reason)
    assert to_json(result) == (
        '{"accepted":false,"reason":"stale_generation","callId":null,"generation":1,"observedStatus":null}'
    )
    assert isinstance(result, Rejection)
    assert reason.log == []
    assert to_json(c.close(h1, {"status": "bogus"})) == to_json(result)  # an invalid reason: no raise
    assert snap(c) == (
        '{"generation":2,"closed":false,"closeReason":null,"calls":[' + pending("b") + '],"diagnostics":['
        '{"reason":"stale_generation","callId":null,"generation":1,"observedStatus":null},'
        '{"reason":"stale_generation","callId":null,"generation":1,"observedStatus":null}]}'
    )
    assert c.active_generation == 2
    assert h2.generation == 2


@pytest.mark.parametrize(
    ("handle", "generation"),
    [
        (BatchHandle(1), "1"),  # a look-alike of the current handle
        ({"generation": 1}, "1"),
        ({"generation": 99}, "99"),
        (None, "null"),
        ({"generation": 0}, "null"),
        ({"generation": "1"}, "null"),
    ],
)
def test_CLO_1_forged_handles_are_stale(handle: object, generation: str) -> None:
    c, _h = begun("a")
    result = c.close(handle, {"status": "bogus"})
    rejection = '{"reason":"stale_generation","callId":null,"generation":' + generation + ',"observedStatus":null}'
    assert to_json(result) == '{"accepted":false,' + rejection[1:]
    assert snap(c) == (
        '{"generation":1,"closed":false,"closeReason":null,"calls":['
        + pending("a")
        + '],"diagnostics":['
        + rejection
        + "]}"
    )


def test_CLO_1_close_before_the_first_begin_is_stale() -> None:
    c = ToolCallClosure()
    result = c.close(BatchHandle(1))
    assert to_json(result) == (
        '{"accepted":false,"reason":"stale_generation","callId":null,"generation":1,"observedStatus":null}'
    )
    assert c.snapshot() is None


@pytest.mark.parametrize(
    "reason",
    [
        {"status": "success", "code": 5, "sideEffectState": "x"},
        None,
        {"status": "error"},
    ],
)
@pytest.mark.parametrize("how", ["close", "seal"])
def test_CLO_2_closed_generation_returns_a_fresh_snapshot_without_reading_the_reason(reason: object, how: str) -> None:
    c, h = begun("a")
    if how == "close":
        c.close(h)
        close_reason = DEFAULT_CLOSE
        call = '{"id":"a","name":"t","state":"cancelled","settlement":' + SYNTHETIC_DEFAULT + "}"
    else:
        c.succeed(h, "a", "ok")
        c.seal(h)
        close_reason = '{"status":"complete"}'  # close after seal answers complete
        call = (
            '{"id":"a","name":"t","state":"success","settlement":{"status":"success","content":"ok",'
            '"provenance":"reported"}}'
        )
    first = c.close(h, reason)
    second = c.close(h, reason)
    expected = (
        '{"generation":1,"closed":true,"closeReason":' + close_reason + ',"calls":[' + call + '],"diagnostics":[]}'
    )
    assert to_json(first) == expected
    assert to_json(second) == expected
    assert isinstance(first, Snapshot)
    assert first is not second
    assert c.to_openai_chat_completions(first) != []  # each is a registered snapshot


def test_CLO_2_a_getter_reason_is_not_read_on_a_closed_generation() -> None:
    c, h = begun("a")
    c.close(h)
    reason = Getters(status=Get(lambda: "bogus"), code=Get(lambda: 5))
    result = c.close(h, reason)
    assert isinstance(result, Snapshot)
    assert reason.log == []


@pytest.mark.parametrize("status", ["success", "ERROR", 5, ""])
def test_CLO_3_status_must_be_error_or_cancelled(status: object) -> None:
    c, h = begun()
    reason = Getters(status=status, code=Get(lambda: "c"))
    raises(UsageError, "close_status_invalid", "close status must be error or cancelled", lambda: c.close(h, reason))
    assert reason.reads("code") == 0
    assert snap(c) == OPEN_AB


@pytest.mark.parametrize("code", [5, "", " ", True, {}])
def test_CLO_3_code_must_be_a_non_empty_string(code: object) -> None:
    c, h = begun()
    reason = Getters(code=code, sideEffectState=Get(lambda: "unknown"))
    raises(UsageError, "string_empty", "reason.code must be a non-empty string", lambda: c.close(h, reason))
    assert reason.reads("sideEffectState") == 0
    assert snap(c) == OPEN_AB


def test_CLO_3_code_over_max_code_bytes_is_a_range_error() -> None:
    c, h = begun(max_code_bytes=2)
    raises(LimitError, "string_too_long", "reason.code exceeds its byte limit (2)", lambda: c.close(h, {"code": "abc"}))
    raises(
        LimitError,
        "string_too_long",
        "reason.code exceeds its byte limit (2)",
        lambda: c.close(h, {"status": "error", "code": "error"}),
    )
    assert snap(c) == OPEN_AB


@pytest.mark.parametrize("status", ["cancelled", "error"])
def test_CLO_3_default_code_is_the_status_and_ignores_max_code_bytes(status: str) -> None:
    c, h = begun("a", max_code_bytes=2)
    result = c.close(h, {"status": status})
    assert isinstance(result, Snapshot)
    assert result.close_reason is not None
    assert result.close_reason.code == status


@pytest.mark.parametrize("state", ["started", "", "UNKNOWN", 5])
def test_CLO_3_side_effect_state_must_be_unknown_or_not_started(state: object) -> None:
    c, h = begun()
    reason = Getters(sideEffectState=state, message=Get(lambda: "m"))
    raises(
        UsageError,
        "side_effect_state_invalid",
        "reason.sideEffectState must be unknown or not_started",
        lambda: c.close(h, reason),
    )
    assert reason.reads("message") == 0
    assert snap(c) == OPEN_AB


@pytest.mark.parametrize(
    ("reason", "limit", "expected"),
    [
        ({"status": "error"}, 4096, "Tool call did not complete."),
        ({"status": "cancelled"}, 4096, "Tool call was cancelled."),
        ({}, 4096, "Tool call was cancelled."),
        ({"message": None}, 4096, "Tool call was cancelled."),
        ({"message": ""}, 4096, ""),
        ({"message": 42}, 4096, "42"),
        ({"status": "error"}, 8, "Tool ..."),
        ({"message": "abcdefghij"}, 8, "abcde..."),
        ({"message": Str(lambda: "conv")}, 4096, "conv"),
    ],
)
def test_CLO_3_message_defaults_conversion_and_truncation(reason: dict[str, Any], limit: int, expected: str) -> None:
    c, h = begun("a", max_message_bytes=limit)
    result = c.close(h, reason)
    assert isinstance(result, Snapshot)
    assert result.close_reason is not None
    assert result.close_reason.message == expected
    assert result.calls[0].settlement is not None
    assert result.calls[0].settlement.message == expected


def test_CLO_3_fields_are_read_once_each_in_order() -> None:
    c, h = begun("a")
    reason = Getters(
        status=Get(lambda: "error"),
        code=Get(lambda: "E"),
        sideEffectState=Get(lambda: "not_started"),
        message=Get(lambda: "m"),
    )
    result = c.close(h, reason)
    # The reference also looks up the Python spelling side_effect_state (deviation D7); the original's keys
    # are each read once, in the original's order.
    assert [key for key in reason.log if key != "side_effect_state"] == ["status", "code", "sideEffectState", "message"]
    assert to_json(result) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"error","code":"E","message":"m",'
        '"sideEffectState":"not_started"},"calls":[{"id":"a","name":"t","state":"error","settlement":'
        '{"status":"error","code":"E","message":"m","provenance":"synthetic","sideEffectState":"not_started"}}],'
        '"diagnostics":[]}'
    )


@pytest.mark.parametrize("call", ["omitted", "none"])
def test_CLO_4_absent_reason_takes_every_default(call: str) -> None:
    # close(h) and close(h, undefined) use {}; close(h, None) does too in the reference (deviation D1).
    c, h = begun("a")
    result = c.close(h) if call == "omitted" else c.close(h, None)
    assert to_json(result) == (
        '{"generation":1,"closed":true,"closeReason":' + DEFAULT_CLOSE + ',"calls":[{"id":"a","name":"t",'
        '"state":"cancelled","settlement":' + SYNTHETIC_DEFAULT + '}],"diagnostics":[]}'
    )


@pytest.mark.parametrize("reason", ["x", 5, True, [], ()])
def test_CLO_4_non_object_reason_is_refused_by_the_reference(reason: object) -> None:
    # The original accepts these silently as {}; the reference refuses them (deviation D2).
    c, h = begun()
    raises(UsageError, "reason_not_object", "reason must be an object", lambda: c.close(h, reason))
    assert snap(c) == OPEN_AB


def test_CLO_4_any_reason_is_fine_on_a_closed_generation() -> None:
    c, h = begun("a")
    first = c.close(h)
    reasons: list[object] = [None, "x", 5, []]
    for reason in reasons:
        assert to_json(c.close(h, reason)) == to_json(first)


def test_CLO_5_nested_begin_while_reading_the_reason_makes_close_stale() -> None:
    c, h = begun("a")
    nested: list[BeginResult] = []
    reason = Getters(message=Get(lambda: record(nested, c.begin([{"id": "n", "name": "t"}]), "m")))
    result = c.close(h, reason)
    assert to_json(result) == (
        '{"accepted":false,"reason":"stale_generation","callId":null,"generation":1,"observedStatus":null}'
    )
    assert to_json(nested[0].superseded) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"cancelled","code":"superseded",'
        '"message":"Tool call was superseded by a newer generation.","sideEffectState":"unknown"},'
        '"calls":[{"id":"a","name":"t","state":"cancelled","settlement":' + SUPERSEDED + '}],"diagnostics":[]}'
    )
    assert snap(c) == (
        '{"generation":2,"closed":false,"closeReason":null,"calls":[' + pending("n") + '],"diagnostics":['
        '{"reason":"stale_generation","callId":null,"generation":1,"observedStatus":null}]}'
    )


def test_CLO_5_nested_close_while_reading_the_reason_returns_the_nested_close() -> None:
    c, h = begun("a")
    reason = Str(lambda: c.close(h, {"status": "error", "code": "inner"}) and "outer")
    result = c.close(h, {"message": reason})
    expected = (
        '{"generation":1,"closed":true,"closeReason":{"status":"error","code":"inner",'
        '"message":"Tool call did not complete.","sideEffectState":"unknown"},"calls":[{"id":"a","name":"t",'
        '"state":"error","settlement":{"status":"error","code":"inner","message":"Tool call did not complete.",'
        '"provenance":"synthetic","sideEffectState":"unknown"}}],"diagnostics":[]}'
    )
    assert to_json(result) == expected
    assert isinstance(result, Snapshot)
    assert snap(c) == expected
    assert reason.calls == 1


def test_CLO_6_pending_calls_get_synthetic_settlements_reported_calls_keep_theirs() -> None:
    c, h = begun("a", "b", "c")
    c.succeed(h, "a", "ok")
    c.fail(h, "b", ValueError("bad"), "E")
    result = c.close(h, {"status": "error", "code": "timeout", "message": "late", "sideEffectState": "not_started"})
    assert to_json(result) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"error","code":"timeout","message":"late",'
        '"sideEffectState":"not_started"},"calls":['
        '{"id":"a","name":"t","state":"success","settlement":{"status":"success","content":"ok","provenance":"reported"}},'
        '{"id":"b","name":"t","state":"error","settlement":{"status":"error","code":"E","message":"bad",'
        '"provenance":"reported"}},'
        '{"id":"c","name":"t","state":"error","settlement":{"status":"error","code":"timeout","message":"late",'
        '"provenance":"synthetic","sideEffectState":"not_started"}}],"diagnostics":[]}'
    )
    assert isinstance(result, Snapshot)
    assert snap(c) == to_json(result)


def test_CLO_6_close_records_its_reason_even_when_no_call_is_pending() -> None:
    c, h = begun("a")
    c.succeed(h, "a", "1")
    result = c.close(h, {"status": "error", "sideEffectState": "not_started"})
    assert to_json(result) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"error","code":"error",'
        '"message":"Tool call did not complete.","sideEffectState":"not_started"},"calls":[{"id":"a","name":"t",'
        '"state":"success","settlement":{"status":"success","content":"1","provenance":"reported"}}],'
        '"diagnostics":[]}'
    )
    empty = ToolCallClosure()
    eh = empty.begin([]).handle
    assert to_json(empty.close(eh)) == (
        '{"generation":1,"closed":true,"closeReason":' + DEFAULT_CLOSE + ',"calls":[],"diagnostics":[]}'
    )


@pytest.mark.parametrize(
    ("action", "call_id", "observed"),
    [
        (lambda c, h: c.succeed(h, "c1", "x"), "c1", '"success"'),
        (lambda c, h: c.succeed(h, "c1"), "c1", '"success"'),  # content is never serialized here (CONV-4)
        (lambda c, h: c.fail(h, "c1", "x"), "c1", '"error"'),
        (lambda c, h: c.cancel(h, "c1"), "c1", '"cancelled"'),
        (lambda c, h: c.settle(h, "c1", {"status": "bogus"}), "c1", '"invalid"'),
        (lambda c, h: c.settle(h, "c1", None), "c1", "null"),
        (lambda c, h: c.settle(h, "nope", {"status": "success"}), "nope", '"success"'),  # beats unknown_call
    ],
)
def test_CLO_7_close_aborts_nothing_later_settlements_are_run_closed(
    action: Callable[[ToolCallClosure, BatchHandle], object], call_id: str, observed: str
) -> None:
    c, h = begun("c1")
    closed = c.close(h)
    result = action(c, h)
    rejection = '{"reason":"run_closed","callId":"' + call_id + '","generation":1,"observedStatus":' + observed + "}"
    assert to_json(result) == '{"accepted":false,' + rejection[1:]
    closed_c1 = (
        '{"generation":1,"closed":true,"closeReason":' + DEFAULT_CLOSE + ',"calls":[{"id":"c1","name":"t",'
        '"state":"cancelled","settlement":' + SYNTHETIC_DEFAULT + '}],"diagnostics":['
    )
    assert to_json(closed) == closed_c1 + "]}"
    assert snap(c) == closed_c1 + rejection + "]}"


# =========================================================================== RE: reentrancy


def _succeed_via(method: str, c: ToolCallClosure, h: BatchHandle, content: object) -> object:
    if method == "succeed":
        return c.succeed(h, "a", content)
    return c.settle(h, "a", {"status": "success", "content": content})


@pytest.mark.parametrize("method", ["succeed", "settle"])
def test_RE_1_nested_settlement_of_the_same_call_wins(method: str) -> None:
    c, h = begun()
    inner: list[object] = []
    content = Json(lambda: record(inner, c.succeed(h, "a", "inner"), "outer"))
    outer = _succeed_via(method, c, h, content)
    assert to_json(outer) == (
        '{"accepted":false,"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":"success"}'
    )
    assert to_json(inner) == (
        '[{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"success","content":"inner",'
        '"provenance":"reported"}}]'
    )
    assert snap(c) == (
        '{"generation":1,"closed":false,"closeReason":null,"calls":[{"id":"a","name":"t","state":"success",'
        '"settlement":{"status":"success","content":"inner","provenance":"reported"}},' + pending("b") + "],"
        '"diagnostics":[{"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":"success"}]}'
    )


def test_RE_2_nested_close_wins() -> None:
    c, h = begun()
    inner: list[object] = []
    content = Json(lambda: record(inner, c.close(h, {"code": "inner"}), [1]))
    outer = c.succeed(h, "a", content)
    assert to_json(outer) == (
        '{"accepted":false,"reason":"run_closed","callId":"a","generation":1,"observedStatus":"success"}'
    )
    synthetic = (
        '{"status":"cancelled","code":"inner","message":"Tool call was cancelled.","provenance":"synthetic",'
        '"sideEffectState":"unknown"}'
    )
    closed = (
        '{"generation":1,"closed":true,"closeReason":{"status":"cancelled","code":"inner",'
        '"message":"Tool call was cancelled.","sideEffectState":"unknown"},"calls":['
        '{"id":"a","name":"t","state":"cancelled","settlement":' + synthetic + "},"
        '{"id":"b","name":"t","state":"cancelled","settlement":' + synthetic + "}],"
    )
    assert to_json(inner) == "[" + closed + '"diagnostics":[]}]'
    assert snap(c) == (
        closed + '"diagnostics":[{"reason":"run_closed","callId":"a","generation":1,"observedStatus":"success"}]}'
    )


class ContentProperty:
    """An outcome whose ``content`` is a property (a JavaScript getter)."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.status = "success"
        self._fn = fn

    @property
    def content(self) -> Any:
        return self._fn()


@pytest.mark.parametrize("where", ["json-hook", "content-getter"])
def test_RE_3_nested_begin_makes_the_outer_settlement_stale(where: str) -> None:
    c, h = begun()
    inner: list[BeginResult] = []

    def nested_begin() -> Any:
        inner.append(c.begin([{"id": "n", "name": "t"}]))
        return "x"

    if where == "json-hook":
        outer = c.succeed(h, "a", Json(nested_begin))
    else:
        outer = c.settle(h, "a", ContentProperty(nested_begin))
    assert to_json(outer) == (
        '{"accepted":false,"reason":"stale_generation","callId":"a","generation":1,"observedStatus":"success"}'
    )
    assert to_json(inner[0]) == (
        '{"generation":2,"handle":{"generation":2},"superseded":{"generation":1,"closed":true,"closeReason":'
        '{"status":"cancelled","code":"superseded","message":"Tool call was superseded by a newer generation.",'
        '"sideEffectState":"unknown"},"calls":[{"id":"a","name":"t","state":"cancelled","settlement":'
        + SUPERSEDED
        + '},{"id":"b","name":"t","state":"cancelled","settlement":'
        + SUPERSEDED
        + '}],"diagnostics":[]}}'
    )
    # The rejection is recorded in the new generation's diagnostics.
    assert snap(c) == (
        '{"generation":2,"closed":false,"closeReason":null,"calls":[' + pending("n") + '],"diagnostics":['
        '{"reason":"stale_generation","callId":"a","generation":1,"observedStatus":"success"}]}'
    )


def test_RE_4_caller_code_that_changes_state_then_throws_keeps_the_change() -> None:
    c, h = begun()
    error = RuntimeError("after-nested")
    inner: list[object] = []

    def settle_then_throw() -> Any:
        inner.append(c.cancel(h, "a", None, "nested"))
        raise error

    with pytest.raises(RuntimeError) as info:
        c.succeed(h, "a", Json(settle_then_throw))
    assert info.value is error
    assert to_json(inner) == (
        '[{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"cancelled","code":"nested",'
        '"message":"Tool call was cancelled.","provenance":"reported"}}]'
    )
    assert snap(c) == (
        '{"generation":1,"closed":false,"closeReason":null,"calls":[{"id":"a","name":"t","state":"cancelled",'
        '"settlement":{"status":"cancelled","code":"nested","message":"Tool call was cancelled.",'
        '"provenance":"reported"}},' + pending("b") + '],"diagnostics":[]}'
    )


def test_RE_4_a_close_reason_getter_that_closes_then_throws_keeps_the_close() -> None:
    c, h = begun("a")
    error = RuntimeError("after-nested")

    def close_then_throw() -> Any:
        c.close(h, {"code": "nested"})
        raise error

    with pytest.raises(RuntimeError) as info:
        c.close(h, Getters(code=Get(close_then_throw)))
    assert info.value is error
    assert snap(c) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"cancelled","code":"nested",'
        '"message":"Tool call was cancelled.","sideEffectState":"unknown"},"calls":[{"id":"a","name":"t",'
        '"state":"cancelled","settlement":{"status":"cancelled","code":"nested","message":"Tool call was cancelled.",'
        '"provenance":"synthetic","sideEffectState":"unknown"}}],"diagnostics":[]}'
    )


def test_RE_5_nested_settlement_of_another_call_is_fine() -> None:
    c, h = begun()
    inner: list[object] = []
    outer = c.succeed(h, "a", Json(lambda: record(inner, c.succeed(h, "b", "B"), "A")))
    assert to_json(outer) == (
        '{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"success","content":"\\"A\\"",'
        '"provenance":"reported"}}'
    )
    assert to_json(inner) == (
        '[{"accepted":true,"generation":1,"callId":"b","settlement":{"status":"success","content":"B",'
        '"provenance":"reported"}}]'
    )
    assert snap(c) == (
        '{"generation":1,"closed":false,"closeReason":null,"calls":['
        '{"id":"a","name":"t","state":"success","settlement":{"status":"success","content":"\\"A\\"",'
        '"provenance":"reported"}},'
        '{"id":"b","name":"t","state":"success","settlement":{"status":"success","content":"B",'
        '"provenance":"reported"}}],"diagnostics":[]}'
    )


@pytest.mark.parametrize(
    ("method", "status"),
    [("settle-error", "error"), ("settle-cancelled", "cancelled"), ("cancel", "cancelled")],
)
def test_RE_6_message_conversion_that_settles_the_same_call(method: str, status: str) -> None:
    c, h = begun()
    inner: list[object] = []
    message = Str(lambda: record(inner, c.succeed(h, "a", "inner"), "outer"))
    if method == "cancel":
        outer = c.cancel(h, "a", message)
    else:
        outer = c.settle(h, "a", {"status": status, "message": message})
    assert to_json(outer) == (
        '{"accepted":false,"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":"'
        + status
        + '"}'
    )
    assert to_json(inner) == (
        '[{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"success","content":"inner",'
        '"provenance":"reported"}}]'
    )
    assert snap(c) == (
        '{"generation":1,"closed":false,"closeReason":null,"calls":[{"id":"a","name":"t","state":"success",'
        '"settlement":{"status":"success","content":"inner","provenance":"reported"}},' + pending("b") + "],"
        '"diagnostics":[{"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":"'
        + status
        + '"}]}'
    )


class SettlingError(Exception):
    """An exception whose text (``str``) settles a call: fail's error conversion as caller code."""

    def __init__(self, action: Callable[[], object]) -> None:
        super().__init__()
        self.action = action

    def __str__(self) -> str:
        self.action()
        return "converted"


@pytest.mark.parametrize("kind", ["to-string", "exception"])
def test_RE_7_fail_error_conversion_that_settles_the_same_call(kind: str) -> None:
    # The original converts before the guards, so its pre-check sees the nested settlement and reports
    # observedStatus null; the reference converts in the normalize phase and its recheck reports "error"
    # (deviation D3; the original's answer is shown in test_deviations.py).
    c, h = begun()
    inner: list[object] = []

    def nested() -> object:
        inner.append(c.succeed(h, "a", "inner"))
        return "converted"

    error: object = Str(lambda: str(nested())) if kind == "to-string" else SettlingError(nested)
    outer = c.fail(h, "a", error)
    assert to_json(outer) == (
        '{"accepted":false,"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":"error"}'
    )
    assert to_json(inner) == (
        '[{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"success","content":"inner",'
        '"provenance":"reported"}}]'
    )
    assert snap(c) == (
        '{"generation":1,"closed":false,"closeReason":null,"calls":[{"id":"a","name":"t","state":"success",'
        '"settlement":{"status":"success","content":"inner","provenance":"reported"}},' + pending("b") + "],"
        '"diagnostics":[{"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":"error"}]}'
    )


@pytest.mark.parametrize(("status", "observed"), [("success", '"success"'), ("error", '"error"'), ("x", '"invalid"')])
def test_RE_8_status_getter_that_closes_the_run(status: str, observed: str) -> None:
    c, h = begun()

    def close_then_answer() -> str:
        c.close(h, {"code": "x"})
        return status

    outcome = Getters(status=Get(close_then_answer), content=1)
    outer = c.settle(h, "a", outcome)
    rejection = '{"reason":"run_closed","callId":"a","generation":1,"observedStatus":' + observed + "}"
    assert to_json(outer) == '{"accepted":false,' + rejection[1:]
    assert outcome.reads("status") == 1
    synthetic = (
        '{"status":"cancelled","code":"x","message":"Tool call was cancelled.","provenance":"synthetic",'
        '"sideEffectState":"unknown"}'
    )
    assert snap(c) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"cancelled","code":"x",'
        '"message":"Tool call was cancelled.","sideEffectState":"unknown"},"calls":['
        '{"id":"a","name":"t","state":"cancelled","settlement":' + synthetic + "},"
        '{"id":"b","name":"t","state":"cancelled","settlement":' + synthetic + '}],"diagnostics":[' + rejection + "]}"
    )


INNER_CLOSED = (
    '{"generation":1,"closed":true,"closeReason":{"status":"error","code":"inner",'
    '"message":"Tool call did not complete.","sideEffectState":"unknown"},"calls":['
    '{"id":"a","name":"t","state":"error","settlement":{"status":"error","code":"inner",'
    '"message":"Tool call did not complete.","provenance":"synthetic","sideEffectState":"unknown"}},'
    '{"id":"b","name":"t","state":"error","settlement":{"status":"error","code":"inner",'
    '"message":"Tool call did not complete.","provenance":"synthetic","sideEffectState":"unknown"}}],'
    '"diagnostics":[]}'
)


def test_RE_9_reason_getter_closes_the_run() -> None:
    c, h = begun()
    inner: list[object] = []
    reason = Getters(message=Get(lambda: record(inner, c.close(h, {"status": "error", "code": "inner"}), "outer")))
    outer = c.close(h, reason)
    assert to_json(outer) == INNER_CLOSED
    assert to_json(inner) == "[" + INNER_CLOSED + "]"
    assert isinstance(outer, Snapshot)
    assert outer is not inner[0]
    assert snap(c) == INNER_CLOSED


def test_RE_9_reason_getter_begins_a_new_generation() -> None:
    c, h = begun()
    reason = Getters(code=Get(lambda: c.begin([{"id": "n", "name": "t"}]) and "c"))
    outer = c.close(h, reason)
    assert to_json(outer) == (
        '{"accepted":false,"reason":"stale_generation","callId":null,"generation":1,"observedStatus":null}'
    )
    assert snap(c) == (
        '{"generation":2,"closed":false,"closeReason":null,"calls":[' + pending("n") + '],"diagnostics":['
        '{"reason":"stale_generation","callId":null,"generation":1,"observedStatus":null}]}'
    )


def test_RE_9_reason_getter_settles_a_call() -> None:
    c, h = begun()
    reason = Getters(status=Get(lambda: c.succeed(h, "a", "ok") and "error"))
    outer = c.close(h, reason)
    assert to_json(outer) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"error","code":"error",'
        '"message":"Tool call did not complete.","sideEffectState":"unknown"},"calls":['
        '{"id":"a","name":"t","state":"success","settlement":{"status":"success","content":"ok",'
        '"provenance":"reported"}},'
        '{"id":"b","name":"t","state":"error","settlement":{"status":"error","code":"error",'
        '"message":"Tool call did not complete.","provenance":"synthetic","sideEffectState":"unknown"}}],'
        '"diagnostics":[]}'
    )


def test_RE_9_reason_getter_closes_then_returns_an_invalid_status() -> None:
    c, h = begun()
    reason = Getters(status=Get(lambda: c.close(h, {"status": "error", "code": "inner"}) and "success"))
    raises(UsageError, "close_status_invalid", "close status must be error or cancelled", lambda: c.close(h, reason))
    assert snap(c) == INNER_CLOSED  # the nested close is kept (I4)


def _entry(call_id: str, on_read: Callable[[], object]) -> Getters:
    return Getters(id=Get(lambda: on_read() and call_id), name="t")


def test_RE_10_getter_begins_a_nested_generation() -> None:
    c, _h = begun("a")
    entry = _entry("x", lambda: c.begin([{"id": "in", "name": "t"}]))
    raises(
        UsageError,
        "generation_changed",
        "active generation changed while validating calls",
        lambda: c.begin([entry]),
    )
    assert c.active_generation == 2
    assert snap(c) == '{"generation":2,"closed":false,"closeReason":null,"calls":[' + pending("in") + "]," + (
        '"diagnostics":[]}'
    )


def test_RE_10_getter_closes_the_current_run() -> None:
    c, h = begun("a")
    entry = _entry("x", lambda: c.close(h))
    result = c.begin([entry])
    assert to_json(result) == '{"generation":2,"handle":{"generation":2},"superseded":null}'
    assert snap(c) == '{"generation":2,"closed":false,"closeReason":null,"calls":[' + pending("x") + "]," + (
        '"diagnostics":[]}'
    )


def test_RE_10_getter_settles_a_call_of_the_current_run() -> None:
    c, h = begun()
    entry = _entry("x", lambda: c.succeed(h, "a", "ok"))
    result = c.begin([entry])
    assert to_json(result) == (
        '{"generation":2,"handle":{"generation":2},"superseded":{"generation":1,"closed":true,"closeReason":'
        '{"status":"cancelled","code":"superseded","message":"Tool call was superseded by a newer generation.",'
        '"sideEffectState":"unknown"},"calls":[{"id":"a","name":"t","state":"success","settlement":'
        '{"status":"success","content":"ok","provenance":"reported"}},{"id":"b","name":"t","state":"cancelled",'
        '"settlement":' + SUPERSEDED + '}],"diagnostics":[]}}'
    )


def test_RE_11_closed_snapshots_never_change() -> None:
    c, h = begun()
    c.succeed(h, "a", {"k": [1]})
    closed = c.close(h, {"status": "error"})
    assert isinstance(closed, Snapshot)
    before = to_json(closed)
    sealed_c, sealed_h = begun("s")
    sealed_c.succeed(sealed_h, "s", "1")
    sealed = sealed_c.seal(sealed_h)
    sealed_before = to_json(sealed)
    # Every later operation: rejections (diagnostics), idempotent close/seal, a new generation and its work.
    c.succeed(h, "b", "late")
    c.settle(BatchHandle(1), "a", {"status": "success"})
    c.close(h, {"status": "bogus"})
    c.seal(h)
    h2 = c.begin([{"id": "a", "name": "t"}]).handle
    c.succeed(h2, "a", "new")
    c.close(h2)
    c.succeed(h, "a", "stale")
    sealed_c.succeed(sealed_h, "s", "again")
    sealed_c.begin([])
    assert to_json(closed) == before
    assert to_json(sealed) == sealed_before
    assert before == (
        '{"generation":1,"closed":true,"closeReason":{"status":"error","code":"error",'
        '"message":"Tool call did not complete.","sideEffectState":"unknown"},"calls":['
        '{"id":"a","name":"t","state":"success","settlement":{"status":"success","content":"{\\"k\\":[1]}",'
        '"provenance":"reported"}},{"id":"b","name":"t","state":"error","settlement":{"status":"error",'
        '"code":"error","message":"Tool call did not complete.","provenance":"synthetic",'
        '"sideEffectState":"unknown"}}],"diagnostics":[]}'
    )
    # Later snapshots of generation 1 would have shown the accumulating diagnostics; this one does not.
    assert closed.diagnostics == ()


def test_RE_11_snapshots_handed_to_caller_code_are_detached() -> None:
    c, h = begun()
    seen: list[Snapshot | None] = []
    c.succeed(h, "a", Json(lambda: record(seen, c.snapshot(), 1)))
    assert to_json(seen[0]) == OPEN_AB  # taken mid-operation: the call was still pending
    c.close(h)
    assert to_json(seen[0]) == OPEN_AB


# =========================================================================== JS: JavaScript mappings

BLANK = ["", " ", "\t\n", "\v\f\r", "\u00a0", "\ufeff", "\u2028", "\u2029", "\u3000", "\u1680", "\u2000", "\u200a"]
BLANK += ["\u202f", "\u205f", "\x0b\x0c", " \u3000\t"]
NOT_BLANK = ["\u200b", "\u180e", "\x1c", "\x1f", "\x85", "\x1d\x1e"]


@pytest.mark.parametrize("text", BLANK)
def test_JS_1_javascript_whitespace_is_blank(text: str) -> None:
    c = ToolCallClosure()
    raises(
        UsageError,
        "string_empty",
        "calls[0].id must be a non-empty string",
        lambda: c.begin([{"id": text, "name": "t"}]),
    )
    raises(
        UsageError,
        "string_empty",
        "calls[0].name must be a non-empty string",
        lambda: c.begin([{"id": "a", "name": text}]),
    )
    raises(UsageError, "string_empty", "callId must be a non-empty string", lambda: c.succeed(None, text, 1))
    c2, h = begun("a")
    raises(UsageError, "string_empty", "outcome.code must be a non-empty string", lambda: c2.fail(h, "a", "m", text))
    raises(UsageError, "string_empty", "reason.code must be a non-empty string", lambda: c2.close(h, {"code": text}))
    assert snap(c2) == OPEN_A


@pytest.mark.parametrize("text", NOT_BLANK)
def test_JS_1_python_whitespace_that_javascript_keeps(text: str) -> None:
    c = ToolCallClosure()
    h = c.begin([{"id": text, "name": text}]).handle
    result = c.fail(h, text, "m", text)
    assert isinstance(result, Accepted)
    assert result.call_id == text
    assert result.settlement.code == text
    assert c.snapshot() == Snapshot(
        1,
        False,
        None,
        (CallSnapshot(text, text, "error", Settlement("error", "reported", code=text, message="m")),),
        (),
    )


@pytest.mark.parametrize(
    ("text", "limit", "fits"),
    [
        ("abc", 3, True),
        ("éa", 3, True),
        ("€a", 3, False),
        ("\ud800", 3, True),
        ("\ud800a", 3, False),
        ("\ude00\ud83d", 6, True),  # a reversed pair: two lone surrogates, 6 bytes
        ("\ude00\ud83d", 5, False),
        ("😀", 4, True),
        ("😀", 3, False),
        ("\ud83d\ude00", 4, True),  # two adjacent surrogate code points form a pair in UTF-16: 4 bytes, not 6
        ("\ud83d\ude00", 3, False),
    ],
)
def test_JS_2_byte_length_of_utf16_strings(text: str, limit: int, fits: bool) -> None:
    c = ToolCallClosure(max_id_bytes=limit, max_name_bytes=limit)
    if fits:
        h = c.begin([{"id": text, "name": text}]).handle
        assert isinstance(c.succeed(h, text, "x"), Accepted)
    else:
        raises(
            LimitError,
            "string_too_long",
            f"calls[0].id exceeds its byte limit ({limit})",
            lambda: c.begin([{"id": text, "name": "t"}]),
        )
        raises(
            LimitError,
            "string_too_long",
            f"calls[0].name exceeds its byte limit ({limit})",
            lambda: c.begin([{"id": "a", "name": text}]),
        )
        raises(LimitError, "string_too_long", f"callId exceeds its byte limit ({limit})", lambda: c.succeed(None, text))


def test_JS_3_truncation_replaces_lone_surrogates_with_u_fffd_not_question_marks() -> None:
    c, h = begun(max_message_bytes=7)
    truncated = c.fail(h, "a", "a\ud800bcdefgh")
    kept = c.fail(h, "b", "a\ud800b")
    assert isinstance(truncated, Accepted)
    assert isinstance(kept, Accepted)
    assert truncated.settlement.message == "a\ufffd..."
    assert truncated.settlement.message != "a\ud800bcdefgh".encode("utf-8", "replace")[:4].decode() + "..."
    assert kept.settlement.message == "a\ud800b"  # only when it truncates
    assert to_json(truncated.settlement) == (
        '{"status":"error","code":"tool_error","message":"a\ufffd...","provenance":"reported"}'
    )
    assert to_json(kept.settlement) == (
        '{"status":"error","code":"tool_error","message":"a\\ud800b","provenance":"reported"}'
    )


@pytest.mark.parametrize(
    ("content", "stored", "ensure_ascii", "python"),
    [
        # compact separators
        ({"a": [1, 2], "b": {"c": None}}, '{"a":[1,2],"b":{"c":null}}', True, '{"a": [1, 2], "b": {"c": null}}'),
        # non-ASCII raw
        (["é€😀"], '["é€😀"]', True, '["\\u00e9\\u20ac\\ud83d\\ude00"]'),
        # lone surrogates escaped (json.dumps with ensure_ascii=False emits them raw)
        (["\ud800"], '["\\ud800"]', False, '["\ud800"]'),
        # raw U+2028, U+2029 and DEL
        (["\u2028\u2029\x7f"], '["\u2028\u2029\x7f"]', True, '["\\u2028\\u2029\\u007f"]'),
        ([float("nan"), float("inf"), float("-inf")], "[null,null,null]", True, "[NaN, Infinity, -Infinity]"),
        ([-0.0], "[0]", True, "[-0.0]"),
        # array-index keys first
        ({"b": 1, "1": 2, "0": 3}, '{"0":3,"1":2,"b":1}', True, '{"b": 1, "1": 2, "0": 3}'),
    ],
)
def test_JS_4_content_is_json_stringify_not_json_dumps(
    content: object, stored: str, ensure_ascii: bool, python: str
) -> None:
    c, h = begun()
    result = c.succeed(h, "a", content)
    assert isinstance(result, Accepted)
    assert result.settlement.content == stored
    assert json.dumps(content, ensure_ascii=ensure_ascii) == python != stored


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1.0, "1"),
        (1e16, "10000000000000000"),
        (1e-5, "0.00001"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (-0.0, "0"),
        (123e-20, "1.23e-18"),
    ],
)
def test_JS_5_number_formatting_in_content_and_messages(number: float, text: str) -> None:
    c, h = begun()
    content = c.succeed(h, "a", number)
    message = c.fail(h, "b", number)
    assert isinstance(content, Accepted)
    assert isinstance(message, Accepted)
    assert content.settlement.content == text
    assert message.settlement.message == text


def test_JS_6_protocol_numbers_are_doubles() -> None:
    out = serve(
        '{"id":0,"cmd":"new","options":{"maxCalls":1.0,"maxIdBytes":1e3}}',
        '{"id":1,"cmd":"call","method":"begin","args":[[{"id":"a","name":"t"}]]}',
        '{"id":2,"cmd":"call","method":"begin","args":[[{"id":"a","name":"t"},{"id":"b","name":"t"}]]}',
        '{"id":3,"cmd":"call","method":"succeed","args":[{"$handle":1},"a",[12345678901234567890,-0,1E400,1.0]]}',
        '{"id":4,"cmd":"new","options":{"maxCalls":1.5}}',
    )
    assert same_responses(
        out,
        [
            '{"id":0,"ok":null}',
            BEGIN_A_OK,
            '{"id":2,"error":{"kind":"RangeError","message":"calls exceed maxCalls (1)"}}',
            '{"id":3,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"success",'
            '"content":"[12345678901234567000,0,null,1]","provenance":"reported"}}}',
            '{"id":4,"error":{"kind":"TypeError","message":"maxCalls must be a positive safe integer"}}',
        ],
    )


def test_JS_6_the_python_api_keeps_exact_ints_and_refuses_float_limits() -> None:
    c, h = begun()
    result = c.succeed(h, "a", 12345678901234567890)
    assert isinstance(result, Accepted)
    assert result.settlement.content == "12345678901234567890"  # exact (D5), unlike the double over the protocol
    result = c.succeed(h, "b", float(12345678901234567890))
    assert isinstance(result, Accepted)
    assert result.settlement.content == "12345678901234567000"
    raises(
        UsageError,
        "option_invalid",
        "maxCalls must be a positive safe integer",
        lambda: ToolCallClosure(max_calls=1.0),  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("option", "name"),
    [
        ("max_calls", "maxCalls"),
        ("max_diagnostics", "maxDiagnostics"),
        ("max_result_bytes", "maxResultBytes"),
        ("max_message_bytes", "maxMessageBytes"),
        ("max_id_bytes", "maxIdBytes"),
        ("max_name_bytes", "maxNameBytes"),
        ("max_code_bytes", "maxCodeBytes"),
    ],
)
@pytest.mark.parametrize("value", [True, False, 0, -1, 2**53])
def test_JS_7_booleans_and_unsafe_integers_are_not_limits(option: str, name: str, value: int) -> None:
    raises(
        UsageError,
        "option_invalid",
        f"{name} must be a positive safe integer",
        lambda: ToolCallClosure(**{option: value}),
    )


def test_JS_7_the_largest_safe_integer_is_a_limit() -> None:
    c = ToolCallClosure(max_calls=2**53 - 1)
    assert c.limits.max_calls == 2**53 - 1


@pytest.mark.parametrize(
    ("generation", "expected"),
    [(True, "null"), (False, "null"), (2**53, "null"), (2**53 - 1, "9007199254740991"), (1, "1"), (0, "null")],
)
@pytest.mark.parametrize("shape", ["batch-handle", "dict"])
def test_JS_7_handle_generation_must_be_a_safe_integer(generation: object, expected: str, shape: str) -> None:
    c, _h = begun("a")
    handle: object = BatchHandle(generation) if shape == "batch-handle" else {"generation": generation}  # type: ignore[arg-type]
    rejection = '{"reason":"stale_generation","callId":"a","generation":' + expected + ',"observedStatus":"success"}'
    assert to_json(c.succeed(handle, "a", 1)) == '{"accepted":false,' + rejection[1:]
    assert to_json(c.close(handle)) == (
        '{"accepted":false,"reason":"stale_generation","callId":null,"generation":'
        + expected
        + ',"observedStatus":null}'
    )
    assert to_json(c.seal(handle)) == (
        '{"accepted":false,"reason":"stale_generation","callId":null,"generation":'
        + expected
        + ',"observedStatus":null}'
    )


def test_JS_8_undefined_and_null_for_content() -> None:
    c, h = begun()
    raises(
        UsageError,
        "content_not_serializable",
        "result content must be JSON-serializable or a string",
        lambda: c.succeed(h, "a"),
    )
    result = c.succeed(h, "a", None)
    assert isinstance(result, Accepted)
    assert result.settlement.content == "null"


def test_JS_8_undefined_and_null_alike_for_code_message_and_side_effect_state() -> None:
    c, h = begun("a", "b", "c", "d")
    explicit = c.settle(h, "a", {"status": "error", "code": None, "message": None})
    missing = c.settle(h, "b", {"status": "error"})
    for call_id, result in (("a", explicit), ("b", missing)):
        assert to_json(result) == (
            '{"accepted":true,"generation":1,"callId":"' + call_id + '","settlement":{"status":"error",'
            '"code":"error","message":"Tool call failed.","provenance":"reported"}}'
        )
    assert to_json(c.cancel(h, "c", None, None)) == (
        '{"accepted":true,"generation":1,"callId":"c","settlement":{"status":"cancelled","code":"cancelled",'
        '"message":"Tool call was cancelled.","provenance":"reported"}}'
    )
    closed = c.close(h, {"status": None, "code": None, "sideEffectState": None, "message": None})
    assert isinstance(closed, Snapshot)
    assert to_json(closed.close_reason) == DEFAULT_CLOSE


def test_JS_8_close_reason_and_fail_error_absent_or_none() -> None:
    # The original: close(h, null) throws natively and fail(h, id) stores "undefined"; the reference treats
    # None as absent for close (D1) and gives fail's default message for an absent or None error (D3).
    c, h = begun("a", "b")
    assert to_json(c.fail(h, "a")) == (
        '{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"error","code":"tool_error",'
        '"message":"Tool call failed.","provenance":"reported"}}'
    )
    assert to_json(c.fail(h, "b", None)) == (
        '{"accepted":true,"generation":1,"callId":"b","settlement":{"status":"error","code":"tool_error",'
        '"message":"Tool call failed.","provenance":"reported"}}'
    )
    c2, h2 = begun("a")
    assert to_json(c2.close(h2, None)) == (
        '{"generation":1,"closed":true,"closeReason":' + DEFAULT_CLOSE + ',"calls":[{"id":"a","name":"t",'
        '"state":"cancelled","settlement":' + SYNTHETIC_DEFAULT + '}],"diagnostics":[]}'
    )


def test_JS_8_none_limit_takes_the_default() -> None:
    c = ToolCallClosure(max_calls=None, max_message_bytes=None)
    assert c.limits.max_calls == 1000
    assert c.limits.max_message_bytes == 4096


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, "true"),
        (False, "false"),
        (None, "Tool call was cancelled."),  # null is absent for a message: the default (NORM-6)
        ([1, [2, 3]], "1,2,3"),
        ([None, 1, None], ",1,"),
        ({"a": 1}, "[object Object]"),
        (5, "5"),  # BigInt 5n -> "5": a Python int gives its digits
        (2**64, "18446744073709551616"),
        (-0.0, "0"),
        # Symbol('d') -> "Symbol(d)": Python has no Symbol.
    ],
)
def test_JS_9_string_conversion(value: object, expected: str) -> None:
    c, h = begun()
    result = c.cancel(h, "a", value)
    assert isinstance(result, Accepted)
    assert result.settlement.message == expected


class Text(str):
    """A str subclass (JavaScript's String object, mapped by deviation D5)."""


def test_JS_10_str_subclasses_are_strings_with_their_plain_value() -> None:
    c = ToolCallClosure()
    h = c.begin([{"id": Text("a"), "name": Text("t")}]).handle
    result = c.settle(h, Text("a"), {"status": Text("error"), "code": Text("E"), "message": "m"})
    assert to_json(result) == (
        '{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"error","code":"E","message":"m",'
        '"provenance":"reported"}}'
    )
    assert isinstance(result, Accepted)
    assert type(result.call_id) is str
    assert type(result.settlement.code) is str
    snapshot = c.snapshot()
    assert snapshot is not None
    assert type(snapshot.calls[0].id) is str
    assert type(snapshot.calls[0].name) is str


class CallList(list[Any]):
    """A list subclass (an Array subclass passes Array.isArray)."""


@pytest.mark.parametrize(
    "calls", [[], (), [{"id": "a", "name": "t"}], ({"id": "a", "name": "t"},), CallList([{"id": "a", "name": "t"}])]
)
def test_JS_10_lists_and_tuples_are_arrays(calls: Any) -> None:
    c = ToolCallClosure()
    result = c.begin(calls)
    assert result.generation == 1
    assert len(c.snapshot().calls) == len(calls)  # type: ignore[union-attr]


@pytest.mark.parametrize("calls", [None, "ab", {"length": 1, "0": {"id": "a", "name": "t"}}, b"ab", {1, 2}])
def test_JS_10_other_values_are_not_arrays(calls: object) -> None:
    c = ToolCallClosure()
    raises(UsageError, "calls_not_array", "calls must be an array", lambda: c.begin(calls))


@pytest.mark.parametrize("entry", [[], (), _function, 0, "x", False])
def test_JS_10_arrays_functions_and_primitives_are_not_objects(entry: object) -> None:
    c = ToolCallClosure()
    raises(UsageError, "call_not_object", "calls[0] must be an object", lambda: c.begin([entry]))
    _c, h = begun()
    raises(UsageError, "outcome_not_object", "outcome must be an object", lambda: _c.settle(h, "a", entry))


class ToolCallFailedError(ValueError):
    """An exception subclass."""


@pytest.mark.parametrize(
    ("error", "message"),
    # Deviation D11: an exception without text is named by its class (the original stores "").
    [(Exception("boom"), "boom"), (ToolCallFailedError("sub"), "sub"), (Exception(), "Exception")],
)
def test_JS_10_fail_uses_an_exception_text_only(error: BaseException, message: str) -> None:
    c, h = begun()
    result = c.fail(h, "a", error)
    assert isinstance(result, Accepted)
    assert result.settlement.message == message
    # Any other value is converted like a message; an exception *as a message* gives Name: text.
    result = c.settle(h, "b", {"status": "error", "message": ToolCallFailedError("sub")})
    assert isinstance(result, Accepted)
    assert result.settlement.message == "ToolCallFailedError: sub"


@pytest.mark.parametrize(
    ("calls", "index"),
    [
        ([None, {"id": "a", "name": "t"}], 0),  # [ , {...}]
        ([{"id": "a", "name": "t"}, None], 1),  # a trailing hole
    ],
)
def test_JS_11_none_entries_act_as_holes(calls: list[Any], index: int) -> None:
    c = ToolCallClosure()
    raises(UsageError, "call_not_object", f"calls[{index}] must be an object", lambda: c.begin(calls))
    assert c.active_generation is None


def test_JS_11_holes_count_toward_max_calls() -> None:
    c = ToolCallClosure(max_calls=1)
    raises(LimitError, "calls_exceed_max", "calls exceed maxCalls (1)", lambda: c.begin([None, None]))


class Entry:
    """A call entry whose ``id`` and ``name`` are properties counting their reads."""

    def __init__(self, call_id: str) -> None:
        self._id = call_id
        self.reads: list[str] = []

    @property
    def id(self) -> str:
        self.reads.append("id")
        return self._id

    @property
    def name(self) -> str:
        self.reads.append("name")
        return "t"


class ForgedHandle:
    """A look-alike handle whose ``generation`` getter counts reads."""

    def __init__(self) -> None:
        self.reads = 0

    @property
    def generation(self) -> int:
        self.reads += 1
        return 1


def test_JS_11_properties_are_read_once_where_the_original_reads_once() -> None:
    c = ToolCallClosure()
    entries = [Entry("a"), Entry("b")]
    h = c.begin(entries).handle
    assert [e.reads for e in entries] == [["id", "name"], ["id", "name"]]
    content_reads = Getters(status="success", content=Get(lambda: "x"))
    c.settle(h, "a", content_reads)
    assert content_reads.log == ["status", "status", "content"]  # status twice (18.8), content once
    failure = Getters(status="error", code="E", message="m")
    c.settle(h, "b", failure)
    assert failure.log == ["status", "status", "code", "message"]
    forged = ForgedHandle()
    c.succeed(forged, "a", 1)
    c.close(forged)
    c.seal(forged)
    assert forged.reads == 3


class ThrowingId:
    """A call entry whose ``id`` getter throws (the catalogue's SyntaxError "boom")."""

    def __init__(self, error: Exception) -> None:
        self._error = error

    @property
    def id(self) -> str:
        raise self._error


def test_JS_11_an_exception_from_a_getter_propagates_unchanged() -> None:
    c, h = begun("a")
    error = SyntaxError("boom")
    with pytest.raises(SyntaxError) as info:
        c.begin([{"id": "x", "name": "t"}, ThrowingId(error)])
    assert info.value is error
    assert c.active_generation == 1
    status_error = LookupError("status")

    def throw() -> Any:
        raise status_error

    for handle in (h, BatchHandle(1)):  # a throwing status getter propagates, even for a stale handle
        with pytest.raises(LookupError) as lookup:
            c.settle(handle, "a", Getters(status=Get(throw)))
        assert lookup.value is status_error
    assert snap(c) == OPEN_A


def test_JS_12_exports_refuse_copies_and_look_alikes_of_snapshots() -> None:
    c, h = begun("a")
    closed = c.close(h)
    assert isinstance(closed, Snapshot)
    other, other_h = begun("a")
    foreign = other.close(other_h)
    look_alikes: list[object] = [
        dataclasses.replace(closed),
        Snapshot(closed.generation, closed.closed, closed.close_reason, closed.calls, closed.diagnostics),
        copy.copy(closed),
        copy.deepcopy(closed),
        foreign,  # another instance's snapshot, structurally equal
        json.loads(to_json(closed)),
        c.close(BatchHandle(1)),  # a rejection
    ]
    for value in look_alikes:
        if isinstance(value, Snapshot):
            assert value == closed  # structurally equal ...
        for export in (c.to_openai_chat_completions, c.to_openai_responses, c.to_anthropic_tool_results):
            raises(UsageError, "snapshot_foreign", "snapshot must be a ToolCallClosure snapshot", lambda: export(value))  # type: ignore[arg-type]  # noqa: B023
    # ... while the very object, and every fresh snapshot, is accepted.
    item = '{"role":"tool","tool_call_id":"a","content":"{\\"error\\":{\\"code\\":\\"cancelled\\",'
    item += '\\"message\\":\\"Tool call was cancelled.\\",\\"side_effect_state\\":\\"unknown\\"}}"}'
    assert to_json(c.to_openai_chat_completions(closed)) == "[" + item + "]"
    assert to_json(c.to_openai_chat_completions(c.snapshot())) == "[" + item + "]"


def test_JS_12_the_registry_does_not_keep_refused_objects_or_leak_between_instances() -> None:
    c, h = begun("a")
    closed = c.close(h)
    other = ToolCallClosure()
    raises(
        UsageError,
        "snapshot_foreign",
        "snapshot must be a ToolCallClosure snapshot",
        lambda: other.to_openai_responses(closed),  # type: ignore[arg-type]
    )
    # A snapshot that died and a new object at the same address is not mistaken for it.
    for _ in range(50):
        c.snapshot()
        look_alike = Snapshot(1, True, CloseReason("complete"), (), ())
        raises(
            UsageError,
            "snapshot_foreign",
            "snapshot must be a ToolCallClosure snapshot",
            lambda: c.to_anthropic_tool_results(look_alike),  # noqa: B023
        )


def test_JS_13_error_classes_and_codes() -> None:
    assert issubclass(UsageError, TypeError)
    assert issubclass(LimitError, ValueError)
    assert not issubclass(LimitError, TypeError)
    assert not issubclass(UsageError, ValueError)
    assert issubclass(UsageError, ToolCallClosureError)
    assert issubclass(LimitError, ToolCallClosureError)
    assert UsageError.kind == "TypeError"
    assert LimitError.kind == "RangeError"
    c = ToolCallClosure(max_calls=1)
    raises(UsageError, "calls_not_array", "calls must be an array", lambda: c.begin("x"))
    raises(LimitError, "calls_exceed_max", "calls exceed maxCalls (1)", lambda: c.begin([{}, {}]))
    raises(
        UsageError,
        "duplicate_call_id",
        "duplicate tool call id: a",
        lambda: ToolCallClosure().begin([{"id": "a", "name": "t"}, {"id": "a", "name": ""}]),
    )
    raises(
        UsageError, "option_invalid", "maxCalls must be a positive safe integer", lambda: ToolCallClosure(max_calls=0)
    )
    with pytest.raises(
        TypeError, match=r"^calls must be an array$"
    ) as info:  # a caller catching the original's TypeError catches UsageError
        c.begin(None)
    assert info.value.code == "calls_not_array"  # type: ignore[attr-defined]
    with pytest.raises(
        ValueError, match=r"^calls exceed maxCalls \(1\)$"
    ) as range_info:  # and the original's RangeError as ValueError
        c.begin([{}, {}])
    assert range_info.value.code == "calls_exceed_max"  # type: ignore[attr-defined]


def test_JS_14_frozen_values_raise_frozen_instance_error() -> None:
    c, h = begun()
    begin_result = ToolCallClosure().begin([])
    accepted = c.succeed(h, "a", 1)
    rejection = c.succeed(h, "a", 1)
    closed = c.close(h)
    assert isinstance(closed, Snapshot)
    assert isinstance(accepted, Accepted)
    assert isinstance(rejection, Rejection)
    call = closed.calls[0]
    assert call.settlement is not None
    assert closed.close_reason is not None
    diagnostic = closed.diagnostics[0]
    writes: list[tuple[object, str, object]] = [
        (closed, "closed", False),
        (closed, "generation", 5),
        (closed, "calls", ()),
        (call, "state", "pending"),
        (call.settlement, "content", "forged"),
        (closed.close_reason, "code", "forged"),
        (diagnostic, "reason", "forged"),
        (h, "generation", 2),
        (begin_result, "generation", 9),
        (accepted, "call_id", "z"),
        (rejection, "reason", "forged"),
    ]
    for target, attribute, value in writes:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(target, attribute, value)
    assert isinstance(diagnostic, Diagnostic)
    assert isinstance(closed.calls, tuple)
    assert isinstance(closed.diagnostics, tuple)
    with pytest.raises(AttributeError):
        c.active_generation = 5  # type: ignore[misc]
    assert c.active_generation == 1
    assert isinstance(begin_result, BeginResult)


def test_JS_15_serve_splits_request_lines_on_newline_only() -> None:
    begin = '{"id":1,"cmd":"call","method":"begin","args":[[{"id":"a\u2028b","name":"t\u2029"}]]}'
    assert "\u2028" in begin  # a raw U+2028 inside a JSON string of the request line
    out = serve(NEW, begin, '{"id":2,"cmd":"call","method":"snapshot"}')
    assert out == [
        '{"id":0,"ok":null}',
        BEGIN_A_OK,
        '{"id":2,"ok":{"generation":1,"closed":false,"closeReason":null,"calls":[{"id":"a\u2028b","name":"t\u2029",'
        '"state":"pending","settlement":null}],"diagnostics":[]}}',
    ]
    assert len("\n".join(out).splitlines()) == 5  # str.splitlines would have split the last response
