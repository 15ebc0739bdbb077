"""Tests for the ECMAScript value semantics of ``ecma`` and ``ecma_json`` (catalogue JS-1..JS-5, JS-9, NORM-6..NORM-8).

Two kinds of test:

* example tests whose expectations are written out by hand from the catalogue
  (``/work/shared/reference/seed-behavior.md``) and from Node, independent of the code;
* differential tests against Node (skipped when ``node`` is not on PATH): Hypothesis draws a
  *batch* of values per example, and one Node process evaluates the whole batch.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tool_call_closure.absent import ABSENT
from tool_call_closure.ecma import (
    __all__ as ecma_all,
)
from tool_call_closure.ecma import (
    is_blank,
    number_to_string,
    to_js_string,
    truncate_utf8,
    utf8_length,
)
from tool_call_closure.ecma_json import __all__ as ecma_json_all
from tool_call_closure.ecma_json import json_stringify
from tool_call_closure.errors import UsageError

# --------------------------------------------------------------------------- #
# helpers
# --------------------------------------------------------------------------- #

NODE = shutil.which("node")
requires_node = pytest.mark.skipif(NODE is None, reason="node is not on PATH: the differential tests need Node")

# JS-1: the code points String.prototype.trim strips, listed by hand from the catalogue.
JS_TRIM_SET = frozenset(
    [
        *(0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680),
        *range(0x2000, 0x200B),
        *(0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF),
    ]
)

# The Node side of the differential tests.  `truncate` is written from the catalogue's
# description of NORM-7 (Buffer-based), not taken from the original.
_NODE_SCRIPT = r"""
const fs = require('fs');
function truncate(s, max) {
  const b = Buffer.from(s, 'utf8');
  if (b.length <= max) return s;
  const suffix = max >= 3 ? '...' : '';
  let end = max - suffix.length;
  while (end > 0 && (b[end] & 0xc0) === 0x80) end -= 1;
  return b.subarray(0, end).toString('utf8') + suffix;
}
const fns = {
  json: (v) => JSON.stringify(v),
  string: (v) => String(v),
  number: (s) => String(Number(s)),
  bytes: (s) => Buffer.byteLength(s),
  trunc: ([s, max]) => truncate(s, max),
  blank: (s) => s.trim() === '',
  blank_bmp: () => {
    let r = '';
    for (let i = 0; i < 0x10000; i++) r += String.fromCharCode(i).trim() === '' ? '1' : '0';
    return r;
  },
};
const isFloat = (v) =>
  v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 1 && '$f' in v;
const revive = (k, v) => (isFloat(v) ? Number(v.$f) : v);
const input = JSON.parse(fs.readFileSync(process.argv[1], 'utf8'), revive);
process.stdout.write(JSON.stringify(input.map(([fn, arg]) => fns[fn](arg))));
"""


def _float_text(x: float) -> str:
    """A float as text Node's ``Number()`` turns back into the very same double."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(x)


def _wire(value: Any) -> Any:
    """Make a JSON-compatible tree transportable: non-finite floats become {"$f": text}."""
    if isinstance(value, float) and not math.isfinite(value):
        return {"$f": _float_text(value)}
    if isinstance(value, list):
        return [_wire(item) for item in value]
    if isinstance(value, dict):
        return {key: _wire(item) for key, item in value.items()}
    return value


def node_eval(calls: list[tuple[str, Any]]) -> list[Any]:
    """Evaluate ``(function, argument)`` pairs in ONE Node process; returns Node's results.

    The input travels as ASCII JSON, so lone surrogates survive as ``\\udxxx`` escapes (and
    JSON.parse keeps them); the output comes back the same way.
    """
    assert NODE is not None
    payload = json.dumps([[fn, _wire(arg)] for fn, arg in calls], ensure_ascii=True, allow_nan=False)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input.json")
        with open(path, "w", encoding="ascii") as handle:
            handle.write(payload)
        done = subprocess.run([NODE, "-e", _NODE_SCRIPT, path], capture_output=True, check=True, timeout=60)
    result: list[Any] = json.loads(done.stdout.decode("utf-8"))
    assert len(result) == len(calls)
    return result


def utf16(text: str) -> str:
    """The string as JS sees it: adjacent high+low surrogate code points merged (for comparisons)."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def assert_usage_error(exc_info: pytest.ExceptionInfo[UsageError], code: str) -> None:
    assert exc_info.value.code == code
    assert isinstance(exc_info.value, TypeError)


NOT_SERIALIZABLE = "result content must be JSON-serializable or a string"
CIRCULAR = "Converting circular structure to JSON"

# --------------------------------------------------------------------------- #
# strategies
# --------------------------------------------------------------------------- #

SPECIAL_CHARS = [
    "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00",  # surrogate halves (pairs form by adjacency)
    "\x00", "\x01", "\x08", "\x09", "\x0a", "\x0b", "\x0c", "\x0d", "\x1c", "\x1f", "\x7f", "\x85",
    "\u2028", "\u2029", "\ufeff", "\u00a0", "\u200b", "\u180e", "\u3000",
    '"', "\\", "/", " ", "é", "€", "😀", "\U0010ffff", "0", "1",
]  # fmt: skip
chars = st.one_of(st.characters(exclude_categories=()), st.sampled_from(SPECIAL_CHARS))
surrogate_pairs = st.tuples(st.integers(0xD800, 0xDBFF), st.integers(0xDC00, 0xDFFF)).map(
    lambda pair: chr(pair[0]) + chr(pair[1])  # two code points that JS sees as one astral character
)
texts = st.lists(st.one_of(chars, chars, surrogate_pairs), max_size=10).map("".join)
FLOAT_EDGES = [
    0.0, -0.0, 1.0, -1.0, 0.1, 0.1 + 0.2, 1e21, 1e20, 999999999999999900000.0, 1e16, 1e15, 1e-6, 1e-7, 1.5e-7,
    5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 123e-20, 2.0**64, 2.0**53, 2.0**53 + 2,
    float("nan"), float("inf"), float("-inf"), 0.000001234, 1.234e-7, 123456789012345680000.0,
]  # fmt: skip
floats = st.one_of(
    st.floats(),
    st.sampled_from(FLOAT_EDGES),
    st.integers(-(2**70), 2**70).map(float),
    st.tuples(st.integers(-99999, 99999), st.integers(-330, 310)).map(lambda t: float(f"{t[0]}e{t[1]}")),
)
ints = st.integers(-(2**53), 2**53)
keys = st.one_of(
    texts,
    st.integers(-3, 40).map(str),
    st.integers(4294967290, 4294967299).map(str),
    st.sampled_from(["0", "00", "01", "-0", "-1", "1.5", "1e3", " 1", "4294967294", "4294967295", "\uff11", "\u0661"]),
).filter(lambda key: key != "$f")
scalars = st.one_of(st.none(), st.booleans(), ints, floats, texts)
trees = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=5), st.dictionaries(keys, children, max_size=5)),
    max_leaves=15,
)
BATCH = 40
batch_settings = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)

# --------------------------------------------------------------------------- #
# module surface
# --------------------------------------------------------------------------- #


def test_JS_1_the_ascii_whitespace_is_what_trim_strips_from_an_ascii_string() -> None:
    from tool_call_closure.ecma import ASCII_JS_WHITESPACE

    assert ASCII_JS_WHITESPACE == "\t\n\x0b\x0c\r "
    for code in range(128):
        text = chr(code)
        assert (not text.strip(ASCII_JS_WHITESPACE)) == is_blank(text), repr(text)


def test_public_surface() -> None:
    assert sorted(ecma_all) == [
        "ASCII_JS_WHITESPACE",
        "is_blank",
        "number_to_string",
        "python_text",
        "python_text_truncated",
        "to_js_string",
        "to_js_string_truncated",
        "truncate_utf8",
        "utf8_length",
    ]
    assert sorted(ecma_json_all) == ["error_text", "json_stringify", "plain_json_text"]


# --------------------------------------------------------------------------- #
# JS-1: trim
# --------------------------------------------------------------------------- #


def test_JS_1_trim_set_over_the_bmp() -> None:
    """JS-1: exactly the listed code points are whitespace, checked for every BMP code point."""
    wrong = [hex(cp) for cp in range(0x10000) if is_blank(chr(cp)) != (cp in JS_TRIM_SET)]
    assert wrong == []


def test_JS_1_trim_differs_from_python_strip() -> None:
    """JS-1: U+001C..U+001F, U+0085, U+200B, U+180E are not blank; U+FEFF is."""
    for text in ["\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u200b", "\u180e"]:
        assert not is_blank(text), repr(text)
    assert is_blank("\ufeff")
    assert is_blank("\ufeff \u3000\t")


def test_BEG_4_2_blank_examples() -> None:
    """BEG-4.2: rejected (blank) and accepted (non-blank) ids from the catalogue."""
    for text in ["", " ", "\t\n", "\v\f\r", "\u00a0", "\ufeff", "\u2028", "\u3000"]:
        assert is_blank(text), repr(text)
    for text in ["\u200b", "\u180e", "\x1c", "\x1f", "\x85", "a", " a ", "\u3000x\u3000", "\ud800"]:
        assert not is_blank(text), repr(text)


# --------------------------------------------------------------------------- #
# JS-2: byte length
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("abc", 3),  # BEG-4.3
        ("éa", 3),
        ("€a", 4),
        ("\ud800", 3),  # lone surrogate counts as U+FFFD
        ("\ud800a", 4),
        ("\ude00\ud83d", 6),  # reversed pair: two lone surrogates
        ("😀", 4),
        ("\ud83d\ude00", 4),  # a pair of surrogate code points is one astral character in UTF-16
        ("a\ud83d\ude00\ud83d", 8),
        ('{"a":1}', 7),  # NORM-8
        ("", 0),
        ("\U0010ffff", 4),
    ],
)
def test_JS_2_byte_length_examples(text: str, expected: int) -> None:
    assert utf8_length(text) == expected


# --------------------------------------------------------------------------- #
# NORM-7: truncation
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("abcde", 5, "abcde"),
        ("abcdef", 5, "ab..."),
        ("abcd", 3, "..."),
        ("abcdef", 4, "a..."),  # the catalogue's "/4" example (checked on the original: 'abcd'/4 is unchanged)
        ("abcd", 4, "abcd"),
        ("abcd", 2, "ab"),
        ("abcd", 1, "a"),
        ("€€€", 5, "..."),
        ("€€€", 6, "€..."),
        ("€€", 2, ""),
        ("éé", 1, ""),
        ("a😀😀", 7, "a..."),
        ("a😀😀", 8, "a😀..."),
        ("a\ud800b", 5, "a\ud800b"),  # untruncated: the raw lone surrogate is kept
        ("a\ud800bcdefgh", 7, "a\ufffd..."),  # truncated: it becomes U+FFFD
        ("a\ud800bc", 5, "a..."),
        ("a\ud83d\ude00", 5, "a\ud83d\ude00"),  # pair of code points = 4 bytes: fits, kept as is
        ("a\ud83d\ude00b", 5, "a..."),
        ("x\ud83d\ude00yzwv", 8, "x😀..."),  # cut after the (merged) astral character
    ],
)
def test_NORM_7_truncate_examples(text: str, limit: int, expected: str) -> None:
    assert truncate_utf8(text, limit) == expected


def test_NORM_7_untruncated_text_is_the_same_object() -> None:
    text = "héllo wörld"
    assert truncate_utf8(text, 100) is text


# --------------------------------------------------------------------------- #
# JS-5: number formatting
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
        (float("-inf"), "-Infinity"),
        (0.0, "0"),
        (-0.0, "0"),
        (1.0, "1"),
        (-1.0, "-1"),
        (12.5, "12.5"),
        (0.1 + 0.2, "0.30000000000000004"),
        (1e16, "10000000000000000"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (-1e21, "-1e+21"),
        (1.5e21, "1.5e+21"),
        (1e-5, "0.00001"),
        (1e-6, "0.000001"),
        (1.234e-6, "0.000001234"),
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (-1.5e-7, "-1.5e-7"),
        (123e-20, "1.23e-18"),
        (2.0**64, "18446744073709552000"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (float(9007199254740993), "9007199254740992"),
        (123456.789, "123456.789"),
        (1e15 + 0.5, "1000000000000000.5"),
    ],
)
def test_JS_5_number_formatting(value: float, expected: str) -> None:
    assert number_to_string(value) == expected


def test_JS_5_ints_are_exact_digits() -> None:
    """Python ints are exact (documented mapping), even beyond 2**53."""
    assert number_to_string(0) == "0"
    assert number_to_string(-42) == "-42"
    assert number_to_string(2**53 + 1) == "9007199254740993"
    assert number_to_string(2**64) == "18446744073709551616"


def test_JS_5_subclasses_read_through_the_base_class() -> None:
    class F(float):
        def __repr__(self) -> str:
            raise AssertionError("caller code ran")

    class I(int):  # noqa: E742
        def __repr__(self) -> str:
            raise AssertionError("caller code ran")

    assert number_to_string(F(1e21)) == "1e+21"
    assert number_to_string(I(7)) == "7"


def test_JS_5_int_too_long_is_not_serializable() -> None:
    huge = 10 ** (sys.get_int_max_str_digits() + 10) if sys.get_int_max_str_digits() else None
    if huge is None:
        pytest.skip("int_max_str_digits is disabled")
    with pytest.raises(UsageError, match=NOT_SERIALIZABLE) as info:
        number_to_string(huge)
    assert_usage_error(info, "content_not_serializable")


# --------------------------------------------------------------------------- #
# NORM-6 / JS-9: String(value)
# --------------------------------------------------------------------------- #


class Named:
    def __str__(self) -> str:
        return "custom"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("plain", "plain"),
        ("", ""),
        (12.5, "12.5"),
        (True, "true"),
        (False, "false"),
        (None, "null"),
        (ABSENT, "undefined"),
        ({"a": 1}, "[object Object]"),
        ({}, "[object Object]"),
        ([1, [2, 3], None, ABSENT], "1,2,3,,"),
        ((1, (2, "x"), None), "1,2,x,"),
        ([], ""),
        ([[]], ""),
        ([None], ""),
        ([True, 1.0, -0.0, {"k": 1}], "true,1,0,[object Object]"),
        (1e21, "1e+21"),
        (1e-7, "1e-7"),
        (0.1 + 0.2, "0.30000000000000004"),
        (2**64, "18446744073709551616"),
        (Named(), "custom"),
        ([Named(), 1], "custom,1"),
        (ValueError("bad thing"), "ValueError: bad thing"),
        (ValueError(), "ValueError"),
        (KeyError("k"), "KeyError: 'k'"),
        (frozenset(), "[object Object]"),  # no __str__ of its own: like a plain JS object
        ({1}, "[object Object]"),
    ],
)
def test_NORM_6_string_conversions(value: object, expected: str) -> None:
    assert to_js_string(value) == expected


def test_NORM_6_error_with_empty_name_gives_the_message() -> None:
    nameless = type("", (Exception,), {})
    assert to_js_string(nameless("only message")) == "only message"
    assert to_js_string(nameless()) == ""


def test_NORM_6_str_subclass_converts_to_its_plain_value() -> None:
    """D5: a str subclass is a string with its plain value everywhere; its overrides are not called."""

    class S(str):
        def __str__(self) -> str:
            return "converted"

    result = to_js_string(S("raw"))
    assert result == "raw"
    assert type(result) is str


def test_NORM_6_mappings() -> None:
    class Plain(Mapping[str, int]):
        def __getitem__(self, key: str) -> int:
            return 1

        def __iter__(self) -> Iterator[str]:
            return iter(["a"])

        def __len__(self) -> int:
            return 1

    class Shown(dict[str, int]):
        def __str__(self) -> str:
            return "shown"

    class Sub(dict[str, int]):
        pass

    assert to_js_string(Plain()) == "[object Object]"
    assert to_js_string(Sub(a=1)) == "[object Object]"
    assert to_js_string(Shown(a=1)) == "shown"


def test_JS_9_list_subclass_overrides_do_not_run() -> None:
    class L(list[int]):
        def __iter__(self) -> Iterator[int]:
            raise AssertionError("caller code ran")

        def __str__(self) -> str:
            raise AssertionError("caller code ran")

    assert to_js_string(L([1, 2])) == "1,2"
    assert to_js_string([L([3])]) == "3"


def test_JS_9_cycles_contribute_empty() -> None:
    """V8: an array already being joined contributes "" (node: String(a) with a=[1,a] is "1,")."""
    a: list[Any] = [1]
    a.append(a)
    assert to_js_string(a) == "1,"
    b: list[Any] = [1]
    c: list[Any] = [2, b]
    b.append(c)
    assert to_js_string(b) == "1,2,"
    shared = [2]
    assert to_js_string([shared, shared, [shared]]) == "2,2,2"  # repeated, not cyclic


def test_JS_9_reentrant_join_sees_the_outer_array() -> None:
    """V8's join stack is global: a toString that stringifies the outer array gets "" for it."""
    outer: list[Any] = [1]

    class Reenter:
        def __str__(self) -> str:
            return "x" + to_js_string(outer)

    outer.append(Reenter())
    assert to_js_string(outer) == "1,x"  # node: const c=[1]; c.push({toString(){return 'x'+String(c)}}) → "1,x"
    assert to_js_string(outer) == "1,x"  # the join stack was cleaned up


def test_JS_9_join_stack_cleaned_up_after_an_exception() -> None:
    class Boom:
        def __str__(self) -> str:
            raise RuntimeError("boom")

    items: list[Any] = [[1, Boom()]]
    with pytest.raises(RuntimeError, match="boom"):
        to_js_string(items)
    items[0][1] = 2
    assert to_js_string(items) == "1,2"


def test_JS_9_deep_nesting_without_recursion_error() -> None:
    """Iterative join: any depth works (V8 throws RangeError here; documented divergence)."""
    depth = 100_000
    value: list[Any] = [1]
    for _ in range(depth):
        value = [value, 2]
    assert to_js_string(value) == "1" + ",2" * depth
    nested: Any = ("leaf",)
    for _ in range(depth):
        nested = (nested,)
    assert to_js_string(nested) == "leaf"


def test_JS_9_huge_int_converts_to_all_its_digits() -> None:
    """An int longer than int_max_str_digits converts like a BigInt: all its digits (issue 10).

    (It used to be refused as "result content must be JSON-serializable", a message about content.)
    """
    digits = (sys.get_int_max_str_digits() or 4300) + 700
    huge = (10**digits - 1) // 9 * 7  # digits sevens (int("7" * digits) is refused too)
    assert to_js_string(huge) == "7" * digits
    assert to_js_string([-huge, 1]) == "-" + "7" * digits + ",1"
    assert to_js_string(10**digits) == "1" + "0" * digits


# --------------------------------------------------------------------------- #
# NORM-8 / JS-4: JSON.stringify of JSON-compatible values
# --------------------------------------------------------------------------- #


def test_NORM_8_key_order() -> None:
    """NORM-8: canonical array-index keys first, ascending; then the rest in insertion order."""
    value = {"b": 1, "a": 2, "1": 3, "0": 4, "-1": 5, "01": 6, "4294967294": 7, "4294967295": 8}
    assert json_stringify(value) == '{"0":4,"1":3,"4294967294":7,"b":1,"a":2,"-1":5,"01":6,"4294967295":8}'
    assert json_stringify({"10": 1, "9": 2, "x": 3, "2": 4}) == '{"2":4,"9":2,"10":1,"x":3}'
    assert json_stringify({"\uff11": 1, "1": 2}) == '{"1":2,"\uff11":1}'  # only ASCII digits are indices


def test_NORM_8_string_escaping() -> None:
    """NORM-8: raw non-ASCII, U+2028/2029 and DEL; short escapes; lowercase \\u00xx; lone surrogates escaped."""
    assert json_stringify("é€😀") == '"é€😀"'
    assert json_stringify("\u2028\u2029\x7f/") == '"\u2028\u2029\x7f/"'
    assert json_stringify("\x00\x01\x1f") == '"\\u0000\\u0001\\u001f"'
    assert json_stringify("\b\t\n\f\r\x0b") == '"\\b\\t\\n\\f\\r\\u000b"'
    assert json_stringify('a"b\\c') == '"a\\"b\\\\c"'
    assert json_stringify("\ud800") == '"\\ud800"'
    assert json_stringify("a\udfffb") == '"a\\udfffb"'
    assert json_stringify("\ude00\ud83d") == '"\\ude00\\ud83d"'  # reversed: two lone surrogates
    assert json_stringify("\ud83d\ude00") == '"😀"'  # a pair of code points is one character
    assert json_stringify(["\ud83d", "\ude00"]) == '["\\ud83d","\\ude00"]'  # no pairing across strings
    assert json_stringify({"\ud800": "\ud83d\ude00x"}) == '{"\\ud800":"😀x"}'
    assert utf8_length(json_stringify("\ud800")) == 8  # NORM-8: '"\ud800"' is 8 bytes


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (True, "true"),
        (False, "false"),
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
        (2.0**64, "18446744073709552000"),
        (float(9007199254740993), "9007199254740992"),
        (9007199254740993, "9007199254740993"),  # a Python int stays exact (documented mapping)
        ([1, None, 3], "[1,null,3]"),
        ([float("nan"), -0.0, 2.5], "[null,0,2.5]"),
        ({"a": [1, 2], "b": {}, "c": [], "d": {"e": None}}, '{"a":[1,2],"b":{},"c":[],"d":{"e":null}}'),
        ((1, (2, 3)), "[1,[2,3]]"),
        ("", '""'),
        ({"a": 1}, '{"a":1}'),
    ],
)
def test_NORM_8_json_output(value: object, expected: str) -> None:
    assert json_stringify(value) == expected


def test_NORM_8_repeated_references_are_not_cycles() -> None:
    shared = {"k": [1]}
    assert json_stringify([shared, shared, {"again": shared}]) == '[{"k":[1]},{"k":[1]},{"again":{"k":[1]}}]'


def test_JS_4_subclasses_are_read_without_caller_code() -> None:
    class S(str):
        def __str__(self) -> str:
            raise AssertionError("caller code ran")

        def __getitem__(self, index: Any) -> str:
            raise AssertionError("caller code ran")

    class I(int):  # noqa: E742
        def __repr__(self) -> str:
            raise AssertionError("caller code ran")

    class F(float):
        def __repr__(self) -> str:
            raise AssertionError("caller code ran")

    class L(list[Any]):
        def __iter__(self) -> Iterator[Any]:
            raise AssertionError("caller code ran")

    class T(tuple[Any, ...]):
        def __iter__(self) -> Iterator[Any]:
            raise AssertionError("caller code ran")

    value = {S("b"): S("v\n"), S("1"): I(5), "f": F(1e21), "l": L([1, L([2])]), "t": T((3,))}
    assert json_stringify(value) == '{"1":5,"b":"v\\n","f":1e+21,"l":[1,[2]],"t":[3]}'
    assert json_stringify(L([])) == "[]"


def test_JS_4_mappings_use_items() -> None:
    class M(Mapping[str, Any]):
        def __init__(self, data: dict[str, Any]) -> None:
            self.data = data

        def __getitem__(self, key: str) -> Any:
            return self.data[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self.data)

        def __len__(self) -> int:
            return len(self.data)

    class D(dict[str, Any]):
        def items(self) -> Any:
            return [("z", 1), ("5", 2)]

    assert json_stringify(M({"b": 1, "2": M({}), "a": [M({"x": None})]})) == '{"2":{},"b":1,"a":[{"x":null}]}'
    assert json_stringify(D(ignored=0)) == '{"5":2,"z":1}'
    assert json_stringify(D()) == '{"5":2,"z":1}'  # an empty dict subclass is still read through items()


# --------------------------------------------------------------------------- #
# the projection rule for other Python values
# --------------------------------------------------------------------------- #


@dataclasses.dataclass
class Point:
    x: int
    y: Any = None
    label: ClassVar[str] = "not a field"


@dataclasses.dataclass
class Hooked:
    x: int

    def __json__(self) -> str:
        return "hooked"


class Hook:
    def __init__(self, result: Any) -> None:
        self.result = result
        self.calls = 0

    def __json__(self) -> Any:
        self.calls += 1
        return self.result


class Model:
    """A pydantic-v2 look-alike (pydantic is not installed)."""

    def __init__(self) -> None:
        self.modes: list[str] = []

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        self.modes.append(mode)
        return {"when": datetime.date(2024, 5, 6), "n": 1}


class Color(enum.Enum):
    RED = "r"
    PAIR = (1, 2)
    MAP = {"k": 1}  # noqa: RUF012


class Level(enum.IntEnum):
    HIGH = 3


class Tag(enum.StrEnum):
    A = "a-tag"


def test_projection_dataclass() -> None:
    assert json_stringify(Point(1, [Point(2)])) == '{"x":1,"y":[{"x":2,"y":null}]}'


def test_projection_dataclass_class_is_refused() -> None:
    with pytest.raises(UsageError, match=NOT_SERIALIZABLE):
        json_stringify(Point)


def test_projection_json_hook() -> None:
    assert json_stringify(Hooked(1)) == '"hooked"'
    assert json_stringify(Hook({"a": 1})) == '{"a":1}'


def test_projection_json_hook_result_that_is_another_object_is_projected_in_turn() -> None:
    """Clause (b): a __json__ result that is a different object is projected again, its own __json__ included."""
    inner = Hook("inner")
    assert json_stringify(Hook(inner)) == '"inner"'
    assert inner.calls == 1
    assert json_stringify(Hook(Hooked(1))) == '"hooked"'


def test_projection_nested_json_hook_in_the_result_is_called() -> None:
    assert json_stringify(Hook([Hooked(1), {"k": Hooked(2)}])) == '["hooked",{"k":"hooked"}]'
    assert json_stringify(Hook(Hook(0).__json__())) == "0"


def test_projection_json_hook_returning_self() -> None:
    @dataclasses.dataclass
    class Same:
        x: int

        def __json__(self) -> Any:
            return self

    assert json_stringify(Same(4)) == '{"x":4}'


def test_projection_json_hook_is_looked_up_on_the_type() -> None:
    looked_up: list[str] = []

    class Dynamic:
        def __getattr__(self, name: str) -> Any:
            looked_up.append(name)
            return lambda *args, **kwargs: {"via": "getattr"}

    obj = Point(1)
    obj.__json__ = lambda: "instance attribute"  # type: ignore[attr-defined]
    assert json_stringify(obj) == '{"x":1,"y":null}'
    with pytest.raises(UsageError, match=NOT_SERIALIZABLE):
        json_stringify(Dynamic())
    assert "__json__" not in looked_up
    assert "model_dump" not in looked_up


def test_projection_json_hook_exception_propagates_unchanged() -> None:
    error = RuntimeError("tj")

    class Raises:
        def __json__(self) -> Any:
            raise error

    with pytest.raises(RuntimeError) as info:
        json_stringify({"a": Raises()})
    assert info.value is error


def test_projection_model_dump() -> None:
    model = Model()
    assert json_stringify([model]) == '[{"when":"2024-05-06","n":1}]'
    assert model.modes == ["json"]


def test_projection_datetime() -> None:
    value = [
        datetime.datetime(2024, 1, 2, 3, 4, 5),
        datetime.datetime(2024, 1, 2, 3, 4, 5, 600, tzinfo=datetime.UTC),
        datetime.date(2024, 1, 2),
        datetime.time(1, 2),
    ]
    expected = '["2024-01-02T03:04:05","2024-01-02T03:04:05.000600+00:00","2024-01-02","01:02:00"]'
    assert json_stringify(value) == expected


def test_projection_enum() -> None:
    assert json_stringify(Color.RED) == '"r"'
    assert json_stringify({"p": Color.PAIR, "m": Color.MAP}) == '{"p":[1,2],"m":{"k":1}}'
    assert json_stringify([Level.HIGH, Tag.A]) == '[3,"a-tag"]'  # int/str members are ints/strs


@pytest.mark.parametrize(
    "value",
    [
        {1, 2},
        frozenset(),
        b"bytes",
        bytearray(b"x"),
        Decimal("1.5"),
        complex(1, 2),
        object(),
        len,
        lambda: None,
        Point,
        ABSENT,
        {1: "int key"},
        {None: 1},
        {(1, 2): "tuple key"},
        {"ok": 1, 2.5: "float key"},
    ],
)
def test_projection_refuses_other_values(value: object) -> None:
    with pytest.raises(UsageError) as info:
        json_stringify(value)
    assert str(info.value) == NOT_SERIALIZABLE
    assert_usage_error(info, "content_not_serializable")


def test_projection_refusal_note_names_type_and_path() -> None:
    with pytest.raises(UsageError) as info:
        json_stringify({"a": [1, 2, {3}]})
    assert str(info.value) == NOT_SERIALIZABLE  # the message itself is never changed
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert 'content["a"][2]' in notes
    assert "set" in notes
    with pytest.raises(UsageError) as info:
        json_stringify([{"k": {7: 1}}])
    notes = " ".join(getattr(info.value, "__notes__", []))
    assert 'content[0]["k"]' in notes
    assert "int" in notes


def test_projection_huge_int_is_refused() -> None:
    if not sys.get_int_max_str_digits():
        pytest.skip("int_max_str_digits is disabled")
    huge = 10 ** (sys.get_int_max_str_digits() + 1)
    for value in (huge, [huge], {"a": huge}, [[1], huge]):
        with pytest.raises(UsageError) as info:
            json_stringify(value)
        assert_usage_error(info, "content_not_serializable")


# --------------------------------------------------------------------------- #
# cycles and depth
# --------------------------------------------------------------------------- #


def _cyclic_values() -> list[Any]:
    listed: list[Any] = [1]
    listed.append(listed)
    mapped: dict[str, Any] = {"a": {}}
    mapped["a"]["self"] = mapped
    point = Point(1)
    point.y = [point]

    class SelfHook:
        def __json__(self) -> Any:
            return [self]

    class SelfModel:
        def model_dump(self, *, mode: str) -> Any:
            return self

    return [listed, mapped, {"wrap": [mapped]}, point, SelfHook(), SelfModel(), Hook(None)]


@pytest.mark.parametrize("value", _cyclic_values())
def test_NORM_8_cycles(value: Any) -> None:
    if isinstance(value, Hook):
        value.result = {"back": value}  # a hook whose result leads back to the hooked object
    with pytest.raises(UsageError) as info:
        json_stringify(value)
    assert str(info.value).startswith(CIRCULAR)
    assert_usage_error(info, "content_circular")


def test_deep_nesting_is_serialized_iteratively() -> None:
    depth = 100_000
    listed: Any = 1
    mapped: Any = 1
    hooked: Any = 1
    for _ in range(depth):
        listed = [listed]
        mapped = {"a": mapped}
    for _ in range(1000):
        hooked = Hook([hooked])
    assert json_stringify(listed) == "[" * depth + "1" + "]" * depth
    assert json_stringify(mapped) == '{"a":' * depth + "1" + "}" * depth
    assert json_stringify(hooked) == "[" * 1000 + "1" + "]" * 1000


# --------------------------------------------------------------------------- #
# differential tests against Node
# --------------------------------------------------------------------------- #


@requires_node
def test_node_is_blank_over_the_bmp() -> None:
    """JS-1: s.trim() === '' for all 65536 one-code-unit strings (one Node run)."""
    (expected,) = node_eval([("blank_bmp", None)])
    actual = "".join("1" if is_blank(chr(cp)) else "0" for cp in range(0x10000))
    assert actual == expected


@requires_node
def test_node_fixed_edge_values() -> None:
    """Hand-picked edge values, one deterministic Node run."""
    tree = {"b": [1e21, 1e-7, -0.0, float("nan")], "1": "\ud800\ud83d\ude00\x7f", "0": [None, True, {}]}
    calls: list[tuple[str, Any]] = [("number", _float_text(x)) for x in FLOAT_EDGES]
    calls += [("json", x) for x in FLOAT_EDGES] + [("json", tree), ("string", tree["b"]), ("string", tree)]
    calls += [("bytes", c) for c in SPECIAL_CHARS] + [("json", c) for c in SPECIAL_CHARS]
    expected = node_eval(calls)
    actual: list[str | int] = [number_to_string(x) for x in FLOAT_EDGES]
    actual += [json_stringify(x) for x in FLOAT_EDGES]
    actual += [json_stringify(tree), to_js_string(tree["b"]), to_js_string(tree)]
    actual += [utf8_length(c) for c in SPECIAL_CHARS] + [json_stringify(c) for c in SPECIAL_CHARS]
    assert actual == expected


@requires_node
@batch_settings
@given(st.lists(trees, min_size=BATCH, max_size=BATCH))
def test_node_json_stringify(values: list[Any]) -> None:
    """NORM-8 / JS-4 / JS-5: byte-identical to JSON.stringify."""
    expected = node_eval([("json", v) for v in values])
    assert [json_stringify(v) for v in values] == expected


@requires_node
@batch_settings
@given(st.lists(trees, min_size=BATCH, max_size=BATCH))
def test_node_to_js_string(values: list[Any]) -> None:
    """NORM-6 / JS-9: String(v) for JSON-compatible values (compared in the UTF-16 view)."""
    expected = node_eval([("string", v) for v in values])
    assert [utf16(to_js_string(v)) for v in values] == expected


@requires_node
@batch_settings
@given(st.lists(st.one_of(floats, ints), min_size=BATCH, max_size=BATCH))
def test_node_number_to_string(values: list[float | int]) -> None:
    """JS-5: String(x)."""
    wire = [_float_text(v) if isinstance(v, float) else str(v) for v in values]
    expected = node_eval([("number", w) for w in wire])
    assert [number_to_string(v) for v in values] == expected


@requires_node
@batch_settings
@given(st.lists(texts, min_size=BATCH, max_size=BATCH))
def test_node_utf8_length(values: list[str]) -> None:
    """JS-2: Buffer.byteLength."""
    expected = node_eval([("bytes", v) for v in values])
    assert [utf8_length(v) for v in values] == expected


@requires_node
@batch_settings
@given(st.lists(st.tuples(texts, st.integers(1, 30)), min_size=BATCH, max_size=BATCH))
def test_node_truncate_utf8(values: list[tuple[str, int]]) -> None:
    """NORM-7 / JS-3: the Buffer-based algorithm (compared in the UTF-16 view)."""
    expected = node_eval([("trunc", [text, limit]) for text, limit in values])
    assert [utf16(truncate_utf8(text, limit)) for text, limit in values] == expected


@requires_node
@batch_settings
@given(st.lists(st.text(st.sampled_from([*sorted(map(chr, JS_TRIM_SET)), "\x1c", "\x85", "\u200b", "a"]), max_size=5),
                min_size=BATCH, max_size=BATCH))  # fmt: skip
def test_node_is_blank(values: list[str]) -> None:
    """JS-1: s.trim() === '' for multi-character strings."""
    expected = node_eval([("blank", v) for v in values])
    assert [is_blank(v) for v in values] == expected


class _FreshHook:
    """Each __json__ call returns new temporaries, nested two levels deep."""

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def __json__(self) -> object:
        return {"k": [self.depth], "inner": _FreshHook(self.depth - 1) if self.depth else None}


def test_NORM_8_temporaries_from_json_hooks_are_not_mistaken_for_cycles() -> None:
    """Temporaries returned by __json__ die while the walk continues; their ids must not look like a cycle."""
    one = '{"k":[2],"inner":{"k":[1],"inner":{"k":[0],"inner":null}}}'
    assert json_stringify([_FreshHook(2) for _ in range(300)]) == "[" + ",".join([one] * 300) + "]"


def test_JS_9_objects_without_their_own_str_convert_like_plain_js_objects() -> None:
    """String({}) is "[object Object]" for every object without a toString of its own (NORM-6)."""
    from dataclasses import dataclass

    from tool_call_closure import BatchHandle

    @dataclass
    class Point:
        x: int

    class Named:
        def __str__(self) -> str:
            return "named"

    assert to_js_string(BatchHandle(generation=1)) == "[object Object]"
    assert to_js_string(Point(1)) == "[object Object]"
    assert to_js_string(object()) == "[object Object]"
    assert to_js_string(Named()) == "named"
    assert to_js_string([Point(1), Named()]) == "[object Object],named"


class _Undefined:
    """A __json__ hook whose result is JavaScript's undefined (what a protocol hook without `then` gives)."""

    def __json__(self) -> object:
        return ABSENT


def test_NORM_8_undefined_members_are_omitted_and_undefined_elements_are_null() -> None:
    """JSON.stringify({k: undefined, j: 1}) is {"j":1}; [1, undefined] is [1,null]; at the top level there is
    no text, which the original reports as "result content must be JSON-serializable or a string"."""
    assert json_stringify({"a": ABSENT}) == "{}"
    assert json_stringify({"k": ABSENT, "j": 1, "m": _Undefined()}) == '{"j":1}'
    assert json_stringify({"j": 1, "k": _Undefined()}) == '{"j":1}'
    assert json_stringify({"j": [ABSENT], "k": {"x": _Undefined(), "y": 2}}) == '{"j":[null],"k":{"y":2}}'
    assert json_stringify([1, ABSENT, _Undefined()]) == "[1,null,null]"
    for top in (ABSENT, _Undefined()):
        with pytest.raises(UsageError) as info:
            json_stringify(top)
        assert info.value.code == "content_not_serializable"


def test_NORM_8_a_json_result_that_is_another_object_is_projected_in_turn() -> None:
    """The closure's value types define their JSON form with __json__; a hook returning one of them must
    give its camelCase form, not its Python fields."""
    from tool_call_closure import BatchHandle, Rejection

    class Returns:
        def __init__(self, value: object) -> None:
            self.value = value

        def __json__(self) -> object:
            return self.value

    rejection = Rejection("stale_generation", "a", 1, None)
    assert json_stringify(Returns(rejection)) == (
        '{"accepted":false,"reason":"stale_generation","callId":"a","generation":1,"observedStatus":null}'
    )
    assert json_stringify([Returns(Returns(BatchHandle(generation=2)))]) == '[{"generation":2}]'
