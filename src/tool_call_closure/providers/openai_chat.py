"""OpenAI Chat Completions: ingestion of ``tool_calls``, streamed deltas, and one ``role: "tool"`` message per call.

Theory of operation
-------------------
*Ingestion* (:func:`ingest`) reads a ``ChatCompletion``, one of its choices, its
``message``, or the ``tool_calls`` list — SDK objects or plain dicts — and
pairs on each call's ``id``.  Function-tool arguments are JSON text; custom-tool
input is free text and is carried as is.

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

A call whose arguments are not valid JSON at the end of the stream, and the
last call when the stream stopped on ``finish_reason: "length"`` or never
sent a ``finish_reason`` (a cut stream), carry a ``problem``: they are
announced and answered with an error, never executed.

*Export* (:func:`render_tool_results`): ``{"role": "tool", "tool_call_id", "content"}``
per decided call; the public method types it as the SDK's
``ChatCompletionToolMessageParam`` (:mod:`.sdk_types`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final

from tool_call_closure.errors import UsageError
from tool_call_closure.providers.calls import Ingested, ProviderRuleError, SkippedItem, ToolCall
from tool_call_closure.providers.reading import (
    described,
    field,
    items,
    parse_arguments,
    refuse_foreign_call,
    refuse_foreign_event,
    refuse_foreign_turns,
    require_fields,
)
from tool_call_closure.providers.result_text import export_rows
from tool_call_closure.providers.sdk_types import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
)
from tool_call_closure.values import CallRecord, Snapshot, call_records

__all__ = [
    "FORMAT",
    "PROVIDER",
    "ChatStream",
    "assistant_message",
    "check_messages",
    "ingest",
    "next_messages",
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
        listed = items(choices)
        if not listed:
            return None, None
        value = listed[0]  # n > 1: the other choices are alternatives, reported as skipped by ingest
    if field(value, "message") is not None:
        return field(value, "message"), field(value, "finish_reason")
    return value, None


def _function_call(entry: object, reason: str | None) -> ToolCall:
    kind = field(entry, "type") or "function"
    call_id = field(entry, "id") or ""
    if kind == "custom":  # a custom tool takes free text, not JSON
        custom = field(entry, "custom")
        text = field(custom, "input") or ""
        return ToolCall(call_id, field(custom, "name") or "", text, text, None, PROVIDER)
    function = field(entry, "function")
    text = field(function, "arguments") or ""
    arguments, problem = parse_arguments(text)
    return ToolCall(call_id, field(function, "name") or "", arguments, text, problem or reason, PROVIDER)


_CALL_KINDS: Final = ("function", "custom")  # a Chat tool call's type (a malformed one is a call with a problem)
_MESSAGE_FIELDS: Final = ("tool_calls", "content", "refusal")  # an assistant message has at least one of them
_EXPECTED: Final = "a ChatCompletion, a choice, an assistant message or a list of tool calls"


def ingest(value: object) -> Ingested:
    """The calls of a ``ChatCompletion`` (its first choice), a choice, an assistant message or a ``tool_calls`` list.

    The message's text and refusal are reported as skipped items with index ``-1``.
    """
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        entries, message, finish = list(value), None, None
    else:
        require_fields(value, ("choices", "message", *_MESSAGE_FIELDS), "openai_chat.ingest", _EXPECTED)
        message, finish = _message_of(value)
        if message is not None:  # a completion without choices has no message: nothing to read
            require_fields(message, _MESSAGE_FIELDS, "openai_chat.ingest", "an assistant message in the choice")
        entries = items(field(message, "tool_calls"), "openai_chat.ingest: the message's tool_calls")
        content = field(message, "content")
        if isinstance(content, Sequence) and not isinstance(content, str | bytes):  # content parts
            for index, part in enumerate(content):
                refuse_foreign_call(part, f"content part {index}", "openai_chat.ingest")
        elif content is not None and not isinstance(content, str):  # a Gemini candidate's Content, say
            raise UsageError(
                f"openai_chat.ingest: the message's content is {described(content)}, not text or content parts",
                code="provider_value_invalid",
            )
    skipped = [
        SkippedItem(-1, kind, f"the message's {kind} is not a tool call")
        for kind in ("content", "refusal")
        if field(message, kind)
    ]
    alternatives = items(field(value, "choices"))[1:] if not isinstance(value, Sequence) else []
    skipped += [
        SkippedItem(index, "choice", "only the first choice is ingested: ingest another choice on its own")
        for index, _ in enumerate(alternatives, start=1)
    ]
    for index, entry in enumerate(entries):
        if field(entry, "type") not in _CALL_KINDS and field(entry, "function") is None:  # not a Chat tool call
            refuse_foreign_call(entry, f"tool call {index}", "openai_chat.ingest")
    calls = [_function_call(entry, None) for entry in entries]
    if calls and finish == "length" and calls[-1].problem is None:
        calls[-1] = _with_problem(calls[-1], TRUNCATED.format(reason=finish))
    return Ingested.of(calls, skipped, finish)


def _with_problem(call: ToolCall, problem: str) -> ToolCall:
    return ToolCall(call.id, call.name, None, call.arguments_json, problem, call.provider)


@dataclass(slots=True)
class _Partial:
    id: str
    name: str = ""
    arguments: list[str] = dataclass_field(default_factory=list)


class ChatStream:
    """Accumulates ``ChatCompletionChunk`` deltas (SDK objects or dicts) of one choice into calls.

    ``add(chunk)`` for every chunk, then ``finish()``.  Chat streams mark no
    end of a single call, so every call is complete only at ``finish()``.
    """

    __slots__ = ("_at_index", "_calls", "_choice", "_finish", "_skipped")

    def __init__(self, choice: int = 0) -> None:
        self._choice = choice
        self._calls: list[_Partial] = []
        self._at_index: dict[int, int] = {}  # delta index -> position in _calls of the call now at that index
        self._finish: str | None = None
        self._skipped: list[SkippedItem] = []

    def add(self, chunk: object) -> tuple[ToolCall, ...]:
        """Take one chunk; returns the calls it completed (always none for Chat: see ``finish``)."""
        refuse_foreign_event(chunk, "openai_chat", "ChatStream.add")
        for choice in items(field(chunk, "choices")):
            if (field(choice, "index") or 0) != self._choice:
                continue
            delta = field(choice, "delta")
            if field(delta, "content") and not self._skipped:
                self._skipped.append(SkippedItem(-1, "content", "the message's content is not a tool call"))
            for fragment in items(field(delta, "tool_calls")):
                self._fragment(fragment)
            if field(choice, "finish_reason") is not None:
                self._finish = field(choice, "finish_reason")
        return ()

    def _fragment(self, fragment: object) -> None:
        index = field(fragment, "index")
        call_id = field(fragment, "id")
        position = self._at_index.get(index) if index is not None else (len(self._calls) - 1 if self._calls else None)
        if call_id and (position is None or self._calls[position].id != call_id):
            self._calls.append(_Partial(call_id))
            position = len(self._calls) - 1
            if index is not None:
                self._at_index[index] = position
        elif position is None:  # a continuation of nothing: kept without an id, then reported as skipped
            self._calls.append(_Partial(""))
            position = len(self._calls) - 1
            if index is not None:
                self._at_index[index] = position
        partial = self._calls[position]
        function = field(fragment, "function")
        name = field(function, "name")
        if name and name != partial.name:  # some servers repeat the whole name in every fragment
            partial.name += name
        if field(function, "arguments"):
            partial.arguments.append(field(function, "arguments"))

    def finish(self) -> Ingested:
        """Every call of the stream; incomplete ones (cut, truncated, invalid JSON) carry a ``problem``."""
        calls: list[ToolCall] = []
        for position, partial in enumerate(self._calls):
            text = "".join(partial.arguments)
            arguments, problem = parse_arguments(text)
            last = position == len(self._calls) - 1
            if last and self._finish is None:
                problem, arguments = CUT, None
            elif last and self._finish == "length":
                problem, arguments = TRUNCATED.format(reason="length"), None
            calls.append(ToolCall(partial.id, partial.name, arguments, text, problem, PROVIDER))
        return Ingested.of(calls, self._skipped, self._finish)


def render_records(calls: Sequence[CallRecord], memo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """ADP-4: ``{"role": "tool", "tool_call_id", "content"}`` per decided call, in announcement order."""
    return [
        {"role": "tool", "tool_call_id": call_id, "content": text}
        for call_id, _name, _state, text in export_rows(calls, memo)  # rendered once per snapshot (ADP-5)
    ]


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """:func:`render_records` of a snapshot's calls."""
    return render_records(call_records(snapshot))


# --------------------------------------------------------------------------- the next request


def assistant_message(source: object) -> ChatCompletionAssistantMessageParam:
    """The assistant message that announced the calls, as a request parameter.

    ``source`` is what the model returned (a ``ChatCompletion``, a choice, its
    message — SDK objects or dicts) or, for a stream, the ingested calls
    (``ChatStream.finish().calls``).  Every call is echoed with its id, name
    and raw arguments text, the incomplete ones included: each gets a result.
    """
    ingest(source)  # the turn ingest reads: another provider's value is refused here too
    if isinstance(source, Sequence) and not isinstance(source, str | bytes):
        content, calls = None, list(source)
    else:
        message, _ = _message_of(source)
        content = field(message, "content")
        calls = items(field(message, "tool_calls"))
    tool_calls: list[dict[str, Any]] = []
    for call in calls:
        if isinstance(call, ToolCall):
            tool_calls.append(
                {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments_json}}
            )
        elif (field(call, "type") or "function") == "custom":
            custom = field(call, "custom")
            tool_calls.append(
                {
                    "id": field(call, "id"),
                    "type": "custom",
                    "custom": {"name": field(custom, "name"), "input": field(custom, "input")},
                }
            )
        else:
            function = field(call, "function")
            tool_calls.append(
                {
                    "id": field(call, "id"),
                    "type": "function",
                    "function": {"name": field(function, "name"), "arguments": field(function, "arguments") or ""},
                }
            )
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


def check_messages(messages: Sequence[Any]) -> None:
    """Preflight: raise :class:`.ProviderRuleError` with the API's own text where Chat Completions would refuse.

    The rule: an assistant message with ``tool_calls`` is followed directly
    by one ``role: "tool"`` message per call id, and a tool message answers a
    call of the assistant message right before its run of tool messages.
    """
    refuse_foreign_turns(messages, "openai_chat", "openai_chat.check_messages", "messages")
    pending: dict[str, None] = {}  # ids still owed, in announcement order
    answered: dict[str, int] = {}  # id -> the index of the tool message that answered it
    owner = -1  # the index of the assistant message whose calls are pending
    for index, message in enumerate(messages):
        role = field(message, "role")
        if role == "tool":
            call_id = field(message, "tool_call_id")
            if call_id in answered:
                raise ProviderRuleError(
                    DUPLICATE_RESULT.format(id=call_id, first=answered[call_id], second=index),
                    provider=PROVIDER,
                    index=index,
                )
            if call_id not in pending:
                raise ProviderRuleError(NO_MATCHING_CALL, provider=PROVIDER, index=index)
            del pending[call_id]
            answered[call_id] = index
            continue
        if pending:
            raise ProviderRuleError(MISSING_RESULTS.format(ids=", ".join(pending)), provider=PROVIDER, index=owner)
        answered = {}
        calls = items(field(message, "tool_calls")) if role == "assistant" else []
        pending = {field(call, "id"): None for call in calls}
        owner = index
    if pending:
        raise ProviderRuleError(MISSING_RESULTS.format(ids=", ".join(pending)), provider=PROVIDER, index=owner)


def next_messages(
    assistant: object, tool_messages: Sequence[ChatCompletionToolMessageParam]
) -> list[ChatCompletionMessageParam]:
    """What follows the history in the next request: the assistant message echoing the calls, then the results.

    ``tool_messages`` is ``closure.to_openai_chat_completions(snapshot)``.
    The pair is checked with :func:`check_messages` before it is returned.
    """
    messages: list[Any] = [assistant_message(assistant), *tool_messages]
    check_messages(messages)
    return messages
