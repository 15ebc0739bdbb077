"""Content parts: a tool result made of text, images, files and structured JSON (deviation D22).

Theory of operation
-------------------
A tool's result is usually one text (or a value stored as its JSON text).
:func:`content` builds the other kind: a :class:`ToolContent`, a sequence of
typed parts that ``succeed`` (and ``settle`` with ``{"status": "success",
"content": …}``) record as they are, and that each export renders in its
provider's native shape (``providers/parts_render.py``).

The inputs are frozen dataclasses, so a type checker catches a wrong part
at the call site (``TextInput(b"…")``, ``ImageInput(data="…")``)::

    content([
        "Chart of last week's sales:",                       # a str is a TextInput
        ImageInput(media_type="image/png", data=png_bytes),
        FileInput(name="report.pdf", media_type="application/pdf", url="https://example.com/r.pdf"),
        JsonInput({"total": 1234}, schema={"type": "object"}),
    ])

:func:`content` checks every part before anything is recorded, and refuses
a bad one with :class:`~tool_call_closure.UsageError` code
``content_part_invalid`` naming the part's index and field: a media type
outside :data:`IMAGE_MEDIA_TYPES` / :data:`FILE_MEDIA_TYPES`, bytes where
text is expected, base64 that does not decode, a URL that is not an
absolute ``http(s)`` URL, not exactly one of ``data`` / ``base64`` /
``url``, a JSON value that is not JSON (a non-str key, NaN, a cycle).

What is recorded is immutable: the parts are frozen values holding ``str``,
``bytes`` (base64 decoded once, here) and, for a JSON part, its JSON *text*
(``JsonPart.value`` parses it again), never a caller's mutable object.

The size of a result (``ToolContent.size``) is what ``max_result_bytes``
bounds (the spec's ``spec/README.md`` "Content parts"): the sum, over the
parts, of the UTF-8 bytes of each text, the decoded bytes of each inline
image or file, the UTF-8 bytes of each URL, and the UTF-8 bytes of each JSON
part's JSON text and of its schema's JSON text.  Media types, file names and
the framing of a provider's payload are not counted; they are bounded
instead: a result has at most :data:`MAX_PARTS` parts, none empty (an empty
text, image or file is refused, so each part counts at least one byte), a
file name at most 256 UTF-8 bytes and a media type one of a fixed list.

This module imports only the error root and the ECMAScript helpers: the
values (``Settlement.content``) and the machine (which validates and counts
a result against the limit in ``machine/reading.serialize_content``) name it.
"""

from __future__ import annotations

import base64 as _b64
import binascii
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias, TypeGuard, cast, final
from urllib.parse import urlsplit

from tool_call_closure.ecma import utf8_length
from tool_call_closure.errors import ToolCallClosureError, spec_error

__all__ = [
    "FILE_MEDIA_TYPES",
    "IMAGE_MEDIA_TYPES",
    "MAX_PARTS",
    "FileInput",
    "FilePart",
    "ImageInput",
    "ImagePart",
    "JsonInput",
    "JsonPart",
    "Part",
    "PartInput",
    "TextInput",
    "TextPart",
    "ToolContent",
    "content",
    "is_media",
    "is_recorded",
]

IMAGE_MEDIA_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image media types a part may have: the ones every provider with an image slot accepts."""
FILE_MEDIA_TYPES: Final = frozenset({"application/pdf", "text/plain", "text/csv", "text/markdown", "text/html"})
"""The document media types a file part may have (``text/*`` data must be UTF-8)."""
MAX_PARTS: Final = 1000
"""The most parts one result may have.  With every part counting at least one byte and a file name and a media
type bounded each, this bounds what a result holds beyond the bytes ``max_result_bytes`` counts."""
_CODE: Final = "content_part_invalid"
_MAX_NAME_BYTES: Final = 256
_MADE: Final = object()  # the mark of a ToolContent that content() built


# --------------------------------------------------------------------------- inputs (what callers write)


@final
@dataclass(frozen=True, slots=True)
class TextInput:
    """A text part."""

    text: str


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ImageInput:
    """An image: ``media_type`` and exactly one of ``data`` (bytes), ``base64`` (text) or ``url``."""

    media_type: str
    data: bytes | None = None
    base64: str | None = None
    url: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class FileInput:
    """A document (a PDF, a text file): ``name``, ``media_type`` and exactly one of ``data``, ``base64``, ``url``."""

    name: str
    media_type: str
    data: bytes | None = None
    base64: str | None = None
    url: str | None = None


@final
@dataclass(frozen=True, slots=True)
class JsonInput:
    """Structured content: a JSON value and, where known, its JSON schema."""

    value: object
    schema: Mapping[str, Any] | None = None


PartInput: TypeAlias = str | TextInput | ImageInput | FileInput | JsonInput
"""One entry of :func:`content`'s list: a str is a text part."""


# --------------------------------------------------------------------------- recorded parts (immutable values)


@final
@dataclass(frozen=True, slots=True)
class TextPart:
    """A recorded text part."""

    text: str
    kind: Literal["text"] = "text"

    def __json__(self) -> dict[str, Any]:
        return {"type": "text", "text": self.text}


@final
@dataclass(frozen=True, slots=True)
class ImagePart:
    """A recorded image: inline ``data`` (decoded bytes) or a ``url``."""

    media_type: str
    data: bytes | None
    url: str | None
    kind: Literal["image"] = "image"

    def __json__(self) -> dict[str, Any]:
        return _media_json("image", self.media_type, self.data, self.url)


@final
@dataclass(frozen=True, slots=True)
class FilePart:
    """A recorded document: ``name``, ``media_type``, inline ``data`` or a ``url``."""

    name: str
    media_type: str
    data: bytes | None
    url: str | None
    kind: Literal["file"] = "file"

    def __json__(self) -> dict[str, Any]:
        media = _media_json("file", self.media_type, self.data, self.url)
        return {"type": "file", "name": self.name, **media}

    def text(self) -> str | None:
        """The document's text, for an inline ``text/*`` file (checked to be UTF-8 when recorded)."""
        if self.data is None or not self.media_type.startswith("text/"):
            return None
        return self.data.decode("utf-8")


@final
@dataclass(frozen=True, slots=True)
class JsonPart:
    """A recorded JSON part: the value's JSON text and, where given, the schema's JSON text."""

    json: str
    schema_json: str | None = None
    kind: Literal["json"] = "json"

    @property
    def value(self) -> Any:
        """A fresh copy of the value (parsed from the recorded text)."""
        return json.loads(self.json)

    @property
    def schema(self) -> Any:
        return None if self.schema_json is None else json.loads(self.schema_json)

    def __json__(self) -> dict[str, Any]:
        result: dict[str, Any] = {"type": "json", "value": self.value}
        if self.schema_json is not None:
            result["schema"] = self.schema
        return result


Part: TypeAlias = TextPart | ImagePart | FilePart | JsonPart
"""A recorded part."""


def _media_json(kind: str, media_type: str, data: bytes | None, url: str | None) -> dict[str, Any]:
    if data is not None:
        return {"type": kind, "mediaType": media_type, "base64": _b64.b64encode(data).decode("ascii")}
    return {"type": kind, "mediaType": media_type, "url": url}


@final
@dataclass(frozen=True, slots=True)
class ToolContent:
    """A tool result made of parts, built by :func:`content`; ``size`` is what ``max_result_bytes`` bounds.

    Only a value :func:`content` built is a result (:func:`is_recorded`): one
    built otherwise (its ``__init__``, ``dataclasses.replace``) was not checked.
    """

    parts: tuple[Part, ...]
    size: int = field(init=False)
    _made: object = field(init=False, default=None, repr=False, compare=False)

    def __json__(self) -> dict[str, Any]:
        """The canonical form: ``{"$parts": [...]}`` (media as base64 or their URL), the protocol's tag."""
        return {"$parts": [part.__json__() for part in self.parts]}

    def __copy__(self) -> ToolContent:
        return self  # immutable: a copy is the value itself (and stays a recorded result)

    def __deepcopy__(self, memo: object) -> ToolContent:
        return self

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _unpickled, (self.parts,)  # checked again when loaded

    @property
    def has_media(self) -> bool:
        """True if a part is media (:func:`is_media`): what a text-only tool result cannot carry."""
        return any(is_media(part) for part in self.parts)


def is_media(part: Part) -> TypeGuard[ImagePart | FilePart]:
    """True for an image, or a file whose text is not inline (not ``text/*``, or given by URL).

    The one definition of what a text-only tool result (OpenAI Chat, Mistral)
    cannot carry: such an export writes a note for the part and
    ``next_messages(…, media_from=)`` carries it in a user message
    (``providers/parts_render.py``); with ``text_only_tool_results`` the
    closure records a ``media_moved`` diagnostic for it (deviation D26).
    """
    return isinstance(part, ImagePart) or (isinstance(part, FilePart) and part.text() is None)


# --------------------------------------------------------------------------- the constructor


def _invalid(index: int, field: str, problem: str) -> ToolCallClosureError:
    return spec_error(_CODE, argument=f"parts[{index}].{field}", problem=problem)


def _text(value: object, index: int, field: str) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        raise _invalid(index, field, "must be text, not bytes")
    if not isinstance(value, str):
        raise _invalid(index, field, "must be a string")
    try:
        str.__str__(value).encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid(index, field, "is not valid Unicode (a lone surrogate)") from None
    return str.__str__(value)


def _url(value: object, index: int) -> str:
    url = _text(value, index, "url")
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in url):
        raise _invalid(index, "url", "is not an absolute http(s) URL")
    return url


def _media(part: ImageInput | FileInput, index: int, allowed: frozenset[str]) -> tuple[str, bytes | None, str | None]:
    media_type = _text(part.media_type, index, "media_type")
    if media_type not in allowed:
        raise _invalid(index, "media_type", f"{media_type!r} is not one of {', '.join(sorted(allowed))}")
    given = [name for name in ("data", "base64", "url") if getattr(part, name) is not None]
    if len(given) != 1:
        got = f" (got {', '.join(given)})" if given else ""
        raise _invalid(index, "data", f"needs exactly one of data, base64 or url{got}")
    if part.url is not None:
        return media_type, None, _url(part.url, index)
    if part.data is not None:
        if not isinstance(part.data, bytes | bytearray | memoryview):
            raise _invalid(index, "data", f"must be bytes, not {type(part.data).__name__}")
        data = bytes(part.data)
    else:
        encoded = _text(part.base64, index, "base64")
        try:
            data = _b64.b64decode(encoded.encode("ascii"), validate=True)
        except (binascii.Error, UnicodeEncodeError):
            raise _invalid(index, "base64", "is not valid base64") from None
    if not data:
        # An empty image or file is no document; refused, every part counts at least one byte (MAX_PARTS).
        raise _invalid(index, "data" if part.data is not None else "base64", "must not be empty")
    if media_type.startswith("text/"):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            raise _invalid(index, "data", f"is not UTF-8 text (media type {media_type})") from None
    return media_type, data, None


def _check_json(value: object, index: int, field: str, depth: int = 0) -> None:
    if depth > 64:
        raise _invalid(index, field, "nests deeper than 64 levels")
    if value is None or type(value) in (str, bool, int):
        return
    if type(value) is float:
        if not math.isfinite(value):
            raise _invalid(index, field, "holds a non-finite number")
        return
    if type(value) in (list, tuple):
        for item in cast("Sequence[object]", value):
            _check_json(item, index, field, depth + 1)
        return
    if type(value) is dict:
        for key, item in cast("dict[object, object]", value).items():
            if type(key) is not str:
                raise _invalid(index, field, f"has a key that is not a string: {key!r}")
            _check_json(item, index, field, depth + 1)
        return
    raise _invalid(index, field, f"is not JSON (a {type(value).__name__})")


def _json_text(value: object, index: int, field: str) -> str:
    _check_json(value, index, field)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _part(entry: object, index: int) -> Part:
    if isinstance(entry, str | TextInput):
        text = _text(entry if isinstance(entry, str) else entry.text, index, "text")
        if not text:
            raise _invalid(index, "text", "must not be empty (providers refuse an empty text block)")
        return TextPart(text)
    if isinstance(entry, ImageInput):
        return ImagePart(*_media(entry, index, IMAGE_MEDIA_TYPES))
    if isinstance(entry, FileInput):
        name = _text(entry.name, index, "name")
        if not name.strip() or utf8_length(name) > _MAX_NAME_BYTES:
            raise _invalid(index, "name", f"must be a non-empty name within {_MAX_NAME_BYTES} UTF-8 bytes")
        return FilePart(name, *_media(entry, index, FILE_MEDIA_TYPES))
    if isinstance(entry, JsonInput):
        schema = None if entry.schema is None else _json_text(dict(entry.schema), index, "schema")
        return JsonPart(_json_text(entry.value, index, "value"), schema)
    if isinstance(entry, bytes | bytearray | memoryview):
        raise _invalid(index, "text", "must be text, not bytes (bytes go in an ImageInput or a FileInput)")
    raise _invalid(index, "type", f"is not a part: {type(entry).__name__}")


def _size(part: Part) -> int:
    if isinstance(part, TextPart):
        return utf8_length(part.text)
    if isinstance(part, JsonPart):
        return utf8_length(part.json) + (0 if part.schema_json is None else utf8_length(part.schema_json))
    return len(part.data) if part.data is not None else utf8_length(part.url or "")


def content(parts: Sequence[PartInput]) -> ToolContent:
    """A tool result made of ``parts``, for ``succeed`` / ``settle``: each part checked, then recorded frozen.

    Raises :class:`~tool_call_closure.UsageError` code ``content_part_invalid``
    naming the index and field of the first bad part (an empty list is one).
    """
    if isinstance(parts, str | bytes) or not isinstance(parts, Sequence):
        raise spec_error(_CODE, argument="parts", problem="must be a list of parts")
    if not parts:
        raise spec_error(_CODE, argument="parts", problem="must not be empty")
    if len(parts) > MAX_PARTS:
        raise spec_error(_CODE, argument="parts", problem=f"has {len(parts)} parts; at most {MAX_PARTS} are allowed")
    recorded = tuple(_part(entry, index) for index, entry in enumerate(parts))
    result = ToolContent(recorded)
    object.__setattr__(result, "size", sum(_size(part) for part in recorded))
    object.__setattr__(result, "_made", _MADE)
    return result


def _unpickled(parts: tuple[Part, ...]) -> ToolContent:
    """A pickled :class:`ToolContent` loaded: its parts checked again, as ``content()`` checks them."""
    inputs: list[PartInput] = []
    for part in parts:
        if type(part) is TextPart:
            inputs.append(TextInput(part.text))
        elif type(part) is ImagePart:
            inputs.append(ImageInput(media_type=part.media_type, data=part.data, url=part.url))
        elif type(part) is FilePart:
            inputs.append(FileInput(name=part.name, media_type=part.media_type, data=part.data, url=part.url))
        elif type(part) is JsonPart:
            inputs.append(JsonInput(part.value, None if part.schema_json is None else part.schema))
    return content(inputs)


def is_recorded(value: ToolContent) -> bool:
    """True if :func:`content` built ``value`` (its parts were checked and its size counted)."""
    return getattr(value, "_made", None) is _MADE
