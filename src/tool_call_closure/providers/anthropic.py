"""Anthropic Messages: ingestion of ``tool_use`` blocks and stream events, one ``tool_result`` block per call.

Theory of operation
-------------------
*Ingestion* (:func:`ingest`) reads a ``Message`` or its ``content`` list, SDK
objects or dicts, and pairs on each ``tool_use`` block's ``id``.  Its
``input`` is already parsed; :attr:`.ToolCall.arguments_json` is its JSON
text (:mod:`.arguments`: a value with no JSON form, or nested too deep, is
that call's ``problem``).  Text, thinking and server-side tool blocks
(``server_tool_use``, ``web_search_tool_result`` …) are skipped with their
reason.  When the message stopped on ``max_tokens`` and its last block is a
``tool_use``, that call was cut and carries a ``problem``.

*Streaming* (:class:`AnthropicStream`): ``content_block_start`` carries the
id and name with ``input: {}``; the ``input_json_delta`` fragments are joined
and parsed at ``content_block_stop`` (an empty text is ``{}``), which
completes the call.  A block never stopped (a cut stream) or whose JSON does
not parse (``max_tokens`` cut it) carries a ``problem``.  The turn ends with
the ``message_delta`` that carries the ``stop_reason`` (or ``message_stop``);
a stream that ends before it is *unfinished* (:mod:`.streaming`: by default
every call is answered, none run).  A delta for a block not started or
already stopped (a stop that came before its deltas), a block started or
stopped twice, an event after the end, or a ``message_start`` of another
message (the only event that names its message, so the other message's
later events could not be told apart) puts the stream *out of order*.

Every block is kept, in order — text, ``thinking`` with its ``signature``,
``redacted_thinking``, server tool blocks and the calls — so
:meth:`AnthropicStream.assistant_message` (and :func:`next_messages` given
the stream) echoes the assistant turn as it was: extended thinking requires
the thinking blocks, signatures intact, before the ``tool_use`` blocks.

*Export* (:func:`render_tool_results`): ``{"type": "tool_result",
"tool_use_id", "content", "is_error"?}`` per decided call, ``is_error: true``
on every failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final, NamedTuple

from tool_call_closure.providers.arguments import make_call, parsed_arguments, text_arguments
from tool_call_closure.providers.calls import Ingested, ProviderRuleError, SkippedItem, ToolCall
from tool_call_closure.providers.parts_render import anthropic_content
from tool_call_closure.providers.reading import (
    described,
    field,
    incomplete_problem,
    int_or_none,
    items,
    plain,
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
    AnthropicContentBlockParam,
    AnthropicMessageParam,
    AnthropicToolResultBlockParam,
)
from tool_call_closure.providers.streaming import TurnAccumulator
from tool_call_closure.values import CallRecord, Snapshot, call_records

__all__ = [
    "FORMAT",
    "PROVIDER",
    "AnthropicStream",
    "Stream",
    "check_messages",
    "ingest",
    "next_messages",
    "next_request",
    "preflight",
    "render_records",
    "render_tool_results",
]

FORMAT: Final = "anthropic"
"""The export format this module renders (``spec/machine.json``)."""
PROVIDER: Final = "anthropic"
"""The ``provider`` of the calls this module ingests."""


def _skip_reason(kind: str) -> str:
    if kind in ("text", "thinking", "redacted_thinking"):
        return f"a {kind} block is not a tool call"
    return f"a {kind} block is run by the provider and needs no tool_result from the caller"


def _call(block: object, problem: str | None = None) -> ToolCall:
    return make_call(
        PROVIDER, field(block, "id"), field(block, "name"), parsed_arguments(field(block, "input")), problem
    )


def ingest(value: object) -> Ingested:
    """The ``tool_use`` blocks of a ``Message`` or of its ``content`` list."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        content, stop = items(value, "anthropic.ingest"), None
    else:
        require_fields(value, ("content",), "anthropic.ingest", "a Message or a list of its content blocks")
        refuse_foreign_call(value, "the value", "anthropic.ingest")
        content = items(field(value, "content"), "anthropic.ingest: the content")
        stop = text(field(value, "stop_reason"))
    calls: list[ToolCall] = []
    skipped: list[SkippedItem] = []
    for index, block in enumerate(content):
        kind = text(field(block, "type")) or ""
        if kind == "tool_use":
            cut = stop == "max_tokens" and index == len(content) - 1
            calls.append(_call(block, "the message stopped on max_tokens inside this call" if cut else None))
        else:
            refuse_foreign_call(block, f"item {index}", "anthropic.ingest")
            skipped.append(SkippedItem(index, kind, _skip_reason(kind)))
    return Ingested.of(calls, skipped, stop)


# --------------------------------------------------------------------------- streaming

_CALL_BLOCKS: Final = ("tool_use", "server_tool_use", "mcp_tool_use")  # blocks whose input streams as JSON
_DELTA_TEXT: Final = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}
_DELTA_BLOCKS: Final = {  # delta type -> the block types it may extend
    "text_delta": ("text",),
    "thinking_delta": ("thinking",),
    "signature_delta": ("thinking",),
    "input_json_delta": _CALL_BLOCKS,
    "citations_delta": ("text",),
}


class _Delta(NamedTuple):
    """One ``content_block_delta`` as read, before anything is taken from it."""

    kind: str  # the delta's type
    piece: str  # its text, thinking, signature or partial_json
    citation: dict[str, Any] | None  # a citations_delta's citation
    problem: str | None  # an input_json_delta fragment that is not text


def _read_delta(delta: object) -> _Delta:
    kind = text(field(delta, "type")) or ""
    if kind == "citations_delta":
        return _Delta(kind, "", plain(field(delta, "citation"), "AnthropicStream.add", "a citation"), None)
    if kind == "input_json_delta":
        raw = field(delta, "partial_json")
        wrong = raw is not None and text(raw) is None
        problem = f"an input_json_delta fragment is {described(raw)}, not JSON text" if wrong else None
        return _Delta(kind, text(raw) or "", None, problem)
    source = _DELTA_TEXT.get(kind)
    return _Delta(kind, _piece(field(delta, source), source) if source else "", None, None)


@dataclass(slots=True)
class _Block:
    """One content block of the streamed message, as it will be echoed (``echo``) and, for a call, completed."""

    kind: str
    echo: dict[str, Any]
    start_input: Any = None
    json: list[str] = dataclass_field(default_factory=list)
    stopped: bool = False
    call: ToolCall | None = None
    problem: str | None = None  # an input fragment that was not text: the call cannot run


def _start(block: object) -> _Block:
    """The block a ``content_block_start`` opens, with the fields its echo carries."""
    kind = text(field(block, "type")) or ""
    if kind in _CALL_BLOCKS:
        echo = {"type": kind, "id": field(block, "id"), "name": field(block, "name"), "input": {}}
        return _Block(kind, echo, field(block, "input"))
    if kind == "text":
        return _Block(kind, {"type": "text", "text": _piece(field(block, "text"), "text")})
    if kind == "thinking":
        thinking = _piece(field(block, "thinking"), "thinking")
        return _Block(
            kind,
            {"type": "thinking", "thinking": thinking, "signature": _piece(field(block, "signature"), "signature")},
        )
    return _Block(kind, plain(block, "AnthropicStream.add", f"the {kind or 'unknown'} content block"))


def _piece(raw: object, what: str) -> str:
    return text_or_none(raw, f"AnthropicStream.add: the {what}") or ""


class AnthropicStream(TurnAccumulator):
    """Accumulates Messages stream events (SDK objects or dicts) into calls and the whole assistant turn.

    ``add(event)`` returns the call a ``content_block_stop`` completed;
    ``finish()`` returns every call, incomplete ones with a ``problem``.
    """

    __slots__ = ("_blocks", "_id")
    READER = "AnthropicStream"
    CUT = "no stop_reason"

    def __init__(self) -> None:
        super().__init__()
        self._blocks: dict[int, _Block] = {}  # content block index -> the block (in start order)
        self._id: str | None = None  # the message's id, from message_start

    def add(self, event: object) -> tuple[ToolCall, ...]:
        """Take one event; returns the call it completed, if any.

        An event whose fields have the wrong types raises :class:`.UsageError`
        and is not taken: every field is read before anything is taken.
        """
        refuse_foreign_event(event, "anthropic", "AnthropicStream.add")
        kind = text(field(event, "type"))
        index = int_or_none(field(event, "index"), "AnthropicStream.add: the event's index") or 0
        if kind == "message_start":
            message = field(event, "message")
            message_id = _piece(field(message, "id"), "message id") or None
            self._message_start(message_id, _piece(field(message, "stop_reason"), "stop_reason"))
        elif kind == "content_block_start":
            return self._content(kind, index, _start(field(event, "content_block")))
        elif kind == "content_block_delta":
            return self._content(kind, index, _read_delta(field(event, "delta")))
        elif kind == "content_block_stop":
            return self._content(kind, index, None)
        elif kind == "message_delta":
            stop = _piece(field(field(event, "delta"), "stop_reason"), "stop_reason")
            if stop:
                self._turn.end(stop)
        elif kind == "message_stop":
            self._turn.end(None)
        return ()

    def _message_start(self, message_id: str | None, stop: str) -> None:
        if message_id is not None and self._id is not None and message_id != self._id:
            # Only message_start names the message: the other message's later events cannot be told apart
            # from this one's, so the stream is out of order (a refusal of this event alone would let them in).
            self._turn.out_of_order(f"a message_start of another message ({message_id[:80]!r})")
        elif self._id is not None or self._blocks or self._turn.ended:
            self._turn.out_of_order("a second message_start")
        self._id = self._id or message_id
        if stop:
            self._turn.end(stop)

    def _content(self, kind: str, index: int, read: _Block | _Delta | None) -> tuple[ToolCall, ...]:
        """Take a content block event already read: a start's block, a delta, or a stop (``None``)."""
        if self._turn.ended:
            self._turn.out_of_order(f"a {kind} after the message ended")
        block = self._blocks.get(index)
        if isinstance(read, _Block):
            if block is not None:
                self._turn.out_of_order(f"block {index} started twice")
                return ()
            self._blocks[index] = read
            if read.kind != "tool_use":
                self._skipped.append(SkippedItem(index, read.kind, _skip_reason(read.kind)))
        elif block is None or block.stopped:
            where = "before its content_block_start" if block is None else "after its content_block_stop"
            self._turn.out_of_order(f"a {kind} for block {index} {where}")
        elif isinstance(read, _Delta):
            self._delta(block, index, read)
        else:
            block.stopped = True
            if block.kind in _CALL_BLOCKS:
                block.call = self._complete(block)
                block.echo["input"] = block.call.arguments if isinstance(block.call.arguments, dict) else {}
                if block.kind == "tool_use":
                    return (block.call,)
        return ()

    def _delta(self, block: _Block, index: int, delta: _Delta) -> None:
        if delta.kind not in _DELTA_BLOCKS:
            return  # a delta of a kind not known here extends nothing the echo or the calls carry
        if block.kind not in _DELTA_BLOCKS[delta.kind]:
            self._turn.out_of_order(f"a {delta.kind} for block {index}, a {block.kind} block")
        elif delta.citation is not None:
            block.echo.setdefault("citations", []).append(delta.citation)
        elif delta.kind == "input_json_delta":
            block.json.append(delta.piece)
            block.problem = block.problem or delta.problem
        else:
            block.echo[_DELTA_TEXT[delta.kind]] += delta.piece

    @staticmethod
    def _complete(block: _Block) -> ToolCall:
        joined = "".join(block.json)
        if joined.strip() == "" and block.start_input:  # no deltas: the start block's input is the input
            arguments = parsed_arguments(block.start_input)
        else:
            arguments = text_arguments(joined)
        return make_call(PROVIDER, block.echo["id"], block.echo["name"], arguments, block.problem)

    def _calls_so_far(self) -> list[ToolCall]:
        """Every tool_use block, in start order; one never stopped carries a ``problem``."""
        cause = incomplete_problem(self._turn.stop_reason)
        calls = [
            block.call
            if block.call is not None
            else make_call(
                PROVIDER,
                block.echo["id"],
                block.echo["name"],
                text_arguments("".join(block.json)),
                block.problem or cause,
            )
            for block in self._blocks.values()
            if block.kind == "tool_use"
        ]
        return calls

    def assistant_message(self) -> AnthropicMessageParam:
        """The assistant turn as streamed, every block in order (thinking and its signature included)."""
        content = [
            dict(block.echo)
            for block in self._blocks.values()
            if not (block.kind == "text" and not block.echo["text"])  # an empty text block is refused by the API
        ]
        message: dict[str, Any] = {"role": "assistant", "content": content}
        typed: AnthropicMessageParam = message  # type: ignore[assignment,unused-ignore]  # its SDK type
        return typed


def render_records(calls: Sequence[CallRecord], memo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """ADP-4/ADP-6: ``{"type": "tool_result", "tool_use_id", "content", "is_error"?}`` per decided call.

    ``is_error: true`` marks every call that did not succeed; a success has no
    ``is_error`` key at all.  A success made of parts (D22) has a list of
    ``text``, ``image`` and ``document`` blocks as its content (:mod:`.parts_render`).
    """
    payload: list[dict[str, Any]] = []
    for call_id, _name, state, result in export_rows(calls, memo):  # rendered once per snapshot (ADP-5)
        content = result if isinstance(result, str) else anthropic_content(result)
        item: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        if state != "success":
            item["is_error"] = True
        payload.append(item)
    return payload


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """:func:`render_records` of a snapshot's calls."""
    return render_records(call_records(snapshot))


# --------------------------------------------------------------------------- the next request


def _assistant_content(source: object) -> list[Any]:
    """The assistant turn's blocks: a ``Message``'s content as is (thinking signatures intact), or rebuilt calls."""
    if isinstance(source, AnthropicStream):
        return list(source.assistant_message()["content"])
    ingest(source)  # the turn ingest reads: another provider's value is refused here too
    if isinstance(source, Sequence) and not isinstance(source, str | bytes):
        blocks = items(source)
    else:
        blocks = items(field(source, "content"))
    return [
        {"type": "tool_use", "id": b.id, "name": b.name, "input": b.arguments if isinstance(b.arguments, dict) else {}}
        if isinstance(b, ToolCall)
        else b
        for b in blocks
    ]


MISSING_RESULTS: Final = (
    "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: {ids}. "
    "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
)
UNEXPECTED_RESULT: Final = (
    "messages.{index}.content.{block}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. "
    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
)
NO_TOOL_USE: Final = (
    "messages.{index}.content.{block}: `tool_result` block(s) provided when previous message does not contain "
    "any `tool_use` blocks"
)
DUPLICATE_RESULT: Final = (
    "messages.{index}.content.{block}: each tool_use must have a single result. "
    "Found multiple `tool_result` blocks with id: {id}"
)


def _blocks(message: object, index: int) -> list[Any]:
    content = field(message, "content")
    return [] if text(content) is not None else items(content, f"anthropic.check_messages: messages[{index}].content")


def _block_id(block: object, key: str, index: int, position: int) -> str:
    """A ``tool_use`` id or a ``tool_result``'s ``tool_use_id``: refused unless it is text (the API refuses it too)."""
    return required_id(block, key, f"anthropic.check_messages: messages[{index}].content[{position}]")


def check_messages(messages: Sequence[Any]) -> None:
    """Preflight: raise :class:`.ProviderRuleError` with the API's own text where Messages would refuse.

    The rule: the ``tool_result`` blocks answering an assistant message's
    ``tool_use`` blocks come in the very next (user) message, *first* in its
    content, one per id; a ``tool_result`` answers a ``tool_use`` of the
    message right before it.  A ``tool_use`` or a ``tool_result`` without a
    text id raises :class:`.UsageError` naming it.
    """
    refuse_foreign_turns(messages, "anthropic", "anthropic.check_messages", "messages")
    listed = items(messages, "anthropic.check_messages")
    previous_uses: list[str] = []
    for index, message in enumerate(listed):
        blocks = _blocks(message, index)
        kinds = [text(field(block, "type")) for block in blocks]
        leading: list[str] = []  # the tool_use_ids of the tool_result blocks before any other block
        for position, block in enumerate(blocks):
            if kinds[position] != "tool_result":
                continue
            result_id = _block_id(block, "tool_use_id", index, position)
            where = {"index": index, "block": position, "id": result_id}
            if not previous_uses:
                raise ProviderRuleError(NO_TOOL_USE.format(**where), provider=PROVIDER, index=index)
            if result_id not in previous_uses:
                raise ProviderRuleError(UNEXPECTED_RESULT.format(**where), provider=PROVIDER, index=index)
            if result_id in leading:
                raise ProviderRuleError(DUPLICATE_RESULT.format(**where), provider=PROVIDER, index=index)
            if position == len(leading):
                leading.append(result_id)
        missing = [use for use in previous_uses if use not in leading]
        if missing:
            raise ProviderRuleError(
                MISSING_RESULTS.format(index=index - 1, ids=", ".join(missing)), provider=PROVIDER, index=index - 1
            )
        previous_uses = [
            _block_id(block, "id", index, position)
            for position, block in enumerate(blocks)
            if kinds[position] == "tool_use"
        ]
    if previous_uses:  # the list ends with calls nobody answered
        raise ProviderRuleError(
            MISSING_RESULTS.format(index=len(listed) - 1, ids=", ".join(previous_uses)),
            provider=PROVIDER,
            index=len(listed) - 1,
        )


def _then(then: object, reader: str) -> list[Any]:
    """The new user content after the results: a text becomes one text block; blocks are taken as they are."""
    if isinstance(then, str):
        return [{"type": "text", "text": then}] if then else []
    return items(then, f"{reader}: then")


def next_messages(
    assistant: object,
    tool_results: Sequence[AnthropicToolResultBlockParam],
    *,
    then: str | Sequence[AnthropicContentBlockParam] = (),
) -> list[AnthropicMessageParam]:
    """The assistant turn, then one user message: the ``tool_result`` blocks first, then any new user content.

    ``assistant`` is the ``Message`` (or its content), the
    :class:`AnthropicStream` it was streamed into (its whole turn, thinking
    blocks included), or the ingested calls of a stream (the calls alone);
    ``tool_results`` is ``closure.to_anthropic_tool_results(snapshot)``;
    ``then`` is new user text or blocks (a new user message while calls were
    pending goes *after* their results).  Checked with :func:`check_messages`.
    """
    extra = _then(then, "anthropic.next_messages")
    messages: list[Any] = [
        {"role": "assistant", "content": _assistant_content(assistant)},
        {"role": "user", "content": [*items(tool_results, "anthropic.next_messages"), *extra]},
    ]
    check_messages(messages)
    return messages


# The provider contract (providers.contract): the same names in every provider module.
Stream = AnthropicStream
next_request = next_messages
preflight = check_messages
