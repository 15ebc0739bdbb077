"""The fast reader of a plain close reason is the general reader, for every reason it accepts.

``close`` reads its reason with ``reading.plain_close_reason`` when the reason
is plain (none, or an exact dict of known exact-str keys and exact str or
None values) and with the general ``semantics.read_close_reason`` otherwise.
These tests generate reasons — plain ones, and hostile ones: unknown keys,
str-subclass keys and values, non-str values, objects, mappings that are not
dicts, over-long and blank strings, lone surrogates, small limits — and
require the fast reader either to decline (``None``) or to give exactly what
the general reader gives: the same record, or the same error (class, code
and message).  The general reader is the definition; the fast one may only
be a shortcut to it.
"""

from __future__ import annotations

from collections import UserDict
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tool_call_closure import create_tool_call_closure
from tool_call_closure.absent import ABSENT
from tool_call_closure.machine.reading import plain_close_reason
from tool_call_closure.machine.semantics import read_close_reason
from tool_call_closure.values import Limits

_TEXTS = create_tool_call_closure()._machine.texts
_KEYS = ("status", "code", "message", "sideEffectState", "side_effect_state")


class _Text(str):
    """A str subclass: never plain (its __eq__ and __hash__ are caller code)."""

    def __hash__(self) -> int:
        return hash(str(self))


class _DictSubclass(dict[str, Any]):
    """A dict subclass: never plain (its methods may be caller code)."""


class _Object:
    def __str__(self) -> str:
        return "an object"


_words = st.sampled_from(
    ["error", "cancelled", "unknown", "not_started", "success", "", " ", "\t", "timeout", "x" * 40, "\ud800", "Ü" * 9]
)
_text = st.one_of(_words, st.text(max_size=24))
_value = st.one_of(
    st.none(),
    _text,
    _text.map(_Text),
    st.just(ABSENT),
    st.integers(-3, 3),
    st.floats(allow_nan=True),
    st.booleans(),
    st.builds(_Object),
    st.lists(st.integers(), max_size=2),
)
_key = st.one_of(st.sampled_from(_KEYS), st.sampled_from(_KEYS).map(_Text), st.text(max_size=8), st.integers(0, 2))
_plain_dict = st.dictionaries(st.sampled_from(_KEYS), st.one_of(st.none(), _text), max_size=5)
_any_dict = st.dictionaries(_key, _value, max_size=5)
_reason = st.one_of(
    st.none(),
    st.just(ABSENT),
    _plain_dict,
    _any_dict,
    _plain_dict.map(UserDict),
    _any_dict.map(lambda d: UserDict(d)),
    _value,
)
_limits = st.builds(
    lambda code, message: Limits(
        max_calls=10,
        max_diagnostics=10,
        max_result_bytes=100,
        max_message_bytes=message,
        max_id_bytes=64,
        max_name_bytes=64,
        max_code_bytes=code,
    ),
    st.integers(1, 12),
    st.integers(0, 40),
)


def _outcome(read: Any, reason: object, limits: Limits) -> tuple[str, Any]:
    try:
        return "record", read(reason, limits, _TEXTS)
    except Exception as error:  # noqa: BLE001 - the error itself is what is compared
        return "error", (type(error), getattr(error, "code", None), str(error))


@settings(max_examples=1500, deadline=None)
@given(reason=_reason, limits=_limits)
def test_the_fast_reader_declines_or_agrees_with_the_general_reader(reason: object, limits: Limits) -> None:
    fast = _outcome(plain_close_reason, reason, limits)
    if fast == ("record", None):
        return  # declined: close reads it with the general reader
    assert fast == _outcome(read_close_reason, reason, limits)
    if fast[0] == "record":
        assert [type(part) for part in fast[1]] == [str, str, str, str]  # exact strs, as the general reader's


@settings(max_examples=500, deadline=None)
@given(reason=_plain_dict, limits=_limits)
def test_every_plain_reason_is_read_by_the_fast_reader(reason: dict[str, str | None], limits: Limits) -> None:
    fast = _outcome(plain_close_reason, reason, limits)
    assert fast != ("record", None)
    assert fast == _outcome(read_close_reason, reason, limits)


def test_what_the_fast_reader_declines() -> None:
    limits = create_tool_call_closure()._limits
    for reason in (
        {"status": _Text("error")},
        {_Text("status"): "error"},
        {"status": "error", "stauts": "error"},
        {"message": 3},
        {"message": ABSENT},
        {1: "error"},
        UserDict({"status": "error"}),
        _DictSubclass({"status": "error"}),
        _Object(),
        "error",
    ):
        assert plain_close_reason(reason, limits, _TEXTS) is None, reason
    assert plain_close_reason(None, limits, _TEXTS) == plain_close_reason(ABSENT, limits, _TEXTS)
    assert plain_close_reason({}, limits, _TEXTS) == read_close_reason(None, limits, _TEXTS)


def test_close_through_either_reader_records_the_same_snapshot() -> None:
    """End to end: a plain dict, and the same reason as a Mapping (general reader), close alike."""
    reason = {"status": "error", "code": "timeout", "message": "deadline", "side_effect_state": "not_started"}
    results = []
    for given_reason in (reason, UserDict(reason)):
        closure = create_tool_call_closure()
        handle = closure.begin([{"id": "a", "name": "t"}]).handle
        results.append(closure.to_openai_chat_completions(closure.close(handle, given_reason)))
    assert results[0] == results[1]
