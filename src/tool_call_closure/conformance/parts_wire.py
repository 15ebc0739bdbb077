"""Content parts over the protocol (capability ``content-parts``, deviation D22): the ``$parts`` tag.

``{"$parts":[part, …]}`` stands for ``content([...])`` of the parts (spec/protocol.md, Tags), each part an
object with a ``type``:

==========  ====================================================================
type        members
==========  ====================================================================
``text``    ``text``
``image``   ``mediaType`` and one of ``base64``, ``url``
``file``    ``name``, ``mediaType`` and one of ``base64``, ``url``
``json``    ``value`` and optionally ``schema`` (plain JSON: tags inside are not decoded)
==========  ====================================================================

It is the canonical JSON form of a recorded :class:`~tool_call_closure.parts.ToolContent` (its ``__json__``),
so a snapshot's content reads back as the tag that made it.  A part the library refuses (a media type, a URL,
base64, a type or a member it does not know) is refused as ``content()`` refuses it, ``TypeError`` code
``content_part_invalid``, and the call is not made.  The protocol has no bytes: in an export's answer, the bytes
of a Bedrock blob or a Gemini inline part are written as their base64 text (what the provider's JSON carries),
by :func:`base64_bytes`.

Capability ``content-diagnostics`` (deviation D26): ``new``'s options are read with the table's flag options
too (``textOnlyToolResults``, :func:`new_options`); without it they are unknown keys, ignored as the original
ignores them (OPT-3).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Collection
from typing import Any, Final

from tool_call_closure import FileInput, ImageInput, JsonInput, TextInput, ToolContent, content, to_json
from tool_call_closure.errors import ToolCallClosureError, spec_error
from tool_call_closure.machine.table import TABLE, FlagSpec, OptionSpec

__all__ = ["DIAGNOSTICS_CAPABILITY", "PARTS_TAG", "base64_bytes", "decode_parts", "new_options", "response_json"]

PARTS_TAG: Final = "$parts"
DIAGNOSTICS_CAPABILITY: Final = "content-diagnostics"
_MEMBERS: Final = {
    "text": frozenset({"type", "text"}),
    "image": frozenset({"type", "mediaType", "base64", "url"}),
    "file": frozenset({"type", "name", "mediaType", "base64", "url"}),
    "json": frozenset({"type", "value", "schema"}),
}
_NOTHING: Final = object()


def _refused(index: int, member: str, problem: str) -> Exception:
    return spec_error("content_part_invalid", argument=f"parts[{index}].{member}", problem=problem)


def _input(index: int, part: Any) -> TextInput | ImageInput | FileInput | JsonInput:
    kind = part.get("type") if type(part) is dict else None
    members = _MEMBERS.get(kind) if isinstance(kind, str) else None
    if members is None:
        raise _refused(index, "type", "must be text, image, file or json")
    unknown = sorted(set(part) - members)
    if unknown:
        raise _refused(index, unknown[0], f"is not a member of a part of type {kind}")
    get = part.get
    if kind == "text":
        return TextInput(get("text"))
    if kind == "json":
        if "value" not in part:
            raise _refused(index, "value", "is missing")
        return JsonInput(part["value"], get("schema"))
    media = {"media_type": get("mediaType"), "base64": get("base64"), "url": get("url")}
    if kind == "image":
        return ImageInput(**media)
    return FileInput(name=get("name"), **media)


def decode_parts(inner: Any) -> ToolContent:
    """The :class:`~tool_call_closure.parts.ToolContent` a ``$parts`` tag stands for (raises as ``content()``)."""
    if type(inner) is not list:
        raise spec_error("content_part_invalid", argument="parts", problem="must be a list of parts")
    return content([_input(index, part) for index, part in enumerate(inner)])


def base64_bytes(value: Any) -> Any:
    """``value`` with every ``bytes`` in it (lists and dicts) replaced by its base64 text."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, list):
        return [base64_bytes(item) for item in value]
    if isinstance(value, dict):
        return {key: base64_bytes(item) for key, item in value.items()}
    return value


def response_json(value: Any, write: Callable[[Any], str] = to_json) -> str:
    """``write(value)`` (``to_json``); a value holding bytes (an export of content parts) with them as base64 text."""
    try:
        return write(value)
    except ToolCallClosureError:
        return write(base64_bytes(value))


def new_options(capabilities: Collection[str]) -> tuple[OptionSpec | FlagSpec, ...]:
    """The options ``new`` reads: the limits, and the flags with capability ``content-diagnostics`` (D26)."""
    return (*TABLE.options, *TABLE.flags) if DIAGNOSTICS_CAPABILITY in capabilities else TABLE.options
