"""When do two protocol responses agree? (``spec/protocol.md``, Agreement between implementations)

Theory of operation
-------------------
Responses agree when they are equal after parsing — object key order
included, because the original's key order is part of the spec — except for
error messages, which are compared as the spec's ``errors`` list says: the
reference's message is matched to the template it instantiates; an ``exact``
template's message must be equal, a ``prefix`` template's message must start
with the reference's text (its tail is engine-specific), and a
``ProtocolError``'s message is free text and not compared.

Most responses a runner reads are exactly the text the reference would
write, so :func:`same_text` checks that first, without parsing: one call of
the C JSON encoder per expected line and a string comparison.  Equal text
implies agreement — the encoder writes every parsed JSON value so that parsing
the text gives back an equal value, key order and number types included — so
only lines whose text differs are parsed and compared by the rules above
(a different spelling of the same value, such as ``1.0`` for ``1``, ``1e-7``
or an escaped character, still agrees).

:func:`difference` says the same as :func:`diff_responses` in a form a
program can compare: which response line differs (the request's own, or the
nested response of which request), what each side answered there as a class
(``accepted``, ``rejected:<reason>``, ``error:<kind>:<code>``, ``ok``), and
the first differing JSON path with list indices left out (``$.ok.calls[].state``).
The fuzzer's shrinker keeps a change only when the difference stays the same
in these terms, so a reduction never trades the divergence it found for
another one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tool_call_closure.machine.table import TABLE

__all__ = [
    "Difference",
    "answer_class",
    "diff_response",
    "diff_responses",
    "difference",
    "error_code",
    "expected_text",
    "first_difference",
    "same_text",
    "same_value",
]


def _template_pattern(message: str, prefix: bool) -> re.Pattern[str]:
    parts = re.split(r"\{[a-z_]+\}", message)
    body = "(.*)".join(re.escape(part) for part in parts)
    return re.compile(body if prefix else body + r"\Z", re.S)


_PATTERNS: Final = tuple(
    (spec.code, spec.kind, _template_pattern(spec.message, spec.match == "prefix"))
    for spec in sorted(TABLE.errors.values(), key=lambda e: -len(e.message))  # the most specific template first
)


def error_code(kind: str, message: str) -> str | None:
    """The spec error code whose template ``message`` instantiates (None if it matches none)."""
    for code, error_kind, pattern in _PATTERNS:
        if error_kind == kind and pattern.match(message):
            return code
    return None


def same_value(left: Any, right: Any) -> bool:
    """Structural equality of parsed JSON with object key order significant (1 and 1.0 are equal)."""
    if isinstance(left, dict) and isinstance(right, dict):
        return list(left) == list(right) and all(same_value(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same_value(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    return type(left) is type(right) and bool(left == right)


def _text_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False)``.

    Compact, non-ASCII raw, insertion order; NaN and Infinity raise ValueError (they are not JSON: an expected
    value holding one is not written, and the parsed comparison decides); parsed JSON holds no cycles to look
    for.  The C encoder is made once here (``json.dumps`` makes one per call), if this interpreter has it.
    """
    encoder = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False)
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None:
        return encoder.encode

    def not_json(value: object) -> object:
        raise TypeError(f"not JSON data: {type(value).__qualname__}")

    # (markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan)
    encode_c = make_encoder(None, not_json, json.encoder.encode_basestring, None, ":", ",", False, False, False)
    return lambda value: "".join(encode_c(value, 0))


_EXPECTED_TEXT: Final = _text_encoder()


def expected_text(expected: Sequence[dict[str, Any]]) -> list[str] | None:
    """The compact JSON text of each ``expected`` response line, or None when the text cannot decide.

    Response lines whose text equals these are :func:`same_text`.  None when an expected response holds NaN
    or Infinity, or an error that is not an object with a kind (such an error differs even from itself in
    :func:`diff_responses`): then only the parsed comparison decides.
    """
    texts = []
    try:
        for want in expected:
            if "error" in want and not (type(want["error"]) is dict and "kind" in want["error"]):
                return None
            texts.append(_EXPECTED_TEXT(want))
    except (ValueError, TypeError):  # NaN or Infinity, or not JSON data at all
        return None
    return texts


def same_text(expected: Sequence[dict[str, Any]], lines: Sequence[str]) -> bool:
    """Are ``lines`` (response lines as written, without ``\\n``) the text of the ``expected`` responses?

    True implies :func:`diff_responses` finds no difference: each line parses to a value equal to its expected
    response in every respect :func:`same_value` looks at.  False says nothing: compare the parsed lines.
    """
    texts = expected_text(expected)
    return texts is not None and texts == list(lines)


def first_difference(expected: Any, actual: Any, path: str = "$") -> tuple[str, Any, Any] | None:
    """Where two parsed JSON values first differ: (JSON path, expected value there, actual value there).

    Object members are compared in the expected order; a member missing on one side, or a key order that
    differs, is reported at the object.  Error messages are compared exactly here (the agreement rules of
    :func:`diff_response` are looser): the caller asks only after a disagreement, to say where it is.
    """
    pending: list[tuple[str, Any, Any]] = [(path, expected, actual)]
    while pending:
        where, left, right = pending.pop(0)
        if isinstance(left, dict) and isinstance(right, dict):
            if list(left) != list(right):
                return where, left, right
            pending[:0] = [
                (f"{where}.{key}" if key.isidentifier() else f"{where}[{key!r}]", left[key], right[key]) for key in left
            ]
        elif isinstance(left, list) and isinstance(right, list):
            if len(left) != len(right):
                return where, left, right
            pending[:0] = [(f"{where}[{index}]", a, b) for index, (a, b) in enumerate(zip(left, right, strict=True))]
        elif not same_value(left, right):
            return where, left, right
    return None


def _short(value: Any, limit: int = 400) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "…"


def _diff_error(expected: dict[str, Any], actual: Any) -> str | None:
    if not isinstance(actual, dict):
        return f"error is not an object: {_short(actual)}"
    if expected.get("kind") != actual.get("kind"):
        return f"error kind {actual.get('kind')!r}, expected {expected.get('kind')!r} ({expected.get('message')!r})"
    if expected["kind"] == "ProtocolError":
        return None
    message, got = expected.get("message"), actual.get("message")
    code = error_code(expected["kind"], message) if isinstance(message, str) else None
    spec = TABLE.errors.get(code) if code is not None else None
    if spec is not None and spec.match == "prefix":
        if not (isinstance(got, str) and isinstance(message, str) and got.startswith(message)):
            return f"error message {got!r} does not start with {message!r}"
    elif got != message:
        return f"error message {got!r}, expected {message!r}"
    return None


def diff_response(expected: dict[str, Any], actual: dict[str, Any]) -> str | None:
    """How ``actual`` differs from the reference's ``expected`` response, or None if they agree."""
    for key in ("id", "nested"):
        if not same_value(expected.get(key), actual.get(key)):
            return f"{key} {_short(actual.get(key))}, expected {_short(expected.get(key))}"
    if "error" in expected:
        if "error" not in actual:
            return f"answered {_short(actual)}, expected an error {_short(expected['error'])}"
        return _diff_error(expected["error"], actual["error"])
    if "error" in actual:
        return f"raised {_short(actual['error'])}, expected {_short({k: v for k, v in expected.items() if k != 'id'})}"
    expected_rest = {k: v for k, v in expected.items() if k not in ("id", "nested")}
    actual_rest = {k: v for k, v in actual.items() if k not in ("id", "nested")}
    if not same_value(expected_rest, actual_rest):
        return f"answered {_short(actual_rest)}, expected {_short(expected_rest)}"
    return None


def diff_responses(expected: Sequence[dict[str, Any]], actual: Sequence[dict[str, Any]]) -> str | None:
    """The first difference between the response lines of one request, or None."""
    for index, (want, got) in enumerate(zip(expected, actual, strict=False)):
        problem = diff_response(want, got)
        if problem is not None:
            where = "nested response" if "nested" in want else "response"
            return f"{where} {index + 1}: {problem}"
    if len(expected) != len(actual):
        return f"{len(actual)} response lines, expected {len(expected)}"
    return None


@dataclass(frozen=True, slots=True)
class Difference:
    """The first difference between the response lines of one request, in terms a program can compare."""

    line: str  # "response" (the request's own line) or "nested <id>" (the nested response to request <id>)
    expected: str  # what the reference answered on that line: see answer_class; "missing" when it has no line
    actual: str  # what the subject answered there, the same way
    path: str  # the first differing JSON path in the line, list indices left out ("$.ok.calls[].state")
    text: str  # the same difference as diff_responses words it

    @property
    def signature(self) -> tuple[str, str, str, str]:
        return self.line, self.expected, self.actual, self.path


def answer_class(line: dict[str, Any]) -> str:
    """What a response line answered, coarsely: ``error:<kind>[:<code>]``, ``rejected:<reason>``, ``accepted``,
    ``ok``; an error's code is the spec template its message instantiates (none for free text)."""
    error = line.get("error")
    if "error" in line:
        if not isinstance(error, dict):
            return "error:malformed"
        kind, message = str(error.get("kind")), error.get("message")
        code = error_code(kind, message) if isinstance(message, str) else None
        return f"error:{kind}" if code is None else f"error:{kind}:{code}"
    ok = line.get("ok")
    if isinstance(ok, dict) and ok.get("accepted") is False:
        return f"rejected:{ok.get('reason')}"
    if isinstance(ok, dict) and ok.get("accepted") is True:
        return "accepted"
    return "ok"


def _line_name(line: dict[str, Any]) -> str:
    return f"nested {json.dumps(line.get('id'))}" if "nested" in line else "response"


def _general(path: str) -> str:
    """A JSON path without its list indices: the same field of another element is the same place."""
    return re.sub(r"\[\d+\]", "[]", path)


def _where(want: dict[str, Any], got: dict[str, Any]) -> str:
    """The first JSON path at which two disagreeing response lines differ, as :func:`diff_response` sees it."""
    for key in ("id", "nested"):
        if not same_value(want.get(key), got.get(key)):
            return f"$.{key}"
    if ("error" in want) != ("error" in got):
        return "$"
    if "error" in want:
        left, right = want["error"], got["error"]
        if not isinstance(right, dict) or left.get("kind") != right.get("kind"):
            return "$.error.kind"
        return "$.error.message"
    rest = [{k: v for k, v in line.items() if k not in ("id", "nested")} for line in (want, got)]
    found = first_difference(rest[0], rest[1])
    return found[0] if found is not None else "$"


def difference(expected: Sequence[dict[str, Any]], actual: Sequence[dict[str, Any]]) -> Difference | None:
    """The first difference between the response lines of one request (:func:`diff_responses`), or None."""
    text = diff_responses(expected, actual)
    if text is None:
        return None
    for want, got in zip(expected, actual, strict=False):
        if diff_response(want, got) is not None:
            path = _general(_where(want, got))
            return Difference(_line_name(want), answer_class(want), answer_class(got), path, text)
    if len(expected) > len(actual):
        missing = expected[len(actual)]
        return Difference(_line_name(missing), answer_class(missing), "missing", "lines", text)
    extra = actual[len(expected)]
    return Difference(_line_name(extra), "missing", answer_class(extra), "lines", text)
