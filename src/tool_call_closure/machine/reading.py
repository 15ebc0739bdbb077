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
machine reads them through it.  A success's content made of parts (deviation D22:
``parts.content()`` validated each part) is checked and counted here, in
:func:`serialize_content`, the one place every success passes.

One value has a fast reader of its own: a close reason that is plain (none,
or an exact dict of known keys and exact str or None values: what nearly
every caller passes) is read by :func:`plain_close_reason` without a
:func:`read_key` per key; it gives the record the general reader
(``semantics.read_close_reason``) gives, and declines everything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, cast

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
from tool_call_closure.parts import ToolContent, is_recorded

if TYPE_CHECKING:
    from tool_call_closure.values import CloseReasonRecord, Limits

__all__ = [
    "CLOSE_STATUSES",
    "MAX_SAFE_INTEGER",
    "REASON_KEYS",
    "SETTLED_STATUSES",
    "SIDE_EFFECT_STATES",
    "absent",
    "bounded_string",
    "error_message_text",
    "is_object",
    "member",
    "message_text",
    "observed_status",
    "plain_close_reason",
    "read_key",
    "refuse_misread_pairing_id",
    "refuse_unknown_keys",
    "safe_positive_int",
    "same_plain_string",
    "serialize_content",
]

MAX_SAFE_INTEGER: Final = 2**53 - 1
SETTLED_STATUSES: Final = frozenset({"success", "error", "cancelled"})
CLOSE_STATUSES: Final = frozenset({"error", "cancelled"})
SIDE_EFFECT_STATES: Final = frozenset({"unknown", "not_started"})
REASON_KEYS: Final = frozenset({"status", "code", "message", "sideEffectState", "side_effect_state"})
_MAX_KEY_IN_MESSAGE: Final = 128  # UTF-8 bytes of an unknown key quoted in an error message
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


def serialize_content(content: object, limit: int) -> str | ToolContent:
    """NORM-8: strings pass through unquoted; everything else becomes its JSON text; then the byte limit.

    Deviation D22: a :class:`~tool_call_closure.parts.ToolContent` (built, and
    its parts validated, by ``content()``) is recorded as it is; its ``size``
    (the bytes ``spec/README.md`` "Content parts" counts) is what the limit bounds.
    """
    if type(content) is str:
        text = content
    elif issubclass(type(content), str):
        text = str.__str__(content)
    elif type(content) is ToolContent:
        if not is_recorded(content):
            raise spec_error(
                "content_part_invalid", argument="content", problem="is a ToolContent not built by content()"
            )
        if content.size > limit:
            raise spec_error("content_too_large", limit=limit)
        return content
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


def refuse_unknown_keys(value: object, known: frozenset[str], code: str) -> None:
    """Deviation D10: a mapping outcome or close reason with a key the spec does not define is refused.

    A typo (``{"stauts": …}``, ``{"side_effects": …}``) would otherwise be
    ignored and the defaults used in silence.  Only mappings have a key set to
    check; other objects are read by attribute and their other attributes are
    none of the closure's business.
    """
    if not issubclass(type(value), Mapping):
        return
    for key in cast(Mapping[Any, Any], value):  # a custom mapping's __iter__ is caller code (normalize phase)
        if not (issubclass(type(key), str) and str.__str__(key) in known):
            raise spec_error(code, key=to_js_string_truncated(key, _MAX_KEY_IN_MESSAGE))


def plain_close_reason(reason: object, limits: Limits, texts: Mapping[str, str]) -> CloseReasonRecord | None:
    """A close reason's record, read directly when ``reason`` is plain; ``None`` (nothing read) when it is not.

    Plain: no reason (``None``, ``ABSENT``), or an exact ``dict`` whose keys
    are exact ``str`` among :data:`REASON_KEYS` and whose values are exact
    ``str`` or ``None``.  The dict is read as a copy of its own, made before
    it is checked (a plain dict's copy runs no caller code), so a change made
    by another thread meanwhile reaches neither the check nor the reads.  For
    such a reason every rule of the general reader (``semantics.read_close_reason``)
    comes down to what is written here: a missing key or a ``None`` value is
    absent, :func:`member` of an exact str is a set lookup,
    :func:`same_plain_string` is ``==``, and :func:`message_text` converts an
    exact str by truncating it; the errors are checked in the same order.
    ``tests/test_close_reason.py`` compares the two on generated reasons.
    """
    if reason is None or reason is ABSENT:
        plain: dict[Any, Any] = {}  # deviation D1: None is the absent reason (Any: its items are checked below)
    elif type(reason) is dict:
        plain = dict(reason)
        for key, value in plain.items():
            if type(key) is not str or key not in REASON_KEYS or (type(value) is not str and value is not None):
                return None
    else:
        return None
    status = plain.get("status")
    if status is None:
        status = "cancelled"
    elif status not in CLOSE_STATUSES:
        raise spec_error("close_status_invalid")
    code = plain.get("code")
    code = status if code is None else bounded_string(code, limits.max_code_bytes, "reason.code")
    camel = plain.get("sideEffectState")
    snake = plain.get("side_effect_state")
    if camel is not None and snake is not None and camel != snake:
        raise spec_error("side_effect_state_conflict")
    state = snake if camel is None else camel
    if state is None:
        state = "unknown"
    elif state not in SIDE_EFFECT_STATES:
        raise spec_error("side_effect_state_invalid")
    message = plain.get("message")
    limit = limits.max_message_bytes
    if message is None:
        message = truncate_utf8(texts["close_error_message"] if status == "error" else texts["cancel_message"], limit)
    else:
        message = to_js_string_truncated(message, limit)
    return (status, code, message, state)


# --------------------------------------------------------------------------- begin: a provider item misread (D9)


def refuse_misread_pairing_id(call: object, call_id: str, index: int) -> None:
    """Deviation D9: an entry whose ``call_id`` differs from its ``id`` is a provider item begin would misread.

    An OpenAI Responses ``function_call`` item has ``id`` (``fc_…``) *and*
    ``call_id`` (``call_…``); its result must carry ``call_id``.  Announcing it
    under ``id`` would export results the provider refuses, so it is refused
    here, after the original's own checks of the entry.

    ``call_id`` is read only where reading it runs no caller code the original
    would not run: from a plain ``dict``, and from an object whose *class*
    declares a ``call_id`` field (an SDK model, a dataclass, an annotated
    class), found without touching the instance.  Any other entry is read
    exactly as the original reads it (``id``, then ``name``).
    """
    if type(call) is dict:
        pairing_id = call.get("call_id", ABSENT)
    elif _class_declares(type(call), "call_id"):
        pairing_id = read_key(call, "call_id")
    else:
        return
    if not absent(pairing_id) and not same_plain_string(pairing_id, call_id):
        raise spec_error("provider_item_ambiguous", index=index)


def _class_declares(cls: type, name: str) -> bool:
    """True if ``cls`` declares field ``name``: pydantic ``model_fields``, dataclass fields or class annotations."""
    for klass in cls.__mro__:
        own = vars(klass)
        for table in (own.get("__pydantic_fields__"), own.get("__dataclass_fields__"), own.get("__annotations__")):
            if isinstance(table, dict) and name in table:
                return True
    return False
