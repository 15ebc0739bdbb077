"""The deviations D1..D22 (``spec/deviations.json``): where the reference deliberately differs from the original.

Each test asserts the reference's documented behaviour through the public API.  For the deviations that are
visible over protocol v1 (``"protocol": true``: D1, D2, D3, D7, D8..D11, D18, D20 and D22) the same request lines are also sent to
``python -m tool_call_closure serve`` and to the original through the Node adapter
(``src/tool_call_closure/conformance/node/adapter.cjs``), and both answers are pinned, showing the documented difference.
Only the Node part is skipped when ``node`` or the original (``$TCC_JS``, else the shared seed path) is missing.
Expected values are written by hand from ``deviations.json`` and the behaviour catalogue.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tool_call_closure import (
    Accepted,
    BatchHandle,
    LimitError,
    Rejection,
    Snapshot,
    ToolCallClosure,
    ToolCallClosureError,
    TurnToken,
    UsageError,
    create_tool_call_closure,
    to_json,
)

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
ADAPTER = SRC / "tool_call_closure" / "conformance" / "node" / "adapter.cjs"
ORIGINAL = Path(os.environ.get("TCC_JS") or "/work/shared/seed/tool-call-closure-1.0.0/src/index.cjs")
DEVIATIONS = {d["id"]: d for d in json.loads((ROOT / "spec" / "deviations.json").read_text())["deviations"]}

# --------------------------------------------------------------------------- helpers


def begun(*ids: str, **limits: int) -> tuple[ToolCallClosure, BatchHandle]:
    closure = ToolCallClosure(**limits)
    handle = closure.begin([{"id": i, "name": "t"} for i in (ids or ("a", "b"))]).handle
    return closure, handle


def raises(kind: type[ToolCallClosureError], code: str, message: str, action: Callable[[], object]) -> None:
    with pytest.raises(kind) as info:
        action()
    assert type(info.value) is kind
    assert info.value.code == code
    assert str(info.value) == message


def request(request_id: int, method: str, *args: Any) -> str:
    """One protocol ``call`` line (non-ASCII raw, compact)."""
    return json.dumps(
        {"id": request_id, "cmd": "call", "method": method, "args": list(args)},
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _run(command: list[str], lines: list[str], env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        command,
        input="".join(line + "\n" for line in lines).encode("utf-8"),
        capture_output=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    out = done.stdout.decode("utf-8")
    assert out.endswith("\n")
    return out.split("\n")[:-1]  # protocol lines end at \n only


def reference(*lines: str) -> list[str]:
    """The reference's responses (``python -m tool_call_closure serve``)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    return _run([sys.executable, "-m", "tool_call_closure", "serve"], list(lines), env)


def original(*lines: str) -> list[str]:
    """The original's responses through the Node adapter; skips (only this part) when Node or the original is missing."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH: the original's side of the deviation is not shown")
    if not ORIGINAL.is_file():
        pytest.skip(f"the original's index.cjs is not at {ORIGINAL} (set TCC_JS)")
    env = {k: v for k, v in os.environ.items() if k != "TCC_JS"}
    return _run([node, str(ADAPTER), str(ORIGINAL)], list(lines), env)


def same(actual: list[str], expected: list[str]) -> bool:
    """Equal responses: ``ok`` lines byte for byte, ``error`` lines parsed and without the optional ``code``."""

    def key(line: str) -> Any:
        parsed = json.loads(line)
        if "error" not in parsed:
            return line
        parsed["error"].pop("code", None)
        return parsed

    return [key(line) for line in actual] == [key(line) for line in expected]


NEW = '{"id":0,"cmd":"new"}'
BEGIN_A = request(1, "begin", [{"id": "a", "name": "t"}])
BEGIN_A_OK = '{"id":1,"ok":{"generation":1,"handle":{"generation":1},"superseded":null}}'
H1 = {"$handle": 1}
CLOSED_A_DEFAULT = (
    '{"generation":1,"closed":true,"closeReason":{"status":"cancelled","code":"cancelled",'
    '"message":"Tool call was cancelled.","sideEffectState":"unknown"},"calls":[{"id":"a","name":"t",'
    '"state":"cancelled","settlement":{"status":"cancelled","code":"cancelled","message":"Tool call was cancelled.",'
    '"provenance":"synthetic","sideEffectState":"unknown"}}],"diagnostics":[]}'
)
OPEN_A = (
    '{"generation":1,"closed":false,"closeReason":null,"calls":[{"id":"a","name":"t","state":"pending",'
    '"settlement":null}],"diagnostics":[]}'
)
CHAT_A_CANCELLED = (
    '[{"role":"tool","tool_call_id":"a","content":"{\\"error\\":{\\"code\\":\\"cancelled\\",'
    '\\"message\\":\\"Tool call was cancelled.\\",\\"side_effect_state\\":\\"unknown\\"}}"}]'
)


def test_every_deviation_has_a_test_and_every_protocol_visible_one_a_protocol_test() -> None:
    names = [name for name in globals() if name.startswith("test_D")]
    assert sorted(DEVIATIONS, key=lambda d: int(d[1:])) == [
        f"D{n}" for n in (*range(1, 12), 18, 19, 20, 21, 22, 23, 26)
    ]
    for deviation_id, deviation in DEVIATIONS.items():
        own = [name for name in names if name.startswith(f"test_{deviation_id}_")]
        assert own, deviation_id
        protocol_tests = [name for name in own if name.endswith("_over_the_protocol")]
        assert bool(protocol_tests) == deviation["protocol"], deviation_id


# =========================================================================== D1


def test_D1_none_reason_is_the_absent_reason() -> None:
    c, h = begun("a")
    assert to_json(c.close(h, None)) == CLOSED_A_DEFAULT
    c2, h2 = begun("a")
    assert to_json(c2.close(h2)) == CLOSED_A_DEFAULT


def test_D1_none_snapshot_is_a_fresh_current_snapshot() -> None:
    c, h = begun("a")
    for export in (c.to_openai_chat_completions, c.to_openai_responses, c.to_anthropic_tool_results):
        raises(UsageError, "snapshot_open", "snapshot must be sealed before provider export", lambda: export(None))  # noqa: B023
    c.close(h)
    assert to_json(c.to_openai_chat_completions(None)) == CHAT_A_CANCELLED
    assert to_json(c.to_openai_chat_completions()) == CHAT_A_CANCELLED
    assert to_json(c.to_openai_responses(None)) == (
        '[{"type":"function_call_output","call_id":"a","output":"{\\"error\\":{\\"code\\":\\"cancelled\\",'
        '\\"message\\":\\"Tool call was cancelled.\\",\\"side_effect_state\\":\\"unknown\\"}}"}]'
    )
    assert to_json(c.to_anthropic_tool_results(None)) == (
        '[{"type":"tool_result","tool_use_id":"a","content":"{\\"error\\":{\\"code\\":\\"cancelled\\",'
        '\\"message\\":\\"Tool call was cancelled.\\",\\"side_effect_state\\":\\"unknown\\"}}","is_error":true}]'
    )
    # Before the first begin the fresh snapshot is None, which no export accepts (ADP-1).
    fresh = ToolCallClosure()
    raises(
        UsageError,
        "snapshot_foreign",
        "snapshot must be a ToolCallClosure snapshot",
        lambda: fresh.to_openai_chat_completions(None),
    )


def test_D1_null_reason_over_the_protocol() -> None:
    lines = [NEW, BEGIN_A, request(2, "close", H1, None), request(3, "snapshot")]
    assert reference(*lines) == [
        '{"id":0,"ok":null}',
        BEGIN_A_OK,
        '{"id":2,"ok":' + CLOSED_A_DEFAULT + "}",
        '{"id":3,"ok":' + CLOSED_A_DEFAULT + "}",
    ]
    # The original throws V8's own TypeError and the generation stays open.
    assert same(
        original(*lines),
        [
            '{"id":0,"ok":null}',
            BEGIN_A_OK,
            '{"id":2,"error":{"kind":"TypeError","message":"Cannot read properties of null (reading \'status\')"}}',
            '{"id":3,"ok":' + OPEN_A + "}",
        ],
    )


def test_D1_null_snapshot_over_the_protocol() -> None:
    undefined = {"$undefined": True}
    lines = [
        NEW,
        BEGIN_A,
        request(2, "close", H1),
        request(3, "toOpenAIChatCompletions", None),
        request(4, "toOpenAIChatCompletions", undefined),
        request(5, "toOpenAIResponses", None),
        request(6, "toAnthropicToolResults", None),
    ]
    head = ['{"id":0,"ok":null}', BEGIN_A_OK, '{"id":2,"ok":' + CLOSED_A_DEFAULT + "}"]
    assert reference(*lines) == [
        *head,
        '{"id":3,"ok":' + CHAT_A_CANCELLED + "}",
        '{"id":4,"ok":' + CHAT_A_CANCELLED + "}",
        '{"id":5,"ok":[{"type":"function_call_output","call_id":"a","output":"{\\"error\\":{\\"code\\":'
        '\\"cancelled\\",\\"message\\":\\"Tool call was cancelled.\\",\\"side_effect_state\\":\\"unknown\\"}}"}]}',
        '{"id":6,"ok":[{"type":"tool_result","tool_use_id":"a","content":"{\\"error\\":{\\"code\\":\\"cancelled\\",'
        '\\"message\\":\\"Tool call was cancelled.\\",\\"side_effect_state\\":\\"unknown\\"}}","is_error":true}]}',
    ]
    # The original takes the default only for undefined; null is refused as a foreign snapshot.
    foreign = '"error":{"kind":"TypeError","message":"snapshot must be a ToolCallClosure snapshot"}}'
    assert same(
        original(*lines),
        [
            *head,
            '{"id":3,' + foreign,
            '{"id":4,"ok":' + CHAT_A_CANCELLED + "}",
            '{"id":5,' + foreign,
            '{"id":6,' + foreign,
        ],
    )


# =========================================================================== D2


# A function (callable) is not an object either (D7), while the original reads its properties.
@pytest.mark.parametrize("reason", ["timeout", "", 5, 0, True, False, [], ["status"], (), b"x", len])
def test_D2_a_reason_that_is_not_an_object_is_refused(reason: object) -> None:
    c, h = begun("a")
    raises(UsageError, "reason_not_object", "reason must be an object", lambda: c.close(h, reason))
    assert to_json(c.snapshot()) == OPEN_A  # nothing changed
    assert c.active_generation == 1


@pytest.mark.parametrize("reason", ["timeout", 5, []])
def test_D2_closed_generation_and_stale_handle_still_answer_without_reading_the_reason(reason: object) -> None:
    c, h = begun("a")
    closed = c.close(h)
    assert to_json(c.close(h, reason)) == to_json(closed)
    result = c.close(BatchHandle(1), reason)
    assert isinstance(result, Rejection)
    assert to_json(result) == (
        '{"accepted":false,"reason":"stale_generation","callId":null,"generation":1,"observedStatus":null}'
    )


def test_D2_over_the_protocol() -> None:
    lines = [
        NEW,
        BEGIN_A,
        request(2, "close", H1, "timeout"),
        request(3, "close", H1, 5),
        request(4, "close", H1, []),
        request(5, "snapshot"),
    ]
    not_object = '"error":{"kind":"TypeError","message":"reason must be an object"}}'
    assert same(
        reference(*lines),
        [
            '{"id":0,"ok":null}',
            BEGIN_A_OK,
            '{"id":2,' + not_object,
            '{"id":3,' + not_object,
            '{"id":4,' + not_object,
            '{"id":5,"ok":' + OPEN_A + "}",
        ],
    )
    # The original accepts the string silently as {} (all defaults); later closes are idempotent.
    assert original(*lines) == [
        '{"id":0,"ok":null}',
        BEGIN_A_OK,
        '{"id":2,"ok":' + CLOSED_A_DEFAULT + "}",
        '{"id":3,"ok":' + CLOSED_A_DEFAULT + "}",
        '{"id":4,"ok":' + CLOSED_A_DEFAULT + "}",
        '{"id":5,"ok":' + CLOSED_A_DEFAULT + "}",
    ]


# =========================================================================== D3


class Exploding:
    """An error value whose conversion (``__str__``) raises and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __str__(self) -> str:
        self.calls += 1
        raise RuntimeError("ts-first")


def test_D3_absent_or_none_error_gives_the_default_message() -> None:
    c, h = begun("a", "b")
    for call_id, result in (("a", c.fail(h, "a")), ("b", c.fail(h, "b", None))):
        assert to_json(result) == (
            '{"accepted":true,"generation":1,"callId":"' + call_id + '","settlement":{"status":"error",'
            '"code":"tool_error","message":"Tool call failed.","provenance":"reported"}}'
        )


def test_D3_error_is_converted_only_when_the_settlement_is_admitted() -> None:
    c, h = begun("a", "b")
    error = Exploding()
    # A stale handle, an unknown call, a settled call and a closed generation: fenced, never converted.
    assert to_json(c.fail(BatchHandle(1), "a", error)) == (
        '{"accepted":false,"reason":"stale_generation","callId":"a","generation":1,"observedStatus":"error"}'
    )
    assert to_json(c.fail(h, "zz", error)) == (
        '{"accepted":false,"reason":"unknown_call","callId":"zz","generation":1,"observedStatus":null}'
    )
    c.succeed(h, "b", "ok")
    assert to_json(c.fail(h, "b", error)) == (
        '{"accepted":false,"reason":"duplicate_settlement","callId":"b","generation":1,"observedStatus":null}'
    )
    # An invalid callId raises the callId error, not the caller's exception.
    raises(UsageError, "string_empty", "callId must be a non-empty string", lambda: c.fail(h, "", error))
    raises(UsageError, "string_empty", "callId must be a non-empty string", lambda: c.fail(h, 5, error))
    # An invalid code is checked before the error is converted.
    raises(UsageError, "string_empty", "outcome.code must be a non-empty string", lambda: c.fail(h, "a", error, ""))
    c2, h2 = begun("a")
    c2.close(h2)
    assert to_json(c2.fail(h2, "a", error)) == (
        '{"accepted":false,"reason":"run_closed","callId":"a","generation":1,"observedStatus":"error"}'
    )
    assert error.calls == 0
    # Admitted: now the caller's code runs (and its exception propagates, leaving the call pending).
    with pytest.raises(RuntimeError, match=r"^ts-first$"):
        c.fail(h, "a", error)
    assert error.calls == 1
    snapshot = c.snapshot()
    assert snapshot is not None
    assert snapshot.calls[0].state == "pending"


def test_D3_nested_settlement_during_conversion_is_seen_by_the_recheck() -> None:
    c, h = begun("a")

    class Settles:
        def __str__(self) -> str:
            c.succeed(h, "a", "inner")
            return "converted"

    assert to_json(c.fail(h, "a", Settles())) == (
        '{"accepted":false,"reason":"duplicate_settlement","callId":"a","generation":1,"observedStatus":"error"}'
    )


def test_D3_over_the_protocol() -> None:
    throwing = {"$hook": {"throw": "ts-first"}}
    settling = {
        "$hook": {
            "calls": [{"id": 10, "cmd": "call", "method": "succeed", "args": [H1, "c", "inner"]}],
            "then": "converted",
        }
    }
    lines = [
        NEW,
        request(1, "begin", [{"id": "a", "name": "t"}, {"id": "b", "name": "t"}, {"id": "c", "name": "t"}]),
        request(2, "fail", H1, "a"),
        request(3, "fail", H1, "b", None),
        request(4, "fail", {"$forgedHandle": 1}, "c", throwing),
        request(5, "fail", H1, "", throwing),
        request(6, "fail", H1, "c", settling),
    ]
    nested = (
        '{"id":10,"nested":1,"ok":{"accepted":true,"generation":1,"callId":"c","settlement":{"status":"success",'
        '"content":"inner","provenance":"reported"}}}'
    )

    def failed(request_id: int, call_id: str, message: str) -> str:
        return (
            '{"id":' + str(request_id) + ',"ok":{"accepted":true,"generation":1,"callId":"' + call_id + '",'
            '"settlement":{"status":"error","code":"tool_error","message":"' + message + '","provenance":"reported"}}}'
        )

    assert same(
        reference(*lines),
        [
            '{"id":0,"ok":null}',
            BEGIN_A_OK,
            failed(2, "a", "Tool call failed."),
            failed(3, "b", "Tool call failed."),
            '{"id":4,"ok":{"accepted":false,"reason":"stale_generation","callId":"c","generation":1,'
            '"observedStatus":"error"}}',
            '{"id":5,"error":{"kind":"TypeError","message":"callId must be a non-empty string"}}',
            nested,
            '{"id":6,"ok":{"accepted":false,"reason":"duplicate_settlement","callId":"c","generation":1,'
            '"observedStatus":"error"}}',
        ],
    )
    # The original: "undefined" and "null" messages; caller code runs (and throws) before the callId check and
    # the guards; the nested settlement is seen by the pre-check, with observedStatus null.
    assert same(
        original(*lines),
        [
            '{"id":0,"ok":null}',
            BEGIN_A_OK,
            failed(2, "a", "undefined"),
            failed(3, "b", "null"),
            '{"id":4,"error":{"kind":"CallerError","message":"ts-first"}}',
            '{"id":5,"error":{"kind":"CallerError","message":"ts-first"}}',
            nested,
            '{"id":6,"ok":{"accepted":false,"reason":"duplicate_settlement","callId":"c","generation":1,'
            '"observedStatus":null}}',
        ],
    )


# =========================================================================== D4


class Count(int):
    """An int subclass (not a bool): an integer."""


@pytest.mark.parametrize("value", [1.0, 1e3, 1.5, float("nan"), float("inf"), "5", decimal.Decimal(5)])
def test_D4_limits_must_be_python_ints(value: object) -> None:
    raises(
        UsageError,
        "option_invalid",
        "maxCalls must be a positive safe integer",
        lambda: ToolCallClosure(max_calls=value),  # type: ignore[arg-type]
    )
    raises(
        UsageError,
        "option_invalid",
        "maxCodeBytes must be a positive safe integer",
        lambda: ToolCallClosure(max_code_bytes=value),  # type: ignore[arg-type]
    )


def test_D4_ints_and_int_subclasses_are_limits() -> None:
    c = ToolCallClosure(max_calls=1000, max_code_bytes=Count(2))
    assert c.limits.max_calls == 1000
    assert c.limits.max_code_bytes == 2
    h = c.begin([{"id": "a", "name": "t"}]).handle
    raises(LimitError, "string_too_long", "outcome.code exceeds its byte limit (2)", lambda: c.fail(h, "a", "m", "abc"))


@pytest.mark.parametrize("handle", [BatchHandle(1.0), {"generation": 1.0}, {"generation": 2.0}])  # type: ignore[arg-type]
def test_D4_a_float_handle_generation_is_reported_as_null(handle: object) -> None:
    c, _h = begun("a")
    assert to_json(c.succeed(handle, "a", 1)) == (
        '{"accepted":false,"reason":"stale_generation","callId":"a","generation":null,"observedStatus":"success"}'
    )
    assert to_json(c.close(handle)) == (
        '{"accepted":false,"reason":"stale_generation","callId":null,"generation":null,"observedStatus":null}'
    )
    assert to_json(c.seal(handle)) == (
        '{"accepted":false,"reason":"stale_generation","callId":null,"generation":null,"observedStatus":null}'
    )
    assert to_json(c.succeed({"generation": 1}, "a", 1)) == (  # an int is reported
        '{"accepted":false,"reason":"stale_generation","callId":"a","generation":1,"observedStatus":"success"}'
    )


def test_D4_json_fed_options_behave_as_in_the_original() -> None:
    lines = [
        '{"id":0,"cmd":"new","options":{"maxCalls":1.0,"maxCodeBytes":1e3}}',
        request(1, "begin", [{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]),
        '{"id":2,"cmd":"new","options":{"maxCalls":1.5}}',
        '{"id":3,"cmd":"new"}',
        request(4, "begin", [{"id": "a", "name": "t"}]),
        request(5, "close", {"$forgedHandle": 1.0}),
    ]
    assert same(
        reference(*lines),
        [
            '{"id":0,"ok":null}',
            '{"id":1,"error":{"kind":"RangeError","message":"calls exceed maxCalls (1)"}}',
            '{"id":2,"error":{"kind":"TypeError","message":"maxCalls must be a positive safe integer"}}',
            '{"id":3,"ok":null}',
            '{"id":4,"ok":{"generation":1,"handle":{"generation":1},"superseded":null}}',
            '{"id":5,"ok":{"accepted":false,"reason":"stale_generation","callId":null,"generation":1,'
            '"observedStatus":null}}',
        ],
    )


# =========================================================================== D5


class Text(str):
    """A str subclass whose overridable methods would show if the reference called them."""

    def __eq__(self, other: object) -> bool:
        raise AssertionError("caller code ran: __eq__")

    def __hash__(self) -> int:
        raise AssertionError("caller code ran: __hash__")

    def strip(self, chars: str | None = None) -> str:
        raise AssertionError("caller code ran: strip")

    def encode(self, encoding: str = "utf-8", errors: str = "strict") -> bytes:
        raise AssertionError("caller code ran: encode")

    def __len__(self) -> int:
        raise AssertionError("caller code ran: __len__")


def test_D5_str_subclasses_are_strings_with_their_plain_value() -> None:
    c = ToolCallClosure()
    h = c.begin([{"id": Text("a"), "name": Text("t")}, {"id": "b", "name": "t"}]).handle
    result = c.settle(h, Text("a"), {"status": Text("error"), "code": Text("E")})
    assert to_json(result) == (
        '{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"error","code":"E",'
        '"message":"Tool call failed.","provenance":"reported"}}'
    )
    assert isinstance(result, Accepted)
    assert {type(result.call_id), type(result.settlement.status), type(result.settlement.code)} == {str}
    closed = c.close(h, {"status": Text("cancelled"), "code": Text("C"), "sideEffectState": Text("not_started")})
    assert isinstance(closed, Snapshot)
    assert to_json(closed.close_reason) == (
        '{"status":"cancelled","code":"C","message":"Tool call was cancelled.","sideEffectState":"not_started"}'
    )
    assert type(closed.calls[0].id) is str
    assert type(closed.calls[0].name) is str


class Compared(str):
    """A str subclass whose comparison operators would show if the reference called them."""

    __hash__ = str.__hash__

    def __eq__(self, other: object) -> bool:
        raise AssertionError("caller code ran: __eq__")

    def __ne__(self, other: object) -> bool:
        raise AssertionError("caller code ran: __ne__")


@pytest.mark.parametrize(
    "reason",
    [
        {"sideEffectState": Compared("not_started"), "side_effect_state": "not_started"},
        {"sideEffectState": "not_started", "side_effect_state": Compared("not_started")},
    ],
)
def test_D5_str_subclass_side_effect_states_are_compared_by_their_plain_value(reason: dict[str, Any]) -> None:
    c, h = begun("a")
    closed = c.close(h, reason)
    assert isinstance(closed, Snapshot)
    assert closed.close_reason is not None
    assert closed.close_reason.side_effect_state == "not_started"


def test_D5_a_str_subclass_content_is_stored_unquoted() -> None:
    # The original JSON-quotes a String object ('"x"'); the reference stores the plain string.
    c, h = begun("a", "b")
    result = c.succeed(h, "a", Text("x"))
    assert isinstance(result, Accepted)
    assert result.settlement.content == "x"
    assert type(result.settlement.content) is str
    result = c.succeed(h, "b", [Text("x")])
    assert isinstance(result, Accepted)
    assert result.settlement.content == '["x"]'


def test_D5_blank_and_oversize_str_subclasses_are_refused_by_their_plain_value() -> None:
    class Plain(str):
        pass

    c = ToolCallClosure(max_id_bytes=2)
    raises(UsageError, "string_empty", "calls[0].id must be a non-empty string", lambda: c.begin([{"id": Plain(" ")}]))
    raises(
        LimitError,
        "string_too_long",
        "calls[0].id exceeds its byte limit (2)",
        lambda: c.begin([{"id": Plain("abc"), "name": "t"}]),
    )


@pytest.mark.parametrize(
    ("content", "stored"),
    [
        (2**64, "18446744073709551616"),
        (9007199254740993, "9007199254740993"),
        (-(2**70), "-1180591620717411303424"),
        ([2**53 + 1], "[9007199254740993]"),
    ],
)
def test_D5_ints_are_serialized_with_all_their_digits(content: object, stored: str) -> None:
    c, h = begun("a")
    result = c.succeed(h, "a", content)
    assert isinstance(result, Accepted)
    assert result.settlement.content == stored


@dataclasses.dataclass
class Point:
    y: int
    x: int
    label: str = "p"


class Model:
    """A pydantic-style model: ``model_dump(mode="json")``."""

    def __init__(self) -> None:
        self.modes: list[str] = []

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        self.modes.append(mode)
        return {"kind": "model", "mode": mode}


class Colour(enum.Enum):
    RED = "red"
    LEVEL = 3


class Hooked:
    def __json__(self) -> Any:
        return {"hooked": [1, 2]}


@pytest.mark.parametrize(
    ("content", "stored"),
    [
        (Hooked(), '{"hooked":[1,2]}'),
        (Point(2, 1), '{"y":2,"x":1,"label":"p"}'),  # fields in declaration order
        (Model(), '{"kind":"model","mode":"json"}'),
        (datetime.datetime(2020, 1, 2, 3, 4, 5, tzinfo=datetime.UTC), '"2020-01-02T03:04:05+00:00"'),
        (datetime.date(2020, 1, 2), '"2020-01-02"'),
        (datetime.time(3, 4, 5), '"03:04:05"'),
        (Colour.RED, '"red"'),
        (Colour.LEVEL, "3"),
        ({"at": [Point(1, 2)], "c": Colour.RED}, '{"at":[{"y":1,"x":2,"label":"p"}],"c":"red"}'),
    ],
)
def test_D5_projection_rule_for_non_json_content(content: object, stored: str) -> None:
    c, h = begun("a")
    result = c.succeed(h, "a", content)
    assert isinstance(result, Accepted)
    assert result.settlement.content == stored


class Opaque:
    pass


@pytest.mark.parametrize(
    "content",
    [
        {1, 2},
        frozenset(),
        b"ab",
        bytearray(b"ab"),
        decimal.Decimal("1.5"),
        Opaque(),
        {1: "int key"},
        {"ok": [{2.5: "float key"}]},
        [Opaque()],
        {"f": len},  # a function member: the original drops it, the reference refuses it
        complex(1, 2),
    ],
)
def test_D5_other_values_are_refused_instead_of_dropped(content: object) -> None:
    c, h = begun("a")
    raises(
        UsageError,
        "content_not_serializable",
        "result content must be JSON-serializable or a string",
        lambda: c.succeed(h, "a", content),
    )
    assert to_json(c.snapshot()) == OPEN_A


# =========================================================================== D6


def test_D6_python_error_classes() -> None:
    assert issubclass(UsageError, TypeError)
    assert issubclass(LimitError, ValueError)
    assert issubclass(UsageError, ToolCallClosureError)
    assert issubclass(LimitError, ToolCallClosureError)
    c = ToolCallClosure(max_calls=1)
    with pytest.raises(ToolCallClosureError) as info:
        c.begin([{}, {}])
    assert type(info.value) is LimitError
    assert info.value.code == "calls_exceed_max"
    with pytest.raises(ToolCallClosureError) as info:
        c.begin("x")
    assert type(info.value) is UsageError
    assert info.value.code == "calls_not_array"


def test_D6_frozen_values_and_read_only_active_generation() -> None:
    c, h = begun("a")
    snapshot = c.snapshot()
    assert snapshot is not None
    for target, attribute in ((snapshot, "closed"), (h, "generation"), (snapshot.calls[0], "state")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(target, attribute, None)
    with pytest.raises(AttributeError):
        c.active_generation = 7  # type: ignore[misc]
    assert c.active_generation == 1
    assert to_json(snapshot) == OPEN_A


def test_D6_the_class_is_final() -> None:
    with pytest.raises(TypeError):

        class Sub(ToolCallClosure):  # type: ignore[misc]
            def settle(self, handle: Any, call_id: Any, outcome: Any) -> Any:
                return "overridden"


def test_D6_bound_methods_keep_their_instance_and_the_factory_is_the_constructor() -> None:
    c = create_tool_call_closure(max_calls=1)
    assert type(c) is ToolCallClosure
    assert c.limits.max_calls == 1
    begin, snapshot, succeed = c.begin, c.snapshot, c.succeed  # detached
    h = begin([{"id": "a", "name": "t"}]).handle
    assert isinstance(succeed(h, "a", 1), Accepted)
    assert snapshot() is not None
    with pytest.raises(TypeError):
        ToolCallClosure({})  # type: ignore[arg-type, call-arg]  # options are keyword-only


# =========================================================================== D7


@dataclasses.dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str = "{}"


def test_D7_objects_are_read_by_attribute() -> None:
    c = ToolCallClosure()
    h = c.begin([ToolCall("a", "t"), SimpleNamespace(id="b", name="u")]).handle
    assert to_json(c.settle(h, "a", SimpleNamespace(status="error", code="E", message="m"))) == (
        '{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"error","code":"E","message":"m",'
        '"provenance":"reported"}}'
    )
    closed = c.close(h, SimpleNamespace(status="error", code="C", sideEffectState="not_started"))
    assert to_json(closed) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"error","code":"C",'
        '"message":"Tool call did not complete.","sideEffectState":"not_started"},"calls":['
        '{"id":"a","name":"t","state":"error","settlement":{"status":"error","code":"E","message":"m",'
        '"provenance":"reported"}},'
        '{"id":"b","name":"u","state":"error","settlement":{"status":"error","code":"C",'
        '"message":"Tool call did not complete.","provenance":"synthetic","sideEffectState":"not_started"}}],'
        '"diagnostics":[]}'
    )


def test_D7_mappings_are_read_by_key_not_by_attribute() -> None:
    class Keyed(dict[str, Any]):
        status = "success"  # an attribute the reference must not read
        id = "attribute"

    c = ToolCallClosure()
    raises(UsageError, "string_empty", "calls[0].id must be a non-empty string", lambda: c.begin([Keyed()]))
    h = c.begin([Keyed(id="a", name="t")]).handle
    raises(
        UsageError,
        "outcome_status_invalid",
        "outcome.status must be success, error, or cancelled",
        lambda: c.settle(h, "a", Keyed()),
    )


def test_D7_callables_are_not_objects_even_with_attributes() -> None:
    def outcome() -> None:
        return None

    outcome.status = "error"  # type: ignore[attr-defined]
    c, h = begun("a")
    # The original reads a function's status for the preview ("error"); the reference reads nothing.
    assert to_json(c.settle(BatchHandle(1), "a", outcome)) == (
        '{"accepted":false,"reason":"stale_generation","callId":"a","generation":1,"observedStatus":null}'
    )
    raises(UsageError, "outcome_not_object", "outcome must be an object", lambda: c.settle(h, "a", outcome))


@pytest.mark.parametrize(
    "reason",
    [
        {"side_effect_state": "not_started"},
        SimpleNamespace(side_effect_state="not_started"),
        {"sideEffectState": "not_started", "side_effect_state": "not_started"},
        {"sideEffectState": "not_started", "side_effect_state": None},
        {"sideEffectState": None, "side_effect_state": "not_started"},
    ],
)
def test_D7_side_effect_state_is_accepted(reason: object) -> None:
    c, h = begun("a")
    closed = c.close(h, reason)
    assert isinstance(closed, Snapshot)
    assert closed.close_reason is not None
    assert closed.close_reason.side_effect_state == "not_started"


@pytest.mark.parametrize(
    "reason",
    [
        {"sideEffectState": "unknown", "side_effect_state": "not_started"},
        SimpleNamespace(sideEffectState="not_started", side_effect_state="unknown"),
    ],
)
def test_D7_both_spellings_with_different_values_are_refused(reason: object) -> None:
    c, h = begun("a")
    raises(
        UsageError,
        "side_effect_state_conflict",
        "reason.sideEffectState and reason.side_effect_state disagree",
        lambda: c.close(h, reason),
    )
    assert to_json(c.snapshot()) == OPEN_A


def test_D7_side_effect_state_key_over_the_protocol() -> None:
    lines = [
        NEW,
        request(1, "begin", [{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]),
        request(2, "close", H1, {"sideEffectState": "unknown", "side_effect_state": "not_started"}),
        request(3, "close", H1, {"side_effect_state": "not_started"}),
    ]

    def closed(state: str) -> str:
        synthetic = (
            '{"status":"cancelled","code":"cancelled","message":"Tool call was cancelled.","provenance":"synthetic",'
            '"sideEffectState":"' + state + '"}'
        )
        return (
            '{"generation":1,"closed":true,"closeReason":{"status":"cancelled","code":"cancelled",'
            '"message":"Tool call was cancelled.","sideEffectState":"' + state + '"},"calls":['
            '{"id":"a","name":"t","state":"cancelled","settlement":' + synthetic + "},"
            '{"id":"b","name":"t","state":"cancelled","settlement":' + synthetic + '}],"diagnostics":[]}'
        )

    assert same(
        reference(*lines),
        [
            '{"id":0,"ok":null}',
            BEGIN_A_OK,
            '{"id":2,"error":{"kind":"TypeError","message":"reason.sideEffectState and reason.side_effect_state '
            'disagree"}}',
            '{"id":3,"ok":' + closed("not_started") + "}",
        ],
    )
    # The original ignores the side_effect_state key: the first close takes sideEffectState and succeeds.
    assert original(*lines) == [
        '{"id":0,"ok":null}',
        BEGIN_A_OK,
        '{"id":2,"ok":' + closed("unknown") + "}",
        '{"id":3,"ok":' + closed("unknown") + "}",
    ]


# =========================================================================== D8


def _closed_three() -> tuple[ToolCallClosure, Snapshot]:
    closure = ToolCallClosure()
    handle = closure.begin(
        [{"id": "call_1", "name": "weather"}, {"id": "tcc_gemini_1", "name": "search"}, {"id": "c3", "name": "w"}]
    ).handle
    closure.succeed(handle, "call_1", {"t": 1})
    closure.fail(handle, "tcc_gemini_1", ValueError("bad"), "E")
    snapshot = closure.close(handle, {"status": "error", "code": "T", "message": "m", "sideEffectState": "unknown"})
    assert isinstance(snapshot, Snapshot)
    return closure, snapshot


def test_D8_gemini_function_responses() -> None:
    closure, snapshot = _closed_three()
    assert closure.to_gemini_function_responses(snapshot) == [
        {"function_response": {"id": "call_1", "name": "weather", "response": {"output": '{"t":1}'}}},
        {"function_response": {"name": "search", "response": {"error": {"code": "E", "message": "bad"}}}},
        {
            "function_response": {
                "id": "c3",
                "name": "w",
                "response": {"error": {"code": "T", "message": "m", "side_effect_state": "unknown"}},
            }
        },
    ]


def test_D8_bedrock_tool_results() -> None:
    closure, snapshot = _closed_three()
    assert closure.to_bedrock_tool_results(snapshot) == [
        {"toolResult": {"toolUseId": "call_1", "content": [{"text": '{"t":1}'}]}},
        {
            "toolResult": {
                "toolUseId": "tcc_gemini_1",
                "content": [{"text": '{"error":{"code":"E","message":"bad"}}'}],
                "status": "error",
            }
        },
        {
            "toolResult": {
                "toolUseId": "c3",
                "content": [{"text": '{"error":{"code":"T","message":"m","side_effect_state":"unknown"}}'}],
                "status": "error",
            }
        },
    ]


def test_D8_new_exports_keep_the_provenance_rules() -> None:
    _, snapshot = _closed_three()
    other = ToolCallClosure()
    raises(
        UsageError,
        "snapshot_foreign",
        "snapshot must be a ToolCallClosure snapshot",
        lambda: other.to_bedrock_tool_results(snapshot),
    )
    open_closure, _ = begun("a")
    raises(
        UsageError,
        "snapshot_open",
        "snapshot must be sealed before provider export",
        open_closure.to_gemini_function_responses,
    )


def test_D8_over_the_protocol() -> None:
    lines = [NEW, BEGIN_A, request(2, "close", H1), request(3, "toBedrockToolResults", {"$snapshot": 2})]
    cancelled = '{\\"error\\":{\\"code\\":\\"cancelled\\",\\"message\\":\\"Tool call was cancelled.\\",\\"side_effect_state\\":\\"unknown\\"}}'
    assert reference(*lines)[3] == (
        '{"id":3,"ok":[{"toolResult":{"toolUseId":"a","content":[{"text":"' + cancelled + '"}],"status":"error"}}]}'
    )
    assert json.loads(original(*lines)[3])["error"]["kind"] == "ProtocolError"  # the original has no such method


# =========================================================================== D9

MISREAD = "calls[1] has a call_id different from its id: it looks like an OpenAI Responses item, whose result must carry call_id (ingest it with tool_call_closure.providers.openai_responses.ingest)"


def test_D9_begin_refuses_a_responses_item_and_changes_nothing() -> None:
    from openai.types.responses import ResponseFunctionToolCall

    closure = ToolCallClosure()
    item = ResponseFunctionToolCall(type="function_call", id="fc_1", call_id="call_1", name="f", arguments="{}")
    raises(UsageError, "provider_item_ambiguous", MISREAD, lambda: closure.begin([{"id": "x", "name": "t"}, item]))
    raises(
        UsageError,
        "provider_item_ambiguous",
        MISREAD,
        lambda: closure.begin([{"id": "x", "name": "t"}, item.model_dump()]),
    )
    assert closure.active_generation is None


def test_D9_entries_without_a_different_call_id_are_read_as_before() -> None:
    @dataclasses.dataclass
    class Declared:
        id: str
        name: str
        call_id: str | None = None

    closure = ToolCallClosure()
    assert (
        closure.begin(
            [Declared("a", "t"), Declared("b", "t", "b"), {"id": "c", "name": "t", "call_id": None}]
        ).generation
        == 1
    )
    raises(
        UsageError,
        "provider_item_ambiguous",
        MISREAD,
        lambda: closure.begin([Declared("a", "t"), Declared("b", "t", "x")]),
    )
    # An object whose class does not declare call_id is never asked for it (BEG-4: id and name only).
    reads: list[str] = []

    class Probe:
        def __getattr__(self, key: str) -> Any:
            reads.append(key)
            return {"id": "p", "name": "t", "call_id": "other"}.get(key)

    closure.begin([Probe()])
    assert reads == ["id", "name"]


def test_D9_over_the_protocol() -> None:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}"}
    lines = [NEW, request(1, "begin", [item]), request(2, "activeGeneration")]
    message = MISREAD.replace("calls[1]", "calls[0]")
    assert same(
        reference(*lines),
        [
            '{"id":0,"ok":null}',
            '{"id":1,"error":{"kind":"TypeError","message":"' + message + '"}}',
            '{"id":2,"ok":null}',
        ],
    )
    assert same(original(*lines), ['{"id":0,"ok":null}', BEGIN_A_OK, '{"id":2,"ok":1}'])


# =========================================================================== D10


def test_D10_unknown_outcome_key_is_refused() -> None:
    closure, handle = begun("a")
    raises(
        UsageError,
        "outcome_key_unknown",
        "outcome has an unknown key: mesage",
        lambda: closure.settle(handle, "a", {"status": "error", "mesage": "x"}),
    )
    assert closure.snapshot().calls[0].state == "pending"  # type: ignore[union-attr]
    accepted = closure.settle(handle, "a", {"status": "error", "code": "E", "message": "m", "provenance": "reported"})
    assert isinstance(accepted, Accepted)


def test_D10_unknown_reason_key_is_refused_and_objects_are_not_checked() -> None:
    closure, handle = begun("a")
    raises(
        UsageError,
        "reason_key_unknown",
        "reason has an unknown key: side_effects",
        lambda: closure.close(handle, {"side_effects": "none"}),
    )
    assert closure.snapshot().closed is False  # type: ignore[union-attr]
    closed = closure.close(handle, SimpleNamespace(status="error", extra=1))
    assert isinstance(closed, Snapshot)
    assert closed.close_reason is not None
    assert closed.close_reason.status == "error"


def test_D10_over_the_protocol() -> None:
    lines = [NEW, BEGIN_A, request(2, "close", H1, {"status": "error", "sideEffect": "unknown"})]
    assert same(
        reference(*lines)[2:],
        ['{"id":2,"error":{"kind":"TypeError","message":"reason has an unknown key: sideEffect"}}'],
    )
    assert json.loads(original(*lines)[2])["ok"]["closeReason"]["status"] == "error"


# =========================================================================== D11


@pytest.mark.parametrize(
    ("error", "message"), [(TimeoutError(), "TimeoutError"), (ValueError(""), "ValueError"), (KeyError("k"), "'k'")]
)
def test_D11_an_exception_without_text_is_named_by_its_class(error: BaseException, message: str) -> None:
    closure, handle = begun("a")
    result = closure.fail(handle, "a", error)
    assert isinstance(result, Accepted)
    assert result.settlement.message == message


def test_D11_over_the_protocol() -> None:
    lines = [NEW, BEGIN_A, request(2, "fail", H1, "a", {"$error": ""})]

    def failed(message: str) -> str:
        return (
            '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"error","code":"tool_error","message":"'
            + message
            + '","provenance":"reported"}}}'
        )

    assert reference(*lines)[2] == failed("Error")
    assert original(*lines)[2] == failed("")


@pytest.mark.parametrize(
    ("limit", "error", "message"),
    [
        (1, Exception("Ü"), ""),  # a text that truncates to nothing is kept: the original's ""
        (2, RuntimeError("€uro"), ""),
        (1, TimeoutError(), "T"),  # the class name stands in for the empty text, then is truncated
        (3, TimeoutError(), "..."),
        (4, TimeoutError(), "T..."),
        (2, ValueError("é"), "é"),
    ],
)
def test_D11_the_text_is_tested_for_emptiness_before_truncation(limit: int, error: BaseException, message: str) -> None:
    """Issue 19: D11 named the class when the *truncated* text was empty, so ``"Ü"`` in 1 byte stored ``"E"``."""
    closure, handle = begun("a", max_message_bytes=limit)
    result = closure.fail(handle, "a", error)
    assert isinstance(result, Accepted)
    assert result.settlement.message == message


def test_D11_reads_the_exception_text_once() -> None:
    reads: list[str] = []

    class CountedError(Exception):
        def __str__(self) -> str:
            reads.append("read")
            return "Ü"

    closure, handle = begun("a", max_message_bytes=1)
    result = closure.fail(handle, "a", CountedError())
    assert isinstance(result, Accepted)
    assert result.settlement.message == ""
    assert reads == ["read"]


def test_D11_over_the_protocol_a_text_truncated_to_nothing_agrees_with_the_original() -> None:
    """The reference and the original store ``""`` for ``"€uro"`` in 2 bytes; only the empty text differs."""
    new = '{"id":1,"cmd":"new","options":{"maxMessageBytes":2}}'
    begin = request(2, "begin", [{"id": "a", "name": "t"}, {"id": "b", "name": "t"}])
    lines = [new, begin, request(3, "fail", H1, "a", {"$error": "€uro"}), request(4, "fail", H1, "b", {"$error": ""})]

    def failed(request_id: int, call_id: str, message: str) -> str:
        return (
            f'{{"id":{request_id},"ok":{{"accepted":true,"generation":1,"callId":"{call_id}","settlement":'
            f'{{"status":"error","code":"tool_error","message":"{message}","provenance":"reported"}}}}}}'
        )

    assert reference(*lines)[2:] == [failed(3, "a", ""), failed(4, "b", "Er")]
    assert original(*lines)[2:] == [failed(3, "a", ""), failed(4, "b", "")]


# =========================================================================== D18


def _shared_pairs(leaf: object, depth: int) -> list[Any]:
    value: list[Any] = [leaf]
    for _ in range(depth):
        value = [value, value]
    return value


def test_D18_content_past_the_budget_is_not_visited() -> None:
    """The walk stops at the first byte past maxResultBytes: a later hook does not run, a later error is not reached."""
    ran: list[str] = []

    class Later:
        def __json__(self) -> object:
            ran.append("__json__")
            return 1

    c, h = begun("a", max_result_bytes=8)
    raises(LimitError, "content_too_large", "result content exceeds maxResultBytes (8)",
           lambda: c.succeed(h, "a", ["xxxxxxxxxx", Later()]))  # fmt: skip
    raises(LimitError, "content_too_large", "result content exceeds maxResultBytes (8)",
           lambda: c.succeed(h, "a", ["xxxxxxxxxx", {1, 2}]))  # fmt: skip
    assert ran == []
    assert to_json(c.snapshot()) == OPEN_A
    # Within the budget nothing changes: the hook runs, the set is refused.
    c2, h2 = begun("a", max_result_bytes=100)
    assert to_json(c2.succeed(h2, "a", ["x", Later()]).settlement) == (  # type: ignore[union-attr]
        '{"status":"success","content":"[\\"x\\",1]","provenance":"reported"}'
    )
    assert ran == ["__json__"]


def test_D18_message_conversion_stops_once_the_truncation_is_decided() -> None:
    ran: list[str] = []

    class Later:
        def __str__(self) -> str:
            ran.append("__str__")
            return "y"

    c, h = begun("a", "b", max_message_bytes=8)
    assert c.cancel(h, "a", ["xxxxxxxxxx", Later()]).settlement.message == "xxxxx..."  # type: ignore[union-attr]
    assert ran == []
    assert c.cancel(h, "b", ["xxxxx", Later()]).settlement.message == "xxxxx,y"  # type: ignore[union-attr]
    assert ran == ["__str__"]


def test_D18_shared_structure_costs_the_limit_not_its_expansion() -> None:
    """2**20 leaves of caller code; the limits admit a few hundred of them."""
    runs = 0

    class Leaf:
        def __json__(self) -> str:
            nonlocal runs
            runs += 1
            return "aaaaaaaaaa"

        def __str__(self) -> str:
            nonlocal runs
            runs += 1
            return "aaaaaaaaaa"

    value = _shared_pairs(Leaf(), 20)
    c, h = begun("a", "b", max_result_bytes=4096, max_message_bytes=4096)
    with pytest.raises(LimitError):
        c.succeed(h, "a", value)
    assert runs <= 4096 // 12 + 1
    runs = 0
    assert len(c.fail(h, "b", value).settlement.message) == 4096  # type: ignore[union-attr]
    assert runs <= 4096 // 11 + 2


def test_D18_budget_over_the_protocol() -> None:
    hook = {"calls": [{"id": 100, "cmd": "call", "method": "activeGeneration", "args": []}], "then": 1}
    lines = [
        '{"id":0,"cmd":"new","options":{"maxResultBytes":8,"maxMessageBytes":8}}',
        request(1, "begin", [{"id": "a", "name": "t"}, {"id": "b", "name": "t"}]),
        request(2, "succeed", H1, "a", ["xxxxxxxxxx", {"$hook": hook}]),
        request(3, "cancel", H1, "b", ["xxxxxxxxxx", {"$hook": hook | {"then": "y"}}]),
    ]
    begin_ab = '{"id":1,"ok":{"generation":1,"handle":{"generation":1},"superseded":null}}'
    too_large = '{"id":2,"error":{"kind":"RangeError","message":"result content exceeds maxResultBytes (8)"}}'
    cancelled = (
        '{"id":3,"ok":{"accepted":true,"generation":1,"callId":"b","settlement":{"status":"cancelled",'
        '"code":"cancelled","message":"xxxxx...","provenance":"reported"}}}'
    )
    assert same(reference(*lines), ['{"id":0,"ok":null}', begin_ab, too_large, cancelled])
    # The original runs each hook (its nested response) before it raises or truncates.
    nested = '{"id":100,"nested":1,"ok":1}'
    assert same(original(*lines), ['{"id":0,"ok":null}', begin_ab, nested, too_large, nested, cancelled])


# =========================================================================== D19


class _Returns:
    def __init__(self, result: object) -> None:
        self.result = result

    def __str__(self) -> str:
        return self.result  # type: ignore[return-value]


class _NonStrTextError(Exception):
    def __str__(self) -> str:
        return None  # type: ignore[return-value]


def test_D19_str_returning_a_non_str_is_converted() -> None:
    c, h = begun("a", "b", "c", "d", "e")
    assert c.cancel(h, "a", _Returns(12.5)).settlement.message == "12.5"  # type: ignore[union-attr]
    assert c.cancel(h, "b", _Returns([1, [2, None]])).settlement.message == "1,2,"  # type: ignore[union-attr]
    assert c.cancel(h, "c", _Returns(object())).settlement.message == "[object Object]"  # type: ignore[union-attr]
    assert c.fail(h, "d", _NonStrTextError()).settlement.message == "null"  # type: ignore[union-attr]
    assert c.fail(h, "e", RuntimeError(_Returns(False))).settlement.message == "false"  # type: ignore[union-attr]


# =========================================================================== D20


def test_D20_a_stale_turn_does_not_supersede_the_newer_batch() -> None:
    closure = ToolCallClosure()
    older_turn = closure.turn_token()  # request 1 sent
    newer_turn = closure.turn_token()  # the user edited the prompt: request 2 sent
    newer = closure.begin([{"id": "new", "name": "t"}], turn=newer_turn)
    assert not isinstance(newer, Rejection)
    older = closure.begin([{"id": "old", "name": "t"}], turn=older_turn)
    assert isinstance(older, Rejection)
    assert (
        to_json(older)
        == '{"accepted":false,"reason":"stale_turn","callId":null,"generation":null,"observedStatus":null}'
    )
    assert closure.active_generation == 1
    snapshot = closure.snapshot()
    assert snapshot is not None
    assert [(c.id, c.state) for c in snapshot.calls] == [("new", "pending")]
    assert isinstance(closure.succeed(newer.handle, "new", "ok"), Accepted)


def test_D20_without_a_token_begin_is_the_originals() -> None:
    """The same sequence without tokens: the older turn's begin supersedes the newer batch, as in the original."""
    closure = ToolCallClosure()
    newer = closure.begin([{"id": "new", "name": "t"}])
    older = closure.begin([{"id": "old", "name": "t"}])
    assert older.superseded is not None
    assert older.superseded.calls[0].settlement is not None
    assert older.superseded.calls[0].settlement.code == "superseded"
    late = closure.succeed(newer.handle, "new", "ok")
    assert isinstance(late, Rejection)
    assert late.reason == "stale_generation"


def test_D20_a_turn_that_is_not_a_token_is_refused() -> None:
    closure, _ = begun("a")
    for turn in ({"generation": 1}, BatchHandle(1), 1, TurnToken(-1)):
        raises(
            UsageError,
            "turn_invalid",
            "turn must be a turn token (the value turnToken() returns)",
            lambda turn=turn: closure.begin([], turn=turn),
        )
    assert closure.active_generation == 1


def test_D20_over_the_protocol() -> None:
    lines = [
        NEW,
        request(1, "turnToken"),
        request(2, "begin", [{"id": "a", "name": "t"}], {"turn": {"generation": 0}}),
        request(3, "begin", [{"id": "b", "name": "t"}], {"turn": {"$snapshot": 1}}),
        request(4, "activeGeneration"),
    ]
    stale = (
        '{"id":3,"ok":{"accepted":false,"reason":"stale_turn","callId":null,"generation":null,"observedStatus":null}}'
    )
    assert same(
        reference(*lines),
        [
            '{"id":0,"ok":null}',
            '{"id":1,"ok":{"generation":0}}',
            BEGIN_A_OK.replace('"id":1,', '"id":2,'),
            stale,
            '{"id":4,"ok":1}',
        ],
    )
    # The original has no turnToken (ProtocolError, and the failed call leaves no $snapshot record) and ignores
    # begin's second argument: its second begin supersedes the first.
    answers = original(*lines)
    assert json.loads(answers[1])["error"]["kind"] == "ProtocolError"
    assert json.loads(answers[2])["ok"]["generation"] == 1
    assert json.loads(answers[3])["error"]["kind"] == "ProtocolError"  # {"$snapshot": 1}: no such record
    assert answers[4] == '{"id":4,"ok":1}'
    plain = [NEW, BEGIN_A, request(2, "begin", [{"id": "b", "name": "t"}], {"turn": {"generation": 0}})]
    assert json.loads(original(*plain)[2])["ok"]["superseded"]["generation"] == 1  # the guard is ignored


# =========================================================================== D21


def test_D21_on_end_reports_each_generation_end_once_whoever_ended_it() -> None:
    closure = ToolCallClosure()
    ends: list[tuple[int, str, str | None]] = []

    def on_end(snapshot: Snapshot, how: str) -> None:
        assert snapshot.close_reason is not None
        ends.append((snapshot.generation, how, snapshot.close_reason.code))

    first = closure.begin([{"id": "a", "name": "t"}], on_end=on_end)
    second = closure.begin([{"id": "b", "name": "t"}], on_end=on_end)  # another caller's begin supersedes the first
    closure.close(second.handle, {"status": "error", "code": "mine"})
    closure.close(second.handle, {"status": "error", "code": "again"})  # idempotent: not a second end
    closure.close(first.handle)  # stale: nothing
    assert ends == [(1, "superseded", "superseded"), (2, "closed", "mine")]


def test_D21_without_on_end_begin_is_unchanged_and_nothing_is_kept() -> None:
    closure = ToolCallClosure()
    begun_ = closure.begin([{"id": "a", "name": "t"}])
    closure.close(begun_.handle)
    assert closure._end_watch.callbacks == {}
    assert closure._end_watch.pending == {}
    assert not closure._end_watch.active


# =========================================================================== D22 (tests/test_content_parts.py has the rest)


def test_D22_a_result_made_of_parts_is_recorded_and_rendered_natively() -> None:
    from tool_call_closure import ImageInput, content

    closure, handle = begun("a")
    result = content(["chart:", ImageInput(media_type="image/png", data=b"\x89PNG")])
    assert closure.succeed(handle, "a", result).accepted
    snapshot = closure.close(handle)
    assert isinstance(snapshot, Snapshot)
    blocks = closure.to_anthropic_tool_results(snapshot)[0]["content"]
    assert [block["type"] for block in blocks] == ["text", "image"]  # type: ignore[index]
    assert closure.to_openai_chat_completions(snapshot)[0]["content"].startswith("chart:\n[image image/png, 4 bytes")


def test_D22_over_the_protocol() -> None:
    parts = {
        "$parts": [
            {"type": "text", "text": "hi"},
            {"type": "image", "mediaType": "image/gif", "url": "https://e.com/a.gif"},
        ]
    }
    lines = [NEW, BEGIN_A, request(2, "succeed", H1, "a", parts), request(3, "snapshot")]
    content_json = (
        '{"$parts":[{"type":"text","text":"hi"},{"type":"image","mediaType":"image/gif","url":"https://e.com/a.gif"}]}'
    )
    assert same(
        reference(*lines),
        [
            '{"id":0,"ok":null}',
            BEGIN_A_OK,
            '{"id":2,"ok":{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"success",'
            f'"content":{content_json},"provenance":"reported"}}}}}}',
            '{"id":3,"ok":{"generation":1,"closed":false,"closeReason":null,"calls":[{"id":"a","name":"t",'
            f'"state":"success","settlement":{{"status":"success","content":{content_json},"provenance":"reported"}}}}],'
            '"diagnostics":[]}}',
        ],
    )
    # The original has no content parts: the protocol tag is unknown to its adapter (a ProtocolError), and the
    # closest a caller gets, the same object as plain content, is stored as its JSON text.
    answers = original(*lines)
    assert json.loads(answers[2])["error"]["kind"] == "ProtocolError"
    plain = {"$literal": parts["$parts"]}
    stored = original(NEW, BEGIN_A, request(2, "succeed", H1, "a", plain))[2]
    assert json.loads(stored)["ok"]["settlement"]["content"] == json.dumps(parts["$parts"], separators=(",", ":"))


# =========================================================================== D23


def test_D23_a_closure_outlives_its_process_through_an_image_and_a_new_epoch() -> None:
    from tool_call_closure.durable import FencedClosure, TokenRejection

    owner = FencedClosure.new("d23", b"k" * 32)
    begun = owner.begin([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}])
    assert owner.settle(begun.tokens["a"], {"status": "success", "content": "1"}).accepted
    successor = FencedClosure.restore(owner.image(), b"k" * 32)  # the owner's process died; its image survived
    assert successor.epoch == 2
    assert successor.settle(begun.tokens["b"], {"status": "success"}) == TokenRejection("stale_epoch", 1, 1, "b")
    assert successor.settle(successor.tokens()["b"], {"status": "success", "content": "2"}).accepted
    assert successor.begin([{"id": "c", "name": "t"}]).result.generation == 2  # numbering continues


def test_D23_a_forged_token_changes_nothing_and_the_closure_in_memory_is_unchanged() -> None:
    from tool_call_closure.durable import FencedClosure

    fenced = FencedClosure.new("d23", b"k" * 32)
    token = fenced.begin([{"id": "a", "name": "t"}]).tokens["a"]
    before = fenced.image()
    assert (
        fenced.settle(token[:-1] + ("A" if token[-1] != "A" else "B"), {"status": "success"}).reason == "token_forged"
    )
    assert fenced.image() == before
    closure, handle = begun("a")  # without the durable layer, nothing changed: handles are identities
    assert closure.settle(BatchHandle(generation=1), "a", {"status": "success"}).reason == "stale_generation"
    assert closure.settle(handle, "a", {"status": "success", "content": "1"}).accepted


# =========================================================================== D26 (tests/test_content_diagnostics.py has the rest)


def test_D26_a_media_success_records_media_moved_only_with_the_option() -> None:
    from tool_call_closure import ImageInput, content

    result = content(["chart:", ImageInput(media_type="image/png", data=b"\x89PNG")])
    closure, handle = begun("a", "b", text_only_tool_results=True)
    assert closure.succeed(handle, "a", result).accepted
    assert closure.succeed(handle, "b", "text").accepted
    snapshot = closure.close(handle)
    assert isinstance(snapshot, Snapshot)
    diagnostics = [to_json(d) for d in snapshot.diagnostics]
    assert diagnostics == ['{"reason":"media_moved","callId":"a","generation":1,"observedStatus":"success"}']
    plain, plain_handle = begun("a")
    assert plain.succeed(plain_handle, "a", result).accepted
    plain_snapshot = plain.close(plain_handle)
    assert isinstance(plain_snapshot, Snapshot)
    assert plain_snapshot.diagnostics == ()  # DIAG-5, as in the original


def test_D26_over_the_protocol() -> None:
    new = '{"id":0,"cmd":"new","options":{"textOnlyToolResults":true}}'
    image = {"$parts": [{"type": "image", "mediaType": "image/png", "url": "https://e.com/a.png"}]}
    lines = [new, BEGIN_A, request(2, "succeed", H1, "a", image), request(3, "snapshot")]
    answers = reference(*lines)
    assert json.loads(answers[3])["ok"]["diagnostics"] == [
        {"reason": "media_moved", "callId": "a", "generation": 1, "observedStatus": "success"}
    ]
    # The original ignores the option (an unknown key, OPT-3) and has no content parts: with a text result it
    # records nothing (DIAG-5); the tag is unknown to its adapter.
    text = original(new, BEGIN_A, request(2, "succeed", H1, "a", "text"), request(3, "snapshot"))
    assert text[0] == '{"id":0,"ok":null}'
    assert json.loads(text[3])["ok"]["diagnostics"] == []
    assert json.loads(original(*lines)[2])["error"]["kind"] == "ProtocolError"
