"""AWS Bedrock Converse (boto3): ingestion of ``toolUse`` blocks and stream events, one ``toolResult`` per call.

Theory of operation
-------------------
boto3 returns plain dicts, so this module reads dicts (and anything with the
same fields).

*Ingestion* (:func:`ingest`) reads a ``converse`` response
(``{"output": {"message": …}, "stopReason"}``), its message, or the message's
``content`` list, and pairs on each ``toolUse`` block's ``toolUseId``.  Other
blocks (``text``, ``reasoningContent`` …) are skipped with their reason.  When
the response stopped on ``max_tokens`` and its last block is a ``toolUse``,
that call was cut; when it stopped on ``malformed_tool_use``, Bedrock does not
say which call was malformed, so every call of the turn carries a ``problem``.
The ``input`` is already parsed (:mod:`.arguments` bounds it).

*Streaming* (:class:`BedrockStream`): ``converse_stream`` events;
``contentBlockStart`` carries the ``toolUseId`` and name, the input arrives as
string fragments in ``contentBlockDelta.delta.toolUse.input``, joined and
parsed at ``contentBlockStop``, which completes the call.  Text and
reasoning blocks have no start event: their first delta opens them.  The
turn ends with ``messageStop``; a block never stopped carries a ``problem``
naming the stop reason when there is one, and a stream that ends before
``messageStop`` is *unfinished* (:mod:`.streaming`: by default every call
is answered, none run).  A delta for a block already stopped (a stop that
came before its deltas), a ``toolUse`` delta before its start, a block
started or stopped twice, a second ``messageStart`` or a content event
after ``messageStop`` puts the stream *out of order* (Converse events carry
no id that would tell two streams apart).  The text, reasoning (with its
signature) and ``toolUse`` blocks are kept in order, so
:meth:`BedrockStream.assistant_message` (and :func:`next_messages` given
the stream) echoes the assistant turn as it was.

*Next request* (:func:`next_messages`): the assistant turn, then one user
turn holding every ``toolResult`` and then the ``then=`` content (a new user
message goes into that same user turn: Converse requires the roles to
alternate).

*Export* (:func:`render_tool_results`): ``{"toolResult": {"toolUseId",
"content": [{"text": …}], "status"?: "error"}}`` per decided call: the content
list is never empty (Bedrock refuses an empty one with ``status: "error"``),
and ``status: "error"`` marks every failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final, NamedTuple

from tool_call_closure.providers.arguments import make_call, parsed_arguments, text_arguments
from tool_call_closure.providers.calls import Ingested, ProviderRuleError, SkippedItem, ToolCall
from tool_call_closure.providers.parts_render import (
    BEDROCK_NO_MEDIA,
    bedrock_content,
    bedrock_media,
    bedrock_media_kind,
)
from tool_call_closure.providers.reading import (
    described,
    field,
    incomplete_problem,
    int_or_none,
    items,
    refuse_foreign_call,
    refuse_foreign_event,
    refuse_foreign_turns,
    require_fields,
    required_id,
    text,
    text_or_none,
)
from tool_call_closure.providers.result_text import export_rows
from tool_call_closure.providers.sdk_types import BedrockContentBlock, BedrockMessage
from tool_call_closure.providers.streaming import TurnAccumulator
from tool_call_closure.values import CallRecord, Snapshot, call_records

__all__ = [
    "FORMAT",
    "PROVIDER",
    "BedrockStream",
    "Stream",
    "check_messages",
    "ingest",
    "next_messages",
    "next_request",
    "preflight",
    "render_records",
    "render_tool_results",
]

FORMAT: Final = "bedrock"
"""The export format this module renders (``spec/machine.json``)."""
PROVIDER: Final = "bedrock"
"""The ``provider`` of the calls this module ingests."""


def _call(tool_use: object, problem: str | None = None) -> ToolCall:
    return make_call(
        PROVIDER,
        field(tool_use, "toolUseId"),
        field(tool_use, "name"),
        parsed_arguments(field(tool_use, "input")),
        problem,
    )


def _block_kind(block: object) -> str:
    """A content block's kind: its one key (boto3's blocks are dicts with one key)."""
    if type(block) is dict and block:
        return text(next(iter(block))) or "unknown"
    return "unknown"


_EXPECTED: Final = "a Converse response (output.message), its message or its content list"


def ingest(value: object) -> Ingested:
    """The ``toolUse`` blocks of a Converse response, its message, or its content list."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        content, stop = items(value, "bedrock.ingest"), None
    else:
        stop = text(field(value, "stopReason"))
        message = field(field(value, "output"), "message") or value
        require_fields(message, ("content",), "bedrock.ingest", _EXPECTED)
        refuse_foreign_call(message, "the message", "bedrock.ingest")
        content = items(field(message, "content"), "bedrock.ingest: the message's content")
    calls: list[ToolCall] = []
    skipped: list[SkippedItem] = []
    for index, block in enumerate(content):
        tool_use = field(block, "toolUse")
        if tool_use is None:
            refuse_foreign_call(block, f"item {index}", "bedrock.ingest")
            kind = _block_kind(block)
            skipped.append(SkippedItem(index, kind, f"a {kind} block is not a tool call"))
            continue
        problem = None
        if stop == "malformed_tool_use":
            problem = "the response stopped on malformed_tool_use (Bedrock does not say which call)"
        elif stop == "max_tokens" and index == len(content) - 1:
            problem = "the response stopped on max_tokens inside this call"
        calls.append(_call(tool_use, problem))
    return Ingested.of(calls, skipped, stop)


# --------------------------------------------------------------------------- streaming


@dataclass(slots=True)
class _Block:
    """One content block of the streamed message: its kind, what its echo carries, and for a call its input."""

    kind: str
    id: object = None
    name: object = None
    pieces: dict[str, str] = dataclass_field(default_factory=dict)  # text, reasoning text and signature so far
    input: list[str] = dataclass_field(default_factory=list)
    redacted: bytes | str | None = None  # a reasoning block's redactedContent, as the SDK gave it
    stopped: bool = False
    call: ToolCall | None = None
    problem: str | None = None


def _index(value: object, event: str) -> int:
    return int_or_none(field(value, "contentBlockIndex"), f"BedrockStream.add: {event}.contentBlockIndex") or 0


def _delta_kind(delta: object) -> str:
    for kind in ("toolUse", "text", "reasoningContent"):
        if field(delta, kind) is not None:
            return kind
    return _block_kind(delta)


class _Delta(NamedTuple):
    """One ``contentBlockDelta`` as read, before anything is taken from it."""

    kind: str  # toolUse, text, reasoningContent, or another block's kind
    pieces: dict[str, str]  # the text (a toolUse's input, a text, a reasoning text or signature) by its key
    redacted: bytes | str | None  # a reasoning delta's redactedContent
    problem: str | None  # a toolUse input fragment that is not text


def _read_delta(delta: object) -> _Delta:
    kind = _delta_kind(delta)
    value = field(delta, kind)
    if kind == "toolUse":
        raw = field(value, "input")
        problem = (
            f"an input fragment is {described(raw)}, not JSON text" if raw is not None and text(raw) is None else None
        )
        return _Delta(kind, {"input": text(raw) or ""}, None, problem)
    named = {"text": value} if kind == "text" else {key: field(value, key) for key in ("text", "signature")}
    pieces = {key: text_or_none(raw, f"BedrockStream.add: a {kind} delta's {key}") for key, raw in named.items()}
    redacted = field(value, "redactedContent") if kind == "reasoningContent" else None
    kept = {key: piece for key, piece in pieces.items() if piece is not None}
    return _Delta(kind, kept, redacted if isinstance(redacted, bytes | str) else None, None)


class BedrockStream(TurnAccumulator):
    """Accumulates ``converse_stream`` events into calls and the whole assistant turn.

    ``add(event)`` returns the call a ``contentBlockStop`` completed;
    ``finish()`` returns every call, incomplete ones with a ``problem``.
    """

    __slots__ = ("_blocks", "_started")
    READER = "BedrockStream"
    CUT = "no messageStop"

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, _Block] = {}  # contentBlockIndex -> its block, in the order they opened
        self._started = False

    def add(self, event: object) -> tuple[ToolCall, ...]:
        """Take one event; returns the call it completed, if any.

        An event whose fields have the wrong types raises :class:`.UsageError`
        and is not taken: every field is read before anything is taken.
        """
        refuse_foreign_event(event, "bedrock", "BedrockStream.add")
        start, delta, stop = (
            field(event, key) for key in ("contentBlockStart", "contentBlockDelta", "contentBlockStop")
        )
        if field(event, "messageStart") is not None:
            if self._started or self._blocks:
                self._turn.out_of_order("a second messageStart")
            self._started = True
        elif start is not None:
            tool_use = field(field(start, "start"), "toolUse")
            opened = (
                None if tool_use is None else _Block("toolUse", field(tool_use, "toolUseId"), field(tool_use, "name"))
            )
            self._start(_index(start, "contentBlockStart"), opened)
        elif delta is not None:
            index, read = _index(delta, "contentBlockDelta"), _read_delta(field(delta, "delta"))
            self._delta(index, read)
        elif stop is not None:
            return self._stop(_index(stop, "contentBlockStop"))
        elif field(event, "messageStop") is not None:
            where = "BedrockStream.add: messageStop.stopReason"
            self._turn.end(text_or_none(field(field(event, "messageStop"), "stopReason"), where))
        return ()

    def _after_stop(self) -> None:
        if self._turn.ended:
            self._turn.out_of_order("a content block event after messageStop")

    def _start(self, index: int, opened: _Block | None) -> None:
        self._after_stop()
        if index in self._blocks:
            self._turn.out_of_order(f"block {index} started twice")
        elif opened is not None:
            self._blocks[index] = opened

    def _delta(self, index: int, delta: _Delta) -> None:
        self._after_stop()
        kind = delta.kind
        block = self._blocks.get(index)
        if block is None and kind != "toolUse":  # text and reasoning blocks open with their first delta
            block = self._blocks[index] = _Block(kind)
            self._skipped.append(SkippedItem(index, kind, f"a {kind} block is not a tool call"))
        if block is None or block.stopped or block.kind != kind:
            where = (
                "before its contentBlockStart"
                if block is None
                else ("after its contentBlockStop" if block.stopped else f"of a {block.kind} block")
            )
            self._turn.out_of_order(f"a {kind} delta for block {index} {where}")
        elif kind == "toolUse":
            block.input.append(delta.pieces["input"])
            block.problem = block.problem or delta.problem
        else:
            for key, piece in delta.pieces.items():
                block.pieces[key] = block.pieces.get(key, "") + piece
            block.redacted = delta.redacted if delta.redacted is not None else block.redacted

    def _stop(self, index: int) -> tuple[ToolCall, ...]:
        self._after_stop()
        block = self._blocks.get(index)
        if block is None:  # an empty block's stop: kept, so a delta after it is seen to come out of order
            self._blocks[index] = _Block("unknown", stopped=True)
            return ()
        if block.stopped:
            self._turn.out_of_order(f"block {index} stopped twice")
            return ()
        block.stopped = True
        if block.kind != "toolUse":
            return ()
        block.call = make_call(PROVIDER, block.id, block.name, text_arguments("".join(block.input)), block.problem)
        return (block.call,)

    def _calls_so_far(self) -> list[ToolCall]:
        """Every toolUse block, in the order they opened; one never stopped carries a ``problem``."""
        cause = incomplete_problem(self._turn.stop_reason)
        calls = [
            block.call
            if block.call is not None
            else make_call(PROVIDER, block.id, block.name, text_arguments("".join(block.input)), block.problem or cause)
            for block in self._blocks.values()
            if block.kind == "toolUse"
        ]
        return calls

    def assistant_message(self) -> BedrockMessage:
        """The assistant turn as streamed: its text, reasoning and ``toolUse`` blocks, in order."""
        content: list[dict[str, Any]] = []
        for block in self._blocks.values():
            if block.kind == "toolUse":
                arguments = block.call.arguments if block.call is not None else None
                tool_use = {
                    "toolUseId": block.id,
                    "name": block.name,
                    "input": arguments if arguments is not None else {},
                }
                content.append({"toolUse": tool_use})
            elif block.kind == "text" and block.pieces.get("text"):
                content.append({"text": block.pieces["text"]})
            elif block.kind == "reasoningContent":
                content.append({"reasoningContent": _reasoning(block)})
        typed: BedrockMessage = {"role": "assistant", "content": content}  # type: ignore[typeddict-item,unused-ignore]
        return typed


def _reasoning(block: _Block) -> dict[str, Any]:
    if block.redacted is not None:
        return {"redactedContent": block.redacted}
    reasoning_text = {"text": block.pieces.get("text", "")}
    if "signature" in block.pieces:
        reasoning_text["signature"] = block.pieces["signature"]
    return {"reasoningText": reasoning_text}


def render_records(
    calls: Sequence[CallRecord], memo: dict[str, Any] | None = None, *, media: bool = True
) -> list[dict[str, Any]]:
    """``{"toolResult": {"toolUseId", "content": [{"text"}], "status"?: "error"}}`` per decided call.

    A success made of parts (D22) has ``text``, ``json``, ``image`` and
    ``document`` blocks (:mod:`.parts_render`); ``media=False`` (a model that
    refuses media in a tool result) writes a note for each image and PDF instead.
    """
    media = bedrock_media(media)
    payload: list[dict[str, Any]] = []
    for call_id, _name, state, result in export_rows(calls, memo):  # rendered once per snapshot (ADP-5)
        content = [{"text": result}] if isinstance(result, str) else bedrock_content(result, media=media)
        tool_result: dict[str, Any] = {"toolUseId": call_id, "content": content}
        if state != "success":
            tool_result["status"] = "error"
        payload.append({"toolResult": tool_result})
    return payload


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """:func:`render_records` of a snapshot's calls."""
    return render_records(call_records(snapshot))


# --------------------------------------------------------------------------- the next request


def _assistant_message(source: object) -> dict[str, Any]:
    """The assistant turn: a Converse response's message, the message itself, a stream's, or rebuilt calls."""
    if isinstance(source, BedrockStream):
        return dict(source.assistant_message())
    ingest(source)  # the turn ingest reads: another provider's value is refused here too
    if isinstance(source, Sequence) and not isinstance(source, str | bytes):
        return {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.arguments if c.problem is None else {}}}
                if isinstance(c, ToolCall)
                else c
                for c in items(source)
            ],
        }
    message = field(field(source, "output"), "message") or source
    return {"role": text(field(message, "role")) or "assistant", "content": items(field(message, "content"))}


TOO_MANY_RESULTS: Final = "The number of toolResult blocks exceeds the number of toolUse blocks of previous turn."
MISSING_RESULTS: Final = "Expected toolResult blocks at messages.{index}.content for the following Ids: {ids}"
EMPTY_ERROR: Final = "messages.{index}.content.{block}: toolResult cannot be empty when status value is error"
ALTERNATE: Final = (
    "A conversation must alternate between user and assistant roles. Make sure the conversation alternates between "
    "user and assistant roles and try again."
)


def _use_id(value: object, index: int, position: int, what: str) -> str:
    """A ``toolUseId``, refused unless it is text (Converse refuses it too)."""
    return required_id(value, "toolUseId", f"bedrock.check_messages: messages[{index}].content[{position}].{what}")


def check_messages(messages: Sequence[Any], *, media: bool = True) -> None:
    """Preflight: raise :class:`.ProviderRuleError` with the API's own text where Converse would refuse.

    The rule: the user turn after an assistant turn with ``toolUse`` blocks
    carries one ``toolResult`` per ``toolUseId`` (never more), and an error
    result's content is not empty; and user and assistant turns alternate
    (two user turns in a row are refused even when each is valid alone).
    A block without a text ``toolUseId`` raises :class:`.UsageError` naming it.
    ``media=False`` (a model that refuses media in a tool result) also refuses
    an ``image`` or ``document`` block in a ``toolResult``, saying why (D22).
    """
    media = bedrock_media(media)
    refuse_foreign_turns(messages, "bedrock", "bedrock.check_messages", "messages")
    listed = items(messages, "bedrock.check_messages")
    uses: list[str] = []
    roles = [text(field(message, "role")) for message in listed]
    for index, message in enumerate(listed):
        if index > 0 and roles[index] is not None and roles[index] == roles[index - 1]:
            raise ProviderRuleError(ALTERNATE, provider=PROVIDER, index=index)
        blocks = items(field(message, "content"), f"bedrock.check_messages: messages[{index}].content")
        answered: list[str] = []
        for position, block in enumerate(blocks):
            result = field(block, "toolResult")
            if result is None:
                continue
            answered.append(_use_id(result, index, position, "toolResult"))
            content = items(field(result, "content"), f"bedrock.check_messages: messages[{index}].content")
            kind = None if media else bedrock_media_kind(content)
            if kind is not None:
                problem = BEDROCK_NO_MEDIA.format(index=index, block=position, kind=kind)
                raise ProviderRuleError(problem, provider=PROVIDER, index=index)
            empty = not content
            if text(field(result, "status")) == "error" and empty:
                raise ProviderRuleError(EMPTY_ERROR.format(index=index, block=position), provider=PROVIDER, index=index)
        if len(answered) > len(uses):
            raise ProviderRuleError(TOO_MANY_RESULTS, provider=PROVIDER, index=index)
        missing = [use for use in uses if use not in answered]
        if missing:
            raise ProviderRuleError(
                MISSING_RESULTS.format(index=index, ids=", ".join(missing)), provider=PROVIDER, index=index
            )
        uses = [
            _use_id(field(block, "toolUse"), index, position, "toolUse")
            for position, block in enumerate(blocks)
            if field(block, "toolUse") is not None
        ]
    if uses:
        index = len(listed)
        raise ProviderRuleError(
            MISSING_RESULTS.format(index=index, ids=", ".join(uses)), provider=PROVIDER, index=index
        )


def next_messages(
    assistant: object,
    tool_results: Sequence[BedrockContentBlock],
    *,
    then: str | Sequence[BedrockContentBlock] = (),
    media: bool = True,
) -> list[BedrockMessage]:
    """The assistant turn, then one user turn: every ``toolResult`` first, then any new user content.

    ``assistant`` is the ``converse`` response (or its message), the
    :class:`BedrockStream` it was streamed into (its whole turn), or the
    ingested calls of a stream (the calls alone); ``tool_results`` is
    ``closure.to_bedrock_tool_results(snapshot)``; ``then`` is new user text
    or content blocks, put in the same user turn after the results, as
    Anthropic's ``then=`` is: Converse requires user and assistant turns to
    alternate, so a new user message appended as a turn of its own after
    the results is refused.  Checked with :func:`check_messages` (``media``
    passed on: ``False`` for a model that refuses media in a tool result).
    """
    if isinstance(then, str):
        extra: list[Any] = [{"text": then}] if then else []
    else:
        extra = items(then, "bedrock.next_messages: then")
    results = items(tool_results, "bedrock.next_messages")
    messages: list[Any] = [_assistant_message(assistant), {"role": "user", "content": [*results, *extra]}]
    check_messages(messages, media=media)
    return messages


# The provider contract (providers.contract): the same names in every provider module.
Stream = BedrockStream
next_request = next_messages
preflight = check_messages
