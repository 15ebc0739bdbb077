"""ECMAScript value semantics the original relies on, mapped to Python values.

Theory of operation
-------------------
The original is JavaScript, and six of its primitive operations leak into
observable results: ``String.prototype.trim`` (is an id blank?),
``Buffer.byteLength`` (is it too long?), its own ``truncateUtf8`` (cut a
message), ``Number::toString`` and ``String(value)`` (build a message), and
``JSON.stringify`` (store success content).  Python's nearest built-ins differ
in small, visible ways (catalogue JS-1 .. JS-5, JS-9), so this module ports
each one exactly, on Python values (``JSON.stringify`` lives in
:mod:`tool_call_closure.ecma_json`).  The port rests on these mapping rules:

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
  exceeded`` for arrays nested a few thousand levels deep.
  :func:`to_js_string`'s array join is iterative instead, with an explicit
  stack (as is ``JSON.stringify``'s walk), so any depth works and
  ``RecursionError`` cannot happen.
* **Budgets (deviation D18).**  A message is truncated to
  ``max_message_bytes``, so :func:`to_js_string_truncated` stops converting
  once ``max_bytes + 2`` characters are known (the exact argument is in its
  docstring): work and memory are proportional to the limit even for a
  shared structure that expands to gigabytes.
* **Speed.**  Ids and names are checked on every ``begin``, so ASCII text
  (``str.isascii`` is O(1)) and ``str.encode`` give byte counts, with the
  surrogate-aware path only after a ``UnicodeEncodeError``.
* **Cycles.**  V8 keeps one global stack of arrays being joined by
  ``String()`` and contributes ``""`` for an array already on it, even
  across a nested ``String()`` call made by a ``toString``; so do we (one
  stack per thread; an exception at any point of a join leaves no array
  registered on it).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from typing import Any, Final, cast

from tool_call_closure.absent import ABSENT
from tool_call_closure.errors import ToolCallClosureError, spec_error

__all__ = [
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


def python_text_truncated(value: object, max_bytes: int, *, if_empty: str = "") -> str:
    """``truncate_utf8(python_text(value) or if_empty, max_bytes)``, computing only the prefix truncation keeps.

    The same prefix rule as :func:`to_js_string_truncated` (deviation D18).  ``if_empty`` replaces an empty
    text *before* truncation (deviation D11 names an exception without text by its class): a text that is not
    empty but truncates to nothing (``"Ü"`` in 1 byte) stays nothing, as in the original.
    """
    wanted = max_bytes + 2
    text = value if type(value) is str else _caller_text(value, wanted)
    if text == "":
        text = if_empty
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
