"""ECMAScript value semantics the original relies on, mapped to Python values.

Theory of operation
-------------------
The original is JavaScript, and six of its primitive operations leak into
observable results: ``String.prototype.trim`` (is an id blank?),
``Buffer.byteLength`` (is it too long?), its own ``truncateUtf8`` (cut a
message), ``Number::toString`` and ``String(value)`` (build a message), and
``JSON.stringify`` (store success content).  Python's nearest built-ins differ
in small, visible ways (catalogue JS-1 .. JS-5, JS-9), so this module ports
each one exactly, on Python values.  The port rests on these mapping rules:

* **Strings are read through their UTF-16 view.**  A JS string is a sequence
  of UTF-16 code units; a Python ``str`` is a sequence of code points.  We
  take the Python string whose code points, written as UTF-16 code units, give
  the JS string: a surrogate code point is one code unit, so two *adjacent*
  surrogate code points forming a high+low pair are one astral character,
  and any other surrogate code point is a *lone* surrogate.  Byte counts,
  truncation and JSON output all follow that view (JSON output therefore
  never contains a surrogate code point: pairs come out as the astral
  character, lone surrogates as lowercase ``\\udxxx`` escapes).
* **Numbers.**  ``float`` is the JS double: shortest round-trip digits
  (``float.__repr__`` gives the same digits as V8) laid out by the ECMAScript
  rules.  ``int`` is exact: its decimal digits, even beyond 2**53 (the
  protocol layer turns JSON integers too large for a double into floats, so
  JSON-fed values never get there).  An ``int`` too long for ``str()``
  (CPython's ``int_max_str_digits``) is refused as not serializable.
  ``bool`` is never a number in ``String()`` or JSON (``true``/``false``);
  :func:`number_to_string` given a bool answers like ``Number(true)`` (``"1"``).
* **undefined/null.**  :data:`ABSENT` is ``undefined``; ``None`` is ``null``.
* **Subclasses never run caller code where JS would not.**  ``str``, ``int``,
  ``float``, ``list`` and ``tuple`` subclasses are read through the base
  class (``str.__str__``, ``int.__repr__``, ``list.copy``, ``tuple.__iter__``).
  Caller code runs only where JS runs it too: ``__str__`` (``toString``),
  ``__json__`` (``toJSON``), ``Mapping.items()``, dataclass field reads and
  ``model_dump`` (getters).  Exceptions from caller code propagate unchanged.
* **Depth.**  V8 recurses, and throws ``RangeError: Maximum call stack size
  exceeded`` for arrays nested a few thousand levels deep.  Both recursive
  algorithms here (:func:`to_js_string`'s array join and
  :func:`json_stringify`) are iterative instead, with explicit stacks, so any
  depth works and ``RecursionError`` cannot happen.  Only caller code that
  manufactures an endless chain of *fresh* objects (e.g. a ``__json__`` that
  returns ``[NewObject()]`` every time) is not guaranteed to terminate; the
  original ends that case with the RangeError.
* **JSON projection.**  ``json_stringify`` is byte-identical to
  ``JSON.stringify`` for JSON-compatible values (``None``, ``bool``, ``int``,
  ``float``, ``str``, ``list``/``tuple``, mappings with ``str`` keys), with
  ECMAScript key order (array-index keys first, ascending).  Other values
  follow one documented projection, first matching clause wins: ``ABSENT`` is
  refused at any depth (JS would drop an ``undefined`` object member and write
  ``null`` for an ``undefined`` array element; the port refuses instead); a
  type defining ``__json__`` is replaced by ``value.__json__()``
  (the ``toJSON`` analog: like ``toJSON`` it is consulted before the value's
  own shape, and the result is not asked for ``__json__`` again at the same
  position); dataclass instances become objects of their fields;
  ``model_dump(mode="json")`` is used when the type has it; ``datetime``,
  ``date`` and ``time`` become ``isoformat()`` strings (Python's format, not
  JS ``toISOString``); ``Enum`` members become their ``value``; anything else
  (``set``, ``bytes``, ``Decimal``, ``object()``, non-``str`` keys …) raises
  ``content_not_serializable`` with a note naming the type and its path.
* **Speed.**  Ids and names are checked on every ``begin`` and content is
  serialized on every success, so the common cases take fast paths: ASCII
  text (``str.isascii`` is O(1)) and ``str.encode`` for byte counts, with the
  surrogate-aware path only after a ``UnicodeEncodeError``; JSON strings go
  through :func:`json.encoder.encode_basestring` (C), whose output equals
  ``JSON.stringify``'s for every code point except surrogates (checked against
  Node for all of them), and surrogates are fixed in one pass over the
  finished text, only if it contains any; scalar members of a container are
  written inline, without a round trip through the general dispatch.
* **Cycles.**  JSON: an object met again on its own path raises
  ``content_circular`` (an object whose ``__json__``/``model_dump``/``value``
  leads back to itself counts, where V8 would overflow its stack); repeated
  non-cyclic references are fine.  ``String()``: V8 keeps one global stack of
  arrays being joined and contributes ``""`` for an array already on it, even
  across a nested ``String()`` call made by a ``toString``; so do we (one
  stack per thread).
* **Containers are snapshotted when entered** (a list's items, a mapping's
  items, a dataclass's field values), so caller code that mutates a container
  being serialized cannot make the walk fail or run forever.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json.encoder
import re
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, cast

from tool_call_closure.absent import ABSENT
from tool_call_closure.errors import ToolCallClosureError, spec_error

__all__ = [
    "is_blank",
    "json_stringify",
    "number_to_string",
    "to_js_string",
    "truncate_utf8",
    "utf8_length",
]

# --------------------------------------------------------------------------- #
# trim, byte length, truncation
# --------------------------------------------------------------------------- #

# ECMAScript WhiteSpace + LineTerminator: exactly what String.prototype.trim strips (JS-1).
_JS_WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def is_blank(text: str) -> bool:
    """True iff JavaScript ``text.trim() === ''`` (catalogue JS-1, BEG-4.2)."""
    # str.strip(chars) returns the very object when nothing is stripped, and stops at the
    # first non-whitespace character from each end, so a typical id costs almost nothing.
    return not text.strip(_JS_WHITESPACE)


def _utf16_view(text: str) -> str:
    """``text`` with every adjacent high+low surrogate pair merged into its astral character."""
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _node_utf8(text: str) -> bytes:
    """The bytes of Node's ``Buffer.from(text)``: UTF-16 view, lone surrogates as U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", _utf16_view(text)).encode("utf-8")


def utf8_length(text: str) -> int:
    """Node's ``Buffer.byteLength(text)`` (catalogue JS-2, BEG-4.3).

    A lone surrogate counts 3 bytes (U+FFFD); an adjacent high+low pair counts 4.
    """
    if text.isascii():
        return len(text)
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        # surrogatepass writes each (lone) surrogate in 3 bytes, like U+FFFD.
        return len(_utf16_view(text).encode("utf-8", "surrogatepass"))


def truncate_utf8(text: str, max_bytes: int) -> str:
    """The original's ``truncateUtf8`` (catalogue NORM-7, JS-3).

    Returns ``text`` itself (lone surrogates kept raw) when its Node UTF-8 length is at most
    ``max_bytes``; otherwise cuts the Node UTF-8 bytes back to a character boundary so that
    the result plus ``'...'`` (only when ``max_bytes >= 3``) fits, lone surrogates becoming U+FFFD.
    """
    if text.isascii():
        if len(text) <= max_bytes:
            return text
        if max_bytes >= 3:
            return text[: max_bytes - 3] + "..."
        return text[:max_bytes]
    data = _node_utf8(text)
    if len(data) <= max_bytes:
        return text
    suffix = "..." if max_bytes >= 3 else ""
    end = max_bytes - len(suffix)
    while end > 0 and data[end] & 0xC0 == 0x80:
        end -= 1
    return data[:end].decode("utf-8") + suffix


# --------------------------------------------------------------------------- #
# numbers
# --------------------------------------------------------------------------- #

_float_repr: Final = float.__repr__
_int_repr: Final = int.__repr__


def _float_to_string(r: str) -> str:
    """ECMAScript Number::toString(10) from the Python repr ``r`` of a float (same digits)."""
    if "e" not in r:
        # Python's plain layout (1e-4 <= |x| < 1e16) lies inside JS's (1e-7 <= |x| < 1e21).
        if r[-2:] == ".0":
            r = r[:-2]
            return "0" if r == "-0" else r
        if r[-1] > "9":  # 'inf', '-inf', 'nan'
            return "NaN" if r == "nan" else ("Infinity" if r == "inf" else "-Infinity")
        return r
    mantissa, _, exponent = r.partition("e")
    sign = ""
    if mantissa[0] == "-":
        sign = "-"
        mantissa = mantissa[1:]
    digits = mantissa.replace(".", "")  # one leading digit, no trailing zeros
    k = len(digits)
    n = int(exponent) + 1  # value = 0.digits * 10**n
    # Python uses exponent form only for |x| >= 1e16 (n >= 17) and |x| < 1e-4 (n <= -4).  So
    # ECMAScript's "point inside the digits" layout (0 < n < k) cannot occur here: it would
    # need k > 17 significant digits, more than any double has.  Three layouts remain.
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    tail = ("e+" if e >= 0 else "e-") + str(abs(e))
    if k == 1:
        return sign + digits + tail
    return sign + digits[0] + "." + digits[1:] + tail


def _json_float(x: float) -> str:
    """A float inside JSON: Number::toString, but NaN and the infinities are ``null``."""
    r = _float_repr(x)
    if r[-1] > "9":  # 'inf', '-inf', 'nan'
        return "null"
    return _float_to_string(r)


def _int_too_long() -> ToolCallClosureError:
    exc = spec_error("content_not_serializable")
    exc.add_note("an int with more digits than int_max_str_digits allows cannot be converted")
    return exc


def _int_digits(value: int) -> str:
    try:
        return _int_repr(value)
    except ValueError:  # beyond sys.get_int_max_str_digits()
        raise _int_too_long() from None


def number_to_string(value: int | float) -> str:
    """ECMAScript ``Number::toString(10)`` for a float; the exact decimal digits for an int (JS-5).

    ``NaN`` → ``"NaN"``, ``inf`` → ``"Infinity"``, ``-0.0`` → ``"0"``, ``1e21`` → ``"1e+21"``,
    ``1e-7`` → ``"1e-7"``, ``1e16`` → ``"10000000000000000"``.  Subclasses are read through the
    base class.  An int too long to convert raises ``content_not_serializable``.
    """
    if issubclass(type(value), float):
        return _float_to_string(_float_repr(value))
    return _int_digits(cast(int, value))


# --------------------------------------------------------------------------- #
# String(value)
# --------------------------------------------------------------------------- #


class _JoinStack(threading.local):
    """V8's stack of arrays being joined (per thread here)."""

    def __init__(self) -> None:
        self.active: set[int] = set()


_join_stack: Final = _JoinStack()


def _sequence_iter(value: list[Any] | tuple[Any, ...]) -> Iterator[Any]:
    """Iterate a list (a snapshot of it) or tuple through the base class: no overrides run."""
    if issubclass(type(value), list):
        return iter(list.copy(cast(list[Any], value)))
    return tuple.__iter__(cast(tuple[Any, ...], value))


def _join(root: list[Any] | tuple[Any, ...]) -> str:
    """``Array.prototype.join(',')`` as ``String(array)`` does it, iteratively.

    ``None``/``ABSENT`` elements give ``""``; an array already being joined (on this thread,
    including by an outer ``to_js_string`` whose ``__str__`` hook called us) gives ``""``.
    """
    active = _join_stack.active
    root_id = id(root)
    if root_id in active:
        return ""
    active.add(root_id)
    frames: list[tuple[Iterator[Any], list[str], int]] = [(_sequence_iter(root), [], root_id)]
    try:
        while True:
            it, parts, frame_id = frames[-1]
            for element in it:
                if element is None or element is ABSENT:
                    parts.append("")
                elif type(element) is str:
                    parts.append(element)
                elif issubclass(type(element), (list, tuple)):
                    element_id = id(element)
                    if element_id in active:
                        parts.append("")
                        continue
                    active.add(element_id)
                    frames.append((_sequence_iter(element), [], element_id))
                    break
                else:
                    parts.append(to_js_string(element))
            else:
                frames.pop()
                active.discard(frame_id)
                joined = ",".join(parts)
                if not frames:
                    return joined
                frames[-1][1].append(joined)
    finally:
        for _, _, frame_id in frames:
            active.discard(frame_id)


def _caller_str(value: object) -> str:
    result = str(value)
    return result if type(result) is str else str.__str__(result)


def to_js_string(value: object) -> str:
    """JavaScript ``String(value)`` mapped to Python values (catalogue NORM-6, JS-9).

    ``ABSENT`` → ``"undefined"``, ``None`` → ``"null"``, ``True`` → ``"true"``, numbers by
    :func:`number_to_string`, lists and tuples comma-joined (``None``/``ABSENT`` elements empty,
    a cycle contributes ``""``), exceptions as ``Error.prototype.toString`` (``"Name: message"``),
    objects whose class defines ``__str__`` ``str(value)`` (caller code may run), and any other
    object — mappings, dataclasses, plain instances — ``"[object Object]"``.
    """
    cls = type(value)
    if cls is str:
        return value  # type: ignore[return-value]  # (mypy does not narrow on type() is)
    if value is ABSENT:
        return "undefined"
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if cls is dict:
        return "[object Object]"
    if issubclass(type(value), (int, float)):
        return number_to_string(cast(float, value))
    if issubclass(type(value), str):
        return str.__str__(value)  # a str subclass is a string with its plain value (D5): no caller code
    if issubclass(type(value), (list, tuple)):
        return _join(cast(list[Any], value))
    if isinstance(value, BaseException):
        name = str.__str__(cls.__name__)  # a metaclass could make the name a str subclass
        message = _caller_str(value)
        if not message:
            return name
        return f"{name}: {message}" if name else message
    if cls.__str__ is object.__str__:
        # No toString of its own (a mapping, a dataclass, a plain object): Object.prototype.toString.
        # (object.__str__ would fall back to __repr__, whose text is not JavaScript's and may hold an address.)
        return "[object Object]"
    return _caller_str(value)


# --------------------------------------------------------------------------- #
# JSON.stringify
# --------------------------------------------------------------------------- #

# json's string encoder (C when available) gives exactly JSON.stringify's output for strings
# without surrogate code points (checked against Node for every other code point); surrogates
# pass through raw and are fixed once, on the finished text, by _fix_surrogates.
_encode_str: Final = json.encoder.encode_basestring
_encode_ascii: Final = json.encoder.encode_basestring_ascii

# A frame of the serializer's explicit stack: (iterator over the container's snapshot,
# the snapshot, closing text, id of the object on the path, the object itself).  Holding the
# object keeps it alive while it is on the path: a temporary (say, a dict returned by
# __json__) that died there would free its id for reuse, and a new object with the same id
# would be mistaken for a cycle.  Object snapshots hold
# (key, value) pairs and close with "}"; arrays close with "]"; a *marker* frame (closing
# text "") keeps a hooked object on the path while its replacement is serialized.
_Frame = tuple[Iterator[Any], Sequence[Any], str, int, object]
_NO_ITEMS: Final[tuple[()]] = ()


def _escape_surrogate(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def _fix_surrogates(text: str) -> str:
    """Apply JSON.stringify's surrogate rule to text built with raw surrogates.

    Surrogates can only occur inside string literals, and every literal is delimited by
    ASCII quotes, so pairs are merged (UTF-16 view) and lone ones escaped on the whole text.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(_escape_surrogate, _utf16_view(text))


def _path(stack: list[_Frame]) -> str:
    """Where the value being serialized sits, e.g. ``content["a"][2]`` (for error notes)."""
    parts = ["content"]
    for it, items, closer, _, _ in stack:
        if not closer:
            continue
        index = len(items) - it.__length_hint__() - 1  # type: ignore[attr-defined]
        parts.append(f"[{_encode_ascii(items[index][0])}]" if closer == "}" else f"[{index}]")
    return "".join(parts)


def _refuse(what: str, stack: list[_Frame]) -> ToolCallClosureError:
    exc = spec_error("content_not_serializable")
    exc.add_note(f"{what} at {_path(stack)}")
    return exc


def _circular(stack: list[_Frame]) -> ToolCallClosureError:
    exc = spec_error("content_circular")
    exc.add_note(f"the value at {_path(stack)} contains itself")
    return exc


def _describe_key(key: object) -> str:
    if type(key) in (int, float, bool, type(None)):
        return f"key {key!r} (type {type(key).__name__})"
    return f"a key of type {type(key).__qualname__}"


def _is_array_index(key: str) -> bool:
    """Is ``key`` a canonical array index ("0", or digits without a leading 0, <= 2**32 - 2)?"""
    return (
        key.isascii()
        and key.isdigit()
        and len(key) <= 10
        and (key[0] != "0" or len(key) == 1)
        and int(key) <= 4294967294
    )


def _object_items(pairs: list[tuple[Any, Any]], stack: list[_Frame]) -> list[tuple[str, Any]]:
    """Validate keys (exact ``str`` values) and put them in OrdinaryOwnPropertyKeys order."""
    indexed: list[tuple[int, str, Any]] = []
    named: list[tuple[str, Any]] = []
    for key, item in pairs:
        if type(key) is not str:
            if not issubclass(type(key), str):
                raise _refuse(f"{_describe_key(key)} (object keys must be str)", stack)
            key = str.__str__(key)
        if "0" <= key[:1] <= "9" and _is_array_index(key):
            indexed.append((int(key), key, item))
        else:
            named.append((key, item))
    if not indexed:
        return named
    indexed.sort(key=lambda entry: entry[0])
    return [(key, item) for _, key, item in indexed] + named


def _mapping_pairs(value: Mapping[Any, Any], stack: list[_Frame]) -> list[tuple[Any, Any]]:
    pairs = list(value.items())  # caller code may run
    for pair in pairs:
        if type(pair) is not tuple or len(pair) != 2:
            raise _refuse(f"{type(value).__qualname__}.items() yielding {type(pair).__qualname__}", stack)
    return pairs


def json_stringify(value: object) -> str:
    """``JSON.stringify(value)`` for Python values (catalogue NORM-8, JS-4, JS-5).

    Byte-identical to Node for JSON-compatible values; other values follow the projection
    rule of the module docstring.  Raises ``content_not_serializable`` or ``content_circular``
    (a :class:`UsageError`); exceptions raised by caller code propagate unchanged.
    """
    # The walk alternates two phases.  *Emit* writes the value `cur` (whose separator and key
    # are already written): scalars directly; a container is snapshotted and pushed as a frame;
    # a replaced value (__json__, model_dump, Enum) loops back to emit its replacement.
    # *Advance* writes the members of the top frame, scalars inline (the hot path: no caller
    # code can run there), and returns to emit for the first member that is not a plain scalar.
    out: list[str] = []
    append = out.append
    encode = _encode_str
    stack: list[_Frame] = []
    push = stack.append
    on_path: set[int] = set()
    cur: Any = value
    sep = ""  # what precedes the next member of the top frame: "{" or "[" first, then ","
    skip_hook = False  # True while emitting a __json__ result in its owner's place
    member_sep = ""  # the separator before the object member whose value is being emitted
    while True:
        cls = type(cur)
        # -- emit `cur` -----------------------------------------------------------
        if cls is str:
            append(encode(cur))
        elif cls is int:
            append(_int_digits(cur))
        elif cur is True:
            append("true")
        elif cur is False:
            append("false")
        elif cur is None:
            append("null")
        elif cls is dict:
            if not cur:
                append("{}")
            else:
                oid = id(cur)
                if oid in on_path:
                    raise _circular(stack)
                for key in cur:
                    if type(key) is not str or "0" <= key < ":":  # not a str, or digit-led
                        items: Sequence[Any] = _object_items(list(cur.items()), stack)
                        break
                else:
                    items = list(cur.items())
                on_path.add(oid)
                push((iter(items), items, "}", oid, cur))
                sep = "{"
        elif cls is list or cls is tuple:
            if not cur:
                append("[]")
            else:
                oid = id(cur)
                if oid in on_path:
                    raise _circular(stack)
                items = cur.copy() if cls is list else cur
                on_path.add(oid)
                push((iter(items), items, "]", oid, cur))
                sep = "["
        elif cls is float:
            append(_json_float(cur))
        # -- subclasses and the projection rule -------------------------------------
        elif cur is ABSENT:
            # JavaScript's undefined (only the protocol's hooks without a `then` produce it): JSON.stringify
            # omits an object member, writes null in an array, and has no text at the top level.
            owner = next((frame for frame in reversed(stack) if frame[2]), None)
            if owner is None:
                raise _refuse("undefined (ABSENT)", stack)
            if owner[2] == "]":
                append("null")
            else:
                out.pop()  # the member's key, written just before its value was resolved
                sep = member_sep
        elif not skip_hook and callable(getattr(cls, "__json__", None)):  # a non-function __json__ is ignored
            replacement = cur.__json__()  # caller code
            if replacement is not cur:
                oid = id(cur)
                if oid in on_path:
                    raise _circular(stack)
                on_path.add(oid)
                push((iter(_NO_ITEMS), _NO_ITEMS, "", oid, cur))  # marker frame
            # A different object is projected in turn (its own __json__ included: for the closure's value
            # types __json__ *is* their property set); a __json__ returning its owner uses the other clauses.
            skip_hook = replacement is cur
            cur = replacement
            continue
        elif issubclass(type(cur), str):
            append(encode(cur))  # the encoder reads the str value itself: no caller code
        elif issubclass(type(cur), int):
            append(_int_digits(cur))
        elif issubclass(type(cur), float):
            append(_json_float(cur))
        elif issubclass(cls, (list, tuple, Mapping)) or (dataclasses.is_dataclass(cur) and not isinstance(cur, type)):
            oid = id(cur)
            if oid in on_path:
                raise _circular(stack)
            if issubclass(type(cur), list):
                items, closer = list.copy(cur), "]"
            elif issubclass(type(cur), tuple):
                items, closer = tuple(tuple.__iter__(cur)), "]"
            elif issubclass(type(cur), Mapping):
                items, closer = _object_items(_mapping_pairs(cur, stack), stack), "}"  # caller code
            else:  # caller code: field reads
                items, closer = [(field.name, getattr(cur, field.name)) for field in dataclasses.fields(cur)], "}"
            if not items:
                append("[]" if closer == "]" else "{}")
            else:
                on_path.add(oid)
                push((iter(items), items, closer, oid, cur))
                sep = "{" if closer == "}" else "["
        elif issubclass(type(cur), (datetime.datetime, datetime.date, datetime.time)) and not callable(
            getattr(cls, "model_dump", None)
        ):
            text = cur.isoformat()
            if not issubclass(type(text), str):
                raise _refuse(f"{cls.__qualname__}.isoformat() returning {type(text).__qualname__}", stack)
            append(encode(text))
        else:
            # Replacement clauses: model_dump (pydantic duck typing), then Enum members.  The
            # replaced object stays on the path (a marker frame) while its replacement is written.
            if callable(getattr(cls, "model_dump", None)):
                replacement = cur.model_dump(mode="json")  # caller code
            elif issubclass(type(cur), enum.Enum):
                replacement = cur.value
            else:
                raise _refuse(f"unsupported type {cls.__module__}.{cls.__qualname__}", stack)
            oid = id(cur)
            if oid in on_path:
                raise _circular(stack)
            on_path.add(oid)
            push((iter(_NO_ITEMS), _NO_ITEMS, "", oid, cur))  # marker frame
            cur = replacement
            skip_hook = False
            continue
        # -- advance: write members of the top frame until one needs emit ------------
        skip_hook = False
        try:
            while stack:
                frame = stack[-1]
                if frame[2] == "}":
                    for key, cur in frame[0]:
                        cls = type(cur)
                        if cls is str:
                            append(sep + encode(key) + ":" + encode(cur))
                        elif cls is int:
                            append(sep + encode(key) + ":" + _int_repr(cur))
                        elif cur is True:
                            append(sep + encode(key) + ":true")
                        elif cur is False:
                            append(sep + encode(key) + ":false")
                        elif cur is None:
                            append(sep + encode(key) + ":null")
                        elif cls is float:
                            append(sep + encode(key) + ":" + _json_float(cur))
                        else:
                            member_sep = sep  # restored if the value turns out to be undefined (ABSENT)
                            append(sep + encode(key) + ":")
                            sep = ","
                            break
                        sep = ","
                    else:
                        stack.pop()
                        append("{}" if sep == "{" else "}")  # "{}" when every member was undefined
                        on_path.discard(frame[3])
                        continue
                else:
                    for cur in frame[0]:
                        cls = type(cur)
                        if cls is str:
                            append(sep + encode(cur))
                        elif cls is int:
                            append(sep + _int_repr(cur))
                        elif cur is True:
                            append(sep + "true")
                        elif cur is False:
                            append(sep + "false")
                        elif cur is None:
                            append(sep + "null")
                        elif cls is float:
                            append(sep + _json_float(cur))
                        else:
                            append(sep)
                            sep = ","
                            break
                        sep = ","
                    else:
                        stack.pop()
                        append(frame[2])  # "]", or "" for a marker frame
                        on_path.discard(frame[3])
                        continue
                break
            else:
                return _fix_surrogates("".join(out))
        except ValueError:  # only int.__repr__ can raise here (int_max_str_digits): no caller code runs
            raise _int_too_long() from None
