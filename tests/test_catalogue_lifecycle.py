"""Catalogue rules of the lifecycle, one or more tests per rule ID (shared/reference/seed-behavior.md).

Covered: MOD-1..4, OPT-1..6, GEN-1..3, BEG-1, BEG-3..7, SUP-1..6, SET-1..11, CONV-1..4, SEAL-1..4,
DIAG-1..5, SNAP-1..5, IMM-1, ADP-1..6.

Every expected value is the original's (tool-call-closure 1.0.0 on Node), written out by hand from the
catalogue and checked with ``node -e`` against ``seed/tool-call-closure-1.0.0/src/index.cjs``; where the
reference deliberately differs (spec/deviations.json, D1-D7) the test asserts the reference's documented
behaviour and names the deviation in its docstring.

Mapping of the catalogue's JavaScript examples: ``undefined`` is an argument not passed (or a missing
key), ``null`` is ``None``, objects are dicts, arrays are lists, a getter is a mapping whose
``__getitem__`` runs code (:class:`Obj` with :class:`Get` values), ``toJSON`` is ``__json__``
(:class:`Json`), ``toString`` is ``__str__`` (:class:`Text`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import subprocess
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import tool_call_closure
from tool_call_closure import (
    Accepted,
    BatchHandle,
    BeginResult,
    CallSnapshot,
    CloseReason,
    Diagnostic,
    LimitError,
    Limits,
    Rejection,
    Settlement,
    Snapshot,
    ToolCallClosure,
    ToolCallClosureError,
    UsageError,
    create_tool_call_closure,
    to_json,
)

# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------

# The seven limits in the original's validation order: Python keyword -> the original's option name.
OPTION_NAMES = {
    "max_calls": "maxCalls",
    "max_diagnostics": "maxDiagnostics",
    "max_result_bytes": "maxResultBytes",
    "max_message_bytes": "maxMessageBytes",
    "max_id_bytes": "maxIdBytes",
    "max_name_bytes": "maxNameBytes",
    "max_code_bytes": "maxCodeBytes",
}
DEFAULTS = {
    "max_calls": 1000,
    "max_diagnostics": 100,
    "max_result_bytes": 1048576,
    "max_message_bytes": 4096,
    "max_id_bytes": 512,
    "max_name_bytes": 512,
    "max_code_bytes": 128,
}

SUPERSEDED_MESSAGE = "Tool call was superseded by a newer generation."
SUPERSEDED_REASON = (
    '{"status":"cancelled","code":"superseded","message":"Tool call was superseded by a newer generation.",'
    '"sideEffectState":"unknown"}'
)
SUPERSEDED_SETTLEMENT = (
    '{"status":"cancelled","code":"superseded","message":"Tool call was superseded by a newer generation.",'
    '"provenance":"synthetic","sideEffectState":"unknown"}'
)
COMPLETE = '{"status":"complete"}'
FOREIGN = "snapshot must be a ToolCallClosure snapshot"
OPEN = "snapshot must be sealed before provider export"


def js(value: object) -> str:
    """JSON text of a plain value, written independently of the library (for building expected texts)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def rejection(reason: str, call_id: str | None, generation: int | None, observed: str | None) -> str:
    return (
        f'{{"accepted":false,"reason":{js(reason)},"callId":{js(call_id)},"generation":{js(generation)},'
        f'"observedStatus":{js(observed)}}}'
    )


def diagnostic(reason: str, call_id: str | None, generation: int | None, observed: str | None) -> str:
    return (
        f'{{"reason":{js(reason)},"callId":{js(call_id)},"generation":{js(generation)},'
        f'"observedStatus":{js(observed)}}}'
    )


def success(content: str) -> str:
    return f'{{"status":"success","content":{js(content)},"provenance":"reported"}}'


def reported(status: str, code: str, message: str) -> str:
    return f'{{"status":{js(status)},"code":{js(code)},"message":{js(message)},"provenance":"reported"}}'


def synthetic(status: str, code: str, message: str, side: str = "unknown") -> str:
    return (
        f'{{"status":{js(status)},"code":{js(code)},"message":{js(message)},"provenance":"synthetic",'
        f'"sideEffectState":{js(side)}}}'
    )


def close_reason(status: str, code: str, message: str, side: str = "unknown") -> str:
    return f'{{"status":{js(status)},"code":{js(code)},"message":{js(message)},"sideEffectState":{js(side)}}}'


def call_text(call_id: str, state: str = "pending", settlement: str = "null", name: str = "t") -> str:
    return f'{{"id":{js(call_id)},"name":{js(name)},"state":{js(state)},"settlement":{settlement}}}'


def snapshot_text(
    generation: int, closed: bool, reason: str, calls: list[str], diagnostics: tuple[str, ...] | list[str] = ()
) -> str:
    return (
        f'{{"generation":{generation},"closed":{js(closed)},"closeReason":{reason},'
        f'"calls":[{",".join(calls)}],"diagnostics":[{",".join(diagnostics)}]}}'
    )


def entries(*ids: str) -> list[dict[str, str]]:
    """A call list: one ``{"id": i, "name": "t"}`` per id."""
    return [{"id": i, "name": "t"} for i in ids]


def begun(*ids: str, **limits: Any) -> tuple[ToolCallClosure, BatchHandle]:
    """A fresh closure with one open generation of calls ``ids``, and its handle."""
    closure = ToolCallClosure(**limits)
    return closure, closure.begin(entries(*ids)).handle


def current(closure: ToolCallClosure) -> str:
    """The canonical JSON text of a fresh snapshot (``null`` before the first begin)."""
    return to_json(closure.snapshot())


@contextlib.contextmanager
def raises(kind: type[ToolCallClosureError], message: str, code: str) -> Iterator[None]:
    """The block raises exactly ``kind`` with exactly ``message`` and error code ``code``."""
    with pytest.raises(kind) as info:
        yield
    assert type(info.value) is kind
    assert str(info.value) == message
    assert info.value.code == code


@contextlib.contextmanager
def unchanged(closure: ToolCallClosure) -> Iterator[None]:
    """The block changes neither the active generation nor the current generation (diagnostics included)."""
    before = (closure.active_generation, current(closure))
    yield
    assert (closure.active_generation, current(closure)) == before


class Get:
    """A getter: an :class:`Obj` value that runs ``fn`` each time its key is read."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn


class Obj(Mapping[str, Any]):
    """A JavaScript object with getters: a mapping that counts reads and runs :class:`Get` values."""

    def __init__(self, **fields: Any) -> None:
        self.fields = fields
        self.reads: Counter[str] = Counter()

    def __getitem__(self, key: str) -> Any:
        self.reads[key] += 1
        value = self.fields[key]
        return value.fn() if isinstance(value, Get) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self.fields)

    def __len__(self) -> int:
        return len(self.fields)


class Json:
    """An object with a ``toJSON`` method (``__json__``) that runs ``fn``."""

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn

    def __json__(self) -> Any:
        return self.fn()


class Text:
    """An object with a ``toString`` method (``__str__``) that runs ``fn``; ``calls`` counts conversions."""

    def __init__(self, fn: Callable[[], str]) -> None:
        self.fn = fn
        self.calls = 0

    def __str__(self) -> str:
        self.calls += 1
        return self.fn()


def then(*steps: Any) -> Any:
    """The last of ``steps``: ``lambda: then(side_effect(), value)`` runs a side effect, then gives a value."""
    return steps[-1]


SRC = Path(tool_call_closure.__file__).resolve().parents[1]


def serve(*requests: dict[str, Any]) -> list[str]:
    """Run ``python -m tool_call_closure serve`` over ``requests``; return its response lines."""
    text = "".join(json.dumps(r) + "\n" for r in requests)
    done = subprocess.run(
        [sys.executable, "-m", "tool_call_closure", "serve"],
        input=text.encode("utf-8"),
        capture_output=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(SRC)},
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode("utf-8").split("\n")[:-1]


def protocol_error(request_id: object, kind: str, message: str) -> str:
    """An error response line: ``{"id":…,"error":{"kind":…,"message":…}}`` (spec/protocol.md, Errors)."""
    return f'{{"id":{js(request_id)},"error":{{"kind":{js(kind)},"message":{js(message)}}}}}'


# ---------------------------------------------------------------------------------------------------------------
# 1. Module surface (MOD)
# ---------------------------------------------------------------------------------------------------------------

PUBLIC_NAMES = [
    "Accepted",
    "BatchHandle",
    "BeginResult",
    "CallSnapshot",
    "CloseReason",
    "Diagnostic",
    "FileInput",  # deviation D22: content parts (tool_call_closure.parts)
    "ImageInput",
    "JsonInput",
    "LimitError",
    "Limits",
    "Rejection",
    "Settlement",
    "SettlementResult",
    "Snapshot",
    "TableError",
    "TextInput",
    "ToolCallClosure",
    "ToolCallClosureError",
    "ToolContent",
    "TurnToken",  # deviation D20: the token turn_token() returns, for begin(calls, turn=token)
    "UsageError",
    "__version__",
    "content",
    "create_tool_call_closure",
    "to_json",
]


def test_MOD_1_all_is_exactly_the_public_names() -> None:
    """The original exports {ToolCallClosure, createToolCallClosure}; Python's counterpart is ``__all__``."""
    assert sorted(tool_call_closure.__all__) == PUBLIC_NAMES
    assert len(set(tool_call_closure.__all__)) == len(tool_call_closure.__all__)
    for name in PUBLIC_NAMES:
        assert hasattr(tool_call_closure, name), name
    namespace: dict[str, Any] = {}
    exec("from tool_call_closure import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == PUBLIC_NAMES


def test_MOD_1_exports_the_class_and_its_factory_and_no_default() -> None:
    assert isinstance(tool_call_closure.ToolCallClosure, type)
    assert tool_call_closure.ToolCallClosure is ToolCallClosure
    assert tool_call_closure.create_tool_call_closure is create_tool_call_closure
    assert tool_call_closure.__version__ == "1.0.0"
    assert not hasattr(tool_call_closure, "default")  # CommonJS require() has no .default either
    assert issubclass(UsageError, TypeError)
    assert issubclass(LimitError, ValueError)
    assert issubclass(UsageError, ToolCallClosureError)
    assert issubclass(LimitError, ToolCallClosureError)


@pytest.mark.parametrize(
    "options",
    [{}, {"max_calls": 2}, {"max_calls": 2, "max_code_bytes": 3}, {"max_diagnostics": None, "max_id_bytes": 7}],
)
def test_MOD_2_factory_is_exactly_the_constructor(options: dict[str, Any]) -> None:
    """D6: createToolCallClosure(o) is new ToolCallClosure(o); Python: create_tool_call_closure(**o)."""
    made = create_tool_call_closure(**options)
    assert type(made) is ToolCallClosure
    expected = {**DEFAULTS, **{k: v for k, v in options.items() if v is not None}}
    assert made.limits == ToolCallClosure(**options).limits == Limits(**expected)
    calls = entries(*(f"c{i}" for i in range(expected["max_calls"] + 1)))
    with raises(LimitError, f"calls exceed maxCalls ({expected['max_calls']})", "calls_exceed_max"):
        made.begin(calls)


def test_MOD_2_factory_validates_like_the_constructor() -> None:
    """D6: the factory raises the constructor's errors."""
    with raises(UsageError, "maxCalls must be a positive safe integer", "option_invalid"):
        create_tool_call_closure(max_calls=0)
    with raises(UsageError, "maxCodeBytes must be a positive safe integer", "option_invalid"):
        create_tool_call_closure(max_code_bytes=-1)


@pytest.mark.parametrize("make", [ToolCallClosure, create_tool_call_closure])
def test_MOD_2_options_are_keyword_only(make: Callable[..., ToolCallClosure]) -> None:
    """D6: the original's class cannot be called without ``new``; Python's options are keyword-only, so a
    positional options object is Python's own TypeError (not a UsageError)."""
    with pytest.raises(TypeError) as info:
        make({})
    assert not isinstance(info.value, UsageError)


def test_MOD_3_bound_methods_keep_their_instance() -> None:
    """D6: a detached method loses ``this`` in JavaScript; a Python bound method keeps its instance."""
    closure = ToolCallClosure()
    begin, settle, succeed, fail, cancel = closure.begin, closure.settle, closure.succeed, closure.fail, closure.cancel
    seal, close, snapshot = closure.seal, closure.close, closure.snapshot
    chat, responses, anthropic = (
        closure.to_openai_chat_completions,
        closure.to_openai_responses,
        closure.to_anthropic_tool_results,
    )
    del closure  # only the bound methods are left
    assert snapshot() is None
    handle = begin(entries("a", "b", "c", "d")).handle
    assert succeed(handle, "a", "x").accepted is True
    assert fail(handle, "b", "m", "E").accepted is True
    assert cancel(handle, "c").accepted is True
    assert settle(handle, "d", {"status": "success", "content": 1}).accepted is True
    sealed = seal(handle)
    expected = snapshot_text(
        1,
        True,
        COMPLETE,
        [
            call_text("a", "success", success("x")),
            call_text("b", "error", reported("error", "E", "m")),
            call_text("c", "cancelled", reported("cancelled", "cancelled", "Tool call was cancelled.")),
            call_text("d", "success", success("1")),
        ],
    )
    assert to_json(sealed) == expected
    assert to_json(snapshot()) == expected
    assert to_json(close(handle)) == expected
    assert [item["tool_call_id"] for item in chat(sealed)] == ["a", "b", "c", "d"]
    assert [item["call_id"] for item in responses()] == ["a", "b", "c", "d"]
    assert [item.get("is_error", False) for item in anthropic(sealed)] == [False, True, True, False]


def test_MOD_3_methods_called_through_the_class_take_the_instance() -> None:
    """D6: ``ToolCallClosure.snapshot(c)`` is ``c.snapshot()``."""
    closure = ToolCallClosure()
    handle = ToolCallClosure.begin(closure, entries("a")).handle
    assert ToolCallClosure.succeed(closure, handle, "a", "ok").accepted is True
    assert to_json(ToolCallClosure.snapshot(closure)) == snapshot_text(
        1, False, "null", [call_text("a", "success", success("ok"))]
    )


@pytest.mark.parametrize("body", [{}, {"settle": lambda self, *args: "overridden"}])
def test_MOD_4_the_class_is_final(body: dict[str, Any]) -> None:
    """D6: the original lets a subclass override ``settle`` (and ``succeed`` follows it); Python's class is
    final: subclassing raises TypeError."""
    with pytest.raises(TypeError):
        type("Sub", (ToolCallClosure,), body)


def test_MOD_4_succeed_cannot_be_redirected_through_settle() -> None:
    """D6: no override of ``settle`` can change ``succeed``: an instance attribute cannot replace it either."""
    closure, handle = begun("a")
    with contextlib.suppress(AttributeError):
        closure.settle = lambda *args: "overridden"  # type: ignore[method-assign]
    result = closure.succeed(handle, "a", "x")
    assert to_json(result) == '{"accepted":true,"generation":1,"callId":"a","settlement":' + success("x") + "}"


# ---------------------------------------------------------------------------------------------------------------
# 2. Constructor options (OPT)
# ---------------------------------------------------------------------------------------------------------------


def test_OPT_1_no_options_means_every_default() -> None:
    assert ToolCallClosure().limits == Limits(**DEFAULTS)
    assert create_tool_call_closure().limits == Limits(**DEFAULTS)


def _probe_default(option: str, closure: ToolCallClosure, limit: int) -> None:
    """Observe that ``closure`` enforces ``limit`` for ``option`` (at the limit ok, one past it not)."""
    if option == "max_calls":
        closure.begin(entries(*(f"c{i}" for i in range(limit))))
        with raises(LimitError, f"calls exceed maxCalls ({limit})", "calls_exceed_max"):
            closure.begin(entries(*(f"c{i}" for i in range(limit + 1))))
    elif option == "max_diagnostics":
        handle = closure.begin(entries("a")).handle
        for _ in range(limit + 1):
            assert closure.settle(handle, "zz", {}).reason == "unknown_call"
        snap = closure.snapshot()
        assert snap is not None
        assert len(snap.diagnostics) == limit
    elif option == "max_result_bytes":
        handle = closure.begin(entries("a", "b")).handle
        assert closure.succeed(handle, "a", "x" * limit).accepted is True
        with raises(LimitError, f"result content exceeds maxResultBytes ({limit})", "content_too_large"):
            closure.succeed(handle, "b", "x" * (limit + 1))
    elif option == "max_message_bytes":
        handle = closure.begin(entries("a", "b")).handle
        assert closure.cancel(handle, "a", "m" * limit).settlement.message == "m" * limit  # type: ignore[union-attr]
        long = closure.cancel(handle, "b", "m" * (limit + 1))
        assert long.settlement.message == "m" * (limit - 3) + "..."  # type: ignore[union-attr]
    elif option in ("max_id_bytes", "max_name_bytes"):
        key = "id" if option == "max_id_bytes" else "name"
        closure.begin([{"id": "i", "name": "n", key: "k" * limit}])
        with raises(LimitError, f"calls[0].{key} exceeds its byte limit ({limit})", "string_too_long"):
            closure.begin([{"id": "i", "name": "n", key: "k" * (limit + 1)}])
    else:
        handle = closure.begin(entries("a", "b")).handle
        assert closure.fail(handle, "a", "m", "c" * limit).settlement.code == "c" * limit  # type: ignore[union-attr]
        with raises(LimitError, f"outcome.code exceeds its byte limit ({limit})", "string_too_long"):
            closure.fail(handle, "b", "m", "c" * (limit + 1))


@pytest.mark.parametrize("option", list(OPTION_NAMES))
def test_OPT_1_default_limits_are_enforced(option: str) -> None:
    """Without options every limit is its documented default, observed through the behaviour it limits."""
    _probe_default(option, ToolCallClosure(), DEFAULTS[option])


def test_OPT_1_protocol_new_without_options_uses_the_defaults() -> None:
    """The protocol keeps the JavaScript rule: ``new`` with absent options (and with {}) means every default."""
    calls_1000 = entries(*(f"c{i}" for i in range(1000)))
    out = serve(
        {"id": 1, "cmd": "new"},
        {"id": 2, "cmd": "call", "method": "begin", "args": [[*calls_1000, {"id": "x", "name": "t"}]]},
        {"id": 3, "cmd": "new", "options": {}},
        {"id": 4, "cmd": "call", "method": "begin", "args": [[*calls_1000, {"id": "x", "name": "t"}]]},
        {"id": 5, "cmd": "call", "method": "activeGeneration"},
    )
    too_many = "calls exceed maxCalls (1000)"
    assert out == [
        '{"id":1,"ok":null}',
        protocol_error(2, "RangeError", too_many),
        '{"id":3,"ok":null}',
        protocol_error(4, "RangeError", too_many),
        '{"id":5,"ok":null}',
    ]


def test_OPT_2_protocol_new_with_options_that_are_not_an_object() -> None:
    """OPT-2 exists only at the protocol level: ``new`` with null, false, 0, 'x', [] (and 5, true, '') answers
    TypeError "options must be an object"; any JSON object (a Date or Map arrive as {}) is accepted."""
    bad: list[Any] = [None, False, 0, "x", [], 5, True, "", [{"maxCalls": 1}]]
    requests: list[dict[str, Any]] = [{"id": i, "cmd": "new", "options": o} for i, o in enumerate(bad)]
    requests += [
        {"id": "after", "cmd": "call", "method": "snapshot"},
        {"id": "obj", "cmd": "new", "options": {}},
        {"id": "snap", "cmd": "call", "method": "snapshot"},
    ]
    out = serve(*requests)
    message = "options must be an object"
    assert out[: len(bad)] == [protocol_error(i, "TypeError", message) for i in range(len(bad))]
    assert json.loads(out[len(bad)])["error"]["kind"] == "ProtocolError"  # a failed new leaves no instance
    assert out[len(bad) + 1 :] == ['{"id":"obj","ok":null}', '{"id":"snap","ok":null}']


@pytest.mark.parametrize("option", list(OPTION_NAMES))
def test_OPT_3_none_means_the_default(option: str) -> None:
    closure = ToolCallClosure(**{option: None})
    assert closure.limits == Limits(**DEFAULTS)
    _probe_default(option, closure, DEFAULTS[option])


@pytest.mark.parametrize("option", list(OPTION_NAMES))
def test_OPT_3_each_option_is_read_once(option: str) -> None:
    """A getter on the options object runs once; the Python analogue is a mapping passed with ``**``."""
    given = Obj(**{option: Get(lambda: 7)})
    closure = ToolCallClosure(**given)
    assert getattr(closure.limits, option) == 7
    assert given.reads == Counter({option: 1})


@pytest.mark.parametrize("keyword", ["bogus", "maxCalls", "max_call"])
def test_OPT_3_unknown_keywords_are_pythons_own_type_error(keyword: str) -> None:
    """spec/README.md section 4: Python takes keyword arguments; an unknown keyword is Python's TypeError."""
    with pytest.raises(TypeError) as info:
        ToolCallClosure(**{keyword: 1})
    assert not isinstance(info.value, UsageError)


def test_OPT_3_protocol_ignores_unknown_keys_and_null_means_default() -> None:
    out = serve(
        {"id": 1, "cmd": "new", "options": {"bogus": -1, "maxCalls": None, "maxIdBytes": 3, "max_calls": 0}},
        {"id": 2, "cmd": "call", "method": "begin", "args": [[{"id": "abcd", "name": "t"}]]},
    )
    assert out == [
        '{"id":1,"ok":null}',
        protocol_error(2, "RangeError", "calls[0].id exceeds its byte limit (3)"),
    ]


OPT4_REJECTED: list[tuple[str, Any]] = [
    ("zero", 0),
    ("minus_one", -1),
    ("one_and_a_half", 1.5),
    ("string_5", "5"),
    ("true", True),
    ("false", False),
    ("nan", float("nan")),
    ("infinity", float("inf")),
    ("minus_infinity", float("-inf")),
    ("two_to_the_53", 2**53),
    ("minus_zero", -0.0),
    ("number_object_5", Decimal(5)),  # the analogue of new Number(5): a number object that is not an int
    ("list", [5]),
    ("float_1_0_D4", 1.0),  # D4: accepted by the original
    ("float_1e3_D4", 1e3),  # D4: accepted by the original
]


@pytest.mark.parametrize("option", list(OPTION_NAMES))
@pytest.mark.parametrize(("label", "value"), OPT4_REJECTED, ids=[label for label, _ in OPT4_REJECTED])
def test_OPT_4_a_limit_must_be_a_positive_safe_integer(option: str, label: str, value: Any) -> None:
    """0, -1, 1.5, '5', true, NaN, Infinity, 2**53, -0 and new Number(5) raise TypeError (not RangeError).
    D4: Python limits must be ints, so 1.0 and 1e3 (accepted by the original) raise too."""
    with raises(UsageError, f"{OPTION_NAMES[option]} must be a positive safe integer", "option_invalid"):
        ToolCallClosure(**{option: value})


@pytest.mark.parametrize("option", list(OPTION_NAMES))
@pytest.mark.parametrize("value", [1, 2, 2**53 - 1])
def test_OPT_4_accepted_limits(option: str, value: int) -> None:
    assert getattr(ToolCallClosure(**{option: value}).limits, option) == value


def test_OPT_4_protocol_integral_doubles_are_accepted() -> None:
    """D4 is not visible over the protocol: 1.0 and 1e3 arrive as the integers 1 and 1000, as in JavaScript."""
    out = serve(
        {"id": 1, "cmd": "new", "options": {"maxCalls": 1.0, "maxIdBytes": 1e3}},
        {"id": 2, "cmd": "call", "method": "begin", "args": [entries("a", "b")]},
        {"id": 3, "cmd": "new", "options": {"maxCalls": 1.5}},
        {"id": 4, "cmd": "new", "options": {"maxCodeBytes": "5"}},
    )
    assert out == [
        '{"id":1,"ok":null}',
        protocol_error(2, "RangeError", "calls exceed maxCalls (1)"),
        protocol_error(3, "TypeError", "maxCalls must be a positive safe integer"),
        protocol_error(4, "TypeError", "maxCodeBytes must be a positive safe integer"),
    ]


@pytest.mark.parametrize("first", range(7))
def test_OPT_5_first_invalid_option_wins(first: int) -> None:
    """Options are validated maxCalls, maxDiagnostics, ..., maxCodeBytes; the first failure wins, whatever
    order the keywords are given in."""
    names = list(OPTION_NAMES)
    invalid = dict.fromkeys(reversed(names[first:]), 0)
    with raises(UsageError, f"{OPTION_NAMES[names[first]]} must be a positive safe integer", "option_invalid"):
        ToolCallClosure(**invalid)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        (dict.fromkeys(OPTION_NAMES, 0), "maxCalls"),
        ({name: 0 for name in OPTION_NAMES if name != "max_calls"}, "maxDiagnostics"),
        ({"max_code_bytes": 0, "max_name_bytes": 0}, "maxNameBytes"),
        ({"max_code_bytes": "x", "max_calls": 1.5}, "maxCalls"),
    ],
    ids=["all_zero", "all_but_max_calls", "code_and_name", "code_then_calls"],
)
def test_OPT_5_catalogue_examples(options: dict[str, Any], named: str) -> None:
    with raises(UsageError, f"{named} must be a positive safe integer", "option_invalid"):
        ToolCallClosure(**options)


def test_OPT_6_options_are_copied_at_construction() -> None:
    """Mutating the caller's dict after construction has no effect (o.maxCalls = 5 still gives maxCalls (1))."""
    options = {"max_calls": 1}
    closure = ToolCallClosure(**options)
    options["max_calls"] = 5
    with raises(LimitError, "calls exceed maxCalls (1)", "calls_exceed_max"):
        closure.begin(entries("a", "b"))
    assert closure.limits.max_calls == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        closure.limits.max_calls = 5  # type: ignore[misc]
    with raises(LimitError, "calls exceed maxCalls (1)", "calls_exceed_max"):
        closure.begin(entries("a", "b"))


# ---------------------------------------------------------------------------------------------------------------
# 3. activeGeneration (GEN)
# ---------------------------------------------------------------------------------------------------------------


def test_GEN_1_null_before_the_first_begin_then_the_latest() -> None:
    closure = ToolCallClosure()
    seen = [closure.active_generation]
    handle = closure.begin(entries("a")).handle
    seen.append(closure.active_generation)
    assert closure.succeed(handle, "a", "x").accepted is True
    closure.seal(handle)
    seen.append(closure.active_generation)
    handle = closure.begin([]).handle
    seen.append(closure.active_generation)
    assert seen == [None, 1, 1, 2]  # the catalogue's observed sequence


def test_GEN_1_stays_while_closed_and_never_returns_to_null() -> None:
    closure, handle = begun("a")
    closure.close(handle, {"status": "error"})
    assert closure.active_generation == 1
    closure.begin(entries("b"))
    closure.begin(entries("c"))  # supersedes generation 2
    assert closure.active_generation == 3
    with pytest.raises(UsageError):
        closure.begin(None)
    assert closure.active_generation == 3
    closure.settle(handle, "zz", {})  # a stale rejection
    assert closure.active_generation == 3


@pytest.mark.parametrize(
    "bad",
    [5, None, "ab", [None], entries("a", "a"), [{"id": "", "name": "t"}], entries(*"abc")],
    ids=["number", "none", "string", "hole", "duplicate", "blank_id", "too_many"],
)
def test_GEN_2_a_failed_begin_uses_up_no_generation_number(bad: Any) -> None:
    closure = ToolCallClosure(max_calls=2)
    assert closure.begin([]).generation == 1
    with pytest.raises((UsageError, LimitError)):
        closure.begin(bad)
    assert closure.active_generation == 1
    result = closure.begin([])
    assert result.generation == 2
    assert to_json(result.handle) == '{"generation":2}'


def test_GEN_3_active_generation_is_read_only() -> None:
    """D6: assigning the getter-only property raises AttributeError (the original: TypeError in strict code)."""
    closure, _ = begun("a")
    with pytest.raises(AttributeError):
        closure.active_generation = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del closure.active_generation  # type: ignore[misc]
    assert closure.active_generation == 1
    fresh = ToolCallClosure()
    with pytest.raises(AttributeError):
        fresh.active_generation = 1  # type: ignore[misc]
    assert fresh.active_generation is None


# ---------------------------------------------------------------------------------------------------------------
# 4. begin: validation (BEG)
# ---------------------------------------------------------------------------------------------------------------

NOT_ARRAYS: list[tuple[str, Any]] = [
    ("null", None),
    ("string", "ab"),
    ("array_like", {"length": 1, "0": {"id": "a", "name": "t"}}),
    ("uint8array", b"\x01\x02"),
    ("bytearray", bytearray(b"\x01")),
    ("number", 5),
    ("object", {"id": "a", "name": "t"}),
    ("set", {"a"}),  # spec section 3: a list or a tuple, nothing else
    ("generator", (e for e in entries("a"))),
    ("range", range(0)),
]


@pytest.mark.parametrize(("label", "calls"), NOT_ARRAYS, ids=[label for label, _ in NOT_ARRAYS])
def test_BEG_1_calls_must_be_an_array(label: str, calls: Any) -> None:
    closure, handle = begun("x")
    closure.settle(handle, "zz", {})  # a diagnostic that must survive
    with unchanged(closure), raises(UsageError, "calls must be an array", "calls_not_array"):
        closure.begin(calls)


def test_BEG_1_absent_calls() -> None:
    """``begin()`` (undefined) is refused: in Python by the signature (a TypeError), over the protocol with
    the original's TypeError "calls must be an array"."""
    closure = ToolCallClosure()
    with pytest.raises(TypeError):
        closure.begin()  # type: ignore[call-arg]
    assert closure.active_generation is None
    out = serve(
        {"id": 1, "cmd": "new"},
        {"id": 2, "cmd": "call", "method": "begin", "args": []},
        {"id": 3, "cmd": "call", "method": "begin", "args": [{"$undefined": True}]},
        {"id": 4, "cmd": "call", "method": "begin", "args": [{"length": 0}]},
    )
    assert out[1:] == [protocol_error(i, "TypeError", "calls must be an array") for i in (2, 3, 4)]


class CallList(list[Any]):
    """An array subclass."""


@pytest.mark.parametrize("make", [list, tuple, CallList], ids=["list", "tuple", "list_subclass"])
def test_BEG_1_arrays_and_array_subclasses_pass(make: Callable[[list[Any]], Any]) -> None:
    closure = ToolCallClosure()
    result = closure.begin(make(entries("a", "b")))
    assert to_json(result) == '{"generation":1,"handle":{"generation":1},"superseded":null}'
    assert current(closure) == snapshot_text(1, False, "null", [call_text("a"), call_text("b")])


@pytest.mark.parametrize(
    ("calls", "limit"),
    [
        ([{"id": "a", "name": "t"}, {"id": "b", "name": "t"}, 5], 2),
        ([None, None], 1),  # holes count toward the length
        ([5, "x", None], 2),  # no entry is read before the length check
        (entries(*(f"c{i}" for i in range(4))), 3),
    ],
    ids=["bad_third_entry", "holes", "all_bad", "one_too_many"],
)
def test_BEG_3_more_calls_than_max_calls_is_checked_first(calls: list[Any], limit: int) -> None:
    closure, _ = begun("x", max_calls=limit)
    with unchanged(closure), raises(LimitError, f"calls exceed maxCalls ({limit})", "calls_exceed_max"):
        closure.begin(calls)


def test_BEG_3_entries_are_not_read_before_the_length_check() -> None:
    probe = Obj(id=Get(lambda: "a"), name="t")
    closure = ToolCallClosure(max_calls=1)
    with raises(LimitError, "calls exceed maxCalls (1)", "calls_exceed_max"):
        closure.begin([probe, probe])
    assert probe.reads == Counter()


def test_BEG_3_length_equal_to_max_calls_is_allowed() -> None:
    closure = ToolCallClosure(max_calls=2)
    assert closure.begin(entries("a", "b")).generation == 1
    assert closure.begin([]).generation == 2


def _no_call() -> None:
    return None


NOT_OBJECTS: list[tuple[str, Any]] = [
    ("null", None),
    ("zero", 0),
    ("string", "x"),
    ("array", []),
    ("tuple", ()),
    ("function", _no_call),
    ("lambda", lambda: {"id": "a", "name": "t"}),
    ("false", False),
    ("true", True),
    ("bytes", b"ab"),
]


@pytest.mark.parametrize(("label", "entry"), NOT_OBJECTS, ids=[label for label, _ in NOT_OBJECTS])
@pytest.mark.parametrize("index", [0, 1])
def test_BEG_4_an_entry_must_be_an_object(label: str, entry: Any, index: int) -> None:
    calls = [{"id": "ok", "name": "t"}, {"id": "ok2", "name": "t"}]
    calls[index] = entry
    closure, _ = begun("x")
    with unchanged(closure), raises(UsageError, f"calls[{index}] must be an object", "call_not_object"):
        closure.begin(calls)


def test_BEG_4_holes_are_none_entries() -> None:
    """``[ , {...}]`` gives calls[0]; a trailing hole gives calls[1] (Python: None plays the hole)."""
    closure = ToolCallClosure()
    with raises(UsageError, "calls[0] must be an object", "call_not_object"):
        closure.begin([None, {"id": "a", "name": "t"}])
    with raises(UsageError, "calls[1] must be an object", "call_not_object"):
        closure.begin([{"id": "a", "name": "t"}, None])
    assert closure.snapshot() is None


class _Calls(list[Any]):
    """A list subclass: read by list's own methods, so its overrides never run (the other read path)."""


@pytest.mark.parametrize("kind", [list, tuple, _Calls])
def test_BEG_4_entries_are_read_live_by_index_up_to_the_length_read_first(kind: type) -> None:
    """``calls[i]`` is read when entry i is checked: a getter of an earlier entry that replaces a later entry
    is seen, one that shortens the list leaves a hole past the new end (calls[i] must be an object), and one
    that grows it adds nothing (the count was read first)."""
    calls: list[Any] = []

    class Replacing:
        name = "t"

        @property
        def id(self) -> str:
            if isinstance(calls, list):
                calls[1] = {"id": "replaced", "name": "t"}
            return "a"

    class Shortening:
        name = "t"

        @property
        def id(self) -> str:
            del calls[2:]
            return "b"

    class Growing:
        name = "t"

        @property
        def id(self) -> str:
            calls.append({"id": "late", "name": "t"})
            return "c"

    closure = ToolCallClosure()
    calls = [Replacing(), {"id": "original", "name": "t"}]
    if kind is tuple:  # a tuple cannot change: what was given is what is read
        closure.begin(tuple(calls))
        assert [call.id for call in current_calls(closure)] == ["a", "original"]
    else:
        calls = kind(calls)
        closure.begin(calls)
        assert [call.id for call in current_calls(closure)] == ["a", "replaced"]
        calls = kind([{"id": "x", "name": "t"}, Shortening(), {"id": "gone", "name": "t"}])
        with raises(UsageError, "calls[2] must be an object", "call_not_object"):
            closure.begin(calls)
        calls = kind([Growing(), {"id": "d", "name": "t"}])
        closure.begin(calls)
        assert [call.id for call in current_calls(closure)] == ["c", "d"]


def current_calls(closure: ToolCallClosure) -> tuple[Any, ...]:
    snapshot = closure.snapshot()
    assert snapshot is not None
    return snapshot.calls


class Inherited:
    """An object that inherits id and name from its class (the prototype)."""

    id = "p"
    name = "proto"


@dataclasses.dataclass
class Entry:
    id: str
    name: str
    extra: int = 0


def test_BEG_4_any_object_is_an_entry() -> None:
    """D7: a non-mapping object is read by attribute (a Date with id and name, an object inheriting them)."""
    closure = ToolCallClosure()
    closure.begin([types.SimpleNamespace(id="d", name="date"), Inherited(), Entry("e", "dc", 5), Obj(id="m", name="n")])
    assert current(closure) == snapshot_text(
        1,
        False,
        "null",
        [
            call_text("d", name="date"),
            call_text("p", name="proto"),
            call_text("e", name="dc"),
            call_text("m", name="n"),
        ],
    )


JS_BLANK = ["", " ", "\t\n", "\v\f\r", "\u00a0", "\ufeff", "\u2028", "\u2029", "\u3000", "\u1680", "\u2000 \u200a"]
JS_BLANK += ["\u202f", "\u205f", " \t\u00a0\ufeff "]
NOT_BLANK = ["\u200b", "\u180e", "\x1c", "\x1f", "\x85", " a "]


@pytest.mark.parametrize("field", ["id", "name"])
@pytest.mark.parametrize("value", [*JS_BLANK, 5, None, True, ["a"], {"a": 1}, b"a"], ids=lambda v: repr(v))
def test_BEG_4_id_and_name_must_be_non_empty_strings(field: str, value: Any) -> None:
    closure, _ = begun("x")
    calls: list[dict[str, Any]] = [{"id": "ok", "name": "t"}, {"id": "ok2", "name": "t"}]
    calls[1][field] = value
    with unchanged(closure), raises(UsageError, f"calls[1].{field} must be a non-empty string", "string_empty"):
        closure.begin(calls)


@pytest.mark.parametrize("field", ["id", "name"])
def test_BEG_4_missing_id_or_name(field: str) -> None:
    closure = ToolCallClosure()
    entry = {"id": "a", "name": "t"}
    del entry[field]
    with raises(UsageError, f"calls[0].{field} must be a non-empty string", "string_empty"):
        closure.begin([entry])
    with raises(UsageError, f"calls[0].{field} must be a non-empty string", "string_empty"):
        closure.begin([types.SimpleNamespace(**entry)])


@pytest.mark.parametrize("value", NOT_BLANK, ids=lambda v: repr(v))
def test_BEG_4_strings_javascript_does_not_trim_are_not_blank(value: str) -> None:
    """JS trim() keeps U+200B, U+180E, U+001C-001F and U+0085; ids and names are stored verbatim."""
    closure = ToolCallClosure()
    closure.begin([{"id": value, "name": value}])
    snap = closure.snapshot()
    assert snap is not None
    assert (snap.calls[0].id, snap.calls[0].name) == (value, value)


def test_BEG_4_a_str_subclass_is_a_string() -> None:
    """D5: the original refuses ``new String('a')``; the reference takes a str subclass with its plain value."""

    class Loud(str):
        def strip(self, *args: Any) -> str:  # caller overrides are not called
            raise AssertionError("called")

    closure = ToolCallClosure()
    closure.begin([{"id": Loud("a"), "name": Loud("n")}])
    snap = closure.snapshot()
    assert snap is not None
    assert type(snap.calls[0].id) is str
    assert type(snap.calls[0].name) is str
    assert current(closure) == snapshot_text(1, False, "null", [call_text("a", name="n")])


SURROGATE_PAIR = chr(0xD83D) + chr(0xDE00)  # U+1F600 as two surrogate code points


@pytest.mark.parametrize(
    ("value", "limit", "ok"),
    [
        ("abc", 3, True),
        ("\u00e9a", 3, True),  # 3 bytes
        ("\u20aca", 3, False),  # 4 bytes
        ("\ud800", 3, True),  # a lone surrogate counts 3
        ("\ud800a", 3, False),  # 4
        ("\ude00\ud83d", 3, False),  # a reversed pair: 6
        ("\ude00\ud83d", 5, False),
        ("\ude00\ud83d", 6, True),
        ("\U0001f600", 3, False),  # emoji: 4
        ("\U0001f600", 4, True),
        (SURROGATE_PAIR, 4, True),  # two code points forming a pair count 4, as in UTF-16
        (SURROGATE_PAIR, 3, False),
    ],
)
@pytest.mark.parametrize("field", ["id", "name"])
def test_BEG_4_byte_limits(field: str, value: str, limit: int, ok: bool) -> None:
    option = "max_id_bytes" if field == "id" else "max_name_bytes"
    closure = ToolCallClosure(**{option: limit})
    calls: list[dict[str, str]] = [{"id": "a", "name": "b"}, {"id": "c", "name": "d"}]
    calls[1][field] = value
    if ok:
        closure.begin(calls)
        snap = closure.snapshot()
        assert snap is not None
        assert getattr(snap.calls[1], field) == value
    else:
        with (
            unchanged(closure),
            raises(LimitError, f"calls[1].{field} exceeds its byte limit ({limit})", "string_too_long"),
        ):
            closure.begin(calls)


def test_BEG_4_duplicate_id_is_checked_after_the_id_and_before_the_name() -> None:
    closure = ToolCallClosure(max_id_bytes=3)
    with raises(UsageError, "duplicate tool call id: a", "duplicate_call_id"):
        closure.begin([{"id": "a", "name": "n"}, {"id": "a", "name": ""}])
    with raises(LimitError, "calls[0].id exceeds its byte limit (3)", "string_too_long"):
        closure.begin([{"id": "abcd", "name": "n"}, {"id": "abcd", "name": "n"}])
    with raises(UsageError, "duplicate tool call id: a", "duplicate_call_id"):
        closure.begin([{"id": "a", "name": "n"}, {"id": "b", "name": "n"}, {"id": "a", "name": 5}])
    with raises(UsageError, "calls[1].name must be a non-empty string", "string_empty"):
        closure.begin([{"id": "a", "name": "n"}, {"id": "b", "name": 5}, {"id": "a", "name": "n"}])
    assert closure.snapshot() is None


def test_BEG_4_duplicate_message_holds_the_raw_id() -> None:
    closure = ToolCallClosure()
    raw = " a\u2028\u00e9 "
    with raises(UsageError, f"duplicate tool call id: {raw}", "duplicate_call_id"):
        closure.begin([{"id": raw, "name": "n"}, {"id": raw, "name": "n"}])


def test_BEG_4_ids_are_compared_exactly() -> None:
    """No trimming, no Unicode normalisation: NFC and NFD are different ids, ' a ' differs from 'a'."""
    closure = ToolCallClosure()
    ids = ["\u00e9", "e\u0301", "a", " a ", "A"]
    closure.begin([{"id": i, "name": "t"} for i in ids])
    snap = closure.snapshot()
    assert snap is not None
    assert [c.id for c in snap.calls] == ids


def test_BEG_4_only_id_and_name_are_kept_verbatim() -> None:
    closure = ToolCallClosure()
    entry = {"id": " a ", "name": " n ", "state": "success", "settlement": {"status": "success"}, "extra": 1}
    closure.begin([entry])
    assert current(closure) == snapshot_text(
        1, False, "null", ['{"id":" a ","name":" n ","state":"pending","settlement":null}']
    )


def test_BEG_4_each_entry_fully_processed_before_the_next() -> None:
    first, second = Obj(id="a", name="n"), Obj(id="b", name="m", extra=1)
    closure = ToolCallClosure()
    closure.begin([first, second])
    assert first.reads == Counter({"id": 1, "name": 1})
    assert second.reads == Counter({"id": 1, "name": 1})
    # the name of an entry is read before the next entry; a failure stops the loop
    bad_name, after = Obj(id="a", name=""), Obj(id="b", name="m")
    with raises(UsageError, "calls[0].name must be a non-empty string", "string_empty"):
        closure.begin([bad_name, after])
    assert (bad_name.reads, after.reads) == (Counter({"id": 1, "name": 1}), Counter())
    # a duplicate id is refused before that entry's name is read
    dup = Obj(id="a", name="")
    with raises(UsageError, "duplicate tool call id: a", "duplicate_call_id"):
        closure.begin([Obj(id="a", name="n"), dup])
    assert dup.reads == Counter({"id": 1})


def test_BEG_4_entries_are_read_live() -> None:
    """``calls[i]`` is read after entry i-1 is processed: a getter that replaces a later entry is seen."""
    calls: list[Any] = []
    calls.extend([Obj(id=Get(lambda: then(calls.__setitem__(1, None), "a")), name="n"), {"id": "b", "name": "t"}])
    closure = ToolCallClosure()
    with raises(UsageError, "calls[1] must be an object", "call_not_object"):
        closure.begin(calls)
    assert closure.active_generation is None


@pytest.mark.parametrize("field", ["id", "name"])
def test_BEG_4_a_getter_exception_propagates_unchanged(field: str) -> None:
    boom = SyntaxError("boom")

    def fail() -> str:
        raise boom

    closure, _ = begun("x")
    entry = Obj(**{"id": "a", "name": "n", field: Get(fail)})
    with unchanged(closure), pytest.raises(SyntaxError) as info:
        closure.begin([entry])
    assert info.value is boom


def test_BEG_5_a_nested_begin_during_validation_fails_the_outer_begin() -> None:
    closure, old = begun("x")

    def nested() -> str:
        closure.begin(entries("in"))
        return "a"

    with raises(UsageError, "active generation changed while validating calls", "generation_changed"):
        closure.begin([Obj(id=Get(nested), name="n")])
    assert closure.active_generation == 2
    assert current(closure) == snapshot_text(2, False, "null", [call_text("in")])
    assert closure.settle(old, "x", {"status": "success", "content": 1}).reason == "stale_generation"


def test_BEG_5_a_later_entry_error_wins_over_the_generation_check() -> None:
    closure, _ = begun("x")
    entry = Obj(id=Get(lambda: then(closure.begin(entries("in")), "a")), name="n")
    with raises(UsageError, "calls[1] must be an object", "call_not_object"):
        closure.begin([entry, None])
    assert closure.active_generation == 2
    assert current(closure) == snapshot_text(2, False, "null", [call_text("in")])


def test_BEG_5_a_nested_close_is_not_detected() -> None:
    closure, handle = begun("x")
    entry = Obj(id=Get(lambda: then(closure.close(handle), "a")), name="n")
    result = closure.begin([entry])
    assert to_json(result) == '{"generation":2,"handle":{"generation":2},"superseded":null}'
    assert current(closure) == snapshot_text(2, False, "null", [call_text("a", name="n")])


BEG6_FAILURES: list[tuple[str, Any]] = [
    ("not_array", 5),
    ("too_many", entries("a", "b", "c")),
    ("hole", [None]),
    ("blank_id", [{"id": " ", "name": "t"}]),
    ("long_id", [{"id": "x" * 9, "name": "t"}]),
    ("duplicate", entries("a", "a")),
    ("blank_name", [{"id": "a", "name": ""}]),
]


@pytest.mark.parametrize(("label", "calls"), BEG6_FAILURES, ids=[label for label, _ in BEG6_FAILURES])
def test_BEG_6_a_failed_begin_changes_nothing(label: str, calls: Any) -> None:
    closure, handle = begun("a", "b", max_calls=2, max_id_bytes=8)
    assert closure.settle(handle, "zz", {}).reason == "unknown_call"
    with unchanged(closure), pytest.raises((UsageError, LimitError)):
        closure.begin(calls)
    snap = closure.snapshot()
    assert snap is not None
    assert [closure.active_generation, snap.closed, closure.succeed(handle, "a", "x").accepted] == [1, False, True]
    result = closure.begin([])
    assert result.generation == 2
    assert to_json(result.superseded) == snapshot_text(
        1,
        True,
        SUPERSEDED_REASON,
        [call_text("a", "success", success("x")), call_text("b", "cancelled", SUPERSEDED_SETTLEMENT)],
        [diagnostic("unknown_call", "zz", 1, None)],
    )


@pytest.mark.parametrize("empty", [[], ()], ids=["list", "tuple"])
def test_BEG_7_an_empty_call_list_is_valid(empty: Any) -> None:
    closure = ToolCallClosure()
    result = closure.begin(empty)
    assert to_json(result) == '{"generation":1,"handle":{"generation":1},"superseded":null}'
    assert current(closure) == snapshot_text(1, False, "null", [])
    assert to_json(closure.seal(result.handle)) == snapshot_text(1, True, COMPLETE, [])


# ---------------------------------------------------------------------------------------------------------------
# 5. begin: commit and supersession (SUP)
# ---------------------------------------------------------------------------------------------------------------


def test_SUP_1_begin_closes_an_open_generation_as_superseded() -> None:
    closure, handle = begun("a", "b")
    assert closure.succeed(handle, "a", "ok").accepted is True
    result = closure.begin(entries("c"))
    superseded = snapshot_text(
        1,
        True,
        SUPERSEDED_REASON,
        [call_text("a", "success", success("ok")), call_text("b", "cancelled", SUPERSEDED_SETTLEMENT)],
    )
    assert to_json(result) == f'{{"generation":2,"handle":{{"generation":2}},"superseded":{superseded}}}'
    assert to_json(closure.settle(handle, "b", {"status": "success", "content": 1})) == rejection(
        "stale_generation", "b", 1, "success"
    )


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        (4096, SUPERSEDED_MESSAGE),
        (47, SUPERSEDED_MESSAGE),  # the message is 47 bytes
        (46, "Tool call was superseded by a newer generat..."),
        (10, "Tool ca..."),
        (3, "..."),
        (2, "To"),
        (1, "T"),
    ],
)
def test_SUP_1_the_superseded_message_is_truncated_to_max_message_bytes(limit: int, message: str) -> None:
    closure, _ = begun("a", max_message_bytes=limit)
    superseded = closure.begin([]).superseded
    assert to_json(superseded) == snapshot_text(
        1,
        True,
        close_reason("cancelled", "superseded", message),
        [call_text("a", "cancelled", synthetic("cancelled", "superseded", message))],
    )


def test_SUP_2_the_superseded_code_ignores_max_code_bytes() -> None:
    closure, _ = begun("a", max_code_bytes=1)
    superseded = closure.begin([]).superseded
    assert to_json(superseded) == snapshot_text(
        1, True, SUPERSEDED_REASON, [call_text("a", "cancelled", SUPERSEDED_SETTLEMENT)]
    )


def test_SUP_3_the_superseded_snapshot_keeps_the_old_generation_and_diagnostics() -> None:
    closure, handle = begun("a", "b", "c")
    closure.settle(handle, "zz", {"status": "success"})
    closure.fail(handle, "b", "bad", "E")
    superseded = closure.begin(entries("d")).superseded
    assert to_json(superseded) == snapshot_text(
        1,
        True,
        SUPERSEDED_REASON,
        [
            call_text("a", "cancelled", SUPERSEDED_SETTLEMENT),
            call_text("b", "error", reported("error", "E", "bad")),
            call_text("c", "cancelled", SUPERSEDED_SETTLEMENT),
        ],
        ['{"reason":"unknown_call","callId":"zz","generation":1,"observedStatus":null}'],
    )
    assert current(closure) == snapshot_text(2, False, "null", [call_text("d")])  # diagnostics cleared
    assert closure.to_openai_chat_completions(superseded) == [  # registered: it exports (ADP-6)
        {
            "role": "tool",
            "tool_call_id": "a",
            "content": '{"error":{"code":"superseded","message":"'
            + SUPERSEDED_MESSAGE
            + '","side_effect_state":"unknown"}}',
        },
        {"role": "tool", "tool_call_id": "b", "content": '{"error":{"code":"E","message":"bad"}}'},
        {
            "role": "tool",
            "tool_call_id": "c",
            "content": '{"error":{"code":"superseded","message":"'
            + SUPERSEDED_MESSAGE
            + '","side_effect_state":"unknown"}}',
        },
    ]


def test_SUP_3_close_reason_is_set_even_when_no_call_was_pending() -> None:
    empty = ToolCallClosure()
    empty.begin([])
    assert to_json(empty.begin([]).superseded) == snapshot_text(1, True, SUPERSEDED_REASON, [])
    reported_all, handle = begun("a")
    reported_all.succeed(handle, "a", "x")  # every call reported, but not sealed
    assert to_json(reported_all.begin([]).superseded) == snapshot_text(
        1, True, SUPERSEDED_REASON, [call_text("a", "success", success("x"))]
    )


def test_SUP_4_no_superseded_snapshot_when_closed_or_absent() -> None:
    closure = ToolCallClosure()
    first = closure.begin(entries("a"))
    assert first.superseded is None
    closed = closure.close(first.handle, {"status": "error"})
    after_close = closure.begin(entries("b"))
    assert to_json(after_close) == '{"generation":2,"handle":{"generation":2},"superseded":null}'
    assert closure.succeed(after_close.handle, "b", "x").accepted is True
    closure.seal(after_close.handle)
    after_seal = closure.begin([])
    assert to_json(after_seal) == '{"generation":3,"handle":{"generation":3},"superseded":null}'
    assert to_json(closed) == snapshot_text(
        1,
        True,
        close_reason("error", "error", "Tool call did not complete."),
        [call_text("a", "error", synthetic("error", "error", "Tool call did not complete."))],
    )


def test_SUP_5_begin_increments_makes_a_frozen_handle_and_clears_diagnostics() -> None:
    closure, h1 = begun("a")
    closure.settle(h1, "zz", {})
    assert len(closure.snapshot().diagnostics) == 1  # type: ignore[union-attr]
    h2 = closure.begin(entries("a")).handle
    assert h2 is not h1
    assert type(h2) is BatchHandle
    assert [f.name for f in dataclasses.fields(h2)] == ["generation"]
    assert (h1.generation, h2.generation) == (1, 2)
    assert to_json(h2) == '{"generation":2}'
    with pytest.raises(dataclasses.FrozenInstanceError):
        h2.generation = 3  # type: ignore[misc]
    assert current(closure) == snapshot_text(2, False, "null", [call_text("a")])
    assert closure.succeed(h2, "a", "x").accepted is True  # the new run is installed, its calls pending


def test_SUP_6_the_begin_result_shape() -> None:
    closure = ToolCallClosure()
    first = closure.begin(entries("a"))
    assert type(first) is BeginResult
    assert to_json(first) == '{"generation":1,"handle":{"generation":1},"superseded":null}'
    assert [f.name for f in dataclasses.fields(first)] == ["generation", "handle", "superseded"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.generation = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.superseded = None  # type: ignore[misc]
    second = closure.begin([])
    superseded = second.superseded
    assert superseded is not None
    assert first.handle is not second.handle
    with pytest.raises(dataclasses.FrozenInstanceError):
        superseded.closed = False  # type: ignore[misc]
    assert type(superseded.calls) is tuple
    with pytest.raises(dataclasses.FrozenInstanceError):
        superseded.calls[0].state = "pending"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        superseded.calls[0].settlement.code = "x"  # type: ignore[misc, union-attr]
    with pytest.raises(dataclasses.FrozenInstanceError):
        superseded.close_reason.code = "x"  # type: ignore[misc, union-attr]


# ---------------------------------------------------------------------------------------------------------------
# 6. settle: the guard pipeline (SET)
# ---------------------------------------------------------------------------------------------------------------

FORMS: dict[str, Callable[[ToolCallClosure, Any, Any], Any]] = {
    "settle": lambda c, h, i: c.settle(h, i, {"status": "success", "content": "x"}),
    "settle_garbage": lambda c, h, i: c.settle(h, i, 42),
    "succeed": lambda c, h, i: c.succeed(h, i, "x"),
    "succeed_absent": lambda c, h, i: c.succeed(h, i),
    "fail": lambda c, h, i: c.fail(h, i, "m"),
    "cancel": lambda c, h, i: c.cancel(h, i),
}

BAD_CALL_IDS: list[Any] = [None, 5, "", "  ", "\ufeff", "\u3000\t", ["a"], b"a"]


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("which", ["current", "stale", "forged", "none", "no_run"])
@pytest.mark.parametrize("call_id", BAD_CALL_IDS, ids=lambda v: repr(v))
def test_SET_1_an_invalid_call_id_always_raises(form: str, which: str, call_id: Any) -> None:
    """callId is validated first, whatever the handle (catalogue: undefined, 5, '', '  ', '\\ufeff' on the real
    and a stale handle; Python: the parameter is required, so None stands for undefined)."""
    if which == "no_run":
        closure, handle = ToolCallClosure(), BatchHandle(generation=1)
    else:
        closure, old = begun("a")
        closure.settle(old, "zz", {})
        handle = closure.begin(entries("a")).handle
        handle = {"current": handle, "stale": old, "forged": BatchHandle(generation=2), "none": None}[which]
    with unchanged(closure), raises(UsageError, "callId must be a non-empty string", "string_empty"):
        FORMS[form](closure, handle, call_id)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("which", ["open", "closed", "stale", "no_run"])
def test_SET_1_an_oversize_call_id_always_raises(form: str, which: str) -> None:
    closure, handle = begun("abc", max_id_bytes=3)
    if which == "closed":
        closure.close(handle)  # closed: even so the id is checked first
    elif which == "stale":
        closure.begin(entries("abc"))
    elif which == "no_run":
        closure = ToolCallClosure(max_id_bytes=3)
    for call_id in ("abcd", "\u20aca", "\ud800a"):
        with unchanged(closure), raises(LimitError, "callId exceeds its byte limit (3)", "string_too_long"):
            FORMS[form](closure, handle, call_id)


class CountingHandle:
    """A forged handle whose ``generation`` getter counts its reads."""

    def __init__(self, generation: Any) -> None:
        self._generation = generation
        self.reads = 0

    @property
    def generation(self) -> Any:
        self.reads += 1
        return self._generation


SET2_HANDLES: list[tuple[str, Any, int | None]] = [
    ("none", None, None),
    ("number", 5, None),
    ("string", "x", None),
    ("zero", BatchHandle(generation=0), None),
    ("negative", BatchHandle(generation=-3), None),
    ("fraction", BatchHandle(generation=1.5), None),  # type: ignore[arg-type]
    ("string_1", BatchHandle(generation="1"), None),  # type: ignore[arg-type]
    ("two_to_the_53", BatchHandle(generation=2**53), None),
    ("true", BatchHandle(generation=True), None),  # JS-7: a boolean is not an integer
    ("nan", BatchHandle(generation=float("nan")), None),  # type: ignore[arg-type]
    ("ninety_nine", BatchHandle(generation=99), 99),
    ("max_safe", BatchHandle(generation=2**53 - 1), 2**53 - 1),
    ("dict_99", {"generation": 99}, 99),  # D7: a mapping is read by key
    ("object_99", types.SimpleNamespace(generation=99), 99),  # D7: an object by attribute
    ("dict_zero", {"generation": 0}, None),
    ("empty_dict", {}, None),
    ("current_number", BatchHandle(generation=1), 1),  # a forgery of the current number is reported as is
]


@pytest.mark.parametrize(("label", "handle", "generation"), SET2_HANDLES, ids=[x[0] for x in SET2_HANDLES])
def test_SET_2_the_rejection_generation_comes_from_the_handle(label: str, handle: Any, generation: int | None) -> None:
    closure, _ = begun("a")
    outcome = {"status": "success", "content": 1}
    assert to_json(closure.settle(handle, "a", outcome)) == rejection("stale_generation", "a", generation, "success")
    assert to_json(closure.fail(handle, "a", "m")) == rejection("stale_generation", "a", generation, "error")
    assert to_json(closure.close(handle)) == rejection("stale_generation", None, generation, None)
    assert to_json(closure.seal(handle)) == rejection("stale_generation", None, generation, None)


def test_SET_2_a_forged_generation_getter_runs_once() -> None:
    closure, _ = begun("a")
    for operation in (
        lambda h: closure.settle(h, "a", {"status": "error"}),
        lambda h: closure.succeed(h, "a", 1),
        lambda h: closure.fail(h, "a"),
        lambda h: closure.cancel(h, "a"),
        closure.close,
        closure.seal,
    ):
        handle = CountingHandle(7)
        assert operation(handle).generation == 7
        assert handle.reads == 1


def test_SET_2_accepted_generation_is_the_handles() -> None:
    closure = ToolCallClosure()
    closure.begin([])
    handle = closure.begin(entries("a")).handle
    assert to_json(closure.succeed(handle, "a", "x")) == (
        '{"accepted":true,"generation":2,"callId":"a","settlement":' + success("x") + "}"
    )


def _callable_with_status() -> None:
    return None


_callable_with_status.status = "error"  # type: ignore[attr-defined]

SET3_OUTCOMES: list[tuple[str, Any, str | None]] = [
    ("success", {"status": "success"}, "success"),
    ("error", {"status": "error"}, "error"),
    ("cancelled", {"status": "cancelled"}, "cancelled"),
    ("status_null", {"status": None}, None),
    ("status_missing", {"content": 1}, None),
    ("empty_object", {}, None),
    ("null_outcome", None, None),
    ("string_outcome", "success", None),
    ("array_outcome", ["success"], None),
    ("bogus", {"status": "bogus"}, "invalid"),
    ("five", {"status": 5}, "invalid"),
    ("empty_string", {"status": ""}, "invalid"),
    ("upper_case", {"status": "SUCCESS"}, "invalid"),
    ("false", {"status": False}, "invalid"),
    ("object", types.SimpleNamespace(status="error"), "error"),  # D7: read by attribute
    ("function_D7", _callable_with_status, None),  # D7: a callable is not read (the original: "error")
]


@pytest.mark.parametrize(("label", "outcome", "observed"), SET3_OUTCOMES, ids=[x[0] for x in SET3_OUTCOMES])
@pytest.mark.parametrize("path", ["stale", "no_run", "closed"])
def test_SET_3_observed_status_is_read_before_the_guards(
    label: str, outcome: Any, observed: str | None, path: str
) -> None:
    """The outcome's status as first read: a valid status itself, absent null, anything else "invalid".
    D7: a callable outcome is not an object, so its status attribute is not read (the original reads a
    function's status property and reports "error")."""
    closure, handle = begun("a")
    if path == "stale":
        closure.begin(entries("a"))
        expected = rejection("stale_generation", "a", 1, observed)
    elif path == "no_run":
        closure = ToolCallClosure()
        expected = rejection("stale_generation", "a", 1, observed)
    else:
        closure.close(handle)
        expected = rejection("run_closed", "a", 1, observed)
    assert to_json(closure.settle(handle, "a", outcome)) == expected


def test_SET_3_status_is_read_once_on_the_stale_path_and_twice_on_the_happy_path() -> None:
    closure, old = begun("a")
    handle = closure.begin(entries("a")).handle
    stale = Obj(status="success", content="x")
    assert closure.settle(old, "a", stale).reason == "stale_generation"
    assert stale.reads == Counter({"status": 1})
    happy = Obj(status="success", content="x")
    assert closure.settle(handle, "a", happy).accepted is True
    assert happy.reads == Counter({"status": 2, "content": 1})


@pytest.mark.parametrize("path", ["stale", "closed", "current"])
def test_SET_3_a_throwing_status_getter_propagates(path: str) -> None:
    closure, handle = begun("a")
    if path == "stale":
        handle = BatchHandle(generation=1)
    if path == "closed":
        closure.close(handle)
    error = RuntimeError("status getter")

    def throw() -> str:
        raise error

    with unchanged(closure), pytest.raises(RuntimeError) as info:
        closure.settle(handle, "a", Obj(status=Get(throw)))
    assert info.value is error


def test_SET_4_no_run_is_stale() -> None:
    closure = ToolCallClosure()
    assert to_json(closure.settle(None, "a", {"status": "success"})) == rejection(
        "stale_generation", "a", None, "success"
    )
    assert to_json(closure.settle(BatchHandle(generation=1), "a", {})) == rejection("stale_generation", "a", 1, None)
    assert closure.snapshot() is None


def test_SET_4_forged_handle_is_stale() -> None:
    closure, handle = begun("a")
    other = ToolCallClosure()
    other_handle = other.begin(entries("a")).handle  # same number, another instance
    forgeries = [
        BatchHandle(generation=1),
        dataclasses.replace(handle),
        copy.copy(handle),
        copy.deepcopy(handle),
        {"generation": 1},
        types.SimpleNamespace(generation=1),
        other_handle,
    ]
    for forged in forgeries:
        assert forged is not handle
        assert to_json(closure.succeed(forged, "a", "x")) == rejection("stale_generation", "a", 1, "success")
    snap = closure.snapshot()
    assert snap is not None
    assert snap.calls[0].state == "pending"
    assert to_json(snap.diagnostics) == "[" + ",".join([diagnostic("stale_generation", "a", 1, "success")] * 7) + "]"
    assert closure.succeed(handle, "a", "x").accepted is True
    assert other.snapshot().calls[0].state == "pending"  # type: ignore[union-attr]


@pytest.mark.parametrize("how", ["open", "close", "seal", "superseded", "newer_closed"])
def test_SET_4_stale_takes_precedence_over_run_closed(how: str) -> None:
    """An old handle is stale whatever the state of its own generation or of the current one."""
    closure, old = begun("a")
    if how == "close":
        closure.close(old)
    elif how == "seal":
        closure.succeed(old, "a", "x")
        closure.seal(old)
    newer = closure.begin(entries("a")).handle  # supersedes the old generation when it is still open
    if how == "superseded":
        closure.begin(entries("a"))
    elif how == "newer_closed":
        closure.close(newer)
    assert to_json(closure.settle(old, "a", {"status": "error"})) == rejection("stale_generation", "a", 1, "error")
    assert to_json(closure.cancel(old, "nope")) == rejection("stale_generation", "nope", 1, "cancelled")


@pytest.mark.parametrize("how", ["close", "seal"])
def test_SET_5_a_closed_generation_rejects_with_run_closed(how: str) -> None:
    closure, handle = begun("c1", "c2")
    if how == "close":
        closure.close(handle)
    else:
        closure.succeed(handle, "c1", 1)
        closure.succeed(handle, "c2", 2)
        closure.seal(handle)
    assert to_json(closure.settle(handle, "c1", {"status": "success", "content": 1})) == (
        '{"accepted":false,"reason":"run_closed","callId":"c1","generation":1,"observedStatus":"success"}'
    )
    assert to_json(closure.settle(handle, "nope", {"status": "bogus"})) == rejection("run_closed", "nope", 1, "invalid")
    assert to_json(closure.succeed(handle, "c2")) == rejection("run_closed", "c2", 1, "success")
    snap = closure.snapshot()
    assert snap is not None
    assert [to_json(d) for d in snap.diagnostics] == [
        diagnostic("run_closed", "c1", 1, "success"),
        diagnostic("run_closed", "nope", 1, "invalid"),
        diagnostic("run_closed", "c2", 1, "success"),
    ]


@pytest.mark.parametrize(
    "settle",
    [
        lambda c, h: c.settle(h, "zz", {"status": "success", "content": 1}),
        lambda c, h: c.settle(h, "zz", {"status": "error", "code": "E"}),
        lambda c, h: c.settle(h, "zz", 42),
        lambda c, h: c.settle(h, "zz", {"status": "bogus"}),
        lambda c, h: c.settle(h, "zz", None),
        lambda c, h: c.succeed(h, "zz"),
        lambda c, h: c.succeed(h, "zz", {1, 2}),
        lambda c, h: c.fail(h, "zz", "m", code=5),
        lambda c, h: c.cancel(h, "zz", code=""),
    ],
)
def test_SET_6_an_unknown_call_id_rejects_with_observed_status_null(settle: Callable[..., Any]) -> None:
    closure, handle = begun("a")
    assert to_json(settle(closure, handle)) == rejection("unknown_call", "zz", 1, None)
    assert current(closure) == snapshot_text(
        1, False, "null", [call_text("a")], [diagnostic("unknown_call", "zz", 1, None)]
    )


@pytest.mark.parametrize(
    "settle",
    [
        lambda c, h: c.settle(h, "a", {"status": "success", "content": 2}),
        lambda c, h: c.settle(h, "a", 42),
        lambda c, h: c.settle(h, "a", {}),
        lambda c, h: c.succeed(h, "a"),
        lambda c, h: c.fail(h, "a", "m", code=" "),
        lambda c, h: c.cancel(h, "a"),
    ],
)
@pytest.mark.parametrize("first", ["success", "error", "cancelled"])
def test_SET_7_a_settled_call_rejects_as_duplicate_with_observed_status_null(
    settle: Callable[..., Any], first: str
) -> None:
    closure, handle = begun("a", "b")
    assert closure.settle(handle, "a", {"status": first, "content": 1}).accepted is True
    before = current(closure)
    assert to_json(settle(closure, handle)) == rejection("duplicate_settlement", "a", 1, None)
    after = json.loads(current(closure))
    assert after["calls"] == json.loads(before)["calls"]
    assert after["diagnostics"] == [json.loads(diagnostic("duplicate_settlement", "a", 1, None))]


SET8_INVALID: list[tuple[str, Any, type[ToolCallClosureError], str, str]] = [
    ("string", "x", UsageError, "outcome must be an object", "outcome_not_object"),
    ("null", None, UsageError, "outcome must be an object", "outcome_not_object"),
    ("array", [], UsageError, "outcome must be an object", "outcome_not_object"),
    ("tuple", ("success",), UsageError, "outcome must be an object", "outcome_not_object"),
    ("function", _no_call, UsageError, "outcome must be an object", "outcome_not_object"),
    ("number", 42, UsageError, "outcome must be an object", "outcome_not_object"),
    ("empty", {}, UsageError, "outcome.status must be success, error, or cancelled", "outcome_status_invalid"),
    (
        "bogus",
        {"status": "bogus"},
        UsageError,
        "outcome.status must be success, error, or cancelled",
        "outcome_status_invalid",
    ),
    (
        "no_content",
        {"status": "success"},
        UsageError,
        "result content must be JSON-serializable or a string",
        "content_not_serializable",
    ),
    (
        "blank_code",
        {"status": "error", "code": " "},
        UsageError,
        "outcome.code must be a non-empty string",
        "string_empty",
    ),
    (
        "long_code",
        {"status": "cancelled", "code": "x" * 129},
        LimitError,
        "outcome.code exceeds its byte limit (128)",
        "string_too_long",
    ),
]


@pytest.mark.parametrize(
    ("label", "outcome", "kind", "message", "code"), SET8_INVALID, ids=[x[0] for x in SET8_INVALID]
)
def test_SET_8_an_invalid_outcome_raises_only_for_a_current_open_known_pending_call(
    label: str, outcome: Any, kind: type[ToolCallClosureError], message: str, code: str
) -> None:
    closure, handle = begun("a", "b")
    closure.succeed(handle, "b", "done")
    with unchanged(closure), raises(kind, message, code):
        closure.settle(handle, "a", outcome)
    assert closure.snapshot().calls[0].state == "pending"  # type: ignore[union-attr]
    # every other path answers with a rejection, the outcome not validated
    assert closure.settle(handle, "zz", outcome).reason == "unknown_call"
    assert closure.settle(handle, "b", outcome).reason == "duplicate_settlement"
    assert closure.settle(BatchHandle(generation=1), "a", outcome).reason == "stale_generation"
    closure.close(handle)
    assert closure.settle(handle, "a", outcome).reason == "run_closed"


def test_SET_9_a_nested_settlement_of_the_same_call_wins() -> None:
    closure, handle = begun("a")
    content = Json(lambda: then(closure.cancel(handle, "a", "inner", "nested"), {"v": 1}))
    assert to_json(closure.succeed(handle, "a", content)) == rejection("duplicate_settlement", "a", 1, "success")
    assert current(closure) == snapshot_text(
        1,
        False,
        "null",
        [call_text("a", "cancelled", reported("cancelled", "nested", "inner"))],
        [diagnostic("duplicate_settlement", "a", 1, "success")],
    )


def test_SET_9_a_nested_close_gives_run_closed_with_the_normalized_status() -> None:
    closure, handle = begun("a", "b")
    content = Json(lambda: then(closure.close(handle, {"status": "error", "code": "inner"}), 1))
    outcome = Obj(status="success", content=content)
    assert to_json(closure.settle(handle, "a", outcome)) == rejection("run_closed", "a", 1, "success")
    settlement = synthetic("error", "inner", "Tool call did not complete.")
    assert current(closure) == snapshot_text(
        1,
        True,
        close_reason("error", "inner", "Tool call did not complete."),
        [call_text("a", "error", settlement), call_text("b", "error", settlement)],
        [diagnostic("run_closed", "a", 1, "success")],
    )


def test_SET_9_a_nested_begin_gives_stale_generation_with_the_normalized_status() -> None:
    closure, handle = begun("a")
    superseded: list[Any] = []
    content = Obj(status="success", content=Get(lambda: then(superseded.append(closure.begin(entries("n"))), "x")))
    assert to_json(closure.settle(handle, "a", content)) == rejection("stale_generation", "a", 1, "success")
    assert to_json(superseded[0].superseded) == snapshot_text(
        1, True, SUPERSEDED_REASON, [call_text("a", "cancelled", SUPERSEDED_SETTLEMENT)]
    )
    assert current(closure) == snapshot_text(
        2, False, "null", [call_text("n")], [diagnostic("stale_generation", "a", 1, "success")]
    )


@pytest.mark.parametrize("status", ["error", "cancelled"])
def test_SET_9_a_message_to_string_that_settles_the_same_call(status: str) -> None:
    closure, handle = begun("a")
    message = Text(lambda: then(closure.succeed(handle, "a", "inner"), "outer"))
    outcome = {"status": status, "message": message}
    assert to_json(closure.settle(handle, "a", outcome)) == rejection("duplicate_settlement", "a", 1, status)
    assert current(closure) == snapshot_text(
        1,
        False,
        "null",
        [call_text("a", "success", success("inner"))],
        [diagnostic("duplicate_settlement", "a", 1, status)],
    )


@pytest.mark.parametrize(
    ("outcome", "settlement", "state"),
    [
        ({"status": "success", "content": 1}, success("1"), "success"),
        ({"status": "success", "content": "hello"}, success("hello"), "success"),
        ({"status": "error", "code": "E", "message": "m"}, reported("error", "E", "m"), "error"),
        ({"status": "error"}, reported("error", "error", "Tool call failed."), "error"),
        ({"status": "cancelled"}, reported("cancelled", "cancelled", "Tool call was cancelled."), "cancelled"),
        ({"status": "cancelled", "code": "C", "message": ""}, reported("cancelled", "C", ""), "cancelled"),
    ],
)
def test_SET_10_an_accepted_settlement_is_committed_and_returned(
    outcome: dict[str, Any], settlement: str, state: str
) -> None:
    closure, handle = begun("a", "b")
    result = closure.settle(handle, "a", outcome)
    assert type(result) is Accepted
    assert result.accepted is True
    assert to_json(result) == f'{{"accepted":true,"generation":1,"callId":"a","settlement":{settlement}}}'
    assert current(closure) == snapshot_text(1, False, "null", [call_text("a", state, settlement), call_text("b")])
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.settlement.status = "error"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.call_id = "b"  # type: ignore[misc]


def test_SET_10_the_catalogue_example() -> None:
    closure, handle = begun("a")
    assert to_json(closure.succeed(handle, "a", 1)) == (
        '{"accepted":true,"generation":1,"callId":"a","settlement":{"status":"success","content":"1",'
        '"provenance":"reported"}}'
    )


def test_SET_11_every_rejection_is_returned_and_recorded() -> None:
    closure, old = begun("a", "b")
    closure.succeed(old, "a", "x")
    results = [
        closure.settle(old, " z z ", {"status": "error"}),  # unknown; the callId is the caller's string
        closure.settle(old, "a", {"status": "success", "content": 1}),  # duplicate
        closure.seal(old),  # pending_calls
    ]
    handle = closure.begin(entries("c")).handle
    results.append(closure.cancel(old, "c"))  # stale, recorded in generation 2
    closure.close(handle)
    results.append(closure.fail(handle, "c", "m"))  # run_closed
    texts = [
        rejection("unknown_call", " z z ", 1, None),
        rejection("duplicate_settlement", "a", 1, None),
        rejection("pending_calls", None, 1, None),
        rejection("stale_generation", "c", 1, "cancelled"),
        rejection("run_closed", "c", 2, "error"),
    ]
    assert [to_json(r) for r in results] == texts
    for result in results:
        assert type(result) is Rejection
        assert result.accepted is False
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.reason = "x"  # type: ignore[misc]
    snap = closure.snapshot()
    assert snap is not None
    assert [to_json(d) for d in snap.diagnostics] == [
        diagnostic("stale_generation", "c", 1, "cancelled"),
        diagnostic("run_closed", "c", 2, "error"),
    ]
    assert all(type(d) is Diagnostic for d in snap.diagnostics)


def test_SET_11_the_diagnostic_is_the_rejection_without_accepted() -> None:
    closure, handle = begun("a")
    result = closure.settle(handle, "q", {"status": "cancelled"})
    snap = closure.snapshot()
    assert snap is not None
    (recorded,) = snap.diagnostics
    expected = json.loads(to_json(result))
    del expected["accepted"]
    assert to_json(recorded) == js(expected) == diagnostic("unknown_call", "q", 1, None)
    assert (recorded.reason, recorded.call_id, recorded.generation, recorded.observed_status) == (
        result.reason,  # type: ignore[union-attr]
        result.call_id,
        result.generation,
        result.observed_status,  # type: ignore[union-attr]
    )


# ---------------------------------------------------------------------------------------------------------------
# 7. succeed / fail / cancel (CONV)
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "stored"),
    [("hello", "hello"), ("", ""), (1, "1"), (None, "null"), ({"a": [1, 2]}, '{"a":[1,2]}'), (True, "true")],
)
def test_CONV_1_succeed_is_settle_with_status_success(content: Any, stored: str) -> None:
    by_settle, h1 = begun("a")
    by_succeed, h2 = begun("a")
    settled = by_settle.settle(h1, "a", {"status": "success", "content": content})
    succeeded = by_succeed.succeed(h2, "a", content)
    expected = f'{{"accepted":true,"generation":1,"callId":"a","settlement":{success(stored)}}}'
    assert to_json(settled) == to_json(succeeded) == expected
    assert current(by_settle) == current(by_succeed)


def test_CONV_1_absent_content_raises_on_a_pending_call() -> None:
    closure, handle = begun("a")
    with (
        unchanged(closure),
        raises(UsageError, "result content must be JSON-serializable or a string", "content_not_serializable"),
    ):
        closure.succeed(handle, "a")
    assert closure.succeed(handle, "a", None).accepted is True  # null is a value: "null"


class CustomError(Exception):
    pass


def _raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:  # noqa: BLE001 - a traceback is attached on purpose
        return caught


CONV2_ERRORS: list[tuple[str, Any, str]] = [
    ("object", {"a": 1}, "[object Object]"),
    ("nested_array", [1, [2, 3]], "1,2,3"),
    ("true", True, "true"),
    ("1e21", 1e21, "1e+21"),
    ("minus_zero", -0.0, "0"),
    ("bigint_5", 5, "5"),
    ("string", "plain", "plain"),
    ("empty_string", "", ""),
    ("error", ValueError("m"), "m"),
    ("error_subclass", _raised(CustomError("sub")), "sub"),  # the text only, never the traceback
    ("empty_error", Exception(), "Exception"),  # deviation D11: the original stores ""
    ("error_message_42", Exception(42), "42"),
    ("error_like_object", {"message": "x", "name": "Error"}, "[object Object]"),
    ("plain_instance", types.SimpleNamespace(message="x"), "[object Object]"),
    ("to_string", Text(lambda: "custom"), "custom"),
]


@pytest.mark.parametrize(("label", "error", "message"), CONV2_ERRORS, ids=[x[0] for x in CONV2_ERRORS])
def test_CONV_2_the_message_comes_from_the_error(label: str, error: Any, message: str) -> None:
    closure, handle = begun("a")
    result = closure.fail(handle, "a", error)
    expected = reported("error", "tool_error", message)
    assert to_json(result) == f'{{"accepted":true,"generation":1,"callId":"a","settlement":{expected}}}'


def test_CONV_2_absent_or_none_error_gives_the_default_message() -> None:
    """D3: the original stores "undefined" for fail(h, id) and "null" for fail(h, id, null); the reference gives
    the documented default "Tool call failed."."""
    closure, handle = begun("a", "b")
    default = reported("error", "tool_error", "Tool call failed.")
    assert (
        to_json(closure.fail(handle, "a")) == f'{{"accepted":true,"generation":1,"callId":"a","settlement":{default}}}'
    )
    assert to_json(closure.fail(handle, "b", None)) == (
        f'{{"accepted":true,"generation":1,"callId":"b","settlement":{default}}}'
    )


def test_CONV_2_code_and_truncation() -> None:
    closure, handle = begun("a", "b", max_message_bytes=8)
    assert to_json(closure.fail(handle, "a", RuntimeError("abcdefghij"), "E1").settlement) == reported(
        "error", "E1", "abcde..."
    )
    assert to_json(closure.fail(handle, "b").settlement) == reported("error", "tool_error", "Tool ...")


@pytest.mark.parametrize("path", ["stale", "closed", "unknown", "duplicate"])
def test_CONV_2_the_error_is_converted_only_when_admitted(path: str) -> None:
    """D3: the original runs String(error) before every check, even for a stale handle; the reference converts
    it in the normalize phase, so caller code does not run on a rejection path."""
    closure, handle = begun("a", "b")
    error = Text(lambda: "converted")
    call_id = "a"
    if path == "stale":
        handle = BatchHandle(generation=1)
    elif path == "closed":
        closure.close(handle)
    elif path == "unknown":
        call_id = "zz"
    else:
        closure.succeed(handle, "a", 1)
    result = closure.fail(handle, call_id, error)
    assert result.accepted is False
    assert error.calls == 0


def test_CONV_2_call_id_is_checked_before_the_error_is_converted() -> None:
    """D3: the original's toString throws ahead of the callId error ("ts-first"); the reference checks callId first."""

    def throw() -> str:
        raise RuntimeError("ts-first")

    closure, handle = begun("a")
    with unchanged(closure), raises(UsageError, "callId must be a non-empty string", "string_empty"):
        closure.fail(handle, "", Text(throw))
    with pytest.raises(RuntimeError, match=r"^ts-first$"):
        closure.fail(handle, "a", Text(throw))  # admitted: the caller's exception propagates
    assert closure.snapshot().calls[0].state == "pending"  # type: ignore[union-attr]


def test_CONV_2_a_nested_settlement_while_converting_is_seen_by_the_recheck() -> None:
    """D3 (RE-7): the original's pre-check sees it (observedStatus null); the reference's recheck reports "error"."""
    closure, handle = begun("a")
    error = Text(lambda: then(closure.succeed(handle, "a", "inner"), "outer"))
    assert to_json(closure.fail(handle, "a", error)) == rejection("duplicate_settlement", "a", 1, "error")


@pytest.mark.parametrize(
    ("args", "settlement"),
    [
        ((), reported("cancelled", "cancelled", "Tool call was cancelled.")),
        ((None,), reported("cancelled", "cancelled", "Tool call was cancelled.")),
        (("",), reported("cancelled", "cancelled", "")),
        ((123,), reported("cancelled", "cancelled", "123")),
        (("user stop", "user"), reported("cancelled", "user", "user stop")),
        ((None, "user"), reported("cancelled", "user", "Tool call was cancelled.")),
        ((None, None), reported("cancelled", "cancelled", "Tool call was cancelled.")),
    ],
)
def test_CONV_3_cancel_default_message_and_code(args: tuple[Any, ...], settlement: str) -> None:
    closure, handle = begun("a")
    result = closure.cancel(handle, "a", *args)
    assert to_json(result) == f'{{"accepted":true,"generation":1,"callId":"a","settlement":{settlement}}}'


def test_CONV_3_default_codes_ignore_max_code_bytes() -> None:
    closure, handle = begun("a", "b", "c", max_code_bytes=1)
    assert closure.cancel(handle, "a").settlement.code == "cancelled"  # type: ignore[union-attr]
    assert closure.fail(handle, "b").settlement.code == "tool_error"  # type: ignore[union-attr]
    with raises(LimitError, "outcome.code exceeds its byte limit (1)", "string_too_long"):
        closure.cancel(handle, "c", None, "cancelled")


@pytest.mark.parametrize("path", ["closed", "sealed", "stale"])
def test_CONV_4_the_forms_report_their_status_on_rejection(path: str) -> None:
    closure, handle = begun("a")
    reason = "run_closed"
    if path == "closed":
        closure.close(handle)
    elif path == "sealed":
        closure.succeed(handle, "a", 1)
        closure.seal(handle)
    else:
        closure.begin(entries("a"))
        reason = "stale_generation"
    assert to_json(closure.succeed(handle, "a")) == rejection(reason, "a", 1, "success")  # content never serialized
    assert to_json(closure.succeed(handle, "a", {1, 2})) == rejection(reason, "a", 1, "success")
    assert to_json(closure.fail(handle, "a", "m", "")) == rejection(reason, "a", 1, "error")
    assert to_json(closure.cancel(handle, "a", code=5)) == rejection(reason, "a", 1, "cancelled")


# ---------------------------------------------------------------------------------------------------------------
# 8. seal (SEAL)
# ---------------------------------------------------------------------------------------------------------------


def test_SEAL_1_seal_with_a_stale_handle_rejects() -> None:
    closure = ToolCallClosure()
    assert to_json(closure.seal(None)) == rejection("stale_generation", None, None, None)  # no run
    assert closure.snapshot() is None  # the pre-begin diagnostic is discarded with no run to hold it
    old = closure.begin([]).handle
    closure.begin([])
    assert to_json(closure.seal(old)) == rejection("stale_generation", None, 1, None)
    assert to_json(closure.seal(BatchHandle(generation=2))) == rejection("stale_generation", None, 2, None)
    assert to_json(closure.seal(None)) == rejection("stale_generation", None, None, None)
    assert to_json(closure.seal({"generation": 9})) == rejection("stale_generation", None, 9, None)
    assert current(closure) == snapshot_text(
        2,
        False,
        "null",
        [],
        [
            diagnostic("stale_generation", None, 1, None),
            diagnostic("stale_generation", None, 2, None),
            diagnostic("stale_generation", None, None, None),
            diagnostic("stale_generation", None, 9, None),
        ],
    )


@pytest.mark.parametrize("how", ["seal", "close"])
def test_SEAL_2_seal_on_a_closed_generation_returns_a_fresh_snapshot(how: str) -> None:
    closure, handle = begun("a")
    if how == "seal":
        closure.succeed(handle, "a", "x")
        first = closure.seal(handle)
        expected = snapshot_text(1, True, COMPLETE, [call_text("a", "success", success("x"))])
    else:
        first = closure.close(
            handle, {"status": "cancelled", "code": "C", "message": "m", "sideEffectState": "not_started"}
        )
        expected = snapshot_text(
            1,
            True,
            close_reason("cancelled", "C", "m", "not_started"),
            [call_text("a", "cancelled", synthetic("cancelled", "C", "m", "not_started"))],
        )
    again = closure.seal(handle)
    assert type(again) is Snapshot
    assert again is not first
    assert to_json(first) == to_json(again) == expected
    assert closure.to_openai_responses(again)[0]["call_id"] == "a"  # registered
    assert to_json(closure.seal(handle)) == expected


def test_SEAL_3_seal_with_pending_calls_rejects() -> None:
    closure, handle = begun("a", "b")
    closure.succeed(handle, "a", "x")
    assert to_json(closure.seal(handle)) == (
        '{"accepted":false,"reason":"pending_calls","callId":null,"generation":1,"observedStatus":null}'
    )
    assert current(closure) == snapshot_text(
        1,
        False,
        "null",
        [call_text("a", "success", success("x")), call_text("b")],
        [diagnostic("pending_calls", None, 1, None)],
    )
    assert closure.succeed(handle, "b", "y").accepted is True  # still open


def test_SEAL_4_seal_closes_the_generation_as_complete() -> None:
    closure, handle = begun("a", "b", "c")
    closure.succeed(handle, "a", "x")
    closure.fail(handle, "b", "m")
    closure.cancel(handle, "c")
    sealed = closure.seal(handle)
    expected = snapshot_text(
        1,
        True,
        '{"status":"complete"}',
        [
            call_text("a", "success", success("x")),
            call_text("b", "error", reported("error", "tool_error", "m")),
            call_text("c", "cancelled", reported("cancelled", "cancelled", "Tool call was cancelled.")),
        ],
    )
    assert to_json(sealed) == current(closure) == expected
    assert type(sealed) is Snapshot
    assert sealed.close_reason == CloseReason("complete")
    assert to_json(closure.close(handle, {"status": "error"})) == expected  # close after seal answers complete


def test_SEAL_4_a_zero_call_generation_seals_at_once() -> None:
    closure = ToolCallClosure()
    handle = closure.begin([]).handle
    assert (
        to_json(closure.seal(handle))
        == '{"generation":1,"closed":true,"closeReason":{"status":"complete"},"calls":[],"diagnostics":[]}'
    )


# ---------------------------------------------------------------------------------------------------------------
# 9. Diagnostics (DIAG)
# ---------------------------------------------------------------------------------------------------------------


def test_DIAG_1_rejections_are_recorded_up_to_max_diagnostics() -> None:
    closure, handle = begun("a", max_diagnostics=2)
    first = closure.settle(handle, "x", {})
    second = closure.close(BatchHandle(generation=1))
    third = closure.seal(handle)  # pending_calls: returned, not recorded
    fourth = closure.cancel(handle, "y")
    assert [to_json(r) for r in (first, second, third, fourth)] == [
        rejection("unknown_call", "x", 1, None),
        rejection("stale_generation", None, 1, None),
        rejection("pending_calls", None, 1, None),
        rejection("unknown_call", "y", 1, None),
    ]
    assert current(closure) == snapshot_text(
        1,
        False,
        "null",
        [call_text("a")],
        [diagnostic("unknown_call", "x", 1, None), diagnostic("stale_generation", None, 1, None)],
    )


def test_DIAG_2_begin_clears_the_diagnostics() -> None:
    closure = ToolCallClosure()
    closure.settle(None, "a", {})
    closure.seal(BatchHandle(generation=1))
    closure.close(None)
    handle = closure.begin(entries("a")).handle
    assert closure.snapshot().diagnostics == ()  # type: ignore[union-attr]  # pre-begin rejections discarded
    closure.settle(handle, "zz", {})
    assert len(closure.snapshot().diagnostics) == 1  # type: ignore[union-attr]
    closure.close(handle)
    closure.begin([])
    assert current(closure) == snapshot_text(2, False, "null", [])


def test_DIAG_3_one_diagnostics_list_for_the_current_generation() -> None:
    closure, old = begun("a", "b")
    closure.settle(old, "a", {"status": "success", "content": 1})
    older = closure.snapshot()
    closure.begin(entries("c"))
    closure.settle(old, "b", {"status": "error"})
    assert current(closure) == snapshot_text(
        2,
        False,
        "null",
        [call_text("c")],
        ['{"reason":"stale_generation","callId":"b","generation":1,"observedStatus":"error"}'],
    )
    assert older is not None
    assert older.diagnostics == ()


def test_DIAG_4_diagnostics_accumulate_after_close_and_old_snapshots_keep_theirs() -> None:
    closure, handle = begun("a")
    closed = closure.close(handle)
    closure.settle(handle, "a", {"status": "success", "content": 1})
    later = closure.close(handle)
    closure.seal(handle)  # a closed run: returns a snapshot, records nothing
    closure.cancel(handle, "a")
    latest = closure.snapshot()
    assert [len(s.diagnostics) for s in (closed, later, latest)] == [0, 1, 2]  # type: ignore[union-attr]
    assert to_json(latest.diagnostics) == (  # type: ignore[union-attr]
        f"[{diagnostic('run_closed', 'a', 1, 'success')},{diagnostic('run_closed', 'a', 1, 'cancelled')}]"
    )


def test_DIAG_4_after_seal() -> None:
    closure, handle = begun("a")
    closure.succeed(handle, "a", 1)
    sealed = closure.seal(handle)
    closure.fail(handle, "a")
    assert [len(sealed.diagnostics), len(closure.snapshot().diagnostics)] == [0, 1]  # type: ignore[union-attr]


def test_DIAG_5_accepted_settlements_and_export_failures_record_nothing() -> None:
    closure, handle = begun("a", "b", "c", "d")
    open_snapshot = closure.snapshot()
    assert closure.succeed(handle, "a", 1).accepted is True
    assert closure.fail(handle, "b").accepted is True
    assert closure.cancel(handle, "c").accepted is True
    assert closure.settle(handle, "d", {"status": "error"}).accepted is True
    for export in (closure.to_openai_chat_completions, closure.to_openai_responses, closure.to_anthropic_tool_results):
        with raises(UsageError, OPEN, "snapshot_open"):
            export()
        with raises(UsageError, OPEN, "snapshot_open"):
            export(open_snapshot)
        with raises(UsageError, FOREIGN, "snapshot_foreign"):
            export(42)  # type: ignore[arg-type]
    assert closure.snapshot().diagnostics == ()  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------------------------
# 10. Snapshots and immutability (SNAP, IMM)
# ---------------------------------------------------------------------------------------------------------------


def test_SNAP_1_no_snapshot_before_the_first_begin() -> None:
    closure = ToolCallClosure()
    assert closure.snapshot() is None
    closure.settle(None, "a", {})
    with pytest.raises(UsageError):
        closure.begin(5)
    assert closure.snapshot() is None


def test_SNAP_2_the_snapshot_shape_and_key_order() -> None:
    closure, handle = begun("a", "b", "c", "d")
    closure.cancel(handle, "c", "stop", "C")
    closure.succeed(handle, "a", {"k": "v"})
    closure.settle(handle, "zz", {"status": "error"})
    open_text = (
        '{"generation":1,"closed":false,"closeReason":null,"calls":['
        '{"id":"a","name":"t","state":"success","settlement":{"status":"success","content":"{\\"k\\":\\"v\\"}",'
        '"provenance":"reported"}},'
        '{"id":"b","name":"t","state":"pending","settlement":null},'
        '{"id":"c","name":"t","state":"cancelled","settlement":{"status":"cancelled","code":"C","message":"stop",'
        '"provenance":"reported"}},'
        '{"id":"d","name":"t","state":"pending","settlement":null}],'
        '"diagnostics":[{"reason":"unknown_call","callId":"zz","generation":1,"observedStatus":null}]}'
    )
    assert current(closure) == open_text
    closed = closure.close(handle, {"status": "error", "sideEffectState": "not_started"})
    assert to_json(closed) == (
        '{"generation":1,"closed":true,"closeReason":{"status":"error","code":"error",'
        '"message":"Tool call did not complete.","sideEffectState":"not_started"},"calls":['
        '{"id":"a","name":"t","state":"success","settlement":{"status":"success","content":"{\\"k\\":\\"v\\"}",'
        '"provenance":"reported"}},'
        '{"id":"b","name":"t","state":"error","settlement":{"status":"error","code":"error",'
        '"message":"Tool call did not complete.","provenance":"synthetic","sideEffectState":"not_started"}},'
        '{"id":"c","name":"t","state":"cancelled","settlement":{"status":"cancelled","code":"C","message":"stop",'
        '"provenance":"reported"}},'
        '{"id":"d","name":"t","state":"error","settlement":{"status":"error","code":"error",'
        '"message":"Tool call did not complete.","provenance":"synthetic","sideEffectState":"not_started"}}],'
        '"diagnostics":[{"reason":"unknown_call","callId":"zz","generation":1,"observedStatus":null}]}'
    )
    assert closed is not None
    assert [f.name for f in dataclasses.fields(closed)] == [
        "generation",
        "closed",
        "close_reason",
        "calls",
        "diagnostics",
    ]
    assert [c.id for c in closed.calls] == ["a", "b", "c", "d"]  # announcement order, not settlement order
    assert [type(c) for c in closed.calls] == [CallSnapshot] * 4
    assert [type(c.settlement) for c in closed.calls] == [Settlement] * 4


def test_SNAP_3_every_snapshot_is_new_and_deeply_immutable() -> None:
    closure, handle = begun("a", "b")
    closure.succeed(handle, "a", 1)
    closure.settle(handle, "zz", {})
    closure.close(handle)
    first, second = closure.snapshot(), closure.snapshot()
    assert first is not None
    assert second is not None
    assert first is not second
    assert first == second
    assert to_json(first) == to_json(second)
    assert type(first.calls) is tuple
    assert type(first.diagnostics) is tuple
    targets: list[tuple[Any, str, Any]] = [
        (first, "closed", False),
        (first, "generation", 2),
        (first, "calls", ()),
        (first, "diagnostics", ()),
        (first.close_reason, "status", "error"),
        (first.calls[0], "state", "error"),
        (first.calls[0].settlement, "content", "2"),
        (first.calls[1].settlement, "side_effect_state", "not_started"),
        (first.diagnostics[0], "reason", "run_closed"),
    ]
    for target, attribute, value in targets:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(target, attribute, value)
    with pytest.raises(TypeError):
        first.calls[0] = first.calls[1]  # type: ignore[index]
    assert to_json(first) == to_json(second)


def test_SNAP_4_snapshots_are_detached_from_later_changes() -> None:
    closure, handle = begun("a")
    before = closure.snapshot()
    text = to_json(before)
    closure.succeed(handle, "a", "x")
    after = closure.snapshot()
    assert [before.calls[0].state, after.calls[0].state] == ["pending", "success"]  # type: ignore[union-attr]
    closure.settle(handle, "zz", {})
    closure.seal(handle)
    closure.begin(entries("b"))
    assert to_json(before) == text
    assert to_json(after) == snapshot_text(1, False, "null", [call_text("a", "success", success("x"))])


@pytest.mark.parametrize("source", ["snapshot", "close", "seal", "supersede", "close_again", "seal_closed"])
def test_SNAP_5_every_produced_snapshot_is_registered(source: str) -> None:
    closure, handle = begun("a")
    if source == "snapshot":
        closure.close(handle)
        produced = closure.snapshot()
    elif source == "close":
        produced = closure.close(handle)
    elif source == "seal":
        closure.succeed(handle, "a", "x")
        produced = closure.seal(handle)
    elif source == "supersede":
        produced = closure.begin([]).superseded
    elif source == "close_again":
        closure.close(handle)
        produced = closure.close(handle)
    else:
        closure.close(handle)
        produced = closure.seal(handle)
    assert type(produced) is Snapshot
    assert len(closure.to_openai_chat_completions(produced)) == 1
    with raises(UsageError, FOREIGN, "snapshot_foreign"):
        closure.to_openai_chat_completions(dataclasses.replace(produced))  # equal, but not produced


def test_IMM_1_frozen_values() -> None:
    closure, handle = begun("a", "b")
    begin_result = closure.begin(entries("a", "b"))
    handle = begin_result.handle
    accepted = closure.succeed(handle, "a", 1)
    rejected = closure.succeed(handle, "zz", 1)
    snap = closure.snapshot()
    assert snap is not None
    frozen: list[tuple[Any, str]] = [
        (begin_result, "generation"),
        (begin_result, "handle"),
        (handle, "generation"),
        (begin_result.superseded, "closed"),
        (accepted, "generation"),
        (accepted, "call_id"),
        (accepted.settlement, "content"),  # deep
        (rejected, "reason"),
        (rejected, "observed_status"),
        (snap, "closed"),
        (snap.diagnostics[0], "call_id"),
        (snap.calls[0], "settlement"),
    ]
    for target, attribute in frozen:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(target, attribute, None)
    assert type(snap.calls) is tuple
    assert type(snap.diagnostics) is tuple
    assert to_json(accepted) == f'{{"accepted":true,"generation":2,"callId":"a","settlement":{success("1")}}}'


def test_IMM_1_adding_an_attribute_raises_frozen_instance_error() -> None:
    """D6: a write to a frozen value raises FrozenInstanceError (JavaScript: adding a property to a frozen object
    throws TypeError in strict code), also for an attribute the value does not have."""
    closure, handle = begun("a", "b")
    accepted = closure.succeed(handle, "a", 1)
    rejected = closure.succeed(handle, "zz", 1)
    snap = closure.snapshot()
    assert snap is not None
    begin_result = closure.begin([])
    for target in (
        handle,
        begin_result,
        accepted,
        accepted.settlement,
        rejected,
        snap,
        snap.calls[0],  # type: ignore[union-attr]
        snap.diagnostics[0],
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            target.extra = 1
        with pytest.raises(dataclasses.FrozenInstanceError):
            del target.extra
    with pytest.raises(dataclasses.FrozenInstanceError):
        rejected.accepted = True  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        accepted.accepted = False  # type: ignore[misc]


def test_IMM_1_export_payloads_are_new_mutable_lists_of_new_dicts() -> None:
    closure, handle = begun("a", "b")
    closure.succeed(handle, "a", "x")
    closure.fail(handle, "b", "m")
    sealed = closure.seal(handle)
    for export in (closure.to_openai_chat_completions, closure.to_openai_responses, closure.to_anthropic_tool_results):
        first, second = export(sealed), export(sealed)  # type: ignore[arg-type]
        assert type(first) is list
        assert all(type(item) is dict for item in first)
        assert first == second
        assert first is not second
        assert all(a is not b for a, b in zip(first, second, strict=True))
        first.append({"extra": True})
        first[0]["content" if "content" in first[0] else "output"] = "changed"
        del first[1]
        assert export(sealed) == second  # type: ignore[arg-type]
    assert to_json(sealed) == snapshot_text(
        1,
        True,
        COMPLETE,
        [call_text("a", "success", success("x")), call_text("b", "error", reported("error", "tool_error", "m"))],
    )


# ---------------------------------------------------------------------------------------------------------------
# 11. Provider adapters (ADP)
# ---------------------------------------------------------------------------------------------------------------

EXPORTS = ["to_openai_chat_completions", "to_openai_responses", "to_anthropic_tool_results"]


@pytest.mark.parametrize("method", EXPORTS)
def test_ADP_1_exports_default_to_a_fresh_snapshot(method: str) -> None:
    closure = ToolCallClosure()
    export = getattr(closure, method)
    with raises(UsageError, FOREIGN, "snapshot_foreign"):
        export()  # before the first begin the default snapshot is null
    handle = closure.begin(entries("a")).handle
    with raises(UsageError, OPEN, "snapshot_open"):
        export()  # an open run
    closure.succeed(handle, "a", "x")
    sealed = closure.seal(handle)
    assert export() == export(sealed)
    assert len(export()) == 1


@pytest.mark.parametrize("method", EXPORTS)
def test_ADP_1_none_selects_the_default(method: str) -> None:
    """D1: an export's None snapshot is the absent value (the original: null is refused as foreign)."""
    closure = ToolCallClosure()
    export = getattr(closure, method)
    with raises(UsageError, FOREIGN, "snapshot_foreign"):
        export(None)
    handle = closure.begin(entries("a")).handle
    with raises(UsageError, OPEN, "snapshot_open"):
        export(None)
    closure.close(handle)
    assert export(None) == export()
    assert len(export(None)) == 1


class CallsGetter:
    """A forged snapshot whose ``calls`` getter counts its reads."""

    def __init__(self) -> None:
        self.reads = 0

    @property
    def calls(self) -> list[Any]:
        self.reads += 1
        return []

    @property
    def closed(self) -> bool:
        self.reads += 1
        return True


class Delegate:
    """``new Proxy(snapshot, {})``: forwards every attribute read to the snapshot, and records it."""

    def __init__(self, target: Any) -> None:
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "reads", [])

    def __getattr__(self, name: str) -> Any:
        self.reads.append(name)
        return getattr(self.target, name)


@pytest.mark.parametrize("method", EXPORTS)
def test_ADP_2_exports_refuse_anything_this_instance_did_not_produce(method: str) -> None:
    closure, handle = begun("a")
    closure.succeed(handle, "a", "x")
    snap = closure.seal(handle)
    assert type(snap) is Snapshot
    twin, twin_handle = begun("a")
    twin.succeed(twin_handle, "a", "x")
    twin_snap = twin.seal(twin_handle)
    assert twin_snap == snap  # equal by value, produced by another instance
    rejected = closure.settle(handle, "a", {})
    forged_getter = CallsGetter()
    proxy = Delegate(snap)
    forged_mapping = Obj(calls=Get(list), closed=True, generation=1)
    foreign = [
        42,
        "snapshot",
        [snap],
        json.loads(to_json(snap)),  # a JSON clone
        copy.copy(snap),
        copy.deepcopy(snap),  # the structuredClone analogue
        dataclasses.replace(snap),  # {...snap}
        proxy,  # new Proxy(snap, {})
        twin_snap,
        rejected,
        handle,
        forged_getter,
        forged_mapping,
    ]
    export = getattr(closure, method)
    for value in foreign:
        with raises(UsageError, FOREIGN, "snapshot_foreign"):
            export(value)
    assert forged_getter.reads == 0  # refused before any property is read
    assert proxy.reads == []
    assert forged_mapping.reads == Counter()
    assert len(export(snap)) == 1


@pytest.mark.parametrize("method", EXPORTS)
def test_ADP_3_exports_refuse_an_open_snapshot(method: str) -> None:
    closure, handle = begun("a")
    open_snapshot = closure.snapshot()
    export = getattr(closure, method)
    with raises(UsageError, OPEN, "snapshot_open"):
        export(open_snapshot)
    closure.succeed(handle, "a", "x")
    sealed = closure.seal(handle)
    with raises(UsageError, OPEN, "snapshot_open"):
        export(open_snapshot)  # an old open snapshot stays refused after the run is sealed
    assert len(export(sealed)) == 1


def _mixed_run() -> tuple[ToolCallClosure, Snapshot]:
    """Calls a..d settled out of order: c cancelled, a success, b error; d closed synthetically."""
    closure, handle = begun("a", "b", "c", "d")
    closure.cancel(handle, "c", "stop", "C")
    closure.succeed(handle, "a", {"k": [1, "\u00e9"]})
    closure.fail(handle, "b", ValueError("boom"), "E")
    snap = closure.close(
        handle, {"status": "error", "code": "timeout", "message": "late", "sideEffectState": "not_started"}
    )
    assert type(snap) is Snapshot
    return closure, snap


ADP4_CONTENTS = [
    '{"k":[1,"\u00e9"]}',
    '{"error":{"code":"E","message":"boom"}}',
    '{"error":{"code":"C","message":"stop"}}',
    '{"error":{"code":"timeout","message":"late","side_effect_state":"not_started"}}',
]


def test_ADP_4_one_chat_completions_item_per_call_in_announcement_order() -> None:
    closure, snap = _mixed_run()
    assert closure.to_openai_chat_completions(snap) == [
        {"role": "tool", "tool_call_id": i, "content": c} for i, c in zip("abcd", ADP4_CONTENTS, strict=True)
    ]
    assert to_json(closure.to_openai_chat_completions(snap)[0]) == (
        '{"role":"tool","tool_call_id":"a","content":"{\\"k\\":[1,\\"\u00e9\\"]}"}'
    )


def test_ADP_4_one_responses_item_per_call_in_announcement_order() -> None:
    closure, snap = _mixed_run()
    assert closure.to_openai_responses(snap) == [
        {"type": "function_call_output", "call_id": i, "output": c} for i, c in zip("abcd", ADP4_CONTENTS, strict=True)
    ]
    assert list(closure.to_openai_responses(snap)[1]) == ["type", "call_id", "output"]


def test_ADP_4_anthropic_items_have_is_error_only_for_failures() -> None:
    closure, snap = _mixed_run()
    items = closure.to_anthropic_tool_results(snap)
    assert items == [
        {"type": "tool_result", "tool_use_id": "a", "content": ADP4_CONTENTS[0]},
        {"type": "tool_result", "tool_use_id": "b", "content": ADP4_CONTENTS[1], "is_error": True},
        {"type": "tool_result", "tool_use_id": "c", "content": ADP4_CONTENTS[2], "is_error": True},
        {"type": "tool_result", "tool_use_id": "d", "content": ADP4_CONTENTS[3], "is_error": True},
    ]
    assert "is_error" not in items[0]  # absent, not False
    assert [list(item) for item in items] == [
        ["type", "tool_use_id", "content"],
        *[["type", "tool_use_id", "content", "is_error"]] * 3,
    ]


@pytest.mark.parametrize("method", EXPORTS)
def test_ADP_4_a_sealed_empty_run_exports_nothing(method: str) -> None:
    closure = ToolCallClosure()
    closure.seal(closure.begin([]).handle)
    assert getattr(closure, method)() == []


def test_ADP_5_exported_content_of_successes_and_failures() -> None:
    closure, handle = begun("a", "b", "c", "d", "e")
    closure.succeed(handle, "a", "raw text")  # a string is stored unquoted
    closure.fail(handle, "b", 'bad\n"q"', "E")
    closure.fail(handle, "c", "x\ud800")
    closure.succeed(handle, "d", "\ud800")
    superseded = closure.begin([]).superseded
    assert superseded is not None
    contents = [item["content"] for item in closure.to_openai_chat_completions(superseded)]
    assert contents == [
        "raw text",
        '{"error":{"code":"E","message":"bad\\n\\"q\\""}}',
        '{"error":{"code":"tool_error","message":"x\\ud800"}}',  # a lone surrogate is escaped
        "\ud800",  # the stored text, raw
        '{"error":{"code":"superseded","message":"Tool call was superseded by a newer generation.",'
        '"side_effect_state":"unknown"}}',
    ]


def test_ADP_6_any_closed_registered_snapshot_exports_repeatedly() -> None:
    closure, h1 = begun("a")
    closure.succeed(h1, "a", "one")
    gen1 = closure.seal(h1)
    h2 = closure.begin(entries("b")).handle
    superseded = closure.begin(entries("c")).superseded  # generation 2, superseded
    h3 = closure.active_generation
    assert h3 == 3
    assert h2 is not None
    exports = [closure.to_openai_chat_completions, closure.to_openai_responses, closure.to_anthropic_tool_results]
    for snap, expected_id in ((gen1, "a"), (superseded, "b")):
        for export in exports:
            first = export(snap)  # type: ignore[arg-type]
            second = export(snap)  # type: ignore[arg-type]
            assert first == second
            assert first is not second
            assert len(first) == 1
            assert expected_id in first[0].values()
    assert closure.to_anthropic_tool_results(superseded) == [
        {
            "type": "tool_result",
            "tool_use_id": "b",
            "content": '{"error":{"code":"superseded","message":"Tool call was superseded by a newer generation.",'
            '"side_effect_state":"unknown"}}',
            "is_error": True,
        }
    ]
    assert current(closure) == snapshot_text(3, False, "null", [call_text("c")])  # exporting is a pure read
