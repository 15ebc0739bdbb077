"""Content parts (deviation D22) in each provider's native shape, and the documented fallbacks.

Theory of operation
-------------------
A success recorded as a :class:`~tool_call_closure.parts.ToolContent` is
rendered part by part; an error or a cancellation, and a success recorded as
a text, are rendered exactly as before (ADP-5).  What each export does with
each kind of part:

* text: Anthropic a ``text`` block; Responses ``input_text``; Bedrock
  ``{"text"}``; Gemini the ``response.output`` text;
* JSON: Anthropic a ``text`` block and Responses ``input_text`` (its JSON
  text); Bedrock ``{"json": value}``; Gemini ``response.output`` (the value
  itself when it is the only part, else its JSON text in the output text);
* image: Anthropic ``image`` (base64 or url source); Responses
  ``input_image`` (a data URL or the URL); Bedrock ``image`` (bytes) [#m]_;
  Gemini ``function_response.parts`` ``inline_data`` / ``file_data`` [#g]_;
* file: Anthropic ``document`` (base64 PDF, PDF url, or a text source for
  ``text/*``); Responses ``input_file`` (``file_data`` data URL, or
  ``file_url``); Bedrock ``document`` (bytes) [#m]_; Gemini as an image [#g]_.

.. [#m] ``to_bedrock_tool_results(snapshot, media=False)`` for a model that
   refuses media in a tool result: an image or a PDF becomes a note (below),
   a text file its text; Bedrock has no URL source, so a part given by URL is
   a note with the URL in every case.
.. [#g] ``family="gemini-3"`` (the default): multimodal function responses,
   ``function_response.parts`` (PNG, JPEG, WebP, PDF, plain text);
   ``family="gemini-2"``: Gemini 2.x takes no parts in a function response,
   so every media part is a note.  Nor can the media go beside the function
   responses: sent as sibling ``inline_data`` parts of the same user
   ``Content``, they break the API's count check, which counts every part of
   the turn answering the calls, and the request is refused with *"Please
   ensure that the number of function response parts is equal to the number
   of function call parts of the function call turn."* (gemini-cli#16135,
   the same text as a missing response, providers.md); the provider stub
   refuses that payload for a Gemini 2.x model with the same text
   (``tests/test_content_parts_stub.py``), and ``gemini.check_contents(…,
   family="gemini-2")`` refuses it before it is sent, quoting that text
   (:data:`GEMINI_2_SIBLING_MEDIA`).  So there is no slot for the media
   on Gemini 2.x, and a note is the only legal rendering.  A part Gemini 3
   does not take (GIF, a text file other than plain text) is a note as well.
   Over the protocol the option is ``{"family": …}`` (capability
   ``export-options``).

A part an export cannot carry is never dropped in silence: its place in the
text holds a *note*, ``[image image/png, 1234 bytes: <why>]`` (or ``… at
<url>``), and :func:`content_fallbacks` lists every such part of a snapshot
for an export (the record of what was not sent natively, for logs and
tests).  OpenAI Chat's tool message is text only: its export writes the text
and a note per media part, and ``openai_chat.next_messages(…, media_from=snapshot)``
adds, right after the tool messages, one user message carrying the media
(:func:`chat_media_message`), as the API allows.  Mistral speaks the Chat
shapes and takes the same fallback.  A closure made with
``ToolCallClosure(text_only_tool_results=True)`` records the move on the
snapshot: a ``media_moved`` diagnostic for each accepted success with media
(deviation D26).  What counts as media is one predicate,
:func:`~tool_call_closure.parts.is_media` (an image, or a file whose text is
not inline), used here and by the closure.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, final

from tool_call_closure.errors import UsageError
from tool_call_closure.parts import FilePart, ImagePart, JsonPart, Part, TextPart, ToolContent, is_media
from tool_call_closure.values import CONTENT, STATUS, CallRecord, Snapshot, call_records

__all__ = [
    "GEMINI_FAMILIES",
    "ContentFallback",
    "GeminiFamily",
    "anthropic_content",
    "bedrock_content",
    "bedrock_media",
    "chat_media_message",
    "chat_text",
    "content_fallbacks",
    "data_url",
    "gemini_family",
    "gemini_response",
    "responses_output",
]

GeminiFamily: TypeAlias = Literal["gemini-2", "gemini-3"]
GEMINI_FAMILIES: Final = ("gemini-2", "gemini-3")
_GEMINI_3_MEDIA: Final = frozenset({"image/png", "image/jpeg", "image/webp", "application/pdf", "text/plain"})
_BEDROCK_FORMATS: Final = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
    "application/pdf": "pdf",
    "text/plain": "txt",
    "text/csv": "csv",
    "text/markdown": "md",
    "text/html": "html",
}
_BEDROCK_NAME: Final = re.compile(r"[^A-Za-z0-9\-()\[\] ]+")

_NO_URL: Final = "this export takes no URL for it"
_CHAT: Final = "sent in the user message after the tool messages"


@final
@dataclass(frozen=True, slots=True)
class ContentFallback:
    """A part an export did not carry natively: where it is, and what the export wrote instead."""

    call_id: str
    index: int
    kind: str
    media_type: str
    why: str


def gemini_family(family: object) -> GeminiFamily:
    """``family`` when it names a Gemini family (:data:`GEMINI_FAMILIES`); else :class:`.UsageError` ``export_option``.

    The one check of the option, made by every public function that takes it
    (the closure's export, the renderer, the preflight): a misspelt family
    must not be checked against another family's rules without a word.
    """
    if type(family) is str and family in GEMINI_FAMILIES:
        return "gemini-2" if family == "gemini-2" else "gemini-3"
    raise UsageError(
        f"family must be one of {', '.join(GEMINI_FAMILIES)}, got {_option_shown(family)}", code="export_option"
    )


def bedrock_media(media: object) -> bool:
    """``media`` when it is ``True`` or ``False``; else :class:`.UsageError` ``export_option``.

    Not truthiness: ``media="no"`` would otherwise mean ``True``.
    """
    if type(media) is bool:
        return media
    raise UsageError(f"media must be True or False, got {_option_shown(media)}", code="export_option")


def _option_shown(value: object) -> str:
    """A refused option's value for its message: a short text as itself, anything else by its type (bounded)."""
    if type(value) is str and len(value) <= 40:
        return repr(value)
    return type(value).__name__


def data_url(media_type: str, data: bytes) -> str:
    """``data:<media type>;base64,<data>``."""
    return f"data:{media_type};base64,{base64.b64encode(data).decode('ascii')}"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def note(part: ImagePart | FilePart, why: str) -> str:
    """The text standing in for a media part an export cannot carry."""
    what = f"{part.kind} {part.name!r} {part.media_type}" if isinstance(part, FilePart) else f"image {part.media_type}"
    where = f"{len(part.data)} bytes" if part.data is not None else f"at {part.url}"
    return f"[{what}, {where}: {why}]"


def _as_text(part: Part) -> str | None:
    """The text of a text or JSON part (None for media)."""
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, JsonPart):
        return part.json
    return None


# --------------------------------------------------------------------------- per export: one part -> a block or a note

Why: TypeAlias = str | None
"""None: the export carries the part natively; else the reason it writes a note instead."""


def _anthropic_why(part: ImagePart | FilePart) -> Why:
    if isinstance(part, FilePart) and part.url is not None and part.media_type != "application/pdf":
        return "Anthropic takes a document by URL only for a PDF"
    return None


def _responses_why(part: ImagePart | FilePart) -> Why:
    return None


def _bedrock_why(part: ImagePart | FilePart, media: bool) -> Why:
    if part.url is not None:
        return "Bedrock takes no URL source (bytes or S3 only)"
    if not media and is_media(part):
        return "not sent: the export was asked for no media (the model refuses media in a tool result)"
    return None


def _gemini_why(part: ImagePart | FilePart, family: GeminiFamily) -> Why:
    if not is_media(part) and (family == "gemini-2" or part.media_type != "text/plain"):
        return None  # written as its text
    if family == "gemini-2":
        return "Gemini 2.x takes no media in a function response (family gemini-2)"
    if part.media_type not in _GEMINI_3_MEDIA and is_media(part):
        return f"Gemini 3 takes no {part.media_type} in a function response"
    return None


def _why(export: str, part: ImagePart | FilePart, options: dict[str, Any]) -> Why:
    if export == "anthropic":
        return _anthropic_why(part)
    if export == "openai_responses":
        return _responses_why(part)
    if export == "bedrock":
        return _bedrock_why(part, options.get("media", True))
    if export == "gemini":
        return _gemini_why(part, options.get("family", "gemini-3"))
    if export == "openai_chat":
        return _CHAT
    raise UsageError(f"unknown export {export!r}", code="content_part_invalid")


# --------------------------------------------------------------------------- Anthropic


def _anthropic_media(part: ImagePart | FilePart) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        if part.data is None:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        return {"type": "image", "source": {"type": "base64", "media_type": part.media_type, "data": _b64(part.data)}}
    text = part.text()
    if text is not None:
        source: dict[str, Any] = {"type": "text", "media_type": "text/plain", "data": text}
    elif part.data is None:
        source = {"type": "url", "url": part.url}
    else:
        source = {"type": "base64", "media_type": "application/pdf", "data": _b64(part.data)}
    return {"type": "document", "source": source, "title": part.name}


def anthropic_content(content: ToolContent) -> list[dict[str, Any]]:
    """The ``content`` of a ``tool_result``: ``text``, ``image`` and ``document`` blocks, in order."""
    blocks: list[dict[str, Any]] = []
    for part in content.parts:
        text = _as_text(part)
        if text is not None:
            blocks.append({"type": "text", "text": text})
            continue
        assert isinstance(part, ImagePart | FilePart)
        why = _anthropic_why(part)
        blocks.append({"type": "text", "text": note(part, why)} if why else _anthropic_media(part))
    return blocks


# --------------------------------------------------------------------------- OpenAI Responses


def responses_output(content: ToolContent) -> list[dict[str, Any]]:
    """The ``output`` list of a ``function_call_output``: ``input_text``, ``input_image``, ``input_file``."""
    items: list[dict[str, Any]] = []
    for part in content.parts:
        text = _as_text(part)
        if text is not None:
            items.append({"type": "input_text", "text": text})
        elif isinstance(part, ImagePart):
            url = part.url if part.data is None else data_url(part.media_type, part.data)
            items.append({"type": "input_image", "image_url": url})
        else:
            assert isinstance(part, FilePart)
            if part.data is None:
                items.append({"type": "input_file", "file_url": part.url})
            else:
                items.append(
                    {"type": "input_file", "filename": part.name, "file_data": data_url(part.media_type, part.data)}
                )
    return items


# --------------------------------------------------------------------------- Bedrock


def _bedrock_media(part: ImagePart | FilePart) -> dict[str, Any]:
    assert part.data is not None
    fmt = _BEDROCK_FORMATS[part.media_type]
    if isinstance(part, ImagePart):
        return {"image": {"format": fmt, "source": {"bytes": part.data}}}
    # Bedrock's rule for a document name: letters, digits, whitespace, hyphens, parentheses, square brackets,
    # no two whitespace characters in a row.
    name = " ".join(_BEDROCK_NAME.sub(" ", part.name.rsplit(".", 1)[0]).split()) or "document"
    return {"document": {"format": fmt, "name": name, "source": {"bytes": part.data}}}


def bedrock_content(content: ToolContent, *, media: bool = True) -> list[dict[str, Any]]:
    """The ``content`` of a ``toolResult``: ``text``, ``json``, ``image`` and ``document`` blocks, in order."""
    blocks: list[dict[str, Any]] = []
    for part in content.parts:
        if isinstance(part, TextPart):
            blocks.append({"text": part.text})
        elif isinstance(part, JsonPart):
            blocks.append({"json": part.value})
        else:
            why = _bedrock_why(part, media)
            if why is None and not media and isinstance(part, FilePart):
                blocks.append({"text": part.text()})  # a text file's text, when media is off
            else:
                blocks.append({"text": note(part, why)} if why else _bedrock_media(part))
    return blocks


# --------------------------------------------------------------------------- Gemini


def _gemini_part(part: ImagePart | FilePart) -> dict[str, Any]:
    if part.data is None:
        data: dict[str, Any] = {"file_data": {"file_uri": part.url, "mime_type": part.media_type}}
    else:
        data = {"inline_data": {"mime_type": part.media_type, "data": part.data}}
    if isinstance(part, FilePart):
        next(iter(data.values()))["display_name"] = part.name
    return data


def gemini_response(content: ToolContent, family: GeminiFamily = "gemini-3") -> tuple[Any, list[dict[str, Any]]]:
    """``(response output, function_response.parts)``: one JSON part alone is its value; else the joined text.

    ``family`` is one :func:`gemini_family` has checked.
    """
    parts: list[dict[str, Any]] = []
    texts: list[str] = []
    for part in content.parts:
        text = _as_text(part)
        if text is not None:
            texts.append(text)
            continue
        assert isinstance(part, ImagePart | FilePart)
        why = _gemini_why(part, family)
        file_text = part.text() if isinstance(part, FilePart) else None
        if file_text is not None and (family == "gemini-2" or part.media_type != "text/plain"):
            texts.append(file_text)  # a text file Gemini takes no part for: its text
        elif why is not None:
            texts.append(note(part, why))
        else:
            parts.append(_gemini_part(part))
    only = content.parts[0] if len(content.parts) == 1 else None
    output: Any = only.value if isinstance(only, JsonPart) else "\n".join(texts)
    return output, parts


# --------------------------------------------------------------------------- OpenAI Chat (and Mistral)


def chat_text(content: ToolContent) -> str:
    """A tool message's text: the text and JSON parts, and a note per media part (its media follows later)."""
    texts: list[str] = []
    for part in content.parts:
        text = _as_text(part)
        if text is None:
            assert isinstance(part, ImagePart | FilePart)
            text = part.text() if isinstance(part, FilePart) else None
            text = note(part, _CHAT) if text is None else text
        texts.append(text)
    return "\n".join(texts)


def _chat_media(part: ImagePart | FilePart) -> dict[str, Any]:
    if isinstance(part, ImagePart):
        url = part.url if part.data is None else data_url(part.media_type, part.data)
        return {"type": "image_url", "image_url": {"url": url}}
    if part.data is None:
        return {"type": "text", "text": note(part, "a file by URL (Chat takes files inline only)")}
    return {"type": "file", "file": {"filename": part.name, "file_data": data_url(part.media_type, part.data)}}


def chat_media_message(snapshot: Snapshot) -> dict[str, Any] | None:
    """The user message carrying the media of ``snapshot``'s successes (None when there is none)."""
    content: list[dict[str, Any]] = []
    for call_id, name, _state, settlement in call_records(snapshot):
        result = settlement[CONTENT] if settlement is not None and settlement[STATUS] == "success" else None
        if not isinstance(result, ToolContent):
            continue
        media = [part for part in result.parts if is_media(part)]
        if media:
            content.append({"type": "text", "text": f"Media returned by tool call {call_id} ({name}):"})
            content.extend(_chat_media(part) for part in media)
    return {"role": "user", "content": content} if content else None


# --------------------------------------------------------------------------- what an export did not carry


_EXPORTS: Final = ("anthropic", "openai_responses", "openai_chat", "bedrock", "gemini")


def content_fallbacks(snapshot: Snapshot, export: str, **options: Any) -> tuple[ContentFallback, ...]:
    """Every media part of ``snapshot``'s successes that ``export`` writes as a note (or, for Chat, moves).

    ``export`` is one of ``anthropic``, ``openai_responses``, ``openai_chat``
    (Mistral takes the Chat shapes), ``bedrock`` (option ``media``) and
    ``gemini`` (option ``family``), with the options given to the export.
    """
    if export not in _EXPORTS:
        raise UsageError(f"export must be one of {', '.join(_EXPORTS)}, not {export!r}", code="export_option")
    return tuple(_fallbacks(call_records(snapshot), lambda part: _why(export, part, options)))


def _fallbacks(calls: Sequence[CallRecord], why: Callable[[ImagePart | FilePart], Why]) -> list[ContentFallback]:
    found: list[ContentFallback] = []
    for call_id, _name, _state, settlement in calls:
        result = settlement[CONTENT] if settlement is not None and settlement[STATUS] == "success" else None
        if not isinstance(result, ToolContent):
            continue
        for index, part in enumerate(result.parts):
            if is_media(part):
                reason = why(part)
                if reason is not None:
                    found.append(ContentFallback(call_id, index, part.kind, part.media_type, reason))
    return found


def success_content(value: object) -> ToolContent | None:
    """``value`` if it is recorded parts, else None (a text)."""
    return value if type(value) is ToolContent else None


# --------------------------------------------------------------------------- preflight: where a part is refused

CHAT_TOOL_MEDIA: Final = (
    "messages[{index}].content[{part}]: a tool message takes text only, not {kind!r} (library preflight, D22): "
    "send images and files in a user message after the tool messages, as next_messages(..., media_from=snapshot) does"
)
BEDROCK_NO_MEDIA: Final = (
    "messages.{index}.content.{block}: a toolResult carries {kind!r} content, and this model refuses media in a "
    "tool result (media=False; library preflight, D22): export with to_bedrock_tool_results(snapshot, media=False)"
)
GEMINI_2_PARTS: Final = (
    "contents[{index}].parts[{part}]: a function_response has parts, which Gemini 2.x models do not take "
    "(multimodal function responses are Gemini 3; family='gemini-2'; library preflight, D22): export with "
    "to_gemini_function_responses(snapshot, family='gemini-2')"
)
GEMINI_2_SIBLING_MEDIA: Final = (
    "contents[{index}].parts[{part}]: {kind} beside function responses, which Gemini 2.x counts as a response "
    "part and refuses ('Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn.', gemini-cli#16135; family='gemini-2'; library preflight, "
    "D22): Gemini 2.x takes no media for a tool call; to_gemini_function_responses(snapshot, family='gemini-2') "
    "writes a note for each"
)


def chat_tool_media(content: object) -> str | None:
    """The type of the first part of a tool message's content that is not text (None: text only)."""
    if isinstance(content, str) or not isinstance(content, Sequence):
        return None
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else getattr(part, "type", None)
        if kind != "text":
            return str(kind)
    return None


def bedrock_media_kind(result_content: Sequence[Any]) -> str | None:
    """``image`` or ``document`` if a toolResult's content has such a block (None: none)."""
    for block in result_content:
        for kind in ("image", "document", "video"):
            if (block.get(kind) if isinstance(block, dict) else getattr(block, kind, None)) is not None:
                return kind
    return None
