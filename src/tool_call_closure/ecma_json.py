"""``JSON.stringify`` for Python values: the success content the closure stores (NORM-8, JS-4, JS-5).

Theory of operation
-------------------
The closure stores a success's content as the text ``JSON.stringify``
writes in the original.  :func:`json_stringify` writes it for Python values,
on the value mapping of :mod:`tool_call_closure.ecma` (strings through their
UTF-16 view, ``float`` as the JS double, :data:`ABSENT` as ``undefined``,
subclasses read through their base class, types judged by ``type()``).
Two paths give the same text: a fast one for plain data (json's C encoder,
or a one-pass writer for flat objects: :mod:`.ecma_plain`, compiled with the
machine when the compiled build is present) and a general walk for everything
else.  The general walk is iterative, with an explicit stack of frames
(object, array, and *marker* frames that keep a replaced object on the
path), so any depth works and ``RecursionError`` cannot happen; only caller
code that manufactures an endless chain of *fresh* objects is not
guaranteed to terminate (the original ends that case with a RangeError).

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
  limit as a budget and stops at the first piece of text past it.  Work and
  memory are then proportional to the limit even for a shared structure that
  expands to gigabytes.
* **Plain data takes json's C encoder.**  When a cheap pre-walk proves the
  value is plain data the C encoder writes exactly as ``JSON.stringify`` does
  (exact containers met once each, shallow, safe ints, floats whose repr is
  already ECMAScript's, keys that are not digit-led), :func:`json_stringify`
  uses it; everything else takes the general walk.  Both paths give the same
  text (tests compare them on generated values) and honour the budget.
* **Speed.**  Content is serialized on every success, so the common cases
  take fast paths: JSON strings go through
  :func:`json.encoder.encode_basestring` (C), whose output equals
  ``JSON.stringify``'s for every code point except surrogates (checked against
  Node for all of them), and surrogates are fixed in one pass over the
  finished text, only if it contains any; scalar members of a container are
  written inline, without a round trip through the general dispatch.
* **Cycles.**  JSON: an object met again on its own path raises
  ``content_circular`` (an object whose ``__json__``/``model_dump``/``value``
  leads back to itself counts, where V8 would overflow its stack); repeated
  non-cyclic references are fine.
* **Containers are snapshotted when entered** (a list's items, a mapping's
  items, a dataclass's field values), so caller code that mutates a container
  being serialized cannot make the walk fail or run forever.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json.encoder
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, cast

from tool_call_closure.absent import ABSENT
from tool_call_closure.ecma import (
    _int_digits,
    _int_repr,
    _int_too_long,
    _json_float,
)
from tool_call_closure.ecma_plain import encode_str as _encode_str
from tool_call_closure.ecma_plain import error_text, plain_json_text
from tool_call_closure.ecma_plain import fix_surrogates as _fix_surrogates
from tool_call_closure.errors import ToolCallClosureError, spec_error

__all__ = ["error_text", "json_stringify", "plain_json_text"]


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


_UNLIMITED: Final = sys.maxsize


def _json_walk(value: object, budget: int, max_bytes: int | None) -> str:
    """The general walk of :func:`json_stringify`: any value, the projection rule, the budget."""
    # The walk alternates two phases.  *Emit* writes one value whose separator and key are already
    # written: scalars directly; a container is snapshotted and pushed as a frame; a replaced value
    # (__json__, model_dump, Enum) comes back to be emitted in its owner's place.  *Advance* writes
    # the members of the top frame, scalars inline (the hot path: no caller code can run there), and
    # stops at the first member that is not a plain scalar, which is emitted next.
    walk = _Walk(budget, max_bytes)
    member: object = value
    skip_hook = False  # True while emitting a __json__ result in its owner's place
    while True:
        replaced = walk.emit(member, skip_hook)
        if replaced is not None:
            member, skip_hook = replaced
            continue
        skip_hook = False
        try:
            member = walk.advance()
        except ToolCallClosureError:  # content_too_large (a LimitError is a ValueError too)
            raise
        except ValueError:  # otherwise only int.__repr__ raises here (int_max_str_digits): no caller code runs
            raise _int_too_long() from None
        if member is _FINISHED:
            return _fix_surrogates("".join(walk.out))


_FINISHED: Final = object()  # advance: the stack is empty, the text complete
_CLOSED: Final = object()  # a frame's members are all written and the frame is closed


class _Walk:
    """One run of the general walk: the text so far, the explicit stack, the objects on the path, the budget.

    Every piece written is counted (its UTF-8 bytes once surrogates are fixed: a piece holds whole
    string literals) and the walk stops at the first piece that takes the total past ``budget``.
    """

    __slots__ = ("budget", "max_bytes", "member_sep", "on_path", "out", "sep", "size", "stack")

    def __init__(self, budget: int, max_bytes: int | None) -> None:
        self.budget = budget
        self.max_bytes = max_bytes
        self.out: list[str] = []
        self.stack: list[_Frame] = []
        self.on_path: set[int] = set()
        self.size = 0
        self.sep = ""  # what precedes the next member of the top frame: "{" or "[" first, then ","
        self.member_sep = ""  # the separator before the object member whose value is being emitted

    def write(self, piece: str) -> None:
        self.size += len(piece) if piece.isascii() else _text_bytes(piece)
        if self.size > self.budget:
            raise _too_large(cast(int, self.max_bytes))
        self.out.append(piece)

    # -- the path: containers and replaced objects being written ----------------------------

    def refuse_cycle(self, value: object) -> None:
        if id(value) in self.on_path:
            raise _circular(self.stack)

    def push(self, value: object, items: Sequence[Any], closer: str) -> None:
        """Enter a container (already checked by :meth:`refuse_cycle`) whose snapshot is ``items``."""
        self.on_path.add(id(value))
        self.stack.append((iter(items), items, closer, id(value), value))
        self.sep = "{" if closer == "}" else "["

    def push_marker(self, value: object) -> None:
        """Keep a replaced object on the path while its replacement is written (a marker frame)."""
        self.refuse_cycle(value)
        self.on_path.add(id(value))
        self.stack.append((iter(_NO_ITEMS), _NO_ITEMS, "", id(value), value))

    # -- emit ------------------------------------------------------------------------------

    def emit(self, value: Any, skip_hook: bool) -> tuple[Any, bool] | None:
        """Write ``value``, or answer what to write in its place (and whether that one's ``__json__`` is skipped)."""
        cls = type(value)
        if cls is str:
            self.write(_encode_str(value))
        elif cls is int:
            self.write(_int_digits(value))
        elif value is True:
            self.write("true")
        elif value is False:
            self.write("false")
        elif value is None:
            self.write("null")
        elif cls is dict:
            if not value:
                self.write("{}")
            else:
                self.refuse_cycle(value)
                for key in value:
                    if type(key) is not str or "0" <= key < ":":  # not a str, or digit-led
                        items: Sequence[Any] = _object_items(list(value.items()), self.stack)
                        break
                else:
                    items = list(value.items())
                self.push(value, items, "}")
        elif cls is list or cls is tuple:
            if not value:
                self.write("[]")
            else:
                self.refuse_cycle(value)
                self.push(value, value.copy() if cls is list else value, "]")
        elif cls is float:
            self.write(_json_float(value))
        else:
            return self.project(value, cls, skip_hook)
        return None

    def project(self, value: Any, cls: type, skip_hook: bool) -> tuple[Any, bool] | None:
        """Subclasses and the projection rule of the module docstring, first matching clause wins."""
        if value is ABSENT:
            self.write_undefined()
        elif not skip_hook and callable(getattr(cls, "__json__", None)):  # a non-function __json__ is ignored
            replacement = value.__json__()  # caller code
            if replacement is not value:
                self.push_marker(value)
            # A different object is projected in turn (its own __json__ included: for the closure's value
            # types __json__ *is* their property set); a __json__ returning its owner uses the other clauses.
            return replacement, replacement is value
        elif issubclass(cls, str):
            self.write(_encode_str(value))  # the encoder reads the str value itself: no caller code
        elif issubclass(cls, int):
            self.write(_int_digits(value))
        elif issubclass(cls, float):
            self.write(_json_float(value))
        elif issubclass(cls, (list, tuple, Mapping)) or (
            hasattr(cls, "__dataclass_fields__") and not issubclass(cls, type)  # (is_dataclass would run isinstance)
        ):
            self.refuse_cycle(value)
            items, closer = _container_snapshot(value, cls, self.stack)  # caller code for mappings, dataclasses
            if not items:
                self.write("[]" if closer == "]" else "{}")
            else:
                self.push(value, items, closer)
        elif issubclass(cls, (datetime.datetime, datetime.date, datetime.time)) and not callable(
            getattr(cls, "model_dump", None)
        ):
            text = value.isoformat()
            if not issubclass(type(text), str):
                raise _refuse(f"{cls.__qualname__}.isoformat() returning {type(text).__qualname__}", self.stack)
            self.write(_encode_str(text))
        else:
            # Replacement clauses: model_dump (pydantic duck typing), then Enum members.  The
            # replaced object stays on the path (a marker frame) while its replacement is written.
            if callable(getattr(cls, "model_dump", None)):
                replacement = value.model_dump(mode="json")  # caller code
            elif issubclass(cls, enum.Enum):
                replacement = value.value
            else:
                raise _refuse(f"unsupported type {cls.__module__}.{cls.__qualname__}", self.stack)
            self.push_marker(value)
            return replacement, False
        return None

    def write_undefined(self) -> None:
        """JavaScript's undefined (only the protocol's hooks without a `then` produce it).

        JSON.stringify omits an object member, writes null in an array, and has no text at the top level.
        """
        owner = next((frame for frame in reversed(self.stack) if frame[2]), None)
        if owner is None:
            raise _refuse("undefined (ABSENT)", self.stack)
        if owner[2] == "]":
            self.write("null")
        else:
            self.size -= _text_bytes(self.out.pop())  # the member's key, written just before its value was resolved
            self.sep = self.member_sep

    # -- advance ---------------------------------------------------------------------------

    def advance(self) -> object:
        """Write members of the top frames until one needs :meth:`emit`: answer it, or ``_FINISHED``."""
        while self.stack:
            frame = self.stack[-1]
            member = self.advance_object(frame) if frame[2] == "}" else self.advance_array(frame)
            if member is not _CLOSED:
                return member
        return _FINISHED

    def advance_object(self, frame: _Frame) -> object:
        encode = _encode_str
        for key, member in frame[0]:
            cls = type(member)
            sep = self.sep
            if cls is str:
                piece = sep + encode(key) + ":" + encode(member)
            elif cls is int:
                piece = sep + encode(key) + ":" + _int_repr(member)
            elif member is True:
                piece = sep + encode(key) + ":true"
            elif member is False:
                piece = sep + encode(key) + ":false"
            elif member is None:
                piece = sep + encode(key) + ":null"
            elif cls is float:
                piece = sep + encode(key) + ":" + _json_float(member)
            else:
                self.member_sep = sep  # restored if the value turns out to be undefined (ABSENT)
                self.sep = ","
                self.write(sep + encode(key) + ":")
                return member
            self.sep = ","
            self.write(piece)
        self.stack.pop()
        self.write("{}" if self.sep == "{" else "}")  # "{}" when every member was undefined
        self.on_path.discard(frame[3])
        return _CLOSED

    def advance_array(self, frame: _Frame) -> object:
        encode = _encode_str
        for member in frame[0]:
            cls = type(member)
            sep = self.sep
            if cls is str:
                piece = sep + encode(member)
            elif cls is int:
                piece = sep + _int_repr(member)
            elif member is True:
                piece = sep + "true"
            elif member is False:
                piece = sep + "false"
            elif member is None:
                piece = sep + "null"
            elif cls is float:
                piece = sep + _json_float(member)
            else:
                self.write(sep)
                self.sep = ","
                return member
            self.sep = ","
            self.write(piece)
        self.stack.pop()
        self.write(frame[2])  # "]", or "" for a marker frame
        self.on_path.discard(frame[3])
        return _CLOSED


def _container_snapshot(value: Any, cls: type, stack: list[_Frame]) -> tuple[Sequence[Any], str]:
    """The members of a list, tuple, mapping or dataclass instance, taken now, and the text that closes it."""
    if issubclass(cls, list):
        return list.copy(value), "]"
    if issubclass(cls, tuple):
        return tuple(tuple.__iter__(value)), "]"
    if issubclass(cls, Mapping):
        return _object_items(_mapping_pairs(value, stack), stack), "}"  # caller code
    # caller code: field reads
    return [(field.name, getattr(value, field.name)) for field in dataclasses.fields(cast(Any, cls))], "}"
