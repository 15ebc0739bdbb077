"""OpenAI Chat Completions: ingestion of ``tool_calls``, streamed deltas, and one ``role: "tool"`` message per call.

Theory of operation
-------------------
*Ingestion* (:func:`ingest`) reads a ``ChatCompletion``, one of its choices, its
``message``, or the ``tool_calls`` list — SDK objects or dicts — and
pairs on each call's ``id``.  Function-tool arguments are JSON text
(:mod:`.arguments`: an object sent where the text belongs, or text nested
too deep, is that call's ``problem``); custom-tool input is free text and
is carried as is.

*Streaming* (:class:`ChatStream`) groups ``ChoiceDeltaToolCall`` fragments into
calls.  The documented rule is "group by ``index``; ``id`` and ``name`` arrive
in the first fragment".  Real streams break it in three known ways, and one
rule handles all of them: **a fragment that carries an ``id`` different from
the id of the call currently at its index starts a new call**; a fragment
without an ``id`` continues the call at its index, and a fragment without an
index continues the most recent call.

* duplicate indexes in the first chunk (two calls, both at index 0) — each has
  its own id, so each starts its own call;
* every parallel call at index 0 — likewise;
* no index at all (Gemini's OpenAI-compatible endpoint) — each call arrives
  with its id, so it starts a new call; id-less fragments continue the last one.

Every chunk carries the completion's ``id``: a chunk of another completion
is refused (:class:`.UsageError`, nothing taken), so two streams fed to one
accumulator never merge.  A call announced (its id) after a fragment that
continued it, or a fragment after the ``finish_reason``, puts the stream
*out of order* (:mod:`.streaming`).  A fragment field of the wrong type (a
name or arguments that are not text) makes its call's ``problem``; an
``index`` or a list of the wrong type refuses the chunk.

The turn ends with the choice's ``finish_reason``.  At ``finish()`` a call
whose arguments are not valid JSON carries a ``problem``, and so does the
last call when the turn stopped on ``finish_reason: "length"``; a stream
that never sent a ``finish_reason`` is an *unfinished* turn, handled by the
policy of :mod:`.streaming` (by default every call is answered, none run).
The stream also keeps the message's text and refusal, so
:meth:`ChatStream.assistant_message` (and :func:`next_messages` given the
stream) echoes the whole assistant turn.

*Export* (:func:`render_tool_results`): ``{"role": "tool", "tool_call_id", "content"}``
per decided call; the public method types it as the SDK's
``ChatCompletionToolMessageParam`` (:mod:`.sdk_types`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final, NamedTuple

from tool_call_closure.errors import UsageError
from tool_call_closure.providers.arguments import make_call, text_arguments
from tool_call_closure.providers.calls import Ingested, ProviderRuleError, SkippedItem, ToolCall
from tool_call_closure.providers.parts_render import CHAT_TOOL_MEDIA, chat_media_message, chat_text, chat_tool_media
from tool_call_closure.providers.reading import (
    described,
    field,
    int_or_none,
    items,
    present,
    refuse_foreign_call,
    refuse_foreign_event,
    refuse_foreign_turns,
    require_fields,
    required_id,
    text,
    text_or_none,
)
from tool_call_closure.providers.result_text import export_rows
from tool_call_closure.providers.sdk_types import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
)
from tool_call_closure.providers.streaming import TurnAccumulator
from tool_call_closure.values import CallRecord, Rejection, Snapshot, call_records

__all__ = [
    "FORMAT",
    "PROVIDER",
    "ChatStream",
    "Stream",
    "assistant_message",
    "check_messages",
    "ingest",
    "next_messages",
    "next_request",
    "preflight",
    "render_records",
    "render_tool_results",
]

FORMAT: Final = "openai_chat"
"""The export format this module renders (``spec/machine.json``)."""
PROVIDER: Final = "openai_chat"
"""The ``provider`` of the calls this module ingests."""

TRUNCATED: Final = "the model's output was cut before this call was complete (finish_reason {reason!r})"
CUT: Final = "the stream ended before this call was complete (no finish_reason)"


def _message_of(value: object) -> tuple[object, str | None]:
    """(the assistant message, finish_reason) of a completion, a choice or a message."""
    choices = field(value, "choices")
    if choices is not None:
        listed = items(choices, "openai_chat: the choices")
        if not listed:
            return None, None
        value = listed[0]  # n > 1: the other choices are alternatives, reported as skipped by ingest
    if field(value, "message") is not None:
        return field(value, "message"), text(field(value, "finish_reason"))
    return value, None


def _function_call(entry: object, reason: str | None) -> ToolCall:
    call_id = field(entry, "id")
    if text(field(entry, "type")) == "custom":  # a custom tool takes free text, not JSON
        custom = field(entry, "custom")
        raw = field(custom, "input")
        given = "" if raw is None else text(raw)
        free = (given, given, None) if given is not None else (None, "", f"the input is {described(raw)}, not text")
        return make_call(PROVIDER, call_id, field(custom, "name"), free, reason)
    function = field(entry, "function")
    return make_call(PROVIDER, call_id, field(function, "name"), text_arguments(field(function, "arguments")), reason)


_CALL_KINDS: Final = ("function", "custom")  # a Chat tool call's type (a malformed one is a call with a problem)
_MESSAGE_FIELDS: Final = ("tool_calls", "content", "refusal")  # an assistant message has at least one of them
_EXPECTED: Final = "a ChatCompletion, a choice, an assistant message or a list of tool calls"


def _is_list(value: object) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes | bytearray)


def ingest(value: object) -> Ingested:
    """The calls of a ``ChatCompletion`` (its first choice), a choice, an assistant message or a ``tool_calls`` list.

    The message's text and refusal are reported as skipped items with index ``-1``.
    """
    if _is_list(value):
        entries, message, finish = items(value, "openai_chat.ingest"), None, None
    else:
        require_fields(value, ("choices", "message", *_MESSAGE_FIELDS), "openai_chat.ingest", _EXPECTED)
        message, finish = _message_of(value)
        if message is not None:  # a completion without choices has no message: nothing to read
            require_fields(message, _MESSAGE_FIELDS, "openai_chat.ingest", "an assistant message in the choice")
        entries = items(field(message, "tool_calls"), "openai_chat.ingest: the message's tool_calls")
        content = field(message, "content")
        if _is_list(content):  # content parts
            for index, part in enumerate(items(content, "openai_chat.ingest: the message's content")):
                refuse_foreign_call(part, f"content part {index}", "openai_chat.ingest")
        elif content is not None and text(content) is None:  # a Gemini candidate's Content, say
            raise UsageError(
                f"openai_chat.ingest: the message's content is {described(content)}, not text or content parts",
                code="provider_value_invalid",
            )
    skipped = [
        SkippedItem(-1, kind, f"the message's {kind} is not a tool call")
        for kind in ("content", "refusal")
        if present(field(message, kind))
    ]
    alternatives = [] if _is_list(value) else items(field(value, "choices"))[1:]
    skipped += [
        SkippedItem(index, "choice", "only the first choice is ingested: ingest another choice on its own")
        for index, _ in enumerate(alternatives, start=1)
    ]
    for index, entry in enumerate(entries):
        if text(field(entry, "type")) not in _CALL_KINDS and field(entry, "function") is None:  # not a Chat call
            refuse_foreign_call(entry, f"tool call {index}", "openai_chat.ingest")
    calls = [_function_call(entry, None) for entry in entries]
    if calls and finish == "length":
        calls[-1] = calls[-1].with_problem(TRUNCATED.format(reason=finish))
    return Ingested.of(calls, skipped, finish)


# --------------------------------------------------------------------------- streaming


class _Fragment(NamedTuple):
    """One ``ChoiceDeltaToolCall`` as read, before anything is taken from it."""

    slot: int | None  # its index field
    id: str | None
    name: str
    arguments: str
    problem: str | None


@dataclass(slots=True)
class _Partial:
    id: str
    name: str = ""
    arguments: list[str] = dataclass_field(default_factory=list)
    problem: str | None = None


def _read_fragment(fragment: object, where: str) -> _Fragment:
    index = int_or_none(field(fragment, "index"), f"ChatStream.add: {where}.index")
    function = field(fragment, "function")
    problem = None
    read: list[str] = []
    for what, raw in (("id", field(fragment, "id")), ("name", field(function, "name"))):
        value = text(raw)
        read.append(value or "")
        if raw is not None and value is None:
            problem = problem or f"a fragment's {what} is {described(raw)}, not text"
    raw_arguments = field(function, "arguments")
    arguments = text(raw_arguments)
    if raw_arguments is not None and arguments is None:
        problem = problem or f"an arguments fragment is {described(raw_arguments)}, not JSON text"
    return _Fragment(index, read[0] or None, read[1], arguments or "", problem)


class _Chunk(NamedTuple):
    """What one chunk holds for the stream's choice, read and checked before any of it is taken."""

    id: str | None
    content: str
    refusal: str
    fragments: list[_Fragment]
    finish_reason: str | None


def _chunk_text(raw: object, what: str) -> str | None:
    """A text field of a chunk: ``None`` when missing; anything but text refuses the chunk."""
    return text_or_none(raw, f"ChatStream.add: {what}")


def _read_chunk(chunk: object, choice_index: int) -> _Chunk:
    chunk_id = _chunk_text(field(chunk, "id"), "the chunk's id")
    content, refusal, finish = "", "", None
    fragments: list[_Fragment] = []
    for number, choice in enumerate(items(field(chunk, "choices"), "ChatStream.add: the chunk's choices")):
        index = int_or_none(field(choice, "index"), f"ChatStream.add: choices[{number}].index") or 0
        if index != choice_index:
            continue
        delta = field(choice, "delta")
        content += _chunk_text(field(delta, "content"), f"choices[{number}].delta.content") or ""
        refusal += _chunk_text(field(delta, "refusal"), f"choices[{number}].delta.refusal") or ""
        finish = _chunk_text(field(choice, "finish_reason"), f"choices[{number}].finish_reason") or finish
        where = f"choices[{number}].delta.tool_calls"
        listed = items(field(delta, "tool_calls"), f"ChatStream.add: {where}")
        fragments += [_read_fragment(fragment, f"{where}[{n}]") for n, fragment in enumerate(listed)]
    return _Chunk(chunk_id, content, refusal, fragments, finish)


class ChatStream(TurnAccumulator):
    """Accumulates ``ChatCompletionChunk`` deltas (SDK objects or dicts) of one choice into calls.

    ``add(chunk)`` for every chunk, then ``finish()``.  Chat streams mark no
    end of a single call, so every call is complete only at ``finish()``.
    """

    __slots__ = ("_at_index", "_calls", "_choice", "_content", "_id", "_refusal")
    READER = "ChatStream"
    CUT = "no finish_reason"

    def __init__(self, choice: int = 0) -> None:
        super().__init__()
        self._choice = choice
        self._id: str | None = None  # the completion's id, from its first chunk that has one
        self._calls: list[_Partial] = []
        self._at_index: dict[int, int] = {}  # delta index -> position in _calls of the call now at that index
        self._content: list[str] = []
        self._refusal: list[str] = []

    def add(self, chunk: object) -> tuple[ToolCall, ...]:
        """Take one chunk; returns the calls it completed (always none for Chat: see ``finish``).

        A chunk of another completion (another ``id``), or one whose
        structure is not a chunk's, raises :class:`.UsageError` and is not taken.
        """
        refuse_foreign_event(chunk, "openai_chat", "ChatStream.add")
        read = _read_chunk(chunk, self._choice)
        if read.id is not None and self._id is not None and read.id != self._id:
            raise UsageError(
                f"ChatStream.add: the chunk is of completion {read.id[:80]!r}, this stream accumulates "
                f"{self._id[:80]!r}: use one ChatStream per completion",
                code="provider_value_invalid",
            )
        self._id = self._id or read.id
        if self._turn.ended and (read.content or read.refusal or read.fragments):
            self._turn.out_of_order("a chunk with content or tool calls after the finish_reason")
        if read.content:
            self._content.append(read.content)
        if read.refusal:
            self._refusal.append(read.refusal)
        for fragment in read.fragments:
            self._fragment(fragment)
        if read.finish_reason is not None:
            if self._turn.ended and read.finish_reason != self._turn.stop_reason:
                self._turn.out_of_order("a second, different finish_reason")
            self._turn.end(read.finish_reason)
        return ()

    def _fragment(self, fragment: _Fragment) -> None:
        index = fragment.slot
        position = self._at_index.get(index) if index is not None else (len(self._calls) - 1 if self._calls else None)
        if fragment.id is not None and (position is None or self._calls[position].id != fragment.id):
            if position is not None and self._calls[position].id == "":
                self._turn.out_of_order(f"call {fragment.id[:80]!r} announced after a fragment that continued it")
            self._calls.append(_Partial(fragment.id))
            position = len(self._calls) - 1
            if index is not None:
                self._at_index[index] = position
        elif position is None:  # a continuation of nothing: kept without an id, then reported as skipped
            self._calls.append(_Partial(""))
            position = len(self._calls) - 1
            if index is not None:
                self._at_index[index] = position
        partial = self._calls[position]
        if fragment.name and fragment.name != partial.name:  # some servers repeat the whole name in every fragment
            partial.name += fragment.name
        if fragment.arguments:
            partial.arguments.append(fragment.arguments)
        partial.problem = partial.problem or fragment.problem

    def _calls_so_far(self) -> list[ToolCall]:
        """Every call, in order.  Chat marks no end of a single call: only the last can be cut (by the stream's
        end, or by the output limit), so the calls before it are complete."""
        calls: list[ToolCall] = []
        for position, partial in enumerate(self._calls):
            reason = None
            if position == len(self._calls) - 1:
                if not self._turn.ended:
                    reason = CUT
                elif self._turn.stop_reason == "length":
                    reason = TRUNCATED.format(reason="length")
            arguments = text_arguments("".join(partial.arguments))
            calls.append(make_call(PROVIDER, partial.id, partial.name, arguments, partial.problem or reason))
        return calls

    def _skipped_items(self) -> list[SkippedItem]:
        return [
            SkippedItem(-1, kind, f"the message's {kind} is not a tool call")
            for kind, pieces in (("content", self._content), ("refusal", self._refusal))
            if pieces
        ]

    def assistant_message(self) -> ChatCompletionAssistantMessageParam:
        """The assistant turn as streamed: its text, refusal and every call with an id, for the next request."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._content) or None}
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        tool_calls = [
            {"id": p.id, "type": "function", "function": {"name": p.name, "arguments": "".join(p.arguments)}}
            for p in self._calls
            if p.id
        ]
        if tool_calls:
            message["tool_calls"] = tool_calls
        typed: ChatCompletionAssistantMessageParam = message  # type: ignore[assignment,unused-ignore]  # its SDK type
        return typed


def render_records(calls: Sequence[CallRecord], memo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """ADP-4: ``{"role": "tool", "tool_call_id", "content"}`` per decided call, in announcement order.

    A tool message is text only: a success made of parts (D22) has its text
    parts, and a note per media part, which :func:`next_messages` sends in a
    user message after the tool messages (``media_from=snapshot``); with
    ``text_only_tool_results=True`` the closure records a ``media_moved``
    diagnostic for each such success (D26).
    """
    return [
        {"role": "tool", "tool_call_id": call_id, "content": result if isinstance(result, str) else chat_text(result)}
        for call_id, _name, _state, result in export_rows(calls, memo)  # rendered once per snapshot (ADP-5)
    ]


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """:func:`render_records` of a snapshot's calls."""
    return render_records(call_records(snapshot))


# --------------------------------------------------------------------------- the next request


def _echo(call: object) -> dict[str, Any]:
    """One tool call as the assistant message of the next request carries it (the model's own text, as sent)."""
    if isinstance(call, ToolCall):
        return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json}}
    if text(field(call, "type")) == "custom":
        custom = field(call, "custom")
        return {
            "id": field(call, "id"),
            "type": "custom",
            "custom": {"name": field(custom, "name"), "input": field(custom, "input")},
        }
    function = field(call, "function")
    _, arguments, _ = text_arguments(field(function, "arguments"))  # text as sent; an object as its JSON text
    return {
        "id": field(call, "id"),
        "type": "function",
        "function": {"name": field(function, "name"), "arguments": arguments},
    }


def assistant_message(source: object) -> ChatCompletionAssistantMessageParam:
    """The assistant message that announced the calls, as a request parameter.

    ``source`` is what the model returned (a ``ChatCompletion``, a choice, its
    message — SDK objects or dicts), a :class:`ChatStream` (its whole turn:
    text, refusal and calls), or the ingested calls of a stream (the calls
    alone).  Every call is echoed with its id, name and raw arguments text,
    the incomplete ones included: each gets a result.
    """
    if isinstance(source, ChatStream):
        return source.assistant_message()
    ingest(source)  # the turn ingest reads: another provider's value is refused here too
    if _is_list(source):
        content, calls = None, items(source)
    else:
        message, _ = _message_of(source)
        content = field(message, "content")
        calls = items(field(message, "tool_calls"))
    tool_calls = [_echo(call) for call in calls]
    message_param: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message_param["tool_calls"] = tool_calls
    typed: ChatCompletionAssistantMessageParam = message_param  # type: ignore[assignment,unused-ignore]  # its SDK type
    return typed


MISSING_RESULTS: Final = (
    "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "
    "The following tool_call_ids did not have response messages: {ids}"
)
NO_MATCHING_CALL: Final = (
    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
)
DUPLICATE_RESULT: Final = (
    "Invalid parameter: Duplicate value for 'tool_call_id' of '{id}', in messages[{first}] and messages[{second}]."
)


def _refuse_tool_media(message: object, index: int) -> None:
    """D22: a tool message's content is text only (Chat has no media slot in it)."""
    content = field(message, "content")
    kind = chat_tool_media(content)
    if kind is not None:
        part = next(i for i, p in enumerate(items(content)) if text(field(p, "type")) != "text")
        raise ProviderRuleError(
            CHAT_TOOL_MEDIA.format(index=index, part=part, kind=kind), provider=PROVIDER, index=index
        )


def check_messages(messages: Sequence[Any]) -> None:
    """Preflight: raise :class:`.ProviderRuleError` with the API's own text where Chat Completions would refuse.

    The rule: an assistant message with ``tool_calls`` is followed directly
    by one ``role: "tool"`` message per call id, and a tool message answers a
    call of the assistant message right before its run of tool messages.  A
    call or a tool message without a text id raises :class:`.UsageError` naming it.
    A tool message whose content has a part other than text (an image, a
    file) is refused with the reason (D22): media go in a user message.
    """
    refuse_foreign_turns(messages, "openai_chat", "openai_chat.check_messages", "messages")
    pending: dict[str, None] = {}  # ids still owed, in announcement order
    answered: dict[str, int] = {}  # id -> the index of the tool message that answered it
    owner = -1  # the index of the assistant message whose calls are pending
    for index, message in enumerate(items(messages)):
        role = text(field(message, "role"))
        if role == "tool":
            call_id = required_id(message, "tool_call_id", f"openai_chat.check_messages: messages[{index}]")
            if call_id in answered:
                raise ProviderRuleError(
                    DUPLICATE_RESULT.format(id=call_id, first=answered[call_id], second=index),
                    provider=PROVIDER,
                    index=index,
                )
            if call_id not in pending:
                raise ProviderRuleError(NO_MATCHING_CALL, provider=PROVIDER, index=index)
            _refuse_tool_media(message, index)
            del pending[call_id]
            answered[call_id] = index
            continue
        if pending:
            raise ProviderRuleError(MISSING_RESULTS.format(ids=", ".join(pending)), provider=PROVIDER, index=owner)
        answered = {}
        calls = items(field(message, "tool_calls"), f"messages[{index}].tool_calls") if role == "assistant" else []
        pending = {
            required_id(call, "id", f"openai_chat.check_messages: messages[{index}].tool_calls[{position}]"): None
            for position, call in enumerate(calls)
        }
        owner = index
    if pending:
        raise ProviderRuleError(MISSING_RESULTS.format(ids=", ".join(pending)), provider=PROVIDER, index=owner)


def next_messages(
    assistant: object,
    tool_messages: Sequence[ChatCompletionToolMessageParam],
    *,
    media_from: Snapshot | Rejection | None = None,
) -> list[ChatCompletionMessageParam]:
    """What follows the history in the next request: the assistant message echoing the calls, then the results.

    ``assistant`` is the completion (or its choice or message) or, for a
    stream, the :class:`ChatStream` (its text is echoed too); ``tool_messages``
    is ``closure.to_openai_chat_completions(snapshot)``.  ``media_from`` is
    that snapshot when its results hold images or files (content parts, D22):
    a tool message is text only, so they follow in one user message right
    after the tool messages (the tool messages' notes say so).  A closure made
    with ``ToolCallClosure(text_only_tool_results=True)`` records each such
    success on the snapshot as a ``media_moved`` diagnostic (D26), so the
    move is on record.  The list is checked with :func:`check_messages`
    before it is returned.
    """
    messages: list[Any] = [assistant_message(assistant), *items(tool_messages, "openai_chat.next_messages")]
    if media_from is not None and not isinstance(media_from, Snapshot):
        raise UsageError("openai_chat.next_messages: media_from must be a snapshot", code="provider_value_invalid")
    media = None if media_from is None else chat_media_message(media_from)
    if media is not None:
        messages.append(media)
    check_messages(messages)
    return messages


# The provider contract (providers.contract): the same names in every provider module.
Stream = ChatStream
next_request = next_messages
preflight = check_messages
