"""Anthropic Messages: ingestion of ``tool_use`` blocks and stream events, one ``tool_result`` block per call.

Theory of operation
-------------------
*Ingestion* (:func:`ingest`) reads a ``Message`` or its ``content`` list, SDK
objects or dicts, and pairs on each ``tool_use`` block's ``id``.  Its
``input`` is already parsed; :attr:`.ToolCall.arguments_json` is its JSON
text.  Text, thinking and server-side tool blocks (``server_tool_use``,
``web_search_tool_result`` …) are skipped with their reason.  When the message
stopped on ``max_tokens`` and its last block is a ``tool_use``, that call was
cut and carries a ``problem``.

*Streaming* (:class:`AnthropicStream`): ``content_block_start`` carries the
id and name with ``input: {}``; the ``input_json_delta`` fragments are joined
and parsed at ``content_block_stop`` (an empty text is ``{}``), which
completes the call.  A block never stopped (a cut stream) or whose JSON does
not parse (``max_tokens`` cut it) carries a ``problem``.

*Export* (:func:`render_tool_results`): ``{"type": "tool_result",
"tool_use_id", "content", "is_error"?}`` per decided call, ``is_error: true``
on every failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any, Final

from tool_call_closure.providers.calls import Ingested, ProviderRuleError, SkippedItem, ToolCall
from tool_call_closure.providers.reading import (
    arguments_text,
    field,
    incomplete_problem,
    items,
    parse_arguments,
    refuse_foreign_call,
    refuse_foreign_event,
    refuse_foreign_turns,
    require_fields,
)
from tool_call_closure.providers.result_text import export_rows
from tool_call_closure.providers.sdk_types import (
    AnthropicContentBlockParam,
    AnthropicMessageParam,
    AnthropicToolResultBlockParam,
)
from tool_call_closure.values import CallRecord, Snapshot, call_records

__all__ = [
    "FORMAT",
    "PROVIDER",
    "AnthropicStream",
    "check_messages",
    "ingest",
    "next_messages",
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
    arguments = field(block, "input")
    text, invalid = arguments_text(arguments)
    problem = problem or invalid
    return ToolCall(
        field(block, "id") or "",
        field(block, "name") or "",
        None if problem else ({} if arguments is None else arguments),
        text,
        problem,
        PROVIDER,
    )


def ingest(value: object) -> Ingested:
    """The ``tool_use`` blocks of a ``Message`` or of its ``content`` list."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        content, stop = list(value), None
    else:
        require_fields(value, ("content",), "anthropic.ingest", "a Message or a list of its content blocks")
        refuse_foreign_call(value, "the value", "anthropic.ingest")
        content, stop = items(field(value, "content"), "anthropic.ingest: the content"), field(value, "stop_reason")
    calls: list[ToolCall] = []
    skipped: list[SkippedItem] = []
    for index, block in enumerate(content):
        kind = field(block, "type") or ""
        if kind == "tool_use":
            cut = stop == "max_tokens" and index == len(content) - 1
            calls.append(_call(block, "the message stopped on max_tokens inside this call" if cut else None))
        else:
            refuse_foreign_call(block, f"item {index}", "anthropic.ingest")
            skipped.append(SkippedItem(index, kind, _skip_reason(kind)))
    return Ingested.of(calls, skipped, stop)


@dataclass(slots=True)
class _Partial:
    id: str
    name: str
    start_input: Any
    json: list[str] = dataclass_field(default_factory=list)
    done: ToolCall | None = None


class AnthropicStream:
    """Accumulates Messages stream events (SDK objects or dicts) into calls.

    ``add(event)`` returns the call a ``content_block_stop`` completed;
    ``finish()`` returns every call, incomplete ones with a ``problem``.
    """

    __slots__ = ("_blocks", "_order", "_skipped", "_stop")

    def __init__(self) -> None:
        self._blocks: dict[int, _Partial] = {}  # content block index -> its tool_use
        self._order: list[_Partial] = []
        self._skipped: list[SkippedItem] = []
        self._stop: str | None = None

    def add(self, event: object) -> tuple[ToolCall, ...]:
        """Take one event; returns the call it completed, if any."""
        refuse_foreign_event(event, "anthropic", "AnthropicStream.add")
        kind = field(event, "type")
        index = field(event, "index")
        partial: _Partial | None
        if kind == "content_block_start":
            block = field(event, "content_block")
            block_kind = field(block, "type") or ""
            if block_kind == "tool_use":
                partial = _Partial(field(block, "id") or "", field(block, "name") or "", field(block, "input"))
                self._blocks[index] = partial
                self._order.append(partial)
            else:
                self._skipped.append(SkippedItem(index or 0, block_kind, _skip_reason(block_kind)))
        elif kind == "content_block_delta":
            delta = field(event, "delta")
            partial = self._blocks.get(index)
            if partial is not None and field(delta, "type") == "input_json_delta":
                partial.json.append(field(delta, "partial_json") or "")
        elif kind == "content_block_stop":
            partial = self._blocks.get(index)
            if partial is not None and partial.done is None:
                partial.done = self._complete(partial)
                return (partial.done,)
        elif kind == "message_delta":
            self._stop = field(field(event, "delta"), "stop_reason") or self._stop
        elif kind == "message_start":
            self._stop = field(field(event, "message"), "stop_reason") or self._stop
        return ()

    @staticmethod
    def _complete(partial: _Partial) -> ToolCall:
        text = "".join(partial.json)
        if text.strip() == "" and partial.start_input:  # no deltas: the start block's input is the input
            text, problem = arguments_text(partial.start_input)
            arguments = None if problem else partial.start_input
        else:
            arguments, problem = parse_arguments(text)
        return ToolCall(partial.id, partial.name, arguments, text, problem, PROVIDER)

    def finish(self) -> Ingested:
        """Every call of the stream, in order; a block never stopped carries a ``problem``."""
        cause = incomplete_problem(self._stop)
        calls = [
            partial.done
            if partial.done is not None
            else ToolCall(partial.id, partial.name, None, "".join(partial.json), cause, PROVIDER)
            for partial in self._order
        ]
        return Ingested.of(calls, self._skipped, self._stop)


def render_records(calls: Sequence[CallRecord], memo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """ADP-4/ADP-6: ``{"type": "tool_result", "tool_use_id", "content", "is_error"?}`` per decided call.

    ``is_error: true`` marks every call that did not succeed; a success has no
    ``is_error`` key at all.
    """
    payload: list[dict[str, Any]] = []
    for call_id, _name, state, text in export_rows(calls, memo):  # rendered once per snapshot (ADP-5)
        item: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": text}
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
    ingest(source)  # the turn ingest reads: another provider's value is refused here too
    if isinstance(source, Sequence) and not isinstance(source, str | bytes):
        blocks = list(source)
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


def _blocks(message: object) -> list[Any]:
    content = field(message, "content")
    return [] if isinstance(content, str) else items(content)


def check_messages(messages: Sequence[Any]) -> None:
    """Preflight: raise :class:`.ProviderRuleError` with the API's own text where Messages would refuse.

    The rule: the ``tool_result`` blocks answering an assistant message's
    ``tool_use`` blocks come in the very next (user) message, *first* in its
    content, one per id; a ``tool_result`` answers a ``tool_use`` of the
    message right before it.
    """
    refuse_foreign_turns(messages, "anthropic", "anthropic.check_messages", "messages")
    previous_uses: list[str] = []
    for index, message in enumerate(messages):
        blocks = _blocks(message)
        leading: list[str] = []  # the tool_use_ids of the tool_result blocks before any other block
        for position, block in enumerate(blocks):
            if field(block, "type") != "tool_result":
                continue
            result_id = field(block, "tool_use_id")
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
        previous_uses = [field(b, "id") for b in blocks if field(b, "type") == "tool_use"]
    if previous_uses:  # the list ends with calls nobody answered
        raise ProviderRuleError(
            MISSING_RESULTS.format(index=len(messages) - 1, ids=", ".join(previous_uses)),
            provider=PROVIDER,
            index=len(messages) - 1,
        )


def next_messages(
    assistant: object,
    tool_results: Sequence[AnthropicToolResultBlockParam],
    *,
    then: str | Sequence[AnthropicContentBlockParam] = (),
) -> list[AnthropicMessageParam]:
    """The assistant turn, then one user message: the ``tool_result`` blocks first, then any new user content.

    ``assistant`` is the ``Message`` (or its content, or the ingested calls of
    a stream); ``tool_results`` is ``closure.to_anthropic_tool_results(snapshot)``;
    ``then`` is new user text or blocks (a new user message while calls were
    pending goes *after* their results).  Checked with :func:`check_messages`.
    """
    extra = [{"type": "text", "text": then}] if isinstance(then, str) else list(then)
    messages: list[Any] = [
        {"role": "assistant", "content": _assistant_content(assistant)},
        {"role": "user", "content": [*tool_results, *extra]},
    ]
    check_messages(messages)
    return messages
