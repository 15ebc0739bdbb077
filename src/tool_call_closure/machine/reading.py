"""Reading caller values, and the conversions every normalization shares.

Theory of operation
-------------------
Reading caller values follows one rule, :func:`read_key`, the Python form of
a JavaScript property read:

* a ``Mapping`` is read by key (``m[key]``; a missing key is absent);
* any other *object* (not None, not a number, string, bytes, list, tuple or
  set, not callable) is read by attribute (``getattr``); this is what lets a
  dataclass or SDK object stand in for a mapping, and what the original does
  for any object;
* anything else reads as absent.

Reading may run caller code (``__getitem__``, properties, ``__getattr__``);
exceptions from it propagate unchanged.  The conversions here (a bounded
string, a safe integer, a settlement's content, a message) are the original's
rules for one value each; :mod:`.semantics` imports them, and the generated
machine reads them through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

from tool_call_closure.absent import ABSENT
from tool_call_closure.ecma import (
    is_blank,
    python_text_truncated,
    to_js_string_truncated,
    truncate_utf8,
    utf8_length,
)
from tool_call_closure.ecma_json import json_stringify
from tool_call_closure.errors import spec_error

__all__ = [
    "MAX_SAFE_INTEGER",
    "SETTLED_STATUSES",
    "absent",
    "bounded_string",
    "error_message_text",
    "is_object",
    "member",
    "message_text",
    "observed_status",
    "read_key",
    "safe_positive_int",
    "same_plain_string",
    "serialize_content",
]

MAX_SAFE_INTEGER: Final = 2**53 - 1
SETTLED_STATUSES: Final = frozenset({"success", "error", "cancelled"})
# Values that are never "objects" in the original's sense (typeof !== 'object', or an array).
_NOT_OBJECTS: Final = (str, bytes, bytearray, int, float, complex, list, tuple, set, frozenset, range, memoryview)


def is_object(value: object) -> bool:
    """True if ``value`` is an object in the original's sense: a mapping or a plain (non-callable) instance."""
    if type(value) is dict:
        return True
    if value is None or value is ABSENT:
        return False
    if issubclass(type(value), Mapping):
        return True
    return not issubclass(type(value), _NOT_OBJECTS) and not callable(value)


def read_key(value: object, key: str) -> Any:
    """Read property ``key`` of a caller value (see the module docstring); ``ABSENT`` if it has none."""
    if type(value) is dict:
        return value.get(key, ABSENT)
    if issubclass(type(value), Mapping):
        try:
            return cast(Mapping[str, Any], value)[key]
        except KeyError:
            return ABSENT
    if is_object(value):
        return getattr(value, key, ABSENT)
    return ABSENT


def safe_positive_int(value: object) -> int | None:
    """``value`` if it is an integer in 1..2**53-1 (bool excluded), else ``None``."""
    if type(value) is int:
        return value if 0 < value <= MAX_SAFE_INTEGER else None
    if issubclass(type(value), int) and not issubclass(type(value), bool):
        number = int.__index__(cast(int, value))
        return number if 0 < number <= MAX_SAFE_INTEGER else None
    return None


def bounded_string(value: object, limit: int, argument: str, index: int = -1) -> str:
    """The original's boundedString: a non-blank string within ``limit`` UTF-8 bytes, as an exact ``str``.

    ``argument`` names the value in error messages; with ``index`` >= 0 it is
    the field of ``calls[index]`` (the name is only built when an error is raised).
    """
    if type(value) is not str:
        if not issubclass(type(value), str):
            raise spec_error("string_empty", argument=_argument(argument, index))
        value = str.__str__(value)  # a str subclass: its plain value, no caller code
    if is_blank(value):
        raise spec_error("string_empty", argument=_argument(argument, index))
    if (len(value) if value.isascii() else utf8_length(value)) > limit:
        raise spec_error("string_too_long", argument=_argument(argument, index), limit=limit)
    return value


def _argument(argument: str, index: int) -> str:
    return argument if index < 0 else f"calls[{index}].{argument}"


def absent(value: object) -> bool:
    return value is None or value is ABSENT


def member(value: object, allowed: frozenset[str]) -> str | None:
    """``value`` as an exact str if it is one of ``allowed``, else ``None``."""
    if type(value) is str:
        return value if value in allowed else None
    if issubclass(type(value), str):
        plain = str.__str__(value)
        return plain if plain in allowed else None
    return None


def same_plain_string(left: object, right: object) -> bool:
    """Both are strings with the same plain value (compared without running a str subclass's __eq__)."""
    return issubclass(type(left), str) and issubclass(type(right), str) and str.__str__(left) == str.__str__(right)


def observed_status(status: object) -> str | None:
    """SET-3: the status a rejection reports before normalization."""
    if absent(status):
        return None
    return member(status, SETTLED_STATUSES) or "invalid"


def serialize_content(content: object, limit: int) -> str:
    """NORM-8: strings pass through unquoted; everything else becomes its JSON text; then the byte limit."""
    if type(content) is str:
        text = content
    elif issubclass(type(content), str):
        text = str.__str__(content)
    else:
        text = json_stringify(content, limit)  # the limit is a budget: stops at the first byte past it
    if (len(text) if text.isascii() else utf8_length(text)) > limit:
        raise spec_error("content_too_large", limit=limit)
    return text


def message_text(value: object, default: str, limit: int) -> str:
    """NORM-6: an absent message takes the default; anything else is converted as String() does; then truncated."""
    return truncate_utf8(default, limit) if absent(value) else to_js_string_truncated(value, limit)


def error_message_text(error: object, default: str, limit: int) -> str:
    """``fail``'s error: an exception gives its text, anything else converts as a message (deviation D3)."""
    if issubclass(type(error), BaseException):  # by type(), not a __class__ the error claims (spec §3)
        # Caller code; a str subclass it returns counts plain (D5).  Deviation D11: an exception without text
        # (TimeoutError()) is named by its class, never stored as "".  Whether the text is empty is decided
        # before truncation: a text that truncates to nothing ("Ü" in 1 byte) is stored as the original
        # stores it, "", and the class name is truncated like any text ("E" in 1 byte).
        return python_text_truncated(error, limit, if_empty=type(error).__name__)
    return message_text(error, default, limit)
