"""The provider stub's native content rules (deviation D22): what each API takes in a tool result, on the wire.

``check_content(provider, path, body)`` runs before the pairing rules of
``provider_stub.py`` and refuses, with status 400 and a message marked
``STUB:`` (the wording is the stub's, not the provider's), a request whose
tool results (or the media message after them) break the provider's content
rules:

* OpenAI Chat: a tool message's content is a text or a list of ``text``
  parts, never an image or a file; a user message's parts are ``text``,
  ``image_url`` (an http(s) URL or a ``data:image/…;base64,`` URL of PNG,
  JPEG, GIF or WebP) and ``file`` (``file_data`` a data URL, a ``filename``);
* OpenAI Responses: a ``function_call_output``'s output is a text or a list
  of ``input_text`` / ``input_image`` / ``input_file`` (one of ``file_data``
  with a ``filename``, ``file_url``, ``file_id``);
* Anthropic: a ``tool_result``'s blocks are non-empty ``text``, ``image``
  (base64 of one of the four image media types, or a url source) and
  ``document`` (base64 PDF, text source, url source);
* Gemini: ``functionResponse.parts`` only for a ``gemini-3`` model, each an
  ``inlineData`` (PNG, JPEG, WebP, PDF, plain text; base64) or a ``fileData``;
* Bedrock: each ``toolResult`` content block has one of ``text``, ``json``,
  ``image`` (png/jpeg/gif/webp, bytes), ``document`` (a Converse format, a
  name of letters, digits, single spaces, hyphens, parentheses and brackets,
  bytes); a model whose id has ``no-media`` refuses images and documents in a
  tool result.

The tests that send results with content parts through a real SDK client to
the stub share :data:`STUB_CASES` (each provider with the model the stub
judges and the export options that model needs), :func:`send_results` and
:func:`strings_in`.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from tool_call_closure import Snapshot, ToolCallClosure
from tool_call_closure.providers import anthropic, bedrock, gemini, openai_chat, openai_responses

__all__ = ["STUB_CASES", "ContentRefusalError", "check_content", "send_results", "strings_in"]

_IMAGES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
_GEMINI_3 = {"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"}
_BEDROCK_DOCS = {"pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md"}
_BEDROCK_NAME = re.compile(r"[A-Za-z0-9\-()\[\]]+( [A-Za-z0-9\-()\[\]]+)*")
_DATA_URL = re.compile(r"data:([a-z]+/[a-z0-9.+-]+);base64,(.*)", re.DOTALL)


class ContentRefusalError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(f"STUB: {message}")
        self.message = f"STUB: {message}"


def _refuse(message: str) -> ContentRefusalError:
    return ContentRefusalError(message)


def _b64(data: object, where: str) -> bytes:
    if not isinstance(data, str):
        raise _refuse(f"{where}: base64 data must be a string")
    try:
        return base64.b64decode(data, validate=True)
    except binascii.Error:
        raise _refuse(f"{where}: invalid base64 data") from None


def _url(url: object, where: str, images_only: bool = False) -> None:
    if not isinstance(url, str):
        raise _refuse(f"{where}: url must be a string")
    found = _DATA_URL.fullmatch(url)
    if found:
        if images_only and found.group(1) not in _IMAGES:
            raise _refuse(f"{where}: unsupported image media type {found.group(1)}")
        _b64(found.group(2), where)
    elif not url.startswith(("https://", "http://")):
        raise _refuse(f"{where}: not a URL: {url[:40]}")


def _chat(body: dict[str, Any]) -> None:
    for index, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for position, part in enumerate(content):
            where = f"messages[{index}].content[{position}]"
            kind = part.get("type")
            if message.get("role") == "tool" and kind != "text":
                raise _refuse(f"Invalid value {kind!r} at {where}: a tool message takes only 'text' parts.")
            if kind == "image_url":
                _url(part["image_url"]["url"], where, images_only=True)
            elif kind == "file":
                _url(part["file"]["file_data"], where)
                if not part["file"].get("filename"):
                    raise _refuse(f"{where}: a file part needs a filename")
            elif kind != "text":
                raise _refuse(f"{where}: unknown part type {kind!r}")


def _responses(body: dict[str, Any]) -> None:
    items = body.get("input")
    for index, item in enumerate(items if isinstance(items, list) else []):
        output = item.get("output") if item.get("type") == "function_call_output" else None
        for position, part in enumerate(output if isinstance(output, list) else []):
            where = f"input[{index}].output[{position}]"
            kind = part.get("type")
            if kind == "input_image":
                _url(part.get("image_url"), where, images_only=True)
            elif kind == "input_file":
                sources = [key for key in ("file_data", "file_url", "file_id") if part.get(key) is not None]
                if len(sources) != 1:
                    raise _refuse(f"{where}: an input_file needs exactly one of file_data, file_url, file_id")
                if "file_data" in sources:
                    _url(part["file_data"], where)
                    if not part.get("filename"):
                        raise _refuse(f"{where}: file_data needs a filename")
            elif kind != "input_text":
                raise _refuse(f"{where}: unknown output item type {kind!r}")


def _anthropic_block(block: dict[str, Any], where: str) -> None:
    kind = block.get("type")
    source = block.get("source") or {}
    if kind == "text":
        if not block.get("text"):
            raise _refuse(f"{where}: text content blocks must be non-empty")
    elif kind == "image":
        if source.get("type") == "base64":
            if source.get("media_type") not in _IMAGES:
                raise _refuse(f"{where}.source.media_type: Input should be one of {sorted(_IMAGES)}")
            _b64(source.get("data"), where)
        elif source.get("type") != "url":
            raise _refuse(f"{where}: unknown image source {source.get('type')!r}")
    elif kind == "document":
        if source.get("type") == "base64":
            if source.get("media_type") != "application/pdf":
                raise _refuse(f"{where}.source.media_type: a base64 document must be application/pdf")
            _b64(source.get("data"), where)
        elif source.get("type") == "text":
            if source.get("media_type") != "text/plain" or not isinstance(source.get("data"), str):
                raise _refuse(f"{where}: a text source is text/plain text")
        elif source.get("type") != "url":
            raise _refuse(f"{where}: unknown document source {source.get('type')!r}")
    else:
        raise _refuse(f"{where}: block type {kind!r} is not allowed in a tool_result")


def _anthropic(body: dict[str, Any]) -> None:
    for index, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        for position, block in enumerate(content if isinstance(content, list) else []):
            inner = block.get("content") if block.get("type") == "tool_result" else None
            for number, part in enumerate(inner if isinstance(inner, list) else []):
                _anthropic_block(part, f"messages.{index}.content.{position}.content.{number}")


def _gemini(path: str, body: dict[str, Any]) -> None:
    gemini_3 = "gemini-3" in path
    for index, content in enumerate(body.get("contents") or []):
        for position, part in enumerate(content.get("parts") or []):
            media = (part.get("functionResponse") or {}).get("parts") or []
            where = f"contents[{index}].parts[{position}].functionResponse.parts"
            if media and not gemini_3:
                raise _refuse(f"{where}: this model does not support parts in a function response")
            for number, item in enumerate(media):
                _gemini_media(item, f"{where}[{number}]")


def _either(value: dict[str, Any], camel: str, snake: str) -> Any:
    """A field under its JSON name or its proto name (Gemini's JSON parser takes both; the SDK sends the latter)."""
    return value.get(camel, value.get(snake))


def _gemini_media(item: dict[str, Any], where: str) -> None:
    inline = _either(item, "inlineData", "inline_data")
    data = inline or _either(item, "fileData", "file_data") or {}
    if _either(data, "mimeType", "mime_type") not in _GEMINI_3:
        raise _refuse(f"{where}: unsupported mime type {_either(data, 'mimeType', 'mime_type')!r}")
    if inline is not None:  # proto3 JSON takes bytes in either base64 alphabet; the SDK sends the URL-safe one
        data_text = inline.get("data")
        _b64(data_text.replace("-", "+").replace("_", "/") if isinstance(data_text, str) else data_text, where)
    elif data:
        _url(_either(data, "fileUri", "file_uri"), where)
    else:
        raise _refuse(f"{where}: neither inlineData nor fileData")


def _bedrock_block(block: dict[str, Any], where: str, media: bool) -> None:
    keys = [key for key in ("text", "json", "image", "document", "video") if key in block]
    if len(keys) != 1:
        raise _refuse(f"{where}: a ToolResultContentBlock has exactly one member, not {sorted(block)}")
    kind = keys[0]
    if kind in ("image", "document", "video") and not media:
        raise _refuse(f"{where}: This model doesn't support the {kind} content block in a toolResult.")
    if kind == "image":
        if block["image"].get("format") not in ("png", "jpeg", "gif", "webp"):
            raise _refuse(f"{where}.image.format: unsupported")
        _b64(block["image"]["source"].get("bytes"), where)
    elif kind == "document":
        document = block["document"]
        if document.get("format") not in _BEDROCK_DOCS:
            raise _refuse(f"{where}.document.format: unsupported")
        if not _BEDROCK_NAME.fullmatch(document.get("name") or ""):
            raise _refuse(f"{where}.document.name: invalid document name {document.get('name')!r}")
        _b64(document["source"].get("bytes"), where)


def _bedrock(path: str, body: dict[str, Any]) -> None:
    media = "no-media" not in path
    for index, message in enumerate(body.get("messages") or []):
        for position, block in enumerate(message.get("content") or []):
            result = block.get("toolResult")
            for number, item in enumerate((result or {}).get("content") or []):
                _bedrock_block(item, f"messages.{index}.content.{position}.toolResult.content.{number}", media)


def check_content(provider: str, path: str, body: dict[str, Any]) -> None:
    """Raise :class:`ContentRefusalError` where ``provider`` refuses the content of ``body`` (see the module doc)."""
    if provider == "openai_chat":
        _chat(body)
    elif provider == "openai_responses":
        _responses(body)
    elif provider == "anthropic":
        _anthropic(body)
    elif provider == "gemini":
        _gemini(path, body)
    elif provider == "bedrock":
        _bedrock(path, body)


STUB_CASES: list[tuple[str, str | None, dict[str, Any]]] = [
    ("openai_chat", None, {}),
    ("openai_responses", None, {}),
    ("anthropic", None, {}),
    ("gemini", "gemini-3-pro-preview", {"family": "gemini-3"}),
    ("gemini", "gemini-2.5-flash", {"family": "gemini-2"}),
    ("bedrock", "stub.model", {"media": True}),
    ("bedrock", "stub.no-media", {"media": False}),
]
"""(provider, the model the conversation asks for — ``None``: its default —, the export options that model needs)."""


def send_results(
    provider: str, conversation: Any, closure: ToolCallClosure, snapshot: Snapshot, **options: Any
) -> None:
    """Export ``snapshot``'s results for ``provider`` (with ``options``), send them in ``conversation`` (a
    ``tests/conversations.py`` one, after its tool-calling turn), and check the stub took the request."""
    turn = conversation.turn
    if provider == "openai_chat":
        tool = closure.to_openai_chat_completions(snapshot)
        conversation.messages.extend(openai_chat.next_messages(turn, tool, media_from=snapshot))
    elif provider == "openai_responses":
        conversation.items.extend(openai_responses.next_input(turn, closure.to_openai_responses(snapshot)))
    elif provider == "anthropic":
        conversation.messages.extend(anthropic.next_messages(turn, closure.to_anthropic_tool_results(snapshot)))
    elif provider == "gemini":
        responses = closure.to_gemini_function_responses(snapshot, **options)
        conversation.contents.extend(gemini.next_contents(turn, responses, **options))
    else:
        results = closure.to_bedrock_tool_results(snapshot, **options)
        conversation.messages.extend(bedrock.next_messages(turn, results, **options))
    reply = conversation._create() if provider in ("gemini", "bedrock") else conversation._create(False)
    assert reply.calls == ()  # the model's final turn: the stub took the request


def strings_in(value: Any) -> list[str]:
    """Every string in a request body (JSON values), depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [text for item in value for text in strings_in(item)] if isinstance(value, list) else []
