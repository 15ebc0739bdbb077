"""The protocol's lines (spec/protocol.md, Transport, Limits, Numbers): decoding a request line, and its depth.

Theory of operation
-------------------
Every JSON number is an IEEE-754 double, as in JavaScript.  A line is decoded
with json's C decoder, whose number hooks present a number whose double value
is integral and within ±2**53 as an ``int`` and every other number as a
``float`` -- a literal of any length included: one too large for a double is
±Infinity, as ``JSON.parse`` reads it (``int()`` would refuse more than 4,300
digits).  ``NaN`` and ``Infinity`` spelled out are not JSON.

A request line nests at most :data:`MAX_DEPTH` arrays and objects deep.
:func:`may_nest_deeper` rules most lines out by counting brackets, and
:func:`nesting_depth` measures the others without recursion, so the bound is
checked before anything recursive touches the value.
"""

from __future__ import annotations

import json
from typing import Any, Final

__all__ = ["MAX_DEPTH", "MAX_SAFE", "may_nest_deeper", "nesting_depth", "parse_request_line"]

MAX_SAFE: Final = 2**53
# The deepest nesting of arrays and objects a request line may have (spec/protocol.md, Limits): the request
# object itself is level 1.  Deep enough for every vector (hook chains about 25 requests deep), shallow enough
# that no implementation's recursion limit is reached while decoding, running and serializing it.
MAX_DEPTH: Final = 128


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# More digits than any integer within ±2**53 has: such a literal is a double at once (float() reads any number of
# digits in linear time; int() refuses more than sys.get_int_max_str_digits(), 4300 by default).
_MAX_SAFE_DIGITS: Final = len(str(MAX_SAFE)) + 1  # a sign, then the digits


def _parse_int(text: str) -> int | float:
    # Protocol numbers are doubles: integers beyond 2**53 become the float JavaScript would hold, and one too
    # large for a double is ±Infinity, as JSON.parse reads it (spec/protocol.md, Numbers).
    if len(text) > _MAX_SAFE_DIGITS:
        return float(text)
    number = int(text)
    return number if -MAX_SAFE <= number <= MAX_SAFE else float(text)


def _parse_float(text: str) -> int | float:
    number = float(text)
    if number.is_integer() and -MAX_SAFE <= number <= MAX_SAFE:
        return int(number)
    return number


# One decoder for every line: json.loads with these hooks would build an equal one per call.
_DECODER: Final = json.JSONDecoder(parse_int=_parse_int, parse_float=_parse_float, parse_constant=_reject_constant)


def parse_request_line(line: str) -> Any:
    """Decode one protocol line with the protocol's number rule; raises ValueError if it is not JSON."""
    if line.startswith("\ufeff"):  # json.loads refuses a byte order mark itself, before decoding: its message
        return json.loads(line, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_reject_constant)
    return _DECODER.decode(line)


def nesting_depth(value: Any, stop: int = MAX_DEPTH + 1) -> int:
    """How many arrays and objects deep ``value`` nests (a scalar is 0), counted without recursion;
    the count stops at ``stop``."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, level = pending.pop()
        if type(item) is dict:
            children: Any = item.values()
        elif type(item) is list:
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest >= stop:
            return deepest
        pending.extend((child, level + 1) for child in children)
    return deepest


def may_nest_deeper(line: str, limit: int = MAX_DEPTH) -> bool:
    """Can the JSON text ``line`` nest more than ``limit`` arrays and objects deep?

    Every array and object of the decoded value opens with its own ``[`` or ``{`` character in the text, so
    the depth is at most the number of those characters (brackets inside strings only make the bound looser).
    A line with at most ``limit`` of them cannot be too deep; only a line with more needs :func:`nesting_depth`.
    """
    return line.count("[") + line.count("{") > limit
