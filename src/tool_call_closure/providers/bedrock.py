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

*Streaming* (:class:`BedrockStream`): ``converse_stream`` events;
``contentBlockStart`` carries the ``toolUseId`` and name, the input arrives as
string fragments in ``contentBlockDelta.delta.toolUse.input``, joined and
parsed at ``contentBlockStop``, which completes the call.  A block never
stopped carries a ``problem``, naming ``messageStop.stopReason`` when there is one.

*Export* (:func:`render_tool_results`): ``{"toolResult": {"toolUseId",
"content": [{"text": …}], "status"?: "error"}}`` per decided call: the content
list is never empty (Bedrock refuses an empty one with ``status: "error"``),
and ``status: "error"`` marks every failure.
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
from tool_call_closure.providers.sdk_types import BedrockContentBlock, BedrockMessage
from tool_call_closure.values import CallRecord, Snapshot, call_records

__all__ = [
    "FORMAT",
    "PROVIDER",
    "BedrockStream",
    "check_messages",
    "ingest",
    "next_messages",
    "render_records",
    "render_tool_results",
]

FORMAT: Final = "bedrock"
"""The export format this module renders (``spec/machine.json``)."""
PROVIDER: Final = "bedrock"
"""The ``provider`` of the calls this module ingests."""


def _call(tool_use: object, problem: str | None = None) -> ToolCall:
    arguments = field(tool_use, "input")
    text, invalid = arguments_text(arguments)
    problem = problem or invalid
    return ToolCall(
        field(tool_use, "toolUseId") or "",
        field(tool_use, "name") or "",
        None if problem else ({} if arguments is None else arguments),
        text,
        problem,
        PROVIDER,
    )


def _block_kind(block: object) -> str:
    if isinstance(block, dict) and block:
        return str(next(iter(block)))
    return "unknown"


_EXPECTED: Final = "a Converse response (output.message), its message or its content list"


def ingest(value: object) -> Ingested:
    """The ``toolUse`` blocks of a Converse response, its message, or its content list."""
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        content, stop = list(value), None
    else:
        stop = field(value, "stopReason")
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


@dataclass(slots=True)
class _Partial:
    id: str
    name: str
    input: list[str] = dataclass_field(default_factory=list)
    done: ToolCall | None = None


class BedrockStream:
    """Accumulates ``converse_stream`` events into calls.

    ``add(event)`` returns the call a ``contentBlockStop`` completed;
    ``finish()`` returns every call, incomplete ones with a ``problem``.
    """

    __slots__ = ("_blocks", "_order", "_skipped", "_stop")

    def __init__(self) -> None:
        self._blocks: dict[int, _Partial] = {}  # contentBlockIndex -> its toolUse
        self._order: list[_Partial] = []
        self._skipped: list[SkippedItem] = []
        self._stop: str | None = None

    def add(self, event: object) -> tuple[ToolCall, ...]:
        """Take one event; returns the call it completed, if any."""
        refuse_foreign_event(event, "bedrock", "BedrockStream.add")
        partial: _Partial | None
        start = field(event, "contentBlockStart")
        delta = field(event, "contentBlockDelta")
        stop = field(event, "contentBlockStop")
        if start is not None:
            tool_use = field(field(start, "start"), "toolUse")
            if tool_use is not None:
                partial = _Partial(field(tool_use, "toolUseId") or "", field(tool_use, "name") or "")
                self._blocks[field(start, "contentBlockIndex") or 0] = partial
                self._order.append(partial)
        elif delta is not None:
            index = field(delta, "contentBlockIndex") or 0
            fragment = field(field(delta, "delta"), "toolUse")
            partial = self._blocks.get(index)
            if partial is not None and fragment is not None:
                partial.input.append(field(fragment, "input") or "")
            elif partial is None and index not in {s.index for s in self._skipped}:
                kind = _block_kind(field(delta, "delta"))
                self._skipped.append(SkippedItem(index, kind, f"a {kind} block is not a tool call"))
        elif stop is not None:
            partial = self._blocks.get(field(stop, "contentBlockIndex") or 0)
            if partial is not None and partial.done is None:
                text = "".join(partial.input)
                arguments, problem = parse_arguments(text)
                partial.done = ToolCall(partial.id, partial.name, arguments, text, problem, PROVIDER)
                return (partial.done,)
        elif field(event, "messageStop") is not None:
            self._stop = field(field(event, "messageStop"), "stopReason")
        return ()

    def finish(self) -> Ingested:
        """Every call of the stream, in order; a block never stopped carries a ``problem``."""
        cause = incomplete_problem(self._stop)
        calls = [
            partial.done
            if partial.done is not None
            else ToolCall(partial.id, partial.name, None, "".join(partial.input), cause, PROVIDER)
            for partial in self._order
        ]
        return Ingested.of(calls, self._skipped, self._stop)


def render_records(calls: Sequence[CallRecord], memo: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """``{"toolResult": {"toolUseId", "content": [{"text"}], "status"?: "error"}}`` per decided call."""
    payload: list[dict[str, Any]] = []
    for call_id, _name, state, text in export_rows(calls, memo):  # rendered once per snapshot (ADP-5)
        tool_result: dict[str, Any] = {"toolUseId": call_id, "content": [{"text": text}]}
        if state != "success":
            tool_result["status"] = "error"
        payload.append({"toolResult": tool_result})
    return payload


def render_tool_results(snapshot: Snapshot) -> list[dict[str, Any]]:
    """:func:`render_records` of a snapshot's calls."""
    return render_records(call_records(snapshot))


# --------------------------------------------------------------------------- the next request


def _assistant_message(source: object) -> dict[str, Any]:
    """The assistant turn: a Converse response's message, the message itself, or rebuilt from ingested calls."""
    ingest(source)  # the turn ingest reads: another provider's value is refused here too
    if isinstance(source, Sequence) and not isinstance(source, str | bytes):
        return {
            "role": "assistant",
            "content": [
                {"toolUse": {"toolUseId": c.id, "name": c.name, "input": c.arguments if c.problem is None else {}}}
                if isinstance(c, ToolCall)
                else c
                for c in source
            ],
        }
    message = field(field(source, "output"), "message") or source
    return {"role": field(message, "role") or "assistant", "content": items(field(message, "content"))}


TOO_MANY_RESULTS: Final = "The number of toolResult blocks exceeds the number of toolUse blocks of previous turn."
MISSING_RESULTS: Final = "Expected toolResult blocks at messages.{index}.content for the following Ids: {ids}"
EMPTY_ERROR: Final = "messages.{index}.content.{block}: toolResult cannot be empty when status value is error"


def check_messages(messages: Sequence[Any]) -> None:
    """Preflight: raise :class:`.ProviderRuleError` with the API's own text where Converse would refuse.

    The rule: the user turn after an assistant turn with ``toolUse`` blocks
    carries one ``toolResult`` per ``toolUseId`` (never more), and an error
    result's content is not empty.
    """
    refuse_foreign_turns(messages, "bedrock", "bedrock.check_messages", "messages")
    uses: list[str] = []
    for index, message in enumerate(messages):
        blocks = items(field(message, "content"))
        results = [field(block, "toolResult") for block in blocks]
        for position, result in enumerate(results):
            if result is not None and field(result, "status") == "error" and not items(field(result, "content")):
                raise ProviderRuleError(EMPTY_ERROR.format(index=index, block=position), provider=PROVIDER, index=index)
        answered = [field(result, "toolUseId") for result in results if result is not None]
        if len(answered) > len(uses):
            raise ProviderRuleError(TOO_MANY_RESULTS, provider=PROVIDER, index=index)
        missing = [use for use in uses if use not in answered]
        if missing:
            raise ProviderRuleError(
                MISSING_RESULTS.format(index=index, ids=", ".join(missing)), provider=PROVIDER, index=index
            )
        uses = [field(field(block, "toolUse"), "toolUseId") for block in blocks if field(block, "toolUse") is not None]
    if uses:
        index = len(messages)
        raise ProviderRuleError(
            MISSING_RESULTS.format(index=index, ids=", ".join(uses)), provider=PROVIDER, index=index
        )


def next_messages(assistant: object, tool_results: Sequence[BedrockContentBlock]) -> list[BedrockMessage]:
    """The assistant turn, then the user turn holding every ``toolResult`` (``closure.to_bedrock_tool_results``).

    ``assistant`` is the ``converse`` response (or its message, or the
    ingested calls of a stream).  Checked with :func:`check_messages`.
    """
    messages: list[Any] = [_assistant_message(assistant), {"role": "user", "content": list(tool_results)}]
    check_messages(messages)
    return messages
