"""``JSON.stringify`` for plain data: the fast path of :mod:`tool_call_closure.ecma_json`, compiled with the machine.

Theory of operation
-------------------
Most content a closure stores is *plain data* (defined below): a flat
object of strings, booleans and small numbers, or objects of such objects.
For it, :func:`plain_json_text` writes ``JSON.stringify``'s text directly
(a one-pass writer for objects, json's C encoder for the rest) after one
cheap check that reads nothing but exact built-in types, so no caller code
runs; anything else answers ``None`` and :func:`~tool_call_closure.ecma_json.json_stringify`
takes the general walk.  :func:`error_text` writes the synthetic error every
export carries.  Both are on every ``succeed`` and every export.

This module defines no class, so the compiled build compiles it with the
machine (``tool_call_closure._compiled``): the machine's copies call the
compiled copy natively, and everything else imports this one.  The text is
the same either way (``tests/test_ecma_bounded.py`` compares both paths on
generated values, ``tests/test_compiled.py`` the compiled copy with this one).
"""

from __future__ import annotations

import json.encoder
import re
from collections.abc import Callable, Sequence
from typing import Any, Final, cast

from tool_call_closure.absent import ABSENT
from tool_call_closure.ecma import _SURROGATE, _float_repr, _utf16_view

__all__ = ["encode_str", "error_text", "fix_surrogates", "plain_json_text"]

# json's string encoder (C when available) gives exactly JSON.stringify's output for strings
# without surrogate code points (checked against Node for every other code point); surrogates
# pass through raw and are fixed once, on the finished text, by fix_surrogates.
encode_str: Final = json.encoder.encode_basestring


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def fix_surrogates(text: str) -> str:
    """Apply JSON.stringify's surrogate rule to text built with raw surrogates.

    Surrogates can only occur inside string literals, and every literal is delimited by
    ASCII quotes, so pairs are merged (UTF-16 view) and lone ones escaped on the whole text.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_escape_surrogate, _utf16_view(text))


# -- the plain-data fast path ------------------------------------------------------------
#
# json's C encoder writes a value exactly as JSON.stringify does when the value is *plain
# data*: exact dicts, lists and tuples, str, bool and None, ints with |n| < 2**53, and
# finite floats whose repr is already ECMAScript's text (no exponent, no trailing ".0" — so
# not -0.0 either), with keys that are exact str values not starting with a digit (so no
# array-index key that ECMAScript would move first).  Strings go through the same
# encode_basestring as the general walk, and surrogates are fixed on the finished text the
# same way.  _is_plain_json checks this with one cheap walk, which also refuses the fast path
# for any container met twice (shared or circular: expanding a shared structure is not
# bounded by its size) and for nesting deeper than _PLAIN_DEPTH (the C encoder recurses).
# tests/test_ecma_bounded.py compares both paths on generated values.

_PLAIN_DEPTH: Final = 64
_PLAIN_INT_BOUND: Final = 2**53


def _plain_encoder() -> Callable[[object, int], Sequence[str]] | None:
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None:  # an interpreter without the C accelerator: the general walk only
        return None

    def unreachable(value: object) -> object:  # _is_plain_json admits no value that needs it
        raise AssertionError(f"not plain JSON data: {type(value).__qualname__}")

    # (markers, default, encoder, indent, key_separator, item_separator, sort_keys, skipkeys, allow_nan):
    # no circular check (the pre-walk admits no container twice), compact separators, insertion order.
    return cast(
        Callable[[object, int], Sequence[str]],
        make_encoder(None, unreachable, encode_str, None, ":", ",", False, False, True),
    )


_encode_plain: Final = _plain_encoder()


def _is_plain_json(value: object, budget: int) -> bool:
    """Is ``value`` plain data the C encoder writes exactly as JSON.stringify does (see above)?

    Each container is checked in one loop over its members, scalars inline (the common
    content is one flat object).  A lower bound of the text's length is counted on the way;
    past ``budget`` the answer is False, and the general walk, which raises at the exact
    point, takes over — so the check itself is bounded by the budget too.
    """
    cls = type(value)
    if cls is not dict and cls is not list and cls is not tuple:
        return _is_plain_scalar(value)
    size = 0
    container: Any = value
    depth = 1
    nested: list[Any] = []  # the containers among the members of the one being checked
    seen: set[int] | None = None  # the containers met so far (made when the first nested one is)
    pending: list[tuple[Any, int]] = []  # (container, its depth) still to check
    while True:
        if type(container) is dict:
            size += 1 + 4 * len(container)  # braces; per member quotes, colon and a value of one char at least
            for key, member in container.items():
                if type(key) is not str or "0" <= key < ":":  # not a str, or digit-led
                    return False
                cls = type(member)
                if cls is str:
                    size += len(key) + len(member)
                elif cls is bool or member is None or (cls is int and -_PLAIN_INT_BOUND < member < _PLAIN_INT_BOUND):
                    size += len(key)
                elif cls is dict or cls is list or cls is tuple:
                    size += len(key)
                    nested.append(member)
                elif cls is float and _is_plain_scalar(member):
                    size += len(key)
                else:
                    return False
        else:
            size += 1 + 2 * len(container)  # brackets; per element a value of one char and a comma
            for member in container:
                cls = type(member)
                if cls is str:
                    size += len(member)
                elif cls is bool or member is None or (cls is int and -_PLAIN_INT_BOUND < member < _PLAIN_INT_BOUND):
                    pass
                elif cls is dict or cls is list or cls is tuple:
                    nested.append(member)
                elif not (cls is float and _is_plain_scalar(member)):
                    return False
        if size > budget:
            return False
        if nested:
            if depth >= _PLAIN_DEPTH:
                return False
            if seen is None:
                seen = {id(value)}
            for member in nested:
                if id(member) in seen:  # shared or circular
                    return False
                seen.add(id(member))
                pending.append((member, depth + 1))
            nested.clear()
        if not pending:
            return True
        container, depth = pending.pop()


_OBJECT_TEXT_DEPTH: Final = 3  # objects nested in the one written in one pass, at most


def _object_text(value: dict[Any, Any], budget: int, depth: int = _OBJECT_TEXT_DEPTH) -> str | None:
    """The text of an exact dict of plain keys and str, bool, None, safe-int or such dict members; else ``None``.

    The common content (a flat object, or objects of objects: a synthetic
    error is ``{"error": {…}}``) written here, members and all, in one pass:
    the C encoder's per-call and per-member cost is higher than this loop's.
    The same pieces as the C encoder (``encode_str`` for every string, the
    same literals); any other member — a list, a float, anything not plain,
    or a dict nested deeper than ``depth`` (so a circular dict ends here too)
    — answers ``None`` and the general plain path decides.  Bounded by
    ``budget``: a lower bound of the text's length is counted before each
    member is written, and a nested dict is given what is left of it.
    """
    size = 1 + 4 * len(value)  # braces; per member quotes, colon and a value of one char at least
    if size > budget:
        return None
    parts = []
    for key, member in value.items():
        if type(key) is not str or "0" <= key < ":":  # not a str, or digit-led (ECMAScript moves index keys)
            return None
        cls = type(member)
        if cls is str:
            size += len(key) + len(member)
            if size > budget:
                return None
            parts.append(f"{encode_str(key)}:{encode_str(member)}")
        elif cls is bool:
            parts.append(f"{encode_str(key)}:{'true' if member else 'false'}")
        elif member is None:
            parts.append(f"{encode_str(key)}:null")
        elif cls is int and -_PLAIN_INT_BOUND < member < _PLAIN_INT_BOUND:
            parts.append(f"{encode_str(key)}:{int.__repr__(member)}")
        elif cls is dict and depth > 0:
            size += len(key)
            inner = _object_text(member, budget - size + 1, depth - 1)  # its one char, counted above, is in it
            if inner is None:
                return None
            size += len(inner) - 1
            parts.append(f"{encode_str(key)}:{inner}")
        else:
            return None
    return "{" + ",".join(parts) + "}"


def _is_plain_scalar(value: object) -> bool:
    cls = type(value)
    if cls is str or cls is bool or value is None:
        return True
    if cls is int:
        return -_PLAIN_INT_BOUND < value < _PLAIN_INT_BOUND  # type: ignore[operator]
    if cls is float:
        r = _float_repr(cast(float, value))
        return "e" not in r and r[-2:] != ".0" and r[-1] <= "9"  # not exponent form, integral, inf or nan
    return False


def plain_json_text(value: object, max_bytes: int) -> str | None:
    """``JSON.stringify(value)`` if ``value`` is plain data whose text is within ``max_bytes``; else ``None``.

    Plain data is what the C encoder writes exactly as ``JSON.stringify``
    does (see "the plain-data fast path" above): exact dicts, lists and
    tuples of str, bool, None, safe ints and plainly formatted floats.
    Deciding it reads nothing but those exact types, so no caller code runs
    whatever the answer; the check and the encoding are bounded by
    ``max_bytes`` (UTF-8 bytes).  ``None`` says only "not decided here":
    :func:`.ecma_json.json_stringify` takes the general walk.
    """
    text = _object_text(value, max_bytes) if type(value) is dict else None
    if text is None:
        if _encode_plain is None or not _is_plain_json(value, max_bytes):
            return None
        text = "".join(_encode_plain(value, 0))
    if text.isascii():
        return text if len(text) <= max_bytes else None
    text = fix_surrogates(text)
    return text if len(text.encode("utf-8")) <= max_bytes else None


def error_text(code: object, message: object, side_effect_state: object = ABSENT) -> str | None:
    """``JSON.stringify({error: {code, message, side_effect_state?}})`` for str members (and a None state); else None.

    The text of every error and cancellation an export carries (``providers.result_text``), written
    directly: the pieces the general path writes (``encode_str``, surrogates fixed on the finished text).
    """
    if type(code) is not str or type(message) is not str:
        return None
    text = f'{{"error":{{"code":{encode_str(code)},"message":{encode_str(message)}'
    if side_effect_state is None:
        text += ',"side_effect_state":null'
    elif type(side_effect_state) is str:
        text += f',"side_effect_state":{encode_str(side_effect_state)}'
    elif side_effect_state is not ABSENT:
        return None
    return fix_surrogates(text + "}}")
