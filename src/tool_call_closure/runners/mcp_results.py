"""What an MCP server's answer becomes: a ``CallToolResult`` or a protocol error as the call's outcome.

Theory of operation
-------------------
:func:`outcome_of` maps a ``CallToolResult`` to what the runner records,
item by item, dropping nothing without saying so:

=================================  ====================================================================
MCP content item                   content part (:mod:`tool_call_closure.parts`)
=================================  ====================================================================
``text``                           a text part (an empty text carries nothing and is left out)
``image`` (png, jpeg, gif, webp)   an image part (the base64 as sent)
``image`` of another media type    a text part saying what it was — *fallback*
``audio``                          a text part saying what it was — *fallback*: no provider takes audio
                                   in a tool result
``resource_link``                  a text part naming the resource: ``Resource link: <name> <uri>``
                                   (``(media type)``, and the description, when given) — a link is a
                                   reference for the client to read, not content
embedded ``resource``, text        a text part: ``Resource <uri>:`` and the text
embedded ``resource``, blob        an image part (image media types), a file part named after the URI
                                   (``application/pdf`` and the other file media types), else a text
                                   part saying what it was — *fallback*
``structuredContent``              a JSON part, with the tool's ``outputSchema`` when it listed one
=================================  ====================================================================

An image or a blob with no bytes is a *fallback* too (a part is never
empty).  A result of more than :data:`~tool_call_closure.parts.MAX_PARTS`
parts is not cut short: the call ends as an error saying so.

A result that maps to one text part is recorded as that text (the text path,
unchanged); one with no part at all as ``""``; any other as
``content([...])``.  Each *fallback* is also reported as a
:class:`McpFallback` to the run's ``on_fallback``: the model reads the
text, the caller learns what could not be passed on.

``isError: true`` is an error outcome (:class:`~.outcomes.ToolCallError`,
``tool_error``) whose message is the server's own text — every text item,
in order, joined by a newline — followed by the ``structuredContent`` as
JSON when there is one, and by the fallback text of any non-text item; the
structured value is also kept on the error (``ToolCallError.structured``).
A server that says nothing gets ``The MCP tool reported an error without a
message.``

:func:`error_of` maps a JSON-RPC error answering ``tools/call``:
``-32602`` (invalid params) is ``invalid_tool_call`` — or ``unknown_tool``
when the server's message says the tool is unknown (the MCP specification's
example error) — with the server's message; the connection closing before
the answer (``-32000``, the server died) and any other code are
``tool_error`` with the error's text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, final

from tool_call_closure.parts import (
    FILE_MEDIA_TYPES,
    IMAGE_MEDIA_TYPES,
    MAX_PARTS,
    FileInput,
    ImageInput,
    JsonInput,
    PartInput,
    TextInput,
    content,
)
from tool_call_closure.runners.outcomes import ToolCallError

if TYPE_CHECKING:
    from mcp.shared.exceptions import MCPError
    from mcp_types import CallToolResult, EmbeddedResource, Tool

__all__ = ["McpFallback", "error_of", "outcome_of"]

INVALID_PARAMS: Final = -32602
CONNECTION_CLOSED: Final = -32000
NO_MESSAGE: Final = "The MCP tool reported an error without a message."


@final
@dataclass(frozen=True, slots=True)
class McpFallback:
    """A content item no provider slot takes, passed to the model as text that says what it was."""

    call_id: str
    name: str
    index: int
    """The item's position in the result's ``content``."""
    item_type: Literal["image", "audio", "resource"]
    media_type: str
    text: str
    """The text the model reads in its place."""


def _fallback_text(item_type: str, media_type: str, size: int, where: str) -> str:
    why = "it is empty" if size == 0 else f"no provider accepts {media_type} in a tool result"
    return f"[{item_type} {where}({media_type}, {size} bytes of base64) not shown: {why}]"


def _resource(item: EmbeddedResource) -> tuple[PartInput | None, str | None]:
    """An embedded resource as a part, or as the text of a fallback (then the part is None)."""
    resource = item.resource
    uri, media_type = str(resource.uri), resource.mime_type or "application/octet-stream"
    text = getattr(resource, "text", None)
    if isinstance(text, str):
        return (TextInput(f"Resource {uri}:\n{text}") if text else TextInput(f"Resource {uri} (empty)")), None
    blob: str = getattr(resource, "blob", "")
    if media_type in IMAGE_MEDIA_TYPES and blob:
        return ImageInput(media_type=media_type, base64=blob), None
    if media_type in FILE_MEDIA_TYPES and blob:
        name = uri.rstrip("/").rsplit("/", 1)[-1] or "resource"
        return FileInput(name=name[:200], media_type=media_type, base64=blob), None
    return None, _fallback_text("resource", media_type, len(blob), f"{uri} ")


def _part_of(item: Any) -> tuple[PartInput | None, str | None]:
    """One content item as a part (None for an empty text), or the text of a fallback."""
    kind = item.type
    if kind == "text":
        return (TextInput(item.text) if item.text else None), None
    if kind == "image":
        if item.mime_type in IMAGE_MEDIA_TYPES and item.data:
            return ImageInput(media_type=item.mime_type, base64=item.data), None
        return None, _fallback_text("image", item.mime_type, len(item.data), "")
    if kind == "audio":
        return None, _fallback_text("audio", item.mime_type, len(item.data), "")
    if kind == "resource_link":
        text = f"Resource link: {item.name} <{item.uri}>"
        if item.mime_type:
            text += f" ({item.mime_type})"
        if item.description:
            text += f": {item.description}"
        return TextInput(text), None
    if kind == "resource":
        return _resource(item)
    return None, f"[content of type {kind!r} not shown: the client does not know it]"


def _described(item: Any) -> tuple[Literal["image", "audio", "resource"], str]:
    if item.type == "image":
        return "image", str(item.mime_type)
    if item.type == "audio":
        return "audio", str(item.mime_type)
    resource = getattr(item, "resource", None)
    return "resource", str(getattr(resource, "mime_type", None) or "")


def _parts(
    result: CallToolResult, report: Callable[[McpFallback], None] | None, call_id: str, name: str
) -> list[PartInput]:
    parts: list[PartInput] = []
    for index, item in enumerate(result.content):
        part, fallback = _part_of(item)
        if fallback is not None:
            part = TextInput(fallback)
            if report is not None:
                report(McpFallback(call_id, name, index, *_described(item), fallback))
        if part is not None:
            parts.append(part)
    return parts


def _not_in_error(part: PartInput) -> str:
    media_type = getattr(part, "media_type", "")
    return f"[{type(part).__name__.removesuffix('Input').lower()} {media_type} not shown: an error carries text only]"


def outcome_of(
    result: CallToolResult,
    tool: Tool | None,
    *,
    call_id: str = "",
    on_fallback: Callable[[McpFallback], None] | None = None,
) -> object:
    """The call's value (a str, or a :class:`~tool_call_closure.parts.ToolContent`); ``isError`` raises
    :class:`~.outcomes.ToolCallError`."""
    name = "" if tool is None else tool.name
    parts = _parts(result, on_fallback, call_id, name)
    structured = result.structured_content
    if result.is_error:
        texts = [part.text if isinstance(part, TextInput) else _not_in_error(part) for part in parts]
        if structured is not None:
            texts.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
        raise ToolCallError("\n".join(texts) or NO_MESSAGE, structured=structured)
    if structured is not None:
        schema = None if tool is None else tool.output_schema
        parts.append(JsonInput(structured, schema=schema))
    if not parts:
        return ""
    if len(parts) == 1 and isinstance(parts[0], TextInput):
        return parts[0].text
    if len(parts) > MAX_PARTS:
        raise ToolCallError(f"The MCP tool's result has {len(parts)} parts; a result holds at most {MAX_PARTS}.")
    return content(parts)


def error_of(error: MCPError, name: str) -> ToolCallError:
    """A JSON-RPC error answering ``tools/call`` for tool ``name`` (or the connection's end) as the call's outcome."""
    if error.code == INVALID_PARAMS:
        unknown = "unknown tool" in error.message.lower()
        return ToolCallError(error.message, code="unknown_tool" if unknown else "invalid_tool_call")
    if error.code == CONNECTION_CLOSED:
        return ToolCallError(f"The MCP server closed the connection before answering the call of {name!r}.")
    return ToolCallError(f"MCP error {error.code}: {error.message}")
