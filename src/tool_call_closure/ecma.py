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
  (CPython's ``int_max_str_digits``) is refused as JSON content (as
  ``JSON.stringify`` refuses a BigInt) but converts to all its digits in
  ``String()`` (as a BigInt does), computed in pieces.
  ``bool`` is never a number in ``String()`` or JSON (``true``/``false``);
  :func:`number_to_string` given a bool answers like ``Number(true)`` (``"1"``).
* **undefined/null.**  :data:`ABSENT` is ``undefined``; ``None`` is ``null``.
* **Subclasses never run caller code where JS would not.**  ``str``, ``int``,
  ``float``, ``list`` and ``tuple`` subclasses are read through the base
  class (``str.__str__``, ``int.__repr__``, ``list.copy``, ``tuple.__iter__``).
  Caller code runs only where JS runs it too: ``__str__`` (``toString``),
  ``__json__`` (``toJSON``), ``Mapping.items()``, dataclass field reads and
  ``model_dump`` (getters).  Exceptions from caller code propagate unchanged.
  Types are judged by ``type()`` (``issubclass(type(v), …)``), never by
  ``isinstance``, which would consult a ``__class__`` property (caller code)
  and believe the class it claims.
* **Caller code that breaks Python's protocols is read, not trusted.**  A
  ``__str__`` is called through the class (``type(v).__str__(v)``), so a
  non-str result reaches us instead of ``str()``'s bare ``TypeError``: it is
  converted in turn without consulting ``__str__`` again (deviation D19).  A
  mapping whose ``items()`` returns a non-iterable is not serializable.  An
  exception's Python text (``str(e)``, what ``fail`` stores) is read the same
  way; where it is the repr of an exact list, tuple, dict or int argument,
  :func:`_python_repr` writes it iteratively and only as far as needed.
* **Depth.**  V8 recurses, and throws ``RangeError: Maximum call stack size
  exceeded`` for arrays nested a few thousand levels deep.  Both recursive
  algorithms here (:func:`to_js_string`'s array join and
  :func:`json_stringify`) are iterative instead, with explicit stacks, so any
  depth works and ``RecursionError`` cannot happen (the fast path below is
  recursive C, so it is taken only for shallow values).  Only caller code that
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
* **Budgets (deviation D18).**  The closure never needs more of a text than
  its byte limit: content over ``max_result_bytes`` is refused, a message is
  truncated to ``max_message_bytes``.  So :func:`json_stringify` takes the
  limit as a budget and stops at the first piece of text past it, and
  :func:`to_js_string_truncated` stops converting once ``max_bytes + 2``
  characters are known (the exact argument is in its docstring).  Work and
  memory are then proportional to the limit even for a shared structure that
  expands to gigabytes.
* **Plain data takes json's C encoder.**  When a cheap pre-walk proves the
  value is plain data the C encoder writes exactly as ``JSON.stringify`` does
  (exact containers met once each, shallow, safe ints, floats whose repr is
  already ECMAScript's, keys that are not digit-led), :func:`json_stringify`
  uses it; everything else takes the general walk.  Both paths give the same
  text (tests compare them on generated values) and honour the budget.
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
  stack per thread; an exception at any point of a join leaves no array
  registered on it).
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
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, cast

from tool_call_closure.absent import ABSENT
from tool_call_closure.errors import ToolCallClosureError, spec_error

__all__ = [
    "ASCII_JS_WHITESPACE",
    "is_blank",
    "json_stringify",
    "number_to_string",
    "plain_json_text",
    "python_text",
    "python_text_truncated",
    "to_js_string",
    "to_js_string_truncated",
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

# Its ASCII part: for an ASCII string, ``text.strip(ASCII_JS_WHITESPACE)`` is empty exactly when it is blank.
ASCII_JS_WHITESPACE: Final = "".join(c for c in _JS_WHITESPACE if c.isascii())

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

# log10(2) rounded down: digits(n) >= (bit_length(n) - 1) * _LOG10_2_LOW + 1 for n >= 1.
_LOG10_2_LOW: Final = 0.30102


def _sequence_iter(value: list[Any] | tuple[Any, ...]) -> Iterator[Any]:
    """Iterate a list (a snapshot of it) or tuple through the base class: no overrides run."""
    if issubclass(type(value), list):
        return iter(list.copy(cast(list[Any], value)))
    return tuple.__iter__(cast(tuple[Any, ...], value))


def _decimal_digits(magnitude: int) -> str:
    """The decimal digits of ``magnitude`` >= 0, in pieces short enough for ``int.__repr__``.

    CPython refuses ``str()`` of an int longer than ``sys.get_int_max_str_digits()``; this
    splits the number in halves by a power of ten until each half converts (depth
    ``log2(digits / limit)``, so the recursion is shallow).
    """
    try:
        return _int_repr(magnitude)
    except ValueError:
        pass
    half = int((magnitude.bit_length() - 1) * _LOG10_2_LOW) // 2
    high, low = divmod(magnitude, 10**half)
    return _decimal_digits(high) + _decimal_digits(low).zfill(half)


def _int_text(value: int, at_least: int | None) -> str:
    """The exact decimal text of an int of any length (JS String() of a BigInt: all its digits).

    With ``at_least``, a prefix of at least that many characters may be returned instead, and
    only those leading digits are computed: ``value // 10**k`` has exactly the leading digits of
    ``value``.
    """
    value = int.__int__(value)  # an int subclass: its plain value, no caller code
    try:
        return _int_repr(value)
    except ValueError:  # beyond sys.get_int_max_str_digits(): converted in pieces
        pass
    sign = "-" if value < 0 else ""
    magnitude = -value if value < 0 else value
    if at_least is not None:
        known_digits = int((magnitude.bit_length() - 1) * _LOG10_2_LOW) + 1  # a lower bound
        drop = known_digits - max(at_least, 1)
        if drop > 0:
            magnitude //= 10**drop  # still has at least `at_least` digits (and one): its leading ones
    return sign + _decimal_digits(magnitude)


def _join(root: list[Any] | tuple[Any, ...], at_least: int | None) -> str:
    """``Array.prototype.join(',')`` as ``String(array)`` does it, iteratively.

    ``None``/``ABSENT`` elements give ``""``; an array already being joined (on this thread,
    including by an outer ``to_js_string`` whose ``__str__`` hook called us) gives ``""``.
    With ``at_least``, stops as soon as that many characters are written and returns them.

    The text is written to one flat list: a nested array's elements follow its parent's
    comma directly, so the output so far is always a prefix of the result.  Every array on
    the join stack is in ``frames``, so the ``finally`` clause unregisters exactly the
    arrays this call registered, whatever exception interrupts it (a frame is appended
    before its array is registered, and unregistered before it is removed).
    """
    active = _join_stack.active
    out: list[str] = []
    written = 0
    wanted = -1 if at_least is None else at_least
    # A frame: [iterator over the array's snapshot, "no element written yet", id of the array].
    frames: list[list[Any]] = []
    try:
        root_id = id(root)
        if root_id in active:
            return ""
        frames.append([_sequence_iter(root), True, root_id])
        active.add(root_id)
        while frames:
            frame = frames[-1]
            for element in frame[0]:
                if frame[1]:
                    frame[1] = False
                else:
                    out.append(",")
                    written += 1
                if element is None or element is ABSENT:
                    continue
                if type(element) is str:
                    piece = element
                elif issubclass(type(element), (list, tuple)):
                    element_id = id(element)
                    if element_id in active:
                        continue
                    frames.append([_sequence_iter(element), True, element_id])
                    active.add(element_id)
                    break
                else:
                    piece = _string_of(element, None if wanted < 0 else wanted - written)
                out.append(piece)
                written += len(piece)
                if 0 <= wanted <= written:
                    return "".join(out)
            else:
                active.discard(frame[2])
                frames.pop()
        return "".join(out)
    finally:
        for frame in frames:
            active.discard(frame[2])


def _plain_text(result: object) -> str:
    """A ``__str__`` result that is not a ``str``, converted without asking it for ``__str__`` again.

    JavaScript's ``String()`` converts a primitive returned by ``toString`` in turn; so do we
    (``None`` → ``"null"``, ``5`` → ``"5"``), and a str subclass counts with its plain value.
    A list or tuple is joined; any other object is ``"[object Object]"`` (its own ``__str__``
    is not consulted, so a ``__str__`` returning ``self`` cannot loop).
    """
    if issubclass(type(result), str):
        return str.__str__(result)
    if result is None or result is ABSENT or issubclass(type(result), (bool, int, float, list, tuple)):
        return _string_of(result, None)
    return "[object Object]"


# BaseException's own `args` descriptor (reading `value.args` could run a subclass's property).
_EXCEPTION_ARGS: Final[Any] = BaseException.__dict__["args"]

# Python's repr of a container being repr'd again inside itself (Py_ReprEnter).
_RECURSIVE_REPR: Final[dict[type, str]] = {list: "[...]", tuple: "(...)", dict: "{...}"}


def _python_repr(value: object, at_least: int | None) -> str:
    """``repr(value)`` as Python writes it, iteratively for exact lists, tuples and dicts.

    ``str()`` of a container is its ``repr()``, which Python computes recursively (so a deep
    one raises ``RecursionError``) and in full (so a shared one expands).  This writes the same
    text with an explicit stack, stopping once ``at_least`` characters are written; a
    container met again inside itself gives ``[...]``, ``(...)`` or ``{...}`` as in Python;
    ints of any length give all their digits.  Other values use their class's ``__repr__``
    (caller code; a non-str result is converted by :func:`_plain_text`).
    """
    out: list[str] = []
    written = 0
    wanted = -1 if at_least is None else at_least
    on_path: set[int] = set()
    # A frame: [iterator over the snapshot, "no element written yet", id, closer, is a dict].
    frames: list[list[Any]] = []
    cur: Any = value
    while True:
        cls = type(cur)
        if cls is list or cls is tuple or cls is dict:
            if id(cur) in on_path:
                piece = _RECURSIVE_REPR[cls]
            elif not cur:
                piece = "[]" if cls is list else "()" if cls is tuple else "{}"
            else:
                closer = "]" if cls is list else "}" if cls is dict else ",)" if len(cur) == 1 else ")"
                items = list.copy(cur) if cls is list else list(dict.items(cur)) if cls is dict else cur
                frames.append([iter(items), True, id(cur), closer, cls is dict])
                on_path.add(id(cur))
                piece = "[" if cls is list else "(" if cls is tuple else "{"
        elif cls is str:
            piece = str.__repr__(cur)
        elif cls is int:
            piece = _int_text(cur, None if wanted < 0 else max(wanted - written, 1))
        elif cls is float:
            piece = _float_repr(cur)
        elif cur is None or cls is bool:
            piece = "None" if cur is None else "True" if cur else "False"
        else:
            method: Any = cls.__repr__
            result = method(cur) if callable(method) else object.__repr__(cur)  # caller code
            piece = result if type(result) is str else _plain_text(result)
        out.append(piece)
        written += len(piece)
        if 0 <= wanted <= written:
            return "".join(out)
        # advance to the next element of the innermost container, closing finished ones
        while frames:
            frame = frames[-1]
            member: Any = next(frame[0], _END)
            if member is _END:
                on_path.discard(frame[2])
                frames.pop()
                out.append(frame[3])
                written += len(frame[3])
                continue
            separator = "" if frame[1] else ", "
            frame[1] = False
            if frame[4]:  # a dict member: its key's repr (keys are hashable, so never lists or dicts)
                key, cur = member
                separator += _python_repr(key, None) + ": "
            else:
                cur = member
            out.append(separator)
            written += len(separator)
            break
        else:
            return "".join(out)


_END: Final = object()


def _caller_text(value: object, at_least: int | None = None) -> str:
    """``str(value)``, without the bare ``TypeError`` Python raises when ``__str__`` returns a non-str.

    The class's ``__str__`` is called directly (caller code: its exceptions propagate
    unchanged) and a non-str result is converted by :func:`_plain_text`.  An exception
    that keeps ``BaseException.__str__`` is read the same way: its text is that of its only
    argument (or ``""`` without arguments); with several arguments, the repr of the argument
    tuple; a ``KeyError`` with one argument, that argument's repr.  The text of an exact list,
    tuple, dict or int — its repr — is written by :func:`_python_repr` (iterative, bounded by
    ``at_least``).
    """
    cls = type(value)
    if cls is list or cls is tuple or cls is dict or cls is int:
        return _python_repr(value, at_least)
    method: Any = cls.__str__  # (Any: a class may set it to a non-callable)
    if not callable(method):  # e.g. `__str__ = None`: no text of its own (str() would raise a bare TypeError)
        return ""
    if method is BaseException.__str__ or method is KeyError.__str__:
        args = _EXCEPTION_ARGS.__get__(value, cls)  # the stored arguments, not a property a subclass defines
        if not args:
            return ""
        if len(args) > 1:
            return _python_repr(args, at_least)
        if method is KeyError.__str__:
            return _python_repr(args[0], at_least)
        return _caller_text(args[0], at_least)
    result = method(value)
    return result if type(result) is str else _plain_text(result)


def _string_of(value: object, at_least: int | None) -> str:
    """``String(value)``, or (with ``at_least``) possibly a prefix of it of at least that length."""
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
    if issubclass(cls, float):
        return _float_to_string(_float_repr(value))
    if issubclass(cls, int):
        return _int_text(cast(int, value), at_least)
    if issubclass(cls, str):
        return str.__str__(value)  # a str subclass is a string with its plain value (D5): no caller code
    if issubclass(cls, (list, tuple)):
        return _join(cast(list[Any], value), at_least)
    if issubclass(cls, BaseException):
        name = str.__str__(cls.__name__)  # a metaclass could make the name a str subclass
        message = _caller_text(value, at_least)
        if not message:
            return name
        return f"{name}: {message}" if name else message
    if cls.__str__ is object.__str__ or not callable(cls.__str__):
        # No toString of its own (a mapping, a dataclass, a plain object): Object.prototype.toString.
        # (object.__str__ would fall back to __repr__, whose text is not JavaScript's and may hold an address.)
        return "[object Object]"
    return _caller_text(value, at_least)


def to_js_string(value: object) -> str:
    """JavaScript ``String(value)`` mapped to Python values (catalogue NORM-6, JS-9).

    ``ABSENT`` → ``"undefined"``, ``None`` → ``"null"``, ``True`` → ``"true"``, floats by
    :func:`number_to_string`, ints as all their digits (at any length, like a BigInt), lists and
    tuples comma-joined (``None``/``ABSENT`` elements empty, a cycle contributes ``""``),
    exceptions as ``Error.prototype.toString`` (``"Name: message"``), objects whose class defines
    ``__str__`` ``str(value)`` (caller code may run; a non-str result is converted in turn, see
    :func:`_plain_text`), and any other object — mappings, dataclasses, plain instances —
    ``"[object Object]"``.
    """
    return _string_of(value, None)


def python_text(value: object) -> str:
    """``str(value)`` as the closure reads an exception's text (``fail``'s error, deviation D3).

    Like ``str(value)``, except that a ``__str__`` returning a non-str gives that result
    converted as :func:`_plain_text` says, where Python would raise ``TypeError``.
    """
    if type(value) is str:
        return value
    return _caller_text(value)


def python_text_truncated(value: object, max_bytes: int) -> str:
    """``truncate_utf8(python_text(value), max_bytes)``, computing only the prefix truncation keeps.

    The same prefix rule as :func:`to_js_string_truncated` (deviation D18).
    """
    wanted = max_bytes + 2
    text = value if type(value) is str else _caller_text(value, wanted)
    if len(text) > wanted:
        text = text[:wanted]
    return truncate_utf8(text, max_bytes)


def to_js_string_truncated(value: object, max_bytes: int) -> str:
    """``truncate_utf8(to_js_string(value), max_bytes)``, in work bounded by ``max_bytes``.

    Truncation keeps at most ``max_bytes`` bytes of the text, so only a prefix of the
    conversion is computed: once ``max_bytes + 2`` characters are produced the text is
    certainly too long, and any prefix of at least that many characters truncates exactly
    like the whole text.  (Each character is at least one byte, so such a prefix has more
    than ``max_bytes`` bytes; the bytes of all its characters but the last are those of the
    whole text — the last may be half of a surrogate pair — and they cover the ``max_bytes + 1``
    bytes truncation reads.)  Caller code that would only contribute text past that point
    does not run (deviation D18).
    """
    wanted = max_bytes + 2
    text = value if type(value) is str else _string_of(value, wanted)
    if len(text) > wanted:
        text = text[:wanted]
    return truncate_utf8(text, max_bytes)


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
    items = value.items()  # caller code may run (its exceptions propagate unchanged)
    items_type = type(items)
    if not (hasattr(items_type, "__iter__") or hasattr(items_type, "__getitem__")):
        # Not an iterable at all: the mapping is broken, which makes it unserializable (list() would
        # raise a bare TypeError here).  Iterating an iterable runs caller code, whose exceptions pass.
        raise _refuse(f"{type(value).__qualname__}.items() returning {items_type.__qualname__}", stack)
    pairs = list(items)  # caller code may run
    for pair in pairs:
        if type(pair) is not tuple or len(pair) != 2:
            raise _refuse(f"{type(value).__qualname__}.items() yielding {type(pair).__qualname__}", stack)
    return pairs


def _too_large(max_bytes: int) -> ToolCallClosureError:
    return spec_error("content_too_large", limit=max_bytes)


def _text_bytes(text: str) -> int:
    """The UTF-8 length of JSON text built with raw surrogates, once they are fixed."""
    if text.isascii():
        return len(text)
    return len(_fix_surrogates(text).encode("utf-8"))


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
# tests/test_ecma.py compares both paths on generated values.

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
        make_encoder(None, unreachable, _encode_str, None, ":", ",", False, False, True),
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
    The same pieces as the C encoder (``_encode_str`` for every string, the
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
            parts.append(f"{_encode_str(key)}:{_encode_str(member)}")
        elif cls is bool:
            parts.append(f"{_encode_str(key)}:{'true' if member else 'false'}")
        elif member is None:
            parts.append(f"{_encode_str(key)}:null")
        elif cls is int and -_PLAIN_INT_BOUND < member < _PLAIN_INT_BOUND:
            parts.append(f"{_encode_str(key)}:{int.__repr__(member)}")
        elif cls is dict and depth > 0:
            size += len(key)
            inner = _object_text(member, budget - size + 1, depth - 1)  # its one char, counted above, is in it
            if inner is None:
                return None
            size += len(inner) - 1
            parts.append(f"{_encode_str(key)}:{inner}")
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


def json_stringify(value: object, max_bytes: int | None = None) -> str:
    """``JSON.stringify(value)`` for Python values (catalogue NORM-8, JS-4, JS-5).

    Byte-identical to Node for JSON-compatible values; other values follow the projection
    rule of the module docstring.  Raises ``content_not_serializable`` or ``content_circular``
    (a :class:`UsageError`); exceptions raised by caller code propagate unchanged.

    With ``max_bytes``, the byte limit is a budget: the walk raises ``content_too_large``
    (a :class:`LimitError`) as soon as the text written so far passes it, so time and memory
    are bounded by the limit, not by the size the value expands to (a list holding one shared
    list twice, 22 levels deep, is a few hundred bytes of input and 4 million leaves of output).
    Parts of the value past that point are not visited: their errors and their caller code are
    not reached (deviation D18).
    """
    budget = _UNLIMITED if max_bytes is None else max_bytes
    text = plain_json_text(value, budget)
    if text is not None:
        return text
    return _json_walk(value, budget, max_bytes)  # (plain data past the budget: the walk raises at the same point)


def plain_json_text(value: object, max_bytes: int) -> str | None:
    """``JSON.stringify(value)`` if ``value`` is plain data whose text is within ``max_bytes``; else ``None``.

    Plain data is what the C encoder writes exactly as ``JSON.stringify``
    does (see "the plain-data fast path" above): exact dicts, lists and
    tuples of str, bool, None, safe ints and plainly formatted floats.
    Deciding it reads nothing but those exact types, so no caller code runs
    whatever the answer; the check and the encoding are bounded by
    ``max_bytes`` (UTF-8 bytes).  ``None`` says only "not decided here":
    :func:`json_stringify` takes the general walk.
    """
    text = _object_text(value, max_bytes) if type(value) is dict else None
    if text is None:
        if _encode_plain is None or not _is_plain_json(value, max_bytes):
            return None
        text = "".join(_encode_plain(value, 0))
    if text.isascii():
        return text if len(text) <= max_bytes else None
    text = _fix_surrogates(text)
    return text if len(text.encode("utf-8")) <= max_bytes else None


_UNLIMITED: Final = sys.maxsize


def _json_walk(value: object, budget: int, max_bytes: int | None) -> str:
    """The general walk of :func:`json_stringify`: any value, the projection rule, the budget."""
    # The walk alternates two phases.  *Emit* writes the value `cur` (whose separator and key
    # are already written): scalars directly; a container is snapshotted and pushed as a frame;
    # a replaced value (__json__, model_dump, Enum) loops back to emit its replacement.
    # *Advance* writes the members of the top frame, scalars inline (the hot path: no caller
    # code can run there), and returns to emit for the first member that is not a plain scalar.
    # Every piece written is counted (its UTF-8 bytes once surrogates are fixed: a piece holds
    # whole string literals) and the walk stops at the first piece that takes the total past
    # `budget`.
    out: list[str] = []
    append = out.append
    encode = _encode_str
    stack: list[_Frame] = []
    push = stack.append
    on_path: set[int] = set()
    size = 0
    cur: Any = value
    sep = ""  # what precedes the next member of the top frame: "{" or "[" first, then ","
    skip_hook = False  # True while emitting a __json__ result in its owner's place
    member_sep = ""  # the separator before the object member whose value is being emitted
    while True:
        cls = type(cur)
        piece = ""
        # -- emit `cur` -----------------------------------------------------------
        if cls is str:
            piece = encode(cur)
        elif cls is int:
            piece = _int_digits(cur)
        elif cur is True:
            piece = "true"
        elif cur is False:
            piece = "false"
        elif cur is None:
            piece = "null"
        elif cls is dict:
            if not cur:
                piece = "{}"
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
                piece = "[]"
            else:
                oid = id(cur)
                if oid in on_path:
                    raise _circular(stack)
                items = cur.copy() if cls is list else cur
                on_path.add(oid)
                push((iter(items), items, "]", oid, cur))
                sep = "["
        elif cls is float:
            piece = _json_float(cur)
        # -- subclasses and the projection rule -------------------------------------
        elif cur is ABSENT:
            # JavaScript's undefined (only the protocol's hooks without a `then` produce it): JSON.stringify
            # omits an object member, writes null in an array, and has no text at the top level.
            owner = next((frame for frame in reversed(stack) if frame[2]), None)
            if owner is None:
                raise _refuse("undefined (ABSENT)", stack)
            if owner[2] == "]":
                piece = "null"
            else:
                size -= _text_bytes(out.pop())  # the member's key, written just before its value was resolved
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
        elif issubclass(cls, str):
            piece = encode(cur)  # the encoder reads the str value itself: no caller code
        elif issubclass(cls, int):
            piece = _int_digits(cur)
        elif issubclass(cls, float):
            piece = _json_float(cur)
        elif issubclass(cls, (list, tuple, Mapping)) or (
            hasattr(cls, "__dataclass_fields__") and not issubclass(cls, type)  # (is_dataclass would run isinstance)
        ):
            oid = id(cur)
            if oid in on_path:
                raise _circular(stack)
            if issubclass(cls, list):
                items, closer = list.copy(cur), "]"
            elif issubclass(cls, tuple):
                items, closer = tuple(tuple.__iter__(cur)), "]"
            elif issubclass(cls, Mapping):
                items, closer = _object_items(_mapping_pairs(cur, stack), stack), "}"  # caller code
            else:  # caller code: field reads
                items, closer = (
                    [(field.name, getattr(cur, field.name)) for field in dataclasses.fields(cast(Any, cls))],
                    "}",
                )
            if not items:
                piece = "[]" if closer == "]" else "{}"
            else:
                on_path.add(oid)
                push((iter(items), items, closer, oid, cur))
                sep = "{" if closer == "}" else "["
        elif issubclass(cls, (datetime.datetime, datetime.date, datetime.time)) and not callable(
            getattr(cls, "model_dump", None)
        ):
            text = cur.isoformat()
            if not issubclass(type(text), str):
                raise _refuse(f"{cls.__qualname__}.isoformat() returning {type(text).__qualname__}", stack)
            piece = encode(text)
        else:
            # Replacement clauses: model_dump (pydantic duck typing), then Enum members.  The
            # replaced object stays on the path (a marker frame) while its replacement is written.
            if callable(getattr(cls, "model_dump", None)):
                replacement = cur.model_dump(mode="json")  # caller code
            elif issubclass(cls, enum.Enum):
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
        if piece:
            size += len(piece) if piece.isascii() else _text_bytes(piece)
            if size > budget:
                raise _too_large(cast(int, max_bytes))
            append(piece)
        # -- advance: write members of the top frame until one needs emit ------------
        skip_hook = False
        try:
            while stack:
                frame = stack[-1]
                if frame[2] == "}":
                    for key, cur in frame[0]:
                        cls = type(cur)
                        if cls is str:
                            piece = sep + encode(key) + ":" + encode(cur)
                        elif cls is int:
                            piece = sep + encode(key) + ":" + _int_repr(cur)
                        elif cur is True:
                            piece = sep + encode(key) + ":true"
                        elif cur is False:
                            piece = sep + encode(key) + ":false"
                        elif cur is None:
                            piece = sep + encode(key) + ":null"
                        elif cls is float:
                            piece = sep + encode(key) + ":" + _json_float(cur)
                        else:
                            member_sep = sep  # restored if the value turns out to be undefined (ABSENT)
                            piece = sep + encode(key) + ":"
                            sep = ","
                            size += len(piece) if piece.isascii() else _text_bytes(piece)
                            if size > budget:
                                raise _too_large(cast(int, max_bytes))
                            append(piece)
                            break
                        sep = ","
                        size += len(piece) if piece.isascii() else _text_bytes(piece)
                        if size > budget:
                            raise _too_large(cast(int, max_bytes))
                        append(piece)
                    else:
                        stack.pop()
                        piece = "{}" if sep == "{" else "}"  # "{}" when every member was undefined
                        size += len(piece)
                        if size > budget:
                            raise _too_large(cast(int, max_bytes))
                        append(piece)
                        on_path.discard(frame[3])
                        continue
                else:
                    for cur in frame[0]:
                        cls = type(cur)
                        if cls is str:
                            piece = sep + encode(cur)
                        elif cls is int:
                            piece = sep + _int_repr(cur)
                        elif cur is True:
                            piece = sep + "true"
                        elif cur is False:
                            piece = sep + "false"
                        elif cur is None:
                            piece = sep + "null"
                        elif cls is float:
                            piece = sep + _json_float(cur)
                        else:
                            size += 1
                            if size > budget:
                                raise _too_large(cast(int, max_bytes))
                            append(sep)
                            sep = ","
                            break
                        sep = ","
                        size += len(piece) if piece.isascii() else _text_bytes(piece)
                        if size > budget:
                            raise _too_large(cast(int, max_bytes))
                        append(piece)
                    else:
                        stack.pop()
                        size += len(frame[2])
                        if size > budget:
                            raise _too_large(cast(int, max_bytes))
                        append(frame[2])  # "]", or "" for a marker frame
                        on_path.discard(frame[3])
                        continue
                break
            else:
                return _fix_surrogates("".join(out))
        except ToolCallClosureError:  # content_too_large (a LimitError is a ValueError too)
            raise
        except ValueError:  # otherwise only int.__repr__ raises here (int_max_str_digits): no caller code runs
            raise _int_too_long() from None
