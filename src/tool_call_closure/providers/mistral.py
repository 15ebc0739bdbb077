"""Mistral: its tool-call id rule (exactly 9 characters from ``[A-Za-z0-9]``), met by a deterministic mapping.

Theory of operation
-------------------
Mistral's chat API speaks the OpenAI Chat shapes (the ``openai_chat``
ingestion, export and preflight apply as they are) but refuses any tool-call
id that is not exactly nine ASCII letters or digits: *"Tool call id was
call_0fypS1hVX but must be a-z, A-Z, 0-9, with a length of 9."*  A history
recorded with another provider (``call_…``, ``toolu_…``) therefore cannot be
replayed to Mistral as it is.

:func:`mistral_id` maps any id to a valid one, deterministically, so the same
history always maps the same way (a retried request, a prompt cache):

* an id that already follows the rule is kept;
* any other id becomes the SHA-256 of its UTF-8 bytes, read as a big-endian
  integer, taken modulo 62**9 and written as nine base-62 digits
  (``0-9A-Za-z``, in that order, with leading zeros).

A hash has no inverse, so pairing back goes through :class:`MistralIds`, the
two-way table of the ids of one conversation; it refuses a collision (two ids
mapping to the same Mistral id, about one chance in 10**16 per pair) instead
of pairing a result with the wrong call.  :func:`to_mistral_messages` rewrites
a Chat-format message list (``tool_calls[].id`` and ``tool_call_id``) with it.

Content parts (D22): Mistral's tool message is text, as Chat's is, so a
result with media takes the Chat fallback (``openai_chat.next_messages(…,
media_from=snapshot)``: a note per media part in the tool message, the media
in a user message after the tool messages); :func:`to_mistral_messages`
turns that message's PDF ``file`` parts into Mistral ``document_url`` chunks.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any, Final

from tool_call_closure.errors import UsageError
from tool_call_closure.providers.reading import field, items

__all__ = ["ID_LENGTH", "MistralIds", "mistral_id", "to_mistral_messages"]

ID_LENGTH: Final = 9
_VALID: Final = re.compile(r"[A-Za-z0-9]{9}")
_DIGITS: Final = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def mistral_id(call_id: str) -> str:
    """A Mistral-valid id: ``call_id`` itself if valid, else its SHA-256 modulo 62**9 in nine base-62 digits."""
    if _VALID.fullmatch(call_id):
        return call_id
    number = int.from_bytes(hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).digest(), "big")
    digits = []
    for _ in range(ID_LENGTH):
        number, digit = divmod(number, 62)
        digits.append(_DIGITS[digit])
    return "".join(reversed(digits))


class MistralIds:
    """The two-way id table of one conversation: ``to_mistral(id)`` and ``original(mistral_id)``."""

    __slots__ = ("_back", "_forth")

    def __init__(self, call_ids: Iterable[str] = ()) -> None:
        self._forth: dict[str, str] = {}
        self._back: dict[str, str] = {}
        for call_id in call_ids:
            self.to_mistral(call_id)

    def to_mistral(self, call_id: str) -> str:
        """The Mistral id of ``call_id`` (recorded); raises :class:`.UsageError` on a collision."""
        mapped = self._forth.get(call_id)
        if mapped is not None:
            return mapped
        mapped = mistral_id(call_id)
        other = self._back.get(mapped)
        if other is not None and other != call_id:
            raise UsageError(
                f"tool call ids {other!r} and {call_id!r} both map to the Mistral id {mapped!r}", code="provider_rule"
            )
        self._forth[call_id] = mapped
        self._back[mapped] = call_id
        return mapped

    def original(self, mapped: str) -> str:
        """The id ``mapped`` was made from; raises :class:`.UsageError` for an id this table never made."""
        try:
            return self._back[mapped]
        except KeyError:
            raise UsageError(f"{mapped!r} is not a Mistral id of this conversation", code="provider_rule") from None


def to_mistral_messages(messages: Sequence[Any], ids: MistralIds | None = None) -> list[dict[str, Any]]:
    """Copies of Chat-format messages with every tool-call id mapped by ``ids`` (a new table if ``None``)."""
    table = ids if ids is not None else MistralIds()
    mapped: list[dict[str, Any]] = []
    for message in messages:
        copy = dict(message) if isinstance(message, dict) else dict(message.model_dump(exclude_none=True))
        if field(copy, "tool_calls"):
            copy["tool_calls"] = [
                {
                    **(dict(call) if isinstance(call, dict) else call.model_dump()),
                    "id": table.to_mistral(field(call, "id")),
                }
                for call in items(copy["tool_calls"])
            ]
        if field(copy, "tool_call_id") is not None:
            copy["tool_call_id"] = table.to_mistral(copy["tool_call_id"])
        if copy.get("role") == "user" and isinstance(copy.get("content"), list):
            copy["content"] = [_mistral_chunk(part) for part in copy["content"]]
        mapped.append(copy)
    return mapped


def _mistral_chunk(part: Any) -> Any:
    """D22: a Chat ``file`` part (the media message after the tool messages) as Mistral's chunk.

    A PDF becomes a ``document_url`` chunk (its data URL and name); Mistral has
    no chunk for another file, which becomes a text note naming it.  Text and
    ``image_url`` parts are Mistral's own shapes and pass as they are.
    """
    if not isinstance(part, dict) or part.get("type") != "file":
        return part
    file = part.get("file") or {}
    data, name = file.get("file_data") or "", file.get("filename") or "file"
    if data.startswith("data:application/pdf;"):
        return {"type": "document_url", "document_url": data, "document_name": name}
    return {"type": "text", "text": f"[file {name!r}: Mistral takes no file of this type in a message]"}
